"""Orchestrator: validate, encode, run an algorithm, generalize, record the run.

This layer owns all checks and DuckDB I/O; algorithms see only encoded arrays.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from .algorithms import get_algorithm
from .algorithms.base import Partition, QIData, no_progress
from .encoding import QIPlan, encode, plan_qis
from .errors import InfeasibleError, InvalidParameterError
from .generalize import Generalized, generalize, per_qi_loss
from .runs import record_run
from .taxonomy.store import check_taxonomies_param
from .warmup import compile_notice


@dataclass(frozen=True)
class AnonymizationResult:
    run_id: int
    plan: QIPlan
    data: QIData
    rowid: np.ndarray
    generalized: Generalized
    partition: Partition
    elapsed_s: float
    params: dict


def check_k(k, n=None):
    if k is None or isinstance(k, bool) or int(k) != k:
        raise InvalidParameterError(f"k must be an integer >= 1, got {k!r}")
    k = int(k)
    if k < 1:
        raise InvalidParameterError(f"k={k} is invalid: k must be at least 1")
    if n is not None and k > n:
        raise InvalidParameterError(
            f"k={k} exceeds the number of rows ({n}); choose k <= {n}")
    return k


def coerce_params(algo, given: dict | None) -> dict:
    """Merge user parameters (strings from SQL, or Python values) into the algorithm's defaults."""
    params = dict(algo.params)
    for name, value in (given or {}).items():
        if value is None:
            continue
        if name not in algo.params:
            applicable = ", ".join(sorted(algo.params)) or "none"
            raise InvalidParameterError(
                f"parameter '{name}' does not apply to algo '{algo.name}' (its parameters: {applicable})")
        default = algo.params[name]
        try:
            if isinstance(default, bool):
                value = value if isinstance(value, bool) else str(value).lower() in ("1", "true", "t", "yes")
            elif isinstance(default, int) and not isinstance(default, bool):
                value = int(float(value))
            elif isinstance(default, float):
                value = float(value)
            elif isinstance(default, (list, tuple)):
                value = list(value) if not isinstance(value, str) else [v.strip() for v in value.strip("[]").split(",") if v.strip()]
            else:
                value = value if not isinstance(value, bytes) else value.decode()
        except (TypeError, ValueError):
            raise InvalidParameterError(
                f"parameter '{name}' of algo '{algo.name}' expects a {type(default).__name__}, got {value!r}")
        params[name] = value
    return params


def anonymize(con, table, *, k, algo="mondrian", qi=None, seed=0, numeric=None, categorical=None,
              params=None, progress=no_progress, record=True, taxonomies=None) -> AnonymizationResult:
    """Anonymize ``table`` (read through ``con``) and record the run in ``kanon_runs``.

    ``taxonomies``: QI -> kanon_taxonomy attr naming the tree a QI uses (else the tree of
    '<table>.<qi>', else of '<qi>': taxonomy.store.resolve_tree_attr); recorded per QI in
    kanon_runs.qi_trees.

    Returns per-row class ids and per-class published values; the SQL layer joins them back.
    """
    t0 = time.perf_counter()
    k = check_k(k)
    algorithm = get_algorithm(algo if isinstance(algo, str) else str(algo))
    if seed is None:
        seed = 0
    seed = int(seed)
    user_params = dict(params or {})
    params = coerce_params(algorithm, params)
    plan = plan_qis(con, table, qi, numeric, categorical)
    extra = []
    for p in ("sensitive",):
        c = params.get(p)
        if not c:
            continue
        if c not in plan.types:
            if user_params.get(p) is None:
                continue  # the algorithm's default column is absent: it falls back (documented)
            from .errors import UnknownObjectError
            raise UnknownObjectError(f"column '{c}' does not exist in table {table!r}")
        extra.append(c)
    taxonomies = check_taxonomies_param(taxonomies, plan.qi)
    with compile_notice(algorithm.name):  # says so when numba compiles (first use only)
        rowid, data = encode(con, plan, extra_columns=extra,
                             need_num_trees=algorithm.needs_num_trees, taxonomies=taxonomies)
        check_k(k, data.n)
        part = algorithm.run(data, k, seed, params, progress)
        g = generalize(data, part)
    _verify(g, k)
    elapsed = time.perf_counter() - t0
    run_id = 0
    if record:
        loss = per_qi_loss(data, g)
        order = {c: i for i, c in enumerate(plan.numeric + plan.categorical)}
        n_sup = int(part.suppressed.sum()) if part.suppressed is not None else 0
        run_id = record_run(con, source=plan.table, k=k, algo=algorithm.name, qi=plan.qi,
                            numeric_qi=plan.numeric, categorical_qi=plan.categorical,
                            params=params, seed=seed, n_rows=data.n, n_classes=g.n_classes,
                            n_suppressed=n_sup, elapsed_s=elapsed,
                            qi_loss=[loss[order[c]] for c in plan.qi],
                            weights=part.info.get("weights"), details=part.info,
                            qi_trees=data.tree_attrs)
    return AnonymizationResult(run_id, plan, data, rowid, g, part, elapsed, params)


def _verify(g: Generalized, k: int) -> None:
    """Refuse to publish a partition that breaks k-anonymity (a kernel bug, never user error)."""
    sup = g.suppressed
    if sup is None:
        bad = g.size < k
    else:
        sup_per_class = np.bincount(g.ec, weights=sup.astype(np.float64), minlength=g.n_classes)
        bad = (g.size < k) & (sup_per_class < g.size)
    if bad.any():
        raise InfeasibleError(
            f"internal error: {int(bad.sum())} classes have fewer than k={k} rows; please report it")
