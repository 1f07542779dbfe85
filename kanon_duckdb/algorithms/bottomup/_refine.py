"""Numba kernels of ``bottomup``'s last step (kanon-duckdb's own): a record-moving refinement of
any partition whose classes have >= k rows.

It lowers the partition's cost, sum over classes c of |c| * sum_j NCP_j(box(c)) (GCP times n·d,
as ``_kernels._ncp_fast`` measures it), by local search in rounds:

- move: a row leaves a class of more than k rows for a neighbouring class when the summed cost
  of the two classes drops;
- swap: rows r of class A and s of a neighbouring class B trade places when the summed cost of A
  and B drops (classes of exactly k rows can only change this way);
- split: a class that has grown to >= 2k rows is cut at its cheapest cut (``_best_split``).

Neighbours of a class: the M classes whose union with it costs least among its 2M nearest by
box centre (L1 distance, each dimension over its range; a KD-tree), recomputed every round. A
class is revisited in a round only when it or a neighbour changed in the previous round or in
this one; the search stops after ``rounds`` rounds or a round that lowers the cost by less than
``tol`` of it.

With privacy models (``P``, the packed PrivacySpec; None for k alone, which compiles no model
check) a step is taken only when every class it touches that satisfied the models still does
(``privacy._kernels.class_ok``), and a split only when both sides satisfy them.

Guarantees: every class keeps >= k rows, each step lowers the cost by more than EPS (so the cost
never rises), class ids stay dense (splits append ids), and the result is deterministic (rows and
classes are visited in id order). Each class's box is recomputed from its rows after a change,
so published boxes stay truthful. Layout as ``_kernels``: X float64 (n, d), numeric QIs first.
Cost per round: O(C log C · d) neighbours, O(n · M · d) moves, O(C · M · s² · d) swaps for
classes of s rows (pruned by lower bounds), O(s · d · log s) per split.
"""
from __future__ import annotations

import numpy as np

from ..._numba_config import njit
from ...privacy import _kernels as K
from .._member_lists import lists, members, move
from ._kernels import _best_split, _ncp_fast

EPS = 1e-9  # a step must lower the cost by more than this


@njit
def _restat(c, X, head, nxt, size, lo, hi, cn, tot, wlo, whi, wn, wtot, dn, scale, gmin, base,
            ch):
    """Box of class c (lo/hi, per-dimension NCP cn, its sum tot) and, for every member r, the
    box of the class without r (wlo/whi, per-dimension NCP wn, sum wtot; an empty box for a
    class of one row). O(|c| · d)."""
    d = X.shape[1]
    lo1 = np.full(d, np.inf)
    lo2 = np.full(d, np.inf)
    hi1 = np.full(d, -np.inf)
    hi2 = np.full(d, -np.inf)
    nlo = np.zeros(d, np.int64)
    nhi = np.zeros(d, np.int64)
    r = head[c]
    while r >= 0:
        for j in range(d):
            v = X[r, j]
            if v < lo1[j]:
                lo2[j] = lo1[j]
                lo1[j] = v
                nlo[j] = 1
            elif v == lo1[j]:
                nlo[j] += 1
            elif v < lo2[j]:
                lo2[j] = v
            if v > hi1[j]:
                hi2[j] = hi1[j]
                hi1[j] = v
                nhi[j] = 1
            elif v == hi1[j]:
                nhi[j] += 1
            elif v > hi2[j]:
                hi2[j] = v
        r = nxt[r]
    s = 0.0
    for j in range(d):
        lo[c, j] = lo1[j]
        hi[c, j] = hi1[j]
        cn[c, j] = _ncp_fast(j, lo1[j], hi1[j], dn, scale, gmin, base, ch)
        s += cn[c, j]
    tot[c] = s
    r = head[c]
    while r >= 0:
        t = 0.0
        for j in range(d):
            v = X[r, j]
            a = lo2[j] if (v == lo1[j] and nlo[j] == 1) else lo1[j]
            b = hi2[j] if (v == hi1[j] and nhi[j] == 1) else hi1[j]
            wlo[r, j] = a
            whi[r, j] = b
            if a == lo1[j] and b == hi1[j]:
                wn[r, j] = cn[c, j]
            elif a > b:  # r is the only row
                wn[r, j] = 0.0
            else:
                wn[r, j] = _ncp_fast(j, a, b, dn, scale, gmin, base, ch)
            t += wn[r, j]
        wtot[r] = t
        r = nxt[r]


@njit
def _join_cost(X, r, blo, bhi, bn, b, lim, dn, scale, gmin, base, ch):
    """Summed NCP of box b (blo[b]..bhi[b], per-dimension NCP bn[b]) widened to hold row r:
    a dimension where r lies inside costs bn[b, j], else ``_ncp_fast`` of the widened range.
    Stops once the sum reaches lim (the caller then rejects the step). O(d)."""
    s = 0.0
    for j in range(X.shape[1]):
        x = X[r, j]
        if blo[b, j] <= x <= bhi[b, j]:
            s += bn[b, j]
        else:
            s += _ncp_fast(j, min(blo[b, j], x), max(bhi[b, j], x), dn, scale, gmin, base, ch)
        if s >= lim:
            break
    return s


@njit
def _still_ok(P, hist, ok, c, n_after, r_out, r_in, scr):
    """True when class c did not satisfy the models, or still does after r_out (>= 0) leaves
    and r_in (>= 0) joins it with n_after rows."""
    if P is None:
        return True
    if not ok[c]:
        return True
    h = hist[c]
    if r_out >= 0:
        K.add_row(h, r_out, P, -1.0)
    if r_in >= 0:
        K.add_row(h, r_in, P, 1.0)
    res = K.class_ok(h, float(n_after), P, scr)
    if r_in >= 0:
        K.add_row(h, r_in, P, -1.0)
    if r_out >= 0:
        K.add_row(h, r_out, P, 1.0)
    return res


@njit
def _moved(P, hist, ok, c, n_after, r_out, r_in, scr):
    """Apply r_out leaving / r_in joining class c to its histogram and satisfaction flag."""
    if P is None:
        return
    h = hist[c]
    if r_out >= 0:
        K.add_row(h, r_out, P, -1.0)
    if r_in >= 0:
        K.add_row(h, r_in, P, 1.0)
    ok[c] = K.class_ok(h, float(n_after), P, scr)


@njit
def _insert(keys, ids, cnt, cap, v, x):
    """Insert (v, x) into keys/ids (cnt <= cap entries, ascending keys), dropping the largest
    entry when full; returns the new count."""
    p = cnt if cnt < cap else cap - 1
    while p > 0 and keys[p - 1] > v:
        keys[p] = keys[p - 1]
        ids[p] = ids[p - 1]
        p -= 1
    keys[p] = v
    ids[p] = x
    return min(cnt + 1, cap)


@njit
def _kd_knn(Pt, Q, leaf, ask):
    """For every row A of Pt (C, d) with ask[A], the Q nearest other rows by L1 distance: int64
    (C, Q), nearest first, -1 padded (rows not asked: all -1). A KD-tree (median cuts on the widest dimension, ``leaf`` points per leaf)
    searched with per-dimension gap bounds. O(C log C · d) to build, about O(log C + Q) per
    query on clustered points."""
    C, d = Pt.shape
    perm = np.arange(C)
    cap = 4 * (C // max(leaf, 1) + 2)
    ns = np.empty(cap, np.int64)
    ne = np.empty(cap, np.int64)
    ndim = np.full(cap, -1, np.int64)
    nval = np.zeros(cap)
    nlmax = np.zeros(cap)
    nl = np.full(cap, -1, np.int64)
    nr = np.full(cap, -1, np.int64)
    ns[0] = 0
    ne[0] = C
    nn = 1
    stack = np.empty(cap, np.int64)
    top = 1
    stack[0] = 0
    vals = np.empty(C)
    while top > 0:
        top -= 1
        u = stack[top]
        a = ns[u]
        b = ne[u]
        if b - a <= leaf:
            continue
        bj = -1
        bw = 0.0
        for j in range(d):
            mn = np.inf
            mx = -np.inf
            for i in range(a, b):
                v = Pt[perm[i], j]
                mn = min(mn, v)
                mx = max(mx, v)
            if mx - mn > bw:
                bw = mx - mn
                bj = j
        if bj < 0:  # all points equal
            continue
        for i in range(a, b):
            vals[i] = Pt[perm[i], bj]
        o = np.argsort(vals[a:b], kind="mergesort")
        perm[a:b] = perm[a:b][o]
        # cut between distinct values, nearest the median (ties on one side)
        mid = (a + b) // 2
        lo_c = mid
        while lo_c > a and Pt[perm[lo_c - 1], bj] == Pt[perm[lo_c], bj]:
            lo_c -= 1
        hi_c = mid
        while hi_c < b and Pt[perm[hi_c - 1], bj] == Pt[perm[hi_c], bj]:
            hi_c += 1
        mid = lo_c if (lo_c > a and (hi_c >= b or mid - lo_c <= hi_c - mid)) else hi_c
        ndim[u] = bj
        nval[u] = Pt[perm[mid], bj]  # smallest value on the right
        nlmax[u] = Pt[perm[mid - 1], bj]  # largest value on the left
        nl[u] = nn
        nr[u] = nn + 1
        ns[nn] = a
        ne[nn] = mid
        ns[nn + 1] = mid
        ne[nn + 1] = b
        stack[top] = nn
        stack[top + 1] = nn + 1
        top += 2
        nn += 2
    out = np.full((C, Q), -1, np.int64)
    bd = np.empty(Q)
    depth = 2 * (64 + 1)
    sn = np.empty(depth, np.int64)
    srd = np.empty(depth)
    soff = np.zeros((depth, d))
    for A in range(C):
        if not ask[A]:
            continue
        for q in range(Q):
            bd[q] = np.inf
        top = 1
        sn[0] = 0
        srd[0] = 0.0
        for j in range(d):
            soff[0, j] = 0.0
        while top > 0:
            top -= 1
            u = sn[top]
            rd = srd[top]
            if rd >= bd[Q - 1]:
                continue
            if ndim[u] < 0:
                for i in range(ns[u], ne[u]):
                    B = perm[i]
                    if B == A:
                        continue
                    t = 0.0
                    for j in range(d):
                        t += abs(Pt[A, j] - Pt[B, j])
                        if t >= bd[Q - 1]:
                            break
                    if t < bd[Q - 1]:
                        _insert(bd, out[A], Q, Q, t, B)
                continue
            jj = ndim[u]
            x = Pt[A, jj]
            gl = max(x - nlmax[u], 0.0)  # gap to the left side
            gr = max(nval[u] - x, 0.0)  # to the right side
            near = nl[u] if gl <= gr else nr[u]
            far = nr[u] if gl <= gr else nl[u]
            g = gr if gl <= gr else gl
            for j in range(d):
                soff[top + 1, j] = soff[top, j]
            # the far side: this dimension's gap becomes |g|
            sn[top] = far
            srd[top] = rd - soff[top, jj] + abs(g)
            soff[top, jj] = abs(g)
            sn[top + 1] = near
            srd[top + 1] = rd
            top += 2
    return out


@njit
def _neighbours(C, M, rd, S, dn, scale, gmin, base, ch, span, QF, nbt, nbc):
    """Update the neighbour table (nbt int64 (cap, M), nbc int64 (cap,) entries per class, -1 =
    none yet): for each class that changed in round rd - 1 or later, or whose neighbour did, the M
    classes (fewer when C <= M) whose union with it adds the least cost, among its QF·M/2
    nearest box centres (``_kd_knn``; a dimension's centre over ``span``, its range)."""
    size, lo, hi, cost, stamp = S[3], S[4], S[5], S[8], S[13]
    d = lo.shape[1]
    ask = np.zeros(C, np.bool_)
    for A in range(C):
        fresh = nbc[A] < 0 or stamp[A] >= rd - 1
        for q in range(max(nbc[A], 0)):
            if stamp[nbt[A, q]] >= rd - 1:
                fresh = True
        ask[A] = fresh
    Q = min(QF * M // 2, C - 1)
    if Q <= 0:
        for A in range(C):
            nbc[A] = 0
        return
    Pt = np.empty((C, d))
    for A in range(C):
        for j in range(d):
            Pt[A, j] = 0.5 * (lo[A, j] + hi[A, j]) / span[j]
    knn = _kd_knn(Pt, Q, np.int64(8), ask)  # np.int64: no extra Literal compile (_numba_config)
    bi = np.empty(M)
    for A in range(C):
        if not ask[A]:
            continue
        cnt = 0
        for q in range(Q):
            B = knn[A, q]
            if B < 0:
                break
            w = size[A] + size[B]
            s = 0.0
            for j in range(d):
                s += _ncp_fast(j, min(lo[A, j], lo[B, j]), max(hi[A, j], hi[B, j]), dn, scale,
                               gmin, base, ch)
            v = w * s - cost[A] - cost[B]
            if cnt == M and v >= bi[M - 1]:
                continue
            cnt = _insert(bi, nbt[A], cnt, M, v, B)
        nbc[A] = cnt


@njit
def _init(X, ec, k, dn, scale, gmin, base, ch, P):
    """(C, state S, privacy state PV) of the partition ec; S = (head, nxt, prv, size, lo, hi, cn,
    tot, cost, wlo, whi, wn, wtot, stamp) with room for n // k classes, PV = (hist, ok, scr)."""
    n, d = X.shape
    C = 0
    for i in range(n):
        C = max(C, ec[i] + 1)
    cap = max(C, n // max(k, 1) + 1)
    head, nxt, prv, size = lists(ec, cap)
    lo = np.zeros((cap, d))
    hi = np.zeros((cap, d))
    cn = np.zeros((cap, d))
    tot = np.zeros(cap)
    cost = np.zeros(cap)
    wlo = np.zeros((n, d))
    whi = np.zeros((n, d))
    wn = np.zeros((n, d))
    wtot = np.zeros(n)
    stamp = np.full(cap, -1, np.int64)  # round of the class's last change
    for c in range(C):
        _restat(c, X, head, nxt, size, lo, hi, cn, tot, wlo, whi, wn, wtot, dn, scale, gmin,
                base, ch)
        cost[c] = size[c] * tot[c]
    mv = 1
    if P is not None:
        mv = max(P[3][P[3].shape[0] - 1], 1)
    hist = np.zeros((cap if P is not None else 1, mv))
    ok = np.ones(cap, np.bool_)
    scr = np.empty((4, 1))
    if P is not None:
        scr = np.empty((4, max(P[5].shape[0], P[6].shape[0]) + 1))
        for i in range(n):
            K.add_row(hist[ec[i]], i, P, 1.0)
        for c in range(C):
            ok[c] = K.class_ok(hist[c], float(size[c]), P, scr)
    S = (head, nxt, prv, size, lo, hi, cn, tot, cost, wlo, whi, wn, wtot, stamp)
    return C, S, (hist, ok, scr)


@njit
def _changed(c, rd, X, S, dn, scale, gmin, base, ch):
    """Recompute class c after a change in round rd."""
    head, nxt, size, lo, hi, cn, tot, cost = S[0], S[1], S[3], S[4], S[5], S[6], S[7], S[8]
    wlo, whi, wn, wtot, stamp = S[9], S[10], S[11], S[12], S[13]
    _restat(c, X, head, nxt, size, lo, hi, cn, tot, wlo, whi, wn, wtot, dn, scale, gmin, base, ch)
    cost[c] = size[c] * tot[c]
    stamp[c] = rd


@njit
def _move_pass(X, ec, k, rd, C, S, nbt, nbc, dn, scale, gmin, base, ch, P, PV, buf):
    """Moves of single rows out of classes of more than k rows (module docstring)."""
    head, nxt, prv, size, lo, hi, cn, tot, cost = S[0], S[1], S[2], S[3], S[4], S[5], S[6], \
        S[7], S[8]
    wtot, stamp = S[12], S[13]
    hist, ok, scr = PV
    moves = 0
    for A in range(C):
        if size[A] <= k:
            continue
        fresh = stamp[A] >= rd - 1
        for q in range(nbc[A]):
            if stamp[nbt[A, q]] >= rd - 1:
                fresh = True
        if not fresh:
            continue
        m = members(head, nxt, A, buf)
        for t in range(m):
            if size[A] <= k:
                break
            r = buf[t]
            dA = (size[A] - 1) * wtot[r] - cost[A]
            best = -EPS - dA  # the joining class must add less than this
            bB = np.int64(-1)  # np.int64: no extra Literal compile (_numba_config)
            for q in range(nbc[A]):
                B = nbt[A, q]
                if tot[B] >= best:  # joining adds at least the class's own NCP
                    continue
                w = size[B] + 1
                lim = (best + cost[B]) / w
                s = _join_cost(X, r, lo, hi, cn, B, lim, dn, scale, gmin, base, ch)
                if s >= lim:
                    continue
                if not _still_ok(P, hist, ok, B, size[B] + 1, -1, r, scr):
                    continue
                best = w * s - cost[B]
                bB = B
            if bB < 0 or not _still_ok(P, hist, ok, A, size[A] - 1, r, -1, scr):
                continue
            move(head, nxt, prv, size, ec, r, A, bB)
            _changed(A, rd, X, S, dn, scale, gmin, base, ch)
            _changed(bB, rd, X, S, dn, scale, gmin, base, ch)
            _moved(P, hist, ok, A, size[A], r, -1, scr)
            _moved(P, hist, ok, bB, size[bB], -1, r, scr)
            moves += 1
    return moves


@njit
def _swap_pass(X, ec, rd, C, S, nbt, nbc, dn, scale, gmin, base, ch, P, PV, bufa, bufb):
    """Swaps of two rows between neighbouring classes (module docstring)."""
    head, nxt, prv, size, cost = S[0], S[1], S[2], S[3], S[8]
    wlo, whi, wn, wtot, stamp = S[9], S[10], S[11], S[12], S[13]
    hist, ok, scr = PV
    swaps = 0
    for A in range(C):
        for q in range(nbc[A]):
            B = nbt[A, q]
            if stamp[A] < rd - 1 and stamp[B] < rd - 1:
                continue
            ma = members(head, nxt, A, bufa)
            mb = members(head, nxt, B, bufb)
            sA = size[A]
            sB = size[B]
            best = cost[A] + cost[B] - EPS
            minb = np.inf
            for ib in range(mb):
                minb = min(minb, sB * wtot[bufb[ib]])
            br = np.int64(-1)  # np.int64: no extra Literal compile (_numba_config)
            bs = np.int64(-1)
            for ia in range(ma):
                r = bufa[ia]
                la = sA * wtot[r]  # A without r costs at least this
                if la + minb >= best:
                    continue
                for ib in range(mb):
                    s_ = bufb[ib]
                    lb = sB * wtot[s_]
                    if la + lb >= best:
                        continue
                    lim = (best - lb) / sA
                    ta = _join_cost(X, s_, wlo, whi, wn, r, lim, dn, scale, gmin, base, ch)
                    if ta >= lim:
                        continue
                    lim2 = (best - sA * ta) / sB
                    tb = _join_cost(X, r, wlo, whi, wn, s_, lim2, dn, scale, gmin, base, ch)
                    if tb >= lim2:
                        continue
                    if not (_still_ok(P, hist, ok, A, sA, r, s_, scr)
                            and _still_ok(P, hist, ok, B, sB, s_, r, scr)):
                        continue
                    best = sA * ta + sB * tb
                    br = r
                    bs = s_
            if br < 0:
                continue
            move(head, nxt, prv, size, ec, br, A, B)
            move(head, nxt, prv, size, ec, bs, B, A)
            _changed(A, rd, X, S, dn, scale, gmin, base, ch)
            _changed(B, rd, X, S, dn, scale, gmin, base, ch)
            _moved(P, hist, ok, A, size[A], br, bs, scr)
            _moved(P, hist, ok, B, size[B], bs, br, scr)
            swaps += 1
    return swaps


@njit
def _split_pass(X, ec, k, rd, C, S, dn, scale, gmin, base, ch, P, PV, buf, left, right):
    """Cut every class of >= 2k rows at its cheapest cut, depth first, while that lowers its
    cost (and, with models, both sides satisfy them). Returns (C, splits)."""
    head, nxt, prv, size, cost = S[0], S[1], S[2], S[3], S[8]
    hist, ok, scr = PV
    stk = np.empty(X.shape[0] // max(k, 1) + 2, np.int64)
    splits = 0
    for c0 in range(C):
        if size[c0] < 2 * k:
            continue
        stk[0] = c0
        top = 1
        while top > 0:
            top -= 1
            A = stk[top]
            if size[A] < 2 * k:
                continue
            m = members(head, nxt, A, buf)
            rows = np.sort(buf[:m])
            cst, j, cut = _best_split(X, rows, k, dn, scale, gmin, base, ch, left, right, False)
            if j < 0:
                cst, j, cut = _best_split(X, rows, k, dn, scale, gmin, base, ch, left, right,
                                          True)
            if j < 0 or cst >= cost[A] - EPS:
                continue
            vals = np.empty(m)
            for i in range(m):
                vals[i] = X[rows[i], j]
            order = np.argsort(vals, kind="mergesort")
            if P is not None:
                h1 = np.zeros(hist.shape[1])
                h2 = np.zeros(hist.shape[1])
                for i in range(m):
                    K.add_row(h1 if i < cut else h2, rows[order[i]], P, 1.0)
                if not (K.class_ok(h1, float(cut), P, scr)
                        and K.class_ok(h2, float(m - cut), P, scr)):
                    continue
                hist[A, :] = h1
                hist[C, :] = h2
                ok[A] = True
                ok[C] = True
            Bn = C
            C += 1
            for i in range(cut, m):
                r = rows[order[i]]
                move(head, nxt, prv, size, ec, r, A, Bn)
            _changed(A, rd, X, S, dn, scale, gmin, base, ch)
            _changed(Bn, rd, X, S, dn, scale, gmin, base, ch)
            splits += 1
            stk[top] = A
            stk[top + 1] = Bn
            top += 2
    return C, splits


def refine(X, ec, k, dn, scale, gmin, base, ch, P, M=8, rounds=8, tol=1e-3, clock=None):
    """Refine the partition ``ec`` (int64 (n,) IN/OUT, dense ids, every class >= k rows) as the
    module docstring says. Returns (number of classes, float64 (rounds run, 5): per round the
    moves, swaps, splits, cost before and cost after). ``clock``: a dict that collects the
    seconds of each pass (benchmarks)."""
    import time
    n, d = X.shape
    C, S, PV = _init(X, ec, k, dn, scale, gmin, base, ch, P)
    span = np.ones(d)  # a numeric dimension's range, a categorical one's number of leaves
    span[:dn] = scale[:dn]
    for t in range(d - dn):
        end = base[t + 1] if t + 1 < base.size else ch.shape[0]
        span[dn + t] = max(end - base[t], 1)
    buf_a = np.empty(n, np.int64)
    buf_b = np.empty(n, np.int64)
    left = np.empty(n)
    right = np.empty(n)
    stats = []
    cost = S[8]
    nbt = np.zeros((S[3].size, M), np.int64)
    nbc = np.full(S[3].size, -1, np.int64)
    for rd in range(rounds):
        before = float(cost[:C].sum())
        steps = []
        t0 = time.process_time()
        _neighbours(C, M, rd, S, dn, scale, gmin, base, ch, span, 4, nbt, nbc)
        t1 = time.process_time()
        steps.append(_move_pass(X, ec, k, rd, C, S, nbt, nbc, dn, scale, gmin, base, ch, P, PV,
                                buf_a))
        t2 = time.process_time()
        steps.append(_swap_pass(X, ec, rd, C, S, nbt, nbc, dn, scale, gmin, base, ch, P, PV,
                                buf_a, buf_b))
        t3 = time.process_time()
        C, splits = _split_pass(X, ec, k, rd, C, S, dn, scale, gmin, base, ch, P, PV, buf_a,
                                left, right)
        t4 = time.process_time()
        if clock is not None:
            for name, dt in zip(("neighbours", "moves", "swaps", "splits"),
                                (t1 - t0, t2 - t1, t3 - t2, t4 - t3)):
                clock[name] = clock.get(name, 0.0) + dt
        after = float(cost[:C].sum())
        stats.append((steps[0], steps[1], splits, before, after))
        if before - after <= tol * before:
            break
    return C, np.array(stats, dtype=np.float64).reshape(-1, 5)
