"""Numba kernels of strict multidimensional Mondrian (LeFevre, DeWitt, Ramakrishnan 2006).

Data layout: ``X`` float64 (d, n), one row per QI (numeric values, or the leaf ordinal of a
categorical value), so a dimension of a segment is a gather ``X[j, idx[s:e]]``.
A categorical dimension j has ``tree_of[j] >= 0`` naming its packed tree (see base.pack_trees).

Work is breadth-first: every round processes all open segments in parallel (``prange``); each
segment either splits into two contiguous halves of ``idx`` (in place, disjoint slices, so no
races) or becomes final. Median selection is ``np.partition`` on a copy of the segment's values:
linear time per node, O(n·d·log n) overall.
"""
import numpy as np
from numba import prange

from ..._numba_config import njit, njit_parallel


@njit
def _lca(leaf_node, parent, leaf_hi, lo, hi):
    u = leaf_node[lo]
    while leaf_hi[u] < hi:
        u = parent[u]
    return u


@njit
def _segment_widths(X, idx, s, e, scale, tree_of, leaf_node, leaf_off, parent, leaf_hi, n_leaves,
                    node_off, out_w, out_lo, out_hi):
    """Normalized width of each dimension on idx[s:e] (numeric: span/range; categorical:
    leaves(LCA)/leaves(root), 0 for a single leaf). Also returns min/max per dimension."""
    d = X.shape[0]
    for j in range(d):
        lo = np.inf
        hi = -np.inf
        row = X[j]
        for i in range(s, e):
            v = row[idx[i]]
            if v < lo:
                lo = v
            if v > hi:
                hi = v
        out_lo[j] = lo
        out_hi[j] = hi
        t = tree_of[j]
        if t < 0:
            out_w[j] = (hi - lo) / scale[j]
        elif hi > lo:
            lo_i = int(lo)
            hi_i = int(hi)
            lf = leaf_node[leaf_off[t]:leaf_off[t + 1]]
            no = node_off[t]
            u = _lca(lf, parent[no:node_off[t + 1]], leaf_hi[no:node_off[t + 1]], lo_i, hi_i)
            out_w[j] = n_leaves[no + u] / n_leaves[no]
        else:
            out_w[j] = 0.0


@njit
def _count_le(row, idx, s, e, cut):
    c = 0
    for i in range(s, e):
        if row[idx[i]] <= cut:
            c += 1
    return c


@njit
def _choose_cut(X, idx, s, e, j, k, tree_of, leaf_node, leaf_off, parent, leaf_hi, leaf_lo, node_off,
                seg_lo, seg_hi, buf):
    """Best allowable cut value on dimension j (rows with value <= cut go left), or NaN.

    Candidates: the median m as '<= m' and as '< m' (i.e. '<= predecessor'); for a categorical
    dimension also the boundaries of the child subtree of the segment's LCA that holds m, so cuts
    follow the tree when they can. Among allowable candidates (both sides >= k) the most balanced
    wins.
    """
    n = e - s
    row = X[j]
    for i in range(n):
        buf[i] = row[idx[s + i]]
    mid = (n - 1) // 2
    part = np.partition(buf[:n], mid)
    m = part[mid]
    # largest value strictly below m (for the '< m' candidate)
    below = -np.inf
    for i in range(mid):
        if part[i] > below:
            below = part[i]
    best_cut = np.nan
    best_bal = -1
    ncand = 2
    cands = np.empty(4)
    cands[0] = m
    cands[1] = below
    t = tree_of[j]
    if t >= 0:
        no = node_off[t]
        lf = leaf_node[leaf_off[t]:leaf_off[t + 1]]
        par = parent[no:node_off[t + 1]]
        lh = leaf_hi[no:node_off[t + 1]]
        u = _lca(lf, par, lh, int(seg_lo[j]), int(seg_hi[j]))
        # child of u containing m
        c = lf[int(m)]
        while par[c] != u and par[c] >= 0:
            c = par[c]
        cands[2] = lh[c]
        cands[3] = leaf_lo[no + c] - 1
        ncand = 4
    for ci in range(ncand):
        cut = cands[ci]
        if not (cut >= seg_lo[j]) or not (cut < seg_hi[j]):
            continue
        left = _count_le(row, idx, s, e, cut)
        right = n - left
        if left >= k and right >= k:
            bal = min(left, right)
            if bal > best_bal:
                best_bal = bal
                best_cut = cut
    return best_cut


@njit
def _split_in_place(row, idx, s, e, cut):
    """Reorder idx[s:e] so rows with value <= cut come first; returns the split position."""
    i = s
    jj = e - 1
    while i <= jj:
        if row[idx[i]] <= cut:
            i += 1
        else:
            t = idx[i]
            idx[i] = idx[jj]
            idx[jj] = t
            jj -= 1
    return i


@njit
def _process_segment(X, idx, s, e, k, scale, tree_of, leaf_node, leaf_off, parent, leaf_hi,
                     leaf_lo, n_leaves, node_off):
    """Try to split idx[s:e]; returns the split position or -1 when no allowable cut exists."""
    d = X.shape[0]
    if e - s < 2 * k:
        return -1
    w = np.empty(d)
    lo = np.empty(d)
    hi = np.empty(d)
    _segment_widths(X, idx, s, e, scale, tree_of, leaf_node, leaf_off, parent, leaf_hi, n_leaves,
                    node_off, w, lo, hi)
    order = np.argsort(-w)
    buf = np.empty(e - s)
    for oi in range(d):
        j = order[oi]
        if w[j] <= 0.0:
            break
        cut = _choose_cut(X, idx, s, e, j, k, tree_of, leaf_node, leaf_off, parent, leaf_hi,
                          leaf_lo, node_off, lo, hi, buf)
        if cut == cut:  # not NaN
            return _split_in_place(X[j], idx, s, e, cut)
    return -1


@njit_parallel
def mondrian_partition(X, k, scale, tree_of, leaf_node, leaf_off, parent, leaf_hi, leaf_lo,
                       n_leaves, node_off):
    """Strict Mondrian. X (d, n) IN; returns ec int64 (n,) OUT, classes numbered 0..C-1.

    Every class has at least k rows (requires n >= k).
    """
    n = X.shape[1]
    idx = np.arange(n).astype(np.int64)
    seg_s = np.zeros(1, dtype=np.int64)
    seg_e = np.full(1, n, dtype=np.int64)
    fin_s = np.empty(n // k + 1, dtype=np.int64)
    fin_e = np.empty(n // k + 1, dtype=np.int64)
    n_fin = 0
    while seg_s.size > 0:
        m = seg_s.size
        split = np.empty(m, dtype=np.int64)
        for i in prange(m):
            split[i] = _process_segment(X, idx, seg_s[i], seg_e[i], k, scale, tree_of, leaf_node,
                                        leaf_off, parent, leaf_hi, leaf_lo, n_leaves, node_off)
        n_open = 0
        for i in range(m):
            if split[i] < 0:
                fin_s[n_fin] = seg_s[i]
                fin_e[n_fin] = seg_e[i]
                n_fin += 1
            else:
                n_open += 2
        new_s = np.empty(n_open, dtype=np.int64)
        new_e = np.empty(n_open, dtype=np.int64)
        p = 0
        for i in range(m):
            if split[i] >= 0:
                new_s[p] = seg_s[i]
                new_e[p] = split[i]
                new_s[p + 1] = split[i]
                new_e[p + 1] = seg_e[i]
                p += 2
        seg_s = new_s
        seg_e = new_e
    ec = np.empty(n, dtype=np.int64)
    for c in prange(n_fin):
        for i in range(fin_s[c], fin_e[c]):
            ec[idx[i]] = c
    return ec
