"""info2means: information-quantity loss, weighted recursive 2-means and a greedy step
(Yuan, Zhang, Chen, Yang, Li 2024, "An innovative k-anonymity privacy-preserving algorithm to
improve data availability in the context of big data").

``algo := 'info2means'``, parameter ``sensitive`` (default 'income'): the column whose relation
to the QIs gives the weights. The orchestrator passes it as ``data.extra[sensitive]``; when it is
not available the weights are equal and ``info['weights_source']`` says so.

Weights (eq. 5): see "Weights" below. Recorded in ``Partition.info['weights']`` in the order
numeric QIs first, then categorical (``info['weight_names']``), which is how ``kanon_runs.weights``
stores them for the ``info_loss`` metric.

Clustering (the paper's Algorithms 1 and 2 are only given as figures; this is our reading):

- distances are eq. 6-8 with the weights; numeric QIs are z-scored then min-max normalized
  (§4.2.2), which makes |s_i - s_j| / (s_max - s_min) of eq. 6 exactly the normalized difference;
- 2-means with the mean-center initial centroids (§3.2.2): ignoring 3σ outliers (§4.2.3, per
  numeric QI, within the set being split), M = the mean center (numeric means, eq. 9; categorical
  eq. 10-11), c1 = the record farthest from M, c2 = the record farthest from c1; then Lloyd
  iterations with centroid update eq. 12 until the assignment is stable (at most 30 rounds);
- recursion: start from the whole table; a set with at least 2k rows is split by 2-means; if one
  side has fewer than k rows, the greedy step moves to it, one at a time, the rows of the other
  side that increase its information loss (eq. 2-4) least, until it has k; both halves are then
  split again. Privacy models (``l``, ``t``..., issue 13): before a split is taken, a half that
  violates one takes, one at a time, the record of the other half that best fixes it at least
  NCP (``_closing.fix_split``, never breaking the other half nor taking it under k); a half that
  still violates is split on as the paper says and its violating classes go to the final pass
  (``privacy.enforce.repair``: merged into the class whose union costs least, or suppressed
  within max_suppression). Refusing such splits instead (Mondrian's rule) measured worse on
  Adult (GCP 0.1253 vs 0.1229 at k = 10, l = 4). (Eq. 14 asks for the least IL(DT); a split never increases it, a class's loss being
  monotone in its ranges, so every allowable split is taken.) Sets that cannot be split (fewer than 2k rows, or all rows at
  distance 0) are the final classes, so every class has between k and 2k-1 rows (more only for
  sets of rows at distance 0).

``info``: weights, weight_names, weights_source, info_loss (eq. 4 of the result), splits,
greedy_moves. Deterministic: there is no random choice (``seed`` is unused).

Weights
-------
Per-QI weights from the sensitive attribute (info2means, eq. 5 of Yuan et al. 2024).

The paper fits a logistic regression of the sensitive attribute on the quasi-identifiers and uses
the absolute contributions, normalized to sum 1, as weights γ. It does not say how categorical QIs
enter the regression; we give every QI exactly one standardized feature so that coefficients are
comparable across attributes:

- numeric QI: its value (NULL -> mean of the non-NULL values), z-scored;
- categorical QI: target encoding, i.e. the (smoothed) rate of the positive class among rows with
  the same leaf, z-scored. A label encoding would depend on an arbitrary value order; one-hot
  features would split one attribute into many coefficients.

Target: a sensitive attribute with two distinct values is binary as is; with more values, a
numeric one is split at its median and any other one is "most frequent value vs rest". Rows with
a NULL sensitive value are left out of the fit. The fit is Newton/IRLS with a tiny ridge
(1e-6 · n) for separable data; weights are |β_j| / Σ|β|. All-zero coefficients (no signal) give
equal weights.
"""
from __future__ import annotations

import numpy as np

from ...params import declared
from ..base import Algorithm, Partition, no_progress
from ...qidata import QIData
from ._ncp import build_ncp_data
from ... import objectives
from ._closing import fix_split, halves_ok, packed_of
from .info2means_kernels import greedy_fill, info_loss_labels, two_means


def binary_target(column) -> tuple[np.ndarray, np.ndarray, str]:
    """(y float64 (n,), valid bool (n,), description) from a raw Arrow column."""
    import pyarrow as pa
    import pyarrow.compute as pc

    col = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    valid = ~np.asarray(col.is_null().to_numpy(zero_copy_only=False), dtype=bool)
    n = len(col)
    y = np.zeros(n)
    if not valid.any():
        return y, valid, "sensitive attribute is all NULL"
    enc = pc.dictionary_encode(col)
    values = enc.dictionary.to_pylist()
    codes = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    counts = np.bincount(codes[valid], minlength=len(values))
    present = [i for i in range(len(values)) if counts[i] > 0]
    if len(present) == 2:
        pos = max(present, key=lambda i: str(values[i]))
        y[codes == pos] = 1.0
        return y, valid, f"{values[pos]!r} vs {values[min(present, key=lambda i: str(values[i]))]!r}"
    if pa.types.is_integer(col.type) or pa.types.is_floating(col.type) or pa.types.is_decimal(col.type):
        v = col.to_numpy(zero_copy_only=False).astype(np.float64)
        med = float(np.median(v[valid]))
        y[valid & (v > med)] = 1.0
        return y, valid, f"value > median ({med:g})"
    top = int(np.argmax(counts))
    y[codes == top] = 1.0
    return y, valid, f"{values[top]!r} vs rest"


def qi_features(data, y: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """One standardized feature per QI (numeric first, then categorical): float64 (m, d)."""
    cols = []
    for j in range(data.dn):
        v = data.num[:, j].copy()
        nul = data.num_null[:, j]
        if nul.all():
            v[:] = 0.0
        elif nul.any():
            v[nul] = v[~nul].mean()
        cols.append(v)
    prior = float(y[valid].mean()) if valid.any() else 0.5
    for j in range(data.dc):
        leaf = data.cat[:, j]
        L = int(leaf.max()) + 1 if leaf.size else 1
        pos = np.bincount(leaf[valid], weights=y[valid], minlength=L)
        tot = np.bincount(leaf[valid], minlength=L).astype(np.float64)
        rate = (pos + prior) / (tot + 1.0)  # one pseudo-observation at the prior
        cols.append(rate[leaf])
    X = np.stack(cols, axis=1) if cols else np.zeros((data.n, 0))
    X = X[valid]
    mu = X.mean(axis=0)
    sd = X.std(axis=0)
    return np.where(sd > 0, (X - mu) / np.where(sd > 0, sd, 1.0), 0.0)


def logistic_regression(X: np.ndarray, y: np.ndarray, max_iter: int = 50,
                        tol: float = 1e-10) -> np.ndarray:
    """Coefficients (d,) of an L2-regularized (λ = 1e-6·n) logistic regression with intercept.

    Newton / IRLS; the intercept is not penalized. Returns only the slope coefficients.
    """
    m, d = X.shape
    A = np.hstack([np.ones((m, 1)), X])
    beta = np.zeros(d + 1)
    lam = 1e-6 * max(m, 1)
    pen = np.full(d + 1, lam)
    pen[0] = 0.0
    for _ in range(max_iter):
        z = A @ beta
        p = 1.0 / (1.0 + np.exp(-np.clip(z, -35, 35)))
        w = p * (1.0 - p)
        grad = A.T @ (y - p) - pen * beta
        H = (A * w[:, None]).T @ A + np.diag(pen) + 1e-12 * np.eye(d + 1)
        step = np.linalg.solve(H, grad)
        beta += step
        if np.max(np.abs(step)) < tol:
            break
    return beta[1:]


def sensitive_weights(data, column) -> tuple[np.ndarray, dict]:
    """Weights γ (d,) summing to 1, aligned numeric QIs first, then categorical; plus info."""
    d = data.dn + data.dc
    equal = np.full(d, 1.0 / d) if d else np.zeros(0)
    if column is None:
        return equal, {"weights_source": "equal (sensitive column not available)"}
    y, valid, desc = binary_target(column)
    if valid.sum() < 2 or y[valid].min() == y[valid].max():
        return equal, {"weights_source": f"equal (sensitive attribute has no contrast: {desc})"}
    X = qi_features(data, y, valid)
    beta = logistic_regression(X, y[valid])
    a = np.abs(beta)
    if not np.isfinite(a).all() or a.sum() <= 0:
        return equal, {"weights_source": f"equal (no signal: {desc})"}
    return a / a.sum(), {"weights_source": f"logistic regression, target {desc}",
                         "coefficients": [float(b) for b in beta]}


def _iq_tables(data, ds, weights):
    """(iq_num (dn, 3), iq_node (nodes,)) for the information-quantity loss, see the kernels;
    both from the ``iq`` objective of ``kanon_duckdb.objectives``."""
    iq = objectives.get("iq", "cluster")
    iq_num = objectives.iq_numeric(data, weights)
    iq_node = np.zeros(ds.node_cost.shape[0])
    for j, t in enumerate(data.trees):
        a = int(ds.node_off[j])
        iq_node[a:a + t.n_nodes] = iq.node_cost(t, weights[data.dn + j])
    return iq_num, iq_node


def _with_user_weights(data, weights, winfo):
    """γ times the run's ``weights :=`` (objectives.weight_vector), renormalized to sum 1."""
    user = objectives.weight_vector(data)
    if user is None:
        return weights, winfo
    g = weights * user
    return g / g.sum(), {**winfo, "user_weights": [float(x) for x in user]}


def models_hold(models, ids: np.ndarray, side: np.ndarray) -> tuple:
    """(half ``~side`` satisfies every privacy model, half ``side`` does) (``models`` =
    ``_closing.packed_of``; ``privacy._kernels.class_ok``); both True without models beyond k.
    O(|ids| + M)."""
    P, scr_cols, M = models
    return (True, True) if not M else tuple(bool(x) for x in halves_ok(ids, side, P, scr_cols))


def run(data: QIData, k: int, seed: int, params: dict, progress=no_progress) -> Partition:
    col = data.extra.get(params.get("sensitive") or "")
    weights, winfo = _with_user_weights(data, *sensitive_weights(data, col))
    ds = build_ncp_data(data, weights=weights)
    iq_num, iq_node = _iq_tables(data, ds, weights)
    n = data.n
    models = P, scr_cols, M = packed_of(data)
    closing = M > 0
    unclosed = 0
    privacy_moves = 0
    ec = np.zeros(n, dtype=np.int64)
    stack = [np.arange(n, dtype=np.int64)]
    C = 0
    done = 0
    splits = 0
    moves = 0
    while stack:
        ids = stack.pop()
        m = ids.size
        if m >= 2 * k:
            side = np.zeros(m, dtype=np.bool_)
            if two_means(ds, ids, 30, side):
                n2 = int(side.sum())
                if n2 < k or m - n2 < k:
                    moves += int(greedy_fill(ds, ids, side, k, iq_num, iq_node))
                if closing and not all(models_hold(models, ids, side)):
                    privacy_moves += int(fix_split(ds, ids, side, k, P, scr_cols))
                unclosed += 2 - sum(models_hold(models, ids, side)) if closing else 0
                parts = (ids[~side], ids[side])
                stack.extend([parts[1], parts[0]])
                splits += 1
                continue
        ec[ids] = C
        C += 1
        done += m
        progress(done / n)
    total = info_loss_labels(ds, ec, C, iq_num, iq_node)
    info = {"weights": [float(w) for w in weights],
            "weight_names": list(data.num_names) + list(data.cat_names),
            **winfo, "info_loss": float(total), "splits": splits, "greedy_moves": moves,
            "privacy_moves": privacy_moves, "unclosed_halves": unclosed}
    return Partition(ec=ec, info=info)


ENTRY = Algorithm("info2means", run, "local", declared("info2means"),
              "information-quantity loss, weighted recursive 2-means + greedy (Yuan et al. 2024)")
ALGORITHMS = [ENTRY]
