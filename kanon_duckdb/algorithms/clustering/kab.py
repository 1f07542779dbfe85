"""KAB: k-anonymity by the black-hole algorithm (Kacha, Zitouni, Djoudi 2021).

``algo := 'kab'``, parameters ``stars`` (default 3) and ``iterations`` (default 10), the paper's
setting (§4.2).

- Initial stars: the NCP-based clustering of Fig. 2 (Algorithm 1, see ``kab_kernels``), each from
  a different random start: floor(n/k) clusters, each a random unassigned record plus its k-1
  nearest unassigned records by the NCP record distance (eq. 1-3); leftovers to the nearest seed.
- Search: ``_blackhole.black_hole_search`` (fitness eq. 4-8, black hole = best star, the discrete
  form of the eq.-10 move: the star's worst clusters send their records to the clusters matched to
  their black-hole clusters, a try kept only when it lowers the fitness, repaired locally; event
  horizon eq. 11, swallowed stars replaced by new Algorithm-1 clusterings). Moves never create a
  class above 2k-1 records, so sizes stay between k and 2k-1 as in the paper's C_avg ≈ 1.
- Result: the black hole, i.e. the best star ever seen; its loss is never above the best initial
  star's. ``Partition.info`` records the initial and final fitness (fitness = GCP / 2 for a
  k-anonymous star), moves that improved a star, swallowed stars and a per-move trace.

Deterministic for a seed: all random draws come from ``numpy.random.default_rng(seed)``.
Cost: each star is O(n²/k · d) (Algorithm 1); a move is O(n log n + n d).
"""
from __future__ import annotations

import numpy as np

from ...params import declared
from ..base import Algorithm, Partition, no_progress
from ...qidata import QIData
from ._blackhole import Stopped, run_black_hole
from .kab_kernels import assign_leftovers, ncp_clustering_chunk

# clusters formed per kernel call while building a star (progress / Ctrl-C granularity)
_CHUNK_WORK = 20_000_000  # ~ pool records scanned per call


def ncp_clustering(ds, n: int, k: int, rng: np.random.Generator, progress=no_progress,
                   should_stop=None) -> np.ndarray:
    """Algorithm 1 of the KAB paper on all n records; returns int64 labels (n,).

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
    while not ncp_clustering_chunk(ds, pool, where, state, order, int(k), N, per_call, labels,
                                   seeds, buf):
        progress(state[2] / N)
        if should_stop is not None and should_stop():
            raise Stopped()
    assign_leftovers(ds, pool, int(state[0]), seeds, N, labels)
    progress(1.0)
    return labels


def _init_star(ds, n, k, rng, should_stop):
    return ncp_clustering(ds, n, k, rng, should_stop=should_stop)


def run(data: QIData, k: int, seed: int, params: dict, progress=no_progress) -> Partition:
    return run_black_hole(data, k, seed, params, progress, _init_star, 2 * k - 1,
                          "NCP clustering (Algorithm 1)")


ENTRY = Algorithm("kab", run, "local", declared("kab"),
              "black-hole search over NCP clusterings (Kacha et al. 2021)")
ALGORITHMS = [ENTRY]
