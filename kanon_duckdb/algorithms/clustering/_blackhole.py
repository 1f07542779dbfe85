"""The black-hole search shared by ``kab`` and ``bha`` (Kacha et al. 2021, §3.2-3.4; Hatamlou 2013).

A star is a k-anonymous clustering, encoded as in §3.2: an int64 array of n cluster ids.

Fitness (eq. 4-8): ``fitness = (privacy + utility) / 2`` with privacy 0 when every cluster has
>= k records (1 otherwise) and utility = sum over clusters |e| * NCP(e) (eq. 6-8, NCP summed over
the QIs). We divide utility by n·d, which turns it into the GCP of the clustering (eq. 15 / 100):
the order of stars is unchanged, and the privacy term keeps a meaning (a non-k-anonymous star can
never beat a k-anonymous one). Every star is repaired to k-anonymity, so privacy is 0 in practice.

The black hole (BH) is the best star. Eq. 10, ``X_i(t+1) = X_i(t) + rand·(X_BH - X_i(t))``, is not
arithmetic that means anything on cluster ids, so a star moves by this discrete analogue:

1. match the clusters of the BH to the star's clusters: candidate pairs (BH cluster b, star
   cluster s) weighted by their overlap (records in both), taken greedily by decreasing overlap,
   one-to-one; an unmatched BH cluster gets a fresh id;
2. draw ``rand`` ~ U[0, 1] once per star and iteration (the scalar of eq. 10); every record, with
   probability ``rand``, adopts the (matched id of the) BH cluster it belongs to, otherwise keeps
   its star cluster. rand = 0 leaves the star as it was, rand = 1 turns it into the BH;
3. repair: clusters left with fewer than k records are dissolved; each of their records joins the
   cheaper (least IL(e ∪ r) - IL(e)) of its two "homes" that survived: the cluster of its BH
   cluster's matched id, or its old star cluster (records in row order, each placement updating
   its cluster's statistics). Records whose two homes both died ("orphans") come last: for
   ``kab`` (``split_large``), when there are at least k of them, they are clustered among
   themselves with Algorithm 1 (the paper's clustering heuristic; O(orphans² / k · d));
   otherwise each joins the cheapest surviving cluster overall, chosen in parallel against the
   statistics after the other records were re-homed (O(orphans · clusters · d)). Then, for
   ``kab`` only, every cluster of >= 2k records is re-clustered with Algorithm 1, so cluster
   sizes stay between k and 2k-1.
   ``bha`` has no clustering heuristic and keeps the sizes the move produces.

Event horizon (eq. 11): R = fitness(BH) / sum_i fitness(X_i) over all stars (the BH included). The
distance between a star and the BH is the share of records outside the matched overlap of step 1
(0 = same clustering, up to renaming; near 1 = unrelated). A star closer than R is swallowed and
replaced by a new star from the initializer (``kab``: Algorithm 1 from a new random start; ``bha``:
a new random clustering).

A star that reaches a better fitness than the BH becomes the BH (eq. 10 step 4); the BH is thus the
best solution ever seen, and the result is never worse than the best initial star.

Randomness comes from one ``numpy.random.Generator`` seeded by the run's seed; kernels receive the
random draws as arrays, so a seed fixes the result.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np
from numba import prange

from ..._numba_config import njit, njit_parallel
from ..base import Partition, QIData
from ._ncp import add_record, build_ncp_data, cluster_ncp, ncp_with, new_stats, partition_il
from .kab_kernels import ncp_clustering_subset


@njit
def dense_labels(lab):
    """Renumber labels to 0..C-1 in order of first appearance; returns (labels, C)."""
    n = lab.shape[0]
    mx = 0
    for i in range(n):
        if lab[i] > mx:
            mx = lab[i]
    remap = np.full(mx + 1, -1, dtype=np.int64)
    out = np.empty(n, dtype=np.int64)
    C = 0
    for i in range(n):
        v = lab[i]
        if remap[v] < 0:
            remap[v] = C
            C += 1
        out[i] = remap[v]
    return out, C


@njit
def match_clusters(bh, n_bh, star, n_star):
    """Greedy one-to-one matching of BH clusters to star clusters by decreasing overlap.

    Returns (mapping int64 (n_bh,): star id for each BH cluster, fresh ids n_star.. for unmatched
    ones; overlap: number of records in matched pairs).
    """
    n = bh.shape[0]
    keys = np.empty(n, dtype=np.int64)
    for i in range(n):
        keys[i] = bh[i] * n_star + star[i]
    keys.sort()
    # run lengths
    pk = np.empty(n, dtype=np.int64)
    pc = np.empty(n, dtype=np.int64)
    m = 0
    i = 0
    while i < n:
        j = i
        while j < n and keys[j] == keys[i]:
            j += 1
        pk[m] = keys[i]
        pc[m] = j - i
        m += 1
        i = j
    order = np.argsort(-pc[:m], kind="mergesort")
    mapping = np.full(n_bh, -1, dtype=np.int64)
    used = np.zeros(n_star, dtype=np.bool_)
    overlap = 0
    for t in range(m):
        q = order[t]
        b = pk[q] // n_star
        s = pk[q] % n_star
        if mapping[b] < 0 and not used[s]:
            mapping[b] = s
            used[s] = True
            overlap += pc[q]
    fresh = n_star
    for b in range(n_bh):
        if mapping[b] < 0:
            mapping[b] = fresh
            fresh += 1
    return mapping, overlap


@njit_parallel
def _best_clusters(ds, st, ncp, cand, recs, out):
    """out[t] = the cluster in ``cand`` with the least IL increase for record recs[t]."""
    for t in prange(recs.shape[0]):
        r = recs[t]
        best = cand[0]
        bc = np.inf
        for q in range(cand.shape[0]):
            c = cand[q]
            cc = (st.size[c] + 1) * ncp_with(ds, st, c, r) - st.size[c] * ncp[c]
            if cc < bc:
                bc = cc
                best = c
        out[t] = best


@njit
def move_and_repair(ds, star, n_star, bh, n_bh, rand, u, k, split_large, order_keys):
    """One discrete eq.-10 move of ``star`` toward ``bh`` plus the k-anonymity repair.

    star, bh int64 (n,) IN dense labels; u float64 (n,) IN per-record uniforms; order_keys float64
    (n,) IN random keys for Algorithm-1 splits. Returns (new dense labels, number of clusters).
    """
    n = star.shape[0]
    mapping, _ = match_clusters(bh, n_bh, star, n_star)
    home_bh = np.empty(n, dtype=np.int64)
    lab = np.empty(n, dtype=np.int64)
    for i in range(n):
        home_bh[i] = mapping[bh[i]]
        lab[i] = home_bh[i] if u[i] < rand else star[i]
    n_lab = n_star + n_bh
    size = np.zeros(n_lab, dtype=np.int64)
    for i in range(n):
        size[lab[i]] += 1
    alive = np.zeros(n_lab, dtype=np.bool_)
    any_alive = False
    for c in range(n_lab):
        if size[c] >= k:
            alive[c] = True
            any_alive = True
    if not any_alive:
        out = np.zeros(n, dtype=np.int64)
        return out, 1
    # statistics of surviving clusters (members that stay)
    st = new_stats(ds, n_lab)
    for i in range(n):
        if alive[lab[i]]:
            add_record(ds, st, lab[i], i)
    alive_ids = np.empty(n_lab, dtype=np.int64)
    na = 0
    for c in range(n_lab):
        if alive[c]:
            alive_ids[na] = c
            na += 1
    ncp = np.zeros(n_lab)
    for t in range(na):
        ncp[alive_ids[t]] = cluster_ncp(ds, st, alive_ids[t])
    # orphans: records whose two homes both died; they are placed after the others
    is_orphan = np.zeros(n, dtype=np.bool_)
    orphans = np.empty(n, dtype=np.int64)
    no = 0
    for i in range(n):
        if not alive[lab[i]] and not alive[home_bh[i]] and not alive[star[i]]:
            is_orphan[i] = True
            orphans[no] = i
            no += 1
    for i in range(n):
        v = lab[i]
        if alive[v] or is_orphan[i]:
            continue
        a = home_bh[i]
        b = star[i]
        best = -1
        bc = np.inf
        if alive[a]:
            best = a
            bc = (st.size[a] + 1) * ncp_with(ds, st, a, i) - st.size[a] * ncp[a]
        if alive[b]:
            cb = (st.size[b] + 1) * ncp_with(ds, st, b, i) - st.size[b] * ncp[b]
            if cb < bc:
                best = b
        add_record(ds, st, best, i)
        ncp[best] = cluster_ncp(ds, st, best)
        lab[i] = best
    if no > 0:
        if split_large and no >= k:
            # kab: the orphans are clustered among themselves with Algorithm 1 (fresh ids)
            ncp_clustering_subset(ds, orphans[:no].copy(), order_keys, k, lab, n_lab)
        else:
            # bha (no heuristic), or fewer than k orphans: the cheapest surviving cluster each,
            # chosen in parallel against the statistics after the other records were re-homed
            dest = np.empty(no, dtype=np.int64)
            _best_clusters(ds, st, ncp, alive_ids[:na], orphans[:no], dest)
            for t in range(no):
                lab[orphans[t]] = dest[t]
    lab, C = dense_labels(lab)
    if split_large:
        size2 = np.zeros(C, dtype=np.int64)
        for i in range(n):
            size2[lab[i]] += 1
        big = 0
        for c in range(C):
            if size2[c] >= 2 * k:
                big += 1
        if big > 0:
            # members of each big cluster, grouped by a counting sort
            start = np.zeros(C + 1, dtype=np.int64)
            for c in range(C):
                start[c + 1] = start[c] + size2[c]
            members = np.empty(n, dtype=np.int64)
            fill = start[:C].copy()
            for i in range(n):
                c = lab[i]
                members[fill[c]] = i
                fill[c] += 1
            nxt = C
            for c in range(C):
                if size2[c] >= 2 * k:
                    ids = members[start[c]:start[c + 1]].copy()
                    nxt += ncp_clustering_subset(ds, ids, order_keys, k, lab, nxt)
            lab, C = dense_labels(lab)
    return lab, C


def fitness(ds, lab: np.ndarray, C: int, k: int, n_qi: int) -> float:
    """Eq. 4: (privacy + utility) / 2, utility = total IL / (n·d) (the clustering's GCP)."""
    sizes = np.bincount(lab, minlength=C)
    privacy = 0.0 if sizes.min() >= k else 1.0
    utility = partition_il(ds, lab, C) / (lab.shape[0] * max(n_qi, 1))
    return 0.5 * (privacy + utility)


class Stopped(Exception):
    """Raised inside a worker thread when the run was interrupted."""


def _make_stars(init_star, seeds, progress_each):
    """Build one star per seed, concurrently (the kernels release the GIL; one star per core).

    init_star(rng, should_stop) -> labels. Ctrl-C stops the workers at their next chunk boundary.
    """
    stop = threading.Event()

    def should_stop():
        return stop.is_set()

    def work(sd):
        if stop.is_set():
            raise Stopped()
        return dense_labels(init_star(np.random.default_rng(sd), should_stop))

    workers = max(1, min(len(seeds), numba.get_num_threads()))
    if workers == 1:
        out = []
        for sd in seeds:
            out.append(work(sd))
            progress_each()
        return out
    pool = ThreadPoolExecutor(max_workers=workers)
    try:
        futs = [pool.submit(work, sd) for sd in seeds]
        out = []
        for f in futs:
            out.append(f.result())
            progress_each()
        return out
    except BaseException:
        stop.set()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def black_hole_search(ds, n, d, k, rng, init_star, n_stars, iterations, split_large, progress):
    """Run the black-hole search; returns (best labels, info dict).

    init_star(rng, should_stop) -> int64 labels of a new k-anonymous star; it should poll
    ``should_stop()`` between chunks of work and raise :class:`Stopped` when it returns True.
    """
    n_stars = max(int(n_stars), 1)
    iterations = max(int(iterations), 0)
    total_units = n_stars + iterations * max(n_stars - 1, 0)
    done = [0]

    def tick():
        done[0] += 1
        progress(min(done[0] / max(total_units, 1), 1.0))

    def seeds(m):
        return [int(x) for x in rng.integers(0, 2**63 - 1, size=m)]

    made = _make_stars(init_star, seeds(n_stars), tick)
    stars = [lab for lab, _ in made]
    counts = [C for _, C in made]
    fits = [fitness(ds, lab, C, k, d) for lab, C in made]
    initial_fits = list(fits)
    bh = int(np.argmin(fits))
    n_swallowed = 0
    n_bh_changes = 0
    history = [float(fits[bh])]
    for _it in range(iterations):
        for s in range(n_stars):
            if s == bh:
                continue
            rand = float(rng.random())
            u = rng.random(n)
            keys = rng.random(n)
            lab, C = move_and_repair(ds, stars[s], counts[s], stars[bh], counts[bh], rand, u,
                                     int(k), bool(split_large), keys)
            stars[s], counts[s] = lab, C
            fits[s] = fitness(ds, lab, C, k, d)
            if fits[s] < fits[bh]:
                bh = s
                n_bh_changes += 1
            tick()
        # event horizon (eq. 11)
        total = float(sum(fits))
        radius = fits[bh] / total if total > 0 else 0.0
        swallowed = []
        for s in range(n_stars):
            if s == bh:
                continue
            _, overlap = match_clusters(stars[bh], counts[bh], stars[s], counts[s])
            if 1.0 - overlap / n < radius:
                swallowed.append(s)
        if swallowed:
            for s, (lab, C) in zip(swallowed, _make_stars(init_star, seeds(len(swallowed)),
                                                          lambda: None)):
                stars[s], counts[s] = lab, C
                fits[s] = fitness(ds, lab, C, k, d)
                n_swallowed += 1
            for s in swallowed:
                if fits[s] < fits[bh]:
                    bh = s
                    n_bh_changes += 1
        history.append(float(fits[bh]))
    progress(1.0)
    info = {
        "stars": n_stars,
        "iterations": iterations,
        "initial_fitness": [float(f) for f in initial_fits],
        "best_fitness": float(fits[bh]),
        "fitness_history": history,
        "black_hole_changes": n_bh_changes,
        "swallowed": n_swallowed,
    }
    return stars[bh], info


def run_black_hole(data: QIData, k: int, seed: int, params: dict, progress, init_star,
                   split_large: bool, initializer: str) -> Partition:
    """The ``run`` of kab and bha: black_hole_search over stars made by
    ``init_star(ds, n, k, rng, should_stop)``; ``initializer`` is recorded in the info."""
    ds = build_ncp_data(data)
    n, d = data.n, data.dn + data.dc
    rng = np.random.default_rng(seed)

    def make_star(r, should_stop):
        return init_star(ds, n, k, r, should_stop)

    lab, info = black_hole_search(ds, n, d, k, rng, make_star, params["stars"],
                                  params["iterations"], split_large, progress)
    info["initializer"] = initializer
    return Partition(ec=lab.astype(np.int64), info=info)
