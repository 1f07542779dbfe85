"""One-pass k-means for k-anonymity, OKA (Lin & Wei 2008), as summarised in
kab-black-hole-k-anonymity.txt §2.1 and the issue.

Our reading, stage by stage:

1. Clustering stage (k-means, one iteration only). K = floor(n / k) distinct seed records are drawn
   at random (numpy Generator seeded with ``seed``); each is a cluster. Every other record, in a
   seeded random order, joins the nearest cluster and the cluster's "centroid" is updated at once.
   The distance of a record r to a cluster e is the NCP of the cluster's current generalization
   extended to r, sum_j NCP_j(e U {r}) (numeric span / range, categorical leaves(LCA) /
   leaves(root)); the generalization (min/max, LCA) is the cluster summary that is updated
   incrementally. Ties go to the lowest cluster id.
2. Adjustment stage. For every cluster with more than k records, its centroid is taken as the mean
   of each numeric QI and the most frequent leaf (lowest ordinal on ties) of each categorical QI;
   the records furthest from it (record distance d(r, centroid), ties: larger row id first) are
   removed until k remain and put in a pool R. Then the records of R, in a seeded random order,
   each join the nearest cluster (same distance as stage 1) among the clusters that still hold
   fewer than k records; once none is left, the remaining records of R join their nearest cluster.
   Because K * k <= n, the pool always suffices to bring every cluster up to k.

Privacy models (``l``, ``t``..., issue 13; ``_closing``): a cluster is closed in the adjustment
stage. Trimming takes a record out of a cluster only while the cluster keeps satisfying every
model (one that violates keeps all its records); the pool then goes first to clusters under k,
then to violating clusters the record helps, then to the nearest cluster that stays satisfying.
What still violates goes to the final pass (``privacy.enforce.repair``).

The paper's centroid for categorical attributes is not spelled out in the summary; mean/mode is
the usual k-means/k-prototypes reading, and the generalization-based distance in stage 1 is the
one the issue prescribes. n < 2k gives K = 1: a single class of all rows.

Cost: stage 1 is n * K * d = O(n^2 d / k), serial (each assignment changes a cluster); the kernel
runs over chunks of records so progress is reported and Ctrl-C is honoured between chunks.
"""
from __future__ import annotations

import numpy as np

from ..._numba_config import njit
from ..base import Algorithm, no_progress
from ...qidata import QIData
from ...privacy._kernels import add_row
from ._closing import DROP, active, cluster_ok, drop_with, histograms, packed_of
from ._common import run_from_labels, trivial_labels
from ._ncp import (add_record, build_ncp_data, cat_cost, ncp_with, ncp_with_bounded, new_stats,
                   run_in_chunks)


# ------------------------------------------------------------------------------------------------
# kernels

@njit
def _nearest_cluster(ds, st, r, C):
    """Lowest-id cluster minimising NCP(e U {r}); partial sums >= the best so far stop early."""
    best = -1
    bv = np.inf
    for c in range(C):
        v = ncp_with_bounded(ds, st, c, r, bv)
        if v < bv:
            bv = v
            best = c
    return best


@njit
def _assign_pass(ds, st, order, start, stop, ec):
    """Stage 1 on order[start:stop]: each record joins its nearest cluster (stats updated)."""
    C = st.size.shape[0]
    for i in range(start, stop):
        r = order[i]
        c = _nearest_cluster(ds, st, r, C)
        add_record(ds, st, c, r)
        ec[r] = c


@njit
def _trim_overfull(ds, ec, members, offsets, k, removed, P, scr_cols):
    """Remove from each cluster larger than k its records furthest from the mean/mode centroid.

    members/offsets: rows grouped by cluster (members[offsets[c]:offsets[c+1]], ascending ids).
    OUT removed (bool (n,)); ec of removed rows is set to -1. Returns the number removed.
    Privacy models (P, ``_closing``): a cluster that satisfies every model gives up a record only
    while it keeps satisfying them; one that does not keeps all its records.
    """
    closing = active(P)
    scr = np.empty((4, scr_cols))
    h = np.zeros(P[5].shape[0] + 1)
    dn = ds.num.shape[1]
    dc = ds.cat.shape[1]
    C = offsets.shape[0] - 1
    max_leaves = 1
    for j in range(dc):
        max_leaves = max(max_leaves, ds.n_leaf[j])
    counts = np.zeros(max_leaves, dtype=np.int64)
    mean = np.zeros(dn)
    mode = np.zeros(dc, dtype=np.int32)
    total = 0
    for c in range(C):
        a = offsets[c]
        b = offsets[c + 1]
        size = b - a
        if size <= k:
            continue
        for j in range(dn):
            s = 0.0
            cnt = 0
            for q in range(a, b):
                r = members[q]
                if not ds.num_null[r, j]:
                    s += ds.num[r, j]
                    cnt += 1
            mean[j] = s / cnt if cnt > 0 else 0.0
        for j in range(dc):
            best = -1
            for q in range(a, b):
                v = ds.cat[members[q], j]
                counts[v] += 1
            for q in range(a, b):
                v = ds.cat[members[q], j]
                if best < 0 or counts[v] > counts[best] or (counts[v] == counts[best] and v < best):
                    best = v
            for q in range(a, b):
                counts[ds.cat[members[q], j]] = 0
            mode[j] = best
        dist = np.empty(size)
        for q in range(size):
            r = members[a + q]
            s = 0.0
            for j in range(dn):
                if ds.num_null[r, j]:
                    s += ds.null_cost[j]
                else:
                    s += abs(ds.num[r, j] - mean[j]) * ds.inv_range[j]
            for j in range(dc):
                v = ds.cat[r, j]
                s += cat_cost(ds, j, min(v, mode[j]), max(v, mode[j]))
            dist[q] = s
        # stable ascending sort; members are in ascending id, so walking from the end removes the
        # furthest first and, among equal distances, the larger id first
        order = np.argsort(dist, kind="mergesort")
        if not closing:
            taken = size - k
            for q in range(taken):
                r = members[a + order[size - 1 - q]]
                removed[r] = True
                ec[r] = -1
            total += taken
            continue
        h[:] = 0.0
        for q in range(a, b):
            add_row(h, members[q], P, 1.0)
        left = size
        if not cluster_ok(h, left, P, scr):
            continue
        for q in range(size):
            if left <= k:
                break
            r = members[a + order[size - 1 - q]]
            add_row(h, r, P, -1.0)
            if cluster_ok(h, left - 1, P, scr):
                removed[r] = True
                ec[r] = -1
                left -= 1
                total += 1
            else:
                add_row(h, r, P, 1.0)
    return total


@njit
def _redistribute_closing(ds, st, pool, ec, k, P, scr_cols):
    """_redistribute with privacy models: a pool record joins, by NCP(e U {r}), the nearest
    cluster with < k records; else the nearest cluster that violates a model and that it helps
    (``_closing.drop_with``); else its nearest cluster if that one keeps satisfying every model
    with it, else the nearest one that does (the nearest of all when none does; the final pass
    repairs). O(|pool| · (C d + V M)) for V violating clusters, plus a full scan with checks when
    the nearest cluster would break."""
    C = st.size.shape[0]
    hist, size = histograms(ec, C, P)
    scr = np.empty((4, scr_cols))
    ok = np.empty(C, dtype=np.bool_)
    for c in range(C):
        ok[c] = cluster_ok(hist[c], size[c], P, scr)
    for i in range(pool.shape[0]):
        r = pool[i]
        best = -1
        bv = np.inf
        for c in range(C):  # under k first
            if size[c] < k:
                v = ncp_with(ds, st, c, r)
                if v < bv:
                    best = c
                    bv = v
        if best < 0:
            for c in range(C):  # then violating clusters r helps
                if not ok[c] and drop_with(hist[c], size[c], r, P, scr) > DROP:
                    v = ncp_with(ds, st, c, r)
                    if v < bv:
                        best = c
                        bv = v
        if best < 0:
            best = _nearest_cluster(ds, st, r, C)
            add_row(hist[best], r, P, 1.0)
            keeps = not ok[best] or cluster_ok(hist[best], size[best] + 1.0, P, scr)
            add_row(hist[best], r, P, -1.0)
            if not keeps:
                for c in range(C):
                    if not ok[c]:
                        continue
                    v = ncp_with(ds, st, c, r)
                    if v >= bv:
                        continue
                    add_row(hist[c], r, P, 1.0)
                    if cluster_ok(hist[c], size[c] + 1.0, P, scr):
                        best = c
                        bv = v
                    add_row(hist[c], r, P, -1.0)
        add_record(ds, st, best, r)
        ec[r] = best
        add_row(hist[best], r, P, 1.0)
        size[best] += 1.0
        ok[best] = cluster_ok(hist[best], size[best], P, scr)


@njit
def _redistribute(ds, st, pool, ec, k):
    """Adjustment: pool records (in order) go to the nearest cluster with < k records, then to
    the nearest cluster of all once every cluster holds k."""
    C = st.size.shape[0]
    under = np.empty(C, dtype=np.int64)
    nu = 0
    for c in range(C):
        if st.size[c] < k:
            under[nu] = c
            nu += 1
    for i in range(pool.shape[0]):
        r = pool[i]
        if nu > 0:
            best = -1
            bq = -1
            bv = np.inf
            for q in range(nu):
                c = under[q]
                v = ncp_with(ds, st, c, r)
                if v < bv or (v == bv and c < best):
                    bv = v
                    best = c
                    bq = q
            add_record(ds, st, best, r)
            ec[r] = best
            if st.size[best] >= k:
                # keep the under-full list in ascending id order (ties go to the lowest id)
                for q in range(bq, nu - 1):
                    under[q] = under[q + 1]
                nu -= 1
        else:
            c = _nearest_cluster(ds, st, r, C)
            add_record(ds, st, c, r)
            ec[r] = c


# ------------------------------------------------------------------------------------------------
# orchestration

def oka_labels(data: QIData, k: int, seed: int, progress=no_progress, info: dict | None = None):
    """Cluster id per row (int64 (n,), 0..K-1) of OKA."""
    n = data.n
    labels = trivial_labels(n, k, progress)
    if labels is not None:
        return labels
    rng = np.random.default_rng(seed)
    ds = build_ncp_data(data)
    K = max(1, n // k)
    seeds = rng.choice(n, size=K, replace=False).astype(np.int64)
    ec = np.full(n, -1, dtype=np.int64)
    ec[seeds] = np.arange(K)
    st = new_stats(ds, K)
    for c, r in enumerate(seeds):
        add_record(ds, st, c, int(r))
    rest = np.flatnonzero(ec < 0)
    order = rest[rng.permutation(rest.size)].astype(np.int64)
    done = [0]

    def step(budget):
        stop = min(order.size, done[0] + budget * 64)
        _assign_pass(ds, st, order, done[0], stop, ec)
        done[0] = stop
        return 0.95 * stop / max(order.size, 1), stop >= order.size

    run_in_chunks(step, progress, first=4)
    # adjustment stage
    members = np.argsort(ec, kind="stable").astype(np.int64)
    offsets = np.zeros(K + 1, dtype=np.int64)
    offsets[1:] = np.cumsum(np.bincount(ec, minlength=K))
    removed = np.zeros(n, dtype=np.bool_)
    P, scr_cols, M = packed_of(data)
    n_removed = _trim_overfull(ds, ec, members, offsets, k, removed, P, scr_cols)
    pool = np.flatnonzero(removed).astype(np.int64)
    pool = pool[rng.permutation(pool.size)]
    st = new_stats(ds, K)  # rebuilt from the kept rows (min/max cannot be decremented)
    _add_rows(ds, st, ec, np.flatnonzero(ec >= 0).astype(np.int64))
    if M:
        _redistribute_closing(ds, st, pool, ec, k, P, scr_cols)
    else:
        _redistribute(ds, st, pool, ec, k)
    progress(1.0)
    if info is not None:
        info.update(n_clusters=K, moved_in_adjustment=int(n_removed))
    return ec


@njit
def _add_rows(ds, st, ec, rows):
    for i in range(rows.shape[0]):
        add_record(ds, st, ec[rows[i]], rows[i])


run = run_from_labels(oka_labels)


ENTRY = Algorithm("oka", run, "local", {},
                  "one-pass k-means clustering with an adjustment stage (Lin & Wei 2008)")
