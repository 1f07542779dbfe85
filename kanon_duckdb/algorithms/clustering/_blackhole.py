"""The black-hole search shared by ``kab`` and ``bha`` (Kacha et al. 2021, §3.2-3.4; Hatamlou 2013).

A star is a k-anonymous clustering, encoded as in §3.2: an int64 array of n cluster ids.

Fitness (eq. 4-8): ``fitness = (privacy + utility) / 2`` with privacy 0 when every cluster has
>= k records (1 otherwise) and utility = sum over clusters |e| * NCP(e) (eq. 6-8, NCP summed over
the QIs). We divide utility by n·d, which turns it into the GCP of the clustering (eq. 15 / 100):
the order of stars is unchanged, and the privacy term keeps a meaning (a non-k-anonymous star can
never beat a k-anonymous one). Every star is repaired to k-anonymity, so privacy is 0 in practice.

The black hole (BH) is the best star. Eq. 10, ``X_i(t+1) = X_i(t) + rand·(X_BH - X_i(t))``, is not
arithmetic that means anything on cluster ids, so a star moves by this discrete analogue
(``move_toward``), a local search step guided by the BH:

1. match the clusters of the BH to the star's clusters: candidate pairs (BH cluster b, star
   cluster s) weighted by their overlap (records in both), taken greedily by decreasing overlap,
   one-to-one (``match_clusters``);
2. draw ``rand`` ~ U[0, 1] once per star and iteration (the scalar of eq. 10, the step length):
   the star's ceil(rand·C) worst clusters (highest NCP) try to move toward the BH, worst first;
3. a cluster s tries to send each of its records to the star cluster matched to the record's BH
   cluster (records whose BH cluster maps to s or to no live star cluster stay); if fewer than k
   would stay, they follow the others to the cheapest of those destinations (least IL increase).
   This local repair keeps every class >= k rows. The try is kept only when the summed IL of s
   and its destinations drops (the exact change of the star's fitness) and no class grows above
   ``max_size`` (kab: 2k-1, the paper's C_avg ≈ 1; bha: no limit). rand = 0 leaves the star as it
   was; a star already better than the BH on every cluster does not move. O(n d) per move.

Event horizon (eq. 11): R = fitness(BH) / sum_i fitness(X_i) over all stars (the BH included). The
distance between a star and the BH is the share of records outside the matched overlap of step 1
(0 = same clustering, up to renaming; near 1 = unrelated). A star closer than R is swallowed and
replaced by a new star from the initializer (``kab``: Algorithm 1 from a new random start; ``bha``:
a new random clustering).

A star that reaches a better fitness than the BH becomes the BH (Fig. 3 step 4); the BH is thus the
best solution ever seen, and the result is never worse than the best initial star.

The run's ``info`` (kanon_runs.details) records the best initial star's fitness, the final one,
the number of star moves, how many of them improved their star, the cluster moves kept, the
swallowed stars, and a per-move trace.

Randomness comes from one ``numpy.random.Generator`` seeded by the run's seed; kernels receive the
random draws as arrays, so a seed fixes the result.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from ... import interrupt
from ..._numba_config import njit
from ..base import Partition
from ...qidata import QIData
from ._ncp import (add_record, build_ncp_data, clear_cluster, copy_cluster, cluster_ncp, ncp_with, new_stats,
                   partition_il, stats_from_labels)


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


@njit
def move_toward(ds, star, n_star, bh, n_bh, rand, k, max_size):
    """One discrete eq.-10 move of ``star`` toward the black hole ``bh``; a local search step.

    star, bh  int64 (n,) IN dense labels (n_star, n_bh clusters), both k-anonymous
    rand      the scalar of eq. 10 in [0, 1]: the step length, i.e. the share of the star's
              clusters (worst NCP first) that try to move toward the BH
    max_size  largest class a move may create (kab: 2k-1, bha: n)
    Returns (new dense labels, number of clusters, accepted cluster moves).

    Each tried cluster s sends every record whose BH cluster is matched (``match_clusters``) to
    another live star cluster d into d; records with no such home stay. If fewer than k stay,
    they join the cheapest of the clusters just used (least IL increase). The move is kept only
    when the summed IL of s and its destinations drops (the exact change of the star's fitness,
    since every class stays >= k) and no class exceeds ``max_size``. O(n d) per move.
    """
    n = star.shape[0]
    mapping, _ = match_clusters(bh, n_bh, star, n_star)
    C = n_star
    lab = star.copy()
    st = stats_from_labels(ds, lab, C)
    ncp = np.empty(C)
    for c in range(C):
        ncp[c] = cluster_ncp(ds, st, c)
    head = np.full(C, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    for i in range(n - 1, -1, -1):
        nxt[i] = head[lab[i]]
        head[lab[i]] = i
    order = np.argsort(-ncp, kind="mergesort")
    n_try = min(C, int(np.ceil(rand * C)))
    members = np.empty(n, dtype=np.int64)
    dest = np.empty(n, dtype=np.int64)
    slot = np.full(C, -1, dtype=np.int64)
    used = np.empty(C + 1, dtype=np.int64)
    tmp = new_stats(ds, C + 1)
    accepted = 0
    for t in range(n_try):
        s = order[t]
        if st.size[s] == 0:
            continue
        m = 0
        r = head[s]
        while r >= 0:
            members[m] = r
            m += 1
            r = nxt[r]
        nd = 0
        moving = 0
        for i in range(m):
            r = members[i]
            d = mapping[bh[r]]
            if d < C and d != s and st.size[d] > 0:
                dest[i] = d
                moving += 1
                if slot[d] < 0:
                    slot[d] = nd
                    used[nd] = d
                    copy_cluster(st, d, tmp, nd)
                    nd += 1
                add_record(ds, tmp, slot[d], r)
            else:
                dest[i] = -1
        if moving > 0:
            stay = m - moving
            if stay < k:  # too few stay: they follow the others to the cheapest destination
                for i in range(m):
                    if dest[i] < 0:
                        best = 0
                        bc = np.inf
                        for q in range(nd):
                            cc = (tmp.size[q] + 1) * ncp_with(ds, tmp, q, members[i]) \
                                - tmp.size[q] * cluster_ncp(ds, tmp, q)
                            if cc < bc:
                                bc = cc
                                best = q
                        add_record(ds, tmp, best, members[i])
                        dest[i] = used[best]
                stay = 0
            old = st.size[s] * ncp[s]
            new = 0.0
            ok = True
            for q in range(nd):
                d = used[q]
                old += st.size[d] * ncp[d]
                new += tmp.size[q] * cluster_ncp(ds, tmp, q)
                if tmp.size[q] > max_size:
                    ok = False
            clear_cluster(tmp, nd)
            if stay > 0:
                for i in range(m):
                    if dest[i] < 0:
                        add_record(ds, tmp, nd, members[i])
                new += stay * cluster_ncp(ds, tmp, nd)
            if ok and new < old * (1.0 - 1e-12):
                accepted += 1
                for q in range(nd):
                    d = used[q]
                    copy_cluster(tmp, q, st, d)
                    ncp[d] = cluster_ncp(ds, st, d)
                copy_cluster(tmp, nd, st, s)
                ncp[s] = cluster_ncp(ds, st, s)
                head[s] = -1
                for i in range(m):
                    r = members[i]
                    c = dest[i] if dest[i] >= 0 else s
                    lab[r] = c
                    nxt[r] = head[c]
                    head[c] = r
        for q in range(nd + 1):
            clear_cluster(tmp, q)
            if q < nd:
                slot[used[q]] = -1
    lab, C = dense_labels(lab)
    return lab, C, accepted


def fitness(ds, lab: np.ndarray, C: int, k: int, n_qi: int) -> float:
    """Eq. 4: (privacy + utility) / 2, utility = total IL / (n·d) (the clustering's GCP)."""
    sizes = np.bincount(lab, minlength=C)
    privacy = 0.0 if sizes.min() >= k else 1.0
    utility = partition_il(ds, lab, C) / (lab.shape[0] * max(n_qi, 1))
    return 0.5 * (privacy + utility)


class Stopped(Exception):
    """Raised inside a worker thread when the run was interrupted."""


def _make_stars(init_star, seeds, progress_each, progress=None):
    """Build one star per seed, concurrently (the kernels release the GIL; one star per core).

    init_star(rng, should_stop) -> labels. Ctrl-C, or an interruption of the run of ``progress``
    (``kanon_duckdb.interrupt``), stops the workers at their next chunk boundary.
    """
    stop = threading.Event()

    def should_stop():
        return stop.is_set() or interrupt.requested(progress)

    def work(sd):
        if stop.is_set():
            raise Stopped()
        return dense_labels(init_star(np.random.default_rng(sd), should_stop))

    workers = max(1, min(len(seeds), numba.get_num_threads()))
    pool = ThreadPoolExecutor(max_workers=workers) if workers > 1 else None
    try:
        if pool is None:
            out = []
            for sd in seeds:
                out.append(work(sd))
                progress_each()
            return out
        futs = [pool.submit(work, sd) for sd in seeds]
        out = []
        for f in futs:
            out.append(f.result())
            progress_each()
        return out
    except BaseException:
        stop.set()
        interrupt.check(progress)  # an interrupted run reports RunInterrupted, not Stopped
        raise
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)


def black_hole_search(ds, n, d, k, rng, init_star, n_stars, iterations, max_size, progress):
    """Run the black-hole search; returns (best labels, info dict).

    init_star(rng, should_stop) -> int64 labels of a new k-anonymous star; it should poll
    ``should_stop()`` between chunks of work and raise :class:`Stopped` when it returns True.
    max_size: the largest class a move may create (kab 2k-1, bha n).
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

    made = _make_stars(init_star, seeds(n_stars), tick, progress)
    stars = [lab for lab, _ in made]
    counts = [C for _, C in made]
    fits = [fitness(ds, lab, C, k, d) for lab, C in made]
    initial_fits = list(fits)
    bh = int(np.argmin(fits))
    n_swallowed = n_bh_changes = n_moves = n_improved = n_cluster_moves = 0
    history = [float(fits[bh])]
    trace = []
    for it in range(iterations):
        for s in range(n_stars):
            if s == bh:
                continue
            rand = float(rng.random())
            before = fits[s]
            lab, C, acc = move_toward(ds, stars[s], counts[s], stars[bh], counts[bh], rand,
                                      int(k), int(max_size))
            stars[s], counts[s] = lab, C
            fits[s] = fitness(ds, lab, C, k, d)
            n_moves += 1
            n_cluster_moves += int(acc)
            n_improved += int(fits[s] < before)
            trace.append({"iteration": it, "star": s, "rand": round(rand, 4),
                          "fitness_before": float(before), "fitness_after": float(fits[s]),
                          "cluster_moves": int(acc)})
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
                                                          lambda: None, progress)):
                stars[s], counts[s] = lab, C
                fits[s] = fitness(ds, lab, C, k, d)
                n_swallowed += 1
                trace.append({"iteration": it, "star": s, "swallowed": True,
                              "new_fitness": float(fits[s])})
            for s in swallowed:
                if fits[s] < fits[bh]:
                    bh = s
                    n_bh_changes += 1
        history.append(float(fits[bh]))
    progress(1.0)
    best_initial = float(min(initial_fits))
    info = {
        "stars": n_stars,
        "iterations": iterations,
        "initial_fitness": [float(f) for f in initial_fits],
        "best_initial_fitness": best_initial,
        "best_fitness": float(fits[bh]),
        "improvement_over_best_initial": (1.0 - float(fits[bh]) / best_initial
                                          if best_initial > 0 else 0.0),
        "fitness_history": history,
        "moves": n_moves,
        "moves_improved": n_improved,
        "cluster_moves_accepted": n_cluster_moves,
        "black_hole_changes": n_bh_changes,
        "swallowed": n_swallowed,
        "trace": trace,
    }
    return stars[bh], info


def run_black_hole(data: QIData, k: int, seed: int, params: dict, progress, init_star,
                   max_size: int, initializer: str) -> Partition:
    """The ``run`` of kab and bha: black_hole_search over stars made by
    ``init_star(ds, n, k, rng, should_stop)``; ``initializer`` is recorded in the info."""
    ds = build_ncp_data(data)
    n, d = data.n, data.dn + data.dc
    rng = np.random.default_rng(seed)

    def make_star(r, should_stop):
        return init_star(ds, n, k, r, should_stop)

    lab, info = black_hole_search(ds, n, d, k, rng, make_star, params["stars"],
                                  params["iterations"], max_size, progress)
    info["initializer"] = initializer
    return Partition(ec=lab.astype(np.int64), info=info)
