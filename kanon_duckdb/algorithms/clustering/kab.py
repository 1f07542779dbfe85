"""KAB: k-anonymity by the black-hole algorithm (Kacha, Zitouni, Djoudi 2021).

``algo := 'kab'``, parameters ``stars`` (default 3) and ``iterations`` (default 10), the paper's
setting (§4.2), and ``init``.

- Initial stars (``init := 'kmember'``, default): k-member clustering with random seeds (the
  seeding of Wang, Liu, Gao's Table III; NCP cost) inside Mondrian blocks of a random size in
  [STAR_BLOCK_ROWS, 2·STAR_BLOCK_ROWS] rows, one draw per star (``kmember_star``). A deviation:
  the paper builds stars with its Algorithm 1 (Fig. 2) on the whole table, O(n²/k) per star,
  which made three stars cost more than one k-member run and start 10-20 % worse. Blocks make a
  star O(n · block_rows / k) and, with the random block size and seeds, different from the others.
- ``init := 'algorithm1'``: the paper's Fig. 2 literally (``ncp_clustering``, ``kab_kernels``):
  floor(n/k) clusters, each a random unassigned record plus its k-1 nearest unassigned records
  by the NCP record distance (eq. 1-3); leftovers to the nearest seed.
- Search: ``_blackhole.black_hole_search`` (fitness eq. 4-8, black hole = best star, the discrete
  eq.-10 move by record exchanges toward the black hole's clusters, event horizon eq. 11, a
  swallowed star taken in by the black hole and replaced by a new star from the initializer).
  Moves never create a class above 2k-1 records, so sizes stay between k and 2k-1 as in the
  paper's C_avg ≈ 1.
- Result: the black hole, i.e. the best star ever seen; its loss is never above the best initial
  star's. ``Partition.info`` records the initial and final fitness (fitness = GCP / 2 for a
  k-anonymous star), moves that improved a star, swallowed stars and a trace.

Deterministic for a seed: all random draws come from ``numpy.random.default_rng(seed)``.
Cost: a k-member star O(n · block_rows / k · d), an Algorithm-1 star O(n²/k · d); a move
O(n d + tried records · d · candidate sizes).
"""
from __future__ import annotations

import numpy as np

from ...params import declared
from ...privacy.spec import no_models
from ...qidata import QIData
from ..base import Algorithm, Partition, no_progress
from ..blocks import split_blocks
from ._blackhole import Stopped, run_black_hole
from ._closing import packed_of
from .kab_kernels import assign_leftovers, ncp_clustering_chunk
from .kmember import cluster_rows

# clusters formed per kernel call while building a star (progress / Ctrl-C granularity)
_CHUNK_WORK = 20_000_000  # ~ pool records scanned per call
# rows per Mondrian block of an initial k-member star (each star draws a size in [this, 2·this])
STAR_BLOCK_ROWS = 500


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


def kmember_star(data: QIData, ds, k: int, rng: np.random.Generator,
                 should_stop=None) -> np.ndarray:
    """An initial star: k-member clustering (random seeds; Wang, Liu, Gao's Table III seeding) of
    the NCP bundle ``ds`` inside Mondrian blocks of a random size in
    [STAR_BLOCK_ROWS, 2·STAR_BLOCK_ROWS] rows (``blocks.split_blocks``; one block when n is at
    most 4·STAR_BLOCK_ROWS); int64 labels (n,).

    Cost O(n · block_rows / k · d) instead of k-member's O(n² / k · d); the random block size and
    k-member's random seeds make the stars differ. Polls ``should_stop`` between blocks.
    """
    n = data.n
    if k <= 1:
        return np.arange(n, dtype=np.int64)
    models = packed_of(data)  # privacy models: k-member closes its clusters under them
    block_rows = int(rng.integers(STAR_BLOCK_ROWS, 2 * STAR_BLOCK_ROWS + 1))
    if n > 4 * STAR_BLOCK_ROWS:
        parts = split_blocks(data, k, block_rows)
    else:  # small tables (and partition-then-cluster blocks): k-member on all rows, no Mondrian
        parts = [np.arange(n, dtype=np.int64)]
    labels = np.empty(n, dtype=np.int64)
    offset = 0
    for rows in parts:
        if should_stop is not None and should_stop():
            raise Stopped()
        if rows.size < 2 * k:  # one class
            labels[rows] = offset
            offset += 1
            continue
        C = cluster_rows(ds, rows, k, rng, labels, "random", models=models)
        labels[rows] += offset
        offset += C
    return labels


def _init_star(init: str):
    if init == "algorithm1":
        return lambda data, ds, k, rng, should_stop: ncp_clustering(
            ds, data.n, k, rng, should_stop=should_stop, models=packed_of(data))
    return lambda data, ds, k, rng, should_stop: kmember_star(data, ds, k, rng, should_stop)


INITIALIZERS = {"kmember": "k-member (random seeds) in Mondrian blocks",
                "algorithm1": "NCP clustering (Algorithm 1)"}


def run(data: QIData, k: int, seed: int, params: dict, progress=no_progress) -> Partition:
    init = params.get("init", "kmember")
    return run_black_hole(data, k, seed, params, progress, _init_star(init), 2 * k - 1,
                          INITIALIZERS[init])


ENTRY = Algorithm("kab", run, "local", declared("kab"),
              "black-hole search over NCP clusterings (Kacha et al. 2021)")
ALGORITHMS = [ENTRY]
