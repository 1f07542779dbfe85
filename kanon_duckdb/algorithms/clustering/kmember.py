"""Greedy k-member clustering (Byun, Kamra, Bertino, Li 2007; the supplied paper
k-members-clustering.txt is Wang, Liu, Gao, whose Table III is a variant of it).

Algorithm (``seed_choice``, ``cost`` select the variant)::

    r := a random record (numpy Generator seeded with ``seed``)
    while |S| >= k:
        s := 'furthest': the unassigned record furthest from r (record distance d, ties: smallest id)
             'random':   a random unassigned record (the next one in a seeded permutation)
        e := {s};  r := s
        while |e| < k:
            e := e U {argmin_{x in S} IL(e U {x})}  # ties: smallest row id
    the leftover records (< k of them), in random order, each join the cluster whose IL
    increases least: argmin_e IL(e U {x}) - IL(e)     # ties: lowest cluster id

- ``seed_choice := 'furthest'`` is Byun et al.'s seed (their pseudo-code reuses r, which we read
  as "furthest from the previous seed"); ``'random'`` is Table III (steps 3 and 4(1) draw the seed
  at random; the record of step 3 is never used, so we draw once per cluster).
- ``cost := 'ncp'``: IL(e) = |e| * sum_j NCP_j(e) with the leaf-count NCP for categoricals (Xu et
  al. 2006, what GCP measures and what the KAB paper uses); ``'height'``: Definition 5 of Table
  III's paper (and Byun's), height(LCA subtree)/height(tree), what ``total_il`` measures. The
  record distance d(a, b) = cost of {a, b} in the same model (Definition 4).
- Leftovers are taken in random order (Table III step 5(1); Byun's pseudo-code also picks them
  at random). Table III literally: ``seed_choice := 'random', cost := 'height'``.
- Defaults (chosen by measured utility on Adult, 8 QIs, k = 5..40; README "k-member"):
  ``seed_choice := 'random'`` (lower GCP and GenTotal-IL than 'furthest' at every k, 2-4x faster:
  no furthest-record scan per cluster) and ``cost := 'ncp'`` (lowest GCP at every k; 'height'
  lowers GenTotal-IL by up to 5 % at k >= 20).
- Cluster sizes are in [k, 2k-1]: clusters are built with exactly k records and fewer than k
  leftovers are spread over them.

Speed: O(n^2/k * d), exact. The unassigned set is a compacted id array (swap-remove). Growing a
cluster does not rescan all records per step: one scan keeps the B cheapest candidates by
(cost, id) plus a bound below all others; since NCP(e U r) only grows with e, the best buffered
candidate is provably the argmin while it stays under that bound (a refill happens otherwise,
about 1.3 scans per cluster on Adult at k=10). Scans use per-scan leaf-cost vectors (one lookup
per categorical QI) and stop summing a record's cost once it cannot enter the buffer. Ties go to
the smallest row id, so results match a literal implementation of the pseudo-code
(tests/naive.py) and do not depend on the number of threads. The kernel builds a bounded number
of clusters per call; Python reports progress between calls (and Ctrl-C lands there).
"""
from __future__ import annotations

import numpy as np

from ..._numba_config import njit
from ...errors import InvalidParameterError
from ...params import declared
from ..base import Algorithm, Partition, no_progress
from ...qidata import QIData
from ...privacy._kernels import add_row
from ...privacy.spec import no_models
from ._closing import active, best_fixer_ncp, cluster_ok, packed_of, place_cheapest
from ._common import trivial_labels
from ._ncp import (_remove, add_record, argmax_pair_dist, assign_to_cheapest, build_ncp_data,
                   n_threads, ncp_with, new_stats, run_in_chunks, smallest_ncp_with)

_SPECS = {p.name: p for p in declared("kmember")}
SEED_CHOICES = _SPECS["seed_choice"].choices
COSTS = _SPECS["cost"].choices
DEFAULT_SEED_CHOICE = _SPECS["seed_choice"].default
DEFAULT_COST = _SPECS["cost"].default

# ------------------------------------------------------------------------------------------------
# kernels

@njit
def _kmember_clusters(ds, st, U, pos, state, ec, k, max_clusters, nt, bc, bi, order, P, h, scr,
                      dv):
    """Build up to ``max_clusters`` clusters of exactly k records.

    U      int64 (n,)  IN/OUT unassigned record ids in U[:m]; pos[r] = index of r in U
    state  int64 (5,)  IN/OUT [m, previous seed, clusters built, full rescans, next position in
                       ``order``]
    ec     int64 (n,)  IN/OUT cluster of each assigned record, -1 while unassigned
    order  int64 (n,)  IN a random permutation of the records: seeds are its next unassigned
                       record ('random' seeds); empty: the furthest record from the previous seed
    nt     number of thread shares for the parallel scans
    bc/bi  float64/int64 (B,) scratch: the lazy candidate buffer
    P, h, scr, dv  the privacy models (``_closing``): h (M+1,) the cluster's sensitive histogram;
           a cluster of k records is closed only when it satisfies every model, else the
           cheapest record that fixes it joins (``_closing.best_fixer_ncp``)

    Lazy greedy step: a scan keeps the B cheapest candidates by (cost, id) and the bound
    (tau, tau_id) below all others. As the cluster grows NCP(e U r) never decreases, so if the
    best buffered candidate (costs recomputed) is <= (tau, tau_id) it is the exact argmin with
    ties to the smallest record id; otherwise the buffer is refilled by a scan.
    """
    B = bc.shape[0]
    made = 0
    while state[0] >= k and made < max_clusters:
        m = state[0]
        if order.shape[0] > 0:
            while ec[order[state[4]]] >= 0:
                state[4] += 1
            s = order[state[4]]
        else:
            p, _d = argmax_pair_dist(ds, state[1], U, m, nt)
            s = U[p]
        _remove(U, pos, m, s)
        m -= 1
        c = state[2]
        add_record(ds, st, c, s)
        ec[s] = c
        closing = active(P)
        if closing:
            h[:] = 0.0
            add_row(h, s, P, 1.0)
        cnt = 0
        tau = -np.inf
        tau_id = -1
        for _ in range(k - 1):
            q_best = -1
            v_best = np.inf
            for q in range(cnt):
                v = ncp_with(ds, st, c, bi[q])
                if v < v_best or (v == v_best and bi[q] < bi[q_best]):
                    v_best = v
                    q_best = q
            if q_best < 0 or v_best > tau or (v_best == tau and bi[q_best] > tau_id):
                cnt, tau, tau_id = smallest_ncp_with(ds, st, c, U, m, B, nt, bc, bi)
                q_best = 0
                state[3] += 1
            r = bi[q_best]
            cnt -= 1
            bi[q_best] = bi[cnt]
            _remove(U, pos, m, r)
            m -= 1
            add_record(ds, st, c, r)
            ec[r] = c
            if closing:
                add_row(h, r, P, 1.0)
        size = k
        while closing and not cluster_ok(h, size, P, scr):
            r = best_fixer_ncp(ds, st, c, h, size, U, m, P, scr, dv)
            if r < 0:
                break  # no record fixes it: the final pass (privacy.enforce.repair) merges it
            _remove(U, pos, m, r)
            m -= 1
            add_record(ds, st, c, r)
            ec[r] = c
            add_row(h, r, P, 1.0)
            size += 1
        state[0] = m
        state[1] = s
        state[2] = c + 1
        made += 1


# ------------------------------------------------------------------------------------------------
# orchestration

def kmember_labels(data: QIData, k: int, seed: int, progress=no_progress, cost: str = DEFAULT_COST,
                   info: dict | None = None, buffer: int | None = None,
                   seed_choice: str = DEFAULT_SEED_CHOICE):
    """Cluster id per row (int64 (n,), ids 0..C-1) of greedy k-member clustering.

    ``cost`` 'ncp' | 'height' and ``seed_choice`` 'furthest' | 'random' (see the module docstring).
    ``info`` (optional dict) receives counters: clusters, full candidate scans. ``buffer`` sets the
    lazy candidate buffer size (default min(max(4k, 32), 1024)); it changes speed, not results.
    Random draws, in this order from ``numpy.random.default_rng(seed)``: the first record r0, a
    permutation of the n records (the seed order for 'random'), a permutation of the leftovers.
    """
    if seed_choice not in SEED_CHOICES:
        raise InvalidParameterError(
            f"seed_choice must be one of {', '.join(SEED_CHOICES)}, got {seed_choice!r}")
    if cost not in COSTS:
        raise InvalidParameterError(f"cost must be one of {', '.join(COSTS)}, got {cost!r}")
    n = data.n
    labels = trivial_labels(n, k, progress)
    if labels is not None:
        return labels
    ds = build_ncp_data(data, cost=cost)  # validates cost
    # n < 2k: one class (n < k cannot be made k-anonymous; the caller checks)
    labels = trivial_labels(n, k, progress, min_clusters=2)
    if labels is not None:
        return labels
    ec = np.full(n, -1, dtype=np.int64)
    cluster_rows(ds, np.arange(n, dtype=np.int64), k, np.random.default_rng(seed), ec,
                 seed_choice, progress, info, buffer, n_threads(), packed_of(data))
    if info is not None:
        info.update(cost=cost)
    return ec


def cluster_rows(ds, rows, k: int, rng: np.random.Generator, ec, seed_choice: str = "random",
                 progress=no_progress, info: dict | None = None, buffer: int | None = None,
                 nt: int = 1, models=None) -> int:
    """k-member clustering of the records ``rows`` (int64, m >= 2k of them) of the bundle ``ds``.

    Writes cluster ids 0..C-1 (C = m // k) into ``ec[rows]`` (ec int64 (n,); entries of other
    rows are left alone) and returns C. Draws from ``rng`` as ``kmember_labels`` does (r0, a
    permutation of the m rows, a permutation of the leftovers), so on rows = 0..n-1 the result is
    kmember_labels'. ``nt`` threads for the scans. O(m² / k · d). ``models``: (P, scr_cols, M)
    of ``_closing.packed_of`` (privacy models closed in the loop; fewer than C clusters may
    result, the number made is returned); None: k alone.
    """
    m = int(rows.size)
    C = m // k
    st = new_stats(ds, C)
    U = rows.copy()
    pos = np.empty(ec.shape[0], dtype=np.int64)
    pos[rows] = np.arange(m, dtype=np.int64)
    ec[rows] = -1
    r0 = int(rows[int(rng.integers(m))])
    perm = rows[rng.permutation(m)]
    order = perm if seed_choice == "random" else np.empty(0, dtype=np.int64)
    state = np.array([m, r0, 0, 0, 0], dtype=np.int64)
    B = int(buffer) if buffer else int(min(max(4 * k, 32), 1024))
    bc = np.empty(B)
    bi = np.empty(B, dtype=np.int64)
    P, scr_cols, M = models if models is not None else (no_models(0).packed(), 1, 0)
    h = np.zeros(M + 1)
    scr = np.empty((4, scr_cols))
    dv = np.zeros(M + 1)

    def step(budget):
        _kmember_clusters(ds, st, U, pos, state, ec, k, budget, nt, bc, bi, order, P, h, scr, dv)
        return state[2] / C, state[0] < k

    run_in_chunks(step, progress, first=4)
    left = np.sort(U[:int(state[0])])
    left = left[rng.permutation(left.size)]  # leftovers are taken in random order
    made = int(state[2])  # C, or fewer when closing under privacy models took extra records
    if M:
        place_cheapest(ds, st, left, left.size, made, ec, rows, P, scr_cols)
    else:
        assign_to_cheapest(ds, st, left, left.size, made, ec, False)
    if info is not None:
        info.update(n_clusters=made, first_record=r0, scans=int(state[3]), seed_choice=seed_choice)
    return made


def run(data: QIData, k: int, seed: int, params: dict, progress=no_progress) -> Partition:
    info = {}
    ec = kmember_labels(data, k, seed, progress, cost=params["cost"], info=info,
                        seed_choice=params["seed_choice"])
    return Partition(ec=ec, info=info)


ENTRY = Algorithm("kmember", run, "local",
                  declared("kmember"),
                  "greedy k-member clustering (Byun et al. 2007; Wang, Liu, Gao's Table III "
                  "with seed_choice := 'random', cost := 'height')")
