"""Order statistics for the Mondrian kernels: exact median with its neighbours and side counts.

``median_stats`` is the one entry point: a Floyd-Rivest style rank window for large segments
(two pivots from a strided sample bracket the median; one branch-free pass keeps the rows
inside), quickselect on a copy otherwise. All exact; tested against a full sort.
"""
import numpy as np

from ..._numba_config import njit

WINDOW_MIN_ROWS = 16384  # segments at least this large find medians in a sampled rank window
WINDOW_SAMPLE = 4096  # sample size for the window's pivots
WINDOW_SIGMAS = 4.0  # half-width of the window in standard deviations of the sample median's rank


@njit
def _select(buf, n, kth):
    """Value of rank ``kth`` (0-based) among buf[:n]; reorders buf. Expected O(n): quickselect
    with a median-of-three pivot and a three-way partition (duplicate-heavy data stay linear)."""
    lo = 0
    hi = n - 1
    while hi > lo:
        a = buf[lo]
        b = buf[(lo + hi) // 2]
        c = buf[hi]
        pivot = max(min(a, b), min(max(a, b), c))
        lt = lo
        i = lo
        gt = hi
        while i <= gt:
            v = buf[i]
            if v < pivot:
                buf[i] = buf[lt]
                buf[lt] = v
                lt += 1
                i += 1
            elif v > pivot:
                buf[i] = buf[gt]
                buf[gt] = v
                gt -= 1
            else:
                i += 1
        if kth < lt:
            hi = lt - 1
        elif kth > gt:
            lo = gt + 1
        else:
            return pivot
    return buf[kth]


@njit
def median_stats(W, s, e, j, buf):
    """Median m (rank (n-1)//2) of W[s:e, j], the largest value < m and the smallest > m (-inf /
    inf when none), and the number of rows < m and > m. Expected O(n).

    Segments of at least WINDOW_MIN_ROWS rows (Floyd & Rivest 1975): two pivots picked from a
    strided sample bracket the median's rank with high probability; one branch-free pass counts
    the rows below the bracket and copies the rows inside it to ``buf``, and the median is
    selected among those (a few % of the rows). When the bracket misses, or the segment is
    small, quickselect on a full copy.
    """
    n = e - s
    mid = (n - 1) // 2
    if n >= WINDOW_MIN_ROWS:
        stride = n // WINDOW_SAMPLE
        for i in range(WINDOW_SAMPLE):
            buf[i] = W[s + i * stride, j]
        half = WINDOW_SAMPLE // 2
        spread = int(WINDOW_SIGMAS * 0.5 * np.sqrt(WINDOW_SAMPLE)) + 1
        p1 = _select(buf, np.int64(WINDOW_SAMPLE), half - spread)
        p2 = _select(buf, np.int64(WINDOW_SAMPLE), half + spread)
        n_lt = np.int64(0)
        nm = np.int64(0)
        for i in range(s, e):
            v = W[i, j]
            buf[nm] = v
            nm += (v >= p1) & (v <= p2)
            n_lt += v < p1
        if n_lt <= mid < n_lt + nm:
            kth = mid - n_lt
            m = _select(buf, nm, kth)
            below, n_below = _max_below(buf, np.int64(0), kth, m)
            above, n_above = _min_above(buf, kth + 1, nm, m)
            n_below += n_lt
            n_above += n - n_lt - nm
            if below == -np.inf and n_lt > 0:  # every row below m lies under the bracket
                below = _max_below(W[:, j], s, e, p1)[0]
            if above == np.inf and n_lt + nm < n:
                above = _min_above(W[:, j], s, e, p2)[0]
            return m, below, above, n_below, n_above
    for i in range(n):
        buf[i] = W[s + i, j]
    m = _select(buf, n, mid)
    below, n_below = _max_below(buf, np.int64(0), mid, m)  # after _select, buf[:mid] <= m <= buf[mid+1:]
    above, n_above = _min_above(buf, mid + 1, n, m)
    return m, below, above, n_below, n_above


@njit
def _max_below(buf, a, b, m):
    """(largest value < m, how many values < m) among buf[a:b]."""
    best = -np.inf
    cnt = 0
    for i in range(a, b):
        v = buf[i]
        if v < m:
            cnt += 1
            if v > best:
                best = v
    return best, cnt


@njit
def _min_above(buf, a, b, m):
    """(smallest value > m, how many values > m) among buf[a:b]."""
    best = np.inf
    cnt = 0
    for i in range(a, b):
        v = buf[i]
        if v > m:
            cnt += 1
            if v < best:
                best = v
    return best, cnt
