"""``__kanon_metrics(tbl)``: the utility metrics of one anonymized table, for a table name that
comes from a column or a list (``kanon_compare([...])``, sql/compare.sql).

The metric macros (sql/metrics_*.sql) take their table as a constant (``query_table`` binds it),
so a name held in a column cannot reach them directly; this UDF evaluates them for each name
through a cursor (committed tables, views and files; see kanon_duckdb/relation.py; objects
registered on the calling connection or cursor, kanon_duckdb/registered.py).
"""
from __future__ import annotations

import pyarrow as pa

from kanon_duckdb.udf_spec import UDF, UdfContext, first_value

METRICS = ("gcp", "discernibility", "cavg", "suppression", "total_il", "gen_total_il")
METRICS_TYPE = "STRUCT(" + ", ".join(f"{m} DOUBLE" for m in METRICS) + ")"


def metrics_of(cur, tbl: str) -> dict:
    """{metric: value} of the anonymized table ``tbl`` (the SQL metric macros, one statement)."""
    lit = "'" + tbl.replace("'", "''") + "'"
    row = cur.execute("SELECT " + ", ".join(f"{m}({lit})" for m in METRICS)).fetchall()[0]
    return dict(zip(METRICS, (None if v is None else float(v) for v in row)))


def declare(ctx: UdfContext) -> list[UDF]:
    """``__kanon_metrics`` on ``ctx.con``."""
    from kanon_duckdb.registered import CallerConnection
    con = ctx.con

    def kanon_metrics(tbl, caller):
        names = tbl.to_pylist()
        # objects registered on the caller (named by getvariable('__kanon_conn_id'),
        # registered.py) are registered on the cursor
        cur = CallerConnection(con, first_value(caller)).cursor()
        try:
            cache = {t: metrics_of(cur, t) for t in set(names) if t is not None}
        finally:
            cur.close()
        return pa.array([cache.get(t) for t in names],
                        pa.struct([(m, pa.float64()) for m in METRICS]))

    return [UDF("__kanon_metrics", kanon_metrics, ("VARCHAR", "UBIGINT"), METRICS_TYPE,
                side_effects=True)]
