"""What ``k_anonymize(R, ...)`` reads: a name resolved to a SQL source and its columns.

``resolve_source(con, name)`` accepts, in this order:

1. a table or view of the catalog: ``'t'``, ``'schema.t'``, ``'db.schema.t'`` of an ATTACHed
   database (parts may be double-quoted; a name matches case-insensitively, like DuckDB);
2. a file path or glob DuckDB reads (``'x.parquet'``, ``'dir/*.csv'``, ``'s3://...'``), read as
   ``FROM '<path>'`` (DuckDB's replacement scan picks the reader from the extension);
3. a call of one of DuckDB's file readers with constant arguments (``"read_csv('x.csv',
   delim=';')"``, ``"read_parquet(['a.parquet', 'b.parquet'])"``): the string form of a table
   function, checked with sqlglot to be exactly one such call (nothing else runs).

The SQL layer reads through a cursor of the same database (``__kanon_run`` runs inside the
caller's query, which cannot use its own connection). Objects registered on the caller's
connection or on a cursor of it (``con.register('name', df)``) are bridged: ``registered.py``
registers the same Python object on the reader cursor. Relations only the caller's connection
sees (TEMP tables and views, tables created in its still-open transaction, objects registered
before ``kanon_duckdb`` was imported) fail here; ``k_anonymize`` then reads them in the caller's
own query (``caller_read.py``), and so do the metric and check macros (``caller_macros.py``: the
relation is handed to a fresh cursor, which runs the same macro; ``query_error`` runs its raw
query in the caller's query and its estimate on such a cursor). Each reason, checked on DuckDB
2.0 (``duckdb`` 2.0.0):

- a Python UDF cannot run anything on the connection executing its query::

      con.create_function('f', lambda x: con.sql('SELECT 1').fetchall()[0][0],
                          [duckdb.sqltype('INTEGER')], duckdb.sqltype('INTEGER'))
      con.sql('SELECT f(1)')   # Resource In Use Error: code running inside a query cannot
                               # use that query's connection; use a separate connection ...

- a cursor is another connection, with its own TEMP catalog (duckdb/duckdb#11018)::

      con.sql('CREATE TEMP TABLE t AS SELECT 7 AS kanon_run')
      con.cursor().sql('FROM t')   # Catalog Error: Table with name t does not exist!

- the metric and check macros need, at bind time, the columns that publish each QI, which the
  run recorded in ``kanon_runs`` for the run id stored in the table's ``kanon_run`` column:
  data, and nothing can carry data of the caller's table to bind time. A table function's
  arguments and a ``COLUMNS`` lambda refuse subqueries, and ``query()`` refuses columns of a
  lateral join::

      SELECT * FROM query('SELECT ' || (SELECT max(kanon_run) FROM t))
          -- Binder Error: Table function cannot contain subqueries
      SELECT COLUMNS(lambda c: c IN (SELECT 'x')) FROM t
          -- Binder Error: Table function cannot contain subqueries
      SELECT * FROM t, query('SELECT ' || t.kanon_run)
          -- Binder Error: Table function "query" does not support lateral join column
          --   parameters - cannot use column "t.kanon_run" in this context.

  (``k_anonymize`` needs only the column types at bind time, and DuckDB 2.0's binder derives
  the output shape from them through macro overloads on argument types: caller_read.py. The
  metric and check macros have a fixed result type: their value is computed at run time on a
  cursor the rows are handed to, caller_macros.py. ``query_error``'s output columns are the
  query's group keys: it types them, and its estimate, by the raw query alone, which the
  caller's binder sees, rewrite/compare.py.)
- an object registered before ``import kanon_duckdb`` was registered by DuckDB's own
  ``register``, which ``registered.py`` had not wrapped yet, and DuckDB's Python API cannot list
  a connection's registered objects, so nothing can hand it to the cursor.

The error (``NOT_VISIBLE``, now only met by the taxonomy builders and ``kanon_metrics(t)`` with
``t`` from a column) names the fixes: register the object again after the import; for a TEMP or
uncommitted table, register its rows as Arrow or ``CREATE TABLE ... AS FROM tmp`` (and COMMIT)
(``allow_temp=True`` is for a caller-side reader).
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import UnknownObjectError
from .sqlutil import catalog_entry, quote_ident, split_qualified, table_columns

# Table functions whose string form is accepted (file readers: they read, never write).
READERS = ("read_parquet", "parquet_scan", "read_csv", "read_csv_auto", "read_json",
           "read_json_auto", "read_ndjson", "read_ndjson_auto", "read_json_objects",
           "read_text", "read_blob", "read_xlsx", "delta_scan", "iceberg_scan")

NOT_VISIBLE = ("TEMP tables and views, tables created in a transaction that is still open, and "
               "objects registered with con.register before kanon_duckdb was imported are seen "
               "by your connection only, not by the cursor this function reads through "
               "(k_anonymize and the metric and check macros given a constant name read them "
               "in your own query, see kanon_duckdb/relation.py). "
               "Fix: register an object again "
               "after importing kanon_duckdb, con.register('x', obj); for a TEMP or uncommitted "
               "table x, con.register('x_arrow', con.sql('FROM x').to_arrow_table()) and pass "
               "'x_arrow', or CREATE TABLE ... AS FROM x (and COMMIT)")


@dataclass(frozen=True)
class Source:
    """A readable relation: ``name`` as the user gave it, ``sql`` to put after FROM,
    ``columns`` [(name, DuckDB type string)] in the relation's order, ``kind``
    ('table', 'view', 'file' or 'function'), ``parts`` (database, schema, name) of a catalog
    table or view (None for a file or a function), ``ordered_rows`` the catalog's row estimate
    of a table of a DuckDB database read with insertion order preserved (a scan returns its
    rows in one order), else None (``sqlutil.catalog_entry``)."""
    name: str
    sql: str
    columns: list
    kind: str
    parts: tuple | None = None
    ordered_rows: int | None = None

    def __str__(self) -> str:  # error messages name the relation as the user gave it
        return self.name


def resolve_source(con, name, allow_temp: bool = False) -> Source:
    """Resolve ``name`` (see the module docstring) through ``con``; UnknownObjectError if none.
    A ``Source`` (already resolved, e.g. by ``udfs.anonymize.reader_source``) is returned as is."""
    if isinstance(name, Source):
        return name
    if not isinstance(name, str) or not name.strip():
        raise UnknownObjectError(f"the relation to anonymize must be a non-empty name, got {name!r}")
    try:
        parts, quoted, ordered_rows = catalog_entry(con, name, include_views=True,
                                                    allow_temp=allow_temp)
        kind = "table"
    except UnknownObjectError as exc:
        if "ambiguous" in str(exc) or "is a TEMP table" in str(exc):
            raise
        quoted, kind, parts, ordered_rows = _file_or_reader(name), None, None, None
        if quoted is None:
            _refuse_query_text(name)
            raise UnknownObjectError(
                f"table '{name}' does not exist as a table, view or file kanon-duckdb can see. "
                f"{NOT_VISIBLE}."
            ) from None
    try:
        columns = table_columns(con, quoted)
    except Exception as exc:  # a file that does not exist, a reader error
        if kind is None:
            _refuse_query_text(name)
            raise UnknownObjectError(
                f"'{name}' is not a table or view, and DuckDB cannot read it as a file: "
                f"{str(exc).splitlines()[0]}. {NOT_VISIBLE}.") from None
        raise
    return Source(name, quoted, columns, kind or ("function" if quoted[0] != "'" else "file"),
                  parts, ordered_rows)


_QUERY_STARTS = ("select", "with", "from", "values", "table", "pivot", "unpivot", "summarize",
                 "describe", "show")


def _is_query_text(name: str) -> bool:
    """True when ``name`` (neither a catalog entry nor a readable file) reads as a query: it starts
    with a query keyword, or is a parenthesized one (``(SELECT ...)``). O(len(name))."""
    text = name.strip().lstrip("(").lstrip()
    first = text.split(None, 1)[0].lower() if text else ""
    return first in _QUERY_STARTS and len(text.split(None, 1)) > 1


def _refuse_query_text(name: str) -> None:
    """Raise the error for query text passed where a relation name belongs (else nothing)."""
    if _is_query_text(name):
        raise UnknownObjectError(
            f"'{name}' is a query, not the name of a relation: kanon-duckdb reads a table, view, "
            f"file or read_* call by name. Make the query a view first: CREATE TEMP VIEW v AS "
            f"{name.strip()}; then pass 'v'")


def _file_or_reader(name: str) -> str | None:
    """``'<path>'`` for a path-like name, the call itself for a reader call, else None."""
    text = name.strip()
    if "(" in text:
        return _reader_call(text)
    if any(ch in text for ch in "/\\*?") or "." in text.rsplit("/", 1)[-1]:
        return "'" + text.replace("'", "''") + "'"
    return None


def _reader_call(text: str) -> str | None:
    """``text`` when it is exactly one call of a READERS function with literal arguments."""
    import sqlglot
    from sqlglot import exp
    try:
        tree = sqlglot.parse_one(f"SELECT * FROM {text}", read="duckdb")
    except sqlglot.errors.ParseError:
        return None
    frm = tree.args.get("from") or tree.args.get("from_")
    if frm is None or len(tree.expressions) != 1 or any(
            tree.args.get(a) for a in ("joins", "where", "group", "with", "limit")):
        return None
    src = frm.this
    func = src.this if isinstance(src, exp.Table) else src
    if not isinstance(func, exp.Func):
        return None
    fname = (func.name if isinstance(func, exp.Anonymous) else func.sql_name()).lower()
    if fname not in READERS:
        return None
    for node in func.walk():
        if node is func:
            continue
        if isinstance(node, exp.Column) and isinstance(node.parent, (exp.EQ, exp.PropertyEQ)) \
                and node is node.parent.this and node.parent.parent is func:
            continue  # a named argument: header = true
        if isinstance(node, (exp.Column, exp.Subquery, exp.Select, exp.Star)) or (
                isinstance(node, exp.Func) and not isinstance(node, (exp.Array, exp.Struct,
                                                                     exp.PropertyEQ, exp.EQ))):
            return None
    return text




def shadow_check(source) -> tuple | None:
    """(schema, name, message) for ``__kanon_temp_check`` (sql/00_shadow.sql) when the catalog
    table or view ``source`` (a Source, as the reader cursor resolved it) is named with one or
    two parts, so a TEMP table or view of the caller named alike would shadow it in the caller's
    query (DuckDB searches ``temp.<schema>`` first, also for ``main.t``); schema and name are
    lowercased (DuckDB matches them case-insensitively), the message names both fixes. None when
    nothing can shadow it (a file, a reader call, a three-part name, an object read as
    registered). O(1)."""
    if source.kind != "table" or source.parts is None:
        return None
    parts = split_qualified(source.name.strip())
    if len(parts) > 2 or source.parts[0].lower() == "temp":
        return None
    schema = parts[0] if len(parts) == 2 else "main"
    regular = ".".join(quote_ident(p) for p in source.parts)
    temp = f"temp.{quote_ident(schema)}.{quote_ident(parts[-1])}"
    message = (f"'{source.name}' names a TEMP table or view of your connection, which shadows the "
               f"table {regular}: DuckDB reads the TEMP one, while kanon-duckdb's reader (a "
               f"cursor: relation.py) sees only {regular}, so nothing was read. Fix: pass "
               f"'{regular}' to read the regular table; pass '{temp}' to read the TEMP one "
               f"(k_anonymize and the metric and check macros read it in your own query)")
    return schema.lower(), parts[-1].lower(), message
