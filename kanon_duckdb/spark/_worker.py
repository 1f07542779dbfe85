"""One Spark partition of rows -> its published rows, on the executor (``applyInArrow``).

The partition goes through the package's own path (``anonymize.anonymize`` with the table's
global ranges, then ``api.published``: the same encoding, numba kernels and output SQL as
``k_anonymize``) on an in-memory DuckDB connection kept per worker process, whose
``kanon_taxonomy`` holds the run's trees (the user's and the shared flat ones), so leaf
ordinals and NCP denominators are the table's, not the partition's. Class ids become
``partition * 2^32 + ec`` (unique over the table); ``kanon_run`` is NULL (Spark runs are not
recorded in a ``kanon_runs`` table).
"""
from __future__ import annotations

import itertools

import pyarrow as pa
import pyarrow.compute as pc

PART = "__kanon_part"     # partition id column added by the top-level split
EC_STRIDE = 1 << 32       # class ids: partition * EC_STRIDE + class within the partition

_connections: dict = {}   # spec token -> worker connection with the run's trees
_names = itertools.count(1)


def _connection(token: str, edges):
    con = _connections.get(token)
    if con is None:
        import kanon_duckdb
        con = kanon_duckdb.connect()
        if edges:
            con.executemany("INSERT INTO kanon_taxonomy VALUES (?, ?, ?)", [list(e) for e in edges])
        _connections.clear()  # one run at a time per worker process
        _connections[token] = con
    return con


def anonymize_partition(table: pa.Table, spec: dict) -> pa.Table:
    """Published rows of one partition (``table``: the source columns plus ``PART``), cast to
    ``spec['schema']``. ``spec``: k, algo, qi, numeric, categorical, seed, params, ranges,
    edges, token, schema (pyarrow schema of the output)."""
    from kanon_duckdb.anonymize import anonymize
    from kanon_duckdb.api import published
    from kanon_duckdb.assignment import STORE
    from kanon_duckdb.relation import resolve_source
    schema = spec["schema"]
    if table.num_rows == 0:
        return schema.empty_table()
    part = int(table.column(PART)[0].as_py()) if PART in table.column_names else 0
    if PART in table.column_names:
        table = table.drop_columns([PART])
    con = _connection(spec["token"], spec["edges"])
    name = f"__kanon_part_{next(_names)}"
    con.register(name, table)
    try:
        res = anonymize(con, resolve_source(con, name, allow_temp=True), k=spec["k"],
                        algo=spec["algo"], qi=spec["qi"], seed=spec["seed"],
                        numeric=spec["numeric"], categorical=spec["categorical"],
                        params=dict(spec["params"]), record=False, ranges=spec["ranges"])
        rel, token = published(con, res)
        try:
            out = rel.arrow()
            if hasattr(out, "read_all"):  # a reader: drain it while the input is registered
                out = out.read_all()
        finally:
            STORE.unpin(token)
    finally:
        con.unregister(name)
    ec = pc.add(out.column("ec").cast(pa.int64()), pa.scalar(part * EC_STRIDE, pa.int64()))
    out = out.set_column(out.column_names.index("ec"), "ec", ec)
    i = out.column_names.index("kanon_run")
    out = out.set_column(i, "kanon_run", pa.nulls(out.num_rows, pa.int64()))
    return out.select(schema.names).cast(schema)
