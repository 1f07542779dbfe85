"""Python API: anonymize whatever a Python user holds, get a DuckDB relation back.

``kanon_duckdb.anonymize(data, k=..., qi=[...], algo='mondrian', con=None, **params)`` takes a
pandas or polars DataFrame, a pyarrow Table / Dataset / RecordBatchReader, a DuckDB relation, a
file path, or the name of a table/view (TEMP ones and objects registered on ``con`` included:
the algorithm reads through ``con`` itself, outside any query). It runs the algorithm at once,
records the run in ``kanon_runs`` and returns a lazy ``DuckDBPyRelation`` of the published
rows (``.df()``, ``.pl()``, ``.arrow()``, ``.write_parquet()``, ``.create(name)``), the same rows
``FROM k_anonymize(...)`` gives for the same data and seed, in the source's column order.

A RecordBatchReader can be read once only, so it is read into an Arrow table first; a relation of
another connection is read into Arrow too. Everything else is read where it is, twice (once to
anonymize, once when the result is consumed). The run's row assignment (16 bytes per row) stays
in memory while the returned relation object lives.

``kanon_duckdb.gcp(anon, con=None)`` and the other metric helpers evaluate the SQL metric macro
of the same name on an anonymized table, view or file (a relation returned by ``anonymize`` is
materialized first into a TEMP-free table of ``con``'s database named ``__kanon_metrics_<n>``
and dropped after).
"""
from __future__ import annotations

import itertools
import os
import threading
import weakref

import duckdb

_names = itertools.count(1)
_default = None
_default_lock = threading.Lock()


def _connection(con):
    """``con`` with everything registered, or a process-wide in-memory connection."""
    global _default
    from .registration import connect, register
    if con is None:
        with _default_lock:
            if _default is None:
                _default = connect()
            return _default
    if not con.execute("SELECT count(*) FROM duckdb_functions() WHERE function_name = '__kanon_pass'"
                       ).fetchall()[0][0]:
        register(con)
    return con


def _as_name(con, data) -> tuple[str, str | None]:
    """(name k_anonymize can read through ``con``, name registered here or None)."""
    if isinstance(data, os.PathLike):
        return os.fspath(data), None
    if isinstance(data, str):
        return data, None
    name = f"__kanon_input_{os.getpid()}_{next(_names)}"
    if isinstance(data, duckdb.DuckDBPyRelation):
        try:
            data.to_view(name, replace=True)
            con.sql(f'SELECT * FROM "{name}" LIMIT 0')
            return name, name
        except duckdb.Error:  # a relation of another connection
            data = data.arrow()
    try:
        import pyarrow as pa
        if isinstance(data, pa.RecordBatchReader):
            data = data.read_all()  # one pass only: the algorithm and the output both read it
    except ImportError:  # pragma: no cover - pyarrow is a dependency
        pass
    try:
        con.register(name, data)
    except (duckdb.Error, TypeError, ValueError) as exc:
        raise TypeError(
            f"kanon_duckdb.anonymize cannot read a {type(data).__name__}; pass a pandas/polars "
            f"DataFrame, a pyarrow Table/Dataset/RecordBatchReader, a DuckDB relation, a file path "
            f"or a table name ({exc})") from None
    return name, name


def anonymize(data, *, k, qi, algo="mondrian", con=None, seed=0, numeric=None, categorical=None,
              taxonomies=None, **params) -> duckdb.DuckDBPyRelation:
    """Anonymize ``data`` (see the module docstring); returns the published rows as a relation.

    ``params`` are the algorithm's parameters (``max_suppression=0.02``, ``iterations=50``...),
    checked against their declarations (``kanon_duckdb.params``).
    """
    from .anonymize import anonymize as run
    from .relation import resolve_source
    con = _connection(con)
    name, registered = _as_name(con, data)
    try:
        source = resolve_source(con, name, allow_temp=True)
        res = run(con, source, k=k, algo=algo, qi=qi, seed=seed, numeric=numeric,
                  categorical=categorical, params=params, taxonomies=taxonomies)
        rel, token = published(con, res)
    except BaseException:
        if registered:
            _unregister(con, registered)
        raise
    weakref.finalize(rel, _release, token, con, registered)
    return rel


def published(con, res) -> tuple[duckdb.DuckDBPyRelation, int]:
    """(lazy relation of the published rows of the AnonymizationResult ``res``, token of its
    pinned row assignment: ``STORE.unpin(token)`` when the relation is no longer needed)."""
    from .assignment import STORE, Assignment
    from .output_sql import output_sql
    from .row_values import ClassValues
    token = STORE.pin(Assignment(res.row_key, res.generalized.ec, res.data), ClassValues(res))
    try:
        return con.sql(output_sql(res.plan, f"__kanon_pass({token})")), token
    except BaseException:
        STORE.unpin(token)
        raise


def _unregister(con, name):
    try:
        con.unregister(name)
    except duckdb.Error:
        pass
    try:
        con.execute(f'DROP VIEW IF EXISTS "{name}"')
    except duckdb.Error:
        pass


def _release(token, con, registered):
    """When the returned relation is garbage: drop the pinned assignment and the registration."""
    from .assignment import STORE
    STORE.unpin(token)
    if registered:
        _unregister(con, registered)


def _metric(macro):
    def metric(anon, con=None):
        con = _connection(con)
        if isinstance(anon, duckdb.DuckDBPyRelation):
            name = f"__kanon_metrics_{os.getpid()}_{next(_names)}"
            anon.create(name)
            try:
                return con.execute(f"SELECT {macro}(?)", [name]).fetchall()[0][0]
            finally:
                con.execute(f'DROP TABLE IF EXISTS "{name}"')
        return con.execute(f"SELECT {macro}(?)", [os.fspath(anon)]).fetchall()[0][0]
    metric.__name__ = macro
    metric.__doc__ = (f"``{macro}`` of an anonymized table/view/file name or of a relation "
                      f"returned by :func:`anonymize` (materialized in a scratch table first).")
    return metric


gcp = _metric("gcp")
discernibility = _metric("discernibility")
cavg = _metric("cavg")
