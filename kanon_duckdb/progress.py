"""Progress reporting for long runs: the CLI shows a bar (tqdm when installed), library use stays silent.

A :class:`Reporter` is handed to ``register(con, progress=reporter)``; the UDFs registered there
report to it (fraction done, 0..1), and it shows a bar only inside ``with reporter.bar(...)``::

    reporter = Reporter()
    con = kanon_duckdb.connect(progress=reporter)
    with reporter.bar("anonymizing"):
        con.execute("CREATE TABLE o AS FROM k_anonymize('t', k := 5)")
"""
from __future__ import annotations

import contextlib
import sys
import time
from typing import Callable, Iterator

ProgressFn = Callable[[float], None]  # called with the fraction done, 0..1


def no_progress(_fraction: float) -> None:
    """The silent progress callback (library use)."""


class Reporter:
    """A progress callback (``reporter(fraction)``) whose display is switched on per block."""

    def __init__(self) -> None:
        self._update: Callable[[float], None] | None = None

    def __call__(self, fraction: float) -> None:
        if self._update is not None:
            self._update(fraction)

    @contextlib.contextmanager
    def bar(self, description: str, min_seconds: float = 1.0) -> Iterator[Callable[[float], None]]:
        """Show a bar for this block (tqdm when installed, else a plain stderr line).

        The bar only appears once the run has lasted ``min_seconds`` and only when stderr is a
        terminal (logs and CI stay clean).
        """
        start = time.perf_counter()
        state: dict = {"bar": None}

        def update(fraction: float) -> None:
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

        prev, self._update = self._update, update
        try:
            yield update
        finally:
            self._update = prev
            if isinstance(state["bar"], str):
                print(file=sys.stderr)
            elif state["bar"] is not None:
                state["bar"].close()
