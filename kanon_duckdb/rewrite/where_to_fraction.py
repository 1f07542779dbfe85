"""Pass 4: turn the WHERE clause into a per-row weight column.

Top-level conjuncts without quasi-identifiers stay a filter (exact); the rest becomes the column
``ctx.weight`` (see ``fraction``) computed in a subquery, and rows of weight 0 are dropped:

    SELECT ... FROM (SELECT *, <fraction> AS __fraction FROM t WHERE <exact conjuncts>)
    WHERE __fraction > 0 GROUP BY ...

>>> import sqlglot
>>> from .context import RewriteContext
>>> ctx = RewriteContext.manual("t_k", numeric={"age": (20, 59, True)})
>>> q = sqlglot.parse_one("SELECT COUNT(*) FROM t WHERE age = 35 AND sex = 'F'")
>>> print(where_to_fraction(q, ctx).sql(pretty=True))
SELECT
  COUNT(*)
FROM (
  SELECT
    *,
    CASE WHEN 35 BETWEEN "age_min" AND "age_max" THEN 1 ELSE 0 END / (
      "age_max" - "age_min" + 1
    ) AS __fraction
  FROM t
  WHERE
    sex = 'F'
)
WHERE
  __fraction > 0
"""
from __future__ import annotations

from sqlglot import exp

from .fraction import fraction
from .sqlgen import column_names
from .weight_aggregates import where_uses_qi


def _conjuncts(node: exp.Expression) -> list:
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.And):
        return [c for part in node.flatten() for c in _conjuncts(part)]
    return [node]


def _and(parts):
    return exp.and_(*parts, copy=True) if parts else None


def where_to_fraction(expression: exp.Expression, ctx) -> exp.Expression:
    """Return a copy reading a subquery with the weight column (unchanged when no QI in WHERE)."""
    if not where_uses_qi(expression, ctx):
        return expression
    out = expression.copy()
    parts = _conjuncts(out.args["where"].this)
    exact = [p for p in parts if not any(ctx.kind(c) for c in column_names(p))]
    estimated = [p for p in parts if any(ctx.kind(c) for c in column_names(p))]
    weight = exp.Alias(this=fraction(_and(estimated), ctx),
                       alias=exp.Identifier(this=ctx.weight, quoted=False))
    inner = exp.Select(expressions=[exp.Star(), weight]).from_(out.args["from_"].this.copy(), copy=False)
    if exact:
        inner = inner.where(_and(exact), copy=False)
    out.set("from_", exp.From(this=exp.Subquery(this=inner)))
    out.set("where", exp.Where(this=exp.GT(this=exp.column(ctx.weight), expression=exp.Literal.number("0"))))
    return out
