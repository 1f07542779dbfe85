"""Pass 3: weight every aggregate by the row's fraction (when the WHERE clause involves a QI).

``COUNT(*)`` -> ``COALESCE(SUM(w), 0)``, ``COUNT(x)`` -> ``COALESCE(SUM(w) FILTER (WHERE x IS NOT
NULL), 0)``, ``SUM(x)`` -> ``SUM(w * x)``, ``AVG(x)`` -> ``SUM(w * x) / SUM(w) FILTER (WHERE x IS
NOT NULL)``, where ``w`` is the column ``ctx.weight`` that ``where_to_fraction`` adds. An aggregate
projection without an alias keeps its original text as its name.

>>> import sqlglot
>>> from .context import RewriteContext
>>> ctx = RewriteContext.manual("t_k", numeric={"age": (0, 99, True)})
>>> q = sqlglot.parse_one("SELECT AVG(salary) FROM t WHERE age > 30")
>>> weight_aggregates(q, ctx).sql()
'SELECT SUM(__fraction * salary) / SUM(__fraction) FILTER(WHERE NOT salary IS NULL) AS "AVG(salary)" FROM t WHERE age > 30'
"""
from __future__ import annotations

from sqlglot import exp

from .sqlgen import DIALECT, paren


def where_uses_qi(expression: exp.Expression, ctx) -> bool:
    """True when the WHERE clause references a quasi-identifier (the estimate needs weights)."""
    where = expression.args.get("where")
    return where is not None and any(ctx.kind(c.name) for c in where.find_all(exp.Column))


def _weight(ctx) -> exp.Column:
    return exp.Column(this=exp.Identifier(this=ctx.weight, quoted=False))


def _not_null(x: exp.Expression) -> exp.Expression:
    return exp.Not(this=exp.Is(this=x.copy(), expression=exp.Null()))


def weighted(agg: exp.Expression, ctx) -> exp.Expression:
    """The weighted replacement of one COUNT/SUM/AVG node."""
    w = _weight(ctx)
    if isinstance(agg, exp.Count):
        if isinstance(agg.this, exp.Star) or agg.this is None:
            total = exp.Sum(this=w)
        else:
            total = exp.Filter(this=exp.Sum(this=w), expression=exp.Where(this=_not_null(agg.this)))
        return exp.Coalesce(this=total, expressions=[exp.Literal.number("0")])
    wx = exp.Sum(this=exp.Mul(this=w.copy(), expression=paren(agg.this.copy())))
    if isinstance(agg, exp.Sum):
        return wx
    den = exp.Filter(this=exp.Sum(this=w.copy()), expression=exp.Where(this=_not_null(agg.this)))
    return exp.Div(this=wx, expression=den)


def weight_aggregates(expression: exp.Expression, ctx) -> exp.Expression:
    """Return a copy with COUNT/SUM/AVG weighted (unchanged when neither the WHERE clause nor the
    GROUP BY keys involve a QI; ``spread_qi_groups`` provides the weight for QI group keys)."""
    from .qi_aggregates import grouped_qis
    if not where_uses_qi(expression, ctx) and not grouped_qis(expression, ctx):
        return expression
    out = expression.copy()
    for proj in out.expressions:
        if proj.find(exp.AggFunc) and not isinstance(proj, exp.Alias):
            name = exp.Identifier(this=proj.sql(DIALECT), quoted=True)
            proj.replace(exp.Alias(this=proj.copy(), alias=name))

    def swap(node):
        if isinstance(node, (exp.Count, exp.Sum, exp.Avg)):
            return weighted(node, ctx)
        return node

    return transform_outputs(out, swap)


def transform_outputs(select: exp.Expression, fn) -> exp.Expression:
    """Apply ``fn`` (a sqlglot transform) to the projections and the ORDER BY of ``select``, in
    place; returns it."""
    for key in ("expressions", "order"):
        value = select.args.get(key)
        if isinstance(value, list):
            select.set(key, [v.transform(fn) for v in value])
        elif value is not None:
            select.set(key, value.transform(fn))
    return select
