"""Arrow UDF behind the ``kanon_mapping`` table macro (sql/mapping.sql): ``__kanon_mapping(tbl)``
returns the rows of kanon_duckdb.mapping.mapping_rows as one list value, read through a cursor;
``__kanon_run_source(tbl)`` the recorded source of its run (the default of ``source :=``)."""
from __future__ import annotations

import pyarrow as pa

from kanon_duckdb.udf_spec import UDF, UdfContext, first_value

_ARROW = {"VARCHAR": pa.string(), "BIGINT": pa.int64(), "DOUBLE": pa.float64()}


def declare(ctx: UdfContext) -> list[UDF]:
    """``__kanon_mapping`` on ``ctx.con``."""
    con = ctx.con
    from kanon_duckdb.mapping import MAPPING_FIELDS  # light module, no algorithm stack

    row_type = pa.struct([(name, _ARROW[t]) for name, t in MAPPING_FIELDS])
    sql_type = "STRUCT(" + ", ".join(f"{n} {t}" for n, t in MAPPING_FIELDS) + ")[]"

    def kanon_mapping(tbl, source, caller):
        from kanon_duckdb.mapping import mapping_rows
        from kanon_duckdb.registered import CallerConnection
        # objects registered on the caller (named by getvariable('__kanon_conn_id'),
        # registered.py) are registered on the cursor
        cur = CallerConnection(con, first_value(caller)).cursor()
        try:
            rows = mapping_rows(cur, first_value(tbl), first_value(source))
        finally:
            cur.close()
        return pa.array([rows] * len(tbl), type=pa.list_(row_type))

    def kanon_run_source(tbl, caller):
        if tbl is None:
            return None
        from kanon_duckdb.mapping import run_source
        from kanon_duckdb.registered import CallerConnection
        cur = CallerConnection(con, caller).cursor()
        try:
            return run_source(cur, tbl)
        except Exception:  # noqa: BLE001 - kanon_mapping itself reports a bad table
            return None
        finally:
            cur.close()

    # __kanon_run_source(anon_tbl, caller): kanon_mapping's default source (folded at bind time,
    # so a TEMP source is handed over: kanon_duckdb/caller_macros.py)
    return [UDF("__kanon_mapping", kanon_mapping, ("VARCHAR", "VARCHAR", "UBIGINT"), sql_type,
                side_effects=True),
            UDF("__kanon_run_source", kanon_run_source, ("VARCHAR", "UBIGINT"), "VARCHAR",
                arrow=False, null_handling="special")]
