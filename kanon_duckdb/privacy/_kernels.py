"""Numba kernels of the privacy models: per-class predicates over histograms of the sensitive
attribute(s), and the passes that apply them to a whole partition or to one Mondrian cut.

A model set reaches the kernels as one tuple ``P`` (see ``spec.PrivacySpec.packed``):

    fp        float64 [min_class_size, l, c, t]     (t < 0: no t-closeness)
    ip        int64   [l_kind, n_attr]              (l_kind 0 none, 1 distinct, 2 entropy, 3 recursive)
    codes     int32 (n, n_attr)  value code of each row per sensitive attribute, 0..m_a-1
    val_off   int64 (n_attr+1,)  the histogram of attribute a is the slice val_off[a]:val_off[a+1]
    t_kind    int64 (n_attr,)    0 equal, 1 ordered, 2 hierarchical ground distance
    p_glob    float64 (M,)       each attribute's distribution over the whole table
    h_parent  int32   parent (local node id, -1 at the root) of each node of each hierarchy
    h_node_off int64 (n_attr+1,) node slice of attribute a (empty unless hierarchical)
    h_leaf    int32 (M,)         local node id of value code v (hierarchical attributes)
    h_weight  float64            height(node) / height(tree), the ground distance of a node
    h_order   int32              local node ids bottom-up (children before parents)

Scratch ``scr`` float64 (4, max(M, nodes)+1) per thread. Counts are float64.
"""
import numpy as np
from numba import prange

from .._numba_config import njit, njit_parallel

EPS = 1e-9  # tolerance on l (entropy) and t comparisons


@njit
def entropy_l(cnt, lo, hi):
    """exp(entropy) of the histogram cnt[lo:hi] (natural log), 0 for an empty one."""
    n = 0.0
    for v in range(lo, hi):
        n += cnt[v]
    if n <= 0:
        return 0.0
    h = 0.0
    for v in range(lo, hi):
        if cnt[v] > 0:
            q = cnt[v] / n
            h -= q * np.log(q)
    return np.exp(h)


@njit
def distinct_l(cnt, lo, hi):
    m = 0
    for v in range(lo, hi):
        if cnt[v] > 0:
            m += 1
    return m


@njit
def recursive_l(cnt, lo, hi, c, buf):
    """Largest l such that r_1 < c * (r_l + ... + r_m), r the class's counts in descending
    order (Machanavajjhala et al. 2007); 0 if none. ``buf`` scratch of >= hi-lo."""
    m = 0
    for v in range(lo, hi):
        if cnt[v] > 0:
            buf[m] = cnt[v]
            m += 1
    if m == 0:
        return 0
    r = np.sort(buf[:m])[::-1]
    tail = 0.0
    best = 0
    for l in range(m, 0, -1):  # tail = r_l + ... + r_m grows as l falls
        tail += r[l - 1]
        if r[0] < c * tail:
            best = l
            break
    return best


@njit
def emd_equal(cnt, lo, hi, n, p):
    """Equal ground distance: 1/2 sum_v |q_v - p_v|."""
    s = 0.0
    for v in range(lo, hi):
        s += abs(cnt[v] / n - p[v])
    return 0.5 * s


@njit
def emd_ordered(cnt, lo, hi, n, p):
    """Ordered distance over m ordered values: sum_i |sum_{j<=i} (q_j - p_j)| / (m - 1)."""
    m = hi - lo
    if m <= 1:
        return 0.0
    cum = 0.0
    s = 0.0
    for v in range(lo, hi - 1):
        cum += cnt[v] / n - p[v]
        s += abs(cum)
    return s / (m - 1)


@njit
def emd_hierarchical(cnt, lo, hi, n, p, parent, leaf, weight, order, scr):
    """Hierarchical distance (Li et al. 2007): sum over inner nodes N of
    height(N)/H * min(pos_extra(N), neg_extra(N)). ``parent``/``weight``/``order`` are the
    attribute's node slices, ``leaf`` its value slice; ``scr`` (3, >= nodes) scratch."""
    nn = parent.shape[0]
    extra = scr[0]
    pos = scr[1]
    neg = scr[2]
    for u in range(nn):
        extra[u] = 0.0
        pos[u] = 0.0
        neg[u] = 0.0
    for v in range(lo, hi):
        extra[leaf[v - lo]] += p[v] - cnt[v] / n
    for i in range(nn):
        u = order[i]
        pa = parent[u]
        if pa >= 0:
            e = extra[u]
            if e > 0:
                pos[pa] += e
            else:
                neg[pa] -= e
            extra[pa] += e
    s = 0.0
    for u in range(nn):
        s += weight[u] * min(pos[u], neg[u])
    return s


@njit
def emd_of(cnt, a, n, P, scr):
    """EMD of attribute a of one class against the table."""
    val_off, t_kind, p_glob = P[3], P[4], P[5]
    h_parent, h_node_off, h_leaf, h_weight, h_order = P[6], P[7], P[8], P[9], P[10]
    lo = val_off[a]
    hi = val_off[a + 1]
    kind = t_kind[a]
    if kind == 0:
        return emd_equal(cnt, lo, hi, n, p_glob)
    if kind == 1:
        return emd_ordered(cnt, lo, hi, n, p_glob)
    no = h_node_off[a]
    ne = h_node_off[a + 1]
    return emd_hierarchical(cnt, lo, hi, n, p_glob, h_parent[no:ne], h_leaf[lo:hi],
                            h_weight[no:ne], h_order[no:ne], scr)


@njit
def class_ok(cnt, n, P, scr):
    """True when a class of n rows with histogram ``cnt`` (float64 (M,)) satisfies every model."""
    fp, ip, val_off = P[0], P[1], P[3]
    if n < fp[0] or n <= 0:
        return False
    lk = ip[0]
    for a in range(ip[1]):
        lo = val_off[a]
        hi = val_off[a + 1]
        if lk == 1:
            if distinct_l(cnt, lo, hi) < fp[1]:
                return False
        elif lk == 2:
            if entropy_l(cnt, lo, hi) < fp[1] * (1.0 - EPS):
                return False
        elif lk == 3:
            if recursive_l(cnt, lo, hi, fp[2], scr[3]) < fp[1]:
                return False
        if fp[3] >= 0.0:
            if emd_of(cnt, a, n, P, scr) > fp[3] + EPS:
                return False
    return True


@njit
def has_class_models(P):
    """True when some model looks at the sensitive values (else class size alone decides)."""
    return P[1][1] > 0 and (P[1][0] > 0 or P[0][3] >= 0.0)


@njit
def add_row(cnt, r, P, w):
    codes = P[2]
    val_off = P[3]
    for a in range(codes.shape[1]):
        cnt[val_off[a] + codes[r, a]] += w


@njit
def split_ok(W, perm, s, e, j, cut, P, hist, scr):
    """Both sides of cutting rows s:e of W at ``W[:, j] <= cut`` satisfy every model.
    ``perm`` maps positions to original rows (the rows of P's codes). hist (2, M) scratch.
    O((e - s) * n_attr + M). ``P`` None (k alone): True, and numba prunes the rest, so a
    kernel called with None compiles none of the model checks."""
    if P is None:
        return True
    if not has_class_models(P):
        return True
    hist[0, :] = 0.0
    hist[1, :] = 0.0
    nl = np.int64(0)
    for i in range(s, e):
        if W[i, j] <= cut:
            add_row(hist[0], perm[i], P, 1.0)
            nl += 1
        else:
            add_row(hist[1], perm[i], P, 1.0)
    return class_ok(hist[0], nl, P, scr) and class_ok(hist[1], (e - s) - nl, P, scr)


@njit
def group_rows(ec, C):
    """(members int64 (n,), start int64 (C+1,)): rows by class id, counting sort, O(n + C)."""
    start = np.zeros(C + 1, dtype=np.int64)
    for i in range(ec.shape[0]):
        start[ec[i] + 1] += 1
    for c in range(C):
        start[c + 1] += start[c]
    pos = start[:-1].copy()
    members = np.empty(ec.shape[0], dtype=np.int64)
    for i in range(ec.shape[0]):
        members[pos[ec[i]]] = i
        pos[ec[i]] += 1
    return members, start


@njit
def row_weight(row_w, i):
    """Rows that encoded row i stands for: row_w[i] (a histogram of distinct tuples), or 1.0
    when ``row_w`` is empty."""
    return row_w[i] if row_w.shape[0] > 0 else 1.0


@njit_parallel
def classes_ok(ec, C, P, scr_cols, row_w):
    """bool (C,): class c (rows with ec == c) satisfies every model (an id without rows counts
    as satisfying). ``row_w`` float64 (n,) or empty: see ``row_weight``. O(n + C * M)."""
    members, start = group_rows(ec, C)
    M = P[5].shape[0]
    ok = np.empty(C, dtype=np.bool_)
    n_chunks = min(C, 64)
    for t in prange(n_chunks):
        cnt = np.zeros(M + 1)
        scr = np.empty((4, scr_cols))
        for c in range(t * C // n_chunks, (t + 1) * C // n_chunks):
            size = 0.0
            for i in range(start[c], start[c + 1]):
                w = row_weight(row_w, members[i])
                add_row(cnt, members[i], P, w)
                size += w
            # an empty id publishes nothing
            ok[c] = start[c + 1] == start[c] or class_ok(cnt, size, P, scr)
            for i in range(start[c], start[c + 1]):
                add_row(cnt, members[i], P, -row_weight(row_w, members[i]))
    return ok


@njit
def class_hist(ec, C, P, row_w):
    """float64 (C, M): histogram of every class (for merging in the repair pass)."""
    M = P[5].shape[0]
    h = np.zeros((C, M))
    for i in range(ec.shape[0]):
        add_row(h[ec[i]], i, P, row_weight(row_w, i))
    return h
