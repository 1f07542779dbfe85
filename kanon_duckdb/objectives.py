"""Objectives (losses and costs), each declared once, and the per-QI weights they apply.

An :class:`Objective` says what it is computed from (``needs``), whether it is monotone under
generalization (``monotone``: ``"always"``, or ``"without suppression"`` when suppressing rows
can lower it at a coarser node) and how it is computed:

- lattice losses (``loss :=`` of optimal, kgen, random, datafly): ``node_loss(ch, levels, st)``
  -> (loss, lower bound for this node and every node above), over the class statistics ``st``
  (:class:`NodeStats`) the checker's kernel returns, and ``static_bound(ch, levels)``, a bound
  known without data. ``ch`` is the ``lattice.checker.NodeChecker`` (its weighted level and NCP
  tables, ``n`` and ``k``).
- clustering costs (``cost :=`` of kmember; the NCP every clustering algorithm minimises;
  info2means' information quantity): ``node_cost(tree, w)`` -> w times the categorical cost of
  every node of one ``TaxonomyIndex``; the numeric term is the span / range of ``kanon_duckdb.ncp`` (for ``iq``,
  the information quantity of eq. 2 built by ``iq_numeric``). ``clustering/_ncp.build_ncp_data``
  packs the node costs, times the QI weights, for the kernels.

Weights (``weights := {'age': 2.0}``): one positive weight per QI, default 1. Every loss that
sums over QIs sums ``w_q * term_q``; GCP becomes sum_q w_q NCP_q / sum_q w_q per row. Kernels take
them normalized to mean 1 (:func:`normalized`), so equal weights multiply nothing and give
today's results bit for bit (``weight_vector`` returns None then). DM counts rows, not QIs: the
weights do not change it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, NamedTuple

import numpy as np

from .errors import InvalidParameterError
from .ncp import height_ratio

WEIGHTS_KEY = "__kanon_weights"  # QIData.extra key of the run's weight vector (data QI order)


class NodeStats(NamedTuple):
    """Class statistics of one lattice node (``lattice._kernels.class_stats``)."""
    sup: int          # rows suppressed (classes below k or violating a privacy model)
    sq_ok: float      # sum of |e|^2 over the published classes
    sq_all: float     # sum of |e|^2 over every class
    sup_ncp: float    # sum over suppressed rows of their (weighted) mean NCP over QIs


@dataclass(frozen=True)
class Objective:
    name: str
    doc: str
    needs: str
    monotone: str                                   # "always" | "without suppression"
    node_loss: Callable | None = None               # lattice: (ch, levels, NodeStats) -> (loss, lb)
    static_bound: Callable | None = None            # lattice: (ch, levels) -> lower bound
    node_cost: Callable | None = None  # clustering: (TaxonomyIndex, weight) -> weighted cost per node
    separable: bool = False       # static_bound is a sum of per-QI terms of the levels
    # lattice, separable: (ch, j) -> float64 array over QI j's levels such that static_bound(lv)
    # == sum_j terms_j[lv_j] / d, summed in QI order (so a vector of bounds is bit-identical)
    bound_terms: Callable | None = None
    loss_is_bound: bool = False   # lattice: node_loss is static_bound (data-free: LOG)
    bound_prunes: bool = False    # prune nodes above a node whose lower bound reaches the best
    to_fraction: Callable | None = None  # (loss, n) -> a value in [0, 1] (search scores)
    tie_step: float = 1e-10  # lattice: losses rounding to the same multiple of it are a tie

    def tie_class(self, loss):
        """The loss rounded to a multiple of ``tie_step`` (int64, elementwise for arrays): the
        first component of ``optimal``'s canonical order, so losses differing only by floating-
        point rounding of sums tie and the tie-break (height, then levels) decides."""
        q = np.rint(np.asarray(loss, dtype=np.float64) / self.tie_step).astype(np.int64)
        return int(q) if q.ndim == 0 else q

    def is_monotone(self, suppression_limit: int) -> bool:
        """True when a generalization never has a lower value (feasible nodes prune upwards)."""
        return self.monotone == "always" or suppression_limit == 0


def _gcp_loss(ch, levels, st):
    # g plus the suppressed rows' NCP rising to 1 (never negative: a suppressed row's weighted
    # mean NCP is at most 1), so the loss is >= its static bound g in floating point too
    g = ch.gcp_nosup(levels)
    return g + max(0.0, st.sup - st.sup_ncp) / ch.n, g


def info_ratio(n_leaves, w: float = 1.0) -> np.ndarray:
    """Information quantity of a categorical node (Yuan et al. 2024 eq. 3) times ``w``:
    w log leaves(node) / log leaves(root); 0 for a tree with one leaf."""
    nl = np.asarray(n_leaves, dtype=np.float64)
    if nl.size == 0 or nl[0] <= 1:
        return np.zeros(nl.size)
    return w * np.log(nl) / np.log(nl[0])


OBJECTIVES: dict[str, Objective] = {o.name: o for o in (
    Objective("log", "KGEN's level of generalization (eq. 1-2): weighted mean over QIs of "
              "level / height", "the node's levels", "always",
              node_loss=lambda ch, lv, st: (ch.log_level(lv), ch.log_level(lv)),
              static_bound=lambda ch, lv: ch.log_level(lv), separable=True, loss_is_bound=True,
              bound_terms=lambda ch, j: np.arange(int(ch.heights[j]) + 1) * ch.level_weight(j)),
    Objective("gcp", "mean over rows of the weighted mean NCP over QIs; a suppressed row counts 1",
              "per-level mean NCP of each QI and the suppressed rows' NCP", "without suppression",
              node_loss=_gcp_loss, static_bound=lambda ch, lv: ch.gcp_nosup(lv), separable=True,
              bound_terms=lambda ch, j: np.array(ch.ncp_row(j))),
    Objective("dm", "discernibility: sum of |e|^2 over published classes plus n per suppressed "
              "row (weights do not apply: it counts rows)", "class sizes", "without suppression",
              # every node above has sum |e|^2 >= sq_all, and DM >= sum |e|^2
              node_loss=lambda ch, lv, st: (st.sq_ok + float(ch.n) * st.sup, st.sq_all),
              static_bound=lambda ch, lv: float(ch.n) * min(ch.k, ch.n), bound_prunes=True,
              to_fraction=lambda loss, n: loss / float(n) ** 2, tie_step=1.0),
    Objective("ncp", "NCP cost: numeric span / range, categorical leaves(LCA) / leaves(root) "
              "(0 for one leaf), summed over QIs with their weights", "cluster min/max and LCA",
              "always", node_cost=lambda tree, w=1.0: w * tree.node_ncp()),
    Objective("height", "Byun et al.'s cost: numeric span / range, categorical height(LCA "
              "subtree) / height(tree)", "cluster min/max and LCA", "always",
              node_cost=lambda tree, w=1.0: w * height_ratio(tree.sub_height)),
    Objective("iq", "information quantity (Yuan et al. 2024 eq. 2-4): categorical log "
              "leaves(LCA) / log leaves(root), numeric log |values in range| / log |domain|",
              "cluster min/max and LCA", "always",
              node_cost=lambda tree, w=1.0: info_ratio(tree.table_leaves(), w)),
)}

LATTICE_LOSSES = tuple(n for n, o in OBJECTIVES.items() if o.node_loss is not None)
CLUSTER_COSTS = ("ncp", "height")  # kmember's ``cost :=`` choices ("iq" is info2means' own)


def get(name: str, kind: str = "lattice") -> Objective:
    """The objective ``name`` usable as a lattice loss (kind 'lattice') or a clustering cost
    (kind 'cluster'); InvalidParameterError naming the choices otherwise."""
    choices = LATTICE_LOSSES if kind == "lattice" else tuple(
        n for n, o in OBJECTIVES.items() if o.node_cost is not None)
    if name not in choices:
        what = "loss" if kind == "lattice" else "cost"
        raise InvalidParameterError(f"{what} must be one of {', '.join(choices)}, got {name!r}")
    return OBJECTIVES[name]


def iq_numeric(data, weights) -> np.ndarray:
    """(dn, 3) table of the numeric information quantity (Yuan et al. eq. 2): per numeric QI
    (weight, 10^x, 1 / log |R|), with 10^-x the decimal step of its values (at most 6 digits) and
    |R| the number of values of the domain at that step (0 when |R| <= 1)."""
    out = np.zeros((data.dn, 3))
    for j in range(data.dn):
        ok = ~data.num_null[:, j]
        vals = data.num[ok, j]
        x = 0
        if vals.size and not data.num_is_int[j]:
            for x in range(0, 7):
                sc = vals * 10.0 ** x
                if np.all(np.abs(sc - np.round(sc)) < 1e-6 * np.maximum(1.0, np.abs(sc))):
                    break
        span = (data.num_hi[j] - data.num_lo[j]) if vals.size else 0.0
        R = 10.0 ** x * span + 1.0
        out[j] = (weights[j], 10.0 ** x, 1.0 / np.log(R) if R > 1.0 + 1e-12 else 0.0)
    return out


# ------------------------------------------------------------------------------------ weights

def _bad_form(given):
    return InvalidParameterError(
        f"weights must be a MAP or STRUCT of QI -> weight, e.g. weights := "
        f"{{'age': 2.0, 'sex': 0.5}}, got {given!r}")


def check_weights(given, qi: list | None = None) -> dict | None:
    """``weights :=`` validated: {QI: weight} (a MAP, a STRUCT, its JSON text or MAP key/value
    pairs), or None when not given. Each weight must be a finite number > 0. With ``qi`` (the
    run's QIs) every name must be one of them (case-insensitively, with a "did you mean") and is
    returned spelled as in ``qi``; a QI not named keeps weight 1. Errors name the entry."""
    if given is None:
        return None
    if isinstance(given, str):
        import json
        try:
            given = json.loads(given)
        except ValueError:
            raise _bad_form(given) from None
    from .params import mapping_of  # (params imports this module)
    given = mapping_of(given)
    if not isinstance(given, dict):
        raise _bad_form(given)
    by_lower = {q.lower(): q for q in qi} if qi is not None else None
    out: dict = {}
    for name, w in given.items():
        q = str(name)
        if by_lower is not None:
            q = by_lower.get(q.lower())
            if q is None:
                import difflib
                close = difflib.get_close_matches(str(name).lower(), list(by_lower), n=1)
                hint = f"; did you mean '{by_lower[close[0]]}'?" if close else ""
                raise InvalidParameterError(
                    f"weights names '{name}', which is not a quasi-identifier of this run{hint} "
                    f"(the QIs: {', '.join(qi)})")
        if q.lower() in {o.lower() for o in out}:
            raise InvalidParameterError(f"weights names QI '{q}' twice; give it once")
        if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w) \
                or w <= 0:
            raise InvalidParameterError(
                f"weight of QI '{q}' must be a finite number > 0, got {w!r}")
        out[q] = float(w)
    return out


def per_qi(weights: dict | None, names) -> list:
    """The weight of each of ``names`` (1.0 for a QI not named)."""
    return [float((weights or {}).get(q, 1.0)) for q in names]


def normalized(raw) -> np.ndarray | None:
    """Weights scaled to mean 1 (float64), or None when they are all equal (no weighting)."""
    w = np.asarray(raw, dtype=np.float64)
    if w.size == 0 or np.all(w == w[0]):
        return None
    return w * (w.size / w.sum())


def attach(data, weights: dict | None) -> None:
    """Store the run's weights on ``data`` (QIData order: numeric QIs, then categorical)."""
    w = normalized(per_qi(weights, list(data.num_names) + list(data.cat_names)))
    if w is not None:  # a tuple: per-row arrays of ``extra`` are cut by blocks.subset, this is not
        data.extra[WEIGHTS_KEY] = tuple(float(x) for x in w)


def weight_vector(data) -> np.ndarray | None:
    """The run's weights in QIData order, mean 1; None for equal weights."""
    w = data.extra.get(WEIGHTS_KEY) if data.extra else None
    return None if w is None else np.asarray(w, dtype=np.float64)


def weighted_scale(scale, weights) -> np.ndarray:
    """Mondrian-style per-dimension divisors (numeric: range; categorical: 1) divided by the
    weights, so that width / scale and cost / scale are weighted; ``scale`` itself when the
    weights are None (equal)."""
    if weights is None:
        return scale
    return np.asarray(scale, dtype=np.float64) / np.asarray(weights, dtype=np.float64)
