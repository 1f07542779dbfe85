"""sqlglot node builders shared by the passes: parsing, quoted identifiers, exact literals."""
from __future__ import annotations

from decimal import Decimal, localcontext
from fractions import Fraction

import sqlglot
from sqlglot import exp

from ..errors import UnsupportedQueryError
from ..sqlutil import quote_ident as quote  # noqa: F401  (re-exported for the passes)

DIALECT = "duckdb"


def ident(name: str) -> exp.Identifier:
    return exp.Identifier(this=str(name), quoted=True)


def table_node(rel, alias=None) -> exp.Table:
    """The FROM item of a ``relation.Source`` (its SQL: a quoted name, a file path, a reader
    call), with ``alias`` when given."""
    out = sqlglot.parse_one(f"SELECT * FROM {rel.sql}", read=DIALECT).args["from_"].this
    if alias is not None:
        out.set("alias", alias.copy())
    return out


def column(name: str, table: str | None = None) -> exp.Column:
    """A quoted column reference, of relation alias ``table`` (unquoted) when given."""
    if table is None:
        return exp.Column(this=ident(name))
    return exp.Column(this=ident(name), table=exp.Identifier(this=table, quoted=False))


def widened(node: exp.Expression, sql_type: str | None) -> exp.Expression:
    """``node`` cast to ``sql_type`` (None: as is)."""
    return node if sql_type is None else exp.Cast(this=node, to=exp.DataType.build(sql_type))


def string(value: str) -> exp.Literal:
    """A string literal; sqlglot escapes quotes when generating."""
    return exp.Literal.string(str(value))


def number(value) -> exp.Expression:
    """An exact numeric literal for an int, Fraction, Decimal or float.

    >>> number(Fraction(1, 4)).sql()
    '0.25'
    >>> number(-3).sql()
    '-3'
    """
    f = Fraction(value)
    if f.denominator == 1:
        return exp.Literal.number(str(f.numerator))
    with localcontext() as ctx:
        ctx.prec = 60
        text = format(Decimal(f.numerator) / Decimal(f.denominator), "f")
    return exp.Literal.number(text)


def ratio(num: int, den: int) -> exp.Expression:
    """``num / den`` as readable SQL (``1`` and ``0`` stay plain); DuckDB's ``/`` is DOUBLE division."""
    if num == 0:
        return exp.Literal.number("0")
    if num == den:
        return exp.Literal.number("1")
    return exp.Div(this=exp.Literal.number(str(num)), expression=exp.Literal.number(str(den)))


def to_sql(node: exp.Expression, pretty: bool = False) -> str:
    return node.sql(dialect=DIALECT, identify=True, pretty=pretty)


def parse_select(sql: str) -> exp.Expression:
    """Parse one statement (DuckDB dialect); several statements or a parse error are refused."""
    if not isinstance(sql, str) or not sql.strip():
        raise UnsupportedQueryError("the query is empty; pass one SELECT statement as a string")
    try:
        trees = [t for t in sqlglot.parse(sql, dialect=DIALECT) if t is not None]
    except sqlglot.errors.SqlglotError as e:
        raise UnsupportedQueryError(f"cannot parse the query: {e}") from None
    if len(trees) != 1:
        raise UnsupportedQueryError(f"pass exactly one SQL statement (got {len(trees)})")
    return trees[0]


def column_names(node: exp.Expression) -> set:
    """Lower-case names of every column referenced under ``node``."""
    return {c.name.lower() for c in node.find_all(exp.Column) if c.name}


def paren(node: exp.Expression) -> exp.Expression:
    """Wrap in parentheses unless atomic (literal, column, function call, CASE).

    >>> paren(exp.or_("a", "b")).sql()
    '(a OR b)'
    """
    if isinstance(node, (exp.Connector, exp.Binary, exp.Unary, exp.Predicate)):
        return exp.Paren(this=node)  # AND/OR are Func subclasses in sqlglot: test them first
    if isinstance(node, (exp.Literal, exp.Column, exp.Paren, exp.Func)):
        return node
    return exp.Paren(this=node)
