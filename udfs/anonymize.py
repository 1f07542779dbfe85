"""Arrow UDFs behind the ``k_anonymize`` table macro.

``__kanon_plan(tbl, qi, numeric, categorical)`` is deterministic and folded at bind time: the
macro uses it inside ``COLUMNS(lambda ...)`` to name the output columns.
``__kanon_run(tbl, k, algo, qi, seed, numeric, categorical, params)`` runs the algorithm once and
returns the per-class published values as one STRUCT value, plus a token under which the
row→class assignment stays in this process; ``__kanon_ec(token, rowid)`` then maps each scanned
row to its class, chunk by chunk, so the row-level work is a parallel scan (no list of n rows
inside one value, which DuckDB would copy several times).
"""
from __future__ import annotations

import itertools
import threading

import numpy as np
import pyarrow as pa

from kanon_duckdb import interrupt
from kanon_duckdb.errors import ConcurrentChangeError
from kanon_duckdb.udf_spec import UDF, UdfContext, first_value

PLAN_TYPE = ("STRUCT(tbl_sql VARCHAR, qi VARCHAR[], int_qi VARCHAR[], float_qi VARCHAR[], "
             "cat_qi VARCHAR[], out_cols VARCHAR[])")
RUN_TYPE = ("STRUCT(run_id BIGINT, token BIGINT, n_rows BIGINT, "
            "classes STRUCT(ec BIGINT, size BIGINT, suppressed BOOLEAN, lo_i BIGINT[], hi_i BIGINT[], "
            "lo_f DOUBLE[], hi_f DOUBLE[], labels VARCHAR[])[])")


def _plan_struct(plan):
    flt = [c for c in plan.numeric if c not in plan.integer]
    out_cols = list(plan.qi) + [f"{c}_{end}" for c in plan.numeric for end in ("min", "max")]
    return {"tbl_sql": plan.table_sql, "qi": plan.qi, "int_qi": plan.integer, "float_qi": flt,
            "cat_qi": plan.categorical, "out_cols": out_cols}


def _list_of(values: pa.Array, n_rows: int, width: int) -> pa.Array:
    offsets = pa.array(np.arange(0, (n_rows + 1) * width, width, dtype=np.int32)
                       if width else np.zeros(n_rows + 1, np.int32))
    return pa.ListArray.from_arrays(offsets, values)


def result_to_arrow(res, token: int) -> pa.StructArray:
    """Pack an AnonymizationResult into the RUN_TYPE value (one row)."""
    g, plan, data = res.generalized, res.plan, res.data
    C = g.n_classes
    num_names = data.num_names
    int_cols = [num_names.index(c) for c in plan.integer]
    flt_cols = [i for i, c in enumerate(num_names) if c not in plan.integer]

    def num_lists(cols, src, as_int):
        vals = src[:, cols] if cols else np.zeros((C, 0))
        flat = vals.reshape(-1)
        mask = np.isnan(flat)
        if as_int:
            arr = pa.array(np.where(mask, 0, flat).astype(np.int64), mask=mask)
        else:
            arr = pa.array(flat, mask=mask)
        return _list_of(arr, C, len(cols))

    labels_flat = []
    if data.dc:
        # dictionary-decode node ids per tree to labels
        cols = []
        for j, t in enumerate(data.trees):
            dictionary = pa.array(t.labels, pa.string())
            cols.append(pa.DictionaryArray.from_arrays(pa.array(g.nodes[:, j], pa.int32()),
                                                       dictionary).cast(pa.string()))
        # interleave: class-major order
        take = np.arange(C * data.dc).reshape(C, data.dc).T.reshape(-1)
        stacked = pa.concat_arrays(cols)
        order = np.empty(C * data.dc, dtype=np.int64)
        order[take] = np.arange(C * data.dc)
        labels_flat = stacked.take(pa.array(order))
    else:
        labels_flat = pa.array([], pa.string())
    sup = np.zeros(C, dtype=bool)
    if g.suppressed is not None:
        sup = np.bincount(g.ec, weights=g.suppressed.astype(np.float64), minlength=C) > 0
    classes = pa.StructArray.from_arrays(
        [pa.array(np.arange(C), pa.int64()), pa.array(g.size, pa.int64()), pa.array(sup),
         num_lists(int_cols, g.lo, True), num_lists(int_cols, g.hi, True),
         num_lists(flt_cols, g.lo, False), num_lists(flt_cols, g.hi, False),
         _list_of(labels_flat, C, data.dc)],
        names=["ec", "size", "suppressed", "lo_i", "hi_i", "lo_f", "hi_f", "labels"])
    one = lambda arr: pa.ListArray.from_arrays(pa.array([0, len(arr)], pa.int32()), arr)
    return pa.StructArray.from_arrays(
        [pa.array([res.run_id], pa.int64()), pa.array([token], pa.int64()),
         pa.array([data.n], pa.int64()), one(classes)],
        names=["run_id", "token", "n_rows", "classes"])


class Assignments:
    """Row→class assignments of the latest runs, by token, for ``__kanon_ec``.

    Holds the class id (int32) per encoded row and, when the rowids are not simply 0..n-1, the
    sorted rowids. The newest ``keep`` runs are kept (a statement may hold several
    k_anonymize calls); older ones are dropped when a new run arrives.
    """

    def __init__(self, keep: int = 4):
        self.keep = keep
        self._runs: dict = {}
        self._next = itertools.count(1)
        self._lock = threading.Lock()  # the runs of one statement arrive from parallel threads

    def add(self, rowid: np.ndarray, ec: np.ndarray) -> int:
        rowid = np.asarray(rowid, dtype=np.int64)
        ec = np.asarray(ec).astype(np.int32)
        n = rowid.size
        if n and rowid[0] == 0 and rowid[-1] == n - 1 and (n < 2 or bool(np.all(np.diff(rowid) == 1))):
            sorted_rowid = None  # the common case: position = rowid
        else:
            order = np.argsort(rowid, kind="stable")
            sorted_rowid, ec = rowid[order], ec[order]
        with self._lock:
            token = next(self._next)
            self._runs[token] = (sorted_rowid, ec)
            while len(self._runs) > self.keep:
                self._runs.pop(next(iter(self._runs)))
        return token

    def classes_of(self, token: int, rid: np.ndarray) -> np.ndarray:
        """Class id (int64) of each rowid in ``rid``; raises if a row was not anonymized."""
        run = self._runs.get(token)
        if run is None:
            raise ConcurrentChangeError(
                f"k_anonymize: the run's row assignment is gone (more than {self.keep} "
                f"k_anonymize calls in one statement?); run it again")
        sorted_rowid, ec = run
        if sorted_rowid is None:
            pos = rid
            ok = (rid >= 0) & (rid < ec.size)
        else:
            pos = np.searchsorted(sorted_rowid, rid).clip(0, max(sorted_rowid.size - 1, 0))
            ok = sorted_rowid[pos] == rid if sorted_rowid.size else np.zeros(rid.size, bool)
        if not ok.all():
            raise ConcurrentChangeError(
                "k_anonymize: the table changed during the call (a row was added); run it again")
        return ec[pos].astype(np.int64)


def _catalog_version(con):
    """A number that changes whenever a name may bind differently (None when unavailable)."""
    fn = getattr(con, "_catalog_version", None)
    try:
        return fn() if fn is not None else None
    except Exception:  # pragma: no cover - private API of the DuckDB Python package
        return None


def declare(ctx: UdfContext) -> list[UDF]:
    """``__kanon_plan``, ``__kanon_run`` and ``__kanon_ec`` on ``ctx.con`` (state per connection)."""
    con = ctx.con
    plan_cache: dict = {}
    assignments = Assignments()

    def kanon_plan(tbl, spec_json):
        from kanon_duckdb.params import parse_json_params
        spec = parse_json_params(first_value(spec_json))
        args = (first_value(tbl), spec.get("qi"), spec.get("numeric"), spec.get("categorical"))
        key = (repr(args), _catalog_version(con))
        struct = plan_cache.get(key) if key[1] is not None else None
        if struct is None:
            # imported on first use (numba): connect() stays fast
            from kanon_duckdb.encoding import plan_qis
            cur = con.cursor()
            try:
                struct = _plan_struct(plan_qis(cur, *args))
            finally:
                cur.close()
            if key[1] is not None:
                if len(plan_cache) > 64:
                    plan_cache.clear()
                plan_cache[key] = struct
        return pa.array([struct] * len(tbl))

    def kanon_run(tbl, spec_json, named_json, params_json):
        # numba and the kernels load on first use
        from kanon_duckdb.anonymize import anonymize
        from kanon_duckdb.params import merge_params, parse_json_params
        spec = parse_json_params(first_value(spec_json))
        params = merge_params(parse_json_params(first_value(named_json)),
                              parse_json_params(first_value(params_json)))
        cur = con.cursor()
        try:
            with interrupt.watch(con, ctx.progress) as progress:
                res = anonymize(cur, first_value(tbl), k=spec.get("k"), algo=spec.get("algo"),
                                qi=spec.get("qi"), seed=spec.get("seed"),
                                numeric=spec.get("numeric"), categorical=spec.get("categorical"),
                                params=params, progress=progress,
                                taxonomies=spec.get("taxonomies"))
        finally:
            cur.close()
        token = assignments.add(res.rowid, res.generalized.ec)
        out = result_to_arrow(res, token)
        del res
        if len(tbl) != 1:
            out = pa.concat_arrays([out] * len(tbl))
        return out

    def kanon_ec(token, rid):
        if hasattr(rid, "combine_chunks"):
            rid = rid.combine_chunks()
        rid = rid.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        return pa.array(assignments.classes_of(first_value(token), rid), pa.int64())

    return [
        UDF("__kanon_ec", kanon_ec, ("BIGINT", "BIGINT"), "BIGINT", side_effects=True),
        UDF("__kanon_plan", kanon_plan, ("VARCHAR", "VARCHAR"), PLAN_TYPE),
        UDF("__kanon_run", kanon_run, ("VARCHAR", "VARCHAR", "VARCHAR", "VARCHAR"), RUN_TYPE,
            side_effects=True),
    ]
