"""Numba kernels of info2means (Yuan et al. 2024): weighted 2-means split and greedy balancing.

Distances are eq. 6-8 of the paper, i.e. the weighted NCP distance of ``_ncp`` (build the bundle
with ``build_ncp_data(data, weights=γ)``): numeric γ_t |s_i - s_j| / range_t, categorical
γ · leaves(LCA) / leaves(root), 0 for equal values. A centroid is a point: numeric coordinates
are means (eq. 9), categorical coordinates are leaves chosen by eq. 10 (the value s of the class
minimizing Σ_i dis(s_i, s)²).

Information-quantity loss (eq. 2-4) of a class e, with the per-QI tables ``iq``:

    numeric t:      γ_t |e| log(10^x_t (max - min) + 1) / log|R_t|   (0 when |R_t| = 1;
                    a class holding a NULL counts as the whole domain, i.e. γ_t |e|)
    categorical τ:  γ_τ |e| log leaves(LCA) / log leaves(root)     (0 when the root is a leaf)

``iq_num`` float64 (dn, 3) rows = (γ_t, 10^x_t, 1 / log|R_t| or 0); ``iq_node`` float64 (nodes,)
= γ_τ · log leaves(u) / log leaves(root) per packed node.
"""
import numpy as np

from ..._numba_config import njit
from ._ncp import add_record, cat_cost, copy_cluster, lca_node, new_stats, pair_dist


@njit
def dist_to_center(ds, r, cnum, ccat):
    """Weighted distance (eq. 8) of record r to the centroid (cnum (dn,), ccat (dc,) leaves)."""
    s = 0.0
    for j in range(ds.num.shape[1]):
        if ds.num_null[r, j]:
            s += ds.null_cost[j]
        else:
            s += abs(ds.num[r, j] - cnum[j]) * ds.inv_range[j]
    for j in range(ds.cat.shape[1]):
        a = ds.cat[r, j]
        b = ccat[j]
        if a <= b:
            s += cat_cost(ds, j, a, b)
        else:
            s += cat_cost(ds, j, b, a)
    return s


@njit
def _center(ds, ids, use, cnum, ccat):
    """Centroid of the records ids[t] with use[t] (eq. 9-12) into cnum / ccat (OUT)."""
    m = ids.shape[0]
    dn = ds.num.shape[1]
    for j in range(dn):
        tot = 0.0
        cnt = 0
        for t in range(m):
            if use[t] and not ds.num_null[ids[t], j]:
                tot += ds.num[ids[t], j]
                cnt += 1
        cnum[j] = tot / cnt if cnt > 0 else 0.0
    for j in range(ds.cat.shape[1]):
        L = ds.n_leaf[j]
        cnt = np.zeros(L, dtype=np.int64)
        for t in range(m):
            if use[t]:
                cnt[ds.cat[ids[t], j]] += 1
        best = -1
        bv = np.inf
        for s in range(L):
            if cnt[s] == 0:
                continue
            v = 0.0
            for q in range(L):
                if cnt[q] > 0 and q != s:
                    dd = cat_cost(ds, j, min(q, s), max(q, s))
                    v += cnt[q] * dd * dd
            # ties: the more frequent value, then the smaller leaf ordinal
            if best < 0 or v < bv or (v == bv and cnt[s] > cnt[best]):
                best = s
                bv = v
        ccat[j] = best if best >= 0 else 0


@njit
def two_means(ds, ids, max_iter, side):
    """Improved 2-means (Algorithm 1 with the mean-center initial centroids) on records ``ids``.

    3σ outliers on any numeric QI (within ids) are ignored when choosing the initial centroids:
    the mean center M of the other records, c1 = the record farthest from M, c2 = the record
    farthest from c1 (ties: first in ids). Then Lloyd iterations (assign to the nearer centroid,
    ties to c1; recompute centroids by eq. 12) until stable or ``max_iter``.
    side bool (m,) OUT: True = second cluster. Returns False when no two distinct centroids exist.
    """
    m = ids.shape[0]
    dn = ds.num.shape[1]
    dc = ds.cat.shape[1]
    use = np.ones(m, dtype=np.bool_)
    for j in range(dn):
        tot = 0.0
        tot2 = 0.0
        cnt = 0
        for t in range(m):
            if not ds.num_null[ids[t], j]:
                v = ds.num[ids[t], j]
                tot += v
                tot2 += v * v
                cnt += 1
        if cnt < 2:
            continue
        mu = tot / cnt
        var = max(tot2 / cnt - mu * mu, 0.0)
        sd = np.sqrt(var)
        if sd <= 0:
            continue
        for t in range(m):
            if not ds.num_null[ids[t], j] and abs(ds.num[ids[t], j] - mu) > 3.0 * sd:
                use[t] = False
    n_use = 0
    for t in range(m):
        if use[t]:
            n_use += 1
    if n_use < 2:
        for t in range(m):
            use[t] = True
    cnum1 = np.empty(dn)
    ccat1 = np.empty(dc, dtype=np.int32)
    _center(ds, ids, use, cnum1, ccat1)  # mean center M
    a = np.int64(-1)  # np.int64: no extra Literal compile (_numba_config)
    best = -1.0
    for t in range(m):
        if use[t]:
            dd = dist_to_center(ds, ids[t], cnum1, ccat1)
            if dd > best:
                best = dd
                a = t
    b = np.int64(-1)
    best = -1.0
    for t in range(m):
        if use[t]:
            dd = pair_dist(ds, ids[a], ids[t])
            if dd > best:
                best = dd
                b = t
    if best <= 0.0:
        return False
    lloyd(ds, ids, a, b, max_iter, side)
    return True


@njit
def lloyd(ds, ids, a, b, max_iter, side):
    """2-means Lloyd iterations on records ``ids`` from the records ids[a], ids[b] as initial
    centroids: assign to the nearer centroid (ties to the first), recompute centroids (eq. 12),
    until stable or ``max_iter``. side bool (m,) OUT: True = second cluster."""
    m = ids.shape[0]
    dn = ds.num.shape[1]
    dc = ds.cat.shape[1]
    cnum1 = np.empty(dn)
    ccat1 = np.empty(dc, dtype=np.int32)
    cnum2 = np.empty(dn)
    ccat2 = np.empty(dc, dtype=np.int32)
    for j in range(dn):
        cnum1[j] = ds.num[ids[a], j]
        cnum2[j] = ds.num[ids[b], j]
    for j in range(dc):
        ccat1[j] = ds.cat[ids[a], j]
        ccat2[j] = ds.cat[ids[b], j]
    for t in range(m):
        side[t] = False
    inv = np.empty(m, dtype=np.bool_)
    for it in range(max_iter):
        changed = False
        n2 = 0
        for t in range(m):
            d1 = dist_to_center(ds, ids[t], cnum1, ccat1)
            d2 = dist_to_center(ds, ids[t], cnum2, ccat2)
            s = d2 < d1
            if s != side[t] or it == 0:
                changed = True
            side[t] = s
            if s:
                n2 += 1
        if not changed or n2 == 0 or n2 == m:
            break
        for t in range(m):
            inv[t] = not side[t]
        _center(ds, ids, inv, cnum1, ccat1)
        _center(ds, ids, side, cnum2, ccat2)


@njit
def info_loss_of(ds, st, c, iq_num, iq_node):
    """IL (eq. 2-4) of cluster c from its statistics (|e| times the per-record loss)."""
    s = 0.0
    for j in range(ds.num.shape[1]):
        if iq_num[j, 2] == 0.0:
            continue
        if st.nnull[c, j]:
            s += iq_num[j, 0]
        else:
            s += iq_num[j, 0] * np.log(iq_num[j, 1] * (st.nmax[c, j] - st.nmin[c, j]) + 1.0) * iq_num[j, 2]
    for j in range(ds.cat.shape[1]):
        u = lca_node(ds, j, st.cmin[c, j], st.cmax[c, j])
        s += iq_node[ds.node_off[j] + u]
    return st.size[c] * s


@njit
def info_loss_labels(ds, ec, C, iq_num, iq_node):
    """Total IL(DT) (eq. 4) of the classes ec (0..C-1)."""
    st = new_stats(ds, C)
    for r in range(ec.shape[0]):
        add_record(ds, st, ec[r], r)
    s = 0.0
    for c in range(C):
        s += info_loss_of(ds, st, c, iq_num, iq_node)
    return s


@njit
def greedy_fill(ds, ids, side, k, iq_num, iq_node):
    """Greedy step: grow the smaller side to k rows, one row at a time, each time taking the row
    of the larger side whose move increases the smaller side's information loss (eq. 2-4) least
    (ties: first in ids). Requires len(ids) >= 2k. side bool (m,) IN/OUT. Returns rows moved.
    """
    m = ids.shape[0]
    n2 = 0
    for t in range(m):
        if side[t]:
            n2 += 1
    small = n2 < m - n2  # True: the second cluster is the small one
    cnt = n2 if small else m - n2
    st = new_stats(ds, 2)
    for t in range(m):
        if side[t] == small:
            add_record(ds, st, 0, ids[t])
    moved = 0
    base = info_loss_of(ds, st, 0, iq_num, iq_node) if cnt > 0 else 0.0
    while cnt < k:
        best = -1
        bc = np.inf
        for t in range(m):
            if side[t] == small:
                continue
            # cost of adding ids[t] to the small side: evaluate on a scratch slot
            st.size[1] = 0
            copy_cluster(st, 0, st, 1)
            add_record(ds, st, 1, ids[t])
            cc = info_loss_of(ds, st, 1, iq_num, iq_node) - base
            if cc < bc:
                bc = cc
                best = t
        side[best] = small
        add_record(ds, st, 0, ids[best])
        base = info_loss_of(ds, st, 0, iq_num, iq_node)
        cnt += 1
        moved += 1
    return moved


