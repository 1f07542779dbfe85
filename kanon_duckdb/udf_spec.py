"""The SQL/UDF boundary: how a ``udfs/`` module declares the Python functions DuckDB may call.

Each module in ``udfs/`` defines ``declare(ctx) -> list[UDF]``; ``registration.register`` calls it
once per connection and creates every declared function through :func:`create`, the one place
that maps declared SQL type text to DuckDB types and talks to ``create_function``. Modules hold
no SQL (macros live in ``sql/``) and never import ``registration``.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass
from typing import Any, Callable, Literal

import duckdb

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


def create(con: duckdb.DuckDBPyConnection, udf: UDF) -> None:
    """Create (or replace: registration is idempotent) ``udf`` on ``con``."""
    with contextlib.suppress(duckdb.InvalidInputException, duckdb.CatalogException):
        con.remove_function(udf.name)
    con.create_function(udf.name, udf.function, [sql_type(t, con) for t in udf.params],
                        sql_type(udf.returns, con), type="arrow" if udf.arrow else "native",
                        side_effects=udf.side_effects, null_handling=udf.null_handling,
                        exception_handling="default")


def first_value(arrow_arg):
    """Python value of row 0 of an Arrow UDF argument (ChunkedArray or Array)."""
    if hasattr(arrow_arg, "combine_chunks"):
        arrow_arg = arrow_arg.combine_chunks()
    return arrow_arg[0].as_py() if len(arrow_arg) else None
