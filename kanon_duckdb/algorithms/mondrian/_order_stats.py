"""Order statistics for the Mondrian kernels: exact median with its neighbours and side counts.

``median_stats`` is the one entry point. It counts the segment's integer codes in at most
``cnt.size`` buckets (one code per bucket when the codes span few values, else a power-of-two
range of codes per bucket): the bucket holding the median and its nearest non-empty neighbours
bracket the median exactly, so one branch-free pass copies the rows inside the bracket (a few
per bucket) and quickselect finishes among them. Two passes at most, no sampling, no
data-dependent branch per row. Exact; tested against a full sort.
"""
import numpy as np

from ..._numba_config import njit

COUNT_SPAN_PER_ROW = 2  # at most this many buckets per row (+ COUNT_SLACK)...
COUNT_SLACK = 64
MAX_BUCKETS = 1 << 16  # ...and at most this many (the counts stay in cache)


@njit
def count_scratch_size(rows):
    """Length of the ``cnt`` scratch (int32) of ``median_stats`` for segments of ``rows``."""
    return min(COUNT_SPAN_PER_ROW * rows + COUNT_SLACK, MAX_BUCKETS) + 1


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
def median_stats(W, s, e, j, buf, lo, hi, cnt):
    """Median m (rank (n-1)//2) of W[s:e, j], the largest value < m and the smallest > m (-inf /
    inf when none), and the number of rows < m and > m (n = e - s < 2^31). W holds integer
    codes; ``lo``/``hi`` bound W[s:e, j] (the segment's extremes, or wider). Scratch: ``buf``
    float64 (>= n), ``cnt`` int32 (``count_scratch_size``). O(n + buckets) expected.

    Pass 1 counts codes in buckets of 2^shift codes, as few shifts as make them fit (at most
    COUNT_SPAN_PER_ROW per row plus COUNT_SLACK, and ``cnt``); with one code per bucket the
    counts answer directly. Otherwise the median's bucket and the nearest non-empty bucket on
    each side bracket m, its neighbours below and above, and every row between them; pass 2
    copies those rows (branch-free) and quickselect finds m among them.
    """
    n = e - s
    lo = np.int64(lo)
    top = np.int64(hi) - lo
    cap = min(COUNT_SPAN_PER_ROW * n + COUNT_SLACK, cnt.shape[0])
    shift = 0
    while (top >> shift) >= cap:
        shift += 1
    nb = (top >> shift) + 1
    for r in range(nb):
        cnt[r] = 0
    for i in range(s, e):
        cnt[(np.int64(W[i, j]) - lo) >> shift] += 1
    mid = (n - 1) // 2
    n_lt = np.int64(0)  # rows in buckets before the median's
    r = 0
    while n_lt + cnt[r] <= mid:
        n_lt += cnt[r]
        r += 1
    n_gt = n - n_lt - cnt[r]  # rows in buckets after it
    rb = r  # nearest non-empty buckets around r (r itself when none)
    if n_lt > 0:
        rb = r - 1
        while cnt[rb] == 0:
            rb -= 1
    ra = r
    if n_gt > 0:
        ra = r + 1
        while cnt[ra] == 0:
            ra += 1
    if shift == 0:  # one code per bucket
        below = np.float64(lo + rb) if n_lt > 0 else -np.inf
        above = np.float64(lo + ra) if n_gt > 0 else np.inf
        return np.float64(lo + r), below, above, n_lt, n_gt
    p1 = lo + (np.int64(rb) << shift)
    p2 = lo + ((np.int64(ra) + 1) << shift) - 1
    n_under = n_lt - (cnt[rb] if rb < r else 0)  # rows below the bracket
    nm = np.int64(0)
    for i in range(s, e):
        v = W[i, j]
        buf[nm] = v
        nm += (v >= p1) & (v <= p2)
    kth = mid - n_under
    m = _select(buf, nm, kth)
    below, n_below = _max_below(buf, np.int64(0), kth, m)  # after _select, buf[:kth] <= m
    above, n_above = _min_above(buf, kth + 1, nm, m)
    return m, below, above, n_below + n_under, n_above + (n - n_under - nm)


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
