"""Register the query-error functions on a DuckDB connection.

SQL surface (macros in ``sql/query_error.sql``):

- ``query_error(sql, raw_tbl, anon_tbl)`` (table): group keys, [measure,] raw_value,
  anon_estimate, rel_error;
- ``kanon_rewrite(sql, anon_tbl)`` (scalar VARCHAR): the estimating SQL, readable;
- ``query_workload(raw_tbl, n := 1000, seed := 0, dims := 2, qi := NULL)`` (table): qid, sql;
- ``workload_query_errors(workload_tbl, raw_tbl, anon_tbl)`` (table): qid, raw_value,
  anon_estimate, rel_error (each table read once; estimates equal query_error's);
- ``workload_error(workload_tbl, raw_tbl, anon_tbl)`` (table, one row): n_queries, n_skipped,
  mean/median/p95/max relative error.

DuckDB 2.0 has no Python table functions: ``query_error`` calls a deterministic scalar UDF with
constant arguments (``__kanon_query_error_sql``, udfs/caller_read.py), which DuckDB folds at
bind time, and runs the SQL it returns through ``query(...)``; ``__kanon_query_estimate_sql``
gives its estimate half alone, for a cursor a caller-side relation is handed to; the workload
macros unnest the STRUCT lists their UDFs return. Every table
argument is any relation ``k_anonymize`` reads (``relation.resolve_source``: tables, views, file
paths and globs, reader calls) or an object registered on the caller's connection or cursor:
the macros pass ``getvariable('__kanon_conn_id')`` (registered.py) and the UDFs read through
cursors that see the
caller's registered objects (``registered.CallerConnection``); TEMP tables and uncommitted
changes are not visible to them (relation.py), so the macros hand those over
(caller_macros.py).
"""
from __future__ import annotations

from kanon_duckdb.udf_spec import UDF, UdfContext


def declare(ctx: UdfContext) -> list[UDF]:
    """The UDFs above on ``ctx.con``: native (one call per row), deterministic, so constant
    arguments fold at bind time as ``query()`` needs. The rewriter (sqlglot) is imported on first
    use, so connect() does not pay for it."""
    from kanon_duckdb.registered import CallerConnection
    con = ctx.con

    def rewrite_udf(sql, anon_tbl, caller):
        from kanon_duckdb.rewrite import kanon_rewrite
        return kanon_rewrite(CallerConnection(con, caller), sql, anon_tbl)

    def estimate_udf(sql, raw_tbl, anon_tbl, caller):
        from kanon_duckdb.rewrite.compare import estimate_sql
        return estimate_sql(CallerConnection(con, caller), sql, raw_tbl, anon_tbl)

    def workload_udf(raw_tbl, n, seed, dims, qi, caller):
        from kanon_duckdb.rewrite import generate_workload
        if raw_tbl is None:
            return None
        return [{"qid": q, "sql": s} for q, s in
                generate_workload(CallerConnection(con, caller), raw_tbl, n, seed, dims, qi)]

    def workload_errors_udf(workload_tbl, raw_tbl, anon_tbl, caller):
        from kanon_duckdb.rewrite import workload_errors
        return [{"qid": q, "raw_value": a, "anon_estimate": e} for q, a, e in
                workload_errors(CallerConnection(con, caller), workload_tbl, raw_tbl, anon_tbl)]

    # the last argument of each: the caller's registry key, getvariable('__kanon_conn_id') (sql/query_error.sql)
    return [
        UDF("__kanon_rewrite", rewrite_udf, ("VARCHAR", "VARCHAR", "UBIGINT"), "VARCHAR",
            arrow=False, null_handling="default"),
        UDF("__kanon_query_estimate_sql", estimate_udf, ("VARCHAR",) * 3 + ("UBIGINT",),
            "VARCHAR", arrow=False, null_handling="default"),
        UDF("__kanon_query_workload", workload_udf,
            ("VARCHAR", "BIGINT", "BIGINT", "BIGINT", "VARCHAR[]", "UBIGINT"),
            "STRUCT(qid BIGINT, sql VARCHAR)[]", arrow=False, null_handling="special"),
        UDF("__kanon_workload_errors", workload_errors_udf, ("VARCHAR",) * 3 + ("UBIGINT",),
            "STRUCT(qid BIGINT, raw_value DOUBLE, anon_estimate DOUBLE)[]", arrow=False,
            null_handling="default"),
    ]
