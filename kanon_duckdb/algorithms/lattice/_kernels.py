"""Numba kernels of the full-domain lattice family: group rows by their generalized key.

No validation here; the orchestration (checker.py, searches) prepares the arrays.

Layout shared by the kernels (d = number of QIs):

- ``codes`` uint16 or int32 (n_cols, n): one column per (QI j, level L), holding the compact
  code (0..m-1) of each row's level-L ancestor; column ``cstart[j] + L``
- ``cols``  int64 (d,): the column of each QI at the node being evaluated
- ``rep``/``cnt``: an input class table, one representative row and a row count per class
  (the encoded rows: ``identity=True``, r = t, count ``cnt[t]`` for a histogram of distinct
  tuples or 1 when ``cnt`` is empty)

Evaluating a node = mixed-radix key per input class (``node_keys``, column-wise, streaming),
then one grouping pass (``group_keys``): a dense counting array when the key space is small,
open addressing otherwise; ``group_tuple`` handles key spaces past 2^62 (many QIs) by hashing
the code tuple and comparing it. Scratch buffers are owned and reused by the caller.
"""
from __future__ import annotations

import numpy as np

from ..._numba_config import njit

_GOLDEN = np.uint64(11400714819323198485)


@njit
def node_keys(codes, rep, identity, cols, strides, keybuf):
    """Mixed-radix key per input class: sum_j codes[cols[j], r] * strides[j].

    codes uint16/int32 (n_cols, n) IN; rep int32 (c,) IN (ignored when identity: r = t);
    cols int64 (d,) IN; strides int64 (d,) IN; keybuf int64 (>= c,) OUT scratch.
    Returns the key view keybuf[:c].
    """
    c = keybuf.shape[0] if identity else rep.shape[0]
    d = cols.shape[0]
    keys = keybuf[:c]
    if d == 0:
        keys[:] = 0
        return keys
    col = codes[cols[0]]
    s0 = strides[0]
    if identity:
        for t in range(c):
            keys[t] = col[t] * s0
        for j in range(1, d):
            col = codes[cols[j]]
            s = strides[j]
            for t in range(c):
                keys[t] += col[t] * s
    else:
        for t in range(c):
            keys[t] = col[rep[t]] * s0
        for j in range(1, d):
            col = codes[cols[j]]
            s = strides[j]
            for t in range(c):
                keys[t] += col[rep[t]] * s
    return keys


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
def _emit(out_rep, out_cnt, out_pos, s, r, w, pos):
    """Record output class s: representative row r, count w, table slot pos."""
    out_rep[s] = r
    out_cnt[s] = w
    out_pos[s] = pos


@njit
def group_keys(keys, rep, cnt, identity, keyspace, dense, hkey, hval, want_cls):
    """Group input classes by key: dense counting array when keyspace <= dense.size, open
    addressing otherwise.

    keys int64 (c,) IN; rep int32 (c,) IN (ignored when identity: r = t), cnt int64 (c,) IN
    (identity: (c,) or empty = count 1); dense int32 IN/OUT scratch, hkey int64 / hval int32 (power-of-two size >= 2c+2)
    IN/OUT scratch: all -1 (hkey, dense) on entry and on exit.
    Returns (rep int32 (C,), cnt int64 (C,), class of each input int32 (c,) or empty).
    """
    c = keys.shape[0]
    cap = c if keyspace > c else keyspace
    out_rep = np.empty(cap, dtype=np.int32)
    out_cnt = np.empty(cap, dtype=np.int64)
    out_pos = np.empty(cap, dtype=np.int64)
    cls = np.empty(c if want_cls else 0, dtype=np.int32)
    has_cnt = cnt.shape[0] > 0
    nout = 0
    if keyspace <= dense.shape[0] and (keyspace <= 65536 or keyspace <= 4 * c):
        for t in range(c):
            key = keys[t]
            s = dense[key]
            w = cnt[t] if has_cnt else 1
            if s < 0:
                dense[key] = nout
                _emit(out_rep, out_cnt, out_pos, nout, t if identity else rep[t], w, key)
                s = nout
                nout += 1
            else:
                out_cnt[s] += w
            if want_cls:
                cls[t] = s
        for s in range(nout):
            dense[out_pos[s]] = -1
    elif keyspace < (np.int64(1) << 31):
        # one packed table: (key << 32) | class, -1 empty (one cache miss per probe)
        size, shift, mask = _table_shape(c)
        low = (np.int64(1) << 32) - 1
        for t in range(c):
            key = keys[t]
            w = cnt[t] if has_cnt else 1
            h = np.int64((np.uint64(key) * _GOLDEN) >> shift)
            while True:
                e = hkey[h]
                if e < 0:
                    hkey[h] = (key << 32) | nout
                    _emit(out_rep, out_cnt, out_pos, nout, t if identity else rep[t], w, h)
                    s = nout
                    nout += 1
                    break
                if (e >> 32) == key:
                    s = e & low
                    out_cnt[s] += w
                    break
                h = (h + 1) & mask
            if want_cls:
                cls[t] = s
        for s in range(nout):
            hkey[out_pos[s]] = -1
    else:
        size, shift, mask = _table_shape(c)
        for t in range(c):
            key = keys[t]
            w = cnt[t] if has_cnt else 1
            h = np.int64((np.uint64(key) * _GOLDEN) >> shift)
            while True:
                k0 = hkey[h]
                if k0 == key:
                    s = hval[h]
                    out_cnt[s] += w
                    break
                if k0 < 0:
                    hkey[h] = key
                    hval[h] = nout
                    _emit(out_rep, out_cnt, out_pos, nout, t if identity else rep[t], w, h)
                    s = nout
                    nout += 1
                    break
                h = (h + 1) & mask
            if want_cls:
                cls[t] = s
        for s in range(nout):
            hkey[out_pos[s]] = -1
    return out_rep[:nout].copy(), out_cnt[:nout].copy(), cls


@njit
def group_tuple(codes, rep, cnt, identity, cols, want_cls):
    """Grouping for key spaces past 2^62 (many QIs): hash the code tuple and compare it."""
    c = codes.shape[1] if identity else rep.shape[0]
    d = cols.shape[0]
    out_rep = np.empty(c, dtype=np.int32)
    out_cnt = np.empty(c, dtype=np.int64)
    cls = np.empty(c if want_cls else 0, dtype=np.int32)
    size, shift, mask = _table_shape(c)
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
    return out_rep[:nout].copy(), out_cnt[:nout].copy(), cls


@njit
def class_stats_ok(out_rep, out_cnt, ok, codes, cols, coff, cncp):
    """``class_stats`` with the suppressed classes given: class s is kept iff ok[s] (privacy
    models beyond k). Same outputs."""
    C = out_rep.shape[0]
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
            r = out_rep[s]
            acc = 0.0
            for j in range(d):
                acc += cncp[coff[cols[j]] + codes[cols[j], r]]
            if d > 0:
                sup_ncp += c * acc / d
        else:
            sq_ok += cc
    return mn, sup, sq_ok, sq_all, sup_ncp


@njit
def class_stats(out_rep, out_cnt, k, codes, cols, coff, cncp):
    """Statistics of a grouped node: (min class size, rows in classes < k, sum of |e|^2 over
    classes >= k, sum of |e|^2 over all classes, sum over suppressed rows of their mean NCP).

    cncp float64 flat: NCP of code x of column c at cncp[coff[c] + x].
    """
    return class_stats_ok(out_rep, out_cnt, out_cnt >= k, codes, cols, coff, cncp)


@njit
def single_qi_suppression(codes, m, k, cnt):
    """Rows in classes smaller than k when grouping by one QI's codes (int32 (t,), m codes);
    ``cnt`` int64 (t,) rows per encoded row, or empty (one each)."""
    counts = np.zeros(m, dtype=np.int64)
    has_cnt = cnt.shape[0] > 0
    for i in range(codes.shape[0]):
        counts[codes[i]] += cnt[i] if has_cnt else 1
    sup = np.int64(0)
    for c in range(m):
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
