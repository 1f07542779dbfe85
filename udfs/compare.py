"""``__kanon_metrics(tbl)``: the utility metrics of one anonymized table, for a table name that
comes from a column or a list (``kanon_compare([...])``, sql/compare.sql).

The metric macros (sql/metrics_*.sql) take their table as a constant (``query_table`` binds it),
so a name held in a column cannot reach them directly; this UDF evaluates them for each name
through a cursor (committed tables, views and files; see kanon_duckdb/relation.py; objects
registered on the calling connection or cursor, kanon_duckdb/registered.py). A relation only
the caller's connection sees (a TEMP table...) cannot be read from there, nor, with its name
known only at run time, from the caller's query: the error names the constant-list form
(``kanon_compare``), which is routed at bind time (kanon_duckdb/caller_macros.py).
"""
from __future__ import annotations

import pyarrow as pa

from kanon_duckdb.errors import InvalidParameterError
from kanon_duckdb.udf_spec import UDF, UdfContext, first_value

METRICS = ("gcp", "discernibility", "cavg", "suppression", "total_il", "gen_total_il")
METRICS_TYPE = "STRUCT(" + ", ".join(f"{m} DOUBLE" for m in METRICS) + ")"


def metrics_of(cur, tbl: str) -> dict:
    """{metric: value} of the anonymized table ``tbl`` (the SQL metric macros, one statement)."""
    lit = "'" + tbl.replace("'", "''") + "'"
    row = cur.execute("SELECT " + ", ".join(f"{m}({lit})" for m in METRICS)).fetchall()[0]
    return dict(zip(METRICS, (None if v is None else float(v) for v in row)))


def checked_metrics(cur, tbl: str, names: list) -> dict:
    """:func:`metrics_of`, or for a table name the cursor cannot resolve an error saying why
    a relation only the caller sees (a TEMP table...) cannot come from a column, with the
    call that reads it: a constant list, ``kanon_compare([... names])``."""
    import duckdb

    from kanon_duckdb.caller_read import applies
    try:
        return metrics_of(cur, tbl)
    except duckdb.CatalogException as exc:
        if not applies(tbl):
            raise
        listed = ", ".join("'" + n.replace("'", "''") + "'" for n in dict.fromkeys(names) if n)
        raise InvalidParameterError(
            f"kanon_metrics: {str(exc).splitlines()[0]} If '{tbl}' is a TEMP table or view, a "
            f"table created in your open transaction or an object registered before kanon_duckdb "
            f"was imported, only your connection sees it, and a name coming from a column "
            f"reaches kanon_metrics when the query runs, too late to read it in your query "
            f"(kanon_duckdb/relation.py). Fix: name the tables in a constant list, "
            f"FROM kanon_compare([{listed}]), or call the metric macros with a constant name, "
            f"gcp('{tbl}')") from None


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
            cache = {t: checked_metrics(cur, t, names) for t in set(names) if t is not None}
        finally:
            cur.close()
        return pa.array([cache.get(t) for t in names],
                        pa.struct([(m, pa.float64()) for m in METRICS]))

    return [UDF("__kanon_metrics", kanon_metrics, ("VARCHAR", "UBIGINT"), METRICS_TYPE,
                side_effects=True)]
