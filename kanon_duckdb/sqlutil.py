"""Safe SQL identifiers: quoting and catalog look-ups (names are never spliced into SQL raw).

- ``quote_ident(name)``: a DuckDB double-quoted identifier.
- ``resolve_table(con, name)``: look ``name`` ('tbl', 'schema.tbl' or 'db.schema.tbl'; parts may be
  double-quoted) up in ``duckdb_tables()`` and return ``((db, schema, table), quoted)`` where
  ``quoted`` is the fully quoted ``"db"."schema"."tbl"``; ``quoted_table`` returns only the latter.
  TEMP tables are refused: kanon-duckdb's UDFs read through a cursor, which cannot see them.
- ``resolve_column(con, qualified_table, column)``: the column's name as stored (case-insensitive
  match, as DuckDB binds identifiers) or UnknownObjectError listing the table's columns.
"""
from __future__ import annotations

from .errors import UnknownObjectError

_TEMP_NOTE = ("TEMP tables and tables created in an uncommitted transaction are not visible to "
              "kanon-duckdb")


def quote_ident(name: str) -> str:
    """``name`` as a double-quoted DuckDB identifier (embedded quotes doubled)."""
    if not isinstance(name, str):
        raise TypeError(f"identifier must be a string, got {type(name).__name__}")
    return '"' + name.replace('"', '""') + '"'


def split_qualified(name: str) -> list:
    """Split 'a.b."c.d"' into ['a', 'b', 'c.d'] (double quotes group, "" escapes a quote)."""
    parts, cur, i, quoted = [], [], 0, False
    while i < len(name):
        ch = name[i]
        if quoted:
            if ch == '"':
                if name[i + 1:i + 2] == '"':
                    cur.append('"')
                    i += 1
                else:
                    quoted = False
            else:
                cur.append(ch)
        elif ch == '"':
            quoted = True
        elif ch == ".":
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
        i += 1
    if quoted:
        return [name]  # unbalanced quote: treat the whole text as one name
    parts.append("".join(cur))
    return parts


def _rows(con, sql, params=()):
    return con.execute(sql, list(params)).fetchall()


def _pick(matches, name, cur_db, cur_schema):
    """Choose among (db, schema, table, temporary) matches: exact case, then current db/schema."""
    if len(matches) > 1:
        exact = [m for m in matches if m[2] == name[-1]]
        matches = exact or matches
    if len(matches) > 1:
        here = [m for m in matches if m[0] == cur_db and m[1] == cur_schema]
        matches = here or [m for m in matches if m[0] == cur_db] or matches
    return matches


# One catalog statement per look-up: every table and view with the current database and schema
# (for the tie-break), each table's row estimate, and one row per database (schema NULL: its
# type and whether insertion order is preserved), from which ``catalog_entry`` takes
# ``ordered_rows`` (None for a view, a table of an attached SQLite/Postgres/... database, or when
# insertion order is not preserved). No join: the statement plans and runs in about half the
# time of the join of duckdb_tables() with duckdb_databases().
_TABLES = ("SELECT database_name, schema_name, table_name, temporary, estimated_size, "
           "current_database(), current_schema() FROM duckdb_tables()")
_VIEWS = (" UNION ALL SELECT database_name, schema_name, view_name, temporary, NULL, "
          "current_database(), current_schema() FROM duckdb_views() WHERE NOT internal")
_DATABASES = (" UNION ALL SELECT database_name, NULL, NULL, NULL, NULL, type, "
              "current_setting('preserve_insertion_order')::VARCHAR FROM duckdb_databases()")


def resolve_table(con, name: str, include_views: bool = False, allow_temp: bool = False) -> tuple:
    """``((db, schema, table), quoted)`` of an existing non-TEMP table (``allow_temp``: TEMP
    ones too, for a caller reading through its own connection), else UnknownObjectError."""
    parts, quoted, _rows_estimate = catalog_entry(con, name, include_views, allow_temp)
    return parts, quoted


def catalog_entry(con, name: str, include_views: bool = False, allow_temp: bool = False) -> tuple:
    """``resolve_table``'s ``(parts, quoted)`` plus ``ordered_rows``: the catalog's row estimate
    of a table of a DuckDB database when ``preserve_insertion_order`` is on (a scan then returns
    its rows in one order), else None. One catalog statement."""
    if not isinstance(name, str) or not name.strip():
        raise UnknownObjectError(f"table name must be a non-empty string, got {name!r}")
    rows = _rows(con, _TABLES + (_VIEWS if include_views else "") + _DATABASES)
    in_order = {r[0] for r in rows if r[1] is None and r[5] == "duckdb" and r[6] == "true"}
    rows = [r for r in rows if r[1] is not None]
    catalog = [r[:4] for r in rows]
    ordered_rows = {r[:3]: r[4] if r[0] in in_order else None for r in rows}
    cur_db, cur_schema = rows[0][5:7] if rows else (None, None)
    parsed = split_qualified(name)
    # A table literally named 'a.b' wins over schema 'a', table 'b'.
    whole = [m for m in catalog if m[2].lower() == name.lower()]
    # 'a.b' is schema a, table b; failing that (DuckDB's own rule) database a, its schema main
    via_db = [(parsed[0], "main", parsed[1])] if len(parsed) == 2 else []
    for cand in ([name] if whole else []) + [tuple(parsed)] + via_db:
        parts = [cand] if isinstance(cand, str) else list(cand)
        if len(parts) > 3:
            continue
        want = [None] * (3 - len(parts)) + [p.lower() for p in parts]
        found = [m for m in catalog
                 if all(w is None or w == str(v).lower() for w, v in zip(want, m[:3]))]
        found = _pick(found, parts, cur_db, cur_schema)
        real = [m for m in found if allow_temp or not m[3]]
        if len(real) > 1:
            shown = ", ".join(".".join(m[:3]) for m in real[:5])
            raise UnknownObjectError(
                f"table name '{name}' is ambiguous ({shown}); qualify it as 'schema.table'")
        if real:
            parts = tuple(real[0][:3])
            return parts, ".".join(quote_ident(x) for x in parts), ordered_rows[parts]
        if found:
            raise UnknownObjectError(
                f"table '{name}' is a TEMP table; {_TEMP_NOTE}. "
                f"Create it as a regular table (CREATE TABLE ... AS ...)")
    raise UnknownObjectError(f"table '{name}' does not exist ({_TEMP_NOTE})")


def quoted_table(con, name: str) -> str:
    """The fully quoted ``"db"."schema"."tbl"`` of an existing non-TEMP table."""
    return resolve_table(con, name)[1]


def table_columns(con, qualified_table: str) -> list:
    """[(column_name, duckdb_type_string)] of a table given by its quoted, qualified name."""
    rel = con.sql(f"SELECT * FROM {qualified_table} LIMIT 0")
    return [(c, str(t)) for c, t in zip(rel.columns, rel.types)]


def resolve_column(con, qualified_table: str, column: str) -> str:
    """The stored name of ``column`` in the table (case-insensitive), or UnknownObjectError."""
    cols = [c for c, _ in table_columns(con, qualified_table)]
    if column in cols:
        return column
    low = [c for c in cols if c.lower() == str(column).lower()]
    if len(low) == 1:
        return low[0]
    shown = ", ".join(cols[:30]) + (", ..." if len(cols) > 30 else "")
    raise UnknownObjectError(
        f"column '{column}' does not exist in table {qualified_table} (columns: {shown})")
