"""One Spark partition of rows -> its published rows, on the executor (``applyInArrow``).

The partition goes through the package's own path (``anonymize.anonymize`` with the table's
global ranges, then ``api.published``: the same encoding, numba kernels and output SQL as
``k_anonymize``) on an in-memory DuckDB connection kept per worker process, whose
``kanon_taxonomy`` holds the run's trees (the user's and the shared flat ones), so leaf
ordinals and NCP denominators are the table's, not the partition's. numba compiles once per
machine: the first partition of each worker process first warms the kernels on a slice of
itself under a machine-wide lock (``_warm_once``), the kernels land in numba's on-disk cache
(``cache=True``; ``NUMBA_CACHE_DIR`` moves it, e.g. ``spark.executorEnv.NUMBA_CACHE_DIR``),
and every later process loads them. Each partition reports its rows, seconds and numba
compiles to the run's ``partition_log`` accumulator. Class ids become
``partition * 2^32 + ec`` (unique over the table); ``kanon_run`` is NULL (Spark runs are not
recorded in a ``kanon_runs`` table).
"""
from __future__ import annotations

import itertools
import os
import threading
import time

import pyarrow as pa
import pyarrow.compute as pc

PART = "__kanon_part"     # partition id column added by the top-level split
EC_STRIDE = 1 << 32       # class ids: partition * EC_STRIDE + class within the partition

_connections: dict = {}   # spec token -> worker connection with the run's trees
_names = itertools.count(1)
_compiles = None          # this worker process's numba compile counter (_CompileCounter)


class _CompileCounter:
    """Counts numba compiles in this process (the ``numba:compile`` event fires on a real
    compile only; loading a kernel from the on-disk cache is silent) and their seconds."""

    def __init__(self):
        self.count = 0
        self.seconds = 0.0
        self.names = []
        self._depth = 0
        self._t0 = 0.0
        self._lock = threading.Lock()

    def listener(self):
        from numba.core import event
        outer = self

        class Listener(event.Listener):
            def on_start(self, event):
                with outer._lock:
                    outer.count += 1
                    outer.names.append(getattr(event.data.get("dispatcher"), "__qualname__", "?")
                                       if isinstance(event.data, dict) else "?")
                    if outer._depth == 0:
                        outer._t0 = time.perf_counter()
                    outer._depth += 1

            def on_end(self, _event):
                with outer._lock:
                    outer._depth -= 1
                    if outer._depth == 0:
                        outer.seconds += time.perf_counter() - outer._t0

        return Listener()


def _compile_counter() -> _CompileCounter:
    global _compiles
    if _compiles is None:
        from numba.core import event
        _compiles = _CompileCounter()
        event.register("numba:compile", _compiles.listener())
    return _compiles


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


def anonymize_partition(table: pa.Table, spec: dict, log=None) -> pa.Table:
    """Published rows of one partition (``table``: the source columns plus ``PART``), cast to
    ``spec['schema']``. ``spec``: k, algo, qi, numeric, categorical, seed, params, ranges,
    edges, token, schema (pyarrow schema of the output), reference (the whole table's sensitive
    histogram or None). ``log``: a Spark list accumulator
    that receives one dict per partition: ``pid`` (worker process), ``partition``, ``rows``,
    ``seconds`` (this call), ``compiles`` / ``compile_s`` (numba compiles during it)."""
    counter = _compile_counter()
    before, before_s, t0 = counter.count, counter.seconds, time.perf_counter()
    _warm_once(table, spec)
    out = _anonymize_partition(table, spec)
    if log is not None:
        log.add([{"pid": os.getpid(), "partition": _partition_of(table), "rows": table.num_rows,
                  "seconds": time.perf_counter() - t0, "compiles": counter.count - before,
                  "compile_s": counter.seconds - before_s,
                  "compiled": counter.names[before:]}])
    return out


WARM_ROWS = 2_000        # rows of the first partition a worker process warms numba with
_warmed = False


def _warm_once(table: pa.Table, spec: dict) -> None:
    """Before this process's first partition: run the same path on its first
    ``max(WARM_ROWS, 2k)`` rows while holding a machine-wide lock (``fcntl.flock`` on a file in
    the temp directory), so one worker process per machine compiles the numba kernels into the
    on-disk cache and the others, waiting on the lock, load them from it instead of compiling
    the same kernels at the same time. A warm-up that fails (a slice that cannot satisfy the
    models) is ignored: the real call reports errors."""
    global _warmed
    if _warmed:
        return
    _warmed = True
    import fcntl
    import tempfile
    rows = min(table.num_rows, max(WARM_ROWS, 2 * int(spec["k"])))
    path = os.path.join(tempfile.gettempdir(), f"kanon-duckdb-numba-warm-{os.getuid()}.lock")
    with open(path, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            _anonymize_partition(table.slice(0, rows), spec)
        except Exception:  # noqa: BLE001 - a warm-up only
            pass
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _partition_of(table: pa.Table) -> int:
    if PART in table.column_names and table.num_rows:
        return int(table.column(PART)[0].as_py())
    return 0


def _anonymize_partition(table: pa.Table, spec: dict) -> pa.Table:
    from kanon_duckdb.anonymize import anonymize
    from kanon_duckdb.api import published
    from kanon_duckdb.assignment import STORE
    from kanon_duckdb.relation import resolve_source
    schema = spec["schema"]
    if table.num_rows == 0:
        return schema.empty_table()
    part = _partition_of(table)
    if PART in table.column_names:
        table = table.drop_columns([PART])
    con = _connection(spec["token"], spec["edges"])
    name = f"__kanon_part_{next(_names)}"
    con.register(name, table)
    try:
        res = anonymize(con, resolve_source(con, name, allow_temp=True), k=spec["k"],
                        algo=spec["algo"], qi=spec["qi"], seed=spec["seed"],
                        numeric=spec["numeric"], categorical=spec["categorical"],
                        params=dict(spec["params"]), record=False, ranges=spec["ranges"],
                        sensitive_reference=spec.get("reference"))
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
