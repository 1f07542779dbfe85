"""kanon-duckdb: k-anonymization inside DuckDB.

>>> import kanon_duckdb
>>> con = kanon_duckdb.connect()
>>> kanon_duckdb.load_example(con, "adult")  # doctest: +SKIP
"""
from .registration import connect, register

__version__ = "0.1.0"


def load_example(con, name: str = "adult"):
    """Create the example table ``name`` and insert its taxonomies (see examples_data)."""
    from .examples_data import load_example as _load
    return _load(con, name)


__all__ = ["connect", "register", "load_example", "__version__"]
