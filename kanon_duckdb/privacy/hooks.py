"""The orchestrator's privacy steps (``kanon_duckdb.anonymize`` calls these, in this order):

1. ``split_params``: privacy parameters apply to every algorithm; they are taken out of the
   algorithm's own parameters (info2means keeps reading ``sensitive``: its first column).
2. ``parse_models`` (``spec``), then the sensitive columns are read with the QIs.
3. ``attach``: encode them into a PrivacySpec that algorithms find in ``QIData.extra``.
4. ``run``: the algorithm runs with k = the models' class size (k, ceil(1/max_risk), ...);
   local-recoding algorithms then apply ``max_suppression`` (``suppress.suppress_after``).
5. ``enforce``: local-recoding algorithms other than Mondrian get the repair pass
   (``enforce.repair``); every partition then passes ``enforce.check_published``.
6. ``publish_suppressed``: suppressed rows are published fully generalized (root, NULL range).
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ..errors import InvalidParameterError
from .enforce import check_published, repair
from .suppress import suppress_after
from .spec import EXTRA_KEY, PRIVACY_PARAMS, build_spec, parse_sensitive

# algorithms that enforce the models themselves (no repair pass needed)
ENFORCED_INSIDE = ("mondrian", "optimal", "kgen", "random", "datafly")


def split_params(algorithm, given: dict | None):
    """(algorithm parameters, privacy parameters, local options) from the caller's parameters.

    Privacy parameters apply to every algorithm; info2means keeps its own ``sensitive`` (the
    weights' column): the first column of a list. ``max_suppression`` of a local-recoding
    algorithm that does not declare it itself is a local option (``suppress``), validated by
    the registry's declaration."""
    from ..params import SHARED
    algo_params, priv, local = {}, {}, {}
    for name, value in (given or {}).items():
        if name in PRIVACY_PARAMS:
            priv[name] = value
        elif (name == "max_suppression" and algorithm.family == "local"
              and name not in algorithm.params):
            if value is not None:
                local[name] = SHARED[name].coerce(value, algorithm.name)
        else:
            algo_params[name] = value
    if "sensitive" in algorithm.params and priv.get("sensitive") is not None:
        names = parse_sensitive(priv["sensitive"])
        if names:
            algo_params["sensitive"] = names[0]
    return algo_params, priv, local


def run(algorithm, data, k: int, seed: int, params: dict, progress, spec, local: dict):
    """Run the algorithm; with ``max_suppression``, local-recoding algorithms then suppress the
    rows whose presence costs most (``suppress.suppress_after``)."""
    part = algorithm.run(data, k, seed, params, progress)
    ms = local.get("max_suppression")
    if ms:
        part = suppress_after(data, part, k, ms, params.get("weights"), spec)
    return part


def sensitive_columns(plan, sensitive: list, models: tuple, extra: list) -> list:
    """The sensitive columns resolved in the table (its spelling), appended to ``extra``."""
    from ..encoding import resolve_column
    out = []
    for c in sensitive:
        col = resolve_column(plan, c, what="sensitive :=", required=True)
        if col in plan.qi and len(models) > 1:
            raise InvalidParameterError(
                f"column '{col}' is both a quasi-identifier and sensitive; name it in one of "
                f"qi := and sensitive :=")
        out.append(col)
        if col not in extra:
            extra.append(col)
    return out


def recorded(privacy_params: dict, spec) -> dict:
    """The privacy parameters as given plus the resolved models, for kanon_runs.params."""
    out = {name: v for name, v in privacy_params.items() if v is not None}
    if len(spec.models) > 1 or spec.sensitive:
        out["models"] = spec.describe()
    return out


def attach(con, data, models, sensitive, t_distance, table=None, reference=None):
    """Build the run's PrivacySpec from the encoded rows and put it in ``data.extra``
    (``reference``: the whole table's sensitive histogram, see ``spec.build_spec``)."""
    spec = build_spec(con, models, sensitive, t_distance,
                      {c: data.extra[c] for c in sensitive}, data.n, table, data.counts,
                      reference)
    data.extra[EXTRA_KEY] = spec
    return spec


def enforce(algorithm, data, part, spec, params: dict):
    """Repair the partition of a clustering algorithm, then refuse any violating partition."""
    if algorithm.name not in ENFORCED_INSIDE and algorithm.family == "local":
        ms = params.get("max_suppression") or 0.0
        budget = int(math.floor(float(ms) * data.n + 1e-9))
        if part.suppressed is not None:
            budget -= int(part.suppressed.sum())
        ec = np.asarray(part.ec, dtype=np.int64)
        C = int(ec.max()) + 1 if ec.size else 0
        if spec.has_class_models and (~spec.classes_ok(ec, C)).any():
            part = repair(data, part, spec, max(budget, 0), params.get("weights"))
    ec = np.asarray(part.ec, dtype=np.int64)
    check_published(spec, ec, int(ec.max()) + 1 if ec.size else 0, part.suppressed)
    return part


def publish_suppressed(data, g):
    """Suppressed classes publish the root of every tree and a NULL range (any value)."""
    if g.suppressed is None or not g.suppressed.any():
        return g
    sup_cls = np.bincount(g.ec[g.suppressed], minlength=g.n_classes) > 0
    nodes = g.nodes.copy()
    lo = g.lo.copy()
    hi = g.hi.copy()
    nodes[sup_cls] = 0
    lo[sup_cls] = np.nan
    hi[sup_cls] = np.nan
    return dataclasses.replace(g, nodes=nodes, lo=lo, hi=hi)
