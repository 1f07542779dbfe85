"""Improved k-anonymity clustering, IKA (Zheng et al. 2018), as summarised in
kab-black-hole-k-anonymity.txt §2.1.

Our reading::

    c_1 := a random record (numpy Generator seeded with ``seed``)
    repeat while at least k records are unassigned:
        c_i := the unassigned record furthest from all existing centroids c_1..c_{i-1}
               (i >= 2; "furthest from all" = largest distance to its nearest centroid, i.e.
               farthest-first / max-min seeding; ties: smallest row id)
        cluster i := {c_i} U the k-1 unassigned records closest to c_i   (ties: lower row id)
    each remaining record (< k) joins the cluster whose centroid is nearest (ties: lowest id)

Distances are the record distance d(a, b) = NCP({a, b}) (numeric |a-b| / range, categorical
leaves(LCA)/leaves(root), 0 for the same leaf), the NCP distance of the KAB paper eq. 1-3. The
centroid of a cluster stays its seed record (the summary's "distance with its centroid"). The summary
leaves "largest distance between itself and all the existed centroids" open between the sum and the
minimum of the distances; the minimum is the standard farthest-first traversal that spreads
centroids over the data (a sum would keep picking records on the same extreme edge), so we use it.

Cost: one pass over the unassigned records per centroid computes d(r, c_i), updates each record's
distance to its nearest centroid and keeps the k-1 closest in a bounded buffer: O(n^2 d / k) in all.
The kernel creates a bounded number of clusters per call (progress and Ctrl-C between calls).
"""
from __future__ import annotations

import numpy as np

from ..._numba_config import njit
from ..base import Algorithm, no_progress
from ...qidata import QIData
from ...privacy._kernels import add_row
from ._closing import active, best_fixer_dist, cluster_ok, packed_of, place_nearest
from ._common import run_from_labels, trivial_labels
from ._ncp import (_insert_sorted, _remove, assign_to_nearest, build_ncp_data,
                   leaf_costs_of_record, pair_dist, pair_dist_lc_bounded, run_in_chunks)


# ------------------------------------------------------------------------------------------------
# kernels

@njit
def _ika_clusters(ds, U, pos, mind, centroid, state, ec, k, max_clusters, bc, bi, lc, P, h, scr,
                  dv):
    """Create up to ``max_clusters`` clusters.

    U/pos     int64 (n,)  IN/OUT unassigned ids in U[:m] and their positions
    mind      float64 (n,) IN/OUT distance of each record to its nearest centroid so far
    centroid  int64 (C,)  OUT seed record of each cluster
    state     int64 (3,)  IN/OUT [m, clusters built, first centroid]
    bc/bi     scratch (k-1,) buffer of the closest records
    lc        scratch (sum_j L_j,) leaf costs of the current centroid
    P, h, scr, dv  privacy models (``_closing``): a cluster of k records is closed only when it
              satisfies every model, else the record nearest the centroid that fixes it joins
    """
    made = 0
    while state[0] >= k and made < max_clusters:
        m = state[0]
        c = state[1]
        if c == 0:
            s = state[2]
        else:
            p_best = 0
            v_best = -np.inf
            for p in range(m):
                v = mind[U[p]]
                if v > v_best or (v == v_best and U[p] < U[p_best]):
                    v_best = v
                    p_best = p
            s = U[p_best]
        _remove(U, pos, m, s)
        m -= 1
        centroid[c] = s
        ec[s] = c
        cnt = 0
        B = k - 1
        use_lc = lc.shape[0] <= m
        if use_lc:
            leaf_costs_of_record(ds, s, lc)
        for p in range(m):
            r = U[p]
            if use_lc:  # stop early once d can neither lower mind[r] nor enter the buffer
                bound = max(mind[r], bc[B - 1] if (B > 0 and cnt == B) else np.inf)
                d = pair_dist_lc_bounded(ds, s, lc, r, bound)
            else:
                d = pair_dist(ds, s, r)
            if d < mind[r]:
                mind[r] = d
            if B > 0:
                cnt = _insert_sorted(bc, bi, cnt, B, d, r)
        for q in range(cnt):
            r = bi[q]
            _remove(U, pos, m, r)
            m -= 1
            ec[r] = c
        if active(P):
            h[:] = 0.0
            add_row(h, s, P, 1.0)
            for q in range(cnt):
                add_row(h, bi[q], P, 1.0)
            size = cnt + 1
            while not cluster_ok(h, size, P, scr):
                r = best_fixer_dist(ds, s, h, size, U, m, ec, P, scr, dv)
                if r < 0:
                    break  # the final pass (privacy.enforce.repair) merges it
                _remove(U, pos, m, r)
                m -= 1
                ec[r] = c
                add_row(h, r, P, 1.0)
                size += 1
        state[0] = m
        state[1] = c + 1
        made += 1


# ------------------------------------------------------------------------------------------------
# orchestration

def ika_labels(data: QIData, k: int, seed: int, progress=no_progress, info: dict | None = None):
    """Cluster id per row (int64 (n,), 0..C-1) of IKA."""
    n = data.n
    # n < 2k: one class (n < k cannot be made k-anonymous; the caller checks)
    labels = trivial_labels(n, k, progress, min_clusters=2)
    if labels is not None:
        return labels
    ds = build_ncp_data(data)
    C = n // k
    U = np.arange(n, dtype=np.int64)
    pos = np.arange(n, dtype=np.int64)
    mind = np.full(n, np.inf)
    centroid = np.full(C, -1, dtype=np.int64)
    ec = np.full(n, -1, dtype=np.int64)
    first = int(np.random.default_rng(seed).integers(n))
    state = np.array([n, 0, first], dtype=np.int64)
    bc = np.empty(max(k - 1, 1))
    bi = np.empty(max(k - 1, 1), dtype=np.int64)
    lc = np.empty(int(ds.leaf_off[-1]))
    P, scr_cols, M = packed_of(data)
    h = np.zeros(M + 1)
    scr = np.empty((4, scr_cols))
    dv = np.zeros(M + 1)

    def step(budget):
        _ika_clusters(ds, U, pos, mind, centroid, state, ec, k, budget, bc, bi, lc, P, h, scr, dv)
        return state[1] / C, state[0] < k

    run_in_chunks(step, progress, first=8)
    made = int(state[1])  # C, or fewer when closing under privacy models took extra records
    if M:
        place_nearest(ds, U, int(state[0]), centroid, made, ec, P, scr_cols)
    else:
        assign_to_nearest(ds, U, int(state[0]), centroid, made, ec, -1)
    if info is not None:
        info.update(n_clusters=made, first_centroid=first)
    return ec


run = run_from_labels(ika_labels)


ENTRY = Algorithm("ika", run, "local", {},
                  "improved k-anonymity clustering, farthest-first centroids (Zheng et al. 2018)")
