"""What the rewriter knows about an anonymized table: its QIs, their global ranges and trees.

``RewriteContext`` is plain data handed explicitly to every pass. ``resolve_context`` fills it from
a database:

- Which columns are QIs: the run record ``kanon_runs`` (``numeric_qi``/``categorical_qi``, or ``qi``)
  joined through the anonymized table's ``kanon_run`` column; without one, numeric QIs are the
  columns ``c`` with both ``c_min`` and ``c_max``, categorical QIs the columns with a tree in
  ``kanon_taxonomy``.
- Numeric QI ``c``: global range ``min(c_min) .. max(c_max)`` over the anonymized table (a NULL
  bound means "any value" and is read as that range); when the table has NULL bounds (suppressed
  rows, classes holding a NULL) and its run recorded the data's range (``kanon_runs.num_lo`` /
  ``num_hi``, finite), the range is widened to cover it: a suppressed row's value may lie outside
  every published range (an outlier is what suppression removes). A class whose two bounds are
  equal is known exactly, also at -inf or +inf: ``[-inf, -inf]`` counts wholly for a predicate
  -inf satisfies (``x < 0``) and not at all otherwise (``x > 5``, ``x BETWEEN -1 AND 1``). In a
  half-infinite range (a class holding an infinite and other values) the infinite bound reads
  as the global finite minimum / maximum, as NCP reads it: the range is then that of the finite
  bounds (and the recorded finite range), and a predicate beyond it selects nothing of such a
  class. Integer-valued when the raw column (else ``c_min``) has an integer type.
- Categorical QI ``c``: the tree its run used (``kanon_runs.qi_trees``; without a run record, the
  tree ``taxonomy.store.resolve_tree_attr`` picks for the raw table, else the anonymized one), or
  the implicit flat tree ``value -> '*'`` over the raw table's distinct values.

The anonymized and raw relations are anything ``k_anonymize`` reads (``relation.resolve_source``:
a table or view, a file path or glob, a file reader call), held as ``relation.Source``.
Metadata is read through ``con.cursor()``; from inside a UDF that cursor cannot see the caller's
TEMP tables or uncommitted changes.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from fractions import Fraction
from functools import cached_property

from sqlglot import exp

from ..errors import DataError, UnknownObjectError, UnsupportedQueryError
from ..published import ADDED_COLUMNS, recorded_layout, wide_bound_type
from ..relation import Source, resolve_source
from ..taxonomy import TaxonomyIndex, build_index, flat_index, read_edges
from ..taxonomy.builders import ROOT as FLAT_ROOT
from ..taxonomy.store import resolve_tree_attr, taxonomy_attrs
from .sqlgen import column, number, quote, widened

#: Columns the core adds to an anonymized table; never quasi-identifiers.
INTERNAL_COLUMNS = frozenset(ADDED_COLUMNS)

_INTEGER_TYPES = frozenset({
    "TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT",
    "UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT",
})
_FLOAT_TYPES = frozenset({"FLOAT", "DOUBLE", "REAL"})


def is_integer_type(sql_type: str) -> bool:
    t = (sql_type or "").upper()
    return t in _INTEGER_TYPES or bool(re.fullmatch(r"DECIMAL\(\d+,\s*0\)", t))


def _is_float_type(sql_type: str) -> bool:
    return (sql_type or "").upper() in _FLOAT_TYPES


def is_numeric_type(sql_type: str) -> bool:
    t = (sql_type or "").upper()
    return is_integer_type(t) or t in _FLOAT_TYPES or t.startswith("DECIMAL")


@dataclass(frozen=True)
class NumericQI:
    """A numeric QI ``name`` published as the inclusive range ``[lo_col, hi_col]``."""

    name: str
    lo_col: str
    hi_col: str
    gmin: Fraction
    gmax: Fraction
    integer: bool
    has_null: bool = False  # some rows have NULL bounds, read as [gmin, gmax]
    widen: str | None = None  # published.wide_bound_type of the bounds: cast before arithmetic
    has_inf: bool = False  # some bounds are -inf/+inf, read as gmin/gmax unless both are (exact)

    def published_bounds(self, table: str | None = None) -> tuple:
        """(lo_col, hi_col) as published (an infinite bound stays infinite), widened as in
        ``bounds``."""
        return tuple(widened(column(c, table), self.widen) for c in (self.lo_col, self.hi_col))

    def bounds(self, table: str | None = None) -> tuple:
        """(lo_col, hi_col) as sqlglot expressions (of relation alias ``table`` when given),
        widened for arithmetic: the bounds keep the raw column's type, so a TINYINT span
        ``c_max - c_min + 1`` would overflow in TINYINT. With ``has_inf`` an infinite bound
        reads as the global finite minimum / maximum, as NCP reads it (NULL stays NULL)."""
        cols = self.published_bounds(table)
        if not self.has_inf:
            return cols
        return tuple(exp.Case(ifs=[exp.If(this=exp.Anonymous(this="isinf", expressions=[c.copy()]),
                                          true=exp.Case(ifs=[exp.If(this=exp.GT(this=c.copy(),
                                                                                  expression=number(0)),
                                                                    true=number(self.gmax))],
                                                        default=number(self.gmin)))],
                              default=c.copy()) for c in cols)


@dataclass(frozen=True)
class CategoricalQI:
    """A categorical QI ``name`` published as a taxonomy label in column ``column``."""

    name: str
    column: str
    taxonomy: TaxonomyIndex
    numeric_leaves: bool = False  # raw column is numeric: constants and leaves compare as numbers
    text_labels: bool = True  # anonymized column is VARCHAR (else it is cast before matching)

    @cached_property
    def leaves(self) -> tuple:
        """Leaf labels in tree order (the NULL leaf, if any, excluded)."""
        return tuple(x for x in self.taxonomy.leaf_labels() if x is not None)

    @cached_property
    def ordinal_leaves(self) -> tuple:
        """Leaf labels by leaf ordinal (None for a NULL leaf)."""
        return tuple(self.taxonomy.leaf_labels())

    @cached_property
    def node_ranges(self) -> tuple:
        """(node id, label, first leaf ordinal, last leaf ordinal) of every labelled node."""
        t = self.taxonomy
        return tuple((u, lab, int(t.leaf_lo[u]), int(t.leaf_hi[u]))
                     for u, lab in enumerate(t.labels) if lab is not None)

    @cached_property
    def leaf_set(self) -> frozenset:
        return frozenset(self.leaves)

    @cached_property
    def leaf_keys(self) -> tuple:
        """(leaf, comparison key): the number for numeric leaves (None if not one), else the text."""
        if not self.numeric_leaves:
            return tuple((x, x) for x in self.leaves)
        out = []
        for x in self.leaves:
            try:
                out.append((x, Fraction(str(x).strip())))
            except ValueError:
                out.append((x, None))
        return tuple(out)


@dataclass(frozen=True)
class RewriteContext:
    """Everything a pass may use. Keys of ``numeric``/``categorical`` are lower-case column names.

    ``numeric_qi``/``categorical_qi`` name every QI of the table (so a reference to any of them is
    recognised); ``numeric``/``categorical`` hold the details of those the query uses.
    """

    anon_table: Source  # the anonymized relation (find_relation)
    raw_table: Source | None = None
    numeric_qi: frozenset = frozenset()
    categorical_qi: frozenset = frozenset()
    numeric: dict = field(default_factory=dict)
    categorical: dict = field(default_factory=dict)
    weight: str = "__fraction"

    def kind(self, name: str) -> str | None:
        """'numeric', 'categorical' or None (not a QI) for a column name."""
        n = name.lower()
        if n in self.numeric_qi:
            return "numeric"
        if n in self.categorical_qi:
            return "categorical"
        return None

    @classmethod
    def manual(cls, anon_table: str, numeric=None, categorical=None, raw_table=None) -> "RewriteContext":
        """A context without a database (doctests, unit tests).

        ``numeric``: ``{name: (gmin, gmax, integer)}``; ``categorical``: ``{name: TaxonomyIndex}``.

        >>> ctx = RewriteContext.manual("t_k2", numeric={"age": (20, 59, True)})
        >>> ctx.kind("AGE"), ctx.numeric["age"].lo_col
        ('numeric', 'age_min')
        """
        nums = {k.lower(): NumericQI(k, f"{k}_min", f"{k}_max", Fraction(lo), Fraction(hi), bool(i))
                for k, (lo, hi, i) in (numeric or {}).items()}
        cats = {k.lower(): CategoricalQI(k, k, t) for k, t in (categorical or {}).items()}
        def named(t):
            return None if t is None else Source(t, quote(t), [], "table")
        return cls(named(anon_table), named(raw_table), frozenset(nums), frozenset(cats), nums, cats)


# ----------------------------------------------------------------------------- resolver
def table_sql(rel: Source) -> str:
    """SQL to put after FROM for a relation (a quoted name, a file path, a reader call)."""
    return rel.sql


def find_relation(cur, name: str) -> Source:
    """The relation ``name`` as ``k_anonymize`` reads it (``relation.resolve_source``: a
    non-TEMP table or view, a file path or glob, a file reader call); a table or view of the
    current schema is referred to by its bare quoted name (readable rewritten SQL).
    UnknownObjectError otherwise. ``cur`` is a fresh reader cursor: its only TEMP objects are
    the caller's registered objects handed to it (``registered.CallerConnection``)."""
    src = resolve_source(cur, name, allow_temp=True)
    if src.parts is not None:
        here = cur.execute("SELECT current_database(), current_schema()").fetchall()[0]
        if tuple(src.parts[:2]) == tuple(here):
            src = replace(src, sql=quote(src.parts[2]))
    return src


def describe(cur, rel: Source) -> dict:
    """``{lower name: (name, type)}`` of a relation's columns."""
    return {c.lower(): (c, t) for c, t in rel.columns}


def table_exists(cur, name: str) -> bool:
    rows = cur.execute(
        "SELECT count(*) FROM information_schema.tables WHERE lower(table_name) = lower(?)",
        [name]).fetchall()
    return rows[0][0] > 0


def qi_from_run(cur, anon_table: str):
    """(numeric, categorical) lower-case QI names, {QI: tree attr} and {numeric QI: (lo, hi)}, the
    data's finite global ranges the run recorded (``kanon_runs.num_lo`` / ``num_hi``), from the
    run record (``published.recorded_layout``), or None without one."""
    layout = recorded_layout(cur, anon_table)
    if layout is None:
        return None
    trees = {q.lower(): a for q, a in zip(layout.cat_qi, layout.cat_trees) if a is not None}
    # an integer QI's exact extremes where the run recorded them (num_lo/num_hi are doubles)
    ranges = {q.lower(): (lo if ilo is None else ilo, hi if ihi is None else ihi)
              for q, lo, hi, ilo, ihi in zip(layout.num_qi, layout.num_lo or [], layout.num_hi or [],
                                             layout.int_lo, layout.int_hi)
              if lo is not None and hi is not None and math.isfinite(lo) and math.isfinite(hi)}
    return (frozenset(q.lower() for q in layout.num_qi),
            frozenset(q.lower() for q in layout.cat_qi), trees, ranges)


def qi_fallback(cur, anon_cols: dict):
    """Numeric = columns with _min/_max pairs; categorical = columns with a tree in kanon_taxonomy."""
    numeric = frozenset(_min_max_pairs(anon_cols))
    with_tree = set()
    if table_exists(cur, "kanon_taxonomy"):
        rows = cur.execute("SELECT DISTINCT attr FROM kanon_taxonomy WHERE attr IS NOT NULL").fetchall()
        with_tree = {r[0].lower() for r in rows}
    categorical = frozenset(c for c in anon_cols
                            if c in with_tree and c not in numeric and c not in INTERNAL_COLUMNS)
    return numeric, categorical


def _min_max_pairs(anon_cols: dict) -> set:
    return {c[:-4] for c in anon_cols if c.endswith("_min") and c[:-4] + "_max" in anon_cols}


def resolve_context(con, anon_table: str, raw_table: str | None = None, columns=None,
                    raw_required: bool = False) -> RewriteContext:
    """Build the context for ``anon_table`` (and its source ``raw_table``, when known).

    ``columns``: lower-case names the query uses; only those QIs get ranges/trees loaded
    (None loads every QI). A missing ``raw_table`` is an error only with ``raw_required``.
    """
    cur = con.cursor()
    try:
        anon = find_relation(cur, anon_table)
        anon_cols = describe(cur, anon)
        raw = raw_cols = None
        if raw_table is not None:
            try:
                raw = find_relation(cur, raw_table)
                raw_cols = describe(cur, raw)
            except UnknownObjectError:
                if raw_required:
                    raise
        recorded = qi_from_run(cur, anon)  # the relation resolved above
        ranges = {}
        if recorded is not None:
            numeric_qi, categorical_qi, trees, ranges = recorded
        else:
            numeric_qi, categorical_qi = qi_fallback(cur, anon_cols)
        need = set(columns) if columns is not None else set(numeric_qi) | set(categorical_qi)
        numeric = _load_numeric(cur, anon, anon_cols, raw, raw_cols, sorted(numeric_qi & need), ranges)
        if recorded is None:
            trees = _resolved_tree_attrs(cur, anon, anon_cols, raw, sorted(categorical_qi & need))
        categorical = {q: _load_categorical(cur, q, anon, anon_cols, raw, raw_cols, trees.get(q))
                       for q in sorted(categorical_qi & need)}
    finally:
        cur.close()
    return RewriteContext(anon, raw, numeric_qi, categorical_qi, numeric, categorical)


def _load_numeric(cur, anon, anon_cols, raw, raw_cols, names, recorded=None) -> dict:
    """{QI: NumericQI} for the numeric QIs ``names``; ``recorded``: the run's data ranges
    (``qi_from_run``), which widen the global range of a QI with NULL bounds."""
    if not names:
        return {}
    parts = []
    for q in names:
        lo, hi = quote(anon_cols[q + "_min"][0]), quote(anon_cols[q + "_max"][0])
        parts += [f"min({lo})", f"max({hi})", f"bool_or({lo} IS NULL OR {hi} IS NULL)"]
        if _is_float_type(anon_cols[q + "_min"][1]):  # +-inf bounds: the finite extremes too
            parts += [f"coalesce(bool_or(isinf({lo}) OR isinf({hi})), false)",
                      f"least(min({lo}) FILTER (WHERE NOT isinf({lo})), "
                      f"min({hi}) FILTER (WHERE NOT isinf({hi})))",
                      f"greatest(max({lo}) FILTER (WHERE NOT isinf({lo})), "
                      f"max({hi}) FILTER (WHERE NOT isinf({hi})))"]
        else:
            parts += ["false", "NULL", "NULL"]
    row = cur.execute(f"SELECT {', '.join(parts)} FROM {table_sql(anon)}").fetchall()[0]
    out = {}
    for i, q in enumerate(names):
        gmin, gmax, has_null, has_inf, fmin, fmax = row[6 * i: 6 * i + 6]
        if has_inf:  # an infinite bound reads as the global finite extreme (NULL policy, NCP)
            rec = (recorded or {}).get(q, (None, None))
            fmin = min((x for x in (fmin, rec[0]) if x is not None), default=None)
            fmax = max((x for x in (fmax, rec[1]) if x is not None), default=None)
            if fmin is None or fmax is None:
                raise DataError(f"numeric QI '{q}': every published bound in '{anon.name}' is "
                                f"infinite or NULL; no finite range to estimate over")
            gmin, gmax = fmin, fmax
        lo_name, lo_type = anon_cols[q + "_min"]
        hi_name = anon_cols[q + "_max"][0]
        name, src_type = q, lo_type
        if raw_cols is not None and q in raw_cols:
            name, src_type = raw_cols[q]
        if (gmin is None or gmax is None) and raw_cols is not None and q in raw_cols:
            c = quote(name)  # the finite extremes (NULL policy: NaN is NULL, +-inf read as them)
            finite = f" FILTER (WHERE NOT isinf({c}) AND NOT isnan({c}))" if _is_float_type(src_type) else ""
            gmin, gmax = cur.execute(
                f"SELECT min({c}){finite}, max({c}){finite} FROM {table_sql(raw)}").fetchall()[0]
        if gmin is None or gmax is None:
            raise DataError(f"numeric QI '{q}': every range in '{anon.name}' is NULL and no raw "
                            f"table gives its global range")
        try:
            gmin, gmax = Fraction(gmin), Fraction(gmax)
        except (TypeError, ValueError):
            raise UnsupportedQueryError(
                f"numeric QI '{q}' has type {lo_type}; only numeric ranges can be estimated") from None
        if has_null and q in (recorded or {}):  # a NULL range also covers values outside every range
            rlo, rhi = (Fraction(x) for x in recorded[q])
            if is_integer_type(src_type):  # doubles (runs before int_lo): round outward
                rlo, rhi = Fraction(math.floor(rlo)), Fraction(math.ceil(rhi))
            gmin, gmax = min(gmin, rlo), max(gmax, rhi)
        out[q] = NumericQI(name, lo_name, hi_name, gmin, gmax, is_integer_type(src_type), bool(has_null),
                           wide_bound_type(lo_type, gmin, gmax), bool(has_inf))
    return out


def _resolved_tree_attrs(cur, anon, anon_cols, raw, names) -> dict:
    """{lower QI name: tree attr} for the categorical QIs ``names`` of a table without a run
    record: the resolution order for the raw table (else the anonymized one)."""
    if not names:
        return {}
    attrs = taxonomy_attrs(cur)
    table = (raw or anon).name  # per-table trees: resolve_tree_attr takes its relation_name
    return {q: a for q in names
            if (a := resolve_tree_attr(cur, anon_cols[q][0], table, None, attrs)) is not None}


def _load_categorical(cur, q, anon, anon_cols, raw, raw_cols, attr=None) -> CategoricalQI:
    col_name, col_type = anon_cols[q]
    raw_type = raw_cols[q][1] if raw_cols is not None and q in raw_cols else col_type
    edges = read_edges(cur, attr) if attr is not None else []
    if edges:
        tree = build_index(col_name, edges)
    else:  # implicit flat tree over the raw table's values (else the labels seen but its root)
        from_raw = raw_cols is not None and q in raw_cols
        src, src_col = (raw, raw_cols[q][0]) if from_raw else (anon, col_name)
        values = [r[0] for r in cur.execute(
            f"SELECT DISTINCT CAST({quote(src_col)} AS VARCHAR) AS v FROM {table_sql(src)} "
            f"WHERE v IS NOT NULL ORDER BY v").fetchall()]
        tree = flat_index(col_name, values if from_raw else [v for v in values if v != FLAT_ROOT])
    return CategoricalQI(col_name, col_name, tree, is_numeric_type(raw_type),
                         (col_type or "").upper() == "VARCHAR")
