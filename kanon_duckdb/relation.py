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
connection (``con.register('name', df)``) are bridged: ``registered.py`` registers the same
Python object on the cursor. TEMP tables and tables created in a still-open transaction are a
DuckDB limitation for the SQL macros, each step verified on DuckDB 2.0:

- a Python UDF cannot run anything on the connection executing its query ("Resource In Use:
  code running inside a query cannot use that query's connection"), so it cannot read them;
- a cursor is another connection, with its own TEMP catalog and its own transaction;
- the SQL that ``__kanon_sql`` returns is bound in the caller's connection and could read the
  rows, but its columns must be known when it is written, at bind time, and nothing can carry
  a TEMP table's columns there: a table function's arguments cannot contain subqueries
  ("Table function cannot contain subqueries") nor columns of a lateral join ("query does not
  support lateral join column parameters", so not even ``typeof(t.c)``), and DuckDB's Python
  API has no table functions.

The error says so and names the fix: the Python API ``kanon_duckdb.anonymize('name', con=con)``
reads through the caller's own connection and takes them (``allow_temp=True`` is for that
caller side), or ``CREATE TABLE ... AS FROM tmp`` (and COMMIT) first.
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import UnknownObjectError
from .sqlutil import resolve_table, table_columns

# Table functions whose string form is accepted (file readers: they read, never write).
READERS = ("read_parquet", "parquet_scan", "read_csv", "read_csv_auto", "read_json",
           "read_json_auto", "read_ndjson", "read_ndjson_auto", "read_json_objects",
           "read_text", "read_blob", "read_xlsx", "delta_scan", "iceberg_scan")

NOT_VISIBLE = ("TEMP tables and tables created in a transaction that is still open are not "
               "visible to k_anonymize in SQL (it reads through its own cursor, a separate "
               "connection; DuckDB lets no code inside a query use the query's own connection), "
               "nor are objects registered with con.register before kanon_duckdb was imported. "
               "Use the Python API kanon_duckdb.anonymize('name', ..., con=con), which reads "
               "through your connection, or create a regular table and COMMIT it first")


@dataclass(frozen=True)
class Source:
    """A readable relation: ``name`` as the user gave it, ``sql`` to put after FROM,
    ``columns`` [(name, DuckDB type string)] in the relation's order, ``kind``
    ('table', 'view', 'file' or 'function'), ``parts`` (database, schema, name) of a catalog
    table or view (None for a file or a function)."""
    name: str
    sql: str
    columns: list
    kind: str
    parts: tuple | None = None

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
        parts, quoted = resolve_table(con, name, include_views=True, allow_temp=allow_temp)
        kind = "table"
    except UnknownObjectError as exc:
        if "ambiguous" in str(exc) or "is a TEMP table" in str(exc):
            raise
        quoted, kind, parts = _file_or_reader(name), None, None
        if quoted is None:
            raise UnknownObjectError(
                f"table '{name}' does not exist as a table, view or file k_anonymize can see. "
                f"{NOT_VISIBLE}."
            ) from None
    try:
        columns = table_columns(con, quoted)
    except Exception as exc:  # a file that does not exist, a reader error
        if kind is None:
            raise UnknownObjectError(
                f"'{name}' is not a table or view, and DuckDB cannot read it as a file: "
                f"{str(exc).splitlines()[0]}. {NOT_VISIBLE}.") from None
        raise
    return Source(name, quoted, columns, kind or ("function" if quoted[0] != "'" else "file"),
                  parts)


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


