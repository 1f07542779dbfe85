"""A WHERE clause as the per-row fraction of an anonymized row that satisfies it.

On anonymized data a row stands for a generalized value: a range ``[c_min, c_max]`` or a taxonomy
label. Assuming values uniform inside the range (integer points for integer columns) and over the
leaves under the label, a predicate holds for a *fraction* of the row:

- numeric atom on ``c``: |S ∩ [c_min, c_max]| / |[c_min, c_max]| (points for integers, length for
  reals; a range of width 0 is 1 or 0); NULL bounds read as the global range;
- categorical atom on ``c``: |leaves(label) ∩ S| / |leaves(label)| (a leaf label gives 1 or 0; a
  NULL label, published by a class of NULLs only, gives 0: no comparison selects NULL);
- predicates on the same attribute combine exactly (AND = intersection, OR = union, NOT =
  complement) before the fraction is taken;
- across attributes (independence inside a row): AND multiplies, OR is 1 - (1-p)(1-q)
  (= p + q - pq), NOT is 1 - p;
- predicates without quasi-identifiers are exact: ``CASE WHEN pred THEN 1 ELSE 0 END``.

>>> from .context import RewriteContext
>>> import sqlglot
>>> ctx = RewriteContext.manual("t_k", numeric={"age": (20, 59, True)})
>>> w = sqlglot.parse_one("SELECT 1 FROM t WHERE age > 24").args["where"].this
>>> fraction_sql(w, ctx)
'GREATEST("age_max" - GREATEST("age_min", 25) + 1, 0) / ("age_max" - "age_min" + 1)'
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

from sqlglot import exp

from ..errors import UnsupportedQueryError
from .intervals import Interval, IntervalSet
from .sqlgen import column, column_names, number, paren, ratio, string, to_sql

SUPPORTED_ON_QI = "=, <>, <, <=, >, >=, BETWEEN, IN, NOT, AND, OR with constants"

_CMP = {exp.EQ: "=", exp.NEQ: "<>", exp.GT: ">", exp.GTE: ">=", exp.LT: "<", exp.LTE: "<="}
_FLIP = {"=": "=", "<>": "<>", ">": "<", ">=": "<=", "<": ">", "<=": ">="}


# ------------------------------------------------------------------ predicate tree
@dataclass(frozen=True)
class Exact:
    """A predicate without quasi-identifiers: evaluated exactly on the anonymized row."""
    expr: exp.Expression


@dataclass(frozen=True)
class Atom:
    """A predicate on one QI: the set of values it selects (IntervalSet or frozenset of leaves)."""
    attr: str
    values: object


@dataclass(frozen=True)
class Const:
    value: bool


@dataclass(frozen=True)
class AllOf:
    parts: tuple


@dataclass(frozen=True)
class AnyOf:
    parts: tuple


@dataclass(frozen=True)
class NotOf:
    part: object


def predicate_tree(node: exp.Expression, ctx):
    """Parse a boolean SQL expression into Exact/Atom/Const/AllOf/AnyOf/NotOf.

    Raises UnsupportedQueryError naming any construct on a quasi-identifier that cannot be
    estimated (functions, LIKE, IS NULL, comparisons between columns, ...).
    """
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Boolean):
        return Const(bool(node.this))
    if not has_qi(node, ctx):
        return Exact(node)
    if isinstance(node, (exp.And, exp.Or)):
        conj = isinstance(node, exp.And)
        parts = []
        for child in node.flatten():
            sub = predicate_tree(child, ctx)
            if isinstance(sub, Const):
                if sub.value != conj:  # FALSE in AND / TRUE in OR decides
                    return sub
                continue  # TRUE in AND / FALSE in OR is neutral
            parts.extend(sub.parts if isinstance(sub, AllOf if conj else AnyOf) else [sub])
        if not parts:
            return Const(conj)
        if len(parts) == 1:
            return parts[0]
        return AllOf(tuple(parts)) if conj else AnyOf(tuple(parts))
    if isinstance(node, exp.Not):
        sub = predicate_tree(node.this, ctx)
        return Const(not sub.value) if isinstance(sub, Const) else NotOf(sub)
    return _atom(node, ctx)


def has_qi(node, ctx) -> bool:
    """Whether ``node`` references a quasi-identifier (stops at the first one)."""
    return any(ctx.kind(c.name) for c in node.find_all(exp.Column))


def _qi_column(node, ctx):
    """The QI name if ``node`` is a bare column of a QI, else None."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Column) and ctx.kind(node.name):
        return node.name.lower()
    return None


def sql_number(text: str, attr=None):
    """The number DuckDB reads from the constant ``text`` (a numeric literal, or a string cast
    or compared to a number): an exact Fraction, or the float -inf / inf for 'inf', '-Infinity'
    and for a literal beyond the DOUBLE range (``1e400`` is the DOUBLE inf in DuckDB), None
    when it is not a number. NaN is refused by name: an anonymized table publishes a NaN as
    NULL (the NULL policy), so a comparison with it has no estimate."""
    t = text.strip()
    try:
        f = float(t)
    except ValueError:
        return None
    if math.isnan(f):
        raise UnsupportedQueryError(
            f"cannot estimate a comparison{f' of {attr!r}' if attr else ''} with NaN ('{text}'): "
            f"k_anonymize publishes NaN values as NULL; use IS NULL / isnan() on the raw table")
    if math.isinf(f):
        return f
    try:
        return Fraction(t.replace("_", ""))
    except ValueError:
        return None


def _constant(node):
    """Python value of a constant operand (a Fraction, the float -inf / inf, or a str), or raise
    when it is not one."""
    while isinstance(node, exp.Paren):
        node = node.this
    if isinstance(node, exp.Cast):
        v = _constant(node.this)
        if isinstance(v, str) and node.to.is_type(*exp.DataType.REAL_TYPES):
            n = sql_number(v)
            v = v if n is None else n  # a number now, as DuckDB casts it (a bad one: its error)
        if isinstance(v, Fraction) and v.denominator != 1 and node.to.is_type(*exp.DataType.INTEGER_TYPES):
            raise UnsupportedQueryError(f"cannot estimate `{to_sql(node)}`: write the rounded constant")
        return v
    if isinstance(node, exp.Neg):
        v = _constant(node.this)
        if isinstance(v, (Fraction, float)):
            return -v
    if isinstance(node, exp.Literal):
        return node.this if node.is_string else sql_number(node.this)
    if isinstance(node, exp.Null):
        raise UnsupportedQueryError(
            f"comparison of a quasi-identifier with NULL (`{to_sql(node.parent)}`) is always NULL; "
            f"use IS NULL on non-QI columns only")
    raise UnsupportedQueryError(
        f"cannot estimate `{to_sql(node.parent or node)}`: a quasi-identifier can only be compared "
        f"with constants ({SUPPORTED_ON_QI})")


def _construct(node) -> str:
    """A short human name for the SQL construct ``node``."""
    if isinstance(node, exp.Not):
        return "NOT " + _construct(node.this)
    if isinstance(node, (exp.Like, exp.ILike)) or node.key in {"similarto", "regexplike", "glob"}:
        names = {"similarto": "SIMILAR TO", "regexplike": "REGEXP_MATCHES", "glob": "GLOB"}
        return names.get(node.key, node.key.upper())
    if isinstance(node, exp.Is):
        return "IS NULL" if isinstance(node.expression, exp.Null) else "IS"
    if isinstance(node, (exp.NullSafeEQ, exp.NullSafeNEQ)):
        return "IS [NOT] DISTINCT FROM"
    if isinstance(node, exp.Anonymous):
        return f"function {node.name.upper()}()"
    if isinstance(node, exp.Func):
        return f"function {node.sql_name()}()"
    if isinstance(node, (exp.Add, exp.Sub, exp.Mul, exp.Div, exp.Mod, exp.IntDiv, exp.Neg)):
        return "arithmetic"
    return node.key.upper()


def _refuse(node, ctx, attr=None) -> UnsupportedQueryError:
    attr = attr or next(c for c in sorted(column_names(node)) if ctx.kind(c))
    return UnsupportedQueryError(
        f"cannot estimate {_construct(node)} on quasi-identifier '{attr}' in `{to_sql(node)}`; "
        f"supported on QIs: {SUPPORTED_ON_QI}")


def _culprit(node, ctx):
    """The operand to blame: ``this`` when it wraps a QI in some expression, else the node."""
    inner = node.this
    while isinstance(inner, exp.Paren):
        inner = inner.this
    return inner if has_qi(inner, ctx) and not isinstance(inner, exp.Column) else node


def _atom(node, ctx):
    if type(node) in _CMP:
        op = _CMP[type(node)]
        left, right = _qi_column(node.this, ctx), _qi_column(node.expression, ctx)
        other = node.expression if left else node.this
        if (left or right) and column_names(other):
            raise UnsupportedQueryError(
                f"cannot estimate a comparison between columns `{to_sql(node)}` involving a "
                f"quasi-identifier; compare QIs with constants")
        if left:
            return Atom(left, _compare_set(left, op, _constant(node.expression), ctx))
        if right:
            return Atom(right, _compare_set(right, _FLIP[op], _constant(node.this), ctx))
        side = node.this if column_names(node.this) else node.expression
        raise _refuse(side, ctx)
    if isinstance(node, exp.Between):
        attr = _qi_column(node.this, ctx)
        if not attr or column_names(node.args["low"]) or column_names(node.args["high"]):
            raise _refuse(_culprit(node, ctx), ctx)
        lo, hi = _constant(node.args["low"]), _constant(node.args["high"])
        if node.args.get("symmetric"):
            lo, hi = sorted([lo, hi], key=lambda v: (isinstance(v, str), v))
        both = _intersect(_compare_set(attr, ">=", lo, ctx), _compare_set(attr, "<=", hi, ctx))
        return Atom(attr, both)
    if isinstance(node, exp.In):
        attr = _qi_column(node.this, ctx)
        if not attr or node.args.get("query") or node.args.get("unnest") or node.args.get("field"):
            raise _refuse(_culprit(node, ctx), ctx)
        sets = [_compare_set(attr, "=", _constant(v), ctx) for v in node.expressions]
        out = _nothing(attr, ctx)
        for s in sets:
            out = _union(out, s)
        return Atom(attr, out)
    raise _refuse(node, ctx)


# -------------------------------------------------------------- value sets per attribute
def _compare_set(attr, op, value, ctx):
    """The values of ``attr`` with ``attr <op> value``: an IntervalSet or a frozenset of leaves."""
    if ctx.kind(attr) == "numeric":
        q = ctx.numeric[attr]
        if isinstance(value, str):
            number = sql_number(value, attr)
            if number is None:
                raise UnsupportedQueryError(
                    f"numeric quasi-identifier '{attr}' compared with the text '{value}'")
            value = number
        return IntervalSet.compare(op, value, q.integer)
    q = ctx.categorical[attr]
    if q.numeric_leaves:
        if isinstance(value, str):
            number = sql_number(value, attr)
            if number is None:
                raise UnsupportedQueryError(
                    f"quasi-identifier '{attr}' holds numbers but is compared with '{value}'")
            value = number
    elif not isinstance(value, str):
        raise UnsupportedQueryError(
            f"text quasi-identifier '{attr}' compared with the number {_show(value)}; "
            f"write the value as a string literal")
    elif op in ("=", "<>"):  # fast path: set membership
        hit = frozenset([value]) & q.leaf_set
        return hit if op == "=" else q.leaf_set - hit
    test = {"=": lambda a: a == value, "<>": lambda a: a != value, "<": lambda a: a < value,
            "<=": lambda a: a <= value, ">": lambda a: a > value, ">=": lambda a: a >= value}[op]
    return frozenset(leaf for leaf, key in q.leaf_keys if key is not None and test(key))


def _show(v):
    return str(v.numerator) if isinstance(v, Fraction) and v.denominator == 1 else str(v)


def _nothing(attr, ctx):
    if ctx.kind(attr) == "numeric":
        return IntervalSet.nothing(ctx.numeric[attr].integer)
    return frozenset()


def _everything(attr, ctx):
    if ctx.kind(attr) == "numeric":
        return IntervalSet.everything(ctx.numeric[attr].integer)
    return ctx.categorical[attr].leaf_set


def _intersect(a, b):
    return a.intersect(b) if isinstance(a, IntervalSet) else a & b


def _union(a, b):
    return a.union(b) if isinstance(a, IntervalSet) else a | b


def _single_attr(node):
    """The one QI a subtree refers to when it holds only atoms of that QI (and constants)."""
    if isinstance(node, Atom):
        return node.attr
    if isinstance(node, Const):
        return None
    if isinstance(node, Exact):
        return False
    kids = node.parts if isinstance(node, (AllOf, AnyOf)) else (node.part,)
    attrs = {_single_attr(k) for k in kids} - {None}
    return attrs.pop() if len(attrs) == 1 and False not in attrs else (False if attrs else None)


def _value_set(node, attr, ctx):
    """Exact set algebra for a subtree on one attribute."""
    if isinstance(node, Atom):
        return node.values
    if isinstance(node, Const):
        return _everything(attr, ctx) if node.value else _nothing(attr, ctx)
    if isinstance(node, NotOf):
        inner = _value_set(node.part, attr, ctx)
        if isinstance(inner, IntervalSet):
            return inner.complement()
        return _everything(attr, ctx) - inner
    sets = [_value_set(p, attr, ctx) for p in node.parts]
    out = sets[0]
    for s in sets[1:]:
        out = _intersect(out, s) if isinstance(node, AllOf) else _union(out, s)
    return out


# ------------------------------------------------------------------------- emission
ZERO, ONE = exp.Literal.number("0"), exp.Literal.number("1")


def _is(node, v: str) -> bool:
    return isinstance(node, exp.Literal) and not node.is_string and node.this == v


def _product(factors):
    factors = [f for f in factors if not _is(f, "1")]
    if any(_is(f, "0") for f in factors):
        return ZERO.copy()
    if not factors:
        return ONE.copy()
    out = paren(factors[0])
    for f in factors[1:]:
        out = exp.Mul(this=out, expression=paren(f))
    return out


def _one_minus(f):
    if _is(f, "0"):
        return ONE.copy()
    if _is(f, "1"):
        return ZERO.copy()
    return exp.Sub(this=ONE.copy(), expression=paren(f))


def _indicator(pred: exp.Expression) -> exp.Expression:
    return exp.Case(ifs=[exp.If(this=pred.copy(), true=ONE.copy())], default=ZERO.copy())


def combine(node, ctx, alg):
    """Fold a predicate tree with an algebra ``alg`` (SQL expressions here, arrays in evaluate.py).

    Same-attribute parts of an AND/OR merge exactly into one value set; parts without QIs merge
    into one exact predicate; the remaining factors multiply (AND) or combine as 1 - prod(1 - f).
    """
    attr = _single_attr(node)
    if attr:
        return alg.values(attr, _value_set(node, attr, ctx))
    if isinstance(node, Const):
        return alg.const(node.value)
    if isinstance(node, Exact):
        return alg.exact([node.expr], True)
    if isinstance(node, NotOf):
        return alg.one_minus(combine(node.part, ctx, alg))
    conj = isinstance(node, AllOf)
    merged: dict = {}
    exact: list = []
    factors: list = []
    for part in node.parts:
        a = _single_attr(part)
        if a:
            s = _value_set(part, a, ctx)
            merged[a] = s if a not in merged else (_intersect if conj else _union)(merged[a], s)
        elif isinstance(part, Exact):
            exact.append(part.expr)
        else:
            factors.append(combine(part, ctx, alg))
    factors = [alg.values(a, s) for a, s in merged.items()] + factors
    if exact:
        factors.append(alg.exact(exact, conj))
    if conj:
        return alg.product(factors)
    return alg.one_minus(alg.product([alg.one_minus(f) for f in factors]))


class SqlAlgebra:
    """Builds the fraction as a sqlglot expression, folding the constants 0 and 1."""

    def __init__(self, ctx):
        self.ctx = ctx

    def const(self, value: bool):
        return (ONE if value else ZERO).copy()

    def values(self, attr, values):
        return emit_values(attr, values, self.ctx)

    def exact(self, exprs, conj: bool):
        joined = exprs[0].copy()
        for e in exprs[1:]:
            joined = (exp.And if conj else exp.Or)(this=paren(joined), expression=paren(e.copy()))
        return _indicator(joined)

    product = staticmethod(lambda factors: _product(factors))
    one_minus = staticmethod(lambda f: _one_minus(f))


def emit(node, ctx) -> exp.Expression:
    """SQL expression (0..1) for a predicate tree on one anonymized row."""
    return combine(node, ctx, SqlAlgebra(ctx))


def emit_values(attr, values, ctx) -> exp.Expression:
    """Fraction of each row's generalized value of ``attr`` that falls in ``values``."""
    if ctx.kind(attr) == "numeric":
        return _numeric_fraction(ctx.numeric[attr], values)
    return _categorical_fraction(ctx.categorical[attr], values)


def clip(q, s: IntervalSet):
    """``s`` within the global range of ``q``; the ints 0 / 1 when it selects nothing / everything."""
    s = s.intersect(IntervalSet.between(q.gmin, q.gmax, q.integer))
    if s.is_empty():
        return 0
    if s.covers(q.gmin, q.gmax):
        return 1
    return s


def node_hits(q, leaves: frozenset):
    """``[(node id, label, |leaves(u) & S|, |leaves(u)|)]`` over the tree's labelled nodes.

    Leaves under node u are the leaf ordinals leaf_lo[u]..leaf_hi[u]: hits come from prefix sums.
    """
    prefix = [0]
    for leaf in q.ordinal_leaves:
        prefix.append(prefix[-1] + (leaf in leaves))
    return [(u, label, prefix[hi + 1] - prefix[lo], hi - lo + 1) for u, label, lo, hi in q.node_ranges]


def _greatest(a, b):
    return exp.Greatest(this=a, expressions=[b], ignore_nulls=True)  # DuckDB semantics, as written


def _least(a, b):
    return exp.Least(this=a, expressions=[b], ignore_nulls=True)


def _numeric_fraction(q, s: IntervalSet) -> exp.Expression:
    out = _finite_fraction(q, s)
    if not q.has_inf:
        return out
    # a class [-inf, -inf] / [inf, inf] is known exactly: 1 when its value lies in s, else 0
    lo, hi = q.published_bounds()
    neg, pos = (ONE if s.holds_infinity(sign) else ZERO for sign in (-1, 1))
    value = neg.copy() if neg is pos else exp.Case(
        ifs=[exp.If(this=exp.LT(this=lo.copy(), expression=ZERO.copy()), true=neg.copy())],
        default=pos.copy())
    point = exp.And(this=exp.Anonymous(this="isinf", expressions=[lo.copy()]),
                    expression=exp.EQ(this=lo.copy(), expression=hi.copy()))
    return exp.Case(ifs=[exp.If(this=point, true=value)], default=out)


def _finite_fraction(q, s: IntervalSet) -> exp.Expression:
    """The fraction of each finite or half-infinite range (NumericQI.bounds) that lies in s."""
    s = clip(q, s)
    if s in (0, 1):
        return (ONE if s else ZERO).copy()
    lo, hi = q.bounds()
    if q.has_null:
        lo = exp.Coalesce(this=lo, expressions=[number(q.gmin)])
        hi = exp.Coalesce(this=hi, expressions=[number(q.gmax)])

    def upper(iv):
        return hi.copy() if iv.hi >= q.gmax else _least(hi.copy(), number(iv.hi))

    def lower(iv):
        return lo.copy() if iv.lo <= q.gmin else _greatest(lo.copy(), number(iv.lo))

    if q.integer:
        terms = []
        for iv in s.parts:
            if iv.is_point():
                terms.append(_indicator(exp.Between(this=number(iv.lo), low=lo.copy(), high=hi.copy())))
            else:
                span = exp.Add(this=exp.Sub(this=upper(iv), expression=lower(iv)), expression=ONE.copy())
                terms.append(_greatest(span, ZERO.copy()))
        width = exp.Add(this=exp.Sub(this=hi.copy(), expression=lo.copy()), expression=ONE.copy())
        return exp.Div(this=paren(_sum(terms)), expression=exp.Paren(this=width))

    member = _or([_contains(iv, lo, q) for iv in s.parts])
    lengths = [_greatest(exp.Sub(this=upper(iv), expression=lower(iv)), ZERO.copy())
               for iv in s.parts if not iv.is_point()]
    if not lengths:
        point = exp.EQ(this=hi.copy(), expression=lo.copy())
        return _indicator(exp.And(this=point, expression=paren(member)))
    width = exp.Sub(this=hi.copy(), expression=lo.copy())
    share = exp.Div(this=paren(_sum(lengths)), expression=exp.Paren(this=width))
    if q.gmax - q.gmin > _DOUBLE_MAX:
        # a range wider than the largest double (-1e308..1e308): hi - lo overflows to inf and the
        # share would read 0, so such a range takes the quotient of halves (exact for its size)
        halves = [_greatest(exp.Sub(this=_half(upper(iv)), expression=_half(lower(iv))), ZERO.copy())
                  for iv in s.parts if not iv.is_point()]
        share = exp.Case(ifs=[exp.If(
            this=exp.Anonymous(this="isinf", expressions=[paren(width.copy())]),
            true=exp.Div(this=paren(_sum(halves)), expression=exp.Paren(
                this=exp.Sub(this=_half(hi.copy()), expression=_half(lo.copy())))))],
            default=share)
    return exp.Case(ifs=[
        exp.If(this=exp.GT(this=hi.copy(), expression=lo.copy()), true=share),
        exp.If(this=member, true=ONE.copy())], default=ZERO.copy())


_DOUBLE_MAX = Fraction(1.7976931348623157e308)


def _half(x: exp.Expression) -> exp.Expression:
    return exp.Div(this=paren(x), expression=exp.Literal.number("2"))


def _contains(iv: Interval, x: exp.Expression, q) -> exp.Expression:
    """SQL test ``x in iv`` (used for ranges of width 0), omitting sides implied by the global range."""
    tests = []
    if not (iv.lo <= q.gmin and iv.lo_closed):
        tests.append((exp.GTE if iv.lo_closed else exp.GT)(this=x.copy(), expression=number(iv.lo)))
    if not (iv.hi >= q.gmax and iv.hi_closed):
        tests.append((exp.LTE if iv.hi_closed else exp.LT)(this=x.copy(), expression=number(iv.hi)))
    if len(tests) == 2 and iv.lo_closed and iv.hi_closed:
        return exp.Between(this=x.copy(), low=number(iv.lo), high=number(iv.hi))
    if not tests:
        return exp.Boolean(this=True)
    return tests[0] if len(tests) == 1 else exp.And(this=tests[0], expression=tests[1])


def _sum(terms):
    out = terms[0]
    for t in terms[1:]:
        out = exp.Add(this=out, expression=t)
    return out


def _or(tests):
    out = tests[0]
    for t in tests[1:]:
        out = exp.Or(this=out, expression=t)
    return out


def _categorical_fraction(q, leaves: frozenset) -> exp.Expression:
    if not leaves:
        return ZERO.copy()
    if leaves >= q.leaf_set:  # every leaf: 1, but a NULL label (a class of NULLs only) holds none
        return exp.Case(ifs=[exp.If(this=exp.Is(this=column(q.column), expression=exp.Null()),
                                    true=ZERO.copy())], default=ONE.copy())
    whens = [exp.If(this=string(label), true=ratio(hit, total))
             for _, label, hit, total in node_hits(q, leaves) if hit]
    subject = column(q.column)
    if not q.text_labels:
        subject = exp.Cast(this=subject, to=exp.DataType.build("VARCHAR"))
    return exp.Case(this=subject, ifs=whens, default=ZERO.copy())


def fraction(where: exp.Expression, ctx) -> exp.Expression:
    """The fraction expression of a boolean SQL expression (see the module docstring)."""
    return emit(predicate_tree(where, ctx), ctx)


def fraction_sql(where: exp.Expression, ctx) -> str:
    return to_sql(fraction(where, ctx))
