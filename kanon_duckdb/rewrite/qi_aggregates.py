"""Passes ``qi_midpoints`` (before weighting) and ``spread_qi_groups`` (after ``where_to_fraction``):
estimate SUM/AVG over numeric QIs and GROUP BY a QI.

- SUM(x)/AVG(x) over a numeric QI ``x``: every anonymized row contributes the expected value of
  ``x`` under the uniform assumption, the midpoint of its published range
  ``(x_min + x_max) / 2`` (a NULL range = the global range). An expression of QIs gets the
  midpoints substituted, which is the expected value for linear expressions (``age * 2 + 1``),
  not for others (``age * age``). ``validate_query`` refuses an aggregated QI that the WHERE clause
  also constrains (the conditional mean inside the published range is not estimated).
- GROUP BY a QI ``c`` (a bare column; categorical, or integer numeric): each anonymized row is
  spread over the raw values its generalized value covers, with weight 1 / leaves(label) per leaf
  under its taxonomy label (a NULL label, published by a class of NULLs only, covers the raw NULL
  value: weight 1 on the NULL group), or 1 / (c_max - c_min + 1) per integer of its range (a NULL
  range, "any value", over the global range), the same uniform assumption the WHERE estimate makes. The estimate is therefore reported per raw group (leaf or
  integer), next to the raw answer of that group; a raw value that no published value covers is
  missing on the estimate side. The spread rows carry ``ctx.weight``, so ``weight_aggregates``
  weights COUNT/SUM/AVG by it (times the WHERE fraction, when there is one).

>>> import sqlglot
>>> from .context import RewriteContext
>>> ctx = RewriteContext.manual("t_k", numeric={"age": (20, 59, True)})
>>> qi_midpoints(sqlglot.parse_one("SELECT AVG(age) FROM t"), ctx).sql()
'SELECT AVG(("age_min" + "age_max") / 2.0) AS "AVG(age)" FROM t'
"""
from __future__ import annotations

from sqlglot import exp

from ..errors import UnsupportedQueryError
from .sqlgen import DIALECT, number, quote, to_sql
from .weight_aggregates import transform_outputs

GROUP_PREFIX = "__kanon_g"


def _midpoint(q) -> exp.Expression:
    lo, hi = q.bounds()
    if q.has_null:
        lo = exp.Coalesce(this=lo, expressions=[number(q.gmin)])
        hi = exp.Coalesce(this=hi, expressions=[number(q.gmax)])
    return exp.Div(this=exp.Paren(this=exp.Add(this=lo, expression=hi)),
                   expression=exp.Literal.number("2.0"))


def grouped_qis(expression: exp.Expression, ctx) -> list:
    """Lower-case names of the QIs that are GROUP BY keys (bare columns or positions)."""
    group = expression.args.get("group") if isinstance(expression, exp.Select) else None
    if group is None:
        return []
    out = []
    for key in group.expressions:
        if isinstance(key, exp.Literal) and not key.is_string:
            idx = int(key.this) - 1
            projections = expression.expressions
            key = projections[idx] if 0 <= idx < len(projections) else key
            key = key.this if isinstance(key, exp.Alias) else key
        if isinstance(key, exp.Column) and ctx.kind(key.name) and key.name.lower() not in out:
            out.append(key.name.lower())
    return out


def _spread_relation(name: str, ctx, alias: str) -> str:
    """SQL of a relation (label, v, p): raw value v covered by published value label, weight p."""
    if ctx.kind(name) == "categorical":
        q = ctx.categorical[name]
        if q.numeric_leaves:
            raise UnsupportedQueryError(
                f"GROUP BY categorical quasi-identifier '{q.name}' with a numeric raw column cannot "
                "be estimated; group by its text or by a non-QI column")
        leaves = q.ordinal_leaves
        rows = []
        for _u, label, lo, hi in q.node_ranges:
            under = [leaves[i] for i in range(lo, hi + 1) if leaves[i] is not None]
            for leaf in under:
                rows.append(f"({_lit(label)}, {_lit(leaf)}, CAST(1 AS DOUBLE) / {len(under)})")
        rows.append("(NULL, NULL, CAST(1 AS DOUBLE))")  # a NULL label: a class of NULLs only
        return f"(VALUES {', '.join(rows)}) AS {alias}(label, v, p)"
    q = ctx.numeric[name]
    return (f"(SELECT range AS v FROM range({int(q.gmin)}, {int(q.gmax) + 1})) AS {alias}")


def _lit(v) -> str:
    return "'" + str(v).replace("'", "''") + "'"


def qi_midpoints(expression: exp.Expression, ctx) -> exp.Expression:
    """Return a copy with numeric QIs inside SUM/AVG replaced by their range midpoints."""
    out = expression.copy()
    for proj in out.expressions:
        if not isinstance(proj, exp.Alias) and any(
                ctx.kind(c.name) == "numeric" for a in proj.find_all(exp.Sum, exp.Avg)
                for c in a.find_all(exp.Column)):
            proj.replace(exp.Alias(this=proj.copy(), alias=exp.Identifier(this=proj.sql(DIALECT),
                                                                            quoted=True)))

    def mid(node):
        if isinstance(node, exp.Column) and node.find_ancestor(exp.Sum, exp.Avg) \
                and ctx.kind(node.name) == "numeric":
            return _midpoint(ctx.numeric[node.name.lower()])
        return node

    return transform_outputs(out, mid)


def spread_qi_groups(expression: exp.Expression, ctx) -> exp.Expression:
    """Return a copy whose rows are spread over the raw values of the QI group keys (runs after
    ``where_to_fraction``: its weight column, if any, is multiplied by the spread weight)."""
    grouped = grouped_qis(expression, ctx)
    if not grouped:
        return expression
    import sqlglot
    out = expression.copy()
    src = out.args["from_"].this
    joins, weights, cols = [], [], []
    for i, name in enumerate(grouped):
        alias = f"{GROUP_PREFIX}{i}"
        rel = _spread_relation(name, ctx, alias)
        if ctx.kind(name) == "categorical":
            q = ctx.categorical[name]
            joins.append(f"JOIN {rel} ON {alias}.label IS NOT DISTINCT FROM "
                         f"__kanon_src.{quote(q.column)}")
            weights.append(f"{alias}.p")
        else:
            q = ctx.numeric[name]
            lo, hi = (to_sql(b) for b in q.bounds("__kanon_src"))
            if q.has_null:
                lo, hi = f"coalesce({lo}, {int(q.gmin)})", f"coalesce({hi}, {int(q.gmax)})"
            joins.append(f"JOIN {rel} ON {alias}.v BETWEEN {lo} AND {hi}")
            weights.append(f"1.0 / ({hi} - {lo} + 1)")
        cols.append(f"{alias}.v AS {alias}")
    star = "__kanon_src.*"
    if isinstance(src, exp.Subquery) and any(  # where_to_fraction's weight column is in src
            isinstance(p, exp.Alias) and p.alias == ctx.weight for p in src.this.expressions):
        star = f"__kanon_src.* EXCLUDE ({ctx.weight})"
        weights.insert(0, f"__kanon_src.{ctx.weight}")
    inner = sqlglot.parse_one(
        f"SELECT {star}, {', '.join(cols)}, {' * '.join(weights)} AS {ctx.weight} "
        f"FROM (SELECT 1) AS __kanon_src {' '.join(joins)}", read=DIALECT)
    inner.args["from_"].this.replace(exp.Subquery(this=src.copy(), alias=exp.TableAlias(
        this=exp.Identifier(this="__kanon_src", quoted=False))) if not isinstance(src, exp.Table)
        else exp.Table(this=src.this.copy(), db=src.args.get("db"), catalog=src.args.get("catalog"),
                       alias=exp.TableAlias(this=exp.Identifier(this="__kanon_src", quoted=False))))
    out.set("from_", exp.From(this=exp.Subquery(this=inner)))
    index = {name: i for i, name in enumerate(grouped)}

    def key_col(node):
        return exp.Column(this=exp.Identifier(this=f"{GROUP_PREFIX}{index[node.name.lower()]}",
                                              quoted=False))

    def regroup(node):
        if isinstance(node, exp.Column) and node.name.lower() in index \
                and not node.find_ancestor(exp.AggFunc):
            return key_col(node)
        return node

    projections = []
    for proj in out.expressions:
        if isinstance(proj, exp.Column) and proj.name.lower() in index:
            proj = exp.Alias(this=key_col(proj), alias=exp.Identifier(this=proj.name, quoted=True))
        projections.append(proj.transform(regroup))
    out.set("expressions", projections)
    for key in ("group", "order"):
        value = out.args.get(key)
        if value is not None:
            out.set(key, value.transform(regroup))
    return out
