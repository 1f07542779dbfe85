"""Per-class statistics of encoded QIs: the one kernel behind ``generalize`` (published values)
and the clustering family's ``stats_from_labels`` (``ClusterStats``)."""
from __future__ import annotations

import numpy as np

from ._numba_config import njit

_INT32_MAX = np.iinfo(np.int32).max


@njit
def class_stats(ec, n_classes, num, num_null, cat):
    """One pass over n rows with class ids ``ec`` (0..n_classes-1). Returns, per class C:
    size int64 (C,); nmin/nmax float64 (C, dn), min/max of the non-NULL coordinates (+inf/-inf
    when none); nnull bool (C, dn), the class holds a NULL; cmin/cmax int32 (C, dc), smallest /
    largest leaf ordinal (their LCA is the class's LCA). O(n·d)."""
    n, dn = num.shape
    dc = cat.shape[1]
    size = np.zeros(n_classes, dtype=np.int64)
    nmin = np.full((n_classes, dn), np.inf)
    nmax = np.full((n_classes, dn), -np.inf)
    nnull = np.zeros((n_classes, dn), dtype=np.bool_)
    cmin = np.full((n_classes, dc), _INT32_MAX, dtype=np.int32)
    cmax = np.full((n_classes, dc), -1, dtype=np.int32)
    for i in range(n):
        c = ec[i]
        size[c] += 1
        for j in range(dn):
            if num_null[i, j]:
                nnull[c, j] = True
            else:
                v = num[i, j]
                if v < nmin[c, j]:
                    nmin[c, j] = v
                if v > nmax[c, j]:
                    nmax[c, j] = v
        for j in range(dc):
            v = cat[i, j]
            if v < cmin[c, j]:
                cmin[c, j] = v
            if v > cmax[c, j]:
                cmax[c, j] = v
    return size, nmin, nmax, nnull, cmin, cmax
