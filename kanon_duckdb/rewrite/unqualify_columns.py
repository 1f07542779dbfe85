"""Pass 2: drop table qualifiers from columns (the query reads one table, so names are unique).

The estimate wraps the anonymized table in a subquery, where ``a.age`` would no longer resolve.

>>> import sqlglot
>>> unqualify_columns(sqlglot.parse_one("SELECT a.x FROM t AS a WHERE a.y > 1"), None).sql()
'SELECT x FROM t AS a WHERE y > 1'
"""
from __future__ import annotations

from sqlglot import exp


def unqualify_columns(expression: exp.Expression, ctx) -> exp.Expression:
    """Return a copy with every ``tbl.col`` written as ``col``."""

    def strip(node):
        if isinstance(node, exp.Column) and node.table:
            return exp.Column(this=node.this.copy())
        return node

    return expression.transform(strip, copy=True)
