"""Give the memory a large run freed back to the operating system before the output is written.

A run's arrays (encoded QIs, the kernel's working copy, the row keys) are freed when it ends, but
glibc keeps much of that memory: after a large block is freed it raises its mmap threshold, so
later arrays of up to 32 MB come from the heap, and freed heap pages stay in the process. The
statement then writes its output table on top of them, which made the peak RSS of a 1M-row
``k_anonymize`` about 40 MB higher than the run and the output need. ``release_freed`` calls
glibc's ``malloc_trim(0)`` (which returns free heap pages, also between live blocks) once the
run's result is dropped; 4-15 ms at 1M rows, so runs under ``TRIM_ROWS`` rows skip it. Elsewhere
(macOS, Windows, musl) it does nothing.
"""
from __future__ import annotations

import ctypes

TRIM_ROWS = 100_000
_UNSET = object()
_trim = _UNSET  # glibc's malloc_trim, None where there is none (resolved on first use)


def _malloc_trim():
    global _trim
    if _trim is _UNSET:
        try:
            _trim = ctypes.CDLL(None).malloc_trim
            _trim.argtypes = [ctypes.c_size_t]
        except (OSError, AttributeError, TypeError):
            _trim = None
    return _trim


def release_freed(n_rows: int) -> bool:
    """After a run over ``n_rows`` rows whose result was dropped: hand free heap memory back to
    the OS (True when ``malloc_trim`` ran). O(heap size)."""
    if n_rows < TRIM_ROWS:
        return False
    trim = _malloc_trim()
    if trim is None:
        return False
    trim(0)
    return True
