"""Record exchange between the clusters of a clustering, guided by another clustering (numba).

The solution-space move of the black-hole search (``_blackhole``): a star (a k-anonymous
clustering, int64 labels) moves toward the black hole (another clustering, the *guide*) by
exchanging records between its own clusters:

- for a record r of a tried star cluster A, the candidate destinations are the star clusters that
  hold r's guide-mates (the other records of r's cluster in the guide; the first 4k + 64 of them
  in record order when the guide's cluster is larger, as bha's random ones can be): the
  ``max_cand`` of them holding the most mates (ties: the one holding the smallest-id mate first);
- *relocation*: r moves to D (allowed when |A| > k and |D| < max_size);
- *swap*: r moves to D and one record x of D moves to A (sizes unchanged; the best x of D);
- the best of these by exact change of the star's total IL (sum over classes |e|·NCP(e)) is
  applied when it lowers the IL by more than a relative 1e-12; otherwise r stays.

Costs are exact and incremental: per cluster, the two smallest and two largest values of every
numeric QI, the NULL count and the two smallest / largest leaf ordinals of every categorical QI
(the LCA of a set of leaves is the LCA of its smallest and largest ordinal) give NCP(e - x + r)
in O(d) for any x in e and any r. A tried record costs O(d · sum of its candidates' sizes).
Class sizes stay in [k, max_size] when they start there (relocations only leave classes > k
and enter classes < max_size; swaps keep sizes). The star's IL never increases.
"""
import numpy as np

from ..._numba_config import njit
from ._ncp import cat_cost

_INT32_MAX = np.iinfo(np.int32).max


@njit
def _lower(a, slot, j, v):
    """Insert v into the two smallest values a[slot, 0, j] <= a[slot, 1, j]."""
    if v < a[slot, 0, j]:
        a[slot, 1, j] = a[slot, 0, j]
        a[slot, 0, j] = v
    elif v < a[slot, 1, j]:
        a[slot, 1, j] = v


@njit
def _higher(a, slot, j, v):
    """Insert v into the two largest values a[slot, 0, j] >= a[slot, 1, j]."""
    if v > a[slot, 0, j]:
        a[slot, 1, j] = a[slot, 0, j]
        a[slot, 0, j] = v
    elif v > a[slot, 1, j]:
        a[slot, 1, j] = v


@njit
def _push(ds, slot, r, nlo, nhi, nnn, clo, chi):
    """Add record r to the top-2 statistics in ``slot``. O(d)."""
    for j in range(ds.num.shape[1]):
        if ds.num_null[r, j]:
            nnn[slot, j] += 1
        else:
            _lower(nlo, slot, j, ds.num[r, j])
            _higher(nhi, slot, j, ds.num[r, j])
    for j in range(ds.cat.shape[1]):
        _lower(clo, slot, j, ds.cat[r, j])
        _higher(chi, slot, j, ds.cat[r, j])


@njit
def _pop_needs_rescan(ds, slot, r, nlo, nhi, nnn, clo, chi):
    """Remove record r from the statistics in ``slot`` when that is possible in O(d) (r holds
    none of the two smallest / largest values: only its NULLs are uncounted) and return False;
    return True (statistics untouched) when they must be recomputed from the members."""
    for j in range(ds.num.shape[1]):
        if not ds.num_null[r, j]:
            v = ds.num[r, j]
            if v <= nlo[slot, 1, j] or v >= nhi[slot, 1, j]:
                return True
    for j in range(ds.cat.shape[1]):
        v = ds.cat[r, j]
        if v <= clo[slot, 1, j] or v >= chi[slot, 1, j]:
            return True
    for j in range(ds.num.shape[1]):
        if ds.num_null[r, j]:
            nnn[slot, j] -= 1
    return False


@njit
def _fill_top2(ds, head, nxt, c, slot, nlo, nhi, nnn, clo, chi):
    """Top-2 statistics of cluster c (members head[c] -> nxt) into slot ``slot``. O(|c| d)."""
    for j in range(ds.num.shape[1]):
        nlo[slot, 0, j] = np.inf
        nlo[slot, 1, j] = np.inf
        nhi[slot, 0, j] = -np.inf
        nhi[slot, 1, j] = -np.inf
        nnn[slot, j] = 0
    for j in range(ds.cat.shape[1]):
        clo[slot, 0, j] = _INT32_MAX
        clo[slot, 1, j] = _INT32_MAX
        chi[slot, 0, j] = -1
        chi[slot, 1, j] = -1
    r = head[c]
    while r >= 0:
        _push(ds, slot, r, nlo, nhi, nnn, clo, chi)
        r = nxt[r]


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
def _link(head, nxt, prv, c, r):
    nxt[r] = head[c]
    prv[r] = -1
    if head[c] >= 0:
        prv[head[c]] = r
    head[c] = r


@njit
def _unlink(head, nxt, prv, c, r):
    if prv[r] >= 0:
        nxt[prv[r]] = nxt[r]
    else:
        head[c] = nxt[r]
    if nxt[r] >= 0:
        prv[nxt[r]] = prv[r]


@njit
def _lists(lab, C):
    """Doubly linked member lists (head, nxt, prv) and sizes of labels 0..C-1, in record order."""
    n = lab.shape[0]
    head = np.full(C, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    prv = np.full(n, -1, dtype=np.int64)
    size = np.zeros(C, dtype=np.int64)
    for i in range(n - 1, -1, -1):
        _link(head, nxt, prv, lab[i], i)
        size[lab[i]] += 1
    return head, nxt, prv, size


@njit
def cluster_ncps(ds, lab, C):
    """NCP of every cluster of labels 0..C-1 (float64 (C,)), by the top-2 statistics. O(n d)."""
    head, nxt, _prv, _size = _lists(lab, C)
    dn = ds.num.shape[1]
    dc = ds.cat.shape[1]
    nlo = np.empty((1, 2, dn))
    nhi = np.empty((1, 2, dn))
    nnn = np.empty((1, dn), dtype=np.int64)
    clo = np.empty((1, 2, dc), dtype=np.int32)
    chi = np.empty((1, 2, dc), dtype=np.int32)
    out = np.zeros(C)
    for c in range(C):
        if head[c] >= 0:
            _fill_top2(ds, head, nxt, c, 0, nlo, nhi, nnn, clo, chi)
            out[c] = _ncp_exchanged(ds, 0, -1, -1, nlo, nhi, nnn, clo, chi)
    return out


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
    cluster and O(d · |D|) for a candidate D whose swaps are not ruled out by the bound
    ``_core_with``.
    """
    n = lab.shape[0]
    max_mates = 4 * k + 64  # guide-mates read per record (all of them in a class of <= 2k-1)
    head, nxt, prv, size = _lists(lab, C)
    ghead = np.full(n_guide, -1, dtype=np.int64)
    gnxt = np.full(n, -1, dtype=np.int64)
    for i in range(n - 1, -1, -1):
        gnxt[i] = ghead[guide[i]]
        ghead[guide[i]] = i
    dn = ds.num.shape[1]
    dc = ds.cat.shape[1]
    nlo = np.empty((C, 2, dn))
    nhi = np.empty((C, 2, dn))
    nnn = np.empty((C, dn), dtype=np.int64)
    clo = np.empty((C, 2, dc), dtype=np.int32)
    chi = np.empty((C, 2, dc), dtype=np.int32)
    ncp = np.zeros(C)
    for c in range(C):
        if head[c] >= 0:
            _fill_top2(ds, head, nxt, c, c, nlo, nhi, nnn, clo, chi)
            ncp[c] = _ncp_exchanged(ds, c, -1, -1, nlo, nhi, nnn, clo, chi)
    members = np.empty(n, dtype=np.int64)
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
    for t in range(tried.shape[0]):
        A = tried[t]
        m = 0
        r = head[A]
        while r >= 0:
            members[m] = r
            m += 1
            r = nxt[r]
        for i in range(m):
            r = members[i]
            if lab[r] != A:
                continue
            # distinct star clusters of r's guide-mates, most mates first (ties: first seen)
            nc = 0
            seen = 0
            x = ghead[guide[r]]
            while x >= 0 and seen < max_mates:
                seen += 1
                d = lab[x]
                if d != A:
                    q = 0
                    while q < nc and cand[q] != d:
                        q += 1
                    if q == nc:
                        cand[nc] = d
                        cnt[nc] = 0
                        nc += 1
                    cnt[q] += 1
                    while q > 0 and cnt[q] > cnt[q - 1]:
                        cand[q], cand[q - 1] = cand[q - 1], cand[q]
                        cnt[q], cnt[q - 1] = cnt[q - 1], cnt[q]
                        q -= 1
                x = gnxt[x]
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
                if size[A] > k and size[D] < max_size:
                    delta = (size[A] - 1) * a_without \
                        + (size[D] + 1) * _ncp_exchanged(ds, D, -1, r, nlo, nhi, nnn, clo, chi) \
                        - old
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
                while y >= 0:
                    delta = size[A] * _ncp_exchanged(ds, A, r, y, nlo, nhi, nnn, clo, chi) \
                        + size[D] * _ncp_exchanged(ds, D, y, r, nlo, nhi, nnn, clo, chi) - old
                    if delta < tol and delta < best:
                        best = delta
                        kind = 2
                        best_d = D
                        best_x = y
                    y = nxt[y]
            if kind == 0:
                continue
            D = best_d
            _unlink(head, nxt, prv, A, r)
            _link(head, nxt, prv, D, r)
            lab[r] = D
            if kind == 1:
                size[A] -= 1
                size[D] += 1
                relocations += 1
            else:
                _unlink(head, nxt, prv, D, best_x)
                _link(head, nxt, prv, A, best_x)
                lab[best_x] = A
                swaps += 1
            _update(ds, head, nxt, A, r, best_x, nlo, nhi, nnn, clo, chi, ncp)
            _update(ds, head, nxt, D, best_x, r, nlo, nhi, nnn, clo, chi, ncp)
    return relocations, swaps
