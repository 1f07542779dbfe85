"""Taxonomies as rows of the SQL table ``kanon_taxonomy(attr VARCHAR, child VARCHAR, parent VARCHAR)``.

Which rows are the tree of a quasi-identifier is decided in ONE place, :func:`resolve_tree_attr`
(every reader goes through it: encoding, the run record the SQL metrics read, the query
rewrite, the ML utility, ``kanon_mapping``). For QI ``c`` of relation ``t`` the first of these
``attr`` values that has rows wins:

1. ``taxonomies[c]`` -- the tree a call names (``taxonomies := {'sex': 'sex_v2'}``); it must
   exist (an error otherwise, never a silent fall-back);
2. ``'<t>.<c>'`` -- the tree of that table's column (``t`` is the relation's own name, without
   database or schema; a file path's name without directory and extension);
3. ``'<c>'`` -- the tree of every column of that name (the historical key).

None of them: the caller uses the implicit flat tree (value -> '*') or no tree. ``attr`` values
match exactly, else case-insensitively (like DuckDB identifiers).

A root row has ``parent IS NULL``; a node's children are ordered by insertion (rowid) order,
which fixes the leaf order of the tree. Every function takes a DuckDB connection (or cursor);
identifiers are quoted with ``sqlutil`` and values travel as parameters, never spliced into SQL.
The ``build_*`` / ``load_*`` functions replace the rows of their ``attr`` (default: the column's
name) and return the number of edges inserted.
"""
from __future__ import annotations

import contextlib
import dataclasses
import os
import threading
import uuid

import duckdb
import pyarrow as pa

from ..errors import InvalidParameterError, TaxonomyError
from ..readonly import is_read_only, require_writable
from ..sqlutil import quote_ident, resolve_column, resolve_table, split_qualified, table_columns
from . import builders
from .tree import TaxonomyIndex, build_index

TABLE = "kanon_taxonomy"

_NUMERIC = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
            "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "REAL", "DECIMAL"}


_COLUMNS = ("attr", "child", "parent")  # all VARCHAR: labels are compared as text everywhere
DDL = f"CREATE TABLE IF NOT EXISTS {TABLE} (attr VARCHAR, child VARCHAR, parent VARCHAR)"


def ensure_taxonomy_table(con) -> None:
    """Create ``kanon_taxonomy`` if it does not exist (not in a database opened read-only:
    readonly.py; writers call readonly.require_writable first); a table of that name of another shape (a
    column missing or not VARCHAR, e.g. made by hand with INTEGER labels) is a TaxonomyError
    naming the difference and the fix. O(columns of the current schema's kanon_taxonomy)."""
    have = dict(con.execute(
        "SELECT lower(column_name), data_type FROM duckdb_columns() WHERE table_name = ? "
        "AND schema_name = current_schema() AND database_name = current_database()",
        [TABLE]).fetchall())
    if not have:
        if is_read_only(con):
            return
        con.execute(DDL)
        return
    wrong = [f"{c} missing" if c not in have else f"{c} {have[c]}" for c in _COLUMNS
             if have.get(c) != "VARCHAR"]
    if wrong:
        raise TaxonomyError(
            f"{TABLE} must have the columns attr VARCHAR, child VARCHAR, parent VARCHAR; this "
            f"database's has {', '.join(wrong)}. Convert it (ALTER TABLE {TABLE} ALTER COLUMN "
            f"child TYPE VARCHAR, ...) or rename it and INSERT its rows into a new {TABLE}")


def require_writable_store(con) -> None:
    """ReadOnlyDatabaseError (naming the fix) when ``con``'s database is opened read-only: every
    writer of kanon_taxonomy calls it before its work (readonly.py)."""
    require_writable(con, "the taxonomy builders write their trees", TABLE)


def in_transaction(con) -> bool:
    """True inside an explicit transaction (autocommit gives each statement a new txid)."""
    txid = "SELECT txid_current()"
    return con.execute(txid).fetchall()[0][0] == con.execute(txid).fetchall()[0][0]


def begin(con) -> bool:
    """BEGIN unless the caller already holds a transaction; True if we own the new one."""
    if in_transaction(con):
        return False
    con.execute("BEGIN TRANSACTION")
    return True


@contextlib.contextmanager
def transaction(con):
    """Run the block in a transaction of our own (COMMIT at the end, ROLLBACK and re-raise on
    any error), or inside the caller's transaction when it already holds one (see begin)."""
    own = begin(con)
    try:
        yield
        if own:
            con.execute("COMMIT")
    except BaseException:
        if own:
            con.execute("ROLLBACK")
        raise


def insert_edges(con, attr: str, edges, replace: bool = True) -> int:
    """Insert ``edges`` ((child, parent) pairs, in order) for ``attr``; ``replace`` deletes the
    attribute's existing rows first (atomically). Returns the number of rows inserted."""
    if not isinstance(attr, str) or not attr:
        raise InvalidParameterError(f"taxonomy attr must be a non-empty string, got {attr!r}")
    edges = [(None if c is None else str(c), None if p is None else str(p)) for c, p in edges]
    require_writable_store(con)
    ensure_taxonomy_table(con)
    data = pa.table({"attr": pa.array([attr] * len(edges), pa.string()),
                     "child": pa.array([c for c, _ in edges], pa.string()),
                     "parent": pa.array([p for _, p in edges], pa.string())})
    view = f"__kanon_edges_{uuid.uuid4().hex}"
    with transaction(con):
        if replace:
            con.execute(f"DELETE FROM {TABLE} WHERE attr = ?", [attr])
        con.register(view, data)
        try:
            con.execute(f"INSERT INTO {TABLE} (attr, child, parent) "
                        f"SELECT attr, child, parent FROM {quote_ident(view)}")
        finally:
            con.unregister(view)
    return len(edges)


def read_edges(con, attr: str) -> list:
    """[(child, parent)] of ``attr`` in insertion order ([] if none or no table)."""
    try:
        rows = con.execute(
            f"SELECT child, parent FROM {TABLE} WHERE attr = ? ORDER BY rowid", [attr]).fetchall()
    except duckdb.CatalogException:
        return []
    return [tuple(r) for r in rows]


def read_index(con, attr: str) -> TaxonomyIndex | None:
    """The validated tree index of ``attr`` (tree.build_index), or None if it has no rows."""
    edges = read_edges(con, attr)
    return build_index(attr, edges) if edges else None


def read_indexes(con, attrs) -> dict:
    """{attr: validated tree index} of every ``attr`` in ``attrs`` that has rows, read in one
    query (``read_index`` for several trees; None entries are skipped)."""
    wanted = sorted({a for a in attrs if a is not None})
    if not wanted:
        return {}
    try:
        rows = con.execute(f"SELECT attr, child, parent FROM {TABLE} WHERE attr IN "
                           f"(SELECT unnest(?)) ORDER BY rowid", [wanted]).fetchall()
    except duckdb.CatalogException:
        return {}
    edges = _edges_by_attr(rows)
    return {attr: cached_index(attr, e) for attr, e in edges.items()}


def _edges_by_attr(rows) -> dict:
    """{attr: [(child, parent), ...] in row order} of kanon_taxonomy rows (attr, child, parent)."""
    edges: dict = {}
    for attr, child, parent in rows:
        edges.setdefault(attr, []).append((child, parent))
    return edges


_INDEXES: dict = {}  # (attr, edges as a tuple) -> TaxonomyIndex, most recent last
_INDEXES_KEPT = 64
_CACHES_LOCK = threading.Lock()  # runs of parallel statements use this module's caches at once


def _keep(cache: dict, key, value) -> None:
    """``cache[key] = value`` as its most recent entry, the oldest dropped beyond
    ``_INDEXES_KEPT`` (the index cache and the fingerprint memo)."""
    with _CACHES_LOCK:
        cache.pop(key, None)
        while len(cache) >= _INDEXES_KEPT:
            cache.pop(next(iter(cache)))
        cache[key] = value


def cached_index(attr: str, edges: list) -> TaxonomyIndex:
    """``build_index(attr, edges)``, kept per process for the same attr and the same edges (the
    rows just read, in order): a tree read again unchanged is validated and indexed once; a
    changed tree is a new key, so nothing stale is ever returned. The indexes are shared, hence
    never modified (``with_null_leaf`` makes a copy). At most ``_INDEXES_KEPT`` trees kept."""
    key = (attr, tuple(edges))
    index = _INDEXES.get(key)
    if index is None:
        index = dataclasses.replace(build_index(attr, edges), rows=key[1])
    _keep(_INDEXES, key, index)
    return index


def resolve_trees(con, columns, table=None, taxonomies=None) -> tuple[dict, dict]:
    """({QI: the attr ``resolve_tree_attr`` picks, or None}, {attr: validated index of each
    picked tree}) for the QIs ``columns`` of relation ``table``: one query reading the rows of
    every attr ``resolve_tree_attr`` could pick (each QI's named tree, ``'<t>.<c>'`` and ``'<c>'``,
    case-insensitively), instead of ``taxonomy_attrs`` and then ``read_indexes``. With a
    non-ASCII name among them (Python's and DuckDB's lower case differ there) it does just
    that. Raises as ``resolve_tree_attr`` does."""
    columns = list(columns)
    if not columns:
        return {}, {}
    rel = relation_name(table)
    wanted = sorted({name for c in columns for name in
                     ((taxonomies or {}).get(c), f"{rel}.{c}" if rel is not None else None, c)
                     if name is not None})
    if not all(name.isascii() for name in wanted):
        attrs = taxonomy_attrs(con)
        chosen = {c: resolve_tree_attr(con, c, table, taxonomies, attrs) for c in columns}
        return chosen, read_indexes(con, chosen.values())
    try:
        rows = con.execute(f"SELECT attr, child, parent FROM {TABLE} WHERE lower(attr) IN "
                           f"(SELECT lower(unnest(?))) ORDER BY rowid", [wanted]).fetchall()
    except duckdb.CatalogException:
        rows = []
    edges = _edges_by_attr(rows)
    # every attr matching a candidate (an ASCII name is matched case-insensitively alike by
    # DuckDB's lower() and Python's str.lower()): resolve_tree_attr sees the same matches
    chosen = {c: resolve_tree_attr(con, c, table, taxonomies, list(edges)) for c in columns}
    picked = sorted({a for a in chosen.values() if a is not None})
    return chosen, {a: cached_index(a, edges[a]) for a in picked}


# --------------------------------------------------------------------------- which tree a QI uses

def relation_name(table) -> str | None:
    """The name a relation's per-table trees are keyed by: the last identifier of
    'db.schema.t' (quotes removed), or the file name without directory and extensions for a
    path ('data/people.parquet' -> 'people') or a reader call (its first string argument);
    None for no name."""
    if not isinstance(table, str) or not table.strip():
        return None
    text = table.strip()
    if "(" in text:  # a reader call such as read_csv('dir/people.csv', delim = ';')
        import re
        m = re.search(r"'((?:[^']|'')*)'", text)
        if m is None:
            return None
        text = m.group(1).replace("''", "'")
    if "/" in text or "\\" in text or "*" in text or text.lower().endswith(_FILE_ENDINGS):
        base = os.path.basename(text.rstrip("/\\"))
        if any(ch in base for ch in "*?["):
            return None  # a glob names no single table
        return base.split(".")[0] or None
    return split_qualified(text)[-1] or None


_FILE_ENDINGS = (".parquet", ".csv", ".tsv", ".json", ".jsonl", ".ndjson", ".gz", ".zst", ".arrow")


def taxonomy_attrs(con) -> list:
    """Every distinct ``attr`` of kanon_taxonomy ([] without the table)."""
    try:
        return [r[0] for r in con.execute(
            f"SELECT DISTINCT attr FROM {TABLE} WHERE attr IS NOT NULL").fetchall()]
    except duckdb.CatalogException:
        return []


def _match(attrs, wanted: str):
    if wanted in attrs:
        return wanted
    low = [a for a in attrs if a.lower() == wanted.lower()]
    return low[0] if len(low) == 1 else None


def check_taxonomies_param(taxonomies, qi) -> dict:
    """Validate ``taxonomies`` (mapping QI -> attr, or None) against the QI list; returns a
    dict keyed by the QIs' stored names. Unknown QIs and non-string values are errors."""
    if taxonomies is None:
        return {}
    if isinstance(taxonomies, (list, tuple)):  # a MAP arriving as [(key, value)] pairs
        taxonomies = dict(taxonomies)
    if not isinstance(taxonomies, dict):
        raise InvalidParameterError(
            f"taxonomies must map QI names to kanon_taxonomy attr values, e.g. "
            f"taxonomies := {{'sex': 'sex_v2'}}; got {taxonomies!r}")
    lower = {q.lower(): q for q in qi}
    out = {}
    for key, attr in taxonomies.items():
        if not isinstance(key, str) or (key not in qi and key.lower() not in lower):
            raise InvalidParameterError(
                f"taxonomies names '{key}', which is not a quasi-identifier of this call "
                f"(qi: {', '.join(qi)})")
        if not isinstance(attr, str) or not attr:
            raise InvalidParameterError(
                f"taxonomies['{key}'] must be a kanon_taxonomy attr value (a string), got {attr!r}")
        out[key if key in qi else lower[key.lower()]] = attr
    return out


def resolve_tree_attr(con, column: str, table=None, taxonomies=None, attrs=None) -> str | None:
    """The ``attr`` of the tree QI ``column`` of relation ``table`` uses (order in the module
    docstring), or None. ``taxonomies``: the call's QI -> attr mapping (validated by
    check_taxonomies_param); ``attrs``: the known attr values (taxonomy_attrs), to save a query
    when resolving several QIs. Raises TaxonomyError when a named tree has no rows. O(#attrs)."""
    attrs = taxonomy_attrs(con) if attrs is None else attrs
    named = (taxonomies or {}).get(column)
    if named is not None:
        found = _match(attrs, named)
        if found is None:
            raise TaxonomyError(
                f"taxonomies names the tree '{named}' for '{column}', but kanon_taxonomy has no "
                f"rows with attr = '{named}'; build it (e.g. SELECT kanon_build_flat(tbl, "
                f"'{column}', attr := '{named}')) or fix the name")
        return found
    rel = relation_name(table)
    if rel is not None:
        found = _match(attrs, f"{rel}.{column}")
        if found is not None:
            return found
    return _match(attrs, column)


# One home of a tree's fingerprint: md5 over its (child, parent) rows in a canonical order (the
# rows' order and rowids do not count; every label and edge does; labels length-prefixed, so no
# two row sets give the same text). One query, O(rows of the trees asked for).
_FINGERPRINT = (
    "md5(string_agg(concat(length(child::VARCHAR), ':', child::VARCHAR, '|', "
    "coalesce(length(parent::VARCHAR) || ':' || parent::VARCHAR, '-')), ';' "
    "ORDER BY child::VARCHAR NULLS FIRST, parent::VARCHAR NULLS FIRST))")
_FINGERPRINT_SQL = (f"SELECT attr, {_FINGERPRINT} FROM {TABLE} "
                    f"WHERE attr IN (SELECT unnest(?::VARCHAR[])) GROUP BY attr")
# the same with the rows it was computed from, in the order a tree is read (``read_indexes``)
_FINGERPRINT_ROWS_SQL = (f"SELECT attr, {_FINGERPRINT}, list(child ORDER BY rowid), "
                         f"list(parent ORDER BY rowid) FROM {TABLE} "
                         f"WHERE attr IN (SELECT unnest(?::VARCHAR[])) GROUP BY attr")
_FINGERPRINTS: dict = {}  # (attr, rows as TaxonomyIndex.rows) -> fingerprint, most recent last


def tree_fingerprints(con, attrs, read=None) -> dict:
    """{attr: fingerprint (32 hex digits)} of the kanon_taxonomy trees ``attrs`` (exact attr
    values; an attr without rows, or no kanon_taxonomy table, is absent). A run records them
    (kanon_runs.qi_tree_hashes); recorded_tree_attrs compares them with the current ones.
    ``read``: {attr: the rows a run read for it (``TaxonomyIndex.rows``)}: a tree whose rows were
    fingerprinted before in this process (the same rows, kept with their fingerprint, at most
    ``_INDEXES_KEPT`` trees) costs no query; the others are fingerprinted in one query that also
    returns the rows it read, kept for the next run (a tree changed since the run read it gets
    the fingerprint of its rows now, as without ``read``)."""
    attrs = sorted({a for a in attrs if a is not None})
    read = read or {}
    found = {a: _FINGERPRINTS.get((a, read[a])) for a in attrs if read.get(a) is not None}
    found = {a: h for a, h in found.items() if h is not None}
    missing = [a for a in attrs if a not in found]
    if not missing:
        return found
    try:
        rows = con.execute(_FINGERPRINT_ROWS_SQL if read else _FINGERPRINT_SQL,
                           [missing]).fetchall()
    except duckdb.CatalogException:
        return found
    for attr, fingerprint, *edges in rows:
        found[attr] = fingerprint
        if edges:
            _keep(_FINGERPRINTS, (attr, tuple(zip(*edges))), fingerprint)
    return found


def recorded_tree_attrs(con, qi, qi_trees, source, qi_tree_hashes=None, run_id=None) -> dict:
    """QI -> tree attr of a kanon_runs row (its ``qi``, ``qi_trees``, ``source``,
    ``qi_tree_hashes``, ``run_id``): the trees the run used, or, for a run recorded before
    ``qi_trees`` existed, the trees resolve_tree_attr picks for its source now. QIs without a
    tree are absent. Raises TaxonomyError when a tree the run used is no longer in
    kanon_taxonomy, or its rows differ from those the run fingerprinted (its metrics, query
    answers and mapping would silently change: read against the implicit flat tree, or the
    edited one); a run recorded without fingerprints is checked for deleted trees only. One
    fingerprint query over the run's trees."""
    qi = list(qi or [])
    if qi_trees is not None:
        trees = {c: a for c, a in zip(qi, qi_trees) if a is not None}
        _check_trees(con, qi, qi_trees, qi_tree_hashes, run_id)
        return trees
    attrs = taxonomy_attrs(con)
    return {c: a for c in qi if (a := resolve_tree_attr(con, c, source, None, attrs)) is not None}


def _check_trees(con, qi, qi_trees, qi_tree_hashes, run_id) -> None:
    used = [a for a in qi_trees if a is not None]
    if not used:
        return
    recorded = {a: h for a, h in zip(qi_trees, qi_tree_hashes or []) if a is not None and h}
    now = tree_fingerprints(con, used)
    run = f"run {run_id}" if run_id is not None else "the run"
    for c, a in zip(qi, qi_trees):
        if a is None:
            continue
        if a not in now:
            raise TaxonomyError(
                f"the tree '{a}' (of QI '{c}') that {run} used is no longer in kanon_taxonomy; "
                f"its metrics, query answers and mapping need it: restore the tree (the same "
                f"rows under attr '{a}'), or anonymize again")
        if a in recorded and now[a] != recorded[a]:
            raise TaxonomyError(
                f"the tree '{a}' (of QI '{c}') changed in kanon_taxonomy since {run} recorded it; "
                f"its metrics, query answers and mapping would change: restore the tree, or "
                f"build the revised tree under a new attr (e.g. '{a}_v2') and anonymize again")


def _run_row(con, run_id) -> dict | None:
    """The kanon_runs row of ``run_id`` as {column: value} (whatever columns the table of its
    version has), or None: no such run, or no kanon_runs table."""
    try:
        cur = con.execute("SELECT * FROM kanon_runs WHERE run_id = ?", [run_id])
        rows = cur.fetchall()
    except duckdb.Error:
        return None
    return dict(zip([d[0] for d in cur.description], rows[0])) if rows else None


def _recorded_of_row(con, row: dict) -> dict:
    return recorded_tree_attrs(con, row.get("qi"), row.get("qi_trees"), row.get("source"),
                               row.get("qi_tree_hashes"), row.get("run_id"))


def run_tree_attrs(con, run_id) -> dict | None:
    """QI -> tree attr of run ``run_id`` of kanon_runs (None for an unknown run); raises as
    recorded_tree_attrs does."""
    row = _run_row(con, run_id)
    return _recorded_of_row(con, row) if row is not None else None


def column_tree_attr(con, table: str, column: str) -> str | None:
    """The tree attr of column ``column`` of relation ``table`` as the SQL macros see it (the
    ``__kanon_tree_attr`` macro): for a QI of a k_anonymize output, the tree its run recorded;
    otherwise resolve_tree_attr for the table (for an output's other columns, for the run's
    source). None: no tree."""
    source = table
    try:
        # a cursor's TEMP views are the caller's registered objects it was handed
        _, quoted = resolve_table(con, table, include_views=True, allow_temp=True)
        cols = [c for c, _ in table_columns(con, quoted)]
        run = (con.execute(f"SELECT max(kanon_run) FROM {quoted}").fetchall()[0][0]
               if "kanon_run" in cols else None)
    except duckdb.Error:
        run = None
    except InvalidParameterError:
        run = None
    row = _run_row(con, run) if run is not None else None
    if row is not None:
        source = row.get("source")
        lower = {q.lower(): q for q in (row.get("qi") or [])}
        if column.lower() in lower:
            return _recorded_of_row(con, row).get(lower[column.lower()])
    return resolve_tree_attr(con, column, source)


def read_tree_of(con, column: str, table=None, taxonomies=None, attrs=None):
    """(attr, TaxonomyIndex) of the tree QI ``column`` of ``table`` uses, or (None, None)."""
    attr = resolve_tree_attr(con, column, table, taxonomies, attrs)
    return (attr, read_index(con, attr)) if attr is not None else (None, None)


def validate_coverage(index: TaxonomyIndex, values_with_counts) -> None:
    """Raise TaxonomyError if a data value is missing from the tree or is an internal node.

    ``values_with_counts``: (value, row count) pairs; NULL values are skipped (NULL policy).
    The message lists the first 10 offenders by count and how to fix the tree.
    """
    missing, internal = [], []
    for v, c in values_with_counts:
        if v is None or v in index.leaf_of_label:
            continue
        (internal if v in index.node_of_label else missing).append((str(v), int(c)))
    if not missing and not internal:
        return
    attr, parts = index.attr, []

    def listing(pairs):
        pairs.sort(key=lambda vc: (-vc[1], vc[0]))
        shown = ", ".join(f"'{v}' ({c} row{'s' if c != 1 else ''})" for v, c in pairs[:10])
        return shown + (f" and {len(pairs) - 10} more" if len(pairs) > 10 else "")

    if missing:
        parts.append(
            f"{len(missing)} value(s) of '{attr}' are missing from its taxonomy: {listing(missing)}. "
            f"Add them with INSERT INTO kanon_taxonomy VALUES ('{attr}', 'value', 'parent') "
            f"(parent: an existing node such as '{index.labels[0]}'), or rebuild the tree")
    if internal:
        parts.append(
            f"{len(internal)} value(s) of '{attr}' are internal nodes of its taxonomy, not leaves: "
            f"{listing(internal)}. Data values must be leaves: rename the internal node or move "
            f"the value under it as a leaf")
    raise TaxonomyError("; ".join(parts))


# --------------------------------------------------------------------------- reading a column

def _column(con, table: str, column: str):
    _parts, qtable = resolve_table(con, table)
    col = resolve_column(con, qtable, column)
    ctype = dict(table_columns(con, qtable))[col]
    return qtable, col, ctype


def column_value_counts(con, table: str, column: str) -> list:
    """[(CAST(value AS VARCHAR), rows)] of a column, NULLs excluded, ordered by value."""
    qtable, col, _ = _column(con, table, column)
    q = quote_ident(col)
    return [tuple(r) for r in con.execute(
        f"SELECT CAST({q} AS VARCHAR), count(*) FROM {qtable} WHERE {q} IS NOT NULL "
        f"GROUP BY {q} ORDER BY {q}").fetchall()]


def check_column(con, table: str, column: str, attr: str | None = None) -> TaxonomyIndex:
    """Validate that every value of ``table.column`` is a leaf of the tree of ``attr`` (default:
    the tree resolve_tree_attr picks for that table's column)."""
    qtable, col, _ = _column(con, table, column)
    attr = attr or resolve_tree_attr(con, col, table) or col
    index = read_index(con, attr)
    if index is None:
        raise TaxonomyError(
            f"no taxonomy for '{attr}' in kanon_taxonomy; build one (e.g. SELECT "
            f"kanon_build_flat('{table}', '{col}')) or INSERT its edges")
    validate_coverage(index, column_value_counts(con, table, column))
    return index


def build_interval_taxonomy(con, table: str, column: str, attr: str | None = None,
                            widths=None, quantiles=None) -> int:
    """Nested interval tree of a numeric column (builders.interval_edges); leaves are the
    values as DuckDB casts them to VARCHAR."""
    qtable, col, ctype = _column(con, table, column)
    if ctype.split("(")[0].upper() not in _NUMERIC:
        raise InvalidParameterError(
            f"column '{col}' has type {ctype}; interval taxonomies need a numeric column "
            f"(use kanon_build_flat or kanon_build_masking for text)")
    q = quote_ident(col)
    # grouped by the label too: 0.0 and -0.0 are one value but two labels (each its own leaf)
    rows = con.execute(
        f"SELECT {q}, CAST({q} AS VARCHAR) AS lab, count(*) FROM {qtable} WHERE {q} IS NOT NULL "
        f"GROUP BY {q}, lab ORDER BY {q}, lab").fetchall()
    if not rows:
        raise TaxonomyError(f"column '{col}' has no non-NULL values to build a taxonomy from")
    if widths is not None and len(widths) == 0:
        widths = None
    edges = builders.interval_edges([r[0] for r in rows], widths, quantiles=quantiles,
                                    labels=[r[1] for r in rows], counts=[r[2] for r in rows],
                                    attr=attr or col)
    return insert_edges(con, attr or col, edges)


def _distinct_strings(con, table, column):
    qtable, col, _ = _column(con, table, column)
    q = quote_ident(col)
    vals = [r[0] for r in con.execute(
        f"SELECT DISTINCT CAST({q} AS VARCHAR) AS v FROM {qtable} WHERE {q} IS NOT NULL "
        f"ORDER BY v").fetchall()]
    if not vals:
        raise TaxonomyError(f"column '{col}' has no non-NULL values to build a taxonomy from")
    return col, vals


def build_masking_taxonomy(con, table: str, column: str, attr: str | None = None,
                           step: int = 1) -> int:
    """Masking tree of a code column ('80015' -> '8001*' -> ... -> '*****')."""
    col, vals = _distinct_strings(con, table, column)
    return insert_edges(con, attr or col, builders.masking_edges(vals, step, attr=attr or col))


def build_date_taxonomy(con, table: str, column: str, attr: str | None = None) -> int:
    """Date tree of a DATE / TIMESTAMP (or ISO text) column: day -> month -> year -> '*'."""
    col, vals = _distinct_strings(con, table, column)
    return insert_edges(con, attr or col, builders.date_edges(vals, attr=attr or col))


def build_flat_taxonomy(con, table: str, column: str, attr: str | None = None) -> int:
    """Flat tree: every distinct value (sorted) directly under '*'."""
    col, vals = _distinct_strings(con, table, column)
    return insert_edges(con, attr or col, builders.flat_edges(vals, attr=attr or col))


def read_file_text(con, path) -> str:
    """Text of the file ``path``, read through DuckDB (``read_text``) so the connection's settings
    apply: with ``SET enable_external_access = false`` nothing is read."""
    try:
        rows = con.execute("SELECT content FROM read_text(?)", [str(path)]).fetchall()
    except duckdb.PermissionException as exc:
        raise TaxonomyError(f"cannot read '{path}': {exc} (file access is disabled on this "
                            f"database; insert the tree rows into kanon_taxonomy instead)") from None
    except duckdb.IOException:
        raise TaxonomyError(f"ARX hierarchy file '{path}' does not exist or cannot be read") from None
    except duckdb.InvalidInputException as exc:
        raise TaxonomyError(f"ARX hierarchy file '{path}' is not UTF-8 text: {exc}") from None
    if not rows:
        raise TaxonomyError(f"ARX hierarchy file '{path}' does not exist or cannot be read")
    if len(rows) != 1:
        raise TaxonomyError(f"ARX hierarchy path '{path}' names {len(rows)} files; name one file")
    return rows[0][0].removeprefix("\ufeff")


def load_arx_taxonomy(con, attr: str, path, delimiter: str = ";") -> int:
    """Load an ARX hierarchy CSV file (read through DuckDB, see read_file_text) as the tree of
    ``attr``."""
    text = read_file_text(con, path)
    if "\n" not in text:
        text += "\n"  # a one-line file is still a file, not a path, for arx_hierarchy_edges
    return insert_edges(con, attr, builders.arx_hierarchy_edges(text, delimiter, attr=attr))
