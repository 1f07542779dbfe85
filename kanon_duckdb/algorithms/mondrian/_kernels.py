"""Numba kernels of strict multidimensional Mondrian (LeFevre, DeWitt, Ramakrishnan 2006).

Data layout: ``W`` float64 (n, d), row-major working copy of the QIs (numeric values, or the leaf
ordinal of a categorical value) that is permuted together with ``perm`` (original row ids) as
segments split, so every segment is a contiguous block and all passes read memory sequentially.
A categorical dimension j has ``tree_of[j] >= 0`` naming its packed tree (see base.pack_trees).

Work is breadth-first: every round processes all open segments in parallel (``prange``); each
segment either splits into two contiguous halves of ``W``/``perm`` (in place, disjoint slices, so
no races) or becomes final. Median selection is ``np.partition`` on a copy of the segment's values:
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
def _segment_widths(W, s, e, scale, tree_of, leaf_node, leaf_off, parent, leaf_hi, n_leaves,
                    node_off, out_w, out_lo, out_hi):
    """Normalized width of each dimension on rows s:e (numeric: span/range; categorical:
    leaves(LCA)/leaves(root), 0 for a single leaf). Also returns min/max per dimension."""
    d = W.shape[1]
    for j in range(d):
        out_lo[j] = np.inf
        out_hi[j] = -np.inf
    for i in range(s, e):
        for j in range(d):
            v = W[i, j]
            if v < out_lo[j]:
                out_lo[j] = v
            if v > out_hi[j]:
                out_hi[j] = v
    for j in range(d):
        lo = out_lo[j]
        hi = out_hi[j]
        t = tree_of[j]
        if t < 0:
            out_w[j] = (hi - lo) / scale[j]
        elif hi > lo:
            lf = leaf_node[leaf_off[t]:leaf_off[t + 1]]
            no = node_off[t]
            u = _lca(lf, parent[no:node_off[t + 1]], leaf_hi[no:node_off[t + 1]], int(lo), int(hi))
            out_w[j] = n_leaves[no + u] / n_leaves[no]
        else:
            out_w[j] = 0.0


@njit
def _count_le(W, j, s, e, cands, ncand, out):
    """out[c] = number of rows s:e with W[:, j] <= cands[c], for all candidates in one pass."""
    for c in range(ncand):
        out[c] = 0
    for i in range(s, e):
        v = W[i, j]
        for c in range(ncand):
            if v <= cands[c]:
                out[c] += 1


@njit
def _choose_cut(W, s, e, j, k, tree_of, leaf_node, leaf_off, parent, leaf_hi, leaf_lo, node_off,
                seg_lo, seg_hi, buf):
    """Best allowable cut value on dimension j (rows with value <= cut go left), or NaN.

    Candidates: the median m as '<= m' and as '< m' (i.e. '<= predecessor'); for a categorical
    dimension also the boundaries of the child subtree of the segment's LCA that holds m, so cuts
    follow the tree when they can. Among allowable candidates (both sides >= k) the most balanced
    wins.
    """
    n = e - s
    for i in range(n):
        buf[i] = W[s + i, j]
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
    counts = np.empty(4, dtype=np.int64)
    _count_le(W, j, s, e, cands, ncand, counts)
    for ci in range(ncand):
        cut = cands[ci]
        if not (cut >= seg_lo[j]) or not (cut < seg_hi[j]):
            continue
        left = counts[ci]
        right = n - left
        if left >= k and right >= k:
            bal = min(left, right)
            if bal > best_bal:
                best_bal = bal
                best_cut = cut
    return best_cut


@njit
def _split_in_place(W, perm, j, s, e, cut):
    """Reorder rows s:e of W and perm so rows with W[:, j] <= cut come first; returns the split."""
    d = W.shape[1]
    i = s
    jj = e - 1
    while i <= jj:
        if W[i, j] <= cut:
            i += 1
        else:
            for c in range(d):
                t = W[i, c]
                W[i, c] = W[jj, c]
                W[jj, c] = t
            p = perm[i]
            perm[i] = perm[jj]
            perm[jj] = p
            jj -= 1
    return i


@njit
def _process_segment(W, perm, s, e, k, scale, tree_of, leaf_node, leaf_off, parent, leaf_hi,
                     leaf_lo, n_leaves, node_off):
    """Try to split idx[s:e]; returns the split position or -1 when no allowable cut exists."""
    d = W.shape[1]
    if e - s < 2 * k:
        return -1
    w = np.empty(d)
    lo = np.empty(d)
    hi = np.empty(d)
    _segment_widths(W, s, e, scale, tree_of, leaf_node, leaf_off, parent, leaf_hi, n_leaves,
                    node_off, w, lo, hi)
    order = np.argsort(-w)
    buf = np.empty(e - s)
    for oi in range(d):
        j = order[oi]
        if w[j] <= 0.0:
            break
        cut = _choose_cut(W, s, e, j, k, tree_of, leaf_node, leaf_off, parent, leaf_hi,
                          leaf_lo, node_off, lo, hi, buf)
        if cut == cut:  # not NaN
            return _split_in_place(W, perm, j, s, e, cut)
    return -1


@njit_parallel
def mondrian_partition(W, k, scale, tree_of, leaf_node, leaf_off, parent, leaf_hi, leaf_lo,
                       n_leaves, node_off):
    """Strict Mondrian. W (n, d) IN, permuted in place (scratch); returns ec int64 (n,) OUT,
    classes numbered 0..C-1.

    Every class has at least k rows (requires n >= k).
    """
    n = W.shape[0]
    perm = np.arange(n).astype(np.int64)
    seg_s = np.zeros(1, dtype=np.int64)
    seg_e = np.full(1, n, dtype=np.int64)
    fin_s = np.empty(n // k + 1, dtype=np.int64)
    fin_e = np.empty(n // k + 1, dtype=np.int64)
    n_fin = 0
    while seg_s.size > 0:
        m = seg_s.size
        split = np.empty(m, dtype=np.int64)
        for i in prange(m):
            split[i] = _process_segment(W, perm, seg_s[i], seg_e[i], k, scale, tree_of, leaf_node,
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
            ec[perm[i]] = c
    return ec
