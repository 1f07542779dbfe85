"""Stopping a running anonymization: ``con.interrupt()`` and Ctrl-C reach the kernels.

DuckDB only notices an interruption between the chunks it executes, and a ``k_anonymize`` run is
one long call of a Python UDF, so DuckDB alone would wait for the whole algorithm. This module is
the one place that bridges the two:

- every run executes inside :func:`watch` (``udfs/anonymize.py``), which hands the algorithm a
  progress callback carrying a stop flag (``uint8[1]``, readable inside numba kernels);
- ``DuckDBPyConnection.interrupt`` is wrapped (once, on import) so that interrupting a connection
  also raises the flag of the runs started through it or through any of its cursors;
- :func:`install_sigint_handler` (called by ``register`` on the main thread) makes Ctrl-C raise the
  flag of every run of the process (the usual ``KeyboardInterrupt`` when no run is in progress).

Algorithms poll the flag where they already return to Python (every progress report raises
:class:`~kanon_duckdb.errors.RunInterrupted` once it is set; chunked kernels report about every
0.2 s) and kernels that run long without returning read ``stop_flag(progress)[0]`` in their outer
loop and return early (the caller then calls :func:`check`). Nothing is recorded or published for
an interrupted run: the orchestrator records a run only after the algorithm returns.
"""
from __future__ import annotations

import contextlib
import signal
import threading
import weakref

import duckdb
import numpy as np

from .errors import RunInterrupted

_lock = threading.Lock()
_active: dict[int, _Run] = {}  # id(run) -> run, the runs in progress in this process
_parent: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # cursor -> its connection


class _Run:
    __slots__ = ("flag", "owner")

    def __init__(self, owner):
        self.owner = owner
        self.flag = np.zeros(1, dtype=np.uint8)


class GuardedProgress:
    """A progress callback that raises :class:`RunInterrupted` once its run's flag is set.

    ``flag`` is the run's ``uint8[1]`` stop flag, for kernels that poll it themselves.
    """

    def __init__(self, inner, flag: np.ndarray):
        self._inner = inner
        self.flag = flag

    def __call__(self, fraction: float) -> None:
        if self.flag[0]:
            raise RunInterrupted("the anonymization was interrupted; nothing was written")
        self._inner(fraction)


def stop_flag(progress) -> np.ndarray:
    """The ``uint8[1]`` stop flag of the run ``progress`` belongs to (a fresh zero flag for a
    plain callback, e.g. when an algorithm is called directly)."""
    flag = getattr(progress, "flag", None)
    return flag if flag is not None else np.zeros(1, dtype=np.uint8)


def requested(progress) -> bool:
    """True once the run of ``progress`` was asked to stop."""
    flag = getattr(progress, "flag", None)
    return bool(flag is not None and flag[0])


def check(progress) -> None:
    """Raise :class:`RunInterrupted` if the run of ``progress`` was asked to stop (call it after a
    kernel that polls :func:`stop_flag` returns)."""
    if requested(progress):
        raise RunInterrupted("the anonymization was interrupted; nothing was written")


@contextlib.contextmanager
def watch(owner, progress):
    """Run block for one anonymization started through connection ``owner``; yields the guarded
    progress callback to pass to the algorithm."""
    run = _Run(owner)
    with _lock:
        _active[id(run)] = run
    try:
        yield GuardedProgress(progress, run.flag)
    finally:
        with _lock:
            _active.pop(id(run), None)


def _root(con):
    seen = 0
    while seen < 64:
        try:
            up = _parent.get(con)
        except TypeError:
            return con
        if up is None:
            return con
        con, seen = up, seen + 1
    return con


def stop_runs(con=None) -> int:
    """Raise the stop flag of the runs started through ``con`` (or its cursors, or the connection
    it is a cursor of); of every run in the process when ``con`` is None. Returns how many."""
    root = None if con is None else _root(con)
    with _lock:
        runs = [r for r in _active.values() if root is None or _root(r.owner) is root]
    for r in runs:
        r.flag[0] = 1
    return len(runs)


def _wrap_connection_class() -> None:
    cls = duckdb.DuckDBPyConnection
    if getattr(cls.interrupt, "_kanon_wrapped", False):
        return
    original_interrupt, original_cursor = cls.interrupt, cls.cursor

    def interrupt(self):
        stop_runs(self)
        return original_interrupt(self)

    def cursor(self, *args, **kwargs):
        cur = original_cursor(self, *args, **kwargs)
        with contextlib.suppress(TypeError):
            _parent[cur] = self
        return cur

    interrupt.__doc__ = original_interrupt.__doc__
    cursor.__doc__ = original_cursor.__doc__
    interrupt._kanon_wrapped = True
    cls.interrupt, cls.cursor = interrupt, cursor


def _on_sigint(signum, frame):
    # With runs in progress, only raise their flags: each run then stops at its next check and
    # surfaces as a "was interrupted" error. Raising KeyboardInterrupt here instead would land in
    # whatever Python code the main thread happens to run, e.g. inside a numba dispatcher, which
    # turns it into "SystemError: CPUDispatcher(...) returned a result with an exception set".
    # A second Ctrl-C (every run already flagged) or one with no run falls back to the default.
    with _lock:
        fresh = [r for r in _active.values() if not r.flag[0]]
    for r in fresh:
        r.flag[0] = 1
    if not fresh:
        signal.default_int_handler(signum, frame)


def install_sigint_handler() -> None:
    """On the main thread, when Ctrl-C still has Python's default handler, make it stop the running
    anonymizations (``KeyboardInterrupt`` as before when none is running). Idempotent."""
    if threading.current_thread() is not threading.main_thread():
        return
    with contextlib.suppress(ValueError, TypeError):
        if signal.getsignal(signal.SIGINT) is signal.default_int_handler:
            signal.signal(signal.SIGINT, _on_sigint)


_wrap_connection_class()
