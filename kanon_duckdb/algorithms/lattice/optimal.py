"""``optimal``: the exact minimum-loss feasible node of the generalization lattice.

Exhaustive in principle, with the pruning of OLA (El Emam et al. 2009) and Flash (Kohlmayer et
al. 2012) in practice:

1. The lattice is cut to the per-QI minimum levels (``NodeChecker.bounds``; nodes below them are
   provably infeasible) and indexed in mixed radix; each node keeps status bits.
2. Nodes are visited in ascending order of a loss lower bound that needs no data (LOG exactly;
   GCP without suppression; a constant for DM); the search stops when the bound reaches the best
   loss found, so every node that could beat it has been decided.
3. An undecided node is decided along a path: climb greedily from it (cheapest bound increase)
   through undecided nodes, then binary-search the path for the first feasible node. Every
   evaluation tags a whole cone: feasible -> every generalization is feasible (and, when the
   loss is monotone, no better: pruned); infeasible -> every specialization is infeasible. With
   DM, a node's sum of squared class sizes bounds the loss of every node above it.
4. Feasible nodes the tags cannot rule out (non-monotone loss under suppression) are evaluated.
5. With suppression and a privacy model that is not monotone under suppression (entropy /
   recursive l-diversity, t-closeness: ``privacy.compat.feasibility_is_monotone``) feasibility is
   not monotone over the lattice, so no FEAS/INFEAS cone is tagged and every node whose bound can
   still win is evaluated (loss pruning stays: it needs only a monotone loss).

Exactness: a node is skipped only if it is infeasible (tag), provably no better than an
evaluated feasible node (tag), or its lower bound is at least the best loss (order).
"""
from __future__ import annotations

import numpy as np

from ...errors import InvalidParameterError
from . import _kernels as K
from .checker import NodeChecker
from ...privacy.compat import feasibility_is_monotone

FEAS, INFEAS, PRUNED, EVAL = 1, 2, 4, 8
MAX_NODES = 5_000_000


def search(ch: NodeChecker, progress=None):
    """Return (levels of the optimum, stats dict)."""
    lo = np.asarray(ch.bounds, dtype=np.int64)
    hi = np.asarray(ch.heights, dtype=np.int64)
    d = lo.size
    radix = hi - lo + 1
    strides = np.ones(d, dtype=np.int64)
    M = 1
    for j in range(d):
        strides[j] = M
        M *= int(radix[j])
        if M > MAX_NODES:
            raise InvalidParameterError(
                f"the lattice has more than {MAX_NODES:,} nodes above the per-QI minimum levels; "
                f"algo := 'optimal' cannot search it exhaustively. Use algo := 'kgen' (or fewer QIs)")
    idx = np.arange(M, dtype=np.int64)
    height = np.zeros(M, dtype=np.int64)
    lb = np.zeros(M)
    additive = ch.objective.separable
    base = ch.static_bound(tuple(int(x) for x in lo))
    lb += base
    for j in range(d):
        digit = (idx // strides[j]) % radix[j]
        height += digit
        if additive:
            table = np.array([ch.static_bound(_unit(j, L, lo)) - base
                              for L in range(lo[j], hi[j] + 1)])
            lb += table[digit]
    del idx
    order = np.lexsort((height, lb))
    status = np.zeros(M, dtype=np.uint8)
    monotone = ch.loss_is_monotone
    cones = feasibility_is_monotone(ch.privacy.models if ch.privacy is not None else (), ch.limit)
    best = [np.inf, None]
    n_paths = [0]

    def levels_of(u):
        return tuple(int(lo[j] + (u // strides[j]) % radix[j]) for j in range(d))

    def evaluate(u):
        res = ch.check(levels_of(u))
        status[u] |= EVAL
        if res.feasible:
            if cones:
                K.tag_closure(status, u, FEAS, radix, strides, True)
            if res.loss < best[0]:
                best[0], best[1] = res.loss, u
            if monotone:
                K.tag_closure(status, u, PRUNED, radix, strides, True)
        elif cones:
            K.tag_closure(status, u, INFEAS, radix, strides, False)
        if ch.objective.bound_prunes and res.lower_bound >= best[0]:
            K.tag_closure(status, u, PRUNED, radix, strides, True)
        return res.feasible

    def resolve(u):
        n_paths[0] += 1
        path = [u]
        cur = u
        while True:
            pick, pick_inc = -1, np.inf
            for j in range(d):
                if (cur // strides[j]) % radix[j] + 1 >= radix[j]:
                    continue
                v = cur + strides[j]
                if status[v] & (FEAS | INFEAS):
                    continue
                inc = lb[v] - lb[cur]
                if inc < pick_inc:
                    pick, pick_inc = v, inc
            if pick < 0:
                break
            path.append(pick)
            cur = pick
        a, b = 0, len(path)  # path[:a] infeasible, path[b:] feasible (or beyond)
        while a < b:
            mid = (a + b) // 2
            if status[path[mid]] & FEAS:
                b = mid
            elif status[path[mid]] & INFEAS:
                a = mid + 1
            elif evaluate(path[mid]):
                b = mid
            else:
                a = mid + 1

    evaluate(M - 1)  # the top: feasible whenever k <= n
    if best[1] is None:
        return None, {"n_paths": 0, "lattice_size": M}
    evaluate(0)
    steps = 0
    for u in order:
        if lb[u] >= best[0]:
            break
        steps += 1
        if progress is not None and steps % 256 == 0:
            progress(min(0.99, steps / M))
        st = status[u]
        if st & (INFEAS | PRUNED | EVAL):
            continue
        if not cones:
            evaluate(u)
            continue
        if not st & FEAS:
            resolve(u)
            st = status[u]
        if st & FEAS and not st & (EVAL | PRUNED):
            evaluate(u)
    return levels_of(best[1]), {"n_paths": n_paths[0], "lattice_size": M, "cone_tags": cones}


def _unit(j, L, lo):
    lv = [int(x) for x in lo]
    lv[j] = int(L)
    return tuple(lv)
