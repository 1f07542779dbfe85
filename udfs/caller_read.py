"""``__kanon_run_rows``: the run of ``k_anonymize`` on a relation read in the caller's query.

``__kanon_run_rows(args_json, names, types, rows)`` gets the whole relation in one call (column
names, DuckDB type texts, every row as a VARCHAR list; see ``kanon_duckdb/caller_read.py``),
rebuilds it on a reader cursor, runs the algorithm as ``__kanon_run`` does and returns its
RUN_TYPE value plus ``slots``: where each QI's published values sit in the class lists.
"""
from __future__ import annotations

import json

import pyarrow as pa

from kanon_duckdb.udf_spec import UDF, UdfContext, first_value

from .anonymize import RUN_TYPE, classes_arrow, run_and_store, run_value

CALLER_RUN_TYPE = RUN_TYPE[:-1] + ", slots BIGINT[])"


def declare(ctx: UdfContext) -> list[UDF]:
    """``__kanon_run_rows`` on ``ctx.con``."""
    con = ctx.con

    def kanon_run_rows(args_json, names, types, rows):
        from kanon_duckdb.caller_read import qi_slots, rebuild
        args = json.loads(first_value(args_json))
        rows = rows.combine_chunks() if hasattr(rows, "combine_chunks") else rows
        cur = con.cursor()
        try:
            source = rebuild(cur, args["tbl"], first_value(names), first_value(types),
                             rows.flatten())
            res, token = run_and_store(con, ctx, cur, source, args)
        finally:
            cur.close()
        run = run_value(res.run_id, token, res.data.n_rows, classes_arrow(res))
        slots = pa.array([qi_slots(res.plan)], pa.list_(pa.int64()))
        out = pa.StructArray.from_arrays([*run.flatten(), slots],
                                         names=[f.name for f in run.type] + ["slots"])
        return pa.concat_arrays([out] * len(args_json)) if len(args_json) != 1 else out

    return [UDF("__kanon_run_rows", kanon_run_rows,
                ("VARCHAR", "VARCHAR[]", "VARCHAR[]", "VARCHAR[][]"), CALLER_RUN_TYPE,
                side_effects=True)]
