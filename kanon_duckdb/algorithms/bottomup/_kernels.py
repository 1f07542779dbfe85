"""Numba kernels of ``bottomup`` (kanon-duckdb's own algorithm): the greedy NCP split of big
groups and the placement of leftover rows.

Layout (as Mondrian's ``stack_dimensions``): ``X`` float64 (n, d), numeric QIs first (NULL encoded
below the global minimum ``gmin[j]``), then categorical leaf ordinals; packed tree arrays as in
``qidata.pack_trees``. No validation here.
"""
from __future__ import annotations

import numpy as np

from ..._numba_config import njit


@njit
def ncp_chains(leaf_node, leaf_off, parent, leaf_hi, n_leaves, node_off):
    """Each leaf's chain of ancestors, for the categorical NCP of a leaf-ordinal range without a
    tree walk over scattered nodes: (base int64 (dc,), ch float64 (leaves, 2H)); leaf l of tree t
    is row base[t] + l, whose entries 2h / 2h+1 are the last leaf under its h-th ancestor (the
    leaf itself at h = 0) and that ancestor's NCP, leaves(node) / leaves(root); past the root
    (+inf, 1). H = the deepest leaf's depth + 1. O(leaves · H)."""
    dc = leaf_off.shape[0] - 1
    H = 1
    for t in range(dc):
        no = node_off[t]
        for i in range(leaf_off[t], leaf_off[t + 1]):
            u = leaf_node[i]
            h = 1
            while parent[no + u] >= 0:
                u = parent[no + u]
                h += 1
            H = max(H, h)
    base = np.empty(dc, dtype=np.int64)
    ch = np.empty((max(leaf_off[dc], 1), 2 * H))
    for t in range(dc):
        no = node_off[t]
        base[t] = leaf_off[t]
        for i in range(leaf_off[t], leaf_off[t + 1]):
            u = np.int64(leaf_node[i])
            h = 0
            while h < H:
                if u >= 0:
                    ch[i, 2 * h] = leaf_hi[no + u]
                    ch[i, 2 * h + 1] = n_leaves[no + u] / n_leaves[no]
                    u = parent[no + u]
                else:
                    ch[i, 2 * h] = np.inf
                    ch[i, 2 * h + 1] = 1.0
                h += 1
    return base, ch


@njit
def _ncp_fast(j, lo, hi, dn, scale, gmin, base, ch):
    """NCP of the range [lo, hi] of dimension j, divided by scale[j] (a numeric range over its
    width, 1 with a NULL; a categorical range: its LCA's leaves over the root's, 0 for one
    leaf, read off the chain of leaf lo: its first ancestor whose last leaf reaches hi)."""
    if j < dn:
        if lo < gmin[j]:
            return 1.0
        return (hi - lo) / scale[j]
    if lo == hi:
        return 0.0
    r = base[j - dn] + np.int64(lo)
    h = 0
    while ch[r, h] < hi:
        h += 2
    return ch[r, h + 1] / scale[j]


@njit
def _merged_cost(w1, lo1, hi1, w2, lo2, hi2, bound, dn, scale, gmin, base, ch):
    """(w1 + w2) * sum_j NCP_j(box1 U box2); stops early (returns inf) once it exceeds bound."""
    d = lo1.shape[0]
    w = w1 + w2
    s = 0.0
    for j in range(d):
        a = min(lo2[j], lo1[j])
        b = max(hi2[j], hi1[j])
        s += _ncp_fast(j, a, b, dn, scale, gmin, base, ch)
        if w * s > bound:
            return np.inf
    return w * s


@njit
def _side_costs(X, rows, order, reverse, dn, scale, gmin, base, ch, out):
    """out[i] = sum of NCP over dims of the first i+1 rows of ``order`` (from the end when
    ``reverse``): running min/max per dim, O(m·d·height)."""
    m = order.shape[0]
    d = X.shape[1]
    lo = np.empty(d)
    hi = np.empty(d)
    for i in range(m):
        r = rows[order[m - 1 - i] if reverse else order[i]]
        s = 0.0
        for j in range(d):
            v = X[r, j]
            if i == 0 or v < lo[j]:
                lo[j] = v
            if i == 0 or v > hi[j]:
                hi[j] = v
            s += _ncp_fast(j, lo[j], hi[j], dn, scale, gmin, base, ch)
        out[i] = s


@njit
def _best_split(X, rows, k, dn, scale, gmin, base, ch, left, right, at_ties):
    """(cost, dim, cut) of the cheapest split of ``rows`` into a prefix of ``cut`` rows and the
    rest in the order of dimension ``dim``, both sides >= k rows; cost = sum over sides of
    |side| * sum_j NCP_j(side). Cuts fall between distinct values of ``dim`` unless ``at_ties``.
    dim = -1 when no cut is allowed."""
    m = rows.shape[0]
    d = X.shape[1]
    best = np.inf
    best_j = -1
    best_cut = -1
    vals = np.empty(m)
    for j in range(d):
        for i in range(m):
            vals[i] = X[rows[i], j]
        order = np.argsort(vals, kind="mergesort")
        if vals[order[0]] == vals[order[m - 1]]:
            continue
        _side_costs(X, rows, order, False, dn, scale, gmin, base, ch, left)
        _side_costs(X, rows, order, True, dn, scale, gmin, base, ch, right)
        for cut in range(k, m - k + 1):
            if not at_ties and vals[order[cut - 1]] == vals[order[cut]]:
                continue
            c = cut * left[cut - 1] + (m - cut) * right[m - cut - 1]
            if c < best:
                best = c
                best_j = j
                best_cut = cut
    return best, best_j, best_cut


@njit
def topdown_partition(X, k, dn, scale, gmin, leaf_node, leaf_off, parent, leaf_hi, n_leaves,
                      node_off, idx, seg_start):
    """Class id per row (int64 (n,)): split every segment of >= 2k rows at its cheapest cut
    (see ``_best_split``; cuts inside a run of equal values only when no other cut is allowed),
    depth first. ``idx`` int64 (n,) IN/OUT: rows grouped by initial segment, whose boundaries are
    ``seg_start`` int64 (S+1,) IN (every initial segment has >= k rows). Classes have >= k rows.
    O(d·n·log n + d²·n·h) per level of the split tree."""
    n = X.shape[0]
    base, ch = ncp_chains(leaf_node, leaf_off, parent, leaf_hi, n_leaves, node_off)
    ec = np.empty(n, dtype=np.int64)
    left = np.empty(n)
    right = np.empty(n)
    n_seg = seg_start.shape[0] - 1
    stack_a = np.empty(n_seg + 2 * (n // max(k, 1)) + 2, dtype=np.int64)
    stack_b = np.empty_like(stack_a)
    top = 0
    for s in range(n_seg - 1, -1, -1):
        stack_a[top] = seg_start[s]
        stack_b[top] = seg_start[s + 1]
        top += 1
    n_classes = 0
    while top > 0:
        top -= 1
        a = stack_a[top]
        b = stack_b[top]
        m = b - a
        j = -1
        cut = 0
        if m >= 2 * k:
            rows = idx[a:b]
            _cost, j, cut = _best_split(X, rows, k, dn, scale, gmin, base, ch, left, right,
                                        False)
            if j < 0:
                _cost, j, cut = _best_split(X, rows, k, dn, scale, gmin, base, ch, left, right,
                                            True)
        if j < 0:
            for i in range(a, b):
                ec[idx[i]] = n_classes
            n_classes += 1
            continue
        vals = np.empty(m)
        for i in range(m):
            vals[i] = X[idx[a + i], j]
        order = np.argsort(vals, kind="mergesort")
        idx[a:b] = idx[a:b][order]
        stack_a[top] = a + cut
        stack_b[top] = b
        stack_a[top + 1] = a
        stack_b[top + 1] = a + cut
        top += 2
    return ec


@njit
def join_cheapest(X, ec, n_groups, rows, dn, scale, gmin, leaf_node, leaf_off, parent, leaf_hi,
                  n_leaves, node_off):
    """Put each row of ``rows`` (int64, ec[r] = -1 on entry) into the group whose cost
    (rows * sum_j NCP_j of its box) it raises least, one row at a time. ec int64 (n,) IN/OUT,
    groups 0..n_groups-1 (each non-empty). O((n + |rows| * n_groups) * d)."""
    n, d = X.shape
    base, ch = ncp_chains(leaf_node, leaf_off, parent, leaf_hi, n_leaves, node_off)
    glo = np.full((n_groups, d), np.inf)
    ghi = np.full((n_groups, d), -np.inf)
    gw = np.zeros(n_groups, dtype=np.int64)
    for i in range(n):
        g = ec[i]
        if g < 0:
            continue
        gw[g] += 1
        for j in range(d):
            v = X[i, j]
            glo[g, j] = min(glo[g, j], v)
            ghi[g, j] = max(ghi[g, j], v)
    for t in range(rows.shape[0]):
        r = rows[t]
        best = np.inf
        bg = 0
        for g in range(n_groups):
            cur = _merged_cost(gw[g], glo[g], ghi[g], 0, glo[g], ghi[g], np.inf, dn, scale, gmin,
                               base, ch)
            c = _merged_cost(gw[g], glo[g], ghi[g], 1, X[r], X[r], cur + best, dn, scale, gmin,
                             base, ch)
            if c - cur < best:
                best = c - cur
                bg = g
        ec[r] = bg
        gw[bg] += 1
        for j in range(d):
            glo[bg, j] = min(glo[bg, j], X[r, j])
            ghi[bg, j] = max(ghi[bg, j], X[r, j])
