"""Enforcement after a local-recoding algorithm, and the guard every published partition passes.

Mondrian enforces the models inside its cuts (``_kernels.split_ok``) and the lattice searches
inside the node checker. The clustering algorithms form clusters of at least the models' class
size as their papers describe; ``repair`` then makes every cluster satisfy every model:

    repeat: take the smallest class that violates a model;
      suppress it (its rows stay in the output, flagged, fully generalized) when it fits in the
      remaining suppression budget and suppressing costs less than the cheapest merge;
      else merge it into the class whose union with it costs the least weighted NCP
      (|a ∪ b|·NCP(a ∪ b) - |a|·NCP(a) - |b|·NCP(b)), preferring unions that satisfy every model.

When the rows left after suppression violate a model that is not monotone under suppression
(t-closeness, entropy / recursive l) with no class left to merge with, the loop runs again over
every row with no suppression (``privacy_repair.unsuppressed`` in ``kanon_runs.details``).

Every model is monotone under generalization (a union of satisfying classes satisfies it) and
the whole table satisfies them (``spec.build_spec`` checks), so the loop ends. Cost: O(V · C ·
(d·h + M)) for V violating classes among C (numba).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .._numba_config import njit
from ..algorithms.base import Partition
from ..qidata import QIData
from ..errors import InfeasibleError
from ..taxonomy._lca import lca_of_range
from . import _kernels as K
from .spec import PrivacySpec


@njit
def _box_ncp(lo, hi, scale, tree_of, leaf_node, leaf_off, parent, leaf_hi, n_leaves, node_off, w):
    """Weighted NCP sum of a box (per-dimension lo/hi; categorical as leaf ordinals)."""
    s = 0.0
    for j in range(lo.shape[0]):
        t = tree_of[j]
        if t < 0:
            s += w[j] * (hi[j] - lo[j]) / scale[j]
        elif hi[j] > lo[j]:
            no = node_off[t]
            u = lca_of_range(leaf_node[leaf_off[t]:leaf_off[t + 1]], parent[no:node_off[t + 1]],
                             leaf_hi[no:node_off[t + 1]], int(lo[j]), int(hi[j]))
            s += w[j] * n_leaves[no + u] / n_leaves[no]
    return s


@njit
def _repair(X, ec, C, P, scr_cols, scale, tree_of, leaf_node, leaf_off, parent, leaf_hi, n_leaves,
            node_off, w, budget):
    """Returns (new class id per class (C,), -1 = suppressed; number of rows suppressed)."""
    n, d = X.shape
    M = P[5].shape[0]
    size = np.zeros(C)
    lo = np.full((C, d), np.inf)
    hi = np.full((C, d), -np.inf)
    hist = np.zeros((C, M + 1))
    for i in range(n):
        c = ec[i]
        size[c] += 1
        K.add_row(hist[c], i, P, 1.0)
        for j in range(d):
            lo[c, j] = min(lo[c, j], X[i, j])
            hi[c, j] = max(hi[c, j], X[i, j])
    scr = np.empty((4, scr_cols))
    ok = np.empty(C, dtype=np.bool_)
    alive = np.ones(C, dtype=np.bool_)
    target = np.arange(C)
    box = np.empty(C)
    wsum = 0.0
    for j in range(d):
        wsum += w[j]
    for c in range(C):
        ok[c] = K.class_ok(hist[c], size[c], P, scr)
        box[c] = _box_ncp(lo[c], hi[c], scale, tree_of, leaf_node, leaf_off, parent, leaf_hi,
                          n_leaves, node_off, w)
    ulo = np.empty(d)
    uhi = np.empty(d)
    uh = np.empty(M + 1)
    n_sup = 0
    while True:
        v = -1
        for c in range(C):
            if alive[c] and not ok[c] and (v < 0 or size[c] < size[v]):
                v = c
        if v < 0:
            break
        best = -1
        best_ok = False
        best_cost = np.inf
        for t in range(C):
            if t == v or not alive[t]:
                continue
            for j in range(d):
                ulo[j] = min(lo[v, j], lo[t, j])
                uhi[j] = max(hi[v, j], hi[t, j])
            ub = _box_ncp(ulo, uhi, scale, tree_of, leaf_node, leaf_off, parent, leaf_hi,
                          n_leaves, node_off, w)
            cost = (size[v] + size[t]) * ub - size[v] * box[v] - size[t] * box[t]
            for m in range(M):
                uh[m] = hist[v, m] + hist[t, m]
            uok = K.class_ok(uh, size[v] + size[t], P, scr)
            if (uok and not best_ok) or (uok == best_ok and cost < best_cost):
                best = t
                best_ok = uok
                best_cost = cost
        sup_cost = size[v] * (wsum - box[v])
        if size[v] <= budget and (best < 0 or sup_cost <= best_cost or not best_ok):
            alive[v] = False
            target[v] = -1
            budget -= size[v]
            n_sup += int(size[v])
            continue
        if best < 0:
            break  # a single class that violates: the caller reports it
        for j in range(d):
            lo[best, j] = min(lo[v, j], lo[best, j])
            hi[best, j] = max(hi[v, j], hi[best, j])
        for m in range(M):
            hist[best, m] += hist[v, m]
        size[best] += size[v]
        box[best] = _box_ncp(lo[best], hi[best], scale, tree_of, leaf_node, leaf_off, parent,
                             leaf_hi, n_leaves, node_off, w)
        ok[best] = K.class_ok(hist[best], size[best], P, scr)
        alive[v] = False
        target[v] = best
    # follow merges to the surviving class
    out = np.empty(C, dtype=np.int64)
    for c in range(C):
        u = c
        while u >= 0 and not alive[u]:
            u = target[u]
        out[c] = u
    return out, n_sup


def repair(data: QIData, part: Partition, spec: PrivacySpec, budget_rows: int,
           weights=None) -> Partition:
    """Make every class of a local-recoding partition satisfy ``spec`` (see module doc).
    Suppressed rows (budget permitting) end up in one class flagged ``suppressed``."""
    from ..algorithms.mondrian import stack_dimensions
    ec = np.asarray(part.ec, dtype=np.int64)
    sup0 = part.suppressed
    C = int(ec.max()) + 1 if ec.size else 0
    keep_rows = None
    if sup0 is not None and sup0.any():
        keep_rows = np.flatnonzero(~sup0)
    X, scale, tree_of = stack_dimensions(data)
    leaf_node, leaf_off, parent, leaf_hi, n_leaves, node_off, _sh, _ll = data.cat_arrays()
    w = np.ones(X.shape[1]) if weights is None else np.asarray(weights, dtype=np.float64)
    sub_spec, sub_ec, sub_X = spec, ec, X
    if keep_rows is not None:
        sub_spec = spec.subset(keep_rows)
        sub_ec = ec[keep_rows]
        sub_X = np.ascontiguousarray(X[keep_rows])
    mapping, n_sup = _repair(sub_X, sub_ec, C, sub_spec.packed(), sub_spec.scr_cols, scale,
                             tree_of, leaf_node, leaf_off, parent, leaf_hi, n_leaves, node_off, w,
                             float(budget_rows))
    new_ec = ec.copy()
    suppressed = np.zeros(ec.size, dtype=bool) if sup0 is None else sup0.copy()
    rows = np.arange(ec.size) if keep_rows is None else keep_rows
    mapped = mapping[ec[rows]]
    suppressed[rows[mapped < 0]] = True
    new_ec[rows] = np.where(mapped < 0, C, mapped)
    if suppressed.any():
        new_ec[suppressed] = C  # one class of suppressed rows
    info = dict(part.info)
    info["privacy_repair"] = {"suppressed_rows": int(n_sup)}
    if suppressed.any() and violating_classes(spec, new_ec, C + 1, suppressed).size:
        # The rows left after suppression violate a model that is not monotone under
        # suppression (t-closeness, entropy / recursive l: e.g. t := 0 holds for the whole
        # table only) and no merge is left: merge again over every row, suppressing none (the
        # whole table satisfies every model, spec.build_spec checks, so merging ends).
        mapping, _ = _repair(X, ec, C, spec.packed(), spec.scr_cols, scale, tree_of, leaf_node,
                             leaf_off, parent, leaf_hi, n_leaves, node_off, w, 0.0)
        new_ec, suppressed = mapping[ec], np.zeros(ec.size, dtype=bool)
        info["privacy_repair"] = {"suppressed_rows": 0, "unsuppressed": True}
    return dataclasses.replace(part, ec=new_ec, suppressed=suppressed if suppressed.any() else None,
                               cat_nodes=None, num_lo=None, num_hi=None, info=info)


def violating_classes(spec: PrivacySpec, ec: np.ndarray, n_classes: int, suppressed=None) -> np.ndarray:
    """Ids of published classes (not wholly suppressed) that violate a model."""
    ok = spec.classes_ok(ec, n_classes)
    if suppressed is not None and suppressed.any():
        sup_cls = np.bincount(ec[suppressed], minlength=n_classes) > 0
        ok |= sup_cls
    return np.flatnonzero(~ok)


def check_published(spec: PrivacySpec, ec: np.ndarray, n_classes: int, suppressed=None) -> None:
    """Refuse to publish a partition that breaks a model (a bug, never user error)."""
    bad = violating_classes(spec, ec, n_classes, suppressed)
    if bad.size:
        raise InfeasibleError(
            f"internal error: {bad.size} classes violate the requested privacy models "
            f"({[m.describe()['model'] for m in spec.models]}); please report it")
