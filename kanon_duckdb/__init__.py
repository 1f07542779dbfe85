"""kanon-duckdb: k-anonymization inside DuckDB.

>>> import kanon_duckdb
>>> con = kanon_duckdb.connect()
>>> kanon_duckdb.load_example(con, "adult")  # doctest: +SKIP
"""
from __future__ import annotations

from pathlib import Path as _Path
from typing import TYPE_CHECKING

# In a source checkout the SQL and UDF folders sit beside the package (the wheel maps them to
# kanon_duckdb/sql and kanon_duckdb/udfs); let the package path reach them there too, so the
# checkout is importable in place, installed or not.
_root = _Path(__file__).resolve().parent.parent
if not (_Path(__file__).resolve().parent / "udfs").is_dir() and (_root / "udfs" / "__init__.py").is_file():
    __path__.append(str(_root))  # noqa: F821 - the package's own __path__

import gc as _gc  # noqa: E402

# the imports below (duckdb, numpy, pyarrow's core, ours) create tens of thousands of long-lived
# objects: the cyclic collector, paused meanwhile, would walk them again at every pass
_gc_on = _gc.isenabled()
_gc.disable()
try:
    from .registration import connect, register  # noqa: E402
finally:
    if _gc_on:
        _gc.enable()

if TYPE_CHECKING:
    import duckdb

__version__ = "0.1.0"  # the one version source (pyproject reads it)


def load_example(con: duckdb.DuckDBPyConnection, name: str = "adult") -> int:
    """Create the example table ``name`` and insert its taxonomies (see examples_data); returns
    its row count."""
    from .examples_data import load_example as _load
    return _load(con, name)


_API = ("gcp", "discernibility", "cavg")


def __getattr__(name):
    """``anonymize`` (a callable module: kanon_duckdb.api.anonymize) and the metric helpers load
    on first use, so ``import kanon_duckdb`` stays light."""
    import importlib
    if name == "anonymize":
        return importlib.import_module(".anonymize", __name__)
    if name in _API:
        return getattr(importlib.import_module(".api", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["__version__", "anonymize", "cavg", "connect", "discernibility", "gcp", "load_example",
           "register"]
