"""Numba kernels of the connectivity-based outlier factor (Tang, Chen, Fu, Cheung 2002).

Within one group of records (a Mondrian partition) with r = min(n_neighbors, m - 1):

- N(p): the r nearest records of p by the NCP record distance (``_ncp.pair_dist``), ties broken by
  position in the group;
- set-based nearest path (SBN-path) from p over {p} ∪ N(p): start from {p}, repeatedly add the
  record of N(p) nearest to the set built so far; the SBN-trail cost c_i is that distance (to the
  nearest record already in the set), i = 1..r;
- average chaining distance ac-dist(p) = sum_i 2(r + 1 - i) / (r (r + 1)) · c_i;
- COF(p) = r · ac-dist(p) / sum_{o in N(p)} ac-dist(o)  (1 = as connected as its neighbours).

When every neighbour has ac-dist 0 (duplicates), COF is 1 if ac-dist(p) is 0 too, else +inf.
Cost per group of m records: O(m² d) for the neighbour lists (partial selection, no sort) plus
O(m r² d) for the paths. Memory O(m r) per group. Small groups run in parallel, one task each; a
large group (a Mondrian partition that no cut could split, e.g. many duplicate rows) runs in
parallel over its rows, in chunks of rows so that progress is reported and Ctrl-C is honoured.
"""
import numpy as np
from numba import prange

from ..._numba_config import njit, njit_parallel
from ._ncp import (add_record, assign_to_cheapest, leaf_costs_of_record, new_stats, pair_dist,
                   pair_dist_lc)


@njit
def _knn_row(ds, ids, a, r, nbr, lc):
    """nbr[a, :] = positions (in ids) of the r nearest records of ids[a], nearest first; ties go
    to the earlier position. Partial selection: O(m) distances, a sorted buffer of r."""
    m = ids.shape[0]
    p = ids[a]
    leaf_costs_of_record(ds, p, lc)
    bd = np.full(r, np.inf)
    bi = np.full(r, -1, dtype=np.int64)
    for b in range(m):
        if b == a:
            continue
        d = pair_dist_lc(ds, p, lc, ids[b])
        if d < bd[r - 1] or bi[r - 1] < 0:
            t = r - 1
            while t > 0 and (bd[t - 1] > d or bi[t - 1] < 0):
                bd[t] = bd[t - 1]
                bi[t] = bi[t - 1]
                t -= 1
            bd[t] = d
            bi[t] = b
    for t in range(r):
        nbr[a, t] = bi[t]


@njit
def _ac_dist(ds, ids, a, nbr, r):
    """Average chaining distance of ids[a] over its SBN-path in {a} ∪ N(a)."""
    dmin = np.empty(r)
    used = np.zeros(r, dtype=np.bool_)
    p = ids[a]
    for t in range(r):
        dmin[t] = pair_dist(ds, p, ids[nbr[a, t]])
    acc = 0.0
    norm = r * (r + 1.0)
    for i in range(1, r + 1):
        best = -1
        bd = np.inf
        for t in range(r):
            if not used[t] and (best < 0 or dmin[t] < bd):
                best = t
                bd = dmin[t]
        used[best] = True
        acc += 2.0 * (r + 1 - i) / norm * bd
        q = ids[nbr[a, best]]
        for t in range(r):
            if not used[t]:
                dd = pair_dist(ds, q, ids[nbr[a, t]])
                if dd < dmin[t]:
                    dmin[t] = dd
    return acc


@njit
def cof_group(ds, ids, n_neighbors, out):
    """COF of every record of the group ``ids`` (int64 (m,)); out float64 (m,) OUT."""
    m = ids.shape[0]
    r = min(n_neighbors, m - 1)
    if r < 1:
        for a in range(m):
            out[a] = 1.0
        return
    nbr = np.empty((m, r), dtype=np.int64)
    lc = np.empty(ds.leaf_off[-1])
    for a in range(m):
        _knn_row(ds, ids, a, r, nbr, lc)
    ac = np.empty(m)
    for a in range(m):
        ac[a] = _ac_dist(ds, ids, a, nbr, r)
    _cof_from_ac(nbr, ac, r, out)


@njit
def _cof_from_ac(nbr, ac, r, out):
    m = ac.shape[0]
    for a in range(m):
        s = 0.0
        for t in range(r):
            s += ac[nbr[a, t]]
        if s > 0:
            out[a] = r * ac[a] / s
        elif ac[a] > 0:
            out[a] = np.inf
        else:
            out[a] = 1.0


@njit_parallel
def cof_all_groups(ds, members, start, groups, n_neighbors, out):
    """COF of every record of the listed groups, computed within its group (one task per group).

    members int64 (n,) IN records grouped by class; start int64 (G+1,) IN group boundaries;
    groups int64 IN the groups to do; out float64 (n,) OUT COF per record (by record id).
    """
    for q in prange(groups.shape[0]):
        g = groups[q]
        s = start[g]
        e = start[g + 1]
        ids = members[s:e]
        loc = np.empty(e - s)
        cof_group(ds, ids, n_neighbors, loc)
        for t in range(e - s):
            out[ids[t]] = loc[t]


@njit
def merge_into_nearest(ds, ec, C, is_out, outliers):
    """Give every record of ``outliers`` the class (of the non-outlier records) whose IL grows least.

    ec int64 (n,) IN/OUT class ids 0..C-1 (values of outlier rows are ignored on input).
    Records are placed one by one in the given order; each placement updates its class statistics.
    """
    st = new_stats(ds, C)
    for i in range(ec.shape[0]):
        if not is_out[i]:
            add_record(ds, st, ec[i], i)
    assign_to_cheapest(ds, st, outliers, outliers.shape[0], C, ec, True)


@njit_parallel
def knn_rows(ds, ids, r, a0, a1, nbr):
    """nbr[a] for rows a0 <= a < a1 of one (large) group, in parallel over rows."""
    L = ds.leaf_off[-1]
    for a in prange(a0, a1):
        lc = np.empty(L)
        _knn_row(ds, ids, a, r, nbr, lc)


@njit_parallel
def ac_rows(ds, ids, nbr, r, a0, a1, ac):
    """ac[a] = ac-dist of row a for a0 <= a < a1 of one (large) group, in parallel over rows."""
    for a in prange(a0, a1):
        ac[a] = _ac_dist(ds, ids, a, nbr, r)


@njit
def cof_from_ac(nbr, ac, r, out):
    """COF of every row of a group from its neighbour lists and ac-dists (out float64 (m,))."""
    _cof_from_ac(nbr, ac, r, out)
