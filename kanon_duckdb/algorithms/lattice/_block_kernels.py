"""Numba kernels of the blocked tuple order (``blocks.py``): sort the encoded tuples by the leaves
of a few QIs, find the segments of equal leaves, and group a node block by block, stopping as
soon as the node is known infeasible.

No validation here; ``blocks.py`` and the checker prepare the arrays (layout of the byte planes:
``_kernels``).
"""
from __future__ import annotations

import numpy as np

from numba import prange

from ..._numba_config import njit, njit_parallel
from ._kernels import report_piece


@njit
def lex_order(leaves, nleaf):
    """The stable permutation sorting rows by (leaves[0], leaves[1], ...): int64 (t,), position
    -> row. leaves int32 (m, t), each row's leaf ordinal of m QIs (0 <= leaf < nleaf[i]; the
    product of nleaf fits a counting array). One counting sort on the mixed-radix key (the
    first QI most significant): O(m t + prod(nleaf))."""
    m, t = leaves.shape
    key = np.zeros(t, dtype=np.int64)
    for i in range(m):
        col = leaves[i]
        r = nleaf[i]
        for s in range(t):
            key[s] = key[s] * r + col[s]
    size = 1
    for i in range(m):
        size *= nleaf[i]
    pos = np.zeros(size + 1, dtype=np.int64)
    for s in range(t):
        pos[key[s] + 1] += 1
    for x in range(size):
        pos[x + 1] += pos[x]
    perm = np.empty(t, dtype=np.int64)
    for s in range(t):
        x = key[s]
        perm[pos[x]] = s
        pos[x] += 1
    return perm


@njit_parallel
def gather_rows(col, perm):
    """col[perm] (a column of the rows in sorted order), on numba's threads."""
    out = np.empty(perm.shape[0], dtype=col.dtype)
    for s in prange(perm.shape[0]):
        out[s] = col[perm[s]]
    return out


@njit
def segment_starts(sorted_leaves):
    """Per prefix length p = 1..m: the positions where the leaves of QIs 0..p-1 change (the
    first position included), as one int64 array per p in a flat array with offsets:
    (flat, off int64 (m + 1,)). sorted_leaves int32 (m, t) in sorted order. O(m t)."""
    m, t = sorted_leaves.shape
    first = np.zeros(t, dtype=np.int64)  # the first p whose leaf changes at s (m: none)
    for s in range(t):
        f = m
        if s == 0:
            f = 0
        else:
            for i in range(m):
                if sorted_leaves[i, s] != sorted_leaves[i, s - 1]:
                    f = i
                    break
        first[s] = f
    count = np.zeros(m + 1, dtype=np.int64)
    for s in range(t):
        if first[s] < m:
            count[first[s] + 1] += 1
    off = np.zeros(m + 1, dtype=np.int64)
    run = 0
    for p in range(m):  # segments of prefix p + 1: every change at a QI <= p
        run += count[p + 1]
        off[p + 1] = off[p] + run
    flat = np.empty(off[m], dtype=np.int64)
    fill = off[:m].copy()
    for s in range(t):
        for p in range(first[s], m):
            flat[fill[p]] = s
            fill[p] += 1
    return flat, off


@njit
def _run_keys(planes, rows, strides, a, b, keybuf):
    """keybuf[:b - a] = the local keys of positions a..b-1, plane by plane (streaming)."""
    for t in range(b - a):
        keybuf[t] = 0
    for i in range(rows.shape[0]):
        row = planes[rows[i]]
        st = strides[i]
        for t in range(a, b):
            keybuf[t - a] += np.int64(row[t]) * st


@njit
def _group_blocks(planes, rows, strides, cnt, has_cnt, run_start, run_end, block_ptr, b0, b1,
                  k, stop_sup, cap, slots, touched, keybuf, out_first, out_cnt, o, th, tsup, tcls,
                  tread, halt):
    """Group blocks b0..b1-1 (a thread's share) appending their classes to out_first / out_cnt
    (this thread's buffers) from slot o on; returns the next free slot. slots int64 (>= local
    key space,) all 0 on entry and exit (the rows so far of a key's class in its block: a
    class is new when its slot is 0, every tuple standing for at least one row); touched,
    keybuf int64 scratch. A new class writes its first position; once its block is done, its
    rows (the codes are read from the first positions only for a completed grouping:
    ``group_runs``). After each block its rows in
    classes smaller than k go to tsup[th], its classes to tcls[th], its tuples to tread[th];
    past stop_sup or cap over all threads (sums that only grow: lower bounds of the totals)
    halt[0] is set and every thread stops at its next block."""
    B = keybuf.shape[0]
    for b in range(b0, b1):
        if halt[0] != 0:
            break
        nt = 0
        ob = o
        read = np.int64(0)
        for r in range(block_ptr[b], block_ptr[b + 1]):
            read += run_end[r] - run_start[r]
            for a in range(run_start[r], run_end[r], B):
                e = min(a + B, run_end[r])
                _run_keys(planes, rows, strides, a, e, keybuf)
                for t in range(a, e):
                    key = keybuf[t - a]
                    v = slots[key]
                    if v == 0:
                        touched[nt] = key
                        out_first[ob + nt] = t
                        nt += 1
                    slots[key] = v + (cnt[t] if has_cnt else 1)
        sup = np.int64(0)
        for i in range(nt):
            c = slots[touched[i]]
            slots[touched[i]] = 0
            out_cnt[ob + i] = c
            if c < k:
                sup += c
        o = ob + nt
        tread[th] += read
        if report_piece(tsup, tcls, th, sup, nt, stop_sup, cap, halt):
            break
    return o


@njit
def _split(bsize, b0, b1, T):
    """Blocks b0..b1-1 cut into T contiguous ranges of about equal tuples: int64 (T + 1,)."""
    cut = np.empty(T + 1, dtype=np.int64)
    cut[0] = b0
    cut[T] = b1
    lo, hi = bsize[b0], bsize[b1]
    b = b0
    for th in range(1, T):
        while b < b1 and bsize[b] < lo + th * (hi - lo) // T:
            b += 1
        cut[th] = b
    return cut


@njit_parallel
def group_runs(planes, rows, strides, crow, cnb, cnt, run_start, run_end, block_ptr, k, limit,
               probe, cap, slots, maxblock, buf_first, buf_cnt, code_like):
    """Group the encoded tuples at a node block by block, on threads (one per row of slots),
    stopping as soon as the node is known infeasible.

    A block is a list of runs of positions (run r = run_start[r] .. run_end[r] - 1, block b =
    runs block_ptr[b] .. block_ptr[b + 1] - 1) holding every tuple of each of its classes (no
    class of the node spans two blocks). The local key of position t, sum_i planes[rows[i], t]
    * strides[i], tells its class within its block (the node's key without the QIs constant in
    a block); slots int64 (threads, > every local key) all 0 on entry and exit. crow int64 (d,
    3) / cnb int64 (d,): the planes of each QI's column at the node (cnb 0: code 0). cnt int64
    rows per tuple (empty: 1 each); k: a class of fewer rows is suppressed; limit: the node is
    infeasible past this many suppressed rows; cap: or past this many classes; maxblock: the
    most tuples of a block. buf_first / buf_cnt int64 (threads, S), S >= min(cap + 1, tuples)
    + maxblock: each thread's classes; code_like: an array of the dtype of the codes.

    Phase 1 groups the blocks of the first ``probe`` fraction (0..1) of the tuples, stopping
    once more than ``limit`` rows are known suppressed (a block's classes are complete once it
    is done); phase 2 the other blocks, stopping only past ``cap`` classes. Each phase splits
    its blocks among the threads in contiguous ranges of about equal tuples.

    Returns (stopped, first int64 (C,), cnt int64 (C,), kc (d, C), tuples read): stopped
    (empty arrays) iff the node has more than ``cap`` classes or more than ``limit``
    suppressed rows in the classes of the phase-1 blocks (probe 1: of all blocks); otherwise
    every class in block order (within a block by first tuple) with its first position, rows
    and codes at the node (read from the planes at the first positions once the grouping is
    complete, QI by QI on the threads). Neither depends on the number of threads or their
    interleaving. O(tuples read · len(rows) / threads + blocks + classes · d)."""
    nb = block_ptr.shape[0] - 1
    T = slots.shape[0]
    d = cnb.shape[0]
    has_cnt = cnt.shape[0] > 0
    bsize = np.zeros(nb + 1, dtype=np.int64)  # tuples before block b
    for b in range(nb):
        s = 0
        for r in range(block_ptr[b], block_ptr[b + 1]):
            s += run_end[r] - run_start[r]
        bsize[b + 1] = bsize[b] + s
    total = bsize[nb]
    mid = 0  # phase 1: blocks 0 .. mid - 1
    while mid < nb and bsize[mid] < probe * total:
        mid += 1
    tsup = np.zeros(T, dtype=np.int64)
    tcls = np.zeros(T, dtype=np.int64)
    tread = np.zeros(T, dtype=np.int64)
    seg = np.zeros((2, T + 1), dtype=np.int64)  # end of each thread's classes after a phase
    halt = np.zeros(1, dtype=np.int64)
    tb = max(min(np.int64(slots.shape[1]), maxblock), np.int64(1))
    stop_sup = limit
    b0, b1 = 0, mid
    for phase in range(2):
        cut = _split(bsize, b0, b1, T)
        for th in prange(T):
            touched = np.empty(tb, dtype=np.int64)
            keybuf = np.empty(4096, dtype=np.int64)
            start = seg[0, th] if phase == 1 else 0
            seg[phase, th] = _group_blocks(planes, rows, strides, cnt, has_cnt, run_start,
                                           run_end, block_ptr, cut[th], cut[th + 1], k,
                                           stop_sup, cap, slots[th], touched, keybuf,
                                           buf_first[th], buf_cnt[th], start, th, tsup, tcls,
                                           tread, halt)
        if halt[0] != 0 or tsup.sum() > stop_sup or tcls.sum() > cap:
            return (True, np.empty(0, dtype=np.int64), np.empty(0, dtype=np.int64),
                    np.empty((d, 0), dtype=code_like.dtype), tread.sum())
        stop_sup = np.int64(1) << 62
        b0, b1 = mid, nb
    nout = tcls.sum()
    first = np.empty(nout, dtype=np.int64)
    counts = np.empty(nout, dtype=np.int64)
    kc = np.empty((d, nout), dtype=code_like.dtype)
    o = 0
    for phase in range(2):  # phase 1's blocks, then phase 2's; each thread's in order
        for th in range(T):
            a = seg[0, th] if phase == 1 else 0
            for i in range(a, seg[phase, th]):
                first[o] = buf_first[th, i]
                counts[o] = buf_cnt[th, i]
                o += 1
    for j in prange(d):  # each class's codes: its first tuple's
        nb_ = cnb[j]
        for i in range(nout):
            c = 0
            for y in range(nb_):
                c |= np.int64(planes[crow[j, y], first[i]]) << (8 * y)
            kc[j, i] = c
    return False, first, counts, kc, tread.sum()
