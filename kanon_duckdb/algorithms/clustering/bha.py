"""BHA: the black-hole k-anonymization baseline of Kacha et al. 2021 (§4, "BHA-based k-anonymity").

``algo := 'bha'``, parameters ``stars`` (default 3) and ``iterations`` (default 10).

The same search as ``kab`` (``_blackhole.black_hole_search``) but from random k-anonymous
clusterings and without any clustering heuristic: the paper only says records are placed randomly
and the number of clusters is random. A random star here draws C uniformly in [1, floor(n/k)],
shuffles the records, gives each cluster k of them and spreads the remaining n - C·k over
uniformly random clusters. The move (shared with kab) has no class-size limit here, so class
sizes vary as the paper reports (C_avg > 1). Expect high loss: this is the baseline KAB improves on.

Deterministic for a seed.
"""
from __future__ import annotations

import numpy as np

from ...params import declared
from ..base import Algorithm, Partition, no_progress
from ...qidata import QIData
from ._blackhole import run_black_hole


def random_clustering(n: int, k: int, rng: np.random.Generator) -> np.ndarray:
    """A random k-anonymous clustering with a random number of clusters; int64 labels (n,)."""
    cmax = max(n // k, 1)
    C = int(rng.integers(1, cmax + 1))
    perm = rng.permutation(n)
    lab = np.empty(n, dtype=np.int64)
    lab[perm[:C * k]] = np.repeat(np.arange(C, dtype=np.int64), k)
    rest = perm[C * k:]
    lab[rest] = rng.integers(0, C, size=rest.shape[0])
    return lab


def _stars(data, _ds, k):
    return (lambda rng, _should_stop: random_clustering(data.n, k, rng)), None


def run(data: QIData, k: int, seed: int, params: dict, progress=no_progress) -> Partition:
    return run_black_hole(data, k, seed, params, progress, _stars, data.n,
                          "random clustering (random number of clusters)")


ENTRY = Algorithm("bha", run, "local", declared("bha"),
              "black-hole search over random clusterings (BHA baseline, Kacha et al. 2021)")
ALGORITHMS = [ENTRY]
