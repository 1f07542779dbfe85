"""Classes as doubly linked member lists (numba kernels), shared by the record-moving searches
(``clustering._exchange`` of kab/bha, ``bottomup._refine``).

A partition of rows 0..n-1 into classes 0..cap-1 is held as int64 arrays: ``head`` (cap,) the
first member of each class (-1: empty), ``nxt`` / ``prv`` (n,) the next / previous member of a
row's class (-1: none), ``size`` (cap,) the member counts, ``lab`` (n,) each row's class. A new
member goes to the head of its list. Every operation is O(1) but ``lists`` (O(n + cap)) and
``members`` (O(size))."""
import numpy as np

from .._numba_config import njit


@njit
def link(head, nxt, prv, c, r):
    """Put row r (in no list) at the head of class c's list (size and lab untouched)."""
    nxt[r] = head[c]
    prv[r] = -1
    if head[c] >= 0:
        prv[head[c]] = r
    head[c] = r


@njit
def unlink(head, nxt, prv, c, r):
    """Take row r out of class c's list (size and lab untouched; nxt[r] / prv[r] left stale)."""
    if prv[r] >= 0:
        nxt[prv[r]] = nxt[r]
    else:
        head[c] = nxt[r]
    if nxt[r] >= 0:
        prv[nxt[r]] = prv[r]


@njit
def move(head, nxt, prv, size, lab, r, a, b):
    """Move row r from class a to the head of class b: lists, sizes and lab[r]."""
    unlink(head, nxt, prv, a, r)
    link(head, nxt, prv, b, r)
    size[a] -= 1
    size[b] += 1
    lab[r] = b


@njit
def lists(lab, cap):
    """(head, nxt, prv, size) of the labels lab (int64 (n,), each in 0..cap-1), every list in
    row order."""
    n = lab.shape[0]
    head = np.full(cap, -1, dtype=np.int64)
    nxt = np.full(n, -1, dtype=np.int64)
    prv = np.full(n, -1, dtype=np.int64)
    size = np.zeros(cap, dtype=np.int64)
    for i in range(n - 1, -1, -1):
        link(head, nxt, prv, lab[i], i)
        size[lab[i]] += 1
    return head, nxt, prv, size


@njit
def members(head, nxt, c, out):
    """Rows of class c, in list order, into out[:m]; returns m."""
    m = 0
    r = head[c]
    while r >= 0:
        out[m] = r
        m += 1
        r = nxt[r]
    return m
