"""LCA kernels over a taxonomy's index arrays (see tree.py for the array layout).

Kept apart from tree.py so that building and validating trees does not import numba.
"""
from __future__ import annotations

import numpy as np

from .._numba_config import njit


@njit
def lca_of_range(leaf_node, parent, leaf_hi, lo_leaf, hi_leaf):
    """Node id of the lowest node covering leaf ordinals lo_leaf..hi_leaf (lo <= hi)."""
    u = leaf_node[lo_leaf]
    while leaf_hi[u] < hi_leaf:
        u = parent[u]
    return u


@njit
def lca_packed(leaf_node, leaf_off, parent, leaf_hi, node_off, j, lo_leaf, hi_leaf):
    """``lca_of_range`` in tree j of packed arrays (qidata.PackedTrees): local node id."""
    no = node_off[j]
    u = leaf_node[leaf_off[j] + lo_leaf]
    while leaf_hi[no + u] < hi_leaf:
        u = parent[no + u]
    return u


@njit
def lca_nodes(cmin, cmax, leaf_node, leaf_off, parent, leaf_hi, node_off):
    """LCA node per row and tree: cmin/cmax int (C, dc) smallest/largest leaf ordinal of each
    group in tree j (packed arrays, see qidata.pack_trees); returns int32 (C, dc).
    O(C·dc·height)."""
    n_rows, dc = cmin.shape
    nodes = np.empty((n_rows, dc), dtype=np.int32)
    for j in range(dc):
        no = node_off[j]
        lf = leaf_node[leaf_off[j]:leaf_off[j + 1]]
        par = parent[no:node_off[j + 1]]
        lh = leaf_hi[no:node_off[j + 1]]
        for c in range(n_rows):
            nodes[c, j] = lca_of_range(lf, par, lh, cmin[c, j], cmax[c, j])
    return nodes
