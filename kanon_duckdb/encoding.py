"""Read quasi-identifiers from DuckDB and encode them as arrays for the kernels.

``plan_qis`` decides which QIs are numeric or categorical from their SQL types (numeric SQL types
are numeric unless listed in ``categorical``; VARCHAR columns listed in ``numeric`` are cast and
must hold numbers). ``encode`` reads the columns (one Arrow scan, through a cursor), maps categorical
values to leaf ordinals of their taxonomy (a flat tree when ``kanon_taxonomy`` has none) and
returns a :class:`QIData`.

NULL policy (documented in the README):
- categorical: NULL is its own leaf directly under the root; a class holding NULL and other values
  is generalized to the root, a class of NULLs only keeps NULL.
- numeric: NULL sorts below every value (so NULLs cluster together); a class holding any NULL
  publishes a NULL range (``c_min``/``c_max`` NULL, meaning "any value"), which the metrics count
  as fully generalized. A floating-point NaN is treated as NULL.
"""
from __future__ import annotations

import difflib
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa

from ._numba_config import njit
from .arrowconv import filled, to_numpy, validity
from .qidata import QIData
from .codec import PLAIN, NumericCodec, choose_int
from .ncp import NULL_OFFSET, sentinel_ok
from .published import check_output_names
from .errors import ConcurrentChangeError, DataError, InvalidParameterError, UnknownObjectError
from .relation import Source, resolve_source
from .string_codes import StringCodes
from .sqlutil import quote_ident
from .taxonomy.store import (read_indexes, resolve_tree_attr, resolve_trees, taxonomy_attrs,
                             validate_coverage)
from .taxonomy.tree import flat_index

_INT_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
              "UINTEGER", "UBIGINT", "UHUGEINT"}
_FLOAT_TYPES = {"FLOAT", "DOUBLE", "REAL"}
_CASTABLE_TO_NUMBER = {"VARCHAR", "TEXT", "STRING", "BOOLEAN"}  # may be forced numeric


@dataclass(frozen=True)
class QIPlan:
    table: str           # the user's table name
    table_sql: str       # what to put after FROM (quoted name, file literal or reader call)
    qi: list             # all QIs in the user's order
    numeric: list        # numeric QIs (in qi order)
    integer: list        # numeric QIs with an integer SQL type
    categorical: list    # categorical QIs (in qi order)
    types: dict          # column -> SQL type
    columns: list        # all columns of the table
    # non-QI columns hashed into the row key after the QIs (the sensitive columns: rows that
    # differ there are not interchangeable under l-diversity / t-closeness); see row_key_sql
    key_columns: list = field(default_factory=list)


def _as_list(x, what):
    if x is None:
        return []
    if isinstance(x, str):
        return [x]
    out = list(x)
    for v in out:
        if not isinstance(v, str):
            raise InvalidParameterError(f"{what} must be a list of column names, got {v!r}")
    return out


def plan_qis(con, table, qi, numeric=None, categorical=None) -> QIPlan:
    """Resolve the relation (a name, see ``relation.resolve_source``, or a resolved Source) and
    split the QIs into numeric and categorical. O(#columns). A QIPlan (made by this function
    for the same arguments, e.g. once per statement by ``__kanon_sql``) is returned as is."""
    if isinstance(table, QIPlan):
        return table
    source = table if isinstance(table, Source) else resolve_source(con, table)
    table, table_sql, cols = source.name, source.sql, source.columns
    types = {c: t for c, t in cols}
    qi = _as_list(qi, "qi")
    if not qi:
        raise InvalidParameterError(
            f"no quasi-identifiers given; pass qi := ['col', ...] with columns of {table!r}: "
            + ", ".join(c for c, _ in cols))
    forced_num, forced_cat = _as_list(numeric, "numeric"), _as_list(categorical, "categorical")
    names = [c for c, _ in cols]
    qi = [_resolve(names, c, table, "qi") for c in qi]
    forced_num = [_resolve(names, c, table, '"numeric"') for c in forced_num]
    forced_cat = [_resolve(names, c, table, "categorical") for c in forced_cat]
    if len(set(qi)) != len(qi):
        raise InvalidParameterError(f"qi lists a column twice: {qi}")
    both = set(forced_num) & set(forced_cat)
    if both:
        raise InvalidParameterError(f"columns {sorted(both)} are listed as both numeric and categorical")
    num, integer, cat = [], [], []
    for c in qi:
        base = types[c].split("(")[0].upper()
        is_numeric_type = base in _INT_TYPES or base in _FLOAT_TYPES or base == "DECIMAL"
        if c in forced_num and not is_numeric_type and base not in _CASTABLE_TO_NUMBER:
            raise InvalidParameterError(
                f"column '{c}' has type {types[c]}, which cannot be a numeric QI (only numbers, "
                f"BOOLEAN and text holding numbers can); leave it categorical (for dates, with a "
                f"tree from kanon_build_dates), or anonymize a numeric copy such as epoch days")
        if c in forced_cat or (not is_numeric_type and c not in forced_num):
            cat.append(c)
        else:
            num.append(c)
            if base in _INT_TYPES:
                integer.append(c)
    check_output_names([c for c, _ in cols], num)
    return QIPlan(table, table_sql, qi, num, integer, cat, types, [c for c, _ in cols])


def _resolve(names, c, table, what):
    """The table's spelling of column ``c``: exact, else the one case-insensitive match (DuckDB
    identifiers are case-insensitive); otherwise an error naming the closest columns."""
    if c in names:
        return c
    low = [n for n in names if n.lower() == c.lower()]
    if len(low) == 1:
        return low[0]
    close = difflib.get_close_matches(c.lower(), [n.lower() for n in names], n=3, cutoff=0.6)
    hint = ""
    if close:
        hint = " Did you mean " + " or ".join(
            repr(next(n for n in names if n.lower() == m)) for m in close) + "?"
    raise UnknownObjectError(
        f"column '{c}' does not exist in {table!r} (named in {what} :=).{hint} Its columns are: "
        + ", ".join(names))


def resolve_column(plan: QIPlan, c, *, what, required=True):
    """``_resolve`` on the plan's columns; None for an absent column when not ``required``."""
    try:
        return _resolve(plan.columns, c, plan.table, what.rstrip(" :="))
    except UnknownObjectError:
        if required:
            raise
        return None


def row_key_sql(plan: QIPlan) -> str:
    """SQL of a row's join key: the 64-bit hash of its raw QI values, then of its
    ``plan.key_columns`` (the sensitive columns, ``with_key_columns``). Rows with equal QI tuples
    are interchangeable for the guarantee and for truthfulness, and with equal sensitive values
    also for the privacy models, so the second read of the relation gives each row a class by
    (key, ordinal among equal keys): no rowid needed, whatever order that read returns.
    An INTERVAL is hashed as its text: DuckDB's hash of INTERVAL collides on ordinary values
    (0 and 31 days, 1 and 30 days); the caller-read statement does the same through the macro
    ``__kanon_key`` (sql/caller_read.sql)."""
    return "hash(" + ", ".join(_key_term(plan, c) for c in plan.qi + list(plan.key_columns)) + ")"


def _key_term(plan: QIPlan, col: str) -> str:
    """One column of ``row_key_sql``: the column, or its text for an INTERVAL."""
    if str(plan.types.get(col, "")).strip().upper() == "INTERVAL":
        return f"CAST({quote_ident(col)} AS VARCHAR)"
    return quote_ident(col)


def with_key_columns(plan: QIPlan, sensitive: list) -> QIPlan:
    """``plan`` whose row key (``row_key_sql``) also hashes the ``sensitive`` columns (resolved
    names, in the order given): an algorithm may put rows of one QI tuple into different
    classes, and under a sensitive-value model those rows are interchangeable only when their
    sensitive values are equal too. The one home of that rule (the statement built at bind
    time, the run and the caller-read path use it)."""
    cols = [c for c in sensitive if c not in plan.qi]
    return plan if list(plan.key_columns) == cols else replace(plan, key_columns=cols)


def read_row_keys(con, plan: QIPlan) -> np.ndarray:
    """uint64 (n,): the row key (``row_key_sql``) of every row of the relation in scan order,
    one streamed scan of one column."""
    chunks = [to_numpy(b.column(0)) for b in
              con.sql(f"SELECT {row_key_sql(plan)} FROM {plan.table_sql}").to_arrow_reader(STREAM_ROWS)]
    keys = np.concatenate(chunks) if chunks else np.zeros(0, dtype=np.uint64)
    return keys.view(np.uint64)


@njit
def rows_differ(num, num_null, cat, a, b):
    """True when rows ``a`` and ``b`` of encoded QIs (``QIData.num``/``num_null``/``cat``) hold
    different QI tuples: a NULL numeric coordinate equals another NULL by its flag alone (the
    coordinate under it is a sentinel, not a value), a non-NULL one equals the same coordinate,
    a categorical code the same code. The one rule for rows that share a row key
    (``row_key_sql``): ``group_rows`` and ``assignment.Assignment`` refuse such rows as a
    collision (``key_collision``) when it says they differ. O(d)."""
    for j in range(num.shape[1]):
        if num_null[a, j] != num_null[b, j] or (not num_null[a, j] and num[a, j] != num[b, j]):
            return True
    for j in range(cat.shape[1]):
        if cat[a, j] != cat[b, j]:
            return True
    return False


def key_collision() -> DataError:
    """The error for two different QI tuples (``rows_differ``) with one 64-bit row key."""
    return DataError("two different QI tuples share one 64-bit row key; this is very rare: "
                     "please report it (anonymizing a copy with one more column avoids it)")


@njit
def _group_keys(keys, num, num_null, cat, slots, tuple_of, first, counts):
    """Number the distinct row keys in order of first appearance: ``tuple_of[i]`` the number of
    row i's key, ``first[t]`` the first row of number t, ``counts[t]`` its rows (open
    addressing on the key's low bits: the keys are hashes already). Returns the count of
    numbers, or -1 when two rows with one key hold different QI tuples (``rows_differ``).
    O(n)."""
    mask = slots.shape[0] - 1
    t = 0
    for i in range(keys.shape[0]):
        key = keys[i]
        h = key & mask
        while True:
            s = slots[h]
            if s == -1:
                slots[h] = t
                first[t] = i
                counts[t] = 1
                tuple_of[i] = t
                t += 1
                break
            f = first[s]
            if keys[f] == key:
                if rows_differ(num, num_null, cat, i, f):
                    return -1
                counts[s] += 1
                tuple_of[i] = s
                break
            h = (h + 1) & mask
    return t


def group_rows(keys: np.ndarray, data: QIData) -> tuple:
    """The histogram of per-row encoded ``data`` (no ``counts``, no extra columns): (keys of the
    distinct tuples, QIData of the distinct tuples in order of first appearance with their row
    counts in ``counts``, int64 (n,) each row's tuple number). The same tuples, codecs and
    trees as ``encode(histogram=True)`` reads through DuckDB's GROUP BY (rows with one key are
    one tuple; two different tuples with one key, ``rows_differ``, are refused as a collision,
    DataError, as ``assignment.Assignment`` refuses them), so a full-domain run on it publishes the same
    classes, and each row's class is its tuple's. O(n·d)."""
    from dataclasses import replace
    if data.counts is not None or data.extra:
        raise ValueError("group_rows: per-row data without extra columns only")
    keys = np.ascontiguousarray(keys).view(np.uint64)
    n = keys.size
    slots = np.full(1 << max(4, (2 * n).bit_length()), -1, dtype=np.int64)  # load <= 1/2
    tuple_of = np.empty(n, dtype=np.int64)
    first = np.empty(n, dtype=np.int64)
    counts = np.empty(n, dtype=np.int64)
    t = _group_keys(keys, data.num, data.num_null, data.cat, slots, tuple_of, first, counts)
    if t < 0:
        raise key_collision()
    first = first[:t]
    hist = replace(data, n=t, num=data.num[first], num_null=data.num_null[first],
                   cat=data.cat[first], counts=counts[:t].copy(),
                   num_leaf=None if data.num_leaf is None else data.num_leaf[first])
    return keys[first], hist, tuple_of


def histogram_sql(plan: QIPlan, extra_columns=(), counts_column: str | None = None) -> str:
    """The relation of distinct (QI, ``extra_columns``) tuples with their row counts
    (``__kanon_count``): DuckDB's GROUP BY, parallel and spilling to disk. ``counts_column``:
    the source is itself a histogram (each row stands for that many rows; Spark's
    ``groupBy().count()``): its counts are summed instead of its rows counted."""
    cols = list(plan.qi) + [c for c in extra_columns if c not in plan.qi]
    names = ", ".join(quote_ident(c) for c in cols)
    count = "count(*)" if counts_column is None else f"sum({quote_ident(counts_column)})::BIGINT"
    return (f"(SELECT {names}, {count} AS __kanon_count FROM {plan.table_sql} "
            f"GROUP BY {names})")


def encode(con, plan: QIPlan, extra_columns=(), need_num_trees=False,
           taxonomies=None, histogram=False, rows_estimate=None) -> tuple[np.ndarray, QIData]:
    """Read the QIs (and ``extra_columns`` as raw Arrow arrays) and encode them.

    Each QI's tree is the one ``taxonomy.store.resolve_tree_attr`` picks for (plan.table, QI,
    ``taxonomies``); ``QIData.tree_attrs`` records it.
    ``histogram``: encode the distinct (QI, extra) tuples instead of the rows, with their row
    counts in ``QIData.counts`` (``histogram_sql``); the key of a tuple is the key of each of
    its rows (``row_key_sql``). A column name: the same, the source's rows standing for the
    counts in that column.
    ``rows_estimate``: the catalog's row count of the relation when the caller knows it; up to
    SMALL_ROWS rows (rows, not a histogram, every numeric QI an integer) the scan is read whole
    first and the extremes taken from it (``_read_small``), one statement less.
    Returns (row keys uint64 (n,), QIData). Cost: one aggregate over the rows (row count,
    numeric extremes) and one streamed scan of the QI columns (of the histogram's GROUP BY) in
    Arrow batches of STREAM_ROWS rows, each encoded
    into the preallocated arrays (memory: the encoded arrays plus one batch), plus O(n·d) numpy
    work; n the rows or, with ``histogram``, the distinct tuples.
    """
    sel = [row_key_sql(plan)]
    _check_int_range(con, plan)
    for c in plan.numeric:
        sel.append(f"TRY_CAST({quote_ident(c)} AS {_travel_type(plan, c)})")
        if plan.types[c].split("(")[0].upper() in ("VARCHAR", "TEXT", "STRING"):
            _check_numeric_text(con, plan, c)
    for c in plan.categorical:
        sel.append(f"CAST({quote_ident(c)} AS VARCHAR)")
    for c in extra_columns:
        sel.append(quote_ident(c))
    if histogram:
        sel.append("__kanon_count")
    source = (histogram_sql(plan, extra_columns, histogram if isinstance(histogram, str) else None)
              if histogram else plan.table_sql)
    query = f"SELECT {', '.join(sel)} FROM {source}"
    dn, dc = len(plan.numeric), len(plan.categorical)
    # a histogram's GROUP BY runs once, in the scan: its numeric extremes are those of the rows
    # and its size at most their count, so the aggregate reads the rows (a plain scan) and the
    # arrays, sized for the rows (pages untouched past the tuples cost no memory), are cut to
    # the tuples after the scan
    small = None
    if (not histogram and rows_estimate is not None and rows_estimate <= SMALL_ROWS
            and all(c in plan.integer for c in plan.numeric)):
        small = _read_small(con, query, plan)
    if small is not None:
        n, fills, batches = small
    else:
        n, fills = _numeric_fills(
            con, f"SELECT {', '.join(sel[:1 + dn])} FROM {plan.table_sql}" if histogram else query,
            plan)
        batches = None
    if n == 0:
        raise DataError(f"table {plan.table!r} is empty; there is nothing to anonymize")
    rowid = np.empty(n, dtype=np.uint64)  # row keys (see row_key_sql)
    row_counts = np.empty(n, dtype=np.int64) if histogram else None
    num = np.empty((n, dn), dtype=np.float64)
    num_null = np.zeros((n, dn), dtype=bool)
    # each QI's tree before the scan: a tree's leaves take codes 0..L-1 (their leaf ordinals)
    # and NULL the code L (the NULL leaf's ordinal), so that the codes need no second pass
    trees, tree_attrs = [], {}
    tree_qis = plan.categorical + (plan.numeric if need_num_trees else [])
    chosen, indexes = resolve_trees(con, tree_qis, plan.table, taxonomies)  # one query
    given = [indexes.get(chosen[c]) if chosen[c] is not None else None for c in plan.categorical]
    leaves = [_leaf_labels(t) for t in given]
    coders = [StringCodes(labels) for labels in leaves]
    null_codes = [len(labels) if labels else -1 for labels in leaves]
    cat = np.empty((n, dc), dtype=np.int32)  # codes of StringCodes, leaf ordinals after remap
    extra_chunks: list = [[] for _ in extra_columns]
    a = 0
    # below PARALLEL_ENCODE_ROWS rows the threads' start and hand-offs cost more than they save
    workers = (max(1, min(max(dc, 2 if dn else 1), os.cpu_count() or 1))
               if n >= PARALLEL_ENCODE_ROWS else 1)
    with ThreadPoolExecutor(max_workers=workers) as pool:  # threads start on first submit
        for batch in (batches if batches is not None
                      else con.sql(query).to_arrow_reader(STREAM_ROWS)):
            b = a + batch.num_rows
            if b > n:
                raise ConcurrentChangeError(
                    f"k_anonymize: the relation {plan.table!r} changed during the call (more rows "
                    f"than counted while encoding); run it again")
            rowid[a:b] = to_numpy(batch.column(0))
            if histogram:
                row_counts[a:b] = to_numpy(batch.column(batch.num_columns - 1))
            preps = [fills[j].prepare(batch.column(1 + j), a) for j in range(dn)]

            def fill_rows(r0, r1, preps=preps, a=a):
                # FILL_ROWS rows at a time, every numeric column: the rows of ``num`` being
                # written stay in cache across its columns
                for q in range(r0, r1, FILL_ROWS):
                    for j in range(dn):
                        fills[j].fill_rows(preps[j], q, min(q + FILL_ROWS, r1), a, num,
                                           num_null, j)
            if dn:  # two halves of the batch in parallel threads (numba releases the GIL)
                mid = (b - a) // 2 // FILL_ROWS * FILL_ROWS if workers > 1 else b - a
                other = pool.submit(fill_rows, mid, b - a) if mid < b - a else None
                try:
                    fill_rows(0, mid)
                finally:
                    if other is not None:
                        other.result()
            weights = row_counts[a:b] if histogram else None
            # numba releases the GIL: columns in parallel, each into its own contiguous buffer
            # (threads writing neighbouring cells of ``cat`` would share cache lines)
            parts = list((pool.map if workers > 1 else map)(
                lambda j: _codes_of(coders[j], batch.column(1 + dn + j), null_codes[j], weights),
                range(dc)))
            for j, codes in enumerate(parts):
                cat[a:b, j] = codes
            for i in range(len(extra_columns)):
                extra_chunks[i].append(batch.column(1 + dn + dc + i))
            a = b
    if histogram:
        n = a
        rowid, row_counts, num, num_null, cat = (
            rowid[:n], row_counts[:n], num[:n], num_null[:n], cat[:n])
        for fill in fills:
            fill.cut(n)
    elif a != n:
        raise ConcurrentChangeError(
            f"k_anonymize: the relation {plan.table!r} changed during the call (fewer rows than "
            f"counted while encoding); run it again")
    lo, hi = np.zeros(dn), np.zeros(dn)
    codecs = []
    for j in range(dn):
        codec, lo[j], hi[j] = fills[j].finish(num, num_null, j)
        codecs.append(codec)
    for j, c in enumerate(plan.categorical):
        coder, tree = coders[j], given[j]
        values = coder.values()
        if chosen[c] is not None:
            tree_attrs[c] = chosen[c]
        if tree is None:
            tree = flat_index(c, sorted(values))
        validate_coverage(tree, zip(values, coder.counts().tolist()))
        if coder.null_count > 0:
            tree = tree.with_null_leaf()
        # a root-only tree over NULLs only: its root stops being a leaf once the NULL leaf hangs
        # under it; that label holds no row (validate_coverage passed), so it maps nowhere
        lut = np.array([tree.leaf_of_label.get(v, -1) for v in values]
                       + [tree.leaf_of_label.get(None, -1)], dtype=np.int32)
        if (lut[:-1] < 0).any():
            lost = [v for v, m in zip(values, coder.counts().tolist()) if m and
                    v not in tree.leaf_of_label]
            if lost:
                raise DataError(f"column {c!r}: its tree's only label {lost[0]!r} is also a data "
                                f"value next to NULLs; add a leaf under it for that value")
        size = len(leaves[j])
        if not (size and len(values) == size and np.array_equal(lut[:-1], np.arange(size))
                and (coder.null_count == 0 or lut[-1] == size)):
            _remap_codes(lut, cat, j)  # codes in order of appearance (no tree) -> leaf ordinals
        trees.append(tree)
    extra = {c: pa.concat_arrays(extra_chunks[i]) for i, c in enumerate(extra_columns)}
    is_int = np.array([c in plan.integer for c in plan.numeric], dtype=bool)
    data = QIData(n, num, num_null, lo, hi, is_int, cat,
                  trees, list(plan.numeric), list(plan.categorical), extra, tree_attrs=tree_attrs,
                  num_codec=codecs, counts=row_counts)
    if need_num_trees:
        data = attach_numeric_trees(con, plan, data, taxonomies, chosen=chosen, indexes=indexes)
    return rowid, data


STREAM_ROWS = 1 << 20  # rows per Arrow batch while encoding: only the encoded arrays grow with n
# up to this many rows (the catalog's estimate, ``encode``'s rows_estimate) the scan is read
# whole before encoding (``_read_small``); above twice as many read so, it counts first again
SMALL_ROWS = 1 << 18


def _read_small(con, query: str, plan: QIPlan):
    """(row count, one :class:`_NumericFill` per numeric QI, the batches) of ``query`` read
    whole (every numeric QI an integer, column 1 + j the j-th): the extremes ``_numeric_fills``
    would aggregate, taken from the rows themselves (exact for integers), in the same statement
    as the rows. None (the reader closed) once more than 2 * SMALL_ROWS rows come: the
    catalog's estimate was stale, the caller counts first. O(rows x numeric QIs)."""
    reader = con.sql(query).to_arrow_reader(STREAM_ROWS)
    batches, n = [], 0
    for batch in reader:
        batches.append(batch)
        n += batch.num_rows
        if n > 2 * SMALL_ROWS:
            reader.close()
            return None
    fills = []
    for j in range(len(plan.numeric)):
        lo = hi = None
        for batch in batches:
            col = batch.column(1 + j)
            values = to_numpy(col)
            if col.null_count:
                values = values[validity(col)]
            if values.size:
                b_lo, b_hi = int(values.min()), int(values.max())
                lo = b_lo if lo is None else min(lo, b_lo)
                hi = b_hi if hi is None else max(hi, b_hi)
        fills.append(_NumericFill(True, lo, hi, n))
    return n, fills, batches
PARALLEL_ENCODE_ROWS = 1 << 17  # from this many rows, categorical columns encode in parallel
FILL_ROWS = 1 << 13  # rows of the numeric columns written together (8 QIs: 576 KB of num, null)


def _numeric_fills(con, query: str, plan: QIPlan) -> tuple:
    """(row count, one :class:`_NumericFill` per numeric QI) from one aggregate over ``query``
    (whose columns 1..dn are the numeric QIs as INTEGER, BIGINT or DOUBLE): the exact extremes
    decide each column's codec before the rows stream. NaN counts as NULL, so it is left out."""
    parts = ["count(*)"]
    for i, c in enumerate(plan.numeric):
        x = f"#{i + 2}"
        if c in plan.integer:
            parts += [f"min({x})", f"max({x})"]
        else:
            parts += [f"min({x}) FILTER (WHERE NOT isnan({x}))",
                      f"max({x}) FILTER (WHERE NOT isnan({x}))"]
    row = con.execute(f"SELECT {', '.join(parts)} FROM ({query})").fetchall()[0]
    n = int(row[0])
    fills = [_NumericFill(c in plan.integer, row[1 + 2 * j], row[2 + 2 * j], n)
             for j, c in enumerate(plan.numeric)]
    return n, fills


class _NumericFill:
    """Writes one numeric QI's coordinates batch by batch (codec.py): plain or offset columns go
    straight into ``num``; a column needing ranks (huge integer spans, infinite or extreme
    floats, rare) keeps its raw values until ``finish``."""

    def __init__(self, is_int: bool, lo, hi, n: int):
        self.is_int = is_int
        found = lo is not None
        if is_int:
            lo, hi = (int(lo), int(hi)) if found else (0, 0)
            self.kind = choose_int(lo, hi)
            self.base = lo if self.kind == "offset" else 0
            self.lo, self.hi = lo, hi
        else:
            lo, hi = (float(lo), float(hi)) if found else (0.0, 0.0)
            self.kind = "plain" if sentinel_ok(lo, hi) else "rank"
            self.lo, self.hi = lo, hi
        self.raw = None
        if self.kind == "rank":
            self.raw = np.empty(n, dtype=np.int64 if is_int else np.float64)
            self.ok = np.ones(n, dtype=bool)

    def cut(self, n: int) -> None:
        """Keep the first ``n`` rows (the arrays were sized for an upper bound)."""
        if self.raw is not None:
            self.raw, self.ok = self.raw[:n], self.ok[:n]

    def prepare(self, col, a: int):
        """A batch (rows a.. of the relation) as numpy (values, validity or an empty mask) for
        ``fill_rows``; a column needing ranks keeps its raw values now (None: nothing to fill)."""
        valid = validity(col) if col.null_count else np.ones(0, dtype=bool)
        if self.raw is not None:
            b = a + len(col)
            self.raw[a:b] = filled(col, 0) if self.is_int else to_numpy(col)
            if valid.size:
                self.ok[a:b] = valid
            return None
        if self.is_int:
            return filled(col, 0), valid  # int32 (INTEGER) or int64 (BIGINT) values
        return np.ascontiguousarray(to_numpy(col), dtype=np.float64), valid

    def fill_rows(self, prep, r0: int, r1: int, a: int, num, num_null, j: int) -> None:
        """Rows r0:r1 of a batch ``prepare`` gave (rows a.. of the relation) into column j of
        ``num``/``num_null``."""
        if prep is None:
            return
        vals, valid = prep
        valid = valid[r0:r1] if valid.size else valid
        out, out_null = num[a + r0:a + r1], num_null[a + r0:a + r1]
        if self.is_int:
            sentinel = (float(self.lo) if self.kind == "plain" else 0.0) - NULL_OFFSET
            _fill_int(vals[r0:r1], valid, np.int64(self.base), sentinel, out, out_null, j)
        else:
            _fill_float(vals[r0:r1], valid, self.lo - NULL_OFFSET, out, out_null, j)

    def finish(self, num, num_null, j: int) -> tuple:
        """(codec (PLAIN or a codec.NumericCodec), lowest coordinate, highest coordinate) of the
        non-NULL values ((0, 0) when none)."""
        if self.kind == "plain":
            return PLAIN, float(self.lo), float(self.hi)
        if self.kind == "offset":
            return (NumericCodec("offset", self.lo, self.hi, base=self.lo), 0.0,
                    float(self.hi - self.lo))
        ok = self.ok if self.is_int else self.ok & ~np.isnan(self.raw)
        values = _rank_fill(self.raw, ok, num, num_null, j)
        self.raw = None
        if self.is_int:
            lo, hi = self.lo, self.hi  # exact ints (codec.NumericCodec.value_lo)
        else:
            finite = values[np.isfinite(values)]
            lo, hi = (float(finite[0]), float(finite[-1])) if finite.size else (0.0, 0.0)
        return NumericCodec("rank", lo, hi, values=values), 0.0, float(max(values.size - 1, 0))


@njit
def _remap_codes(lut, out, j):
    """out[:, j] = lut[out[:, j]] in place, code -1 (NULL) -> lut[-1] (the NULL leaf)."""
    last = lut.shape[0] - 1
    for i in range(out.shape[0]):
        c = out[i, j]
        out[i, j] = lut[c] if c >= 0 else lut[last]


_WIDE_INT = {"UBIGINT", "HUGEINT", "UHUGEINT"}
_NARROW_INT = {"TINYINT", "SMALLINT", "INTEGER", "UTINYINT", "USMALLINT"}  # fit in INTEGER


def _travel_type(plan, c) -> str:
    """The SQL type numeric QI ``c`` is read as: integers exactly, as INTEGER when every value
    of the type fits (half the bytes of BIGINT to export and read), else as BIGINT (codec.py);
    everything else as DOUBLE."""
    if c not in plan.integer:
        return "DOUBLE"
    return "INTEGER" if plan.types[c].split("(")[0].upper() in _NARROW_INT else "BIGINT"


def _check_int_range(con, plan):
    """Integers travel as BIGINT at most (their bounds are published exactly, in the column's
    type): a wider integer column must hold only values in the BIGINT range, else the call is refused
    (naming the column and the fix). One aggregate over the wide columns only."""
    wide = [c for c in plan.integer if plan.types[c].split("(")[0].upper() in _WIDE_INT]
    if not wide:
        return
    parts = ", ".join(
        f"count(*) FILTER (WHERE {quote_ident(c)} > 9223372036854775807 "
        f"OR {quote_ident(c)} < -9223372036854775808)" for c in wide)
    counts = con.execute(f"SELECT {parts} FROM {plan.table_sql}").fetchall()[0]
    for c, bad in zip(wide, counts):
        if bad:
            raise DataError(
                f"numeric QI '{c}' ({plan.types[c]}) holds {bad} value(s) outside the BIGINT range "
                f"(-2^63 .. 2^63-1), in which k_anonymize publishes integer bounds exactly; "
                f"anonymize a copy with '{c}' shifted into that range (e.g. minus its minimum), or "
                f"cast to DOUBLE (rounded), or make it categorical := ['{c}'] with a tree")


@njit
def _fill_int(vals, valid, base, sentinel, out, out_null, j):
    """out[:, j] = float(v - base) (v int32 or int64, exact); NULL -> sentinel with out_null
    set."""
    n = vals.shape[0]
    has_mask = valid.shape[0] == n
    for i in range(n):
        if has_mask and not valid[i]:
            out[i, j] = sentinel
            out_null[i, j] = True
        else:
            out[i, j] = float(vals[i] - base)


@njit
def _fill_float(vals, valid, sentinel, out, out_null, j):
    """out[:, j] = v; NULL (``valid`` False, when given) and NaN -> sentinel with out_null set."""
    n = vals.shape[0]
    has_mask = valid.shape[0] == n
    for i in range(n):
        v = vals[i]
        if (has_mask and not valid[i]) or v != v:
            out[i, j] = sentinel
            out_null[i, j] = True
        else:
            out[i, j] = v


def _rank_fill(vals, ok, out, out_null, j):
    """Rank representation: out[:, j] = rank of the value among the distinct valid values, NULL
    -> -1. Returns the sorted distinct values. O(n log n), only for columns that need it."""
    values, inv = np.unique(vals[ok], return_inverse=True)
    col = np.full(vals.shape[0], -NULL_OFFSET)
    col[ok] = inv.reshape(-1)
    out[:, j] = col
    out_null[:, j] = ~ok
    return values


def _codes_of(coder: StringCodes, arr, null_code: int, weights) -> np.ndarray:
    """int32 codes of the text array ``arr`` by ``coder`` (StringCodes.encode)."""
    out = np.empty(len(arr), dtype=np.int32)
    coder.encode(arr, out, null_code, weights)
    return out


def _leaf_labels(tree) -> list:
    """The leaf labels of ``tree`` by leaf ordinal, or [] when there is no tree or its leaves
    cannot be codes up front (a NULL leaf: the codes then go through the remap)."""
    if tree is None or tree.has_null_leaf:
        return []
    labels = [None] * tree.leaf_count
    for label, ordinal in tree.leaf_of_label.items():
        labels[ordinal] = label
    return labels if all(isinstance(v, str) for v in labels) else []


def _check_numeric_text(con, plan, c):
    q = quote_ident(c)
    rows = con.execute(
        f"SELECT {q}, count(*) FROM {plan.table_sql} WHERE {q} IS NOT NULL AND "
        f"TRY_CAST({q} AS DOUBLE) IS NULL GROUP BY ALL ORDER BY 2 DESC LIMIT 5").fetchall()
    if rows:
        shown = ", ".join(f"'{v}' ({n} rows)" for v, n in rows)
        raise DataError(
            f"numeric QI '{c}' holds non-numeric text: {shown}. Clean the column, or treat it as "
            f"categorical with categorical := ['{c}']")


# --------------------------------------------------------------------------- numeric trees
# Owned by the lattice family (full-domain algorithms need an interval tree per numeric QI).

def attach_numeric_trees(con, plan: QIPlan, data: QIData, taxonomies=None, *, chosen=None,
                         indexes=None) -> QIData:
    """Attach the ``kanon_taxonomy`` tree of each numeric QI that has one (``data.num_trees``,
    None where absent) and each row's leaf ordinal in it (``data.num_leaf``, -1 where absent).

    Leaves are matched by label: the data value as DuckDB casts it to VARCHAR (the labels that
    ``store.build_interval_taxonomy`` writes). NULLs map to an extra NULL leaf under the root.
    A value missing from the tree raises TaxonomyError listing it. ``chosen`` (QI -> tree attr)
    and ``indexes`` (attr -> tree) when the caller read them already (``encode``: one query for
    every tree). Cost: an integer QI's values and counts come from ``data`` (its label is the
    decimal integer, as DuckDB casts it); one GROUP BY per other numeric QI that has a tree.
    """
    from dataclasses import replace

    from .taxonomy.store import validate_coverage

    trees = [None] * data.dn
    leaf = np.full((data.n, data.dn), -1, dtype=np.int32)
    tree_attrs = dict(data.tree_attrs)
    if chosen is None:
        attrs = taxonomy_attrs(con)
        chosen = {c: resolve_tree_attr(con, c, plan.table, taxonomies, attrs)
                  for c in plan.numeric}
    if indexes is None:
        indexes = read_indexes(con, [chosen[c] for c in plan.numeric])  # one query
    for j, c in enumerate(plan.numeric):
        attr = chosen[c]
        tree = indexes.get(attr) if attr is not None else None
        if tree is None:
            continue
        tree_attrs[c] = attr
        codec = data.codec(j)
        if c in plan.integer:
            vals, labels, counts = _integer_values(data, j)
        else:
            q = quote_ident(c)
            rows = con.execute(
                f"SELECT TRY_CAST({q} AS DOUBLE) AS v, CAST({q} AS VARCHAR) AS lab, count(*) "
                f"FROM {plan.table_sql} WHERE {q} IS NOT NULL GROUP BY ALL ORDER BY v").fetchall()
            labels, counts = [r[1] for r in rows], [r[2] for r in rows]
            # the values as kernel coordinates (codec.py), so they match data.num
            vals = (np.array([r[0] for r in rows], dtype=np.float64) if codec is None
                    else codec.encode([r[0] for r in rows]))
        validate_coverage(tree, zip(labels, counts))
        if data.num_null[:, j].any():
            tree = tree.with_null_leaf()
        ords = np.array([tree.leaf_of_label[lab] for lab in labels], dtype=np.int32)
        col = data.num[:, j]
        pos = np.searchsorted(vals, col).clip(0, max(len(vals) - 1, 0))
        lj = ords[pos] if len(vals) else np.zeros(data.n, np.int32)
        null = data.num_null[:, j]
        if null.any():
            lj = lj.copy()
            lj[null] = tree.leaf_of_label[None]
        trees[j] = tree
        leaf[:, j] = lj
    return replace(data, num_trees=trees, num_leaf=leaf, tree_attrs=tree_attrs)


def _integer_values(data: QIData, j: int) -> tuple:
    """(sorted distinct coordinates, their labels, their row counts) of the non-NULL values of
    integer QI ``j``, from the encoded column (a histogram's rows weighted by their counts). The
    label is the integer in decimal: what DuckDB's CAST(x AS VARCHAR) gives for any integer
    type. O(n log n)."""
    keep = ~data.num_null[:, j]
    coords, inverse = np.unique(data.num[keep, j], return_inverse=True)
    weights = None if data.counts is None else data.counts[keep]
    counts = np.bincount(inverse.reshape(-1), weights=weights,
                         minlength=coords.size).astype(np.int64)
    codec = data.codec(j)
    ints = coords.astype(np.int64) if codec is None else codec.decode_int(coords)[0]
    return coords, [str(int(v)) for v in ints], counts.tolist()
