"""``optimal``: the exact minimum-loss feasible node of the generalization lattice.

**Canonical answer.** Among the feasible nodes, the published one is the first in the order
(loss, height, levels): the least loss (``Objective.tie_class``: losses rounding to the same
multiple of ``tie_step``, 1e-10 for LOG/GCP and 1 for DM, tie), then the least height (sum of
levels), then the level vector compared lexicographically in the order of ``qi_order`` (numeric
QIs, then categorical). The answer depends on the data and parameters only, never on the order
the search evaluated nodes in.

**Search** (best-first over a loss lower bound, with the pruning of OLA / Flash, El Emam et al.
2009, Kohlmayer et al. 2012):

1. The lattice is cut to the per-QI minimum levels (``NodeChecker.bounds``: nodes below them are
   provably infeasible) and indexed in mixed radix with the first QI most significant, so index
   order is the lexicographic order of the levels.
2. Every node gets its key (tie class of a lower bound of its loss known without data, height,
   index): ``NodeChecker.static_bounds`` (LOG exactly, GCP with no row suppressed, a constant for
   DM). Nodes are scanned in key order; the scan stops at the first node whose key is not below
   the best feasible node's (loss, height, index): no later node can come first.
3. A scanned node that is neither decided nor ruled out is decided along a path: climb greedily
   (least bound increase) through undecided nodes whose key is still below the best, evaluate
   the first node of the path whose key space is at most ``NodeChecker.cap`` (n/k + limit) or
   the tuples, keeping its class table (the nodes above it roll up from it), and binary-search
   the path for its first feasible node (below it when it is feasible, above when not). A kept
   grouping that the checker stopped on a prefix of the sorted tuples (far infeasible: no
   table) moves the kept grouping to the next node up the path, so the table kept is that of
   a node near the feasibility border, or of the border node itself. Feasible -> every
   generalization is feasible (FEAS cone) and, when the loss is monotone, comes later in the
   order (PRUNED); infeasible -> every specialization is infeasible (INFEAS cone). With DM a
   node's sum of squared class sizes bounds the loss of every node above it.
4. When the loss is its static bound (LOG), a node known feasible from a cone needs no
   evaluation: its key is exact. Otherwise feasible candidates are evaluated for their loss.
5. With suppression and a privacy model that is not monotone under suppression (entropy /
   recursive l-diversity, t-closeness: ``privacy.compat.feasibility_is_monotone``) feasibility is
   not monotone over the lattice, so no FEAS/INFEAS cone is tagged and every candidate node
   is evaluated (loss pruning stays: it needs only a monotone loss).

Exactness: a node is skipped only if it is infeasible (tag), comes after an evaluated feasible
node in the order (monotone loss / DM bound tags), or its key's lower bound is not below the
best key found (scan order). Cost: evaluations near the feasibility border, each a pass over the
smallest cached class table below the node (``NodeChecker``), the encoded tuples otherwise.
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
    """Return (levels of the canonical optimum, stats dict), or (None, stats) when even the
    top of the lattice is infeasible."""
    lo = np.asarray(ch.bounds, dtype=np.int64)
    hi = np.asarray(ch.heights, dtype=np.int64)
    d = lo.size
    radix = hi - lo + 1
    strides = np.ones(d, dtype=np.int64)
    M = 1
    for j in range(d - 1, -1, -1):  # the first QI most significant: index order = lex order
        strides[j] = M
        M *= int(radix[j])
        if M > MAX_NODES:
            raise InvalidParameterError(
                f"the lattice has more than {MAX_NODES:,} nodes above the per-QI minimum levels; "
                f"algo := 'optimal' cannot search it exhaustively. Use algo := 'kgen' (or fewer QIs)")
    idx = np.arange(M, dtype=np.int64)
    height = np.zeros(M, dtype=np.int64)
    levels_by_qi = []
    for j in range(d):
        digit = (idx // strides[j]) % radix[j]
        height += digit
        levels_by_qi.append(lo[j] + digit)
    ob = ch.objective
    qlb = ob.tie_class(ch.static_bounds(levels_by_qi))
    del levels_by_qi
    order = np.lexsort((idx, height, qlb))
    del idx
    status = np.zeros(M, dtype=np.uint8)
    sp = ch.space
    small = min(ch.cap, ch.t)  # a node with at most this many keys is grouped completely
    monotone = ch.loss_is_monotone
    exact = ob.loss_is_bound
    cones = feasibility_is_monotone(ch.privacy.models if ch.privacy is not None else (), ch.limit)
    best = [None, -1]  # key (tie class of the loss, height, index), node
    n_paths = [0]

    def levels_of(u):
        return tuple(int(lo[j] + (u // strides[j]) % radix[j]) for j in range(d))

    def key_lb(u):
        return (int(qlb[u]), int(height[u]), int(u))

    def below_best(u):
        return best[0] is None or key_lb(u) < best[0]

    def offer(key, u):
        if best[0] is None or key < best[0]:
            best[0], best[1] = key, u

    def evaluate(u, keep_table=False):
        return check(u, keep_table).feasible

    def check(u, keep_table=False):
        res = ch.check(levels_of(u), keep_table)
        status[u] |= EVAL
        if res.feasible:
            if cones:
                K.tag_closure(status, u, FEAS, radix, strides, True)
            offer((ob.tie_class(res.loss), int(height[u]), int(u)), u)
            if monotone:
                K.tag_closure(status, u, PRUNED, radix, strides, True)
        elif cones:
            K.tag_closure(status, u, INFEAS, radix, strides, False)
        if ob.bound_prunes and best[0] is not None and ob.tie_class(res.lower_bound) > best[0][0]:
            K.tag_closure(status, u, PRUNED, radix, strides, True)
        return res

    def climb(u):
        """u and undecided nodes above it, each step the one shrinking the key space least
        (the smallest cut of one QI's distinct codes; then the least key): long paths of
        gently coarsened nodes, whose highest infeasible node has a wide cone below it."""
        path = [u]
        cur = u
        while True:
            pick, pick_score = None, None
            for j in range(d):
                level = lo[j] + (cur // strides[j]) % radix[j]
                if level >= hi[j]:
                    continue
                v = cur + strides[j]
                if status[v] & (FEAS | INFEAS):
                    continue
                c = int(sp.cstart[j] + level)
                score = (-sp.mcol[c + 1] / sp.mcol[c], key_lb(v))
                if pick is None or score < pick_score:
                    pick, pick_score = v, score
            if pick is None:
                return path
            path.append(pick)
            cur = pick

    def first_feasible(path, a, b):
        """Binary search of path[a:b] (path[:a] infeasible, path[b:] feasible or past the end)
        for its first feasible node; returns its position."""
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
        return a

    def resolve(u):
        """Decide u along its climb: evaluate the first node whose key space is at most
        ``small`` keeping its table (complete and cached, so the nodes above it on the path
        roll up from it), then binary-search below it when it is feasible, above it when it is
        not (for the highest infeasible node of the path: the widest INFEAS cone). A kept
        grouping that the checker stopped on a prefix of the tuples (infeasible, no table:
        ``NodeChecker.check``) moves the kept grouping one node up the path."""
        n_paths[0] += 1
        path = climb(u)
        i0 = next((i for i, v in enumerate(path) if sp.keyspace(levels_of(v))[1] <= small),
                  len(path) - 1)
        i = i0
        while True:
            res = check(path[i], True)
            if res.feasible:
                if i == i0:
                    first_feasible(path, 0, i0)
                return  # (above i0: the node below it on the path is infeasible)
            if res.n_suppressed >= 0 or i == len(path) - 1:  # its table is cached
                first_feasible(path, i + 1, len(path))
                return
            i += 1

    evaluate(M - 1)  # the top: feasible whenever k <= n (without row-suppressing models)
    if best[0] is None and cones:  # every node is below the top: none is feasible
        return None, {"n_paths": 0, "lattice_size": M}
    steps = 0
    pos = 0
    while pos < M:
        u = int(order[pos])
        if not below_best(u):
            break
        steps += 1
        if progress is not None and steps % 256 == 0:
            progress(min(0.99, pos / M))
        st = status[u]
        if st & (INFEAS | PRUNED | EVAL):
            pos += 1
            continue
        if st & FEAS or not cones:
            if exact and st & FEAS:  # the loss is the bound: its key is known
                offer(key_lb(u), u)
            else:
                evaluate(u)
            pos += 1
            continue
        resolve(u)  # u is now decided or the best moved below it; look at it again
    if best[0] is None:
        return None, {"n_paths": n_paths[0], "lattice_size": M, "cone_tags": cones}
    return levels_of(best[1]), {"n_paths": n_paths[0], "lattice_size": M, "cone_tags": cones}

