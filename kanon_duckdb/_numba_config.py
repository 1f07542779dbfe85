"""The one place numba flags come from (CI greps for hard-coded flags elsewhere)."""
import numba

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
