"""Pass 1: refuse what cannot be estimated, naming the construct.

Supported: ``SELECT <group keys>, <COUNT(*)|COUNT(x)|SUM(x)|AVG(x) and arithmetic on them>
FROM <one table> [WHERE ...] [GROUP BY <keys> | ALL] [ORDER BY ...]`` where ``x`` uses non-QI
columns, or numeric QIs inside SUM/AVG (estimated by range midpoints, see ``qi_aggregates``) that
the WHERE clause does not constrain; a group key is a non-QI expression or a bare QI column
(categorical, or integer numeric: estimated per raw value); the WHERE clause is supported by
``fraction``. Messages name columns as the query wrote them.

>>> import sqlglot
>>> from .context import RewriteContext
>>> ctx = RewriteContext.manual("t_k", numeric={"Age": (0, 99, True)})
>>> validate_query(sqlglot.parse_one("SELECT AVG(Age) FROM t WHERE Age > 30"), ctx)
Traceback (most recent call last):
...
kanon_duckdb.errors.UnsupportedQueryError: AVG() over quasi-identifier 'Age' that the WHERE clause also constrains cannot be estimated (the estimate uses the midpoint of each published range, not the mean of its part satisfying the WHERE clause); aggregate it without that condition
"""
from __future__ import annotations

import re

from sqlglot import exp

from ..errors import UnsupportedQueryError
from .fraction import predicate_tree
from .sqlgen import to_sql

SUPPORTED_AGGREGATES = (exp.Count, exp.Sum, exp.Avg)

# The only functions a query given to query_error / kanon_rewrite / workload_error may call:
# DuckDB built-ins known to be pure (no side effect, no file, network, catalog or setting access),
# named as DuckDB spells them in the SQL the rewriter generates. Everything else -- every UDF and
# macro (kanon_load_arx, kanon_build_*, ...), nextval, setseed, read_*, getenv, query, ... -- is
# refused before any SQL runs. Extend only with functions that are pure for every argument.
PURE_FUNCTIONS = frozenset("""
    count sum avg
    abs sign round floor ceil ceiling trunc even sqrt cbrt exp ln log log2 log10 pow power mod
    greatest least isnan isinf isfinite
    cast try_cast case coalesce ifnull nullif
    lower upper lcase ucase length strlen len char_length character_length octet_length
    bit_length substring substr left right lpad rpad trim ltrim rtrim reverse repeat replace
    concat concat_ws strpos instr position contains starts_with ends_with prefix suffix
    regexp_matches regexp_full_match regexp_replace regexp_extract split_part string_split
    ascii chr like_escape md5 hash
    year month day hour minute second millisecond quarter week weekday dayofweek dayofmonth
    dayofyear yearweek isodow isoyear extract date_part datepart date_trunc datetrunc date_diff
    datediff date_sub datesub strftime strptime make_date make_time make_timestamp epoch epoch_ms
    to_timestamp last_day monthname dayname
    list_value list_contains array_contains list_has list_extract array_extract array_length
    list_position struct_extract
""".split())


# AND, OR, ||, NOT, ... are sqlglot Funcs but pure operators; aggregates have their own allow-list
# (SUPPORTED_AGGREGATES, checked in check_query with a message naming the aggregate)
_NOT_CALLS = (exp.Connector, exp.Binary, exp.Unary, exp.AggFunc)


def function_name(node: exp.Func) -> str:
    """The DuckDB name (lower case) under which ``node`` runs in the generated SQL."""
    if isinstance(node, (exp.Anonymous, exp.AnonymousAggFunc)):
        return str(node.name).lower()
    m = re.match(r"[A-Za-z_][A-Za-z0-9_]*", node.sql(dialect="duckdb"))
    return m.group(0).lower() if m else type(node).__name__.lower()


def check_functions(nodes) -> None:
    """Refuse any function call outside :data:`PURE_FUNCTIONS` (side effects must never run)."""
    for node in nodes:
        if isinstance(node, exp.Func) and not isinstance(node, _NOT_CALLS):
            name = function_name(node)
            if name not in PURE_FUNCTIONS:
                raise UnsupportedQueryError(
                    f"function {name}() is not allowed in a query to estimate: only pure built-in "
                    f"functions may be called (e.g. lower, abs, round, year, coalesce, CASE); "
                    f"compute it in a view of the tables first")


def _fail(what: str) -> UnsupportedQueryError:
    return UnsupportedQueryError(
        f"{what} is not supported by the query rewriter; supported: SELECT COUNT(*)/COUNT(x)/SUM(x)/AVG(x) "
        f"FROM one table [WHERE ...] [GROUP BY columns]")


def _fname(func) -> str:
    return func.name.upper() if isinstance(func, (exp.Anonymous, exp.AnonymousAggFunc)) else func.sql_name()


def _qis(node, ctx) -> list:
    """QI columns under ``node``, named as the query wrote them."""
    return sorted({c.name for c in node.find_all(exp.Column) if c.name and ctx.kind(c.name)})


def _qis_outside_aggregates(node, ctx, allowed=frozenset()) -> list:
    return sorted({c.name for c in node.find_all(exp.Column)
                   if ctx.kind(c.name) and not c.find_ancestor(exp.AggFunc)
                   and c.name.lower() not in allowed})


def validate_query(expression: exp.Expression, ctx) -> exp.Expression:
    """Return ``expression`` unchanged, or raise UnsupportedQueryError naming the first problem."""
    check_query(expression, ctx)
    return expression


def check_query(expression: exp.Expression, ctx):
    """Raise on the first unsupported construct; return the WHERE clause's predicate tree (or None)."""
    if isinstance(expression, exp.SetOperation):
        raise _fail(f"set operation {expression.key.upper()}")
    if not isinstance(expression, exp.Select):
        raise _fail(f"a {expression.key.upper()} statement")
    if expression.args.get("with_"):
        raise _fail("WITH (common table expression)")
    for key, what in (("joins", "JOIN"), ("laterals", "LATERAL"), ("having", "HAVING"),
                      ("qualify", "QUALIFY"), ("limit", "LIMIT"), ("offset", "OFFSET"),
                      ("distinct", "SELECT DISTINCT"), ("pivots", "PIVOT"), ("windows", "WINDOW"),
                      ("sample", "SAMPLE"), ("into", "SELECT INTO")):
        if expression.args.get(key):
            raise _fail(what)
    from_ = expression.args.get("from_")
    if from_ is None:
        raise _fail("a query without FROM")
    if not isinstance(from_.this, exp.Table) or not isinstance(from_.this.this, exp.Identifier):
        raise _fail(f"FROM `{to_sql(from_.this)}` (a subquery or table function)")
    nodes = list(expression.walk())  # one walk; the checks below filter it
    check_functions(nodes)
    for node in nodes:
        if isinstance(node, (exp.Select, exp.Subquery, exp.Exists)) and node is not expression:
            raise _fail("a subquery")
        if isinstance(node, exp.Window):
            raise _fail("a window function (OVER)")
        if isinstance(node, exp.Filter):
            raise _fail("an aggregate FILTER clause (put the condition in WHERE)")

    where_ = expression.args.get("where")
    where_qis = {c.lower() for c in _qis(where_, ctx)} if where_ is not None else set()
    n_aggregates = 0
    for agg in (n for n in nodes if isinstance(n, exp.AggFunc)):
        if not isinstance(agg, SUPPORTED_AGGREGATES):
            raise _fail(f"aggregate {_fname(agg)}()")
        if agg.find(exp.Distinct):
            raise _fail(f"{_fname(agg)}(DISTINCT ...)")
        if any(a is not agg for a in agg.find_all(exp.AggFunc)):
            raise _fail("a nested aggregate")
        qis = _qis(agg, ctx)
        cats = [q for q in qis if ctx.kind(q) == "categorical"]
        if cats or (qis and isinstance(agg, exp.Count)):
            raise UnsupportedQueryError(
                f"{agg.sql_name()}() over {ctx.kind((cats or qis)[0])} quasi-identifier "
                f"'{(cats or qis)[0]}' cannot be estimated; SUM/AVG over numeric QIs and COUNT(*) "
                f"are supported")
        constrained = [q for q in qis if q.lower() in where_qis]
        if constrained:
            raise UnsupportedQueryError(
                f"{agg.sql_name()}() over quasi-identifier '{constrained[0]}' that the WHERE clause "
                f"also constrains cannot be estimated (the estimate uses the midpoint of each "
                f"published range, not the mean of its part satisfying the WHERE clause); aggregate "
                f"it without that condition")
        n_aggregates += 1
    if n_aggregates == 0:
        raise _fail("a query without COUNT/SUM/AVG (row-level results)")

    projections = expression.expressions
    group = expression.args.get("group")
    grouped = set()
    if group is not None:
        for key in ("rollup", "cube", "grouping_sets"):
            if group.args.get(key):
                raise _fail(f"GROUP BY {key.upper().replace('_', ' ')}")
        for key in group.expressions:
            if isinstance(key, (exp.Rollup, exp.Cube, exp.GroupingSets)):
                raise _fail(f"GROUP BY {key.key.upper()}")
            if isinstance(key, exp.Literal) and not key.is_string:
                idx = int(key.this) - 1
                key = projections[idx] if 0 <= idx < len(projections) else key
            key = key.this if isinstance(key, exp.Alias) else key
            qis = _qis(key, ctx)
            if not qis:
                continue
            if not isinstance(key, exp.Column):
                raise UnsupportedQueryError(
                    f"GROUP BY an expression of quasi-identifier '{qis[0]}' cannot be estimated; "
                    f"group by the column itself (estimated per raw value) or by non-QI columns")
            if ctx.kind(qis[0]) == "numeric" and not ctx.numeric[qis[0].lower()].integer:
                raise UnsupportedQueryError(
                    f"GROUP BY on non-integer numeric quasi-identifier '{qis[0]}' cannot be "
                    f"estimated (a single value of a continuous range has probability 0)")
            if qis[0].lower() in where_qis:
                raise UnsupportedQueryError(
                    f"GROUP BY quasi-identifier '{qis[0]}' that the WHERE clause also constrains "
                    f"cannot be estimated (the spread over raw values ignores the condition); "
                    f"drop the condition or group by another column")
            grouped.add(qis[0].lower())
    for proj in projections:
        if isinstance(proj, exp.Star) or proj.find(exp.Star) and not proj.find(exp.Count):
            raise _fail("SELECT *")
        qis = _qis_outside_aggregates(proj, ctx, grouped)
        if qis:
            raise UnsupportedQueryError(
                f"quasi-identifier '{qis[0]}' outside an aggregate in SELECT cannot be estimated "
                f"(its values are generalized); select aggregates and group keys only")

    order = expression.args.get("order")
    if order is not None:
        for o in order.expressions:
            qis = _qis_outside_aggregates(o, ctx, grouped)
            if qis:
                raise UnsupportedQueryError(
                    f"ORDER BY quasi-identifier '{qis[0]}' cannot be estimated; order by group keys "
                    f"or aggregates")
    where = expression.args.get("where")
    if where is not None:
        if where.find(exp.AggFunc):
            raise _fail("an aggregate in WHERE")
        return predicate_tree(where.this, ctx)  # raises on unsupported predicates on QIs
    return None
