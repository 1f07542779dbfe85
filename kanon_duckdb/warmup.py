"""numba compile notices and ahead-of-time warm-up.

Kernels are compiled on first use and cached on disk (``cache=True`` in ``_numba_config``), so
only the first run of an algorithm on a machine pays for compiling (tens of seconds per family).

- :func:`compile_notice` wraps a run: when numba starts compiling anything inside it (a cache
  miss; loading from the cache is silent), it logs once, on the ``kanon_duckdb`` logger at
  WARNING level (Python prints it to stderr when logging is not configured):
  ``compiling mondrian kernels, first use only (about 15-40 s)...``.
- :func:`warmup` compiles (or loads) the kernels of the given algorithms ahead of time by running
  each once on a small synthetic table through the same SQL path as real calls
  (``kanon-duckdb warmup [--algos ...]``).
"""
from __future__ import annotations

import contextlib
import logging
import threading
import time

log = logging.getLogger("kanon_duckdb")
_local = threading.local()  # .quiet: no compile notice from this thread (the background preload)

# one warm-up table: integer, float and categorical QIs with NULLs, 400 rows
_WARMUP_ROWS = 400
_WARMUP_SQL = f"""
CREATE OR REPLACE TABLE __kanon_warmup AS
SELECT (i % 70 + 17)::INTEGER AS age,
       CASE WHEN i % 53 = 0 THEN NULL ELSE (i * 7 % 1000) / 10.0 END::DOUBLE AS score,
       ['a', 'b', 'c', 'd', 'e'][i % 5 + 1] AS grp,
       CASE WHEN i % 41 = 0 THEN NULL ELSE ['x', 'y', 'z'][i % 3 + 1] END AS kind,
       (i % 2)::VARCHAR AS label
FROM range({_WARMUP_ROWS}) t(i)
"""
_WARMUP_QI = ["age", "score", "grp", "kind"]
# the background preload's QIs: the default path's kernels for integer and text QIs (the
# specializations Adult's first call loads, no more: a DOUBLE QI would add _fill_float)
_PRELOAD_QI = ["age", "grp", "kind"]


def _notice_listener(label: str):
    """A numba 'compile' event listener (numba.core.event.Listener) that logs once."""
    from numba.core import event

    class Notice(event.Listener):
        def __init__(self):
            self.said = False
            self.lock = threading.Lock()

        def on_start(self, _event):
            if getattr(_local, "quiet", False):
                return
            with self.lock:
                if self.said:
                    return
                self.said = True
            log.warning("compiling %s kernels, first use only (about 15-40 s; "
                        "`kanon-duckdb warmup` does it ahead of time)...", label)

        def on_end(self, _event):
            return None

    return Notice()


@contextlib.contextmanager
def compile_notice(label: str):
    """Log ``compiling <label> kernels, first use only...`` if numba compiles inside the block."""
    from numba.core import event

    listener = _notice_listener(label)
    event.register("numba:compile", listener)
    try:
        yield listener
    finally:
        event.unregister("numba:compile", listener)


def warmup(algos=None, out=None) -> dict:
    """Compile (or load from the cache) the kernels of ``algos`` (default: all) ahead of time.

    Runs each algorithm once (``kanon_duckdb.anonymize``, the code behind ``k_anonymize``) on a
    400-row synthetic table (integer, float and categorical QIs with NULLs) in a private
    in-memory database. With a lattice algorithm it also compiles the lattice's threaded
    grouping pass (:func:`compile_threaded_grouping`), which real runs reach only from 2^18
    distinct tuples. Returns {algo (or ``LATTICE_THREADED``): seconds}.
    """
    from . import connect
    from .algorithms import get_algorithm, registry
    from .anonymize import anonymize

    names = [get_algorithm(a).name for a in algos] if algos else sorted(registry())
    con = connect()
    times = {}
    try:
        con.execute(_WARMUP_SQL)
        for name in names:
            params = {"sensitive": "label"} if name == "info2means" else {}
            t0 = time.perf_counter()
            res = anonymize(con, "__kanon_warmup", k=5, algo=name, qi=_WARMUP_QI, params=params,
                            record=False)
            _ready(times, name, t0, out)
            if get_algorithm(name).family == "lattice" and LATTICE_THREADED not in times:
                t0 = time.perf_counter()
                with compile_notice(LATTICE_THREADED):
                    compile_threaded_grouping(res.data)
                _ready(times, LATTICE_THREADED, t0, out)
    finally:
        con.close()
    return times


LATTICE_THREADED = "lattice threaded grouping"


def _ready(times: dict, name: str, t0: float, out) -> None:
    times[name] = time.perf_counter() - t0
    if out is not None:
        print(f"{name}: ready ({times[name]:.1f} s)", file=out, flush=True)


def compile_threaded_grouping(data) -> None:
    """Compile (or load) the lattice checker's kernels that real runs reach only on large
    tables, through the checker's own calls on ``data`` (a lattice run's ``QIData``) with the
    size thresholds lowered: the byte planes written on threads (``level_codes_parallel``, from
    ``levels.PARALLEL_ROWS`` distinct tuples), the threaded grouping pass over the rows' byte
    planes (``lattice._kernels.group_node_parallel``, from ``checker.PARALLEL_MIN`` distinct
    tuples: the first ``optimal`` at 1M rows compiled it for 13.6 s), the bucketed grouping
    (``group_buckets``, from ``checker.BUCKET_MIN`` inputs) and the direct count of a kept
    grouping (``group_dense``, up to ``checker.KEEP_TABLE_MAX`` keys) over the byte planes and
    over a cached class table of each level-code dtype, uint16 and int32 (a column with 65,536
    values or more), and the blocked tuple order (``lattice.blocks``, from ``blocks.SORT_MIN``
    tuples: the sort and ``_block_kernels.group_runs``, stopping and kept). O(rows of data)."""
    import dataclasses

    import numpy as np

    from .algorithms.lattice import NodeChecker, build_space
    from .algorithms.lattice import _kernels as K
    from .algorithms.lattice import blocks, levels
    saved = levels.PARALLEL_ROWS, blocks.SORT_MIN, blocks.MIN_RUN
    levels.PARALLEL_ROWS = 0  # the planes written on threads
    blocks.SORT_MIN, blocks.MIN_RUN = 0, 1  # the tuples sorted into blocks
    try:
        space = build_space(data)
    finally:
        levels.PARALLEL_ROWS, blocks.SORT_MIN, blocks.MIN_RUN = saved
    for dtype in (np.uint16, np.int32):
        sp = dataclasses.replace(space, code_dtype=dtype)
        ch = NodeChecker(sp, 2, stop_early=True)
        ch.parallel_min = 0
        ch.check(ch.bounds)
        ch.check(ch.top)  # feasible: the class statistics on codes of this dtype
        for keep in (False, True):  # blocks: group_runs stopping in all / in its probe
            for levels_ in (ch.bounds, tuple(0 for _ in ch.bounds)):
                if sp.blocks is not None:
                    ch._run_blocks(levels_, keep)
        low = ch.bounds
        rep, cnt, _, kc = ch._run_kernels(low)
        for tab in (None, (rep, cnt, kc, low)):
            *args, ks, _ = ch._kernel_args(ch.top, tab)
            c = sp.t if tab is None else rep.shape[0]
            keys, skey = np.empty(c, np.int64), np.empty(c, np.int64)
            K.group_buckets(*args, ks, ch.k, ch.limit, ch.cap, 1, keys, skey,
                            np.empty(c, np.int32), 2)
            K.group_dense(*args, ks, ch.cap, np.zeros((2, ks), np.int32),
                          np.empty((2, 2, c), np.int64), sp.keyspace(ch.top)[0],
                          np.zeros(0, dtype))


_preload_thread = None

# The cyclic garbage collector is paused while start-up creates its many long-lived objects
# (numba's import alone: ~90,000 container objects, each collection pass walking them again;
# about 0.03 s of its 0.18 s of CPU). Holds nest: register() and the preload thread each hold
# it; it runs again once both are done (unless it was off to begin with).
_gc_lock = threading.Lock()
_gc_holds = 0
_gc_was_on = False


def hold_gc() -> None:
    """Pause the cyclic garbage collector until the matching :func:`release_gc`."""
    import gc
    global _gc_holds, _gc_was_on
    with _gc_lock:
        if _gc_holds == 0:
            _gc_was_on = gc.isenabled()
            gc.disable()
        _gc_holds += 1


def release_gc() -> None:
    """End one :func:`hold_gc`; the last one turns the collector back on if it was on."""
    import gc
    global _gc_holds
    with _gc_lock:
        _gc_holds -= 1
        if _gc_holds == 0 and _gc_was_on:
            gc.enable()


@contextlib.contextmanager
def gc_held():
    """The block runs with the cyclic garbage collector paused (:func:`hold_gc`)."""
    hold_gc()
    try:
        yield
    finally:
        release_gc()


def preload_in_background() -> None:
    """Import numba and load the default path's cached kernels in a background thread, once per
    process, so the first ``k_anonymize`` does not wait for them (about 0.5-0.7 s of CPU).

    ``register()`` calls it once its Python-heavy part is done (UDF modules imported, functions
    created), before DuckDB creates the macros: from there the caller's thread mostly runs
    inside DuckDB with the GIL released (macros, comments, then typically loading data), so the
    two overlap instead of taking turns on the GIL. The thread imports numba, imports the
    package's modules of the Mondrian path and runs it once on the 400-row warm-up table
    (integer and text QIs, :data:`_PRELOAD_QI`), loading its kernels from numba's cache. It
    stops at the first kernel that would compile (:func:`_cache_only`): it never compiles in
    the background. ``KANON_DUCKDB_PRELOAD=0`` turns it off. The thread is not a daemon:
    interpreter exit waits for it (well under a second).
    """
    global _preload_thread
    import os
    if _preload_thread is not None or os.environ.get("KANON_DUCKDB_PRELOAD", "1") == "0":
        return
    hold_gc()  # released by the thread when it ends
    _preload_thread = threading.Thread(target=_preload, args=(_hand_over_sooner(), True),
                                       name="kanon-preload")
    try:
        _preload_thread.start()
    except BaseException:
        release_gc()
        raise


PRELOAD_SWITCH_INTERVAL = 0.0005  # seconds; Python's default is 0.005


def _hand_over_sooner() -> float | None:
    """Shorten the interpreter's GIL switch interval while the preload runs; returns the value
    to restore (None: left as it was). DuckDB takes the GIL back after every statement of a
    batch, and a thread waiting for the GIL waits up to one switch interval for the holder to
    drop it: with the preload importing (holding the GIL), the ~100 statements of
    ``register()`` and the caller's own statements each waited up to 5 ms."""
    import sys
    previous = sys.getswitchinterval()
    if previous <= PRELOAD_SWITCH_INTERVAL:
        return None
    sys.setswitchinterval(PRELOAD_SWITCH_INTERVAL)
    return previous


def _restore_switch_interval(previous: float | None) -> None:
    """Put back the interval :func:`_hand_over_sooner` replaced, unless someone changed it."""
    import sys
    if previous is not None and abs(sys.getswitchinterval() - PRELOAD_SWITCH_INTERVAL) < 1e-9:
        sys.setswitchinterval(previous)


class _CacheMiss(Exception):
    """Raised in the preload thread when numba is about to compile (see :func:`_cache_only`)."""


@contextlib.contextmanager
def _cache_only():
    """Inside the block, a numba compile started by this thread raises _CacheMiss (loading from
    the cache is not a compile): the preload never spends CPU on compiling in the background."""
    from numba.core import event

    me = threading.get_ident()

    class Stop(event.Listener):
        def on_start(self, _event):
            if threading.get_ident() == me:
                raise _CacheMiss

        def on_end(self, _event):
            return None

    listener = Stop()
    event.register("numba:compile", listener)
    try:
        yield
    finally:
        event.unregister("numba:compile", listener)


def _preload(previous_interval: float | None = None, gc_held_by_caller: bool = False) -> None:
    """What the first mondrian ``k_anonymize`` imports and loads: numba, the mondrian family
    and its kernels; run once on the 400-row warm-up table in a private in-memory database
    (``anonymize`` needs no registration). Not the row-assignment kernels: a first call on a
    base table of up to ``udfs.anonymize.POSITIONAL_ROWS`` rows pairs rows by position instead."""
    _local.quiet = True
    try:
        from . import _numba_config  # noqa: F401 - numba itself (and its BLAS check)
        from numba.core.compiler_lock import global_compiler_lock
        import duckdb

        from . import output_sql  # noqa: F401 - the statement's SQL, which the first call reads
        from .algorithms import get_algorithm
        from .anonymize import anonymize
        get_algorithm("mondrian")
        # Everything that touches numba's typing state runs under numba's own compiler lock: a
        # refresh or an aborted compile here racing the compile of the caller's first run (empty
        # cache) corrupted the typing context ("Unknown attribute 'shape' of type readonly
        # array", CI at cb15b65). A compile in the caller's thread waits for this block. Loading
        # a cached kernel needs no refresh of numba's contexts (_numba_config._LoadCache).
        with global_compiler_lock:
            con = duckdb.connect()
            try:
                con.execute(_WARMUP_SQL)
                with _cache_only():
                    anonymize(con, "__kanon_warmup", k=5, algo="mondrian", qi=_PRELOAD_QI,
                              record=False)
            finally:
                con.close()
    except _CacheMiss:
        log.debug("kanon_duckdb preload stopped: a kernel is not in numba's cache")
    except Exception:  # noqa: BLE001 - an optimisation only; the real call reports errors
        log.debug("kanon_duckdb preload failed", exc_info=True)
    finally:
        _restore_switch_interval(previous_interval)
        if gc_held_by_caller:
            release_gc()
