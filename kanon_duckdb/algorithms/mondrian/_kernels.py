"""Numba kernels of strict multidimensional Mondrian (LeFevre, DeWitt, Ramakrishnan 2006).

Data layout: ``W`` int32 (n, d), row-major working copy of the QIs as order-preserving codes
(numeric: the rank of the value among its column's values, or its offset from the smallest when
the column is a short range of integers; categorical: the leaf ordinal) that is permuted
together with ``perm`` (original row ids) as segments split, so every segment is a contiguous
block and all passes read memory sequentially (32 bytes per row of 8 QIs). Cuts compare codes;
widths and costs read each code's coordinate from ``Dims.vals`` (the coordinate of code c on
dimension j is ``vals[vals_off[j] + c]``, indexed where it is read: a call would take and drop a
reference on both arrays), so every choice is the one the coordinates themselves would give.
A categorical dimension j has ``dims.tree_of[j] >= 0`` naming its packed tree. The kernels take
three bundles besides the rows: :class:`Dims` (per-dimension facts), ``qidata.PackedTrees`` (the
taxonomies) and :class:`Scratch` (per-thread buffers).

Work is breadth-first: every round processes all open segments, in parallel threads that each
take a contiguous share of them (``mondrian_partition``, a Python driver of nogil kernels: no
``prange``, whose gufunc recompiled the whole call tree); each
segment either splits into two contiguous halves of ``W``/``perm`` (in place, disjoint slices, so
no races) or becomes final; the split pass also gathers each side's smallest and largest codes,
which give the next round's widths and the final classes' published ranges. A segment whose
rows fit in DEPTH_FIRST_BYTES (half an L2 cache) is finished depth first inside its round:
its whole subtree, the same splits in the same order within the segment, while its rows stay in
cache; each final class is kept in the slot of its first row (``_final_classes``) with its
depth, and classes are numbered by (depth, first row), the order breadth-first rounds over
every segment make them final. Medians: a count
of the codes in buckets brackets the median, quickselect finishes within (``_order_stats``):
linear time per node, O(n·d·log n) overall. Each block of segments of a thread's share reuses
one set of scratch arrays. Library calls with heavy numba implementations (np.partition, np.argsort,
np.searchsorted) are replaced by small loops, which keeps the first-call compile short.
A compiled call takes and drops a reference on every array argument (a tuple bundle counts
each of its arrays), which was about a third of the kernel's time at 1M rows, most segments
being small: the per-segment step is written inside ``_split_segments``' loop, ``_choose_cut``
is inlined (``inline="always"``), numeric cuts call ``_median_cut`` with the four arrays it
reads, and the split gathers each side's extremes as it places the rows (no second pass).
"""
import os
import threading
from concurrent.futures import ThreadPoolExecutor, wait
from typing import NamedTuple

import numba
import numpy as np

from ..._numba_config import njit
from ...ncp import cat_ncp
from ...taxonomy._lca import lca_of_range as _lca
from ...privacy._kernels import split_ok
from ._order_stats import count_scratch_size, median_stats

class Dims(NamedTuple):
    """What the kernels know about the dimensions of ``W`` besides their values."""
    scale: np.ndarray        # float64 (d,): width divisor (numeric: range / weight; categorical:
    #                          1 / weight; objectives.weighted_scale)
    tree_of: np.ndarray      # int64 (d,): packed tree of a categorical dimension, -1 if numeric
    leaf_order_fallback: bool  # categorical: median cut in leaf order when no tree cut is allowable
    vals: np.ndarray         # float64: coordinate of each code, dimension j at vals_off[j]: (the
    #                          leaf ordinal itself for a categorical dimension)
    vals_off: np.ndarray     # int64 (d + 1,)


class Scratch(NamedTuple):
    """Per-thread scratch reused across the segments of a block (small segments allocate nothing)."""
    seg: np.ndarray     # float64 (4, d): widths, min, max, estimated gain per dimension
    tried: np.ndarray   # bool (d,)
    Ws: np.ndarray      # int32 (2*SAMPLE_ROWS+1, d): the strided sample of a large segment
    buf: np.ndarray     # float64 (>= rows of the longest segment): median selection
    cnt: np.ndarray     # int32 (count_scratch_size(rows of the longest segment)): median counts
    bounds: np.ndarray  # float64 (max leaves + 1,): tree-cut boundaries
    tscr: np.ndarray    # int64 (5, max leaves + 1): tree-cut counters
    phist: np.ndarray   # float64 (2, M + 1): privacy-model histograms of the two sides
    pscr: np.ndarray    # float64 (4, ...): privacy-model scratch


TIE = 0.05  # dimensions within 5 % of the widest normalized width compete on NCP gain
SAMPLE_ROWS = 128  # segments larger than twice this rank tied dimensions on a strided sample


@njit
def _tree_width(trees, t, lo, hi):
    """Leaves under the LCA of leaf ordinals lo..hi over the leaves of the root, in packed tree
    t (``qidata.PackedTrees``); 0 for a single leaf. O(tree depth)."""
    if hi <= lo:
        return 0.0
    lf = trees.leaf_node[trees.leaf_off[t]:trees.leaf_off[t + 1]]
    no = trees.node_off[t]
    nx = trees.node_off[t + 1]
    u = _lca(lf, trees.parent[no:nx], trees.leaf_hi[no:nx], int(lo), int(hi))
    return trees.n_leaves[no + u] / trees.n_leaves[no]


INT32_MAX = np.int32(2147483647)
INT32_MIN = np.int32(-2147483648)
EXTREMES_LANES = 8  # rows folded together per step of ``_block_extremes``


@njit
def _block_extremes(W, s, e, lo, hi, fold):
    """Smallest and largest code per dimension of rows s:e into ``lo``/``hi`` (int32 (d,)).
    The rows are one contiguous run of codes: it is folded EXTREMES_LANES rows at a time into
    running extremes of EXTREMES_LANES·d codes (a plain elementwise min/max over contiguous
    memory, which the compiler vectorizes), then the lanes are folded per dimension. ``fold``:
    int32 (2, EXTREMES_LANES·d) scratch. O((e-s)·d)."""
    d = W.shape[1]
    for c in range(d):
        lo[c] = INT32_MAX
        hi[c] = INT32_MIN
    n = e - s
    width = EXTREMES_LANES * d
    full = n // EXTREMES_LANES
    if full > 0:
        flat = W.reshape(W.shape[0] * d)
        mn = fold[0]
        mx = fold[1]
        for u in range(width):
            mn[u] = flat[s * d + u]
            mx[u] = mn[u]
        for r in range(1, full):
            base = (s + r * EXTREMES_LANES) * d
            for u in range(width):
                v = flat[base + u]
                mn[u] = min(mn[u], v)
                mx[u] = max(mx[u], v)
        for u in range(width):
            c = u % d
            lo[c] = min(lo[c], mn[u])
            hi[c] = max(hi[c], mx[u])
    for i in range(s + full * EXTREMES_LANES, e):
        for c in range(d):
            v = W[i, c]
            lo[c] = min(lo[c], v)
            hi[c] = max(hi[c], v)


@njit
def _upper_bound(sorted_vals, nb, x):
    """Index of the first of sorted_vals[:nb] that is >= x (binary search)."""
    lo = 0
    hi = nb
    while lo < hi:
        mid = (lo + hi) // 2
        if sorted_vals[mid] < x:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit
def _side_ncp(n_nonempty, only_child, u, n_leaves, no):
    """NCP bound of one side of a tree cut: the single non-empty child's, else the LCA's."""
    node = only_child if n_nonempty == 1 else u
    return cat_ncp(n_leaves[no + node], n_leaves[no])


@njit
def _tree_cut(W, s, e, j, k, t, trees, seg_lo, seg_hi, sc):
    """Cut along the taxonomy between two children of the segment's LCA (all leaves of a child
    stay on one side) and its cost, or (NaN, inf). The two boundaries next to the child holding
    the median row compete on the row-weighted NCP of the two sides (a side left with one child
    drops to that child); if neither is allowable, the most balanced allowable boundary.
    Requires seg_lo[j] < seg_hi[j] (the kernel cuts only dimensions of positive width).
    ``t`` is the dimension's packed tree (``trees``: ``qidata.PackedTrees``), ``sc`` a
    :class:`Scratch`. O(e-s + leaves under the LCA); O(e-s) when the LCA's children are leaves
    (flat trees, the default for a QI without a taxonomy) and outnumber the rows, see
    ``_leaf_children_cut``."""
    no = trees.node_off[t]
    nx = trees.node_off[t + 1]
    lf = trees.leaf_node[trees.leaf_off[t]:trees.leaf_off[t + 1]]
    par = trees.parent[no:nx]
    lh = trees.leaf_hi[no:nx]
    n_leaves = trees.n_leaves
    bounds = sc.bounds
    tscr = sc.tscr
    u = _lca(lf, par, lh, int(seg_lo[j]), int(seg_hi[j]))
    if trees.sub_height[no + u] == 1 and int(seg_hi[j]) - int(seg_lo[j]) >= e - s:
        # many leaves, few rows: O(rows) beats the O(rows + leaves) walk below
        return _leaf_children_cut(W, s, e, j, k, n_leaves[no + u] / n_leaves[no], seg_lo, seg_hi,
                                  sc)
    # boundaries = last leaf of each child of u that intersects the segment's leaf range
    kids = tscr[0]
    hist = tscr[1]
    suf_n = tscr[2]
    suf_c = tscr[3]
    nb = 0
    leaf = int(seg_lo[j])
    while leaf <= seg_hi[j]:
        c = lf[leaf]
        while par[c] != u:
            c = par[c]
        bounds[nb] = lh[c]
        kids[nb] = c
        nb += 1
        leaf = lh[c] + 1
    if nb < 2:
        return np.nan, np.inf
    hist[:nb] = 0
    lo_leaf = int(seg_lo[j])
    n_range = int(seg_hi[j]) - lo_leaf + 1
    if n_range <= 4 * (e - s) + 64:
        # child index per leaf of the segment's range, then one lookup per row
        loc = tscr[4]
        b = 0
        for off in range(n_range):
            if lo_leaf + off > bounds[b]:
                b += 1
            loc[off] = b
        for i in range(s, e):
            hist[loc[int(W[i, j]) - lo_leaf]] += 1
    else:
        for i in range(s, e):
            hist[_upper_bound(bounds, nb, W[i, j])] += 1
    # suffix: non-empty children count and the last one seen, for the right side of each cut
    suf_n[nb] = 0
    suf_c[nb] = -1
    for b in range(nb - 1, -1, -1):
        suf_n[b] = suf_n[b + 1] + (1 if hist[b] > 0 else 0)
        suf_c[b] = kids[b] if hist[b] > 0 else suf_c[b + 1]
    n = e - s
    # the child holding the median row; the boundaries on either side of it are the candidates
    # (cuts elsewhere would peel off small children one at a time and deepen the recursion)
    med = 0
    acc = hist[0]
    while acc * 2 < n:
        med += 1
        acc += hist[med]
    # one pass over the boundaries: the cheapest of the two next to the median child, and the
    # most balanced allowable one as the fallback
    best_cut = np.nan
    best_cost = np.inf
    best_bal = -1
    bal_cut = np.nan
    bal_cost = np.inf
    bal_best = -1
    left = 0
    pre_n = 0
    pre_c = -1
    for b in range(nb - 1):
        left += hist[b]
        if hist[b] > 0:
            pre_n += 1
            pre_c = kids[b]
        right = n - left
        if left < k or right < k:
            continue
        cost = left * _side_ncp(pre_n, pre_c, u, n_leaves, no) \
            + right * _side_ncp(suf_n[b + 1], suf_c[b + 1], u, n_leaves, no)
        bal = min(left, right)
        if bal > bal_best:
            bal_best = bal
            bal_cut = bounds[b]
            bal_cost = cost
        if (b == med - 1 or b == med) and (cost < best_cost or (cost == best_cost and bal > best_bal)):
            best_cost = cost
            best_bal = bal
            best_cut = bounds[b]
    if best_cut != best_cut:
        return bal_cut, bal_cost
    return best_cut, best_cost


@njit
def _leaf_children_cut(W, s, e, j, k, ncp_u, seg_lo, seg_hi, sc):
    """``_tree_cut`` when every child of the segment's LCA u is a leaf: a boundary between two
    children is a cut between two leaf ordinals, and the two boundaries next to the child
    holding the median row are '< m' and '<= m' for the median leaf m. Same choice as the
    general path (lower row-weighted NCP, then the more balanced, '< m' first; a side with
    one leaf costs 0, else NCP(u)); when neither is allowable no other boundary is either (one
    side of each already holds fewer than k rows). Expected O(e-s)."""
    n = e - s
    m, below, above, n_below, n_above = median_stats(W, s, e, j, sc.buf, seg_lo[j], seg_hi[j],
                                                     sc.cnt)
    best_cut = np.nan
    best_cost = np.inf
    best_bal = -1
    for ci in range(2):
        if ci == 0:  # '< m'
            cut = below
            left = n_below
            left_single = seg_lo[j] == below
            right_single = m == seg_hi[j]
        else:  # '<= m'
            cut = m
            left = n - n_above
            left_single = seg_lo[j] == m
            right_single = above == seg_hi[j]
        right = n - left
        if left < k or right < k:
            continue
        cost = left * (0.0 if left_single else ncp_u) + right * (0.0 if right_single else ncp_u)
        bal = min(left, right)
        if cost < best_cost or (cost == best_cost and bal > best_bal):
            best_cost = cost
            best_bal = bal
            best_cut = cut
    return best_cut, best_cost


@njit
def _median_cut(W, s, e, j, k, seg_lo, seg_hi, scale_j, buf, cnt, vals, vals_off):
    """Median cut on dimension j: '<= m' or '< m' (m the median), the most balanced allowable
    one, with its cost (row-weighted normalized span of the two sides, in coordinates, see
    :class:`Dims`), or (NaN, inf). ``buf``/``cnt``: :class:`Scratch`'s. It takes the few arrays it
    reads, not the bundles: every array argument costs a reference count pair per call, and
    this runs once per tied numeric dimension of every segment.
    Expected linear time (see median_stats)."""
    n = e - s
    m, below, above, n_below, n_above = median_stats(W, s, e, j, buf, seg_lo[j], seg_hi[j], cnt)
    best_cut = np.nan
    best_cost = np.inf
    best_bal = -1
    for ci in range(2):
        # candidate 0: '<= m' (next value above), candidate 1: '< m' i.e. '<= below'
        cut = m if ci == 0 else below
        nxt = above if ci == 0 else m
        left = n - n_above if ci == 0 else n_below
        if not (cut >= seg_lo[j]) or not (cut < seg_hi[j]):
            continue
        right = n - left
        if left >= k and right >= k and min(left, right) > best_bal:
            best_bal = min(left, right)
            best_cut = cut
            o = vals_off[j]  # coordinates of dimension j: vals[o + code]
            best_cost = (left * (vals[o + np.int64(cut)] - vals[o + np.int64(seg_lo[j])])
                         + right * (vals[o + np.int64(seg_hi[j])]
                                    - vals[o + np.int64(nxt)])) / scale_j
    return best_cut, best_cost


@njit(inline="always")
def _choose_cut(W, s, e, j, k, dims, trees, seg_lo, seg_hi, sc):
    """Best allowable cut on dimension j (rows with value <= cut go left) and its cost
    (row-weighted NCP of the two sides on dimension j, times the QI's weight through
    ``scale``), or (NaN, inf).

    Numeric: median cut. Categorical: cut along the taxonomy (children of the LCA); when no such
    cut is allowable and ``leaf_order_fallback`` is set, a median cut in depth-first leaf order.
    """
    t = dims.tree_of[j]
    if t < 0:
        return _median_cut(W, s, e, j, k, seg_lo, seg_hi, dims.scale[j], sc.buf, sc.cnt,
                           dims.vals, dims.vals_off)
    cut, cost = _tree_cut(W, s, e, j, k, t, trees, seg_lo, seg_hi, sc)
    if cut == cut or not dims.leaf_order_fallback:
        return cut, cost / dims.scale[j]  # scale[j] = 1 / the QI's weight
    cut, _ = _median_cut(W, s, e, j, k, seg_lo, seg_hi, 1.0, sc.buf, sc.cnt, dims.vals,
                         dims.vals_off)
    return cut, (e - s) * 1.0 / dims.scale[j]  # a leaf-order cut does not shrink the LCA: no gain


@njit
def _split_in_place(W, perm, j, s, e, cut, kid_lo, kid_hi, r):
    """Reorder rows s:e of W and perm so rows with W[:, j] <= cut come first; returns the split.
    Also the smallest and largest code per dimension of each side (``kid_lo[r]``/``kid_hi[r]``
    int32 (2, d), left then right), gathered as each row is placed (no second pass). The order of the rows is part of the
    contract: the tie ranking samples rows by position, so this swap sequence (scan from the
    left, swap a row above the cut with the last unplaced row) must stay as it is."""
    d = W.shape[1]
    c_int = np.int32(cut)  # a cut is a code (an integer)
    for c in range(d):
        kid_lo[r, 0, c] = INT32_MAX
        kid_hi[r, 0, c] = INT32_MIN
        kid_lo[r, 1, c] = INT32_MAX
        kid_hi[r, 1, c] = INT32_MIN
    i = s
    jj = e - 1
    while i <= jj:
        if W[i, j] <= c_int:
            for c in range(d):
                v = W[i, c]
                kid_lo[r, 0, c] = min(kid_lo[r, 0, c], v)
                kid_hi[r, 0, c] = max(kid_hi[r, 0, c], v)
            i += 1
        else:
            for c in range(d):
                t = W[i, c]
                W[i, c] = W[jj, c]
                W[jj, c] = t
                kid_lo[r, 1, c] = min(kid_lo[r, 1, c], t)
                kid_hi[r, 1, c] = max(kid_hi[r, 1, c], t)
            p = perm[i]
            perm[i] = perm[jj]
            perm[jj] = p
            jj -= 1
    return i


@njit
def _split_segments(W, perm, seg_s, seg_e, seg_lo, seg_hi, a, b, k, dims, trees, P, split,
                    kid_lo, kid_hi, depth, df_rows, fin, fin_lo, fin_hi, stop):
    """One thread's share of a round: segments a:b (rows seg_s[r]:seg_e[r] of ``W``/``perm``,
    extremes ``seg_lo[r]``/``seg_hi[r]``) each split in place or left whole: ``split[r]`` is
    the split position (the two sides' extremes in ``kid_lo[r]``/``kid_hi[r]``, see
    ``_split_in_place``) or -1 when no allowable cut exists. A cut is allowable when both sides
    have k rows and satisfy every privacy model of ``P`` (``privacy._kernels.split_ok``, linear
    in the segment; skipped for k alone). ``dims`` (:class:`Dims`), ``trees``
    (``qidata.PackedTrees``).

    A segment of at most ``df_rows`` rows is finished here, depth first (an explicit stack,
    smaller side first): ``split[r]`` is -1 and every final class of its subtree, like every
    segment left whole, goes to its slot of ``fin``/``fin_lo``/``fin_hi`` (``_final_classes``)
    with its depth (this round's ``depth``, plus one per split below). ``stop``: the run's
    interrupt flag, read before each segment.

    Segments are disjoint row blocks, so shares run in parallel threads without races. The
    share is taken in BLOCKS blocks of segments, each with scratch arrays (:class:`Scratch`)
    sized by its longest segment (one set for the whole share kept the first round's size in
    every round: about 3 % more kernel CPU at 1M rows). The per-segment step is written in the
    loop, not in a function: a call, even an inlined one, takes and drops a reference on each
    of its ~30 arrays, about 20 % of the kernel's time at 1M rows. O(rows of the share · d)
    expected."""
    d = W.shape[1]
    max_leaves = 1
    for t in range(trees.leaf_off.size - 1):
        max_leaves = max(max_leaves, trees.leaf_off[t + 1] - trees.leaf_off[t])
    if P is None:  # k alone: numba prunes the other branch, and split_ok's model checks
        m_hist = 1
        m_scr = 1
    else:
        m_hist = P[5].shape[0] + 1
        m_scr = max(P[5].shape[0], P[6].shape[0]) + 1
    scale = dims.scale
    tree_of = dims.tree_of
    vals = dims.vals
    vals_off = dims.vals_off
    seg = np.empty((4, d))  # per segment: widths, extremes (float64), estimated gains
    w = seg[0]
    lo = seg[1]
    hi = seg[2]
    est = seg[3]
    tried = np.empty(d, dtype=np.bool_)
    Ws = np.empty((2 * SAMPLE_ROWS + 1, d), dtype=np.int32)
    # the segments still to do of a depth-first subtree: start, end, depth, extremes
    st = np.empty((3, STACK), dtype=np.int64)
    st_lo = np.empty((STACK, d), dtype=np.int32)
    st_hi = np.empty((STACK, d), dtype=np.int32)
    kl = np.empty((1, 2, d), dtype=np.int32)  # the two sides' extremes of the last split
    kh = np.empty((1, 2, d), dtype=np.int32)
    step = max(1, (b - a) // BLOCKS)
    for a0 in range(a, b, step):
        b0 = min(b, a0 + step)
        longest = 1
        for r in range(a0, b0):
            longest = max(longest, seg_e[r] - seg_s[r])
        sc = Scratch(seg, tried, Ws, np.empty(longest),
                     np.empty(count_scratch_size(longest), dtype=np.int32),
                     np.empty(max_leaves + 1), np.empty((5, max_leaves + 1), dtype=np.int64),
                     np.empty((2, m_hist)), np.empty((4, m_scr)))
        buf = sc.buf
        cnt = sc.cnt
        for r in range(a0, b0):
            split[r] = -1
            deep = seg_e[r] - seg_s[r] <= df_rows  # its whole subtree here, depth first
            st[0, 0] = seg_s[r]
            st[1, 0] = seg_e[r]
            st[2, 0] = depth
            for c in range(d):
                st_lo[0, c] = seg_lo[r, c]
                st_hi[0, c] = seg_hi[r, c]
            top = 1
            while top > 0 and stop[0] == 0:
                top -= 1
                s = st[0, top]
                e = st[1, top]
                dep = st[2, top]
                pos = np.int64(-1)
                if e - s >= 2 * k:
                    # normalized width of each dimension (numeric: span / range; categorical:
                    # leaves(LCA) / leaves(root)), divided by scale[j] (numeric: range / weight;
                    # categorical: 1 / weight, see objectives.weighted_scale), from the segment's
                    # smallest and largest codes, also kept as float64 in lo/hi for the cut functions
                    for jj in range(d):
                        x = np.float64(st_lo[top, jj])
                        y = np.float64(st_hi[top, jj])
                        lo[jj] = x
                        hi[jj] = y
                        if tree_of[jj] < 0:
                            o = vals_off[jj]  # coordinates of dimension jj: vals[o + code]
                            w[jj] = (vals[o + np.int64(y)] - vals[o + np.int64(x)]) / scale[jj]
                        else:
                            w[jj] = _tree_width(trees, tree_of[jj], x, y) / scale[jj]
                        tried[jj] = False
                    n = e - s
                    # Large segments rank tied dimensions on a strided sample (cheap), then cut exactly.
                    stride = n // SAMPLE_ROWS if n > 2 * SAMPLE_ROWS else 1
                    m = n // stride
                    ks = 1
                    if stride > 1:
                        for i in range(m):
                            for c in range(d):
                                Ws[i, c] = W[s + i * stride, c]
                        ks = max(1, (k * m) // n)
                    while pos < 0:
                        wmax = 0.0  # widest dimension not tried yet
                        for jj in range(d):
                            if not tried[jj] and w[jj] > wmax:
                                wmax = w[jj]
                        if wmax <= 0.0:
                            break  # nothing left to try: a final class
                        # Dimensions tied for the widest compete: the cut that lowers NCP most wins.
                        n_tied = 0
                        for jj in range(d):
                            est[jj] = np.nan
                            if not tried[jj] and w[jj] >= wmax * (1.0 - TIE):
                                n_tied += 1
                                est[jj] = np.inf
                        if n_tied > 1 and stride > 1:
                            for jj in range(d):
                                if est[jj] == est[jj]:
                                    if tree_of[jj] < 0:
                                        cut, cost = _median_cut(Ws, np.int64(0), m, jj, ks, lo, hi,
                                                                scale[jj], buf, cnt, vals, vals_off)
                                    else:
                                        cut, cost = _choose_cut(Ws, np.int64(0), m, jj, ks, dims, trees,
                                                                lo, hi, sc)
                                    est[jj] = m * w[jj] - cost if cut == cut else -np.inf
                            for _ in range(n_tied):  # exact cuts by estimated gain; first allowable wins
                                jbest = np.int64(-1)
                                for jj in range(d):
                                    if est[jj] == est[jj] and not tried[jj] \
                                            and (jbest < 0 or est[jj] > est[jbest]):
                                        jbest = jj
                                tried[jbest] = True
                                if tree_of[jbest] < 0:
                                    cut, cost = _median_cut(W, s, e, jbest, k, lo, hi, scale[jbest], buf,
                                                            cnt, vals, vals_off)
                                else:
                                    cut, cost = _choose_cut(W, s, e, jbest, k, dims, trees, lo, hi, sc)
                                if cut == cut and split_ok(W, perm, s, e, jbest, cut, P, sc.phist,
                                                           sc.pscr):
                                    pos = _split_in_place(W, perm, jbest, s, e, cut, kl, kh, 0)
                                    break
                            continue
                        best_j = np.int64(-1)
                        best_cut = np.nan
                        best_gain = -np.inf
                        for jj in range(d):
                            if est[jj] != est[jj]:
                                continue
                            tried[jj] = True
                            if tree_of[jj] < 0:
                                cut, cost = _median_cut(W, s, e, jj, k, lo, hi, scale[jj], buf, cnt,
                                                        vals, vals_off)
                            else:
                                cut, cost = _choose_cut(W, s, e, jj, k, dims, trees, lo, hi, sc)
                            if cut == cut and n * w[jj] - cost > best_gain \
                                    and split_ok(W, perm, s, e, jj, cut, P, sc.phist, sc.pscr):
                                best_gain = n * w[jj] - cost
                                best_j = jj
                                best_cut = cut
                        if best_j >= 0:
                            pos = _split_in_place(W, perm, best_j, s, e, best_cut, kl, kh, 0)
                        else:
                            continue  # none of the tied dimensions: the next widest are tried
                if pos < 0:  # a final class, in the slot of its first row (see _final_classes)
                    slot = s // k
                    fin[0, slot] = s
                    fin[1, slot] = e
                    fin[2, slot] = dep
                    for c in range(d):
                        fin_lo[slot, c] = st_lo[top, c]
                        fin_hi[slot, c] = st_hi[top, c]
                elif deep:  # the larger side first: the smaller pops next, the stack stays
                    #         below log2(rows) entries
                    big = 0 if pos - s >= e - pos else 1
                    for q in range(2):
                        side = big if q == 0 else 1 - big
                        st[0, top] = s if side == 0 else pos
                        st[1, top] = pos if side == 0 else e
                        st[2, top] = dep + 1
                        for c in range(d):
                            st_lo[top, c] = kl[0, side, c]
                            st_hi[top, c] = kh[0, side, c]
                        top += 1
                else:
                    split[r] = pos
                    for q in range(2):
                        for c in range(d):
                            kid_lo[r, q, c] = kl[0, q, c]
                            kid_hi[r, q, c] = kh[0, q, c]


BLOCKS = 32  # a share's segments are taken in this many blocks, each with scratch sized to it
STACK = 128  # depth-first stack entries (the smaller side pops first: at most log2(rows) + 1)
DEPTH_FIRST_BYTES = 1 << 19  # segments whose rows of W and perm fit in this many bytes (half an
#                              L2 cache) are finished depth first inside their round's share


def depth_first_rows(d: int) -> int:
    """Segments of at most this many rows (of ``d`` codes) are finished depth first."""
    return DEPTH_FIRST_BYTES // (4 * d + 8)


@njit
def _close_round(seg_s, seg_e, split, kid_lo, kid_hi):
    """After a round: each split segment (``split[i] >= 0``) gives the next round's two
    segments, left then right (the others are final classes, or were finished depth first).
    Returns (seg_s, seg_e, seg_lo, seg_hi) of the next round. O(segments · d)."""
    m = seg_s.size
    d = kid_lo.shape[2]
    n_open = 0
    for i in range(m):
        if split[i] >= 0:
            n_open += 2
    new_s = np.empty(n_open, dtype=np.int64)
    new_e = np.empty(n_open, dtype=np.int64)
    new_lo = np.empty((n_open, d), dtype=np.int32)
    new_hi = np.empty((n_open, d), dtype=np.int32)
    p = 0
    for i in range(m):
        if split[i] >= 0:
            new_s[p] = seg_s[i]
            new_e[p] = split[i]
            new_s[p + 1] = split[i]
            new_e[p + 1] = seg_e[i]
            for c in range(d):  # element loops: a row assignment compiles numba's
                new_lo[p, c] = kid_lo[i, 0, c]  # shape-error formatting (~1.5 s cold)
                new_hi[p, c] = kid_hi[i, 0, c]
                new_lo[p + 1, c] = kid_lo[i, 1, c]
                new_hi[p + 1, c] = kid_hi[i, 1, c]
            p += 2
    return new_s, new_e, new_lo, new_hi


@njit
def _final_classes(perm, fin, fin_lo, fin_hi):
    """(ec int64 (perm.size,), lo, hi float64 (C, d)) from the final classes in their slots:
    slot q holds the class whose first row is s = fin[0, q] with q = s // k (two classes of k
    rows or more never share a slot), its end fin[1, q] (-1: empty slot), its depth in the
    tree fin[2, q] (the round a breadth-first run would have made it final in) and its
    extremes fin_lo[q]/fin_hi[q]. Classes are numbered by depth, then first row: the order in
    which breadth-first rounds over all segments make them final, whichever segments were
    finished depth first. Rows of no class (after an interrupt) are left unset. O(n + slots)."""
    n_slots = fin.shape[1]
    d = fin_lo.shape[1]
    top = np.int64(0)
    n_fin = np.int64(0)
    for q in range(n_slots):
        if fin[1, q] >= 0:
            top = max(top, fin[2, q])
            n_fin += 1
    first = np.zeros(top + 2, dtype=np.int64)  # first class number of each depth
    for q in range(n_slots):
        if fin[1, q] >= 0:
            first[fin[2, q] + 1] += 1
    for t in range(top + 1):
        first[t + 1] += first[t]
    ec = np.empty(perm.size, dtype=np.int64)
    lo = np.empty((n_fin, d))
    hi = np.empty((n_fin, d))
    for q in range(n_slots):
        if fin[1, q] >= 0:
            c = first[fin[2, q]]
            first[fin[2, q]] += 1
            for j in range(d):
                lo[c, j] = fin_lo[q, j]
                hi[c, j] = fin_hi[q, j]
            for i in range(fin[0, q], fin[1, q]):
                ec[perm[i]] = c
    return ec, lo, hi


PARALLEL_MIN_ROWS = 1 << 14  # rounds over fewer rows run in the calling thread alone


def threads() -> int:
    """Threads a Mondrian round uses: numba's configured count (``NUMBA_NUM_THREADS``, default
    the CPU count), read without starting numba's threading layer, which nothing here uses."""
    return max(1, int(numba.config.NUMBA_NUM_THREADS))


def _shares(seg_s, seg_e, n_threads):
    """Boundaries (n_shares + 1,) cutting the round's segments into contiguous shares of about
    equal rows, at most ``n_threads`` of them, none empty. O(segments)."""
    m = seg_s.size
    rows = np.cumsum(seg_e - seg_s)
    if n_threads < 2 or m < 2 or rows[-1] < PARALLEL_MIN_ROWS:
        return np.array([0, m])
    cuts = np.searchsorted(rows, rows[-1] * np.arange(1, n_threads) / n_threads) + 1
    return np.unique(np.concatenate(([0], np.minimum(cuts, m), [m])))


_POOLS: dict = {}  # (process id, workers) -> ThreadPoolExecutor shared by the runs
_POOLS_LOCK = threading.Lock()


def _pool(workers: int) -> ThreadPoolExecutor:
    """The process's pool of ``workers`` threads for the rounds' shares, started on first use
    and kept: starting and joining a thread per run cost about 1 ms of every small run. Keyed
    by process id too, so a forked child (whose copy has no threads) starts its own. Runs in
    parallel threads share it: a share waits for a free worker, while each run's own share
    runs in its calling thread."""
    key = (os.getpid(), workers)
    pool = _POOLS.get(key)
    if pool is None:
        with _POOLS_LOCK:
            pool = _POOLS.get(key)
            if pool is None:
                pool = _POOLS[key] = ThreadPoolExecutor(workers, thread_name_prefix="kanon-mondrian")
    return pool


def mondrian_partition(W, k, dims, trees, stop, P, n_threads=None):
    """Strict Mondrian. W int32 (n, d) codes IN, permuted in place (scratch). Returns (ec int64
    (n,), classes numbered 0..C-1; lo, hi float64 (C, d): per class and dimension the smallest
    and largest code of W, gathered by the split that made the class, so no pass over the
    class's rows is needed).

    Every class has at least k rows (requires n >= k). ``stop`` is the run's uint8[1] interrupt
    flag (``kanon_duckdb.interrupt``): when set, the kernel returns early with a partial result
    that the caller discards. Every class satisfies the
    privacy models of ``P`` (``privacy._kernels``) when the whole table does. ``P`` is None
    when no model looks at sensitive values: that specialization compiles no privacy kernel.

    Breadth-first rounds driven from Python: each round's open segments are cut into shares of
    about equal rows, one per thread (``n_threads``, default :func:`threads`), and the shares
    run ``_split_segments`` (nogil) in parallel; segments of at most ``depth_first_rows`` rows
    are finished depth first within their round (cache resident); classes are numbered in the
    order breadth-first rounds make them final (depth, then position). No ``prange``: a parallel kernel compiled its whole call tree
    again for its gufunc, about 4 s of every cold first run. O(n·d·log n) expected.
    """
    n, d = W.shape
    k = np.int64(k)
    n_threads = threads() if n_threads is None else max(1, int(n_threads))
    perm = np.arange(n, dtype=np.int64)
    seg_s = np.zeros(1, dtype=np.int64)
    seg_e = np.full(1, n, dtype=np.int64)
    seg_lo = np.empty((1, d), dtype=np.int32)  # smallest / largest code per open segment
    seg_hi = np.empty((1, d), dtype=np.int32)
    _block_extremes(W, np.int64(0), np.int64(n), seg_lo[0], seg_hi[0],
                    np.empty((2, EXTREMES_LANES * d), np.int32))
    cap = n // k + 1  # slots of the final classes (see _final_classes)
    fin = np.empty((3, cap), dtype=np.int64)
    fin[1] = -1
    fin_lo = np.empty((cap, d), dtype=np.int32)
    fin_hi = np.empty((cap, d), dtype=np.int32)
    df_rows = np.int64(depth_first_rows(d))
    depth = np.int64(0)
    pool = None
    while seg_s.size > 0 and stop[0] == 0:
        m = seg_s.size
        split = np.empty(m, dtype=np.int64)
        kid_lo = np.empty((m, 2, d), dtype=np.int32)
        kid_hi = np.empty((m, 2, d), dtype=np.int32)
        bounds = _shares(seg_s, seg_e, n_threads)
        args = (W, perm, seg_s, seg_e, seg_lo, seg_hi)
        rest = (k, dims, trees, P, split, kid_lo, kid_hi, depth, df_rows, fin, fin_lo, fin_hi,
                stop)
        if bounds.size > 2 and pool is None:
            pool = _pool(n_threads - 1)
        others = [pool.submit(_split_segments, *args, bounds[t], bounds[t + 1], *rest)
                  for t in range(1, bounds.size - 1)]
        try:
            _split_segments(*args, bounds[0], bounds[1], *rest)
        finally:
            wait(others)  # no share outlives its round, also when this one raised
        for f in others:
            f.result()
        seg_s, seg_e, seg_lo, seg_hi = _close_round(seg_s, seg_e, split, kid_lo, kid_hi)
        depth += 1
    return _final_classes(perm, fin, fin_lo, fin_hi)
