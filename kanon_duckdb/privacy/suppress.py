"""``max_suppression`` for the local-recoding algorithms (Mondrian, cof_mondrian, clustering).

Rule (the same for every local algorithm): the algorithm partitions all rows; then each row that
alone holds a class's minimum or maximum on some QI gets the net GCP gain of suppressing it:
the class's other |e| - 1 rows publish a tighter box ((|e| - 1) (NCP(e) - NCP(e without the
row)), NCP = weighted mean over QIs), while the row itself goes from NCP(e) to 1 (fully
generalized). Rows with a positive gain are suppressed, largest gain first, at most |e| - k per
class and ``floor(max_suppression * n)`` in all; they stay in the output with
``suppressed = true``, fully generalized, as one class. So suppression never raises GCP: rows
whose presence costs most (outliers that stretch a class) go first. Privacy models: a row is
taken out of a class only while the class keeps satisfying every model (checked again after
the pass; a class that would break keeps its rows), and the repair pass (``enforce.repair``)
may use what is left of the budget. Cost: O(n·d) plus one sort of the candidates.
"""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from .._numba_config import njit
from ..algorithms.base import Partition
from ..qidata import QIData
from .enforce import _box_ncp
from .spec import PrivacySpec


@njit
def _trim_gains(X, ec, C, scale, tree_of, leaf_node, leaf_off, parent, leaf_hi, n_leaves, node_off,
                w):
    """Per row: the weighted NCP sum of its class's box without it (only for rows that alone
    hold a class minimum or maximum; else NaN), and per class the box NCP sum with all rows.
    Boxes as in enforce._box_ncp (categorical as leaf-ordinal ranges)."""
    n, d = X.shape
    lo1 = np.full((C, d), np.inf)
    lo2 = np.full((C, d), np.inf)
    hi1 = np.full((C, d), -np.inf)
    hi2 = np.full((C, d), -np.inf)
    nlo = np.zeros((C, d), dtype=np.int64)
    nhi = np.zeros((C, d), dtype=np.int64)
    for i in range(n):
        c = ec[i]
        for j in range(d):
            v = X[i, j]
            if v < lo1[c, j]:
                lo2[c, j] = lo1[c, j]
                lo1[c, j] = v
                nlo[c, j] = 1
            elif v == lo1[c, j]:
                nlo[c, j] += 1
            elif v < lo2[c, j]:
                lo2[c, j] = v
            if v > hi1[c, j]:
                hi2[c, j] = hi1[c, j]
                hi1[c, j] = v
                nhi[c, j] = 1
            elif v == hi1[c, j]:
                nhi[c, j] += 1
            elif v > hi2[c, j]:
                hi2[c, j] = v
    box = np.empty(C)
    for c in range(C):
        box[c] = _box_ncp(lo1[c], hi1[c], scale, tree_of, leaf_node, leaf_off, parent, leaf_hi,
                          n_leaves, node_off, w)
    without = np.full(n, np.nan)
    blo = np.empty(d)
    bhi = np.empty(d)
    for i in range(n):
        c = ec[i]
        changed = False
        for j in range(d):
            blo[j] = lo1[c, j]
            bhi[j] = hi1[c, j]
            v = X[i, j]
            if v == lo1[c, j] and nlo[c, j] == 1 and lo2[c, j] <= hi1[c, j]:
                blo[j] = lo2[c, j]
                changed = True
            if v == hi1[c, j] and nhi[c, j] == 1 and hi2[c, j] >= lo1[c, j]:
                bhi[j] = hi2[c, j]
                changed = True
        if changed:
            without[i] = _box_ncp(blo, bhi, scale, tree_of, leaf_node, leaf_off, parent, leaf_hi,
                                  n_leaves, node_off, w)
    return without, box


def choose_rows(data: QIData, ec: np.ndarray, k: int, max_suppression: float, weights=None,
                spec: PrivacySpec | None = None, already=None) -> np.ndarray:
    """Row ids to suppress after the algorithm (see module doc), largest net gain first."""
    from ..algorithms.mondrian import stack_dimensions
    n = data.n
    budget = int(math.floor(float(max_suppression) * n + 1e-9))
    if already is not None:
        budget -= int(already.sum())
    if budget <= 0:
        return np.zeros(0, dtype=np.int64)
    X, scale, tree_of = stack_dimensions(data)
    leaf_node, leaf_off, parent, leaf_hi, n_leaves, node_off, _sh, _ll = data.cat_arrays()
    w = np.ones(X.shape[1]) if weights is None else np.asarray(weights, dtype=np.float64)
    wsum = float(w.sum()) or 1.0
    C = int(ec.max()) + 1
    without, box = _trim_gains(X, ec, C, scale, tree_of, leaf_node, leaf_off, parent, leaf_hi,
                               n_leaves, node_off, w)
    size = np.bincount(ec, minlength=C)
    cand = np.flatnonzero(~np.isnan(without))
    if already is not None:
        cand = cand[~already[cand]]
    c_of = ec[cand]
    gain = ((size[c_of] - 1) * (box[c_of] - without[cand]) + box[c_of] - wsum) / wsum
    keep = gain > 1e-12
    cand, gain = cand[keep], gain[keep]
    order = cand[np.lexsort((cand, -gain))]
    room = size - k
    taken = []
    for r in order:
        if len(taken) >= budget:
            break
        if room[ec[r]] > 0:
            room[ec[r]] -= 1
            taken.append(r)
    taken = np.asarray(taken, dtype=np.int64)
    if spec is not None and spec.has_class_models and taken.size:
        sup = np.zeros(n, dtype=bool)
        sup[taken] = True
        ok = spec.classes_ok(np.where(sup, C, ec), C + 1)[:C]
        taken = taken[ok[ec[taken]]]  # a class that would break a model keeps its rows
    return np.sort(taken)


def suppress_after(data: QIData, part: Partition, k: int, max_suppression: float, weights=None,
                   spec: PrivacySpec | None = None, rounds: int = 20) -> Partition:
    """Apply the rule of the module doc to an algorithm's partition, in up to ``rounds`` passes
    (after a class's outlier goes, its next most extreme row may be worth suppressing too)."""
    ec = np.asarray(part.ec, dtype=np.int64)
    C = int(ec.max()) + 1
    sup = np.zeros(data.n, dtype=bool) if part.suppressed is None else part.suppressed.copy()
    n0 = int(sup.sum())
    for _ in range(rounds):
        cur = np.where(sup, C, ec)  # suppressed rows leave their classes
        drop = choose_rows(data, cur, k, max_suppression, weights, spec, sup)
        drop = drop[ec[drop] != C] if drop.size else drop
        if drop.size == 0:
            break
        sup[drop] = True
    info = dict(part.info)
    info["suppressed_outliers"] = int(sup.sum()) - n0
    if not sup.any():
        return dataclasses.replace(part, info=info)
    return Partition(ec=np.where(sup, C, ec), suppressed=sup, info=info)
