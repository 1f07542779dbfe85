"""How a numeric QI's values travel through the float64 kernels and come back exactly.

Algorithms see a numeric QI as float64 coordinates (``QIData.num``). Three representations:

- ``plain``  the coordinate is the value. Used when every value is exact in float64 and the NULL
  sentinel (``ncp.null_sentinel``) lies strictly below the minimum: integers within +-2^53,
  finite doubles whose minimum is not so large in magnitude that ``min - 1 == min`` and whose
  range does not overflow. Nearly every column; no extra cost.
- ``offset`` (integers) the coordinate is ``value - base`` (``base`` = the column minimum, an
  exact int), for integers beyond +-2^53 whose range is below 2^53 (epoch nanoseconds within
  100 days, ids near 2^62). Widths, and so NCP, are unchanged by the shift.
- ``rank``   the coordinate is the rank of the value among the column's sorted distinct values
  (``values``, exact int64 or float64 incl. +-inf): integers whose range reaches 2^53, doubles
  holding +-inf, a range that overflows, or a minimum that swallows the NULL sentinel. The
  algorithms then measure widths in ranks; published values and metrics use the real values.

Every representation is order-preserving, so a class's smallest and largest coordinate decode to
its exact smallest and largest value. ``decode_int`` / ``decode_float`` map published
coordinates (NaN = NULL range) back. ``value_lo`` / ``value_hi`` are the column's finite
extremes, the global range of numeric NCP (``kanon_duckdb.ncp``): exact Python ints for an
integer column (a double of a value near 2^62 is off by up to 512), floats otherwise.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EXACT_INT = 2 ** 53  # every integer of magnitude <= 2^53 is exact in float64


@dataclass(frozen=True)
class NumericCodec:
    kind: str                        # 'plain' | 'offset' | 'rank'
    value_lo: float | int            # finite min of the values (NCP range), 0 if none; an int
    value_hi: float | int            # finite max                  (exact) for integer columns
    base: int = 0                    # offset: value = base + coordinate
    values: np.ndarray | None = None  # rank: sorted distinct values (int64 or float64)

    def decode_float(self, coords) -> np.ndarray:
        """Real values (float64, NaN kept) of coordinates."""
        c = np.asarray(coords, dtype=np.float64)
        if self.kind == "plain":
            return c
        nan = np.isnan(c)
        idx = np.where(nan, 0, c).astype(np.int64)
        if self.kind == "offset":
            out = (np.float64(self.base) + idx.astype(np.float64))
        else:
            out = self.values[idx].astype(np.float64) if self.values.size else np.zeros(c.shape)
        return np.where(nan, np.nan, out)

    def decode_int(self, coords) -> tuple[np.ndarray, np.ndarray]:
        """(int64 values, NULL mask) of coordinates of an integer column; exact."""
        c = np.asarray(coords, dtype=np.float64)
        nan = np.isnan(c)
        idx = np.where(nan, 0, c).astype(np.int64)
        if self.kind == "plain":
            out = idx
        elif self.kind == "offset":
            out = idx + np.int64(self.base)
        else:
            out = self.values[idx].astype(np.int64) if self.values.size else idx
        return np.where(nan, 0, out), nan

    def encode(self, values) -> np.ndarray:
        """Coordinates of (non-NULL) values of the column, for lookups such as matching a stored
        tree's leaves; values not in the column map to the nearest rank above."""
        if self.kind == "plain":
            return np.asarray(values, dtype=np.float64)
        if self.kind == "offset":
            return np.array([float(int(v) - self.base) for v in values], dtype=np.float64)
        return np.searchsorted(self.values, np.asarray(values, dtype=self.values.dtype)).astype(np.float64)


PLAIN = None  # QIData.num_codec holds None for a plain column (the common case)


def choose_int(lo: int, hi: int) -> str:
    """Representation of an integer column with exact extremes lo..hi (Python ints)."""
    if -EXACT_INT < lo and hi <= EXACT_INT:
        return "plain"
    if hi - lo < EXACT_INT:
        return "offset"
    return "rank"
