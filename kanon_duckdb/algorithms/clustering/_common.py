"""Python orchestration shared by the clustering algorithms (kernels live in ``_ncp``)."""
from __future__ import annotations

import numpy as np

from ..base import Partition, no_progress
from ...qidata import QIData


def trivial_labels(n: int, k: int, progress, min_clusters: int = 0):
    """Labels that need no clustering, or None: every row its own class when k <= 1, one class of
    all rows when fewer than ``min_clusters`` clusters of k rows fit (n // k < min_clusters).
    Reports progress 1.0 when it answers."""
    if k <= 1:
        progress(1.0)
        return np.arange(n, dtype=np.int64)
    if n // k < min_clusters:
        progress(1.0)
        return np.zeros(n, dtype=np.int64)
    return None


def run_from_labels(labels_fn):
    """An ``Algorithm.run`` for ``labels_fn(data, k, seed, progress, info=dict) -> ec``: the
    partition of those labels, with the filled ``info`` as its details."""
    def run(data: QIData, k: int, seed: int, params: dict, progress=no_progress) -> Partition:
        info = {}
        ec = labels_fn(data, k, seed, progress, info=info)
        return Partition(ec=ec, info=info)
    return run
