"""Numba kernels of the full-domain lattice family: group rows by their generalized key.

No validation here; the orchestration (checker.py, searches) prepares the arrays.

Layout shared by the kernels (d = number of QIs):

- ``codes`` uint16 or int32 (n_cols, n): one column per (QI j, level L), holding the compact
  code (0..m-1) of each row's level-L ancestor; column ``cstart[j] + L`` (the encoded rows are
  held as ``planes``, uint8, the same codes byte by byte: ``level_codes`` writes them,
  ``plane_gather`` / ``plane_counts`` read them)
- ``cols``  int64 (d,): the column of each QI at the node being evaluated
- ``rep``/``cnt``: an input class table, one representative row and a row count per class
  (the encoded rows: ``identity=True``, r = t, count ``cnt[t]`` for a histogram of distinct
  tuples or 1 when ``cnt`` is empty); a cached table also keeps ``kc`` (d, C), each class's
  codes at its own node, so a roll-up reads them sequentially through small level maps
  (code at level L -> code at level L') instead of gathering rows of ``codes``

Evaluating a node = one pass (``group_node``): mixed-radix keys per block of input classes
(column-wise, streaming), each block grouped at once: a dense counting array when the key space
is small, open addressing otherwise; ``group_tuple`` handles key spaces past 2^62 (many QIs) by
hashing the code tuple and comparing it. Both stop as soon as more than ``cap`` classes exist (a
node with more than n/k + limit classes suppresses more than limit rows: its exact table is not
needed), so an infeasible node near the all-distinct bottom costs about n/k + limit inputs and
a table of that size, not t. ``group_buckets`` groups in hash buckets (cache-sized tables,
the buckets shared among threads) and also stops once more than the suppression limit of rows are known to be in classes smaller
than k. ``group_dense`` counts a small key space directly (one slot per key and thread; a grouping
whose table is kept anyway), the classes' codes decoded from their keys. Passes over the encoded rows read ``planes`` (uint8, a level's codes byte by byte):
a code of b bytes is b pseudo-columns whose strides are the column's stride << 8 i, so the keys
are the same. Scratch buffers are owned and reused by the caller.
"""
from __future__ import annotations

import math

import numpy as np

from numba import prange

from ..._numba_config import njit, njit_parallel

_GOLDEN = np.uint64(11400714819323198485)


@njit
def _table_shape(c):
    """(size, shift, mask) of an open-addressing table for c keys: size the smallest power of two
    >= 2c + 2, home slot = (key * _GOLDEN) >> shift, probe step & mask."""
    size = 1
    bits = 0
    while size < 2 * c + 2:
        size *= 2
        bits += 1
    return size, np.uint64(64 - bits), size - 1


@njit
def _block_keys(src, cols, lut, lutoff, use_lut, strides, a, b, keybuf):
    """keybuf[:b - a] = the keys of inputs a..b-1 (see ``group_node``), column by column."""
    for t in range(b - a):
        keybuf[t] = 0
    for j in range(cols.shape[0]):
        col = src[cols[j]]
        st = strides[j]
        if use_lut:
            off = lutoff[j]
            for t in range(a, b):
                keybuf[t - a] += lut[off + col[t]] * st
        else:
            for t in range(a, b):
                keybuf[t - a] += col[t] * st


@njit
def _class_codes(src, cols, lut, lutoff, use_lut, first, nout):
    """(d, nout) codes at the node of each class, read from its first input."""
    d = cols.shape[0]
    kc = np.empty((d, nout), dtype=src.dtype)
    for j in range(d):
        col = src[cols[j]]
        off = lutoff[j] if use_lut else 0
        for s in range(nout):
            v = col[first[s]]
            kc[j, s] = lut[off + v] if use_lut else v
    return kc


@njit
def group_node(src, cols, lut, lutoff, use_lut, rep, cnt, identity, strides, keyspace, cap, dense,
               hkey, hval, keybuf, want_cls):
    """Group input classes by their mixed-radix key at a node, stopping early past ``cap`` classes.

    Inputs (c of them) are the columns of ``src`` (uint16/int32 (rows, c)); QI j's code of input
    t is src[cols[j], t], mapped through ``lut[lutoff[j] + code]`` when ``use_lut`` (a cached
    class table: its codes at its own levels, lut the level maps up to this node); without it
    (the encoded rows: src = the level-code matrix, cols the node's columns) the code is direct.
    The key is sum_j code_j * strides[j] < keyspace. rep int32 (c,) the source row of each input
    (ignored when identity: input t is row t); cnt int64 (c,) rows per input (empty: 1 each);
    cap int64: stop as soon as a (cap + 1)-th class appears. dense int32 / hkey int64 (all -1 on
    entry and exit), hval int32 (power-of-two sizes >= 2 min(c, cap + 1) + 2), keybuf int64 (B,)
    scratch. Keys are computed column-wise per block of B inputs (streaming), then grouped: a
    dense counting array when the key space is small, else open addressing sized for
    min(c, cap + 1) keys (one packed (key << 32 | class) word per slot when keys fit 31 bits).
    Returns (rep int32 (C,), cnt int64 (C,), class of each input int32 (c,) or empty, codes of
    each class at this node (d, C) in src's dtype: the table's own codes for later roll-ups);
    C = cap + 1 means the grouping stopped early (the table is incomplete, cls undefined).
    O(c·d) time, sequential reads only.
    """
    c = src.shape[1]
    lim = cap + 1
    if lim > c:
        lim = c
    if lim > keyspace:
        lim = keyspace
    out_rep = np.empty(lim, dtype=np.int32)
    out_cnt = np.empty(lim, dtype=np.int64)
    out_pos = np.empty(lim, dtype=np.int64)
    first = np.empty(lim, dtype=np.int64)
    cls = np.empty(c if want_cls else 0, dtype=np.int32)
    has_cnt = cnt.shape[0] > 0
    if keyspace <= dense.shape[0] and (keyspace <= 65536 or keyspace <= 4 * c):
        mode = 0
    elif keyspace < (np.int64(1) << 31):
        mode = 1
    else:
        mode = 2
    size, shift, mask = _table_shape(lim)
    low = (np.int64(1) << 32) - 1
    nout = 0
    B = keybuf.shape[0]
    stop = False
    for a in range(0, c, B):
        b = min(a + B, c)
        _block_keys(src, cols, lut, lutoff, use_lut, strides, a, b, keybuf)
        for t in range(a, b):
            key = keybuf[t - a]
            w = cnt[t] if has_cnt else 1
            s = -1
            pos = 0
            if mode == 0:
                s = dense[key]
                if s < 0:
                    dense[key] = nout
                    pos = key
            else:
                h = np.int64((np.uint64(key) * _GOLDEN) >> shift)
                while True:
                    e = hkey[h]
                    if e < 0:
                        if mode == 1:
                            hkey[h] = (key << 32) | nout
                        else:
                            hkey[h] = key
                            hval[h] = nout
                        pos = h
                        break
                    if mode == 1:
                        if (e >> 32) == key:
                            s = e & low
                            break
                    elif e == key:
                        s = hval[h]
                        break
                    h = (h + 1) & mask
            if s < 0:
                s = nout
                out_rep[s] = t if identity else rep[t]
                out_cnt[s] = w
                out_pos[s] = pos
                first[s] = t
                nout += 1
            else:
                out_cnt[s] += w
            if want_cls:
                cls[t] = s
            if nout > cap:
                stop = True
                break
        if stop:
            break
    for s in range(nout):
        if mode == 0:
            dense[out_pos[s]] = -1
        else:
            hkey[out_pos[s]] = -1
    kc = _class_codes(src, cols, lut, lutoff, use_lut, first, nout)
    return out_rep[:nout].copy(), out_cnt[:nout].copy(), cls, kc


@njit
def group_tuple(codes, rep, cnt, identity, cols, cap, want_cls):
    """``group_node`` for key spaces past 2^62 (many QIs): hash the code tuple and compare it.
    Same inputs (no keys) and outputs, same early stop past ``cap`` classes."""
    c = codes.shape[1] if identity else rep.shape[0]
    d = cols.shape[0]
    lim = cap + 1
    if lim > c:
        lim = c
    out_rep = np.empty(lim, dtype=np.int32)
    out_cnt = np.empty(lim, dtype=np.int64)
    cls = np.empty(c if want_cls else 0, dtype=np.int32)
    size, shift, mask = _table_shape(lim)
    has_cnt = cnt.shape[0] > 0
    tval = np.full(size, -1, dtype=np.int32)
    thash = np.empty(size, dtype=np.uint64)
    nout = 0
    for t in range(c):
        r = t if identity else rep[t]
        w = cnt[t] if has_cnt else 1
        hv = np.uint64(1469598103934665603)
        for j in range(d):
            hv = (hv ^ np.uint64(codes[cols[j], r])) * np.uint64(1099511628211)
        h = np.int64((hv * _GOLDEN) >> shift)
        while True:
            s = tval[h]
            if s < 0:
                tval[h] = nout
                thash[h] = hv
                out_rep[nout] = r
                out_cnt[nout] = w
                s = nout
                nout += 1
                break
            if thash[h] == hv:
                q = out_rep[s]
                same = True
                for j in range(d):
                    if codes[cols[j], r] != codes[cols[j], q]:
                        same = False
                        break
                if same:
                    out_cnt[s] += w
                    break
            h = (h + 1) & mask
        if want_cls:
            cls[t] = s
        if nout > cap:
            break
    return out_rep[:nout].copy(), out_cnt[:nout].copy(), cls


@njit
def class_stats_ok(out_cnt, ok, kc, cols, coff, cncp):
    """``class_stats`` with the suppressed classes given: class s is kept iff ok[s] (privacy
    models beyond k). Same outputs."""
    C = out_cnt.shape[0]
    d = cols.shape[0]
    mn = np.int64(1) << 62
    sup = np.int64(0)
    sq_ok = 0.0
    sq_all = 0.0
    sup_ncp = 0.0
    for s in range(C):
        c = out_cnt[s]
        if c < mn:
            mn = c
        cc = float(c) * float(c)
        sq_all += cc
        if not ok[s]:
            sup += c
            acc = 0.0
            for j in range(d):
                acc += cncp[coff[cols[j]] + kc[j, s]]
            if d > 0:
                sup_ncp += c * acc / d
        else:
            sq_ok += cc
    return mn, sup, sq_ok, sq_all, sup_ncp


@njit
def class_stats(out_cnt, k, kc, cols, coff, cncp):
    """Statistics of a grouped node: (min class size, rows in classes < k, sum of |e|^2 over
    classes >= k, sum of |e|^2 over all classes, sum over suppressed rows of their mean NCP).

    kc (d, C) each class's codes at the node (column cols[j] for QI j); cncp float64 flat: NCP
    of code x of column c at cncp[coff[c] + x].
    """
    return class_stats_ok(out_cnt, out_cnt >= k, kc, cols, coff, cncp)


@njit
def single_qi_suppression(counts, k):
    """Rows in classes smaller than k when grouping by one QI: ``counts`` int64 rows per code
    (``plane_counts``)."""
    sup = np.int64(0)
    for c in range(counts.shape[0]):
        if 0 < counts[c] < k:
            sup += counts[c]
    return sup


@njit
def tag_closure(status, start, bit, radix, strides, up):
    """Set ``bit`` on ``start`` and every node above (up=True) or below it in the lattice.

    Nodes are mixed-radix indices (digit j = (idx // strides[j]) % radix[j]). The walk stops at
    nodes that already carry the bit (their closure is already tagged). Returns nodes newly tagged.
    """
    d = radix.shape[0]
    stack = np.empty(64, dtype=np.int64)
    top = 0
    newly = 0
    if status[start] & bit:
        return 0
    status[start] |= bit
    newly += 1
    stack[0] = start
    top = 1
    while top > 0:
        top -= 1
        u = stack[top]
        for j in range(d):
            digit = (u // strides[j]) % radix[j]
            if up:
                if digit + 1 >= radix[j]:
                    continue
                v = u + strides[j]
            else:
                if digit == 0:
                    continue
                v = u - strides[j]
            if status[v] & bit:
                continue
            status[v] |= bit
            newly += 1
            if top >= stack.shape[0]:
                grown = np.empty(stack.shape[0] * 2, dtype=np.int64)
                grown[:top] = stack[:top]
                stack = grown
            stack[top] = v
            top += 1
    return newly


@njit
def distinct_sorted(col, bits, null):
    """Sorted distinct values of a float64 column and each row's index among them.

    col float64 (n,) IN (any stride); bits int64 (n,) IN: the same memory viewed as int64 (the
    hash key; -0.0 is taken as 0.0); null bool (n,) IN: rows to skip.
    Returns (values float64 (u,) ascending, index int32 (n,), -1 where null). Open addressing
    on the value bits, then a sort of the u distinct values: O(n + u log u) (np.unique plus
    searchsorted is O(n log n)).
    """
    n = col.shape[0]
    size = 1024
    shift = np.uint64(54)
    tkey = np.empty(size, dtype=np.int64)
    tid = np.full(size, -1, dtype=np.int32)
    uniq = np.empty(64, dtype=np.float64)
    u = 0
    slot = np.empty(n, dtype=np.int32)
    for i in range(n):
        if null[i]:
            slot[i] = -1
            continue
        v = col[i]
        key = bits[i]
        if v == 0.0:
            v = 0.0
            key = 0
        if 2 * (u + 1) > size:  # grow and rehash
            size *= 2
            shift -= np.uint64(1)
            nkey = np.empty(size, dtype=np.int64)
            nid = np.full(size, -1, dtype=np.int32)
            for h0 in range(tid.shape[0]):
                if tid[h0] >= 0:
                    h = np.int64((np.uint64(tkey[h0]) * _GOLDEN) >> shift)
                    while nid[h] >= 0:
                        h = (h + 1) & (size - 1)
                    nkey[h] = tkey[h0]
                    nid[h] = tid[h0]
            tkey, tid = nkey, nid
        h = np.int64((np.uint64(key) * _GOLDEN) >> shift)
        while True:
            s = tid[h]
            if s < 0:
                tkey[h] = key
                tid[h] = u
                if u >= uniq.shape[0]:
                    grown = np.empty(2 * uniq.shape[0], dtype=np.float64)
                    grown[:u] = uniq[:u]
                    uniq = grown
                uniq[u] = v
                slot[i] = u
                u += 1
                break
            if tkey[h] == key:
                slot[i] = s
                break
            h = (h + 1) & (size - 1)
    order = np.argsort(uniq[:u])
    rank = np.empty(u, dtype=np.int32)
    for r in range(u):
        rank[order[r]] = r
    for i in range(n):
        if slot[i] >= 0:
            slot[i] = rank[slot[i]]
    return uniq[:u][order].copy(), slot


@njit
def leaf_rows(leaf, cnt, n_leaves):
    """float64 (n_leaves,): the rows on each leaf. leaf int32 (n,) (any stride), cnt int64
    (n,) rows per encoded row or empty (one each). The sums are exact integers (below 2^53):
    the same floats as ``np.bincount(leaf, weights=cnt, minlength=n_leaves)``. O(n)."""
    out = np.zeros(n_leaves, dtype=np.int64)
    if cnt.shape[0] > 0:
        for i in range(leaf.shape[0]):
            out[leaf[i]] += cnt[i]
    else:
        for i in range(leaf.shape[0]):
            out[leaf[i]] += 1
    return out.astype(np.float64)


@njit
def leaf_extremes(leaf, values, null, n_leaves):
    """Per leaf: (min value, max value over its non-NULL rows (+inf / -inf when none), whether
    a NULL row sits on it). leaf int32 (n,), values float64 (n,), null bool (n,). O(n)."""
    vmin = np.full(n_leaves, np.inf)
    vmax = np.full(n_leaves, -np.inf)
    has_null = np.zeros(n_leaves, dtype=np.bool_)
    for i in range(leaf.shape[0]):
        f = leaf[i]
        if null[i]:
            has_null[f] = True
        else:
            v = values[i]
            if v < vmin[f]:
                vmin[f] = v
            if v > vmax[f]:
                vmax[f] = v
    return vmin, vmax, has_null


@njit
def roll_up_extremes(parent, lo, hi, has_null):
    """In place, per tree node: lo / hi the min / max over its subtree, has_null whether any
    node under it has it. parent int32 (n_nodes,), -1 for the root; every child has a larger
    id than its parent (pre-order). O(n_nodes)."""
    for u in range(parent.shape[0] - 1, 0, -1):
        p = parent[u]
        if lo[u] < lo[p]:
            lo[p] = lo[u]
        if hi[u] > hi[p]:
            hi[p] = hi[u]
        if has_null[u]:
            has_null[p] = True


@njit
def _group_chunk(src, cols, lut, lutoff, use_lut, cnt, strides, a, b, cap, hkey, hval, dense,
                 use_dense, keybuf, keys, first, counts, pos, lcls, want_cls):
    """Group inputs a..b-1 (see ``group_node``) into keys / first input / rows per class (keys,
    first, counts, pos int64 (>= min(b - a, cap + 1),) OUT) and, when ``want_cls``, the local
    class of each input (lcls int32 (b - a,) OUT). A dense counting array (``use_dense``: dense
    int32 covers the key space) or open addressing: hkey int64 / hval int32 of power-of-two
    size >= 2 min(b - a, cap + 1) + 2. dense and hkey all -1 on entry and exit.
    Returns the classes found; cap + 1 means it stopped early."""
    lim = cap + 1
    if lim > b - a:
        lim = b - a
    size, shift, mask = _table_shape(lim)
    has_cnt = cnt.shape[0] > 0
    nout = 0
    B = keybuf.shape[0]
    stop = False
    for a0 in range(a, b, B):
        b0 = min(a0 + B, b)
        _block_keys(src, cols, lut, lutoff, use_lut, strides, a0, b0, keybuf)
        for t in range(a0, b0):
            key = keybuf[t - a0]
            w = cnt[t] if has_cnt else 1
            if use_dense:
                s = dense[key]
                if s < 0:
                    dense[key] = nout
                    s = nout
                    keys[s] = key
                    first[s] = t
                    counts[s] = w
                    pos[s] = key
                    nout += 1
                else:
                    counts[s] += w
                if want_cls:
                    lcls[t - a] = s
                if nout > cap:
                    stop = True
                    break
                continue
            h = np.int64((np.uint64(key) * _GOLDEN) >> shift)
            while True:
                k0 = hkey[h]
                if k0 == key:
                    s = hval[h]
                    counts[s] += w
                    break
                if k0 < 0:
                    hkey[h] = key
                    hval[h] = nout
                    s = nout
                    keys[s] = key
                    first[s] = t
                    counts[s] = w
                    pos[s] = h
                    nout += 1
                    break
                h = (h + 1) & mask
            if want_cls:
                lcls[t - a] = s
            if nout > cap:
                stop = True
                break
        if stop:
            break
    for s in range(nout):
        if use_dense:
            dense[pos[s]] = -1
        else:
            hkey[pos[s]] = -1
    return nout


@njit_parallel
def group_node_parallel(src, cols, lut, lutoff, use_lut, rep, cnt, identity, strides, keyspace,
                        cap, scr_key, scr_val, scr_dense, hkey, hval, want_cls):
    """``group_node`` in P = scr_key.shape[0] chunks of the inputs, one per thread, merged in
    chunk order: a class's first input overall lies in the first chunk that holds it, so the
    classes come out in the sequential order with the same representatives, counts and codes
    (identical results). scr_key int64 (P, S) (all -1 on entry and exit), scr_val int32 (P, S),
    S a power of two >= 2 min(ceil(c / P), cap + 1) + 2; scr_dense int32 (P, D) all -1, used
    when keyspace <= D; hkey / hval as in ``group_node``. Same returns. O(c·d / P + classes)."""
    c = src.shape[1]
    P = scr_key.shape[0]
    L = (c + P - 1) // P
    if L > cap + 1:
        L = cap + 1
    ckeys = np.empty((P, L), dtype=np.int64)
    cfirst = np.empty((P, L), dtype=np.int64)
    ccnt = np.empty((P, L), dtype=np.int64)
    cpos = np.empty((P, L), dtype=np.int64)
    cn = np.zeros(P, dtype=np.int64)
    lcls = np.empty(c if want_cls else 0, dtype=np.int32)
    for p in prange(P):
        a = p * c // P
        b = (p + 1) * c // P
        keybuf = np.empty(4096, dtype=np.int64)
        cn[p] = _group_chunk(src, cols, lut, lutoff, use_lut, cnt, strides, a, b, cap, scr_key[p],
                             scr_val[p], scr_dense[p], keyspace <= scr_dense.shape[1], keybuf,
                             ckeys[p], cfirst[p], ccnt[p], cpos[p],
                             lcls[a:b] if want_cls else lcls, want_cls)
    lim = cap + 1
    if lim > c:
        lim = c
    out_first = np.empty(lim, dtype=np.int64)
    out_cnt = np.empty(lim, dtype=np.int64)
    out_pos = np.empty(lim, dtype=np.int64)
    gmap = np.empty((P, L), dtype=np.int32)
    size, shift, mask = _table_shape(lim)
    nout = 0
    stop = False
    for p in range(P):
        if cn[p] > cap:  # one chunk alone has too many classes
            stop = True
        if stop:
            break
        for s in range(cn[p]):
            key = ckeys[p, s]
            h = np.int64((np.uint64(key) * _GOLDEN) >> shift)
            while True:
                k0 = hkey[h]
                if k0 == key:
                    g = hval[h]
                    out_cnt[g] += ccnt[p, s]
                    break
                if k0 < 0:
                    hkey[h] = key
                    hval[h] = nout
                    g = nout
                    out_first[g] = cfirst[p, s]
                    out_cnt[g] = ccnt[p, s]
                    out_pos[g] = h
                    nout += 1
                    break
                h = (h + 1) & mask
            gmap[p, s] = g
            if nout > cap:
                stop = True
                break
    for g in range(nout):
        hkey[out_pos[g]] = -1
    if stop:  # report an incomplete table of cap + 1 classes, as group_node does
        nout = cap + 1
        for g in range(nout):
            out_first[g] = 0
            out_cnt[g] = 0
    cls = np.empty(c if want_cls and not stop else 0, dtype=np.int32)
    if want_cls and not stop:
        for p in prange(P):
            a = p * c // P
            b = (p + 1) * c // P
            for t in range(a, b):
                cls[t] = gmap[p, lcls[t]]
    out_rep = np.empty(nout, dtype=np.int32)
    for g in range(nout):
        out_rep[g] = out_first[g] if identity else rep[out_first[g]]
    kc = _class_codes(src, cols, lut, lutoff, use_lut, out_first, nout)
    return out_rep, out_cnt[:nout].copy(), cls, kc


@njit
def _bucket_keys(src, cols, lut, lutoff, use_lut, strides, a0, b0, pshift, keys, hist):
    """keys[t] = the key of input t for t in [a0, b0) (as ``group_node``), block by block and
    column by column; hist[p + 1] += the inputs of bucket p (top bits of the key's hash)."""
    B = 4096
    for a in range(a0, b0, B):
        b = min(a + B, b0)
        _block_keys(src, cols, lut, lutoff, use_lut, strides, a, b, keys[a:b])
        for t in range(a, b):
            hist[np.int64((np.uint64(keys[t]) * _GOLDEN) >> pshift) + 1] += 1


@njit
def _bucket_scatter(keys, cnt, has_cnt, a0, b0, pshift, fill, skey, sidx, sw):
    """Scatter inputs a0..b0-1 to their buckets: input t goes to slot fill[p] (then fill[p] + 1)
    of its bucket p: skey its key, sidx t, sw its weight (when has_cnt)."""
    for t in range(a0, b0):
        key = keys[t]
        p = np.int64((np.uint64(key) * _GOLDEN) >> pshift)
        q = fill[p]
        skey[q] = key
        sidx[q] = t
        if has_cnt:
            sw[q] = cnt[t]
        fill[p] = q + 1


@njit
def report_piece(tsup, tcls, th, sup, classes, stop_sup, cap, halt):
    """Thread th finished a piece (bucket, block) of a stopping grouping: add its rows in
    classes smaller than k and its classes to tsup[th] / tcls[th]; when the sums over every
    thread's slots (they only grow: lower bounds of the totals) pass stop_sup or cap, set
    halt[0] (every thread stops at its next piece) and return True."""
    tsup[th] += sup
    tcls[th] += classes
    all_sup = np.int64(0)
    all_cls = np.int64(0)
    for u in range(tsup.shape[0]):
        all_sup += tsup[u]
        all_cls += tcls[u]
    if all_sup > stop_sup or all_cls > cap:
        halt[0] = 1
        return True
    return False


@njit
def _group_bucket_range(lo, hi, bstart, skey, sidx, sw, has_cnt, packed, pbits, biggest, k,
                        stop_sup, cap, th, tsup, tcls, bn, halt):
    """Group buckets lo..hi-1 one by one with one small hash table (thread th's share).

    A bucket's inputs lie in skey / sidx / sw[bstart[p]:bstart[p + 1]], in input order. Once
    grouped, its nu classes overwrite the bucket's first nu slots (sidx the first input, skey
    the row count) and bn[p] = nu; tsup[th] / tcls[th] add its rows in classes smaller than k
    and its classes. After each bucket the sums over all threads' slots (each slot only grows,
    so any read is a lower bound of the exact totals) are compared with stop_sup and cap: past
    either, halt[0] = 1, and every thread stops at its next bucket."""
    size, tshift, mask = _table_shape(biggest)
    hkey = np.full(size, -1, dtype=np.int64)  # key << 32 | class in the bucket (keys < 2^31)
    hval = np.empty(0 if packed else size, dtype=np.int32)
    used = np.empty(max(biggest, 1), dtype=np.int64)  # slot of each class of the bucket
    bcnt = np.empty(max(biggest, 1), dtype=np.int64)
    bfirst = np.empty(max(biggest, 1), dtype=np.int32)
    low = (np.int64(1) << 32) - 1
    ubits = np.uint64(pbits)
    for p in range(lo, hi):
        if halt[0] != 0:
            break
        nu = 0
        for q in range(bstart[p], bstart[p + 1]):
            key = skey[q]
            w = sw[q] if has_cnt else 1
            h = np.int64(((np.uint64(key) * _GOLDEN) << ubits) >> tshift)
            while True:
                e = hkey[h]
                if e < 0:
                    if packed:
                        hkey[h] = (key << 32) | nu
                    else:
                        hkey[h] = key
                        hval[h] = nu
                    used[nu] = h
                    bcnt[nu] = w
                    bfirst[nu] = sidx[q]
                    nu += 1
                    break
                if packed:
                    if (e >> 32) == key:
                        bcnt[e & low] += w
                        break
                elif e == key:
                    bcnt[hval[h]] += w
                    break
                h = (h + 1) & mask
        sup = np.int64(0)
        b0 = bstart[p]
        for i in range(nu):
            if bcnt[i] < k:
                sup += bcnt[i]
            sidx[b0 + i] = bfirst[i]
            skey[b0 + i] = bcnt[i]
            hkey[used[i]] = -1
        bn[p] = nu
        if report_piece(tsup, tcls, th, sup, nu, stop_sup, cap, halt):
            break


@njit_parallel
def group_buckets(src, cols, lut, lutoff, use_lut, rep, cnt, identity, strides, keyspace, k,
                  stop_sup, cap, pbits, keys, skey, sidx, nthr):
    """``group_node`` in cache-sized pieces on nthr threads, stopping as soon as the node is
    known infeasible.

    Same inputs as ``group_node`` (no dense / hash scratch; keys < keyspace); k: a class of fewer
    than k rows is suppressed; stop_sup: stop once more rows than this are suppressed (the
    suppression limit: the node is infeasible; a huge value never stops there); cap as in
    ``group_node``; nthr >= 1 threads. The keys of all inputs are computed (keys int64 (>= c,)
    scratch; nthr chunks of the inputs at once), then the inputs are scattered into 2^pbits
    buckets (pbits >= 1) by the top bits of the key's hash (skey int64 / sidx int32 (>= c,)
    scratch), each bucket holding its inputs in input order: every class lies in one bucket,
    so each bucket is grouped on its own with a small hash table, in cache, the buckets split
    among the threads in nthr contiguous ranges. After each bucket the rows in its classes
    smaller than k are added up; the grouping stops as soon as the rows counted by all threads
    exceed ``stop_sup`` or the classes found exceed ``cap`` (either makes the node infeasible: a
    class's rows are all counted once its bucket is done, so the counts never overestimate).

    Returns (stopped, rep int32 (C,), cnt int64 (C,), kc (d, C)): when not stopped, the node's
    class table exactly as ``group_node`` returns it (classes in the order of their first input,
    that input the representative, codes at the node); when stopped, empty arrays. Stopped or
    not, and the table, do not depend on nthr or pbits. O(c·d / nthr) work plus O(c) scatter
    and in-cache probes (split among the threads; the probes stop early) and O(classes + c/64)
    sequential work to order the classes."""
    c = src.shape[1] if identity else rep.shape[0]
    d = cols.shape[0]
    P = np.int64(1) << pbits
    pshift = np.uint64(64 - pbits)
    has_cnt = cnt.shape[0] > 0
    T = max(np.int64(nthr), np.int64(1))
    hist = np.zeros((T, P + 1), dtype=np.int64)  # inputs of each (chunk, bucket)
    for th in prange(T):
        _bucket_keys(src, cols, lut, lutoff, use_lut, strides, th * c // T, (th + 1) * c // T,
                     pshift, keys, hist[th])
    # bucket p's slots: chunk 0's inputs, then chunk 1's, ... (input order within the bucket)
    bstart = np.zeros(P + 1, dtype=np.int64)
    fill = np.empty((T, P), dtype=np.int64)
    biggest = np.int64(0)
    pos = np.int64(0)
    for p in range(P):
        bstart[p] = pos
        for u in range(T):
            fill[u, p] = pos
            pos += hist[u, p + 1]
        if pos - bstart[p] > biggest:
            biggest = pos - bstart[p]
    bstart[P] = pos
    sw = np.empty(c if has_cnt else 0, dtype=np.int64)  # the weights, scattered alongside
    for th in prange(T):
        _bucket_scatter(keys, cnt, has_cnt, th * c // T, (th + 1) * c // T, pshift, fill[th],
                        skey, sidx, sw)
    packed = keyspace < (np.int64(1) << 31)
    bn = np.zeros(P, dtype=np.int64)
    tsup = np.zeros(T, dtype=np.int64)
    tcls = np.zeros(T, dtype=np.int64)
    halt = np.zeros(1, dtype=np.int64)
    for th in prange(T):
        _group_bucket_range(th * P // T, (th + 1) * P // T, bstart, skey, sidx, sw, has_cnt,
                            packed, pbits, biggest, k, stop_sup, cap, th, tsup, tcls, bn, halt)
    nout = tcls.sum()
    if halt[0] != 0 or tsup.sum() > stop_sup or nout > cap:
        e_rep = np.empty(0, dtype=np.int32)
        return True, e_rep, np.empty(0, dtype=np.int64), np.empty((d, 0), dtype=src.dtype)
    # classes in the order of their first input: mark the first inputs in a bitmap (their
    # counts parked in keys[], free now), then read the marks in input order
    marks = np.zeros((c >> 6) + 1, dtype=np.uint64)
    for p in range(P):
        for i in range(bstart[p], bstart[p] + bn[p]):
            f = np.int64(sidx[i])
            keys[f] = skey[i]
            marks[f >> 6] |= np.uint64(1) << np.uint64(f & 63)
    first = np.empty(nout, dtype=np.int64)
    out_rep = np.empty(nout, dtype=np.int32)
    out_cnt = np.empty(nout, dtype=np.int64)
    s = 0
    for wd in range(marks.shape[0]):
        m = marks[wd]
        while m != 0:
            f = (wd << 6) + np.int64(_low_bit(m))
            m &= m - np.uint64(1)
            first[s] = f
            out_cnt[s] = keys[f]
            out_rep[s] = f if identity else rep[f]
            s += 1
    kc = _class_codes(src, cols, lut, lutoff, use_lut, first, nout)
    return False, out_rep, out_cnt, kc


@njit
def _low_bit(m):
    """Index of the lowest set bit of a nonzero uint64."""
    i = 0
    while (m & np.uint64(1)) == 0:
        m >>= np.uint64(1)
        i += 1
    return i


@njit
def _plane_tables(lut, lutoff, pstart, pbytes):
    """(tab uint8 (P, leaves), row int64 (P,)): for each of the P planes of one QI's columns
    (see ``level_codes``), its byte of every leaf's code and the plane it is written to."""
    n_cols = pstart.shape[0]
    P = 0
    for i in range(n_cols):
        P += pbytes[i]
    nl = lut.shape[0] - lutoff[n_cols - 1] if n_cols > 0 else 0  # leaves: one column's part
    tab = np.empty((P, nl), dtype=np.uint8)
    row = np.empty(P, dtype=np.int64)
    p = 0
    for i in range(n_cols):
        off = lutoff[i]
        for y in range(pbytes[i]):
            sh = 8 * y
            for x in range(nl):
                tab[p, x] = (lut[off + x] >> sh) & 255
            row[p] = pstart[i] + y
            p += 1
    return tab, row


@njit
def _plane_block(leaf, tab, row, a, b, planes):
    """Rows a..b-1 of every plane in ``row``: planes[row[q], s] = tab[q, leaf[s]]."""
    for q in range(row.shape[0]):
        py = planes[row[q]]
        tq = tab[q]
        for s in range(a, b):
            py[s] = tq[leaf[s]]


@njit
def level_codes(leaf, lut, lutoff, pstart, pbytes, planes):
    """Write one QI's level columns as byte planes: for each of its columns i, the code
    lut[lutoff[i] + leaf[t]] of row t byte by byte, low byte first, in
    planes[pstart[i] .. pstart[i] + pbytes[i] - 1, t] (pbytes 0: a column with one code,
    nothing written). leaf int32 (t,) the rows' leaf ordinals (each < the length of every
    column's part of lut); lut int64 flat. Each plane's bytes per leaf are tabled first (uint8,
    one small table per plane), then blocks of rows are written: one read of the leaves per
    block, a gather from a table in cache and a sequential write per plane.
    O(t · planes + leaves · planes)."""
    tab, row = _plane_tables(lut, lutoff, pstart, pbytes)
    t = leaf.shape[0]
    for a in range(0, t, 16384):
        _plane_block(leaf, tab, row, a, min(a + 16384, t), planes)


@njit_parallel
def level_codes_parallel(leaf, lut, lutoff, pstart, pbytes, planes):
    """``level_codes`` with the blocks of rows on numba's threads (the same planes)."""
    tab, row = _plane_tables(lut, lutoff, pstart, pbytes)
    t = leaf.shape[0]
    B = 16384
    for blk in prange((t + B - 1) // B):
        _plane_block(leaf, tab, row, blk * B, min(blk * B + B, t), planes)


@njit
def plane_gather(planes, pstart, pbytes, cols, rows, out):
    """out[i, s] = the code of column cols[i] at row rows[s], read from its byte planes."""
    for i in range(cols.shape[0]):
        c = cols[i]
        for s in range(rows.shape[0]):
            r = rows[s]
            v = 0
            for y in range(pbytes[c]):
                v |= np.int64(planes[pstart[c] + y, r]) << (8 * y)
            out[i, s] = v


@njit
def plane_counts(planes, p0, nb, m, cnt):
    """Rows per code (int64 (m,)) of the column held in planes p0 .. p0 + nb - 1 (nb 0: every
    code 0); ``cnt`` int64 rows per encoded row, or empty (one each)."""
    t = planes.shape[1]
    counts = np.zeros(m, dtype=np.int64)
    has_cnt = cnt.shape[0] > 0
    for r in range(t):
        v = 0
        for y in range(nb):
            v |= np.int64(planes[p0 + y, r]) << (8 * y)
        counts[v] += cnt[r] if has_cnt else 1
    return counts


@njit
def distinct_integral(col, null, max_range):
    """``distinct_sorted`` by counting, for a column of integers: (ok, values, index). ok is
    False (and the arrays empty) unless every non-null value is a finite integer and max - min
    < max_range (and some value is non-null); then values float64 (u,) ascending and index int32
    (n,) (-1 where null) equal ``distinct_sorted``'s. Two sequential passes plus O(range)."""
    n = col.shape[0]
    lo = np.inf
    hi = -np.inf
    fail = (False, np.empty(0, dtype=np.float64), np.empty(0, dtype=np.int32))
    for i in range(n):
        if null[i]:
            continue
        v = col[i]
        if not math.isfinite(v) or v != math.floor(v):
            return fail
        if v < lo:
            lo = v
        if v > hi:
            hi = v
    if hi < lo or hi - lo >= max_range:
        return fail
    m = np.int64(hi - lo) + 1
    rank = np.zeros(m, dtype=np.int32)
    for i in range(n):
        if not null[i]:
            rank[np.int64(col[i] - lo)] = 1
    u = 0
    for x in range(m):
        seen = rank[x]
        rank[x] = u if seen else -1
        u += seen
    vals = np.empty(u, dtype=np.float64)
    for x in range(m):
        if rank[x] >= 0:
            vals[rank[x]] = lo + x
    pos = np.empty(n, dtype=np.int32)
    for i in range(n):
        pos[i] = -1 if null[i] else rank[np.int64(col[i] - lo)]
    return True, vals, pos


@njit
def _dense_chunk(src, cols, lut, lutoff, use_lut, cnt, has_cnt, strides, a0, b0, cap, slots,
                 new_key, new_first):
    """Count inputs a0..b0-1 (see ``group_node``) into ``slots`` (int32 (>= keyspace,), all 0:
    rows per key) and list each key at its first input in this range, in input order:
    new_key[i] / new_first[i] (int64 (>= min(b0 - a0, cap + 1),)). Returns the keys met, or
    cap + 1 as soon as more than cap are (the range alone has too many classes)."""
    B = 4096
    keybuf = np.empty(B, dtype=np.int64)
    nk = 0
    for a in range(a0, b0, B):
        b = min(a + B, b0)
        _block_keys(src, cols, lut, lutoff, use_lut, strides, a, b, keybuf)
        for t in range(a, b):
            key = keybuf[t - a]
            v = slots[key]
            if v == 0:
                if nk > cap:
                    return cap + 1
                new_key[nk] = key
                new_first[nk] = t
                nk += 1
            slots[key] = v + (cnt[t] if has_cnt else 1)
    return nk


@njit
def _key_digits(rest, nstrides, keyspace, kc):
    """kc[j, s] = digit j of the mixed-radix key rest[s] < keyspace <= 2^52 (nstrides int64
    (d,) increasing from 1; digit j's radix is nstrides[j + 1] / nstrides[j], keyspace /
    nstrides[d - 1] for the last); rest is consumed. Most significant digit first, QI by QI,
    each a float multiply corrected by one step (exact); a digit of radix 1 is 0 without any."""
    d = nstrides.shape[0]
    for j in range(d - 1, -1, -1):
        st = nstrides[j]
        above = nstrides[j + 1] if j + 1 < d else keyspace
        if above == st:  # one code: every digit 0
            for s in range(rest.shape[0]):
                kc[j, s] = 0
            continue
        inv = 1.0 / st
        for s in range(rest.shape[0]):
            r = rest[s]
            q = np.int64(r * inv)
            if q * st > r:
                q -= 1
            elif (q + 1) * st <= r:
                q += 1
            kc[j, s] = q
            rest[s] = r - q * st


@njit
def _stopped_dense(slots, scratch, nk, cap, d, like):
    """``group_dense``'s stopped result, after zeroing every range's slots of the keys it listed
    (a range that stopped listed cap + 1 keys and counted no other)."""
    for th in range(slots.shape[0]):
        for i in range(min(nk[th], cap + 1)):
            slots[th, scratch[th, 0, i]] = 0
    return (True, np.empty(0, dtype=np.int32), np.empty(0, dtype=np.int64),
            np.empty((d, 0), dtype=like.dtype))


@njit_parallel
def group_dense(src, cols, lut, lutoff, use_lut, rep, cnt, identity, strides, keyspace, cap,
                slots, scratch, nstrides, like):
    """``group_node`` over a small key space by direct counting, on slots.shape[0] threads.

    Same inputs as ``group_node`` (keys < keyspace < 2^32; no hash / dense scratch): the inputs
    are cut into T = slots.shape[0] contiguous ranges, range th counted in slots[th] (int32
    (T, >= keyspace), all 0 on entry and exit: rows per key, one memory access per input; needs
    rows < 2^31), each range listing its new keys in input order (scratch int64 (T, 2, >=
    min(ceil(c / T), cap + 1))). The classes, in the order of their first input, are range 0's
    list, then range 1's keys not met before, ...: each summed over the threads' slots (and
    zeroed) as it is listed, no sweep of the key space and no sort. Each class's codes are the
    digits of its key (nstrides int64 (d,): the node's mixed-radix strides, see
    ``_key_digits``), in the dtype of ``like``: no access to the inputs. Returns (stopped, rep
    int32 (C,), cnt int64 (C,), kc (d, C)): when not stopped, exactly ``group_node``'s table
    with the codes of every QI; stopped (more than ``cap`` classes) with empty arrays.
    O(c·d / T + C·(T + d))."""
    c = src.shape[1] if identity else rep.shape[0]
    T = slots.shape[0]
    d = nstrides.shape[0]
    has_cnt = cnt.shape[0] > 0
    nk = np.zeros(T, dtype=np.int64)
    for th in prange(T):
        nk[th] = _dense_chunk(src, cols, lut, lutoff, use_lut, cnt, has_cnt, strides,
                              th * c // T, (th + 1) * c // T, cap, slots[th], scratch[th, 0],
                              scratch[th, 1])
    stopped = False
    total = 0
    for th in range(T):
        if nk[th] > cap:
            stopped = True
        total += nk[th]
    if stopped:
        return _stopped_dense(slots, scratch, nk, cap, d, like)
    lim = min(total, cap + 1)
    out_rep = np.empty(lim, dtype=np.int32)
    out_cnt = np.empty(lim, dtype=np.int64)
    rest = np.empty(lim, dtype=np.int64)  # each class's key
    nout = 0
    for u in range(T):
        for i in range(nk[u]):
            x = scratch[u, 0, i]
            if slots[u, x] == 0:  # listed by an earlier range already
                continue
            if nout > cap - 1:
                stopped = True
                break
            w = np.int64(0)
            for th in range(u, T):
                w += slots[th, x]
                slots[th, x] = 0
            f = scratch[u, 1, i]
            out_rep[nout] = f if identity else rep[f]
            out_cnt[nout] = w
            rest[nout] = x
            nout += 1
        if stopped:
            break
    if stopped:
        return _stopped_dense(slots, scratch, nk, cap, d, like)
    kc = np.empty((d, nout), dtype=like.dtype)
    _key_digits(rest[:nout], nstrides, keyspace, kc)
    return False, out_rep[:nout].copy(), out_cnt[:nout].copy(), kc
