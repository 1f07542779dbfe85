"""KAB: k-anonymity by the black-hole algorithm (Kacha, Zitouni, Djoudi 2021).

``algo := 'kab'``, parameters ``stars`` (default 3) and ``iterations`` (default 10), the paper's
setting (§4.2), and ``init``.

- Initial stars (``init := 'kmember'``, default): k-member clustering with random seeds (the
  seeding of Wang, Liu, Gao's Table III; NCP cost) inside the Mondrian blocks of a block size drawn
  per star from ``kab_stars.BLOCK_SIZES`` (500-1000 rows), one numba call per star
  (``kab_stars.StarMaker``). A deviation: the paper builds stars with its Algorithm 1 (Fig. 2) on
  the whole table, O(n²/k) per star, which made three stars cost more than one k-member run and
  start 10-20 % worse. Blocks make a star O(n · block_rows / k) and, with the random block size and
  seeds, different from the others. A swallowed star is replaced by a star reborn near the black
  hole (``_blackhole``; the share redone is drawn in ``Budget.rebirth_share``).
- From ``LARGE_K`` (30) on, a further deviation: the stars' k-member uses Byun's height IL
  (``star_cost``; the fitness stays eq. 2's NCP) and the search runs on ``LARGE_K_BUDGET``
  (reborn share 5-15 %, patience 16, the black hole's swallow move stops after 32 idle clusters).
  On Adult at k = 30 / 40, NCP stars inside Mondrian blocks mix categories whose leaf-count cost
  is low and whose height cost is high: the search ended 1.2 % above k-member's GenTotal-IL at
  k = 40. Height stars end below k-member on GCP and GenTotal-IL with a margin (k = 40: 14.95 /
  15.78 % against 15.59 / 16.84 %), which pays for the smaller budget. Below k = 30 they lose on
  GCP (k = 20: 10.96 % against 10.77 %), so NCP stars stay there. ``info['star_cost']``.
  From ``MID_K`` (20) to LARGE_K the budget keeps the 5-30 % reborn share but stops moves and
  swallows after 16 / 32 idle clusters (``budget``): 9 % less CPU at k = 20, GCP / GenTotal-IL
  10.51 / 11.76 % against 10.52 / 11.77 % (seed 0; seeds 1-2: +0.2 % GCP). Below 20 it costs
  GenTotal-IL (k = 10: 7.92 % against k-member's 7.79 %), so the full budget stays there.
- ``init := 'algorithm1'``: the paper's Fig. 2 literally (``ncp_clustering``, ``kab_kernels``):
  floor(n/k) clusters, each a random unassigned record plus its k-1 nearest unassigned records
  by the NCP record distance (eq. 1-3); leftovers to the nearest seed.
- Search: ``_blackhole.black_hole_search`` (fitness eq. 4-8, black hole = best star, the discrete
  eq.-10 move by record exchanges toward the black hole's clusters, event horizon eq. 11, a
  swallowed star taken in by the black hole and replaced by a reborn star; with
  ``init := 'algorithm1'`` by a new Algorithm-1 star, as in the paper).
  Moves never create a class above 2k-1 records, so sizes stay between k and 2k-1 as in the
  paper's C_avg ≈ 1.
- Result: the black hole, i.e. the best star ever seen; its loss is never above the best initial
  star's. ``Partition.info`` records the initial and final fitness (fitness = GCP / 2 for a
  k-anonymous star), moves that improved a star, swallowed stars and a trace.

Deterministic for a seed: all random draws come from ``numpy.random.default_rng(seed)``.
Cost: a k-member star O(n · block_rows / k · d), a reborn star that times its share, an
Algorithm-1 star O(n²/k · d); a move O(n d + tried records · d · candidate sizes).
"""
from __future__ import annotations

import numpy as np

from ...params import declared
from ...privacy.spec import no_models
from ...qidata import QIData
from ..base import Algorithm, Partition, no_progress
from ._blackhole import BUDGET, Budget, Stopped, run_black_hole
from ._closing import packed_of
from ._ncp import build_ncp_data
from .kab_kernels import assign_leftovers, ncp_clustering_chunk
from .kab_stars import StarMaker

# clusters formed per kernel call while building a star (progress / Ctrl-C granularity)
_CHUNK_WORK = 20_000_000  # ~ pool records scanned per call


def ncp_clustering(ds, n: int, k: int, rng: np.random.Generator, progress=no_progress,
                   should_stop=None, models=None) -> np.ndarray:
    """Algorithm 1 of the KAB paper on all n records; returns int64 labels (n,).

    ``models``: (P, scr_cols, M) of ``_closing.packed_of`` (privacy models closed in the loop);
    None: k alone.

    Works in chunks of clusters; between chunks it reports ``progress`` and raises
    ``_blackhole.Stopped`` if ``should_stop()`` is true.
    """
    N = max(n // k, 1)
    order = rng.permutation(n).astype(np.int64)
    pool = np.arange(n, dtype=np.int64)
    where = np.arange(n, dtype=np.int64)
    state = np.array([n, 0, 0], dtype=np.int64)
    labels = np.full(n, -1, dtype=np.int64)
    seeds = np.empty(N, dtype=np.int64)
    buf = np.empty(n)
    per_call = max(1, _CHUNK_WORK // max(n, 1))
    P, scr_cols, M = models if models is not None else (no_models(n).packed(), 1, 0)
    h = np.zeros(M + 1)
    scr = np.empty((4, scr_cols))
    dv = np.zeros(M + 1)
    while not ncp_clustering_chunk(ds, pool, where, state, order, int(k), N, per_call, labels,
                                   seeds, buf, P, h, scr, dv):
        progress(state[2] / N)
        if should_stop is not None and should_stop():
            raise Stopped()
    assign_leftovers(ds, pool, int(state[0]), seeds, int(state[2]), labels, P, scr_cols)
    progress(1.0)
    return labels


# from this k on, kab's k-member stars use the height cost and the search the LARGE_K budget
LARGE_K = 30
LARGE_K_BUDGET = Budget(rebirth_share=(0.05, 0.15), patience=16, absorb_patience=32)
# from this k on (below LARGE_K), moves and swallows stop sooner on idle clusters
MID_K = 20
MID_K_BUDGET = Budget(rebirth_share=BUDGET.rebirth_share, patience=16, absorb_patience=32)


def budget(k: int) -> Budget:
    """The search budget of a kab run with k-member stars (measured on Adult, docs/papers.md)."""
    return LARGE_K_BUDGET if k >= LARGE_K else MID_K_BUDGET if k >= MID_K else BUDGET


def star_cost(k: int) -> str:
    """The k-member cost of kab's stars (``init := 'kmember'``): Byun's height IL from LARGE_K
    on, the NCP of eq. 2 below (the fitness is eq. 2's NCP either way)."""
    return "height" if k >= LARGE_K else "ncp"


def _stars(init: str):
    """``make_stars`` of ``_blackhole.run_black_hole`` for ``init``."""
    def make(data, ds, k):
        if init == "algorithm1":  # the paper: every star, replacements too, from Algorithm 1
            return (lambda rng, should_stop: ncp_clustering(
                ds, data.n, k, rng, should_stop=should_stop, models=packed_of(data)), None)
        cost = star_cost(k)
        maker = StarMaker(data, ds if cost == "ncp" else build_ncp_data(data, cost=cost), k)

        def fresh(rng, should_stop):
            if should_stop():
                raise Stopped()
            return maker.fresh(rng)
        return fresh, maker.reborn
    return make


INITIALIZERS = {"kmember": "k-member (random seeds) in Mondrian blocks",
                "algorithm1": "NCP clustering (Algorithm 1)"}


def run(data: QIData, k: int, seed: int, params: dict, progress=no_progress) -> Partition:
    init = params.get("init", "kmember")
    part = run_black_hole(data, k, seed, params, progress, _stars(init), 2 * k - 1,
                          INITIALIZERS[init], budget(k) if init == "kmember" else BUDGET)
    if init == "kmember":
        part.info["star_cost"] = star_cost(k)
    return part


ENTRY = Algorithm("kab", run, "local", declared("kab"),
              "black-hole search over NCP clusterings (Kacha et al. 2021)")
ALGORITHMS = [ENTRY]
