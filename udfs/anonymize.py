"""Arrow UDFs behind the ``k_anonymize`` table macro.

``__kanon_plan(tbl, qi, numeric, categorical)`` is deterministic and folded at bind time: the
macro uses it inside ``COLUMNS(lambda ...)`` to name the output columns.
``__kanon_run(tbl, k, algo, qi, seed, numeric, categorical, params)`` runs the algorithm once and
returns the row→class assignment and the per-class published values as one STRUCT value.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from kanon_duckdb.anonymize import anonymize
from kanon_duckdb.encoding import plan_qis
from kanon_duckdb import progress as _progress

from ._compat import first_value, replace_function

PLAN_TYPE = ("STRUCT(tbl_sql VARCHAR, qi VARCHAR[], int_qi VARCHAR[], float_qi VARCHAR[], "
             "cat_qi VARCHAR[], out_cols VARCHAR[])")
RUN_TYPE = ("STRUCT(run_id BIGINT, assign STRUCT(rid BIGINT, ec BIGINT)[], "
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


def result_to_arrow(res) -> pa.StructArray:
    """Pack an AnonymizationResult into the RUN_TYPE value (one row)."""
    g, plan, data = res.generalized, res.plan, res.data
    C = g.n_classes
    assign = pa.StructArray.from_arrays(
        [pa.array(res.rowid, pa.int64()), pa.array(g.ec, pa.int64())], names=["rid", "ec"])
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
        [pa.array([res.run_id], pa.int64()), one(assign), one(classes)],
        names=["run_id", "assign", "classes"])


def _catalog_version(con):
    """A number that changes whenever a name may bind differently (None when unavailable)."""
    fn = getattr(con, "_catalog_version", None)
    try:
        return fn() if fn is not None else None
    except Exception:  # pragma: no cover - private API of the DuckDB Python package
        return None


def register_anonymize_udfs(con) -> None:
    plan_cache: dict = {}

    def kanon_plan(tbl, qi, numeric, categorical):
        args = (first_value(tbl), first_value(qi), first_value(numeric), first_value(categorical))
        key = (repr(args), _catalog_version(con))
        struct = plan_cache.get(key) if key[1] is not None else None
        if struct is None:
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

    def kanon_run(tbl, k, algo, qi, seed, numeric, categorical, params):
        cur = con.cursor()
        try:
            p = first_value(params) or []
            res = anonymize(cur, first_value(tbl), k=first_value(k), algo=first_value(algo),
                            qi=first_value(qi), seed=first_value(seed), numeric=first_value(numeric),
                            categorical=first_value(categorical), params=dict(p),
                            progress=_progress.current())
        finally:
            cur.close()
        out = result_to_arrow(res)
        if len(tbl) != 1:
            out = pa.concat_arrays([out] * len(tbl))
        return out

    replace_function(con, "__kanon_plan", kanon_plan,
                     ["VARCHAR", "VARCHAR[]", "VARCHAR[]", "VARCHAR[]"], PLAN_TYPE)
    replace_function(con, "__kanon_run", kanon_run,
                     ["VARCHAR", "BIGINT", "VARCHAR", "VARCHAR[]", "BIGINT", "VARCHAR[]", "VARCHAR[]",
                      "MAP(VARCHAR, VARCHAR)"], RUN_TYPE, side_effects=True)
