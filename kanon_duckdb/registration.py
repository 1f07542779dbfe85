"""Register every UDF and SQL macro on a DuckDB connection (idempotent)."""
from __future__ import annotations

import importlib
from importlib import resources
from pathlib import Path

import duckdb

from .interrupt import install_sigint_handler
from .runs import ensure_runs_table

# UDF modules (in udfs/, shipped as kanon_duckdb.udfs) and their register functions, in order.
_UDF_MODULES = (
    ("anonymize", "register_anonymize_udfs"),
    ("taxonomy", "register_taxonomy_udfs"),
    ("query_error", "register_query_error"),
    ("metrics", "register_metric_udfs"),
    ("ml_utility", "register_ml_utility_udfs"),
    ("mapping", "register_mapping_udfs"),
)


def sql_dir():
    """Directory of the packaged .sql files (the wheel's kanon_duckdb/sql, or the source tree's sql/)."""
    try:
        d = resources.files("kanon_duckdb.sql")
        if any(str(p).endswith(".sql") for p in d.iterdir()):
            return d
    except (ModuleNotFoundError, FileNotFoundError):
        pass
    return Path(__file__).resolve().parent.parent / "sql"


def sql_files():
    return sorted((p for p in sql_dir().iterdir() if str(p).endswith(".sql")), key=lambda p: p.name)


def register(con: duckdb.DuckDBPyConnection) -> duckdb.DuckDBPyConnection:
    """Create the kanon tables if absent and (re)register all functions and macros on ``con``.

    Also lets ``con.interrupt()`` and Ctrl-C stop a running anonymization (``interrupt``)."""
    install_sigint_handler()
    ensure_runs_table(con)
    for mod_name, fn_name in _UDF_MODULES:
        try:
            mod = importlib.import_module(f"kanon_duckdb.udfs.{mod_name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"kanon_duckdb.udfs.{mod_name}":
                raise
            continue
        getattr(mod, fn_name)(con)
    for f in sql_files():
        con.execute(f.read_text())
    from .warmup import preload_in_background
    preload_in_background()  # numba and the default kernels, so the first call is quick
    return con


def connect(path: str | None = None, **duckdb_kwargs) -> duckdb.DuckDBPyConnection:
    """``duckdb.connect`` with everything registered."""
    con = duckdb.connect(path if path is not None else ":memory:", **duckdb_kwargs)
    return register(con)
