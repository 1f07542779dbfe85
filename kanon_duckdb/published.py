"""The published (anonymized) table: what ``k_anonymize`` adds, how it names a numeric QI's
bounds, and reading back which columns publish which QI.

Output of a run: every non-QI column unchanged; numeric QI ``c`` as ``bound_columns(c)`` =
(``c_min``, ``c_max``) of SQL type ``bound_type`` (the column's own type for integers,
floating-point numbers and DECIMAL); categorical QI ``c`` as ``c``; plus ``ADDED_COLUMNS``. Names starting
with ``RESERVED_PREFIX`` are internal. ``check_output_names`` refuses a source table whose
columns the output would shadow (compared case-insensitively, as DuckDB resolves names);
``qi_layout`` reads an output table back through its run record in ``kanon_runs``.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass

from . import objectives
from .errors import InvalidParameterError, UnknownObjectError
from .sqlutil import quote_ident
from .taxonomy.store import recorded_tree_attrs

ADDED_COLUMNS = ("ec", "ec_size", "suppressed", "kanon_run")
RESERVED_PREFIX = "__kanon_"


def bound_columns(qi: str) -> tuple[str, str]:
    """The (lower, upper) bound columns publishing numeric QI ``qi``."""
    return f"{qi}_min", f"{qi}_max"


# floating-point SQL types (as DuckDB names them) whose bounds keep the column's type
_FLOAT_TYPES = ("FLOAT", "REAL", "FLOAT4", "DOUBLE", "FLOAT8")

# the widest DECIMAL whose values survive float64 exactly: the float64 nearest a DECIMAL(p, s)
# value (DuckDB's CAST to DOUBLE, which the algorithms compute in) casts back to that value
# for p <= 15 (15 significant digits); from p = 16 it can land units of the scale away, so
# kanon_duckdb.decimals looks the exact values up in the column
EXACT_DECIMAL_DIGITS = 15


def decimal_width(sql_type: str) -> tuple[int, int] | None:
    """(precision, scale) of a DECIMAL SQL type ('DECIMAL(12,3)', 'NUMERIC(5, 2)';
    DuckDB's bare DECIMAL is (18, 3)), None for any other type."""
    m = re.fullmatch(r"\s*(?:DECIMAL|NUMERIC)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*",
                     sql_type, flags=re.IGNORECASE)
    if m is None:
        return None
    if m.group(1) is None:
        return 18, 3
    return int(m.group(1)), int(m.group(2) or 0)


def bound_type(sql_type: str, integer: bool) -> str:
    """SQL type of the bounds publishing a numeric QI whose column has SQL type ``sql_type``
    (``integer``: an integer type, ``QIPlan.integer``): the column's own type for integers,
    FLOAT/DOUBLE and DECIMAL(p, s) (any p), whose class minimum and maximum are values of the
    column, exact in it (every published bound is a data value: a class's or a tree node's
    extreme; a DECIMAL's bounds travel as their unscaled integers, ``int_carried``,
    ``kanon_duckdb.decimals``); DOUBLE otherwise (BOOLEAN or text made numeric with
    ``numeric :=``). The TEMP-table path (sql/caller_read.sql, ``__kanon_bound``) gives the
    same types. Arithmetic on the bounds follows their type: readers that subtract or add them
    (the query rewriter) widen them first (``wide_bound_type``)."""
    base = sql_type.split("(")[0].strip().upper()
    if integer or base in _FLOAT_TYPES:
        return sql_type
    width = decimal_width(sql_type)
    if width is not None:
        return f"DECIMAL({width[0]},{width[1]})"
    return "DOUBLE"


def caller_bound_type(sql_type: str, integer: bool) -> str:
    """``bound_type`` on the TEMP-table path (sql/caller_read.sql's ``__kanon_bound``): the
    same type (a DECIMAL's bounds are cast to the column's own type from their unscaled
    integer's text, so the macro needs no precision)."""
    return bound_type(sql_type, integer)


def int_carried(plan) -> list:
    """The numeric QIs of ``plan`` (in ``plan.numeric`` order) whose published bounds travel in
    the integer (BIGINT) lists of a run's class table and row values: the integer QIs
    (``plan.integer``, their values) and the DECIMAL ones (their unscaled integers: value *
    10^scale, ``kanon_duckdb.decimals``, turned back into DECIMAL(p, s) exactly by
    ``unscaled_sql``; a ``wide_decimal``'s high halves, its low halves in ``low_slots``). The
    other numeric QIs travel as DOUBLE."""
    return [c for c in plan.numeric
            if c in plan.integer or decimal_width(plan.types[c]) is not None]


# the widest DECIMAL whose unscaled integers (value * 10^s, below 10^p) always fit BIGINT
NARROW_DECIMAL_DIGITS = 18
# a wide DECIMAL's unscaled integer u travels as two BIGINTs (high, low): u = high * 2^64 + low,
# low the signed reading of u's low 64 bits (so |high| < 2^63 for any |u| < 10^38)
_LOW = 2 ** 64


def wide_decimal(sql_type: str) -> bool:
    """True for a DECIMAL(p > 18, s) SQL type: its unscaled integers can leave BIGINT, so its
    bounds travel as two halves (``split_unscaled``), the high one in its ``int_carried``
    slot, the low one in ``low_slots``'s."""
    width = decimal_width(sql_type)
    return width is not None and width[0] > NARROW_DECIMAL_DIGITS


def low_slots(plan) -> dict:
    """{wide DECIMAL QI (``wide_decimal``): 0-based position of its low halves in the integer
    lists}, after every ``int_carried`` slot (so the other QIs' positions do not move)."""
    carried = int_carried(plan)
    wide = [c for c in carried if c not in plan.integer and wide_decimal(plan.types[c])]
    return {c: len(carried) + i for i, c in enumerate(wide)}


def split_unscaled(values) -> tuple:
    """(high, low) int64 arrays of the Python ints ``values`` (|u| < 2^127): u = high * 2^64
    + low, what ``unscaled_sql`` turns back (and sql/caller_read.sql's ``__kanon_bound``)."""
    import numpy as np
    low = [((u % _LOW) ^ 2 ** 63) - 2 ** 63 for u in values]
    high = [(u - lo) >> 64 for u, lo in zip(values, low)]
    return np.array(high, dtype=np.int64), np.array(low, dtype=np.int64)


def unscaled_sql(expr: str, sql_type: str, low: str | None = None) -> str:
    """SQL turning ``expr``, the unscaled BIGINT of a DECIMAL(p, s) value (value * 10^s), back
    into that DECIMAL(p, s) value exactly (a DECIMAL product, then a cast that only narrows the
    precision). For a ``wide_decimal`` ``expr`` and ``low`` are the BIGINT halves of the
    unscaled integer (``split_unscaled``): the same product when it fits BIGINT (high is low's
    sign) and s <= 18, else the HUGEINT's text (sql/caller_read.sql's
    ``__kanon_unscaled_text``, about 0.4 us a value)."""
    p, s = decimal_width(sql_type)

    def product(x):
        return (f"CAST(CAST({x} AS DECIMAL(19,0)) * CAST('1e-{s}' AS DECIMAL({s + 1},{s})) "
                f"AS DECIMAL({p},{s}))")

    if p <= NARROW_DECIMAL_DIGITS:
        return product(expr)
    text = (f"CAST(__kanon_unscaled_text(CAST({expr} AS HUGEINT) * {_LOW} + {low}, {s}) "
            f"AS DECIMAL({p},{s}))")
    if s > 18:  # the product's precision 19 + s + 1 would pass 38
        return text
    return (f"CASE WHEN {expr} = CASE WHEN {low} < 0 THEN -1 ELSE 0 END THEN {product(low)} "
            f"ELSE {text} END")


_SIGNED_BITS = {"TINYINT": 8, "INT1": 8, "SMALLINT": 16, "INT2": 16, "SHORT": 16, "INTEGER": 32,
                "INT": 32, "INT4": 32}


def wide_bound_type(sql_type: str, lo, hi) -> str | None:
    """The type a reader casts a bound column of SQL type ``sql_type``, whose values lie in
    ``lo..hi``, to before arithmetic on it (spans ``c_max - c_min + 1``, sums, midpoints; the
    query rewriter), or None when none is needed: DOUBLE for FLOAT (float32 arithmetic would
    round), BIGINT for unsigned integers (a span of disjoint ranges goes negative) and for a
    narrower signed integer whose values reach a quarter of its range (a sum of two could
    overflow); HUGEINT for BIGINT and UBIGINT whose values reach a quarter of 2^63 (a span
    such as 2^63 - 1 - (-2^63 + 1) overflows BIGINT: DuckDB does not widen BIGINT
    arithmetic); DOUBLE for a DECIMAL(p, s) whose values reach a quarter of 10^(38 - s) (DuckDB
    widens DECIMAL sums and differences only up to DECIMAL(38): a midpoint of 10^38 - 1 and
    10^30 overflows); None for HUGEINT, DOUBLE, other DECIMALs (DuckDB widens their sums and
    differences, and divides them as DOUBLE) and narrow columns of small values."""
    width = decimal_width(sql_type)
    if width is not None:
        return "DOUBLE" if 4 * max(abs(lo), abs(hi)) >= 10 ** (38 - width[1]) else None
    base = sql_type.split("(")[0].strip().upper()
    if base in ("FLOAT", "REAL", "FLOAT4"):
        return "DOUBLE"
    if base in ("BIGINT", "INT8", "LONG", "UBIGINT") and 4 * max(abs(lo), abs(hi)) >= 2 ** 63:
        return "HUGEINT"
    if base in ("UTINYINT", "USMALLINT", "UINTEGER", "UBIGINT", "UHUGEINT"):
        return "BIGINT"
    bits = _SIGNED_BITS.get(base)
    if bits is not None and 4 * max(abs(lo), abs(hi)) >= 2 ** (bits - 1):
        return "BIGINT"
    return None


def check_output_names(columns, numeric) -> None:
    """Refuse source ``columns`` the output would shadow: ``ADDED_COLUMNS``, the bound columns
    of the ``numeric`` QIs, or the reserved prefix (case-insensitively). O(#columns)."""
    taken = {c.lower() for c in ADDED_COLUMNS}
    taken |= {b.lower() for c in numeric for b in bound_columns(c)}
    clash = [c for c in columns if c.lower() in taken or c.lower().startswith(RESERVED_PREFIX)]
    if clash:
        raise InvalidParameterError(
            f"column(s) {', '.join(repr(c) for c in clash)} clash with the columns k_anonymize "
            f"adds ({', '.join(ADDED_COLUMNS)}, <numeric QI>_min/_max; names compare "
            f"case-insensitively); rename them in a copy of the table first")


@dataclass(frozen=True)
class QILayout:
    """Which columns of an anonymized table publish which QI, from its run record.

    num_qi / cat_qi in table order; lo_cols[i] / hi_cols[i] publish num_qi[i]; cat_trees[i] the
    kanon_taxonomy attr of cat_qi[i]'s tree (None: implicit flat tree); num_lo[i] / num_hi[i] the
    data's global range of num_qi[i] (None when the run did not record it); int_lo[i] / int_hi[i]
    the same extremes as exact ints for an integer QI (None otherwise, or for a run recorded
    before kanon_runs.int_lo; num_lo/num_hi are doubles, rounded beyond 2^53); num_w[i] / cat_w[i]
    the weight of num_qi[i] / cat_qi[i] in the run's loss (``weights :=``, scaled to mean 1 over
    the QIs; all 1 without weights).
    """
    run_id: int
    k: int
    num_qi: list
    cat_qi: list
    lo_cols: list
    hi_cols: list
    cat_trees: list
    num_lo: list
    num_hi: list
    num_w: list
    cat_w: list
    int_lo: list
    int_hi: list

    def as_dict(self) -> dict:
        return asdict(self)


def qi_layout(con, table: str) -> QILayout:
    """Read the layout of the anonymized ``table`` (one run) through ``con``. Errors name the
    problem: not a k_anonymize output, several runs mixed, a run not recorded, a QI column
    missing, bound columns in different orders. Cost: one DISTINCT over kanon_run."""
    from .relation import resolve_source  # a table, view or file, as the metrics accept
    source = resolve_source(con, table)
    cols = require_output_columns(table, [c for c, _ in source.columns])
    layout = _read_layout(con, table, source.sql, cols, required=True)
    check_unedited(con, table, source.sql, cols, layout.lo_cols, layout.hi_cols)
    return layout


def require_output_columns(table: str, cols: list) -> list:
    """``cols`` (the column names of ``table``) when they hold k_anonymize's ec, kanon_run and
    suppressed columns, which every utility metric reads; else InvalidParameterError naming the
    missing ones. The one check of "is an anonymized table" (qi_layout, output_columns)."""
    missing = [c for c in ("ec", "kanon_run", "suppressed") if c not in cols]
    if missing:
        raise InvalidParameterError(
            f"table '{table}' is not an output of k_anonymize (no column {', '.join(missing)}); "
            f"the utility metrics need its ec, suppressed and kanon_run columns")
    return cols


def output_columns(con, table: str) -> list:
    """Every column name of the anonymized ``table`` (a table, view or file), for the metric
    macros that read only ec / suppressed / kanon_run (discernibility, cavg, suppression, cm):
    ``require_output_columns``'s error, not DuckDB's binder error, for any other table. Unlike
    qi_layout it needs no kanon_runs row (a table copied from another database still counts)."""
    from .relation import resolve_source
    source = resolve_source(con, table)
    cols = require_output_columns(table, [c for c, _ in source.columns])
    check_unedited(con, table, source.sql, cols)
    return cols


def check_unedited(con, table: str, qualified: str, cols: list, lo_cols=(), hi_cols=()) -> None:
    """Refuse the anonymized ``table`` (FROM-clause SQL ``qualified``, columns ``cols``) when it
    was edited after k_anonymize wrote it, so its metrics would measure rows no run published
    (InvalidParameterError naming each problem and the fix, run k_anonymize again): a row whose
    bound ``lo_cols[i]`` exceeds ``hi_cols[i]``, a NULL ``suppressed`` flag, a class (kanon_run,
    ec) whose ``ec_size`` differs from its number of rows (a row deleted, added or moved, or
    ec_size changed), a class holding suppressed and published rows (a flag flipped: k_anonymize
    suppresses whole classes). One aggregate and one GROUP BY (kanon_run, ec) over the table; the metric
    look-ups that call it (udfs/metrics.py) keep the answer until the database changes.
    Measured as they are: whole classes of an output (a filter on ec, suppressed or a published
    value keeps a consistent anonymized table: every class complete and truthful, k intact), and
    an edit that keeps every check consistent (a label or both bounds of a whole class changed
    to other valid values), which only re-running the algorithm would tell."""
    parts = ["count(*)", "count(*) FILTER (WHERE suppressed IS NULL)"]
    parts += [f"count(*) FILTER (WHERE {quote_ident(lo)} > {quote_ident(hi)})"
              for lo, hi in zip(lo_cols, hi_cols)]
    if "ec_size" in cols:
        parts.append(f"(SELECT [count(*) FILTER (WHERE sized), count(*) FILTER (WHERE mixed)] "
                     f"FROM (SELECT count(*) <> max(ec_size) OR min(ec_size) <> max(ec_size) "
                     f"OR count(ec_size) < count(*) AS sized, bool_or(suppressed) <> "
                     f"bool_and(suppressed) AS mixed FROM {qualified} GROUP BY kanon_run, ec))")
    row = con.execute(f"SELECT {', '.join(parts)} FROM {qualified}").fetchall()[0]
    sized, mixed = row[-1] if "ec_size" in cols else (0, 0)
    null_sup = row[1]
    problems = [f"{bad} row(s) with {lo} > {hi}"
                for lo, hi, bad in zip(lo_cols, hi_cols, row[2:2 + len(lo_cols)]) if bad]
    if null_sup:
        problems.append(f"{null_sup} row(s) with a NULL suppressed flag")
    if sized:
        problems.append(f"{sized} class(es) whose ec_size differs from their number of rows")
    if mixed:
        problems.append(f"{mixed} class(es) holding both suppressed and published rows")
    if problems:
        raise InvalidParameterError(
            f"table '{table}' was edited after k_anonymize wrote it: {'; '.join(problems)}; its "
            f"metrics would measure rows no run published: run k_anonymize again (or restore "
            f"the table)")


def recorded_layout(con, table: str) -> QILayout | None:
    """``qi_layout`` of ``table`` when it names a recorded run, else None: no ``kanon_run``
    column, no ``kanon_runs`` table, no kanon_run value, or a run not in kanon_runs (readers with
    a fallback, e.g. the query rewriter, which needs only the ``kanon_run`` column). A recorded
    run still raises qi_layout's errors (several runs mixed, a QI column missing)."""
    from .relation import resolve_source
    source = resolve_source(con, table)
    cols = [c for c, _ in source.columns]
    if "kanon_run" not in cols or not _has_runs_table(con):
        return None
    return _read_layout(con, table, source.sql, cols, required=False)


def _has_runs_table(con) -> bool:
    return con.execute("SELECT count(*) FROM information_schema.tables "
                       "WHERE lower(table_name) = 'kanon_runs'").fetchall()[0][0] > 0


def run_record(con, run_id: int) -> dict | None:
    """The ``kanon_runs`` row of ``run_id`` as {column: value}, or None if it is not recorded."""
    cursor = con.execute("SELECT * FROM kanon_runs WHERE run_id = ?", [run_id])
    names = [d[0] for d in cursor.description]
    rows = cursor.fetchall()
    return dict(zip(names, rows[0])) if rows else None


def latest_run_on(con, source: str) -> dict | None:
    """The ``kanon_runs`` row of the latest run on ``source`` (as recorded), or None (no such
    run, or no kanon_runs table)."""
    if not _has_runs_table(con):
        return None
    row = con.execute("SELECT max(run_id) FROM kanon_runs WHERE source = ?", [source]).fetchall()
    return run_record(con, row[0][0]) if row[0][0] is not None else None


def _read_layout(con, table: str, qualified: str, cols: list, required: bool) -> QILayout | None:
    runs = [r[0] for r in con.execute(
        f"SELECT DISTINCT kanon_run FROM {qualified} WHERE kanon_run IS NOT NULL LIMIT 2").fetchall()]
    if not runs:
        if not required:
            return None
        raise InvalidParameterError(f"table '{table}' is empty or has no kanon_run value")
    if len(runs) > 1:
        raise InvalidParameterError(
            f"table '{table}' mixes rows of several runs (kanon_run {runs[0]}, {runs[1]}, ...); "
            f"measure one run per table")
    run = run_record(con, runs[0])
    if run is None:
        if not required:
            return None
        raise UnknownObjectError(
            f"run {runs[0]} of table '{table}' is not recorded in kanon_runs (was the table made "
            f"in another database?)")
    num, cat = list(run.get("numeric_qi") or []), list(run.get("categorical_qi") or [])
    # kanon_runs of earlier versions lack the global range: None (metrics fall back)
    rng_lo, rng_hi = list(run.get("num_lo") or []), list(run.get("num_hi") or [])
    if len(rng_lo) != len(num) or len(rng_hi) != len(num):
        rng_lo = rng_hi = [None] * len(num)
    rng = {c: (lo, hi) for c, lo, hi in zip(num, rng_lo, rng_hi)}
    int_lo, int_hi = list(run.get("int_lo") or []), list(run.get("int_hi") or [])
    if len(int_lo) != len(num) or len(int_hi) != len(num):
        int_lo = int_hi = [None] * len(num)
    exact = {c: (lo, hi) for c, lo, hi in zip(num, int_lo, int_hi)}
    need = [bound_columns(c)[0] for c in num] + [bound_columns(c)[1] for c in num] + cat
    absent = [c for c in need if c not in cols]
    if absent:
        raise InvalidParameterError(
            f"table '{table}' lacks the published QI column(s) {', '.join(absent)} of run {runs[0]}")
    pos = {c: i for i, c in enumerate(cols)}
    num_qi = sorted(num, key=lambda c: pos[bound_columns(c)[0]])
    if sorted(num, key=lambda c: pos[bound_columns(c)[1]]) != num_qi:
        raise InvalidParameterError(
            f"table '{table}': the _min and _max columns of its numeric QIs are in different "
            f"orders; keep each QI's c_min/c_max in the same relative order as k_anonymize "
            f"wrote them")
    cat_qi = sorted(cat, key=lambda c: pos[c])
    trees = recorded_tree_attrs(con, run.get("qi"), run.get("qi_trees"), run.get("source"),
                                run.get("qi_tree_hashes"), runs[0])
    k = run.get("k")
    w = objectives.normalized(run.get("qi_weights") or [])  # None: equal weights
    weight = {} if w is None else {c: float(x) for c, x in zip(run.get("qi") or [], w)}
    return QILayout(int(runs[0]), None if k is None else int(k), num_qi, cat_qi,
                    [bound_columns(c)[0] for c in num_qi], [bound_columns(c)[1] for c in num_qi],
                    [trees.get(c) for c in cat_qi],
                    [rng[c][0] for c in num_qi], [rng[c][1] for c in num_qi],
                    [weight.get(c, 1.0) for c in num_qi], [weight.get(c, 1.0) for c in cat_qi],
                    [exact[c][0] for c in num_qi], [exact[c][1] for c in num_qi])
