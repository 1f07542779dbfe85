"""DuckDB API differences in one place."""
import contextlib

import duckdb


def replace_function(con, name, fn, params, ret, *, side_effects=False, arrow=True,
                     null_handling="special"):
    """Idempotent ``create_function``: remove a previous registration first."""
    with contextlib.suppress(Exception):
        con.remove_function(name)
    con.create_function(name, fn, params, ret, type="arrow" if arrow else "native",
                        side_effects=side_effects, null_handling=null_handling,
                        exception_handling="default")


def first_value(arrow_arg):
    """Python value of row 0 of an Arrow UDF argument (ChunkedArray or Array)."""
    if hasattr(arrow_arg, "combine_chunks"):
        arrow_arg = arrow_arg.combine_chunks()
    return arrow_arg[0].as_py() if len(arrow_arg) else None


DuckDBError = duckdb.Error
