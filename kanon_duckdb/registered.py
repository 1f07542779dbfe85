"""Python objects registered on a connection, made readable by the SQL macros' reader cursors.

``con.register('people', df)`` (a pandas/polars DataFrame, an Arrow Table or Dataset...) makes a
view that only ``con`` sees: DuckDB keeps it in that connection's temporary catalog. The UDFs
behind ``k_anonymize`` read through a cursor of the same database (code running inside a query
cannot use that query's connection: DuckDB refuses with "Resource In Use"), and a cursor is a
separate connection with its own temporary catalog, so by itself it cannot see the object.

This module wraps ``DuckDBPyConnection.register`` / ``unregister`` / ``close`` once, at class
level (as ``interrupt`` wraps ``interrupt``), to remember ``{connection key: {name: object}}``
(an entry lives until ``unregister``, ``close`` or the connection's collection). The key is a
process-wide counter, not DuckDB's ``current_connection_id()``: that id is unique only within one
database (two ``duckdb.connect()`` of one process both get 2), so keying by it handed one
database's objects to another's connection. Registering sets ``SET VARIABLE __kanon_conn_id =
<key>`` on the connection or cursor; the macros pass ``getvariable('__kanon_conn_id')`` (folded at
bind time in the caller's connection, allowed inside COLUMNS lambdas; NULL where nothing was
registered) to their UDFs, and :func:`expose` registers the same Python object under the same name on the reader cursor:
both reads (the algorithm's, through the cursor, and the output's, in the caller's query) see the
same data. Cost: one ``SET VARIABLE`` per connection, on its first register.

Objects registered before ``kanon_duckdb`` was imported are not known (DuckDB's Python API cannot
list a connection's registered objects): ``k_anonymize`` reads them in the caller's own query
(``caller_read.py``), as it reads TEMP tables; the other macros refuse them with an error
naming the fix (``relation.NOT_VISIBLE``). A RecordBatchReader can be read once only, so it is
refused (register ``reader.read_all()`` instead).
"""
from __future__ import annotations

import itertools
import threading
import weakref

import duckdb

from .errors import InvalidParameterError

_lock = threading.RLock()  # re-entrant: a finalizer (_forget) may run during a GC inside the lock
_objects: dict[int, dict[str, tuple[str, object]]] = {}  # connection key -> lower name -> (name, obj)
_ids: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # connection -> its key
_announced: set[int] = set()  # connection keys whose VARIABLE is set
_keys = itertools.count(1)
VARIABLE = "__kanon_conn_id"  # per connection: its key, once it registered something


def _connection_id(con) -> int | None:
    with _lock:
        try:
            cid = _ids.get(con)
        except TypeError:  # not weak-referenceable: not a connection this module can track
            return None
        if cid is None:
            cid = next(_keys)
            _ids[con] = cid
            weakref.finalize(con, _forget, cid)
    return cid


def connection_id(con) -> int | None:
    """This process's key of the connection (or cursor) ``con``: unique across every database
    of the process (DuckDB's ``current_connection_id()`` is unique only within one database).
    No query runs, so it may be called from inside a query running on ``con``."""
    return _connection_id(con)


def _forget(cid: int) -> None:
    with _lock:
        _objects.pop(cid, None)
        _announced.discard(cid)


def _announce(con, cid: int) -> None:
    """``SET VARIABLE __kanon_conn_id`` on ``con`` (once): the metric macros' column look-ups
    read it with ``getvariable``, which DuckDB allows inside ``COLUMNS(lambda ...)`` where
    ``current_connection_id()`` is refused, so they find objects registered on a cursor too.
    Skipped (and retried at the next register) when ``con`` cannot run a statement now."""
    if cid in _announced:
        return
    try:
        con.sql(f"SET VARIABLE {VARIABLE} = {int(cid)}")
    except duckdb.Error:
        return
    with _lock:
        _announced.add(cid)


def _wrap_connection_class() -> None:
    cls = duckdb.DuckDBPyConnection
    if getattr(cls.register, "_kanon_wrapped", False):
        return
    global _original_register
    original_register, original_unregister = cls.register, cls.unregister
    original_close = cls.close
    _original_register = original_register

    def register(self, view_name, python_object, *args, **kwargs):
        out = original_register(self, view_name, python_object, *args, **kwargs)
        cid = _connection_id(self)
        if cid is not None and isinstance(view_name, str):
            with _lock:
                _objects.setdefault(cid, {})[view_name.lower()] = (view_name, python_object)
            _announce(self, cid)
        return out

    def unregister(self, view_name, *args, **kwargs):
        out = original_unregister(self, view_name, *args, **kwargs)
        cid = _ids.get(self) if isinstance(view_name, str) else None
        if cid is not None:
            with _lock:
                _objects.get(cid, {}).pop(view_name.lower(), None)
        return out

    def close(self, *args, **kwargs):
        cid = _ids.get(self)
        if cid is not None:
            _forget(cid)  # its objects are released with the connection, not at its collection
        return original_close(self, *args, **kwargs)

    register.__doc__ = original_register.__doc__
    unregister.__doc__ = original_unregister.__doc__
    close.__doc__ = original_close.__doc__
    register._kanon_wrapped = True
    cls.register, cls.unregister, cls.close = register, unregister, close


def lookup(connection_id, name) -> tuple[str, object] | None:
    """(registered name, object) of the unqualified ``name`` registered on the connection with
    id ``connection_id`` (case-insensitively, as DuckDB resolves it), else None."""
    if connection_id is None or not isinstance(name, str):
        return None
    key = name.strip()
    if len(key) > 1 and key[0] == key[-1] == '"':
        key = key[1:-1].replace('""', '"')
    with _lock:
        return _objects.get(int(connection_id), {}).get(key.lower())


def expose(cur, connection_id, name) -> bool:
    """Register on the reader cursor ``cur`` the object the caller's connection registered as
    ``name``; False when there is none. InvalidParameterError for a one-pass reader."""
    found = lookup(connection_id, name)
    if found is None:
        return False
    view_name, obj = found
    try:
        import pyarrow as pa
        one_pass = isinstance(obj, pa.RecordBatchReader)
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        one_pass = False
    if one_pass:
        raise InvalidParameterError(
            f"'{view_name}' is a registered RecordBatchReader, which can be read only once; "
            f"k_anonymize reads its relation twice (the algorithm, then the output): register "
            f"reader.read_all() instead, or pass the reader to kanon_duckdb.anonymize")
    _original_register(cur, view_name, obj)  # not recorded: the cursor is the caller's reader
    return True


def lookup_all(connection_id) -> list:
    """[(registered name, object)] of every object the connection ``connection_id`` registered
    (one-pass readers left out)."""
    if connection_id is None:
        return []
    with _lock:
        found = list(_objects.get(int(connection_id), {}).values())
    try:
        import pyarrow as pa
        one_pass = (pa.RecordBatchReader,)
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        one_pass = ()
    return [(n, obj) for n, obj in found if not isinstance(obj, one_pass)]


def expose_all(cur, connection_id) -> bool:
    """Register on the reader cursor ``cur`` every object the connection ``connection_id``
    registered (one-pass readers left out), so ``cur`` resolves names as that connection does;
    False when it registered none."""
    found = lookup_all(connection_id)
    for view_name, obj in found:
        _original_register(cur, view_name, obj)
    return bool(found)


class CallerConnection:
    """``con`` (the connection the UDFs were declared on) whose ``cursor()`` also sees the
    objects registered on the caller, the connection or cursor with id ``connection_id``
    (:func:`expose_all`; the cursor's VARIABLE then names the caller, so the metric macros run
    on it find them too); everything else is ``con``'s. For code that reads through cursors
    (kanon_duckdb.rewrite, kanon_compare) called from a UDF."""

    def __init__(self, con, connection_id):
        self._con, self._id = con, connection_id

    def cursor(self):
        cur = self._con.cursor()
        try:
            if expose_all(cur, self._id):
                cur.sql(f"SET VARIABLE {VARIABLE} = {int(self._id)}")
        except BaseException:
            cur.close()
            raise
        return cur

    def __getattr__(self, name):
        return getattr(self._con, name)


_original_register = duckdb.DuckDBPyConnection.register


_wrap_connection_class()
