"""Dictionary codes of a text column, read straight from Arrow string buffers, batch by batch.

:class:`StringCodes` gives each distinct non-NULL string of a column an int32 code: first the
``labels`` given up front (codes 0..len(labels)-1, e.g. a taxonomy's leaves in leaf order, so
that a value's code is already its leaf ordinal), then every new value in order of first
appearance. ``encode`` writes one batch's codes into a caller's array and counts the rows of each
code; the distinct values come back once, with their counts, from ``values`` / ``counts``.

One numba pass per batch over the offsets and bytes (an open-addressing table keyed by a
value's bytes packed into a word when it has at most 8, else by their 64-bit FNV-1a hash
confirmed byte by byte): O(bytes) per batch, no Python
object per row, and no per-batch dictionary to merge afterwards. Strings are equal exactly when
their UTF-8 bytes are, so the codes equal those of a Python dict over the values.
Memory: the distinct values' bytes, 8 + 4 + 8 + 8 bytes per distinct value and a table of at least
twice the distinct values' count (int32).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ._numba_config import njit
from pyarrow._compute import call_function

from .arrowconv import cast, strings, to_numpy, validity

_FNV_OFFSET = np.uint64(0xCBF29CE484222325)
_FNV_PRIME = np.uint64(0x100000001B3)
_FIB = np.uint64(0x9E3779B97F4A7C15)  # 2^64 / golden ratio: Fibonacci hashing
_COUNTS = 0   # state[0]: distinct values coded so far
_USED = 1     # state[1]: bytes of the arena in use
_NULLS = 2    # state[2]: NULL rows seen (weighted)
# from this many rows of values longer than a word on average, an unweighted batch is coded
# through Arrow's dictionary encoding (``StringCodes._encode_by_dictionary``)
DICT_ROWS = 1 << 12


@njit
def _same_bytes(arena, start, data, a, b):
    """arena[start:start + b - a] == data[a:b]."""
    for p in range(b - a):
        if arena[start + p] != data[a + p]:
            return False
    return True


@njit
def _code_rows(offsets, data, bitmap, bit0, weights, null_code, out, slots, keys, lens,
               value_off, arena, counts, state, start):
    """Code rows ``start..`` of one string array into ``out`` (NULL -> ``null_code``), adding
    each row's weight (1 when ``weights`` is empty) to ``counts`` of its code.

    offsets int32/int64 (n + 1,) and data uint8: the array's offsets (already sliced to its rows)
    and bytes; bitmap uint8: its validity bits from bit ``bit0`` (empty: no NULLs).
    A value's key: its bytes packed into a word when it has at most 8 (equal keys and lengths
    then mean equal values), else their FNV-1a hash (confirmed byte by byte).
    Table (grown by the caller): slots int32 (a power of 2, -1 empty) -> code, placed by
    Fibonacci hashing of the key; keys uint64, lens int32, value_off int64 and arena uint8
    hold each code's key, length and bytes.
    Returns the first row not coded: n when done, earlier when a new value needs more room
    (more codes, arena bytes or slots at load 1/2), with ``state`` saved to resume there.
    """
    n = out.shape[0]
    mask = slots.shape[0] - 1
    shift = np.uint64(64 - _log2(slots.shape[0]))
    n_codes, used = state[_COUNTS], state[_USED]
    has_bitmap = bitmap.shape[0] > 0
    weighted = weights.shape[0] > 0
    for i in range(start, n):
        if has_bitmap:
            bit = bit0 + i
            if ((bitmap[bit >> 3] >> (bit & 7)) & 1) == 0:
                out[i] = null_code
                state[_NULLS] += weights[i] if weighted else 1
                continue
        a, b = offsets[i], offsets[i + 1]
        m = b - a
        if m <= 8:
            k = np.uint64(0)
            for p in range(m):
                k |= np.uint64(data[a + p]) << np.uint64(8 * p)
        else:
            k = _FNV_OFFSET
            for p in range(a, b):
                k = (k ^ np.uint64(data[p])) * _FNV_PRIME
        s = np.int64((k * _FIB) >> shift)
        while True:
            c = slots[s]
            if c == -1 or (keys[c] == k and lens[c] == m
                           and (m <= 8 or _same_bytes(arena, value_off[c], data, a, b))):
                break
            s = (s + 1) & mask
        if c == -1:
            if (n_codes == keys.shape[0] or used + m > arena.shape[0]
                    or 2 * (n_codes + 1) > slots.shape[0]):
                state[_COUNTS], state[_USED] = n_codes, used
                return i
            for p in range(m):
                arena[used + p] = data[a + p]
            keys[n_codes], lens[n_codes], value_off[n_codes] = k, m, used
            used += m
            slots[s] = n_codes
            c = n_codes
            n_codes += 1
        out[i] = c
        if weighted:
            counts[c] += weights[i]
        else:
            counts[c] += 1
    state[_COUNTS], state[_USED] = n_codes, used
    return n


@njit
def _log2(size):
    r = 0
    while (1 << r) < size:
        r += 1
    return r


@njit
def _rehash(keys, n_codes, slots):
    """Enter codes 0..n_codes-1 into the empty table ``slots`` by their keys."""
    mask = slots.shape[0] - 1
    shift = np.uint64(64 - _log2(slots.shape[0]))
    for c in range(n_codes):
        s = np.int64((keys[c] * _FIB) >> shift)
        while slots[s] != -1:
            s = (s + 1) & mask
        slots[s] = c


class StringCodes:
    """Codes of one text column's distinct values across batches (see the module docstring)."""

    def __init__(self, labels=()):
        self._keys = np.empty(16, dtype=np.uint64)
        self._lens = np.empty(16, dtype=np.int32)
        self._value_off = np.zeros(16, dtype=np.int64)
        self._arena = np.empty(256, dtype=np.uint8)
        self._counts = np.zeros(16, dtype=np.int64)
        self._state = np.zeros(3, dtype=np.int64)
        self._slots = self._table(64)
        labels = list(labels)
        if labels:
            if len(set(labels)) != len(labels) or any(v is None for v in labels):
                raise ValueError("StringCodes: labels must be distinct strings")
            self.encode(strings(labels), np.empty(len(labels), dtype=np.int32))
            self._counts[:] = 0

    @property
    def n_codes(self) -> int:
        return int(self._state[_COUNTS])

    @property
    def null_count(self) -> int:
        """NULL rows seen (weighted like ``counts``)."""
        return int(self._state[_NULLS])

    def counts(self) -> np.ndarray:
        """int64 (n_codes,): rows (or summed weights) of each code so far."""
        return self._counts[:self.n_codes].copy()

    def values(self) -> list:
        """The distinct values (str) by code. O(their bytes)."""
        raw = self._arena[:self._state[_USED]].tobytes()
        n = self.n_codes
        return [raw[a:a + m].decode("utf-8")
                for a, m in zip(self._value_off[:n].tolist(), self._lens[:n].tolist())]

    def encode(self, arr, out: np.ndarray, null_code: int = -1, weights=None) -> None:
        """Write the codes of the rows of the text Arrow array ``arr`` to ``out`` (int32, its
        length; any stride), NULL as ``null_code``; ``weights`` (int64, optional) count each
        row that many times. O(rows + bytes), amortized over the table's growth."""
        if arr.type not in (pa.string(), pa.large_string()):
            arr = cast(arr, pa.large_string())  # string_view and other text layouts
        n = len(arr)
        if out.shape[0] != n:
            raise ValueError(f"StringCodes.encode: {n} rows but out holds {out.shape[0]}")
        if n == 0:
            return
        if weights is None and n >= DICT_ROWS and self._long_values(arr):
            self._encode_by_dictionary(arr, out, null_code)
            return
        validity, offsets_buf, data_buf = arr.buffers()[:3]
        offsets = _read_only(np.frombuffer(offsets_buf, dtype=np.int32 if arr.type == pa.string()
                                           else np.int64)[arr.offset:arr.offset + n + 1])
        data = _read_only(np.frombuffer(data_buf, dtype=np.uint8) if data_buf is not None
                          else np.zeros(0, dtype=np.uint8))
        bitmap = _read_only(np.frombuffer(validity, dtype=np.uint8) if arr.null_count
                            else np.zeros(0, dtype=np.uint8))
        weights = (np.zeros(0, dtype=np.int64) if weights is None
                   else np.ascontiguousarray(weights, dtype=np.int64))
        row = 0
        while True:
            row = _code_rows(offsets, data, bitmap, arr.offset, weights, null_code, out,
                             self._slots, self._keys, self._lens, self._value_off, self._arena,
                             self._counts, self._state, row)
            if row == n:
                return
            self._grow(int(offsets[row + 1] - offsets[row]))

    @staticmethod
    def _long_values(arr) -> bool:
        """True when the values of the text array ``arr`` average more than 8 bytes (the kernel
        then hashes and compares them byte by byte)."""
        offsets = arr.buffers()[1]
        if offsets is None:
            return False
        view = np.frombuffer(offsets, dtype=np.int32 if arr.type == pa.string() else np.int64)
        return int(view[arr.offset + len(arr)] - view[arr.offset]) > 8 * len(arr)

    def _encode_by_dictionary(self, arr, out: np.ndarray, null_code: int) -> None:
        """``encode`` (unweighted) through Arrow's dictionary encoding: its dictionary lists the
        distinct values in order of first appearance, so coding the dictionary (counting
        nothing) gives new values the codes a row-by-row pass would; each row then takes its
        value's code and the codes count their rows. O(rows + bytes), the hashing in Arrow."""
        encoded = call_function("dictionary_encode", [arr])
        dictionary, indices = encoded.dictionary, encoded.indices
        codes_of = np.empty(len(dictionary), dtype=np.int32)
        self.encode(dictionary, codes_of, null_code, np.zeros(len(dictionary), dtype=np.int64))
        index = to_numpy(indices).astype(np.intp)  # a NULL row's index: 0, masked below
        codes = codes_of[index] if len(dictionary) else np.full(len(arr), null_code, np.int32)
        valid = validity(indices) if indices.null_count else None
        rows = np.bincount(index if valid is None else index[valid], minlength=len(dictionary))
        if valid is not None:
            codes[~valid] = null_code
            self._state[_NULLS] += indices.null_count
        out[:] = codes
        self._counts[codes_of] += rows

    def _grow(self, value_bytes: int) -> None:
        """Room for one more value of ``value_bytes`` bytes: each full part doubles."""
        n_codes, used = self.n_codes, int(self._state[_USED])
        if n_codes == self._keys.shape[0]:
            cap = 2 * n_codes
            self._keys = np.resize(self._keys, cap)
            self._lens = np.resize(self._lens, cap)
            self._value_off = np.resize(self._value_off, cap)
            self._counts = np.concatenate([self._counts, np.zeros(cap - n_codes, np.int64)])
        if used + value_bytes > self._arena.shape[0]:
            self._arena = np.resize(self._arena, max(2 * self._arena.shape[0],
                                                     used + value_bytes))
        if 2 * (n_codes + 1) > self._slots.shape[0]:
            self._slots = self._table(2 * self._slots.shape[0])

    def _table(self, size: int) -> np.ndarray:
        """A slot table of ``size`` (a power of 2) holding the codes so far."""
        slots = np.full(size, -1, dtype=np.int32)
        _rehash(self._keys, self.n_codes, slots)  # also when empty: one kernel compiled early
        return slots


def _read_only(view: np.ndarray) -> np.ndarray:
    """``view`` marked read-only: Arrow buffers are immutable, and numba compiles one
    specialization per writability, so every buffer reaches the kernel alike."""
    view.flags.writeable = False
    return view
