"""Row -> class assignments of runs, looked up by row key while DuckDB re-reads the relation.

A run's first read gives every row a key (the hash of its QI values, ``encoding.row_key_sql``)
and the algorithm a class. Rows with equal QI tuples are interchangeable for the k guarantee and
for truthfulness, so the second read (a parallel scan, in any order) hands out, for each key
(found through an open-addressing table over the sorted keys), the classes of that key's rows
one by one: the j-th row seen with a key gets the j-th class
stored for it. No rowid is needed, so any relation works (views, files, DataFrames).

A row whose key was not in the first read, or more rows with a key than the first read had,
raises ConcurrentChangeError (the relation changed between the two reads); a row count check in
SQL catches rows that vanished. A run that read the histogram of distinct QI tuples
(``QIData.counts``, the lattice family) stores one entry per distinct tuple, handed out to as
many rows as it counted: 16 bytes per distinct tuple instead of per row. Two different QI tuples with one 64-bit key are detected when
the assignment is built (DataError; about 1 in 10^6 at 10^7 rows).

Lifetime, with no bound one run could hit while another still needs its entry: a run's
``Pass`` (one scan's counters) is dropped when all its rows have been handed out; an
``Assignment`` is shared by its passes and lives while a pass or a pinned owner (the Python
API's relation) holds it. Passes abandoned part-way (``LIMIT``, an error) are dropped once idle
for ``IDLE_S`` seconds. Memory: 16 to 24 bytes per row while held.
"""
from __future__ import annotations

import itertools
import threading
import time

import numpy as np

from ._numba_config import njit
from .errors import ConcurrentChangeError, DataError

IDLE_S = 600.0


@njit
def _tuples_differ(skeys, order, num, num_null, cat):
    """True when two rows with the same key hold different encoded QI tuples (a collision)."""
    for i in range(1, skeys.shape[0]):
        if skeys[i] != skeys[i - 1]:
            continue
        a = order[i]
        b = order[i - 1]
        for j in range(num.shape[1]):
            if num[a, j] != num[b, j] or num_null[a, j] != num_null[b, j]:
                return True
        for j in range(cat.shape[1]):
            if cat[a, j] != cat[b, j]:
                return True
    return False


@njit
def _first_of(skeys, slots, key):
    """Position of ``key``'s first entry in ``skeys`` through the slot table, or -1."""
    mask = slots.shape[0] - 1
    h = key & mask
    while slots[h] != -1:
        if skeys[slots[h]] == key:
            return slots[h]
        h = (h + 1) & mask
    return -1


@njit
def _hand_out_counted(skeys, slots, classes, counts, used, keys, out):
    """``_hand_out`` when entry e stands for ``counts[e]`` rows (a histogram); ``used`` counts
    the rows handed out per key (at the key's first entry). Same return value."""
    n = skeys.shape[0]
    m = keys.shape[0]
    for i in range(m):
        key = keys[i]
        lo = _first_of(skeys, slots, key)
        if lo < 0:
            return 2 * m + i
        rest = used[lo]
        e = lo
        while e < n and skeys[e] == key and rest >= counts[e]:
            rest -= counts[e]
            e += 1
        if e >= n or skeys[e] != key:
            return m + i
        out[i] = classes[e]
        used[lo] += 1
    return -1


@njit
def _build_slots(skeys, slots):
    """Open-addressing table: for each distinct key, its first position in ``skeys`` stored at
    slot (key & mask), probing linearly (the keys are hashes already)."""
    mask = slots.shape[0] - 1
    for i in range(skeys.shape[0]):
        if i > 0 and skeys[i] == skeys[i - 1]:
            continue
        h = skeys[i] & mask
        while slots[h] != -1:
            h = (h + 1) & mask
        slots[h] = i


@njit
def _hand_out(skeys, slots, classes, used, keys, out):
    """Class of each row of ``keys`` (next unused slot of its key); returns -1 when all found,
    else the index of the first row whose key is unknown (2*m + i) or used up (m + i)."""
    n = skeys.shape[0]
    m = keys.shape[0]
    for i in range(m):
        key = keys[i]
        lo = _first_of(skeys, slots, key)
        if lo < 0:
            return 2 * m + i
        u = used[lo]
        if lo + u >= n or skeys[lo + u] != key:
            return m + i
        out[i] = classes[lo + u]
        used[lo] = u + 1
    return -1


class Assignment:
    """Sorted row keys and the class of each (int32), built once per run. O(n log n).

    With ``data.counts`` (a histogram run) the keys are those of the distinct tuples and
    ``counts`` (int64) says how many rows each entry stands for; ``n`` is the row count."""

    def __init__(self, keys: np.ndarray, ec: np.ndarray, data=None):
        keys = np.ascontiguousarray(keys).view(np.uint64)
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        if data is not None and _tuples_differ(self.keys, order, data.num, data.num_null, data.cat):
            raise DataError("two different QI tuples share one 64-bit row key; this is very rare: "
                            "please report it (anonymizing a copy with one more column avoids it)")
        self.classes = np.asarray(ec)[order].astype(np.int32)
        counts = None if data is None else data.counts
        self.counts = None if counts is None else np.ascontiguousarray(counts[order], dtype=np.int64)
        self.n = int(self.keys.size) if counts is None else int(self.counts.sum())
        n_distinct = 1 + int(np.count_nonzero(self.keys[1:] != self.keys[:-1])) if self.n else 0
        size = 1 << max(4, (2 * n_distinct).bit_length())  # load factor <= 1/2
        self.slots = np.full(size, -1, dtype=np.int64 if self.n >= 2**31 else np.int32)
        _build_slots(self.keys, self.slots)


class Pass:
    """One scan's counters over an Assignment (a statement that reads the output twice, or the
    Python API's relation executed twice, gets a fresh pass each time)."""

    def __init__(self, assignment: Assignment):
        self.assignment = assignment
        self.used = np.zeros(assignment.keys.size,
                             dtype=np.int32 if assignment.counts is None else np.int64)
        self.done = 0
        self.touched = time.monotonic()


class Assignments:
    """Passes by token and pinned assignments by token (see the module docstring)."""

    def __init__(self):
        self._passes: dict[int, Pass] = {}
        self._pinned: dict[int, tuple] = {}
        self._next = itertools.count(1)
        self._lock = threading.Lock()

    def start(self, assignment: Assignment) -> int:
        """A new pass over ``assignment``; its token."""
        with self._lock:
            self._drop_idle()
            token = next(self._next)
            self._passes[token] = Pass(assignment)
        return token

    def pin(self, assignment: Assignment, payload) -> int:
        """Keep ``assignment`` (and ``payload``, the run's published classes) until ``unpin``;
        a token for ``start_pinned``."""
        with self._lock:
            token = next(self._next)
            self._pinned[token] = (assignment, payload)
        return token

    def start_pinned(self, token: int) -> tuple:
        """(a new pass's token, the payload) of a pinned assignment."""
        entry = self._pinned.get(token)
        if entry is None:
            raise ConcurrentChangeError(
                "this anonymized relation was released (its Python object was deleted); "
                "call kanon_duckdb.anonymize again")
        return self.start(entry[0]), entry[1]

    def unpin(self, token: int) -> None:
        with self._lock:
            self._pinned.pop(token, None)

    def classes_of(self, token: int, keys: np.ndarray) -> np.ndarray:
        """Class id (int64) of each row key in ``keys``, in order."""
        p = self._passes.get(token)
        if p is None:
            raise ConcurrentChangeError(
                "k_anonymize: the run's row assignment is gone (the statement was abandoned "
                f"for more than {IDLE_S:.0f} s?); run it again")
        keys = np.ascontiguousarray(keys).view(np.uint64)
        out = np.empty(keys.size, dtype=np.int64)
        a = p.assignment
        with self._lock:  # one scan's chunks arrive from several threads
            if a.counts is None:
                bad = _hand_out(a.keys, a.slots, a.classes, p.used, keys, out)
            else:
                bad = _hand_out_counted(a.keys, a.slots, a.classes, a.counts, p.used, keys, out)
            p.touched = time.monotonic()
            if bad < 0:
                p.done += keys.size
                if p.done >= a.n:
                    self._passes.pop(token, None)
        if bad >= 0:
            self._passes.pop(token, None)
            what = ("a row that was not there when it was anonymized" if bad >= 2 * keys.size
                    else "more rows with some QI values than when it was anonymized")
            raise ConcurrentChangeError(
                f"k_anonymize: the relation changed during the call ({what}); run it again")
        return out

    def _drop_idle(self) -> None:
        now = time.monotonic()
        for t in [t for t, p in self._passes.items() if now - p.touched > IDLE_S]:
            del self._passes[t]

    def __len__(self) -> int:
        return len(self._passes)


STORE = Assignments()  # one per process: tokens are unique across connections
