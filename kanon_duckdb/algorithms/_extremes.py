"""Running extremes with tie counts (numba kernel), shared by the clustering exchange's top-2
statistics (``clustering._exchange``) and ``bottomup._refine``'s class boxes."""
from .._numba_config import njit


@njit
def fold(v, lo0, lo1, nlo, hi0, hi1, nhi):
    """Fold value v into the two smallest values lo0 <= lo1 (with multiplicity) and nlo, the
    number of values equal to lo0, and likewise the two largest hi0 >= hi1 and nhi. Returns the
    six updated values; start from (+inf or a largest sentinel, the same, 0, -inf or a smallest
    sentinel, the same, 0). O(1); small enough for LLVM to inline, so a caller's loop keeps the
    six values in registers."""
    if v < lo0:
        lo0, lo1, nlo = v, lo0, 1
    else:
        if v == lo0:
            nlo += 1
        if v < lo1:
            lo1 = v
    if v > hi0:
        hi0, hi1, nhi = v, hi0, 1
    else:
        if v == hi0:
            nhi += 1
        if v > hi1:
            hi1 = v
    return lo0, lo1, nlo, hi0, hi1, nhi
