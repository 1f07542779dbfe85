"""Numba kernels of KAB's NCP-based clustering (Kacha et al. 2021, Fig. 2 "Algorithm 1").

Algorithm 1 on the whole table (one initial star):

1. N = floor(m / k) clusters;
2. pick a random unassigned record r (the next unassigned one in a seeded random order);
3-5. the cluster is r plus the k-1 unassigned records closest to r (record distance eq. 3, i.e.
   ``_ncp.pair_dist``; ties go to the smaller record id);
6. repeat until N clusters exist; the m - N·k < k leftovers go each to the cluster whose seed
   (the paper's "centroid" r) is closest.

Every cluster therefore has between k and 2k-1 records. Cost O(m²/k · d).

The state lives in arrays so the whole-table run can be done in chunks of clusters
(``ncp_clustering_chunk``), letting the orchestrator report progress and honour Ctrl-C between
kernel calls.
"""
import numpy as np

from ..._numba_config import njit
from ...privacy._kernels import add_row
from ._closing import active, best_fixer_dist, cluster_ok, place_nearest
from ._ncp import assign_to_nearest, leaf_costs_of_record, pair_dist_lc


@njit
def _dists_from(ds, r, pool, m, out, lc):
    """out[i] = pair_dist(r, pool[i]) for i < m; lc float64 (sum of leaf counts,) scratch.

    Serial on purpose: ~1 ms of work per call, too little for a parallel region to pay off.
    """
    leaf_costs_of_record(ds, r, lc)
    for i in range(m):
        out[i] = pair_dist_lc(ds, r, lc, pool[i])


@njit
def _compact(pool, where, m):
    """Drop assigned records (where < 0) from pool[:m], keeping the order; returns the new m."""
    t = 0
    for i in range(m):
        r = pool[i]
        if where[r] >= 0:
            pool[t] = r
            where[r] = t
            t += 1
    return t


@njit
def ncp_clustering_chunk(ds, pool, where, state, order, k, n_clusters, max_new, labels, seeds,
                         dist_buf, P, h, scr, dv):
    """Form up to ``max_new`` more clusters of Algorithm 1.

    pool     int64 (m,)  IN/OUT unassigned records in pool[:state[0]], in increasing record order
                         (so scans read the data nearly sequentially and ties go to the smaller
                         record id)
    where    int64 (n,)  IN/OUT position of a record in pool, -1 once assigned
    state    int64 (3,)  IN/OUT [pool size, next position in ``order``, clusters formed so far]
    order    int64 (m,)  IN     records in the seeded random order used to pick seeds
    labels   int64 (n,)  OUT    cluster id (local, 0..n_clusters-1) of each assigned record
    seeds    int64 (n_clusters,) OUT seed record of each cluster
    dist_buf float64 (m,) scratch
    P, h, scr, dv  privacy models (``_closing``): a cluster of k records is closed only when it
             satisfies every model, else the record nearest its seed that fixes it joins
    Returns True when all n_clusters clusters exist, or fewer than k records are left (closing
    under privacy models can take more than k per cluster); leftovers are not assigned yet.
    """
    made = 0
    lc = np.empty(ds.leaf_off[-1])
    while state[2] < n_clusters and state[0] >= k and made < max_new:
        m = state[0]
        # next unassigned record in the random order
        while where[order[state[1]]] < 0:
            state[1] += 1
        r = order[state[1]]
        state[1] += 1
        c = state[2]
        where[r] = -1
        labels[r] = c
        seeds[c] = r
        need = k - 1
        if need > 0:
            _dists_from(ds, r, pool, m, dist_buf, lc)
            # r itself is still in pool[:m]: exclude it by an infinite distance
            for i in range(m):
                if pool[i] == r:
                    dist_buf[i] = np.inf
                    break
            avail = m - 1
            if need >= avail:
                thr = np.inf
            else:
                thr = np.partition(dist_buf[:m], need - 1)[need - 1]
            # every record strictly below thr, then records at thr in pool (= id) order
            nc = 0
            for i in range(m):
                if dist_buf[i] < thr and pool[i] != r:
                    labels[pool[i]] = c
                    where[pool[i]] = -1
                    nc += 1
            if nc < need:
                for i in range(m):
                    if nc >= need:
                        break
                    if dist_buf[i] == thr and where[pool[i]] >= 0 and pool[i] != r:
                        labels[pool[i]] = c
                        where[pool[i]] = -1
                        nc += 1
        if active(P):
            h[:] = 0.0
            add_row(h, r, P, 1.0)
            for i in range(m):
                if labels[pool[i]] == c and pool[i] != r:
                    add_row(h, pool[i], P, 1.0)
            size = nc + 1
            while not cluster_ok(h, size, P, scr):
                q = best_fixer_dist(ds, r, h, size, pool, m, labels, P, scr, dv)
                if q < 0:
                    break  # the final pass (privacy.enforce.repair) merges it
                labels[q] = c
                where[q] = -1
                add_row(h, q, P, 1.0)
                size += 1
        state[0] = _compact(pool, where, m)
        state[2] = c + 1
        made += 1
    return state[2] >= n_clusters or state[0] < k


@njit
def assign_leftovers(ds, pool, m, seeds, n_clusters, labels, P, scr_cols):
    """Algorithm 1 last step: each leftover record joins the cluster with the closest seed
    (among those that keep satisfying the privacy models, ``_closing.place_nearest``)."""
    if active(P):
        place_nearest(ds, pool, m, seeds, n_clusters, labels, P, scr_cols)
    else:
        assign_to_nearest(ds, pool, m, seeds, n_clusters, labels, 0)
