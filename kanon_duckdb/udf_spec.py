"""The SQL/UDF boundary: how a ``udfs/`` module declares the Python functions DuckDB may call.

Each module in ``udfs/`` defines ``declare(ctx) -> list[UDF]``; ``registration.register`` calls it
once per connection and creates every declared function through :func:`create`, the one place
that maps declared SQL type text to DuckDB types and talks to ``create_function``. Modules hold
no SQL (macros live in ``sql/``) and never import ``registration``.
"""
from __future__ import annotations

import contextlib
import inspect
from dataclasses import dataclass
from typing import Any, Callable, Literal

import duckdb

from .errors import KanonError
from .progress import ProgressFn, no_progress


@dataclass(frozen=True)
class UdfContext:
    """What a module's UDFs may use: the connection they are registered on (read through
    ``con.cursor()``: code running inside a query cannot use that query's connection) and the
    progress callback long runs report to (fraction done, 0..1)."""

    con: duckdb.DuckDBPyConnection
    progress: ProgressFn = no_progress


@dataclass(frozen=True)
class UDF:
    """One SQL-callable Python function.

    ``params``/``returns`` are DuckDB type texts (``'VARCHAR[]'``, ``'STRUCT(a BIGINT)'``).
    ``arrow``: vectorized (pyarrow arrays in and out, one call per chunk) or one call per row.
    ``side_effects``: False means deterministic, so DuckDB folds calls with constant arguments at
    bind time (what the table macros rely on); True for anything that writes or is not repeatable.
    ``null_handling``: ``'default'`` returns NULL for a NULL argument without calling the
    function; ``'special'`` hands NULLs to the function.
    """

    name: str
    function: Callable[..., Any]
    params: tuple[str, ...]
    returns: str
    arrow: bool = True
    side_effects: bool = False
    null_handling: Literal["default", "special"] = "special"


_TYPES: dict[str, duckdb.sqltypes.DuckDBPyType] = {}  # type text -> parsed type, per process


def sql_type(text: str, con: duckdb.DuckDBPyConnection | None = None) -> duckdb.sqltypes.DuckDBPyType:
    """The DuckDB type named by ``text`` (the only type mapper of the boundary), parsed once per
    process: the UDFs name about 20 distinct types 129 times. Parsed by ``con`` when given
    (``duckdb.sqltype`` would open DuckDB's default connection, ~20 ms, for nothing); a parsed
    built-in type belongs to no connection."""
    typ = _TYPES.get(text)
    if typ is None:
        typ = _TYPES[text] = con.sqltype(text) if con is not None else duckdb.sqltype(text)
    return typ


CLOSED_MESSAGE = (
    "the kanon-duckdb connection that registered these functions on this database was closed "
    "(DuckDB shares one database instance per file within a process, and the functions with it, "
    "but only the registering connection keeps them working): close every connection to the "
    "database, then open it again with kanon_duckdb.connect(path)")


def _closed(con: duckdb.DuckDBPyConnection) -> bool:
    """Whether ``con`` is closed (DuckDB's bindings have no attribute saying so)."""
    try:
        con.cursor().close()
    except duckdb.ConnectionException:
        return True
    return False


class _Owned:
    """What DuckDB calls for a UDF: the function, held for the process's lifetime.

    DuckDB frees a Python UDF's callable when the connection that created it closes, but keeps
    the function in the database instance, which another connection to the same file may still
    hold: calling it there was a use-after-free (a segfault, or "'DuckDBPyRelation' object is
    not callable"). :data:`_KEPT` keeps every wrapper alive, so such a call reaches this one,
    which raises :class:`KanonError` with :data:`CLOSED_MESSAGE` (checked only once the function
    failed: no cost per call beyond this frame). :func:`release_closed` drops the function and
    connection of the closed ones (their closures may hold much), keeping the small wrapper.
    """

    __slots__ = ("fn", "con")

    def __init__(self, fn: Callable[..., Any], con: duckdb.DuckDBPyConnection):
        self.fn, self.con = fn, con

    @property
    def __signature__(self) -> inspect.Signature:
        """The function's (DuckDB checks the parameter count against the declared types)."""
        return inspect.signature(self.fn)

    def __call__(self, *args):
        fn, con = self.fn, self.con
        if fn is None:
            raise KanonError(CLOSED_MESSAGE)
        try:
            return fn(*args)
        except Exception:
            if _closed(con):
                raise KanonError(CLOSED_MESSAGE) from None
            raise


_KEPT: list[_Owned] = []  # every wrapper DuckDB was given in this process (never freed)


def release_closed() -> None:
    """Drop the function and connection of every wrapper whose connection is closed (the
    wrapper stays, answering :data:`CLOSED_MESSAGE`); run at each registration."""
    for owned in _KEPT:
        if owned.con is not None and _closed(owned.con):
            owned.fn = owned.con = None


def create(con: duckdb.DuckDBPyConnection, udf: UDF) -> None:
    """Create (or replace: registration is idempotent) ``udf`` on ``con``, through an
    :class:`_Owned` wrapper (a call after ``con`` closed raises :data:`CLOSED_MESSAGE`)."""
    with contextlib.suppress(duckdb.InvalidInputException, duckdb.CatalogException):
        con.remove_function(udf.name)
    owned = _Owned(udf.function, con)
    _KEPT.append(owned)
    con.create_function(udf.name, owned, [sql_type(t, con) for t in udf.params],
                        sql_type(udf.returns, con), type="arrow" if udf.arrow else "native",
                        side_effects=udf.side_effects, null_handling=udf.null_handling,
                        exception_handling="default")


def first_value(arrow_arg):
    """Python value of row 0 of an Arrow UDF argument (ChunkedArray or Array)."""
    if hasattr(arrow_arg, "combine_chunks"):
        arrow_arg = arrow_arg.combine_chunks()
    return arrow_arg[0].as_py() if len(arrow_arg) else None
