"""Databases opened read-only (``duckdb.connect(path, read_only=True)``).

One rule: on a read-only database kanon-duckdb writes nothing into the file. Registration puts
its macros in the connection's temp schema (``registration``) and creates no ``kanon_runs`` /
``kanon_taxonomy``; everything that only reads (the metrics, the privacy checks, query_error,
kanon_mapping, ...) works on the file's tables; what must write into the database stops with
:class:`ReadOnlyDatabaseError` naming the fix: the taxonomy builders (writing ``kanon_taxonomy``)
before any work (:func:`require_writable`), k_anonymize when its run record in ``kanon_runs``
fails to be written (:func:`read_only_error`: the check costs a catalog query, ~0.3 ms, which
the common writable case then never pays; nothing is written either way).
"""
from __future__ import annotations

from .errors import ReadOnlyDatabaseError


def is_read_only(con) -> bool:
    """True when ``con``'s current database is attached read-only (one catalog row)."""
    rows = con.execute("SELECT readonly FROM duckdb_databases() "
                       "WHERE database_name = current_database()").fetchall()
    return bool(rows and rows[0][0])


def _error(what: str, table: str) -> ReadOnlyDatabaseError:
    return ReadOnlyDatabaseError(
        f"the database is opened read-only; {what} in {table}: open it read-write, or ATTACH "
        f"it read-only into a writable connection (ATTACH 'file.duckdb' AS pub (READ_ONLY)) "
        f"and run it from there")


def require_writable(con, what: str, table: str) -> None:
    """ReadOnlyDatabaseError unless ``con``'s current database is writable. ``what`` says what
    writes (``'k_anonymize records each run'``), ``table`` where (``'kanon_runs'``)."""
    if is_read_only(con):
        raise _error(what, table)


def read_only_error(con, what: str, table: str) -> ReadOnlyDatabaseError | None:
    """After a write into ``table`` failed: the ReadOnlyDatabaseError to raise instead when
    ``con``'s current database is read-only, else None (the original error stands)."""
    try:
        return _error(what, table) if is_read_only(con) else None
    except Exception:  # the connection itself is unusable: keep the write's own error
        return None
