"""Orchestrator: validate, encode, run an algorithm, generalize, record the run.

This layer owns all checks and DuckDB I/O; algorithms see only encoded arrays.

The module is also the public entry point ``kanon_duckdb.anonymize(data, k=..., qi=...)``: it is
callable (see ``kanon_duckdb.api.anonymize``), because a package attribute and a submodule of the
same name cannot be told apart once the submodule is imported.
"""
from __future__ import annotations

import math
import sys
import time
import types
from dataclasses import dataclass

import numpy as np

from . import objectives
from .algorithms import get_algorithm
from .algorithms.base import Partition, no_progress
from .qidata import QIData
from .relation import Source, resolve_source
from .encoding import QIPlan, encode, group_rows, plan_qis, resolve_column, with_key_columns
from .errors import InfeasibleError, InvalidParameterError
from .generalize import Generalized, generalize, per_qi_loss
from .params import coerce_params
from .privacy import hooks as privacy_hooks
from .privacy.spec import parse_models
from .decimals import class_bounds
from .runs import RunRecord, record_run, reserve_run_id
from .taxonomy.store import check_taxonomies_param, tree_fingerprints
from .warmup import compile_notice


@dataclass(frozen=True)
class AnonymizationResult:
    run_id: int
    plan: QIPlan
    data: QIData
    row_key: np.ndarray  # uint64 per encoded row (encoding.row_key_sql)
    generalized: Generalized
    partition: Partition
    elapsed_s: float
    params: dict
    # a run made ``in_row_order`` from the histogram of its rows: (uint64 (n,) every row's key,
    # int64 (n,) its tuple's number in ``data``) in the order a scan returns the rows
    rows: tuple | None = None
    # ``record="deferred"``: the kanon_runs row to write under ``run_id`` (reserved) once the
    # run's output is complete (runs.record_run(..., run_id=)), else None
    pending: RunRecord | None = None
    # DECIMAL QI -> (lo, hi, null_lo, null_hi): the classes' exact bounds as unscaled int64
    # (kanon_duckdb.decimals.class_bounds), published through the integer lists
    decimals: dict | None = None


def check_k(k, n=None):
    """``k`` as an int >= 1 (and <= n when n is given); integral numbers and digit strings pass."""
    value = k
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            value = None
    if (value is None or isinstance(value, bool) or not isinstance(value, (int, float))
            or isinstance(value, float) and not (math.isfinite(value) and value.is_integer())):
        raise InvalidParameterError(f"k must be an integer >= 1, got {k!r}")
    k = int(value)
    if k < 1:
        raise InvalidParameterError(f"k={k} is invalid: k must be at least 1")
    if n is not None and k > n:
        raise InvalidParameterError(
            f"k={k} exceeds the number of rows ({n}); choose k <= {n}")
    return k


def anonymize(con, table, *, k, algo="mondrian", qi=None, seed=0, numeric=None, categorical=None,
              params=None, progress=no_progress, record=True, taxonomies=None,
              ranges=None, row_counts=None, sensitive_reference=None,
              in_row_order=False, rows_estimate=None, run_key=None) -> AnonymizationResult:
    """Anonymize ``table`` (read through ``con``) and record the run in ``kanon_runs``
    (``record="deferred"``: reserve its id, ``runs.reserve_run_id``, and leave the row in
    ``AnonymizationResult.pending`` for the caller to write once the output is complete;
    ``run_key``: the database's key of those reservations, which a recorded run's id skips).

    ``taxonomies``: QI -> kanon_taxonomy attr naming the tree a QI uses (else the tree of
    '<table>.<qi>', else of '<qi>': taxonomy.store.resolve_tree_attr); recorded per QI in
    kanon_runs.qi_trees, with each tree's fingerprint in kanon_runs.qi_tree_hashes.
    ``ranges``: numeric QI -> (min, max) of the whole table when ``table`` is one part of it
    (the Spark partitions, ``kanon_duckdb.spark``): widths, cuts and NCP use them (``with_ranges``).
    ``sensitive_reference``: (pyarrow Table of the whole table's distinct sensitive tuples, their
    row counts) when ``table`` is one part of it: l-diversity is per class, but t-closeness
    measures against the whole table's distribution (``privacy.spec.build_spec``).
    ``row_counts``: a column of ``table`` telling how many rows each of its rows stands for
    (``table`` is a histogram computed elsewhere, e.g. Spark's ``groupBy(qi).count()``); full-
    domain (lattice) algorithms only, which read histograms anyway.

    ``in_row_order``: a full-domain run also gives every row's tuple in scan order
    (``AnonymizationResult.rows``): with no sensitive or extra column, it reads the rows (one
    scan) and groups them itself (``encoding.group_rows``) instead of reading DuckDB's GROUP BY;
    the same tuples, so the same classes.

    ``rows_estimate``: the catalog's row count of ``table`` when the caller looked it up (the
    SQL statement, at bind time); a ``table`` given by name is looked up here. A small table is
    read whole before it is encoded (``encoding.encode``), one statement less.

    Returns per-row class ids and per-class published values; the SQL layer joins them back.
    """
    t0 = time.perf_counter()
    k = check_k(k)
    algorithm = get_algorithm(algo if isinstance(algo, str) else str(algo))
    if seed is None:
        seed = 0
    seed = int(seed)
    given, privacy_given, local = privacy_hooks.split_params(algorithm, params)
    params = coerce_params(algorithm, given)
    models, sensitive, t_distance = parse_models(privacy_given, k, algorithm.name)
    if row_counts is not None and algorithm.family != "lattice":
        raise InvalidParameterError(
            f"row_counts := applies to the full-domain algorithms (optimal, kgen, random, "
            f"datafly), not to '{algorithm.name}'; pass the rows themselves")
    if isinstance(table, str):  # resolved once here: its catalog estimate also decides the read
        table = resolve_source(con, table)
    if rows_estimate is None and isinstance(table, Source):
        rows_estimate = table.ordered_rows
    plan = plan_qis(con, table, qi, numeric, categorical)
    weights = objectives.check_weights(params.pop("weights", None), plan.qi)
    extra = extra_columns(plan, algorithm, params, given)
    sensitive = privacy_hooks.sensitive_columns(plan, sensitive, models, extra)
    plan = with_key_columns(plan, sensitive)
    taxonomies = check_taxonomies_param(taxonomies, plan.qi)
    with compile_notice(algorithm.name):  # says so when numba compiles (first use only)
        # full-domain algorithms read the histogram of distinct (QI, sensitive) tuples: their
        # cost grows with the distinct tuples, not the rows (a class holds whole tuples)
        histogram = row_counts or algorithm.family == "lattice"
        by_rows = in_row_order and histogram and not row_counts and not extra
        row_key, data = encode(con, plan, extra_columns=extra,
                               need_num_trees=algorithm.needs_num_trees, taxonomies=taxonomies,
                               histogram=False if by_rows else histogram,
                               rows_estimate=rows_estimate)
        rows = None
        if by_rows:  # the histogram of the rows read in order: each row's tuple kept
            keys = row_key
            row_key, data, tuple_of = group_rows(keys, data)
            rows = (keys, tuple_of)
        if ranges is not None:
            data = with_ranges(data, [ranges[c] for c in plan.numeric])
        check_k(k, data.n_rows)
        spec = privacy_hooks.attach(con, data, models, sensitive, t_distance, plan.table,
                                    sensitive_reference)
        objectives.attach(data, weights)
        # the algorithms read the weights from data; the privacy hooks take them as a vector
        run_params = {**params, "weights": objectives.weight_vector(data)}
        part = privacy_hooks.run(algorithm, data, max(k, spec.min_class_size), seed, run_params,
                                 progress, spec, local)
        part = privacy_hooks.enforce(algorithm, data, part, spec, {**run_params, **local})
        g = privacy_hooks.publish_suppressed(data, generalize(data, part))
    _verify(g, k, data.counts)
    decimals = class_bounds(con, plan, data, g)
    elapsed = time.perf_counter() - t0
    run_id = 0
    if record:
        loss = per_qi_loss(data, g)
        order = {c: i for i, c in enumerate(plan.numeric + plan.categorical)}
        n_sup = (int(data.row_counts()[part.suppressed].sum())
                 if part.suppressed is not None else 0)
        ranges = [data.value_range(j) for j in range(data.dn)]
        int_ranges = [data.int_range(j) for j in range(data.dn)]
        trees = [(data.tree_attrs or {}).get(c) for c in plan.qi]
        fingerprints = tree_fingerprints(con, trees, data.tree_rows())
        rec = RunRecord(
            source=plan.table, k=k, algo=algorithm.name, qi=plan.qi, numeric_qi=plan.numeric,
            categorical_qi=plan.categorical,
            params={**params, **({"weights": weights} if weights else {}), **local,
                    **privacy_hooks.recorded(privacy_given, spec)},
            seed=seed,
            n_rows=data.n_rows, n_classes=g.n_classes, n_suppressed=n_sup, elapsed_s=elapsed,
            qi_loss=[loss[order[c]] for c in plan.qi], weights=part.info.get("weights"),
            details=part.info, num_lo=[r[0] for r in ranges], num_hi=[r[1] for r in ranges],
            qi_trees=trees,
            qi_tree_hashes=[fingerprints.get(a) for a in trees],
            qi_weights=objectives.per_qi(weights, plan.qi) if weights else None,
            int_lo=[r and r[0] for r in int_ranges], int_hi=[r and r[1] for r in int_ranges])
        if record == "deferred":
            return AnonymizationResult(reserve_run_id(con, run_key), plan, data, row_key, g,
                                       part, elapsed, params, rows, pending=rec,
                                       decimals=decimals)
        run_id = record_run(con, rec, key=run_key)
    return AnonymizationResult(run_id, plan, data, row_key, g, part, elapsed, params, rows,
                               decimals=decimals)


def with_ranges(data: QIData, ranges) -> QIData:
    """``data`` with each numeric QI's global range set to ``ranges[j]`` = (min, max) of its
    values over the whole table (a superset of this part's). Plain and offset coordinates move
    with the values, so the kernels' widths are those of one machine; a rank-coded column keeps
    its rank coordinates (only its NCP range changes). O(d)."""
    from dataclasses import replace
    lo, hi = data.num_lo.copy(), data.num_hi.copy()
    codecs = list(data.num_codec) + [None] * (data.dn - len(data.num_codec))
    for j, (g_lo, g_hi) in enumerate(ranges):
        c = codecs[j]
        if c is None:
            lo[j], hi[j] = g_lo, g_hi
        else:
            if c.kind == "offset":
                lo[j], hi[j] = g_lo - c.base, g_hi - c.base
            exact = int if data.num_is_int[j] else float  # codec.NumericCodec.value_lo
            codecs[j] = replace(c, value_lo=exact(g_lo), value_hi=exact(g_hi))
    return replace(data, num_lo=lo, num_hi=hi, num_codec=codecs)


def extra_columns(plan: QIPlan, algorithm, params: dict, given: dict) -> list:
    """Columns named by the algorithm's column parameters, resolved in the table (the value in
    ``params`` is replaced by the table's spelling). A default column the table lacks is
    skipped (the algorithm falls back, documented); a named one must exist and be flat."""
    extra: list = []
    for name in algorithm.column_params():
        value = params.get(name)
        if not value:
            continue
        names = [value] if isinstance(value, str) else list(value)
        resolved = []
        for c in names:
            col = resolve_column(plan, c, what=f"{name} :=", required=given.get(name) is not None)
            if col is None:
                continue
            base = plan.types[col].split("(")[0].split("[")[0].strip().upper()
            if base in _NESTED or plan.types[col].endswith("]"):
                raise InvalidParameterError(
                    f"{name} := '{col}' is a {plan.types[col]} column; a sensitive/extra column "
                    f"must hold plain values (a number, text, date...); unnest it or pick a "
                    f"scalar field first")
            resolved.append(col)
            if col not in extra:
                extra.append(col)
        if isinstance(value, str):
            params[name] = resolved[0] if resolved else value
        else:
            params[name] = resolved
    return extra


_NESTED = {"STRUCT", "MAP", "LIST", "UNION", "ARRAY", "VARIANT"}


def _verify(g: Generalized, k: int, counts=None) -> None:
    """Refuse to publish a partition that breaks k-anonymity (a kernel bug, never user error).
    ``counts``: rows per encoded tuple of a histogram run (``QIData.counts``): ``g.size``
    counts rows, so the suppressed rows of a class are counted in rows too."""
    sup = g.suppressed
    if sup is None:
        bad = g.size < k
    else:
        w = sup.astype(np.float64) if counts is None else np.where(sup, counts, 0).astype(np.float64)
        sup_per_class = np.bincount(g.ec, weights=w, minlength=g.n_classes)
        bad = (g.size < k) & (sup_per_class < g.size)
    if bad.any():
        raise InfeasibleError(
            f"internal error: {int(bad.sum())} classes have fewer than k={k} rows; please report it")


class _CallableModule(types.ModuleType):
    def __call__(self, data, **kwargs):
        """``kanon_duckdb.anonymize(data, k=..., qi=[...], algo=..., con=None, **params)``:
        see :func:`kanon_duckdb.api.anonymize`."""
        from .api import anonymize as api_anonymize
        return api_anonymize(data, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
