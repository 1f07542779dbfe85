"""Progress reporting for long runs: the CLI installs a tqdm bar, library use stays silent."""
from __future__ import annotations

import contextlib
import sys
import time

_current = None


def current():
    """The progress callback in force (fraction done, 0..1), or a no-op."""
    return _current or (lambda _f: None)


@contextlib.contextmanager
def bar(description: str, min_seconds: float = 1.0):
    """Install a progress bar (tqdm when installed, else a plain stderr line) for this block.

    The bar only appears once the run has lasted ``min_seconds`` and only when stderr is a
    terminal (logs and CI stay clean).
    """
    global _current
    start = time.perf_counter()
    state = {"bar": None}

    def update(fraction: float):
        if state["bar"] is None:
            if time.perf_counter() - start < min_seconds or not sys.stderr.isatty():
                return
            try:
                from tqdm import tqdm
                state["bar"] = tqdm(total=1000, desc=description, file=sys.stderr, leave=False,
                                    bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}<{remaining}")
            except ImportError:
                state["bar"] = "plain"
        if isinstance(state["bar"], str):
            print(f"\r{description}: {fraction:6.1%}", end="", file=sys.stderr, flush=True)
        else:
            b = state["bar"]
            b.n = int(1000 * min(max(fraction, 0.0), 1.0))
            b.refresh()

    prev, _current = _current, update
    try:
        yield update
    finally:
        _current = prev
        if isinstance(state["bar"], str):
            print(file=sys.stderr)
        elif state["bar"] is not None:
            state["bar"].close()
