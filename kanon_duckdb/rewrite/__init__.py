"""Estimate SQL queries on anonymized tables by rewriting them with sqlglot.

A query on the raw table (``SELECT COUNT(*) FROM adult WHERE age > 55 AND race = 'White'``) is
rewritten against the anonymized table: each row counts with the fraction of its generalized
values that satisfy the WHERE clause (uniform inside ranges and over taxonomy leaves). The passes
run in the order of ``RULES``, each a small ``(expression, ctx) -> expression`` function with an
explicit ``RewriteContext``.

Python entry points: ``kanon_rewrite(con, sql, anon_table)``, ``query_error_sql(con, sql, raw,
anon)``, ``generate_workload(...)``, ``workload_errors(...)``; SQL ones are registered by
``udfs/query_error.py``.
"""
from .compare import query_error_sql
from .context import CategoricalQI, NumericQI, RewriteContext, resolve_context
from .fraction import fraction
from .replace_table import replace_table
from .rewriter import RULES, kanon_rewrite, rewrite
from .unqualify_columns import unqualify_columns
from .validate_query import validate_query
from .weight_aggregates import weight_aggregates
from .where_to_fraction import where_to_fraction
from .workload import generate_workload, workload_errors

__all__ = [
    "RULES", "RewriteContext", "NumericQI", "CategoricalQI", "resolve_context",
    "rewrite", "kanon_rewrite", "query_error_sql", "fraction", "generate_workload",
    "workload_errors", "validate_query", "unqualify_columns", "weight_aggregates",
    "where_to_fraction", "replace_table",
]
