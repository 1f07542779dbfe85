"""The black-hole search shared by ``kab`` and ``bha`` (Kacha et al. 2021, §3.2-3.4; Hatamlou 2013).

A star is a k-anonymous clustering, encoded as in §3.2: an int64 array of n cluster ids.

Fitness (eq. 4-8): ``fitness = (privacy + utility) / 2`` with privacy 0 when every cluster has
>= k records (1 otherwise) and utility = sum over clusters |e| * NCP(e) (eq. 6-8, NCP summed over
the QIs). We divide utility by n·d, which turns it into the GCP of the clustering (eq. 15 / 100):
the order of stars is unchanged, and the privacy term keeps a meaning (a non-k-anonymous star can
never beat a k-anonymous one). Every star is repaired to k-anonymity, so privacy is 0 in practice.

The black hole (BH) is the best star. Eq. 10, ``X_i(t+1) = X_i(t) + rand·(X_BH - X_i(t))``, is not
arithmetic that means anything on cluster ids, so a star moves by this discrete analogue, a local
search step guided by the BH (``_exchange.exchange_worst``):

1. draw ``rand`` ~ U[0, 1] once per star and iteration (the scalar of eq. 10, the step length):
   X_BH - X_i is read as the star's clusters that are not also BH clusters (m of them), and its
   ceil(rand·m) worst (highest NCP) try to move toward the BH, worst first;
2. each record r of a tried cluster A looks at the star clusters holding r's BH-mates (the other
   records of r's BH cluster; up to MAX_CANDIDATES clusters, most mates first) and tries moving
   there: alone (relocation) or in exchange for one of their records (swap);
3. the best try is kept when it lowers the star's total IL, i.e. its fitness (exact incremental
   cost, O(d) per try); classes stay in [k, max_size] (kab: 2k-1, the paper's C_avg ≈ 1; bha: no
   limit). rand = 0 leaves the star as it was. A move stops early after ``Budget.patience``
   tried clusters in a row without a kept try (the rest of the star is settled against this BH;
   a bound on the work, not in the paper). The stars' moves of one iteration are independent (all toward the
   same BH) and run concurrently.

Event horizon (eq. 11): R = fitness(BH) / sum_i fitness(X_i), the sum over the N stars other than
the BH (eq. 10 moves i = 1..N, so the BH is not among them). The distance between a star and the BH
is the share of records outside their matched overlap (``match_clusters``: BH clusters paired
one-to-one with star clusters by decreasing overlap; 0 = same clustering up to renaming). A star
closer than R is swallowed: the BH takes it in (the move of step 2-3 with the roles reversed over
every BH cluster that is not also a cluster of the star, keeping only what lowers the BH's
fitness), and a new star replaces it. ``bha`` and ``kab`` with ``init := 'algorithm1'``: a new
star from the initializer (the paper). ``kab`` (default): a star *reborn* near the BH, the BH with
a share drawn in ``Budget.rebirth_share`` of its clusters re-clustered (``kab_stars.StarMaker.reborn``): a
deviation that costs that share of a star instead of a whole one (about 20 stars per run made
KAB slower than k-member) and that makes each swallow a large-neighbourhood step of the BH.

A star that reaches a better fitness than the BH becomes the BH (Fig. 3 step 4); the BH is thus the
best solution ever seen, and the result is never worse than the best initial star.

The run's ``info`` (kanon_runs.details) records the initial fitnesses and the best of them, the
final one, the number of star moves, how many of them improved their star, the record moves
kept, the swallowed stars and how many of those swallows improved the BH, and a trace: per move
(rand, clusters tried, relocations, swaps, fitness before and after), per star and iteration its
distance to the BH and the radius, per swallow the BH's fitness before and after, per
replacement the new star's fitness (and, for a reborn star, the share of the BH redone).

Randomness comes from one ``numpy.random.Generator`` seeded by the run's seed; kernels receive the
random draws as arrays, so a seed fixes the result.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import NamedTuple

import numba
import numpy as np

from ... import interrupt
from ..._numba_config import njit
from ...qidata import QIData
from ..base import Partition
from ...privacy._kernels import classes_ok
from ._closing import packed_of
from ._exchange import exchange_worst, rows_by_label
from ._ncp import build_ncp_data, partition_il

# candidate destination clusters per record in a move (star clusters of its black-hole mates)
MAX_CANDIDATES = 8
FINAL_SWALLOW = True


class Budget(NamedTuple):
    """How much work the search spends (bounds, not in the paper; kab.py chooses one per k).

    rebirth_share    share of the black hole's rows redone in a star reborn after a swallow
                     (uniform in this range)
    patience         a star's move stops after this many tried clusters in a row gave no
                     exchange (the rest is settled against this black hole)
    absorb_patience  the same for the black hole's move when it swallows a star (0: never)
    """
    rebirth_share: tuple = (0.05, 0.3)
    patience: int = 64
    absorb_patience: int = 0


BUDGET = Budget()
_ALL = np.zeros(0, dtype=np.bool_)  # ``among`` of exchange_worst: every cluster may be tried


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
    """Greedy one-to-one matching of BH clusters to star clusters by decreasing overlap (ties:
    smaller BH id, then smaller star id).

    Returns (mapping int64 (n_bh,): star id for each BH cluster, fresh ids n_star.. for unmatched
    ones; overlap: number of records in matched pairs). O(n + m log m), m = overlapping pairs.
    """
    n = bh.shape[0]
    rows, start = rows_by_label(bh, n_bh)
    cnt = np.zeros(n_star, dtype=np.int64)
    touched = np.empty(n_star, dtype=np.int64)
    pb = np.empty(n, dtype=np.int64)
    ps = np.empty(n, dtype=np.int64)
    pc = np.empty(n, dtype=np.int64)
    m = 0
    for b in range(n_bh):
        nt = 0
        for i in range(start[b], start[b + 1]):
            s = star[rows[i]]
            if cnt[s] == 0:
                touched[nt] = s
                nt += 1
            cnt[s] += 1
        part = touched[:nt]
        part.sort()
        for t in range(nt):
            s = part[t]
            pb[m] = b
            ps[m] = s
            pc[m] = cnt[s]
            cnt[s] = 0
            m += 1
    order = np.argsort(-pc[:m], kind="mergesort")  # pairs are in (b, s) order: stable ties
    mapping = np.full(n_bh, -1, dtype=np.int64)
    used = np.zeros(n_star, dtype=np.bool_)
    overlap = 0
    for t in range(m):
        q = order[t]
        b = pb[q]
        s = ps[q]
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


def fitness(ds, lab: np.ndarray, C: int, k: int, n_qi: int, models=None) -> float:
    """Eq. 4: (privacy + utility) / 2, utility = total IL / (n·d) (the clustering's GCP).
    privacy is 1 when a class is under k or (``models``: (P, scr_cols, M) of
    ``_closing.packed_of``) violates a privacy model, so such a star never beats one that holds."""
    sizes = np.bincount(lab, minlength=C)
    privacy = 0.0 if sizes.min() >= k else 1.0
    if models is not None and models[2] and not classes_ok(lab, C, models[0], models[1],
                                                                  np.zeros(0)).all():
        privacy = 1.0
    utility = partition_il(ds, lab, C) / (lab.shape[0] * max(n_qi, 1))
    return 0.5 * (privacy + utility)


class Stopped(Exception):
    """Raised inside a worker thread when the run was interrupted."""


def _in_parallel(jobs, progress_each, progress):
    """Run ``jobs`` (callables ``job(should_stop)``) on up to numba.get_num_threads() threads (the
    kernels release the GIL; each worker runs numba on one thread); results in job order.

    Ctrl-C, or an interruption of the run of ``progress`` (``kanon_duckdb.interrupt``), stops the
    workers at their next chunk boundary (jobs poll ``should_stop()`` and raise Stopped).
    """
    stop = threading.Event()

    def should_stop():
        return stop.is_set() or interrupt.requested(progress)

    workers = max(1, min(len(jobs), numba.get_num_threads()))

    def work(job):
        if stop.is_set():
            raise Stopped()
        if workers > 1:
            numba.set_num_threads(1)  # the jobs are the parallelism (thread-local setting)
        return job(should_stop)

    pool = ThreadPoolExecutor(max_workers=workers) if workers > 1 else None
    try:
        out = []
        if pool is None:
            for job in jobs:
                out.append(work(job))
                progress_each()
            return out
        for f in [pool.submit(work, job) for job in jobs]:
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


def distance(a, ca, b, cb) -> float:
    """Share of records outside the matched overlap of two clusterings (0 = same up to renaming)."""
    _, overlap = match_clusters(a, ca, b, cb)
    return 1.0 - overlap / a.shape[0]


@njit
def differing_clusters(a, ca, b, cb):
    """Clusters of ``a`` (labels 0..ca-1) that are not also a cluster of ``b`` (same records),
    as a bool mask (ca,). O(n)."""
    n = a.shape[0]
    lab = np.full(ca, -1, dtype=np.int64)
    size_b = np.zeros(cb, dtype=np.int64)
    size_a = np.zeros(ca, dtype=np.int64)
    out = np.zeros(ca, dtype=np.bool_)
    for i in range(n):
        size_b[b[i]] += 1
        size_a[a[i]] += 1
        if lab[a[i]] < 0:
            lab[a[i]] = b[i]
        elif lab[a[i]] != b[i]:
            out[a[i]] = True
    for c in range(ca):
        if lab[c] >= 0 and size_b[lab[c]] != size_a[c]:
            out[c] = True
    return out


def black_hole_search(ds, n, d, k, rng, init_star, n_stars, iterations, max_size, progress,
                      models=None, reborn=None, budget=BUDGET):
    """Run the black-hole search; returns (best labels, info dict).

    init_star(rng, should_stop) -> int64 labels of a new k-anonymous star (the initial stars, and
    the replacements of swallowed ones when ``reborn`` is None); it should poll ``should_stop()``
    between chunks of work and raise :class:`Stopped` when it returns True.
    reborn(bh, n_bh, share, rng) -> int64 labels: the replacement of a swallowed star, a star
    born near the black hole ``bh`` with about ``share`` (drawn in ``budget.rebirth_share``) of
    it redone. budget: :class:`Budget`.
    max_size: the largest class a move may create (kab 2k-1, bha n). models: (P, scr_cols, M) of
    ``_closing.packed_of``: a star with a class violating a privacy model loses to every star
    without one (fitness).
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

    def fit(s):
        return fitness(ds, stars[s], counts[s], k, d, models)

    def new_star(sd):
        return lambda ss: dense_labels(init_star(np.random.default_rng(sd), ss))

    def absorb(s):
        """The black hole moves toward star s (every BH cluster that is not also one of s);
        kept only when its fitness does not rise (exchanges lower the IL but do not check the
        privacy models). Returns (fitness before, records moved)."""
        before, saved = fits[bh], stars[bh].copy()
        rel, sw, _ = move(bh, s, 1.0, differing_clusters(stars[bh], counts[bh], stars[s],
                                                          counts[s]), budget.absorb_patience)(None)
        if rel + sw == 0:  # nothing moved: the fitness is the same
            return before, 0
        fits[bh] = fit(bh)
        if fits[bh] > before:
            stars[bh], fits[bh] = saved, before
            return before, 0
        return before, int(rel + sw)

    def reborn_star(sd, share):
        hole, n_hole = stars[bh].copy(), counts[bh]
        return lambda _ss: dense_labels(reborn(hole, n_hole, share, np.random.default_rng(sd)))

    def move(s, guide, share, among=_ALL, patience=0):
        return lambda _ss: exchange_worst(ds, stars[s], counts[s], stars[guide], counts[guide],
                                          float(share), among, int(k), int(max_size),
                                          MAX_CANDIDATES, patience)

    made = _in_parallel([new_star(sd) for sd in seeds(n_stars)], tick, progress)
    stars = [lab for lab, _ in made]
    counts = [C for _, C in made]
    fits = [fit(s) for s in range(n_stars)]
    initial_fits = list(fits)
    bh = int(np.argmin(fits))
    n_swallowed = n_bh_changes = n_moves = n_improved = n_record_moves = n_absorbed = 0
    history = [float(fits[bh])]
    trace = []
    for it in range(iterations):
        # eq. 10: every star moves toward the black hole (independent moves, run concurrently)
        movers = [s for s in range(n_stars) if s != bh]
        rands = [float(rng.random()) for _ in movers]
        before = [fits[s] for s in movers]
        moved = _in_parallel([move(s, bh, r, differing_clusters(stars[s], counts[s], stars[bh],
                                                                counts[bh]), budget.patience)
                              for s, r in zip(movers, rands)], tick, progress)
        for s, rand, b, (rel, sw, tried) in zip(movers, rands, before, moved):
            if rel + sw:  # else nothing moved: the fitness is the same
                fits[s] = fit(s)
            n_moves += 1
            n_record_moves += int(rel + sw)
            n_improved += int(fits[s] < b)
            trace.append({"iteration": it, "star": s, "rand": round(rand, 4),
                          "clusters_tried": int(tried), "relocations": int(rel),
                          "swaps": int(sw), "fitness_before": float(b),
                          "fitness_after": float(fits[s])})
            if fits[s] < fits[bh]:  # the star becomes the black hole (and vice versa)
                bh = s
                n_bh_changes += 1
        # event horizon, eq. 11: R = fitness(BH) / sum of the other stars' fitness
        others = [fits[s] for s in range(n_stars) if s != bh]
        radius = fits[bh] / float(sum(others)) if others and sum(others) > 0 else 0.0
        swallowed = []
        for s in range(n_stars):
            if s == bh:
                continue
            dist = distance(stars[bh], counts[bh], stars[s], counts[s])
            trace.append({"iteration": it, "star": s, "distance": round(dist, 4),
                          "radius": round(radius, 4)})
            if dist < radius:
                swallowed.append((s, dist))
        for s, dist in swallowed:
            # the black hole swallows the star: it takes in what of the star lowers its fitness
            bh_before, moved_records = absorb(s)
            n_absorbed += int(fits[bh] < bh_before)
            trace.append({"iteration": it, "star": s, "swallowed": True,
                          "black_hole_before": float(bh_before),
                          "black_hole_after": float(fits[bh]), "absorbed_moves": moved_records})
        if swallowed:
            sds = seeds(len(swallowed))
            if reborn is None:
                shares = [None] * len(swallowed)
                jobs = [new_star(sd) for sd in sds]
            else:
                shares = [float(rng.uniform(*budget.rebirth_share)) for _ in swallowed]
                jobs = [reborn_star(sd, sh) for sd, sh in zip(sds, shares)]
            fresh = _in_parallel(jobs, lambda: None, progress)
            for (s, _), (lab, C), share in zip(swallowed, fresh, shares):
                stars[s], counts[s] = lab, C
                fits[s] = fit(s)
                n_swallowed += 1
                event = {"iteration": it, "star": s, "replaced": True,
                         "new_fitness": float(fits[s])}
                if share is not None:
                    event["reborn_share"] = round(share, 4)
                trace.append(event)
            for s, _ in swallowed:
                if fits[s] < fits[bh]:
                    bh = s
                    n_bh_changes += 1
        history.append(float(fits[bh]))
    if FINAL_SWALLOW and iterations > 0:
        # the end: the black hole takes in what of every remaining star lowers its fitness
        for s in range(n_stars):
            if s == bh:
                continue
            bh_before, moved_records = absorb(s)
            trace.append({"iteration": iterations, "star": s, "final_swallow": True,
                          "black_hole_before": float(bh_before),
                          "black_hole_after": float(fits[bh]), "absorbed_moves": moved_records})
        history[-1] = float(fits[bh])
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
        "record_moves": n_record_moves,
        "black_hole_changes": n_bh_changes,
        "swallowed": n_swallowed,
        "swallows_improving_black_hole": n_absorbed,
        "trace": trace,
    }
    return stars[bh], info


def run_black_hole(data: QIData, k: int, seed: int, params: dict, progress, make_stars,
                   max_size: int, initializer: str, budget: Budget = BUDGET) -> Partition:
    """The ``run`` of kab and bha: black_hole_search over the stars of
    ``make_stars(data, ds, k) -> (init_star, reborn)`` (``black_hole_search``'s arguments) with
    ``budget``; ``initializer`` is recorded in the info."""
    ds = build_ncp_data(data)
    n, d = data.n, data.dn + data.dc
    rng = np.random.default_rng(seed)
    init_star, reborn = make_stars(data, ds, k)
    lab, info = black_hole_search(ds, n, d, k, rng, init_star, params["stars"],
                                  params["iterations"], max_size, progress, packed_of(data),
                                  reborn, budget)
    info["initializer"] = initializer
    return Partition(ec=lab.astype(np.int64), info=info)
