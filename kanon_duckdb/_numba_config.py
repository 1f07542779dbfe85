"""The one place numba flags come from (CI greps for hard-coded flags elsewhere)."""
import os

# numba's OpenMP workers busy-wait after every parallel region (libgomp's default ACTIVE policy):
# inside DuckDB they spin on the cores DuckDB's own threads and the rest of the statement need
# (Adult, mondrian k = 10 on the 2-core machine: statement CPU 0.27 s -> 0.12 s, anonymize()
# 0.50 s -> 0.15 s wall). Read by libgomp when numba first starts it; a value the user set wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numba  # noqa: E402 - after the OpenMP setting

NJIT = dict(cache=True, nogil=True)
NJIT_PARALLEL = dict(cache=True, nogil=True, parallel=True)


def njit(fn=None, **extra):
    """``numba.njit`` with the project's flags (cache on, nopython, nogil)."""
    opts = {**NJIT, **extra}
    if fn is None:
        return lambda f: numba.njit(**opts)(f)
    return numba.njit(**opts)(fn)


def njit_parallel(fn):
    return numba.njit(**NJIT_PARALLEL)(fn)
