"""Closing a cluster under the privacy models (issue 13): the step the clustering algorithms share.

A clustering algorithm grows a cluster to the models' class size (k, ceil(1/max_risk), ...) as
its paper says. Before the cluster is closed, the algorithm asks ``cluster_ok`` (which is
``_kernels.class_ok``, the one definition of every model) and, while it is false, adds the
record ``best_fixer_*`` picks:

    dv[v] := shortfall(cluster + one row of value v) - shortfall(cluster), per sensitive value
    among the candidate records whose values lower the shortfall, the one the algorithm finds
    cheapest (its own cost: NCP of the cluster with the record for kmember; the distance to the
    seed for ika and kab), ties to the larger drop, then the smaller row id
    none left: the cluster stays as it is and the final pass (``enforce.repair``) merges it or
    suppresses it within max_suppression

``shortfall`` is a guide towards the predicate, not a second definition: it is 0 exactly when
``class_ok``'s l / t tests pass, per sensitive attribute (l - distinct) / l, (l - exp(entropy)) / l,
(r_1 - c (r_l + ... + r_m)) / n for recursive (c, l), and EMD - t; each added record lowers it, so
closing ends. Leftover records (``place_*``) join the cheapest cluster that still satisfies
every model with them, else the cheapest one (the final pass then repairs it).

Cost: ``value_deltas`` O(M · m_a) per added record (M sensitive values in all), a fixer scan
O(m · (d + a)) over m candidates; ``place_*`` O(C · (d + M)) per leftover.
"""
import numpy as np

from ..._numba_config import njit
from ...privacy import _kernels as K
from ._ncp import add_record, il_increase, ncp_with, new_stats, pair_dist

DROP = 1e-12  # a record "fixes" a cluster when it lowers the shortfall by more than this


@njit
def active(P):
    """True when some model looks at the sensitive values (closing has work to do)."""
    return K.has_class_models(P)


@njit
def cluster_ok(cnt, size, P, scr):
    """The cluster with histogram ``cnt`` and ``size`` rows satisfies every model."""
    return K.class_ok(cnt, size, P, scr)


@njit
def _attr_shortfall(cnt, a, n, P, scr):
    fp, ip, val_off = P[0], P[1], P[3]
    lo = val_off[a]
    hi = val_off[a + 1]
    s = 0.0
    lk = ip[0]
    if lk == 1:
        s += max(0.0, fp[1] - K.distinct_l(cnt, lo, hi)) / fp[1]
    elif lk == 2:
        s += max(0.0, fp[1] * (1.0 - K.EPS) - K.entropy_l(cnt, lo, hi)) / fp[1]
    elif lk == 3:
        buf = scr[3]
        m = 0
        for v in range(lo, hi):
            if cnt[v] > 0:
                buf[m] = cnt[v]
                m += 1
        if m > 0:
            r = np.sort(buf[:m])[::-1]
            tail = 0.0
            for q in range(int(np.ceil(fp[1])) - 1, m):
                tail += r[q]
            g = r[0] - fp[2] * tail
            if g >= 0.0:
                s += (g + 1e-6) / n
        else:
            s += 1.0
    if fp[3] >= 0.0 and n > 0:
        s += max(0.0, K.emd_of(cnt, a, n, P, scr) - fp[3] - K.EPS)
    return s


@njit
def value_deltas(cnt, size, P, scr, dv):
    """dv[v] (M,) := change of the shortfall when one row with value v joins the cluster (per
    attribute: a row brings one value of each)."""
    val_off = P[3]
    for a in range(val_off.shape[0] - 1):
        base = _attr_shortfall(cnt, a, size, P, scr)
        for v in range(val_off[a], val_off[a + 1]):
            cnt[v] += 1.0
            dv[v] = _attr_shortfall(cnt, a, size + 1, P, scr) - base
            cnt[v] -= 1.0


@njit
def row_delta(r, P, dv):
    codes, val_off = P[2], P[3]
    s = 0.0
    for a in range(codes.shape[1]):
        s += dv[val_off[a] + codes[r, a]]
    return s


@njit
def _better(v, d, r, bc, bd, best):
    """(cost v, drop d, record r) beats the best so far: lower cost, then larger drop, then id."""
    return v < bc or (v == bc and (d < bd or (d == bd and r < best)))


@njit
def best_fixer_ncp(ds, st, c, cnt, size, ids, m, P, scr, dv):
    """The record of ids[:m] that lowers cluster c's shortfall with the least NCP(c U {r}) (ties:
    larger drop, smaller id), or -1."""
    value_deltas(cnt, size, P, scr, dv)
    best, bc, bd = -1, np.inf, 0.0
    for i in range(m):
        r = ids[i]
        d = row_delta(r, P, dv)
        if d < -DROP:
            v = ncp_with(ds, st, c, r)
            if _better(v, d, r, bc, bd, best):
                best, bc, bd = r, v, d
    return best


@njit
def best_fixer_dist(ds, s, cnt, size, ids, m, labels, P, scr, dv):
    """The unassigned record (labels[r] < 0) of ids[:m] that lowers the cluster's shortfall
    closest to record s (ties: larger drop, smaller id), or -1."""
    value_deltas(cnt, size, P, scr, dv)
    best, bc, bd = -1, np.inf, 0.0
    for i in range(m):
        r = ids[i]
        d = row_delta(r, P, dv) if labels[r] < 0 else 0.0
        if d < -DROP:
            v = pair_dist(ds, s, r)
            if _better(v, d, r, bc, bd, best):
                best, bc, bd = r, v, d
    return best


@njit
def histograms_of(rows, labels, C, P):
    """(hist float64 (C, M+1), size float64 (C,)) of the rows ``rows`` with labels >= 0 (labels
    of other rows are not read)."""
    M = P[5].shape[0]
    hist = np.zeros((C, M + 1))
    size = np.zeros(C)
    for i in range(rows.shape[0]):
        c = labels[rows[i]]
        if c >= 0:
            K.add_row(hist[c], rows[i], P, 1.0)
            size[c] += 1.0
    return hist, size


@njit
def histograms(labels, C, P):
    """``histograms_of`` every row."""
    return histograms_of(np.arange(labels.shape[0]), labels, C, P)


@njit
def _ok_with(hist, size, c, r, P, scr):
    K.add_row(hist[c], r, P, 1.0)
    ok = K.class_ok(hist[c], size[c] + 1.0, P, scr)
    K.add_row(hist[c], r, P, -1.0)
    return ok


@njit
def place_cheapest(ds, st, rows, m, C, labels, members, P, scr_cols):
    """Each r of rows[:m] joins the cluster c < C with the least il_increase among those that
    satisfy every model with it (any cluster when none does); stats and labels updated. The
    clusters are those of ``members`` (the rows clustered, leftovers at -1). Without models this
    is ``_ncp.assign_to_cheapest``."""
    hist, size = histograms_of(members, labels, C, P)
    scr = np.empty((4, scr_cols))
    for i in range(m):
        r = rows[i]
        best = -1
        best_ok = False
        bv = np.inf
        for c in range(C):
            if size[c] == 0:
                continue
            ok = _ok_with(hist, size, c, r, P, scr)
            v = il_increase(ds, st, c, r)
            if (ok and not best_ok) or (ok == best_ok and v < bv):
                best = c
                best_ok = ok
                bv = v
        K.add_row(hist[best], r, P, 1.0)
        size[best] += 1.0
        add_record(ds, st, best, r)
        labels[r] = best


@njit
def place_nearest(ds, rows, m, centers, C, labels, P, scr_cols):
    """Each r of rows[:m] joins the cluster c < C whose center record is nearest among those that
    satisfy every model with it (any cluster when none does). Without models this is
    ``_ncp.assign_to_nearest``."""
    hist, size = histograms(labels, C, P)
    scr = np.empty((4, scr_cols))
    for i in range(m):
        r = rows[i]
        best = -1
        best_ok = False
        bv = np.inf
        for c in range(C):
            ok = _ok_with(hist, size, c, r, P, scr)
            v = pair_dist(ds, r, centers[c])
            if (ok and not best_ok) or (ok == best_ok and v < bv):
                best = c
                best_ok = ok
                bv = v
        K.add_row(hist[best], r, P, 1.0)
        size[best] += 1.0
        labels[r] = best


def packed_of(data):
    """(P, scr_cols, M) of the run's models for the kernels (k alone: an inactive P)."""
    from ...privacy import spec_of
    from ...privacy.spec import no_models
    spec = spec_of(data)
    if spec is None:
        return no_models(data.n).packed(), 1, 0
    return spec.packed(), spec.scr_cols, int(spec.p_glob.size)


@njit
def shortfall(cnt, size, P, scr):
    """The guide of the module doc summed over the sensitive attributes (0 iff l / t hold)."""
    s = 0.0
    for a in range(P[3].shape[0] - 1):
        s += _attr_shortfall(cnt, a, size, P, scr)
    return s


@njit
def drop_with(cnt, size, r, P, scr):
    """How much record r lowers the cluster's shortfall (> 0: it helps). O(M)."""
    before = shortfall(cnt, size, P, scr)
    K.add_row(cnt, r, P, 1.0)
    after = shortfall(cnt, size + 1.0, P, scr)
    K.add_row(cnt, r, P, -1.0)
    return before - after


@njit
def fix_split(ds, ids, side, k, P, scr_cols):
    """Close both halves of a split (info2means): while half X (ids with side == x) violates a
    model, the record of the other half Y that lowers X's shortfall with the least NCP(X U {r})
    moves to X, provided Y keeps k records and every model it satisfied. Returns the number of
    records moved; the caller checks the halves again (``class_ok``).
    O(moves · |ids| · (d + M))."""
    m = ids.shape[0]
    st = new_stats(ds, 2)
    hist = np.zeros((2, P[5].shape[0] + 1))
    size = np.zeros(2)
    for i in range(m):
        x = 1 if side[i] else 0
        add_record(ds, st, x, ids[i])
        K.add_row(hist[x], ids[i], P, 1.0)
        size[x] += 1.0
    scr = np.empty((4, scr_cols))
    moved = 0
    for x in range(2):
        y = 1 - x
        y_ok = K.class_ok(hist[y], size[y], P, scr)
        while not K.class_ok(hist[x], size[x], P, scr):
            best = -1
            bv = np.inf
            for i in range(m):
                if (1 if side[i] else 0) != y or size[y] - 1.0 < k:
                    continue
                r = ids[i]
                if drop_with(hist[x], size[x], r, P, scr) <= DROP:
                    continue
                if y_ok:
                    K.add_row(hist[y], r, P, -1.0)
                    keeps = K.class_ok(hist[y], size[y] - 1.0, P, scr)
                    K.add_row(hist[y], r, P, 1.0)
                    if not keeps:
                        continue
                v = ncp_with(ds, st, x, r)
                if v < bv:
                    bv = v
                    best = i
            if best < 0:
                break
            r = ids[best]
            side[best] = x == 1
            K.add_row(hist[y], r, P, -1.0)
            K.add_row(hist[x], r, P, 1.0)
            size[y] -= 1.0
            size[x] += 1.0
            add_record(ds, st, x, r)
            moved += 1
    return moved


@njit
def halves_ok(ids, side, P, scr_cols):
    """(half side == False satisfies every model, half side == True does). Serial O(|ids| + M)."""
    M = P[5].shape[0]
    h0 = np.zeros(M + 1)
    h1 = np.zeros(M + 1)
    n1 = 0
    for i in range(ids.shape[0]):
        if side[i]:
            K.add_row(h1, ids[i], P, 1.0)
            n1 += 1
        else:
            K.add_row(h0, ids[i], P, 1.0)
    scr = np.empty((4, scr_cols))
    return K.class_ok(h0, ids.shape[0] - n1, P, scr), K.class_ok(h1, n1, P, scr)
