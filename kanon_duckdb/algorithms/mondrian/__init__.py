"""Strict multidimensional Mondrian (LeFevre et al. 2006).

Choose the dimension with the widest normalized range (numeric: span / global range; categorical:
leaves of the LCA / leaves of the root), cut at the median (or next to it, or at the boundary of
the taxonomy subtree that holds the median, whichever is allowable and most balanced), recurse
while both halves keep at least k rows. Categorical values are ordered by the depth-first leaf
order of their taxonomy and generalized afterwards to the LCA of the class.
"""
from __future__ import annotations

import numpy as np

from ..base import Algorithm, Partition, QIData, no_progress
from ._kernels import mondrian_partition


def stack_dimensions(data: QIData):
    """(W (n, d) float64 row-major, scale (d,), tree_of (d,)) for the kernels: numeric QIs first."""
    d = data.dn + data.dc
    X = np.empty((data.n, d), dtype=np.float64)
    X[:, :data.dn] = data.num
    X[:, data.dn:] = data.cat
    scale = np.ones(d)
    scale[:data.dn] = data.num_range
    tree_of = np.full(d, -1, dtype=np.int64)
    tree_of[data.dn:] = np.arange(data.dc)
    return X, scale, tree_of


def partition_rows(data: QIData, k: int) -> np.ndarray:
    """Class id per row (int64 (n,)) of strict Mondrian on all QIs of ``data``."""
    X, scale, tree_of = stack_dimensions(data)
    leaf_node, leaf_off, parent, leaf_hi, n_leaves, node_off, _sub, leaf_lo = data.cat_arrays()
    return mondrian_partition(X, int(k), scale, tree_of, leaf_node, leaf_off, parent, leaf_hi,
                              leaf_lo, n_leaves, node_off)


def run(data: QIData, k: int, seed: int, params: dict, progress=no_progress) -> Partition:
    ec = partition_rows(data, k)
    progress(1.0)
    return Partition(ec=ec)


ALGORITHMS = [Algorithm("mondrian", run, "local", {},
                        "strict multidimensional Mondrian (LeFevre et al. 2006)")]
