"""Register every UDF and SQL macro on a DuckDB connection (idempotent).

The UDFs come from the modules named in :data:`UDF_MODULES` (``udfs/``, shipped as
``kanon_duckdb.udfs``), each declaring its functions through ``declare(ctx)`` (see
``udf_spec``); the macros from the ``.sql`` files of ``sql/``, read once per process and run in
file-name order. A connection registered here is closed at interpreter exit if the caller forgot
to (DuckDB's bindings otherwise report "leaked" objects on stderr).
"""
from __future__ import annotations

import atexit
import functools
import importlib
import re
import weakref
from importlib import resources
from pathlib import Path

import duckdb

from . import registered  # noqa: F401 - records con.register(...) for the SQL macros
from .errors import KanonError
from .help import apply_comments, render_help
from .interrupt import install_sigint_handler
from .params import render_sql
from .readonly import is_read_only
from .runs import RUNS_DDL, ensure_runs_table
from .taxonomy.store import DDL as TAXONOMY_DDL, ensure_taxonomy_table
from .progress import ProgressFn, no_progress
from .udf_spec import UDF, UdfContext, create, release_closed

# The UDF modules, in registration order; each must exist and define declare(ctx) -> list[UDF].
UDF_MODULES = ("anonymize", "caller_read", "taxonomy", "query_error", "metrics", "ml_utility", "mapping", "compare")


def sql_dir():
    """Directory of the packaged .sql files (the wheel's kanon_duckdb/sql, or the source tree's sql/)."""
    try:
        d = resources.files("kanon_duckdb.sql")
        if any(str(p).endswith(".sql") for p in d.iterdir()):
            return d
    except (ModuleNotFoundError, FileNotFoundError):
        pass
    return Path(__file__).resolve().parent.parent / "sql"


@functools.lru_cache(maxsize=1)
def sql_scripts() -> tuple[tuple[str, str], ...]:
    """(file name, text) of every ``.sql`` file, in name order; read once per process."""
    files = sorted((p for p in sql_dir().iterdir() if str(p).endswith(".sql")), key=lambda p: p.name)
    return tuple((p.name, p.read_text(encoding="utf-8")) for p in files)


def rendered_scripts() -> tuple[tuple[str, str], ...]:
    """(file name, SQL) as registration runs it: the generated parts filled in (the algorithm
    parameters of k_anonymize, params.render_sql, which follow the algorithm registry; kanon_help's
    macro names, help.render_help), the metric and check macros routed by relation side
    (caller_macros.route_scripts)."""
    from .caller_macros import route_scripts
    scripts = sql_scripts()
    return route_scripts(tuple((name, render_help(render_sql(text), scripts))
                               for name, text in scripts))


_PERSISTENT_MACRO = re.compile(r"^(\s*CREATE\s+OR\s+REPLACE\s+)MACRO\b", re.MULTILINE | re.IGNORECASE)
_CREATE_TABLE = re.compile(r"^\s*CREATE\s+TABLE\s+IF\s+NOT\s+EXISTS\b[^;]*;", re.MULTILINE | re.IGNORECASE)


def temp_macros(scripts: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    """``scripts`` for a database opened read-only (readonly.py): every ``CREATE OR REPLACE
    MACRO`` (at a line's start) made ``... TEMP MACRO``, the connection's own copies, and the
    ``CREATE TABLE IF NOT EXISTS`` statements (00_tables.sql) left out. A temp macro's body
    resolves its names when called, so it reads the file's tables."""
    return tuple((name, _CREATE_TABLE.sub("", _PERSISTENT_MACRO.sub(r"\1TEMP MACRO", text)))
                 for name, text in scripts)


def temp_stand_ins(con) -> None:
    """On a read-only database lacking ``kanon_runs`` / ``kanon_taxonomy``: an empty TEMP table of
    each missing one (the connection's own, nothing in the file), so that the macros reading
    them bind; the UDFs' cursors see no such table (no run, no tree), as the macros see none."""
    have = {r[0] for r in con.execute(
        "SELECT lower(table_name) FROM duckdb_tables() WHERE lower(table_name) IN "
        "('kanon_runs', 'kanon_taxonomy') AND schema_name = current_schema() "
        "AND database_name = current_database()").fetchall()}
    if "kanon_runs" not in have:
        con.execute(RUNS_DDL.replace("CREATE TABLE", "CREATE TEMP TABLE", 1))
    if "kanon_taxonomy" not in have:
        con.execute(TAXONOMY_DDL.replace("CREATE TABLE", "CREATE TEMP TABLE", 1))


def declared_udfs(ctx: UdfContext) -> list[UDF]:
    """Every UDF the modules of :data:`UDF_MODULES` declare for ``ctx`` (a missing module raises)."""
    udfs: list[UDF] = []
    for name in UDF_MODULES:
        module = importlib.import_module(f"kanon_duckdb.udfs.{name}")
        udfs += module.declare(ctx)
    names = [u.name for u in udfs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise RuntimeError(f"UDF name(s) declared twice: {', '.join(dup)}")
    return udfs


_open = weakref.WeakSet()


@atexit.register
def _close_forgotten() -> None:
    """Close the connections still open at exit (UDF closures would keep them alive otherwise)."""
    for con in list(_open):
        try:
            con.close()
        except duckdb.Error:
            pass


def register(con: duckdb.DuckDBPyConnection, *, progress: ProgressFn | None = None
             ) -> duckdb.DuckDBPyConnection:
    """Create the kanon tables if absent and (re)register all functions and macros on ``con``.

    ``progress``: callable told the fraction done (0..1) of long runs, e.g. a
    ``progress.Reporter``; silent by default.
    Also lets ``con.interrupt()`` and Ctrl-C stop a running anonymization (``interrupt``).
    """
    from .warmup import gc_held
    with gc_held():  # its imports and objects are long-lived: no collector passes over them
        return _register(con, progress)


def _register(con: duckdb.DuckDBPyConnection, progress: ProgressFn | None
              ) -> duckdb.DuckDBPyConnection:
    install_sigint_handler()
    read_only = is_read_only(con)
    if read_only:  # a read-only file gets nothing (readonly.py)
        temp_stand_ins(con)
    else:
        ensure_runs_table(con)
    ensure_taxonomy_table(con)  # before the macros over it are created: a wrong shape is named
    release_closed()  # the functions of closed connections (udf_spec._Owned)
    ctx = UdfContext(con=con, progress=progress or no_progress)
    for udf in declared_udfs(ctx):
        try:
            create(con, udf)
        except duckdb.CatalogException as exc:
            if "already exists" not in str(exc):
                raise
            raise _shared_instance_error(con) from None
    scripts = rendered_scripts()
    # numba and the default path's kernels load in the background from here, while DuckDB
    # creates the macros below and the caller loads data: both run with the GIL released (the
    # Python-heavy part of registration is done), so the first call finds them ready
    from .warmup import preload_in_background
    preload_in_background()
    # one statement batch each (two GIL round trips instead of one per file and per comment:
    # with the preload thread holding the GIL, each round trip waits up to a switch interval)
    if read_only:
        scripts = temp_macros(scripts)
    con.execute(";\n".join(text for _name, text in scripts))
    apply_comments(con, sql_scripts())  # each macro's doc comment becomes its DuckDB comment
    _open.add(con)
    return con


def _shared_instance_error(con: duckdb.DuckDBPyConnection) -> KanonError:
    """The error for a connection whose database another registered connection of this process
    holds: DuckDB shares one instance per file in a process, and Python UDFs live in the
    instance, owned (and removable) by the connection that created them only."""
    path = con.execute("SELECT path FROM duckdb_databases() WHERE database_name = current_database()"
                       ).fetchall()
    where = f"'{path[0][0]}'" if path and path[0][0] else "this database"
    return KanonError(
        f"{where} is already open in this process on a connection with kanon-duckdb registered "
        f"(DuckDB shares one database instance per file within a process, and the functions with "
        f"it, so a second connection cannot register its own): use that connection or its "
        f"cursor() (cur = con.cursor() runs k_anonymize and the metrics, with its own TEMP "
        f"objects), or close every connection to the file first")


def connect(path: str | None = None, *, progress: ProgressFn | None = None,
            **duckdb_kwargs) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect`` with everything registered (``progress`` as in :func:`register`)."""
    con = duckdb.connect(path if path is not None else ":memory:", **duckdb_kwargs)
    try:
        return register(con, progress=progress)
    except BaseException:
        con.close()
        raise
