"""Record exchange between the clusters of a clustering, guided by another clustering (numba).

The solution-space move of the black-hole search (``_blackhole``): a star (a k-anonymous
clustering, int64 labels) moves toward the black hole (another clustering, the *guide*) by
exchanging records between its own clusters:

- the records of each tried star cluster A are taken grouped by guide cluster (record order
  inside a group); for a record r, the candidate destinations are the star clusters that hold r's
  guide-mates (the other records of r's cluster in the guide; the first 4k + 64 of them in record
  order when the guide's cluster is larger, as bha's random ones can be): the ``max_cand`` of them
  holding the most mates (ties: the one holding the smallest-id mate first). Records of one guide
  cluster share that list until an exchange changes the labels;
- *relocation*: r moves to D (allowed when |A| > k and |D| < max_size);
- *swap*: r moves to D and one record x of D moves to A (sizes unchanged; the best x among the
  first 4k + 64 members of D, i.e. all of them when |D| <= 2k-1 as in kab);
- the best of these by exact change of the star's total IL (sum over classes |e|·NCP(e)) is
  applied when it lowers the IL by more than a relative 1e-12; otherwise r stays.

``exchange_worst`` picks the tried clusters itself: the ceil(share·m) clusters of highest NCP
among m allowed ones, worst first, and may stop after ``patience`` tried clusters in a row
without an applied exchange.

Costs are exact and incremental: per cluster, the two smallest and two largest values (with
multiplicity) of every numeric QI and how many members hold the smallest / largest, the NULL
count, and the same for the leaf ordinals of every categorical QI (the LCA of a set of leaves is
the LCA of its smallest and largest ordinal) give NCP(e - x + r) in O(d) for any x in e and any
r. Removing a member is O(d) unless it holds an extreme held by at most two members (or the
runner-up of one held once); then the cluster's statistics are recomputed, O(|e| d). The counts
keep that rare when many rows tie on a leaf (bha's large random classes: 6.0 s -> 1.7 s CPU at
k = 40 on Adult). A tried record costs O(d · sum of its candidates' sizes), capped as above.
Class sizes stay in [k, max_size] when they start there (relocations only leave classes > k
and enter classes < max_size; swaps keep sizes). The star's IL never increases.
"""
import numpy as np

from ..._numba_config import njit
from .._extremes import fold
from .._member_lists import lists, members, move
from ._ncp import cat_cost

_INT32_MAX = np.iinfo(np.int32).max


@njit
def _fold_into(lo, hi, slot, j, v):
    """Fold v into the two smallest values lo[slot, 0, j] <= lo[slot, 1, j] (with multiplicity)
    and lo[slot, 2, j], the number of members holding the smallest, and likewise the two largest
    in hi (``_extremes.fold``)."""
    (lo[slot, 0, j], lo[slot, 1, j], lo[slot, 2, j],
     hi[slot, 0, j], hi[slot, 1, j], hi[slot, 2, j]) = fold(
        v, lo[slot, 0, j], lo[slot, 1, j], lo[slot, 2, j],
        hi[slot, 0, j], hi[slot, 1, j], hi[slot, 2, j])


@njit
def _push(ds, slot, r, nlo, nhi, nnn, clo, chi):
    """Add record r to the top-2 statistics in ``slot``. O(d)."""
    for j in range(ds.num.shape[1]):
        if ds.num_null[r, j]:
            nnn[slot, j] += 1
        else:
            _fold_into(nlo, nhi, slot, j, ds.num[r, j])
    for j in range(ds.cat.shape[1]):
        _fold_into(clo, chi, slot, j, ds.cat[r, j])


@njit
def _end_kept(a, slot, j, v):
    """False when removing a member of value v would leave the two extreme values of
    a[slot, :, j] unknown: v is the extreme held by at most two members (the second one would
    be needed), or v is the runner-up of an extreme held once."""
    if v == a[slot, 0, j]:
        return a[slot, 2, j] >= 3
    return v != a[slot, 1, j]


@njit
def _pop_needs_rescan(ds, slot, r, nlo, nhi, nnn, clo, chi):
    """Remove record r from the statistics in ``slot`` when that is possible in O(d) and return
    False; return True (statistics untouched) when they must be recomputed from the members:
    r holds an extreme value that at most two members hold, or the runner-up of one held once.
    (Many rows tie on a categorical leaf: removing one of them is O(d) here.)"""
    for j in range(ds.num.shape[1]):
        if not ds.num_null[r, j]:
            v = ds.num[r, j]
            if not (_end_kept(nlo, slot, j, v) and _end_kept(nhi, slot, j, v)):
                return True
    for j in range(ds.cat.shape[1]):
        v = ds.cat[r, j]
        if not (_end_kept(clo, slot, j, v) and _end_kept(chi, slot, j, v)):
            return True
    for j in range(ds.num.shape[1]):
        if ds.num_null[r, j]:
            nnn[slot, j] -= 1
        else:
            v = ds.num[r, j]
            if v == nlo[slot, 0, j]:
                nlo[slot, 2, j] -= 1
            if v == nhi[slot, 0, j]:
                nhi[slot, 2, j] -= 1
    for j in range(ds.cat.shape[1]):
        v = ds.cat[r, j]
        if v == clo[slot, 0, j]:
            clo[slot, 2, j] -= 1
        if v == chi[slot, 0, j]:
            chi[slot, 2, j] -= 1
    return False


@njit
def _fill_top2(ds, head, nxt, c, slot, nlo, nhi, nnn, clo, chi):
    """Top-2 statistics of cluster c (members head[c] -> nxt) into slot ``slot``. O(|c| d)."""
    for j in range(ds.num.shape[1]):
        nlo[slot, 0, j] = np.inf
        nlo[slot, 1, j] = np.inf
        nlo[slot, 2, j] = 0
        nhi[slot, 0, j] = -np.inf
        nhi[slot, 1, j] = -np.inf
        nhi[slot, 2, j] = 0
        nnn[slot, j] = 0
    for j in range(ds.cat.shape[1]):
        clo[slot, 0, j] = _INT32_MAX
        clo[slot, 1, j] = _INT32_MAX
        clo[slot, 2, j] = 0
        chi[slot, 0, j] = -1
        chi[slot, 1, j] = -1
        chi[slot, 2, j] = 0
    r = head[c]
    while r >= 0:
        _push(ds, slot, r, nlo, nhi, nnn, clo, chi)
        r = nxt[r]


@njit
def _top2_of_rows(ds, rows, a, b, slot, nlo, nhi, nnn, clo, chi):
    """Top-2 statistics of the records rows[a:b] into ``slot`` (empty: the sentinels), one QI at
    a time with the running values in registers. O((b - a) d); the same values as ``_push``
    over the records in any order."""
    for j in range(ds.num.shape[1]):
        l0, l1, lc = np.inf, np.inf, 0
        h0, h1, hc = -np.inf, -np.inf, 0
        nn = 0
        for i in range(a, b):
            r = rows[i]
            if ds.num_null[r, j]:
                nn += 1
                continue
            l0, l1, lc, h0, h1, hc = fold(ds.num[r, j], l0, l1, lc, h0, h1, hc)
        nlo[slot, 0, j], nlo[slot, 1, j], nlo[slot, 2, j] = l0, l1, lc
        nhi[slot, 0, j], nhi[slot, 1, j], nhi[slot, 2, j] = h0, h1, hc
        nnn[slot, j] = nn
    for j in range(ds.cat.shape[1]):
        m0, m1, mc = _INT32_MAX, _INT32_MAX, 0
        x0, x1, xc = -1, -1, 0
        for i in range(a, b):
            m0, m1, mc, x0, x1, xc = fold(ds.cat[rows[i], j], m0, m1, mc, x0, x1, xc)
        clo[slot, 0, j], clo[slot, 1, j], clo[slot, 2, j] = m0, m1, mc
        chi[slot, 0, j], chi[slot, 1, j], chi[slot, 2, j] = x0, x1, xc


@njit
def rows_by_label(lab, C):
    """The records grouped by label (record order inside a label): (rows int64 (n,),
    start int64 (C+1,)), label c's records are rows[start[c]:start[c+1]]. O(n + C)."""
    n = lab.shape[0]
    start = np.zeros(C + 1, dtype=np.int64)
    for r in range(n):
        start[lab[r] + 1] += 1
    for c in range(C):
        start[c + 1] += start[c]
    pos = start[:C].copy()
    rows = np.empty(n, dtype=np.int64)
    for r in range(n):
        rows[pos[lab[r]]] = r
        pos[lab[r]] += 1
    return rows, start


@njit
def _fill_all(ds, lab, C, nlo, nhi, nnn, clo, chi, ncp):
    """Top-2 statistics and NCP of every cluster of labels 0..C-1 (empty ones: NCP 0), cluster
    by cluster over the records grouped by label. O(n d)."""
    rows, start = rows_by_label(lab, C)
    for c in range(C):
        _top2_of_rows(ds, rows, start[c], start[c + 1], c, nlo, nhi, nnn, clo, chi)
        ncp[c] = (_ncp_exchanged(ds, c, -1, -1, nlo, nhi, nnn, clo, chi)
                  if start[c + 1] > start[c] else 0.0)


@njit
def _may_change(ds, slot, y, nlo, nhi, nnn, clo, chi):
    """False when removing member y leaves the cluster in ``slot`` with the same ranges and NULL
    status (y holds no extreme value that only it holds, and is not its only NULL), so that
    NCP(e - y + r) = NCP(e + r) for every r (the same arithmetic in ``_ncp_exchanged``). O(d)."""
    for j in range(ds.num.shape[1]):
        if ds.num_null[y, j]:
            if nnn[slot, j] == 1:
                return True
        else:
            v = ds.num[y, j]
            if (v == nlo[slot, 0, j] and nlo[slot, 1, j] != v) \
                    or (v == nhi[slot, 0, j] and nhi[slot, 1, j] != v):
                return True
    for j in range(ds.cat.shape[1]):
        v = ds.cat[y, j]
        if (v == clo[slot, 0, j] and clo[slot, 1, j] != v) \
                or (v == chi[slot, 0, j] and chi[slot, 1, j] != v):
            return True
    return False


@njit
def _update(ds, head, nxt, c, out_r, in_r, nlo, nhi, nnn, clo, chi, ncp):
    """Statistics and NCP of cluster c after out_r left and in_r joined (-1: none; the member
    lists already changed): O(d), or O(|c| d) when out_r held an extreme value."""
    if out_r >= 0 and _pop_needs_rescan(ds, c, out_r, nlo, nhi, nnn, clo, chi):
        _fill_top2(ds, head, nxt, c, c, nlo, nhi, nnn, clo, chi)
    elif in_r >= 0:
        _push(ds, c, in_r, nlo, nhi, nnn, clo, chi)
    ncp[c] = _ncp_exchanged(ds, c, -1, -1, nlo, nhi, nnn, clo, chi)


@njit
def _range_exchanged(lo_a, hi_a, slot, j, has_out, out_v, has_in, in_v):
    """(min, max) on QI j of the cluster in ``slot`` without a member of value out_v (when
    has_out) and with in_v (when has_in), from its two smallest / largest values."""
    lo = lo_a[slot, 0, j]
    hi = hi_a[slot, 0, j]
    if has_out:
        if out_v == lo:
            lo = lo_a[slot, 1, j]
        if out_v == hi:
            hi = hi_a[slot, 1, j]
    if has_in:
        lo = min(lo, in_v)
        hi = max(hi, in_v)
    return lo, hi


@njit
def _ncp_exchanged(ds, slot, out_r, in_r, nlo, nhi, nnn, clo, chi):
    """NCP of (cluster in ``slot``) - {out_r} + {in_r}; -1 for no removal / no addition. O(d).

    out_r must be a member of the cluster and the result must not be empty (the statistics of
    an empty cluster hold sentinels, not leaves: reading them is out of bounds). Terms are summed in
    the order of ``_ncp.cluster_ncp``, so an unchanged cluster gives the same value."""
    s = 0.0
    for j in range(ds.num.shape[1]):
        nn = nnn[slot, j]
        if out_r >= 0 and ds.num_null[out_r, j]:
            nn -= 1
        if in_r >= 0 and ds.num_null[in_r, j]:
            nn += 1
        if nn > 0:
            s += ds.null_cost[j]
            continue
        lo, hi = _range_exchanged(nlo, nhi, slot, j, out_r >= 0 and not ds.num_null[out_r, j],
                                  ds.num[out_r, j], in_r >= 0, ds.num[in_r, j])
        s += (hi - lo) * ds.inv_range[j]
    for j in range(ds.cat.shape[1]):
        lo, hi = _range_exchanged(clo, chi, slot, j, out_r >= 0, ds.cat[out_r, j], in_r >= 0,
                                  ds.cat[in_r, j])
        s += cat_cost(ds, j, lo, hi)
    return s


@njit
def _stats(ds, C):
    """Empty top-2 statistics arrays (nlo, nhi, nnn, clo, chi) and NCPs for C clusters."""
    dn = ds.num.shape[1]
    dc = ds.cat.shape[1]
    return (np.empty((C, 3, dn)), np.empty((C, 3, dn)), np.empty((C, dn), dtype=np.int64),
            np.empty((C, 3, dc), dtype=np.int32), np.empty((C, 3, dc), dtype=np.int32),
            np.zeros(C))


@njit
def cluster_ncps(ds, lab, C):
    """NCP of every cluster of labels 0..C-1 (float64 (C,)), by the top-2 statistics. O(n d)."""
    nlo, nhi, nnn, clo, chi, ncp = _stats(ds, C)
    _fill_all(ds, lab, C, nlo, nhi, nnn, clo, chi, ncp)
    return ncp


@njit
def _core_with(ds, slot, r, nlo, nhi, nnn, clo, chi):
    """A lower bound of NCP(e - x + r) over every member x of the cluster in ``slot``. O(d).

    Removing one member leaves at least the inner range (second smallest .. second largest
    value, leaf ordinal) and all but one NULL, and NCP only grows with the range."""
    s = 0.0
    for j in range(ds.num.shape[1]):
        if nnn[slot, j] > 1 or ds.num_null[r, j]:
            s += ds.null_cost[j]
            continue
        v = ds.num[r, j]
        s += (max(nhi[slot, 1, j], v) - min(nlo[slot, 1, j], v)) * ds.inv_range[j]
    for j in range(ds.cat.shape[1]):
        v = ds.cat[r, j]
        s += cat_cost(ds, j, min(clo[slot, 1, j], v), max(chi[slot, 1, j], v))
    return s


@njit
def exchange_toward(ds, lab, C, guide, n_guide, tried, k, max_size, max_cand):
    """Move the clustering ``lab`` toward ``guide`` by record exchanges (module docstring).

    lab      int64 (n,) IN/OUT labels 0..C-1 (changed in place; C is unchanged)
    guide    int64 (n,) IN labels 0..n_guide-1 of the guiding clustering (the black hole)
    tried    int64 (m,) IN the clusters of ``lab`` whose records try to move, in this order
    Returns (relocations, swaps) applied. Cost O(n d) plus, per tried record, O(d) per candidate
    cluster and O(d · min(|D|, 4k + 64)) for a candidate D whose swaps are not ruled out by the
    bound ``_core_with``.
    """
    nlo, nhi, nnn, clo, chi, ncp = _stats(ds, C)
    _fill_all(ds, lab, C, nlo, nhi, nnn, clo, chi, ncp)
    rel, sw, _ = _exchange(ds, lab, C, guide, n_guide, tried, k, max_size, max_cand,
                           np.int64(0),  # exchange_worst's specialization (_numba_config)
                           nlo, nhi, nnn, clo, chi, ncp)
    return rel, sw


@njit
def exchange_worst(ds, lab, C, guide, n_guide, share, among, k, max_size, max_cand, patience):
    """``exchange_toward`` with tried = the ceil(share·m) clusters of highest NCP, worst first
    (ties: lower id), among the m clusters where the bool mask ``among`` (C,) is True (length 0:
    all C clusters). The move stops early after ``patience`` tried clusters in a row without an
    applied exchange (0: never). Returns (relocations, swaps, clusters tried).
    O(n d + C log C) plus the move.
    """
    nlo, nhi, nnn, clo, chi, ncp = _stats(ds, C)
    _fill_all(ds, lab, C, nlo, nhi, nnn, clo, chi, ncp)
    order = np.argsort(-ncp, kind="mergesort")
    pool = C if among.shape[0] == 0 else int(among.sum())
    want = min(pool, int(np.ceil(share * pool)))
    tried = np.empty(want, dtype=np.int64)
    m = 0
    for i in range(C):
        if m == want:
            break
        if among.shape[0] == 0 or among[order[i]]:
            tried[m] = order[i]
            m += 1
    return _exchange(ds, lab, C, guide, n_guide, tried[:m], k, max_size, max_cand, patience,
                     nlo, nhi, nnn, clo, chi, ncp)


@njit
def _exchange(ds, lab, C, guide, n_guide, tried, k, max_size, max_cand, patience, nlo, nhi, nnn,
              clo, chi, ncp):
    """The move of ``exchange_toward`` from the statistics of every cluster (``_fill_all``);
    stops after ``patience`` (> 0) tried clusters in a row without an applied exchange.
    Returns (relocations, swaps, clusters tried)."""
    n = lab.shape[0]
    max_mates = 4 * k + 64  # guide-mates read per record (all of them in a class of <= 2k-1)
    head, nxt, prv, size = lists(lab, C)
    ghead = np.full(n_guide, -1, dtype=np.int64)
    gnxt = np.full(n, -1, dtype=np.int64)
    for i in range(n - 1, -1, -1):
        gnxt[i] = ghead[guide[i]]
        ghead[guide[i]] = i
    buf = np.empty(n, dtype=np.int64)
    gmax = 0
    for g in range(n_guide):
        m = 0
        x = ghead[g]
        while x >= 0:
            m += 1
            x = gnxt[x]
        gmax = max(gmax, m)
    cand = np.empty(gmax + 1, dtype=np.int64)
    cnt = np.empty(gmax + 1, dtype=np.int64)
    relocations = 0
    swaps = 0
    idle = 0
    done = 0
    for t in range(tried.shape[0]):
        if patience > 0 and idle >= patience:
            break
        done += 1
        applied = relocations + swaps
        A = tried[t]
        m = members(head, nxt, A, buf)
        # A's records grouped by guide cluster (record order inside a group): records of one
        # guide cluster share their candidate list until a move changes the labels
        by_guide = buf[:m][np.argsort(guide[buf[:m]], kind="mergesort")]
        listed = -1  # guide cluster whose candidates are in cand[:n_all] (-1: none, or stale)
        n_all = 0
        for i in range(m):
            r = by_guide[i]
            if lab[r] != A:
                continue
            if guide[r] != listed:
                # distinct star clusters of r's guide-mates, most mates first (ties: first seen)
                n_all = 0
                seen = 0
                x = ghead[guide[r]]
                while x >= 0 and seen < max_mates:
                    seen += 1
                    d = lab[x]
                    if d != A:
                        q = 0
                        while q < n_all and cand[q] != d:
                            q += 1
                        if q == n_all:
                            cand[n_all] = d
                            cnt[n_all] = 0
                            n_all += 1
                        cnt[q] += 1
                        while q > 0 and cnt[q] > cnt[q - 1]:
                            cand[q], cand[q - 1] = cand[q - 1], cand[q]
                            cnt[q], cnt[q - 1] = cnt[q - 1], cnt[q]
                            q -= 1
                    x = gnxt[x]
                listed = guide[r]
            nc = n_all
            if nc == 0:
                continue
            nc = min(nc, max_cand)
            il_a = size[A] * ncp[A]
            # NCP(A - r); an empty A costs nothing (and has no statistics to read)
            a_without = _ncp_exchanged(ds, A, r, -1, nlo, nhi, nnn, clo, chi) if size[A] > 1 else 0.0
            widens = a_without < ncp[A]
            best = 0.0
            kind = 0
            best_d = -1
            best_x = -1
            for q in range(nc):
                D = cand[q]
                old = il_a + size[D] * ncp[D]
                tol = -1e-12 * old
                d_with = _ncp_exchanged(ds, D, -1, r, nlo, nhi, nnn, clo, chi)  # NCP(D + r)
                if size[A] > k and size[D] < max_size:
                    delta = (size[A] - 1) * a_without + (size[D] + 1) * d_with - old
                    if delta < tol and delta < best:
                        best = delta
                        kind = 1
                        best_d = D
                # swaps: only when r widens A (else A cannot shrink; a swap that narrows D is
                # found from D's side), and only when the bound lets some swap with D win
                if not widens:
                    continue
                bound = size[A] * a_without \
                    + size[D] * _core_with(ds, D, r, nlo, nhi, nnn, clo, chi) - old
                if bound >= min(tol, best):
                    continue
                y = head[D]
                scanned = 0
                while y >= 0 and scanned < max_mates:  # the first 4k + 64 members of D
                    scanned += 1
                    # D's part first: NCP(D + r) unless y holds an extreme of D; the swap is
                    # skipped when even A - r (a lower bound of A - r + y) cannot make it win
                    d_part = size[D] * (_ncp_exchanged(ds, D, y, r, nlo, nhi, nnn, clo, chi)
                                        if _may_change(ds, D, y, nlo, nhi, nnn, clo, chi)
                                        else d_with)
                    if size[A] * a_without + d_part - old < min(tol, best):
                        delta = size[A] * _ncp_exchanged(ds, A, r, y, nlo, nhi, nnn, clo, chi) \
                            + d_part - old
                        if delta < tol and delta < best:
                            best = delta
                            kind = 2
                            best_d = D
                            best_x = y
                    y = nxt[y]
            if kind == 0:
                continue
            listed = -1  # labels change: the next record lists its candidates afresh
            D = best_d
            move(head, nxt, prv, size, lab, r, A, D)
            if kind == 1:
                relocations += 1
            else:
                move(head, nxt, prv, size, lab, best_x, D, A)
                swaps += 1
            _update(ds, head, nxt, A, r, best_x, nlo, nhi, nnn, clo, chi, ncp)
            _update(ds, head, nxt, D, best_x, r, nlo, nhi, nnn, clo, chi, ncp)
        idle = idle + 1 if relocations + swaps == applied else 0
    return relocations, swaps, done
