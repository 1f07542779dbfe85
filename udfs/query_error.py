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
constant arguments, which DuckDB folds at bind time, and runs the SQL it returns through
``query(...)``; the workload macros unnest the STRUCT lists their UDFs return. The UDFs read
tables through ``con.cursor()`` (TEMP tables and uncommitted changes are not visible).
Registration is idempotent (remove, then create).
"""
from __future__ import annotations

from kanon_duckdb.registration import sql_dir

from ._compat import replace_function

SQL_FILE = "query_error.sql"


def macro_sql() -> str:
    """Text of ``sql/query_error.sql`` (the wheel's kanon_duckdb/sql, else the source tree's sql/)."""
    return sql_dir().joinpath(SQL_FILE).read_text(encoding="utf-8")


def register_query_error(con) -> None:
    """Create (or replace) the UDFs and macros above on ``con``.

    The rewriter (sqlglot) is imported on first use, so connect() does not pay for it."""

    def rewrite_udf(sql, anon_tbl):
        from kanon_duckdb.rewrite import kanon_rewrite
        return kanon_rewrite(con, sql, anon_tbl)

    def query_error_udf(sql, raw_tbl, anon_tbl):
        from kanon_duckdb.rewrite import query_error_sql
        return query_error_sql(con, sql, raw_tbl, anon_tbl)

    def workload_udf(raw_tbl, n, seed, dims, qi):
        from kanon_duckdb.rewrite import generate_workload
        if raw_tbl is None:
            return None
        return [{"qid": q, "sql": s} for q, s in generate_workload(con, raw_tbl, n, seed, dims, qi)]

    def workload_errors_udf(workload_tbl, raw_tbl, anon_tbl):
        from kanon_duckdb.rewrite import workload_errors
        return [{"qid": q, "raw_value": a, "anon_estimate": e}
                for q, a, e in workload_errors(con, workload_tbl, raw_tbl, anon_tbl)]

    functions = [
        ("kanon_rewrite", rewrite_udf, ["VARCHAR", "VARCHAR"], "VARCHAR", "default"),
        ("kanon_query_error_sql", query_error_udf, ["VARCHAR"] * 3, "VARCHAR", "default"),
        ("kanon_query_workload", workload_udf, ["VARCHAR", "BIGINT", "BIGINT", "BIGINT", "VARCHAR[]"],
         "STRUCT(qid BIGINT, sql VARCHAR)[]", "special"),
        ("kanon_workload_errors", workload_errors_udf, ["VARCHAR"] * 3,
         "STRUCT(qid BIGINT, raw_value DOUBLE, anon_estimate DOUBLE)[]", "default"),
    ]
    for name, fn, params, ret, nulls in functions:
        # deterministic (not side_effects): constant arguments fold at bind time, as query() needs
        replace_function(con, name, fn, params, ret, side_effects=False, arrow=False,
                         null_handling=nulls)
    con.execute(macro_sql())
