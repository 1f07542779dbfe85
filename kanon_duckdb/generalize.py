"""From a partition to published values: per-class ranges, LCA nodes and labels.

Shared by every algorithm. ``class_stats.class_stats`` is one O(n·d) pass: numeric min/max (NaN
here when the class holds a NULL, per the NULL policy), and for categorical QIs the smallest and
largest leaf ordinal, whose LCA is the LCA of the whole class (leaves are in depth-first order).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from ._numba_config import njit
from .algorithms.base import Partition
from .qidata import QIData
from .class_stats import class_stats
from .ncp import SUPPRESSED_NCP
from .taxonomy._lca import lca_nodes


@njit
def _class_stats(ec, n_classes, num, num_null, cat, leaf_node, leaf_off, parent, leaf_hi, node_off):
    """class_stats, with NaN ranges for classes holding a NULL and the LCA node per class."""
    size, lo, hi, anynull, cmin, cmax = class_stats(ec, n_classes, num, num_null, cat)
    for c in range(n_classes):
        for j in range(num.shape[1]):
            if anynull[c, j]:
                lo[c, j] = np.nan
                hi[c, j] = np.nan
    nodes = lca_nodes(cmin, cmax, leaf_node, leaf_off, parent, leaf_hi, node_off)
    return size, lo, hi, nodes


@dataclass(frozen=True)
class Generalized:
    """Per-class published values. size (C,), lo/hi (C, dn) (NaN = NULL range), nodes (C, dc)."""
    ec: np.ndarray
    n_classes: int
    size: np.ndarray
    lo: np.ndarray
    hi: np.ndarray
    nodes: np.ndarray
    suppressed: np.ndarray | None


def dense_labels(labels: np.ndarray):
    """(sorted distinct labels, each row's index among them), like ``np.unique(...,
    return_inverse=True)`` but O(n + max label) by counting when labels are small non-negative
    integers (every algorithm numbers its classes 0..C-1), instead of an O(n log n) sort. When
    the labels are 0..C-1 already the indices are ``labels`` themselves (int64: not a copy)."""
    labels = np.asarray(labels).reshape(-1)
    if labels.size and labels.dtype.kind in "iu" and labels.min() >= 0 \
            and labels.max() < 2 * labels.size + 1024:
        present = np.zeros(int(labels.max()) + 1, dtype=bool)
        present[labels] = True
        if present.all():  # dense already (every algorithm's own numbering): no gather, no copy
            return np.arange(present.size), labels.astype(np.int64, copy=False)
        rank = np.cumsum(present, dtype=np.int64) - 1
        return np.flatnonzero(present), rank[labels]
    uniq, inv = np.unique(labels, return_inverse=True)
    return uniq, inv.astype(np.int64).reshape(-1)


def generalize(data: QIData, part: Partition) -> Generalized:
    """Renumber classes densely and compute their published ranges and nodes."""
    uniq, ec = dense_labels(part.ec)
    C = int(uniq.size)
    if part.cat_nodes is not None and part.num_lo is not None:  # the algorithm fixed them all
        size = np.bincount(ec, minlength=C).astype(np.int64)
    else:
        leaf_node, leaf_off, parent, leaf_hi, _nl, node_off, _sh, _ll = data.cat_arrays()
        size, lo, hi, nodes = _class_stats(ec, C, data.num, data.num_null, data.cat, leaf_node,
                                           leaf_off, parent, leaf_hi, node_off)
    if data.counts is not None:  # a histogram: a class's size is its tuples' row counts
        size = np.bincount(ec, weights=data.counts, minlength=C).astype(np.int64)
    dense = uniq.size == 0 or uniq[-1] == uniq.size - 1  # uniq is 0..C-1

    def at(v):  # per class of the partition's numbering -> per class of ec (kept when dense)
        return np.ascontiguousarray(v) if dense and v.shape[0] == C else v[uniq]

    if part.cat_nodes is not None:
        nodes = at(np.asarray(part.cat_nodes, dtype=np.int32))
    if part.num_lo is not None:
        lo = at(np.asarray(part.num_lo, dtype=np.float64))
        hi = at(np.asarray(part.num_hi, dtype=np.float64))
    return Generalized(ec, C, size, lo, hi, nodes, part.suppressed)


def per_qi_loss(data: QIData, g: Generalized) -> np.ndarray:
    """Mean NCP (kanon_duckdb.ncp) of each QI over rows (numeric first, then categorical), in
    [0, 1]: a NULL range counts 1, a suppressed row counts 1 on every QI; categorical leaves
    counted as in ``kanon_taxonomy`` (``TaxonomyIndex.table_leaves``: no NULL leaf), as gcp()."""
    w = g.size.astype(np.float64) / data.n_rows
    sup = None
    if g.suppressed is not None and g.suppressed.any():
        sup = np.bincount(g.ec, weights=g.suppressed.astype(np.float64), minlength=g.n_classes) > 0
    out = []
    for j in range(data.dn):
        out.append(_weighted(w, data.numeric_ncp(j, g.lo[:, j], g.hi[:, j]), sup))
    for j, t in enumerate(data.trees):
        out.append(_weighted(w, t.node_ncp()[g.nodes[:, j]], sup))
    return np.asarray(out)


def _weighted(w, ncp, sup):
    """sum(w * ncp) with suppressed classes at SUPPRESSED_NCP. numpy's pairwise sum, not np.dot:
    OpenBLAS's threaded dot product cost 2-17 ms per call on 78k classes (its threads wake for
    each call; 8 calls per 1M-row run), and its rounding depends on the thread count."""
    if sup is not None:
        ncp = np.where(sup, SUPPRESSED_NCP, ncp)
    return float(np.add.reduce(w * ncp))
