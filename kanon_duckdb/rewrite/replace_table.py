"""Last pass: read the anonymized table instead of the raw one (the alias, if any, is kept).

>>> import sqlglot
>>> from .context import RewriteContext
>>> q = sqlglot.parse_one("SELECT COUNT(*) FROM adult AS a")
>>> replace_table(q, RewriteContext.manual("adult_k10")).sql()
'SELECT COUNT(*) FROM "adult_k10" AS a'
"""
from __future__ import annotations

from sqlglot import exp

from .sqlgen import table_node


def replace_table(expression: exp.Expression, ctx) -> exp.Expression:
    """Return a copy whose base table is ``ctx.anon_table`` (quoted)."""

    def swap(node):
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
            return table_node(ctx.anon_table, node.args.get("alias"))
        return node

    return expression.transform(swap, copy=True)
