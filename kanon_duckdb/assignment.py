"""Row -> class assignments of runs, looked up by row key while DuckDB re-reads the relation.

A run's first read gives every row a key (the hash of its QI values, ``encoding.row_key_sql``)
and the algorithm a class. Rows with equal QI tuples are interchangeable for the k guarantee and
for truthfulness, so the second read (a parallel scan, in any order) may give a row the class of
any not yet used first-read row with its key. No rowid is needed, so any relation works (views,
files, DataFrames).

Per-row runs (:class:`Assignment` without counts): the first-read keys stay in first-read order
and an open-addressing table maps each distinct key to its first position, the positions of
equal keys chained in ascending order (O(n) to build, no sort). A second read nearly always
arrives in runs of consecutive first-read rows (a scan hands out chunks of consecutive rows), so
each row first tries the position after the previous row's (sequential memory, no probe) and
only on a mismatch probes the table (the chunk's first row, or a reordered relation); a per-key
resume point keeps that linear when a key has many rows.

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
for ``IDLE_S`` seconds. A pass may carry ``on_done(complete: bool)``: called with True by the
call that hands out its last row, before that chunk returns (the statement's SQL run writes its
kanon_runs row there: the record and the output are one unit), with False when the pass is
dropped incomplete. ``expect_rows`` / ``rows_seen`` count the rows of an output published
without a pass (``output_sql.positional_sql``) the same way, by run id. Memory per row: 4 (class) + 4 (chain) + 4 to 8 (table) bytes besides the
run's keys while held, and 1 byte per pass (plus 4 per row whose key needed a resume point).
"""
from __future__ import annotations

import itertools
import threading
import time

import numpy as np

from ._numba_config import njit
from .encoding import key_collision, rows_differ
from .errors import ConcurrentChangeError

IDLE_S = 600.0


@njit
def _tuples_differ(skeys, order, num, num_null, cat):
    """True when two rows with the same key hold different QI tuples (``rows_differ``: a
    collision)."""
    for i in range(1, skeys.shape[0]):
        if skeys[i] == skeys[i - 1] and rows_differ(num, num_null, cat, order[i], order[i - 1]):
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
    """Class of each row of ``keys`` for a histogram run (entry e of the sorted ``skeys`` stands
    for ``counts[e]`` rows; ``used`` counts the rows handed out per key, at its first entry).
    Returns -1 when all found, else the index of the first row whose key is unknown (2*m + i)
    or used up (m + i)."""
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
def _index_rows(keys, slots, chain, num, num_null, cat):
    """Fill ``slots`` (open addressing, linear probing on the key's low bits: the keys are hashes
    already) with the first position of each distinct key and ``chain[i]`` with the next position
    holding row i's key (-1 at the last). Returns True when two rows with one key hold different
    QI tuples (``rows_differ``: a collision; ``num`` with no rows skips the check). O(n)."""
    mask = slots.shape[0] - 1
    check = num.shape[0] == keys.shape[0]
    for i in range(keys.shape[0] - 1, -1, -1):  # backwards: every chain ascends
        key = keys[i]
        h = key & mask
        while slots[h] != -1 and keys[slots[h]] != key:
            h = (h + 1) & mask
        j = slots[h]
        chain[i] = j
        slots[h] = i
        if j >= 0 and check and rows_differ(num, num_null, cat, i, j):
            return True
    return False


@njit
def _hand_out_rows(keys, slots, chain, classes, used, resume, last, rows, out):
    """Class of each row key of ``rows`` (one chunk of a scan): the position after the previous
    row's when it holds the key and is unused, else the first unused position of the key's chain
    (from its resume point, ``resume[head]`` = position + 1, 0 = from the head). ``last[0]`` is
    the previous row's position across calls. Returns -1 when all found, else the index of the
    first row whose key is unknown (2*m + i) or used up (m + i)."""
    n = keys.shape[0]
    m = rows.shape[0]
    mask = slots.shape[0] - 1
    p = last[0]
    for i in range(m):
        key = rows[i]
        p += 1
        if p >= n or keys[p] != key or used[p] != 0:
            h = key & mask
            while slots[h] != -1 and keys[slots[h]] != key:
                h = (h + 1) & mask
            head = slots[h]
            if head < 0:
                return 2 * m + i
            p = head if resume[head] == 0 else resume[head] - 1
            while p >= 0 and used[p] != 0:
                p = chain[p]
            if p < 0:
                return m + i
            resume[head] = p + 1
        used[p] = 1
        out[i] = classes[p]
    last[0] = p
    return -1


class Assignment:
    """The classes of a run's rows, found by row key (see the module docstring).

    Per-row runs (``data`` without counts, or no ``data``): ``keys`` in first-read order (kept,
    not copied), the class of each (int32), the key table ``slots`` and ``chain``; O(n) to
    build. With ``data.counts`` (a histogram run) the keys are those of the distinct tuples,
    sorted, and ``counts`` (int64) says how many rows each entry stands for (O(D log D)); ``n``
    is the row count. ``data`` (num, num_null, cat of the first read) is only read here, to
    refuse two different tuples sharing one key."""

    def __init__(self, keys: np.ndarray, ec: np.ndarray, data=None):
        keys = np.ascontiguousarray(keys).view(np.uint64)
        counts = None if data is None else getattr(data, "counts", None)
        if counts is None:
            self._init_rows(keys, ec, data)
            return
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        if _tuples_differ(self.keys, order, data.num, data.num_null, data.cat):
            raise key_collision()
        self.classes = np.asarray(ec)[order].astype(np.int32)
        self.counts = np.ascontiguousarray(counts[order], dtype=np.int64)
        self.n = int(self.counts.sum())
        n_distinct = 1 + int(np.count_nonzero(self.keys[1:] != self.keys[:-1])) if self.n else 0
        size = 1 << max(4, (2 * n_distinct).bit_length())  # load factor <= 1/2
        self.slots = np.full(size, -1, dtype=np.int64 if self.n >= 2**31 else np.int32)
        self.chain = None
        _build_slots(self.keys, self.slots)

    def _init_rows(self, keys, ec, data):
        n = int(keys.size)
        self.keys, self.counts, self.n = keys, None, n
        self.classes = np.asarray(ec).astype(np.int32)
        pos = np.int64 if n >= 2**31 - 1 else np.int32
        self.slots = np.full(1 << max(4, (3 * n // 2).bit_length()), -1, dtype=pos)  # load < 2/3
        self.chain = np.empty(n, dtype=pos)
        none = np.zeros((0, 0))
        if _index_rows(keys, self.slots, self.chain,
                       none if data is None else data.num,
                       none.astype(bool) if data is None else data.num_null,
                       none.astype(np.int32) if data is None else data.cat):
            raise key_collision()


class Pass:
    """One scan's counters over an Assignment (a statement that reads the output twice, or the
    Python API's relation executed twice, gets a fresh pass each time) and what the scan
    publishes beside the class ids (``payload``: ``row_values.ClassValues``): per-row runs mark each
    used position (``used``), keep the resume point of keys that needed a probe (``resume``,
    zero pages cost no memory until touched) and the last position handed out (``last``)."""

    def __init__(self, assignment: Assignment, payload=None, on_done=None):
        self.assignment, self.payload, self.on_done = assignment, payload, on_done
        n = assignment.keys.size
        if assignment.counts is None:
            self.used = np.zeros(n, dtype=np.uint8)
            self.resume = np.zeros(n, dtype=assignment.chain.dtype)
            self.last = np.full(1, n - 1, dtype=np.int64)  # the first row probes
        else:
            self.used = np.zeros(n, dtype=np.int64)
        self.done = 0
        self.touched = time.monotonic()


class Assignments:
    """Passes by token and pinned assignments by token (see the module docstring)."""

    def __init__(self):
        self._passes: dict[int, Pass] = {}
        self._pinned: dict[int, tuple] = {}
        self._counts: dict[int, list] = {}  # run id -> [rows left, on_done, last touched]
        self._next = itertools.count(1)
        self._lock = threading.Lock()

    def start(self, assignment: Assignment, payload=None, on_done=None) -> int:
        """A new pass over ``assignment`` carrying ``payload`` (``published_of``) and
        ``on_done`` (see the module docstring); its token."""
        with self._lock:
            dropped = self._drop_idle()
            token = next(self._next)
            self._passes[token] = Pass(assignment, payload, on_done)
        _abandon(dropped)
        return token

    def expect_rows(self, run_id: int, n: int, on_done) -> None:
        """Count the ``n`` output rows of run ``run_id`` (``rows_seen``), calling ``on_done``
        as a pass does."""
        with self._lock:
            dropped = self._drop_idle()
            self._counts[run_id] = [n, on_done, time.monotonic()]
        _abandon(dropped)

    def rows_seen(self, run_id: int, m: int) -> None:
        """``m`` more output rows of run ``run_id`` were produced; the call that completes the
        count runs its ``on_done(True)`` (its errors are the statement's)."""
        with self._lock:
            entry = self._counts.get(run_id)
            if entry is None:
                return
            entry[0] -= m
            entry[2] = time.monotonic()
            if entry[0] > 0:
                return
            del self._counts[run_id]
        entry[1](True)

    def pin(self, assignment: Assignment, payload) -> int:
        """Keep ``assignment`` (and ``payload``, the run's published classes) until ``unpin``;
        a token for ``start_pinned``."""
        with self._lock:
            token = next(self._next)
            self._pinned[token] = (assignment, payload)
        return token

    def start_pinned(self, token: int) -> tuple:
        """(a new pass's token, the payload) of a pinned assignment; the pass carries the
        payload too."""
        entry = self._pinned.get(token)
        if entry is None:
            raise ConcurrentChangeError(
                "this anonymized relation was released (its Python object was deleted); "
                "call kanon_duckdb.anonymize again")
        return self.start(entry[0], entry[1]), entry[1]

    def payload_of(self, token: int):
        """The payload of pass ``token`` (None for an unknown token)."""
        p = self._passes.get(token)
        return None if p is None else p.payload

    def unpin(self, token: int) -> None:
        with self._lock:
            self._pinned.pop(token, None)

    def classes_of(self, token: int, keys: np.ndarray) -> np.ndarray:
        """Class id (int64) of each row key in ``keys``, in order."""
        return self.published_of(token, keys)[0]

    def published_of(self, token: int, keys: np.ndarray, n_rows: int | None = None) -> tuple:
        """(``classes_of``, the pass's payload). ``n_rows``: the relation's row count in the
        reading statement, refused (ConcurrentChangeError) unless the run read as many rows."""
        p = self._passes.get(token)
        if p is None:
            raise ConcurrentChangeError(
                "k_anonymize: the run's row assignment is gone (the statement was abandoned "
                f"for more than {IDLE_S:.0f} s?); run it again")
        a = p.assignment
        if n_rows is not None and n_rows != a.n:
            _abandon([self._passes.pop(token, None)])
            raise ConcurrentChangeError("k_anonymize: the relation changed during the call "
                                        f"({a.n} rows anonymized, {n_rows} read); run it again")
        keys = np.ascontiguousarray(keys).view(np.uint64)
        out = np.empty(keys.size, dtype=np.int64)
        with self._lock:  # one scan's chunks arrive from several threads
            if a.counts is None:
                bad = _hand_out_rows(a.keys, a.slots, a.chain, a.classes, p.used, p.resume,
                                     p.last, keys, out)
            else:
                bad = _hand_out_counted(a.keys, a.slots, a.classes, a.counts, p.used, keys, out)
            p.touched = time.monotonic()
            complete = False
            if bad < 0:
                p.done += keys.size
                complete = p.done >= a.n and self._passes.pop(token, None) is not None
        if complete and p.on_done is not None:
            p.on_done(True)  # the output's last row: before this chunk returns
        if bad >= 0:
            _abandon([self._passes.pop(token, None)])
            what = ("a row that was not there when it was anonymized" if bad >= 2 * keys.size
                    else "more rows with some QI values than when it was anonymized")
            raise ConcurrentChangeError(
                f"k_anonymize: the relation changed during the call ({what}); run it again")
        return out, p.payload

    def _drop_idle(self) -> list:
        """Drop passes and counts idle for ``IDLE_S`` (abandoned part-way); returns them, for
        ``_abandon`` once the lock is released."""
        now = time.monotonic()
        dropped = [self._passes.pop(t) for t, p in list(self._passes.items())
                   if now - p.touched > IDLE_S]
        for run_id, entry in list(self._counts.items()):
            if now - entry[2] > IDLE_S:
                del self._counts[run_id]
                dropped.append(entry[1])
        return dropped

    def __len__(self) -> int:
        return len(self._passes)


def _abandon(dropped) -> None:
    """``on_done(False)`` of passes (or count callbacks) dropped incomplete."""
    for p in dropped:
        on_done = p if callable(p) else getattr(p, "on_done", None)
        if on_done is not None:
            on_done(False)


def classes_in_order(assignment: Assignment, keys: np.ndarray) -> np.ndarray:
    """Class id (int64) of every row of one whole read of the relation, ``keys`` its row keys
    in read order, for a histogram run (``assignment`` with counts): each key is handed out as
    many times as its tuples counted (``_hand_out_counted``, the class join's look-up in one
    call). ConcurrentChangeError when the read differs from the histogram: a key it did not
    count, more rows with a key than counted, or fewer rows in all. O(n)."""
    keys = np.ascontiguousarray(keys).view(np.uint64)
    out = np.empty(keys.size, dtype=np.int64)
    p = Pass(assignment)
    bad = _hand_out_counted(assignment.keys, assignment.slots, assignment.classes,
                            assignment.counts, p.used, keys, out)
    if bad >= 0 or keys.size != assignment.n:
        what = ("a row that was not there when it was counted" if bad >= 2 * keys.size
                else "more rows with some QI values than counted" if bad >= 0
                else "fewer rows than counted")
        raise ConcurrentChangeError(
            f"k_anonymize: the relation changed during the call ({what}); run it again")
    return out


STORE = Assignments()  # one per process: tokens are unique across connections
