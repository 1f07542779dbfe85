"""Strict multidimensional Mondrian (LeFevre et al. 2006).

Choose the dimension with the widest normalized range (numeric: span / global range; categorical:
leaves of the LCA / leaves of the root); numeric dimensions are cut at the median ('<= m', or
'< m' when that is the allowable or more balanced one); categorical dimensions are cut along the
taxonomy, between two children of the segment's LCA, at the most balanced allowable boundary (so
each side's LCA can only shrink). If the widest dimension has no allowable cut, the next widest is
tried; a segment with no allowable cut on any dimension is a final class (strict Mondrian).
Categorical classes are published as the LCA of their leaves. ``leaf_order_fallback=True`` adds a
median cut in depth-first leaf order when no tree cut is allowable.
"""
from __future__ import annotations

import numpy as np

from ..base import Algorithm, Partition, QIData, no_progress
from ._kernels import mondrian_partition

LEAF_ORDER_FALLBACK = False  # measured on Adult: tree-only cuts give lower GCP at 4 of 5 k values


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


def partition_rows(data: QIData, k: int, leaf_order_fallback: bool = LEAF_ORDER_FALLBACK) -> np.ndarray:
    """Class id per row (int64 (n,)) of strict Mondrian on all QIs of ``data``."""
    X, scale, tree_of = stack_dimensions(data)
    leaf_node, leaf_off, parent, leaf_hi, n_leaves, node_off, _sub, _leaf_lo = data.cat_arrays()
    return mondrian_partition(X, int(k), scale, tree_of, leaf_node, leaf_off, parent, leaf_hi,
                              n_leaves, node_off, bool(leaf_order_fallback))


def run(data: QIData, k: int, seed: int, params: dict, progress=no_progress) -> Partition:
    ec = partition_rows(data, k)
    progress(1.0)
    return Partition(ec=ec)


ALGORITHMS = [Algorithm("mondrian", run, "local", {},
                        "strict multidimensional Mondrian (LeFevre et al. 2006)")]
