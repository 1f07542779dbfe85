"""The rewriter: an ordered tuple of passes ``(expression, ctx) -> expression``.

``rewrite`` runs ``RULES`` on a parsed query; ``kanon_rewrite`` does it from SQL text against a
database, returning the readable SQL that estimates the query on the anonymized table.
"""
from __future__ import annotations

from typing import Protocol

from sqlglot import exp

from .context import RewriteContext, resolve_context
from .qi_aggregates import qi_midpoints, spread_qi_groups
from .replace_table import replace_table
from .sqlgen import column_names, parse_select, to_sql
from .unqualify_columns import unqualify_columns
from .validate_query import validate_query
from .weight_aggregates import weight_aggregates
from .where_to_fraction import where_to_fraction


class RewriteFn(Protocol):
    def __call__(self, expression: exp.Expression, ctx: RewriteContext) -> exp.Expression: ...


RULES: tuple = (
    validate_query,
    unqualify_columns,
    qi_midpoints,
    weight_aggregates,
    where_to_fraction,
    spread_qi_groups,
    replace_table,
)


def rewrite(expression: exp.Expression, ctx: RewriteContext, rules=RULES) -> exp.Expression:
    """Apply ``rules`` in order; each returns a new expression (the input is not modified)."""
    for rule in rules:
        expression = rule(expression, ctx)
    return expression


def source_table(expression: exp.Expression) -> str | None:
    """Name of the single table in FROM (the raw table), or None."""
    from_ = expression.args.get("from_") if isinstance(expression, exp.Select) else None
    table = from_.this if from_ is not None else None
    if isinstance(table, exp.Table) and isinstance(table.this, exp.Identifier):
        return table.name
    return None


def context_for(con, expression: exp.Expression, anon_table: str, raw_table: str | None = None,
                raw_required: bool = False) -> RewriteContext:
    """Resolve the context for the columns ``expression`` uses (raw table: FROM unless given)."""
    raw = raw_table or source_table(expression)
    return resolve_context(con, anon_table, raw, column_names(expression), raw_required=raw_required)


def kanon_rewrite(con, sql: str, anon_table: str, pretty: bool = True) -> str:
    """The SQL that estimates ``sql`` (a query on the raw table) from ``anon_table``.

    Raises UnsupportedQueryError naming any construct that cannot be estimated.
    """
    tree = parse_select(sql)
    ctx = context_for(con, tree, anon_table)
    return to_sql(rewrite(tree, ctx), pretty=pretty)
