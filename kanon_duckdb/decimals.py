"""Exact bounds of DECIMAL quasi-identifiers, per class.

The algorithms compute in float64: a DECIMAL(p, s) QI travels as the DOUBLE nearest each value
(``encoding``), and a class's bounds are coordinates of that kind. Every published bound is a
data value (a class's extreme, or a tree node's extreme leaf), so the exact bound is a value of
the column whose DOUBLE is the coordinate:

- p <= ``published.EXACT_DECIMAL_DIGITS`` (15): the DOUBLE nearest a value determines it, and
  ``round(coordinate * 10^s)`` is its unscaled integer exactly (the product is off by less than
  0.25 below 10^15): no query.
- wider: several values can share one DOUBLE (18 digits do not fit 53 bits), so one aggregate
  over the column, restricted to the coordinates the classes publish, gives the smallest and
  largest value of each: a lower bound publishes the smallest value with its DOUBLE, an upper
  bound the largest. Truthful exactly: a row of the class has a DOUBLE at least the lower
  coordinate, and DOUBLE rounding is monotone, so its value is at least the smallest value with
  that DOUBLE (the class's own extreme, or a value within one DOUBLE step of it when the
  algorithm split rows of one DOUBLE between classes). A coordinate no value has (a tree leaf
  absent from the data) is rounded outward to the scale (floor / ceiling): still truthful.

The bounds travel as unscaled integers (value * 10^s, ``published.int_carried``): one BIGINT
for p <= 18, two (``published.split_unscaled``: high * 2^64 + low) for p > 18, whose unscaled
integers can leave BIGINT; SQL turns them back into DECIMAL(p, s) exactly
(``published.unscaled_sql``). Cost: O(classes) per narrow QI; one filtered aggregate over the
rows per wide QI, only for p > 15.
"""
from __future__ import annotations

from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal

import numpy as np

from .published import EXACT_DECIMAL_DIGITS, decimal_width, split_unscaled, wide_decimal
from .sqlutil import quote_ident


def class_bounds(con, plan, data, g) -> dict:
    """{DECIMAL QI: (lo, hi, null_lo, null_hi)} of the classes of ``g`` (generalize's result on
    ``data``, the encoded relation ``plan.table_sql`` read through ``con``): int64 (C,) unscaled
    bounds and bool (C,) NULL masks (a NULL range: suppressed, or a class holding NULL); for a
    ``published.wide_decimal`` (p > 18) lo and hi are the high halves and the tuple goes on
    with the low halves (low_lo, low_hi), ``published.split_unscaled``."""
    out = {}
    for j, c in enumerate(data.num_names):
        width = None if c in plan.integer else decimal_width(plan.types[c])
        if width is None:
            continue
        p, s = width
        lo = np.asarray(data.decode_float(j, g.lo[:, j]), dtype=np.float64)
        hi = np.asarray(data.decode_float(j, g.hi[:, j]), dtype=np.float64)
        null_lo, null_hi = np.isnan(lo), np.isnan(hi)
        if p <= EXACT_DECIMAL_DIGITS:
            scale = 10.0 ** s
            ulo = np.rint(np.where(null_lo, 0.0, lo) * scale).astype(np.int64)
            uhi = np.rint(np.where(null_hi, 0.0, hi) * scale).astype(np.int64)
        else:
            ulo, uhi = _looked_up(con, plan, c, s, lo, hi, null_lo, null_hi)
            if wide_decimal(plan.types[c]):
                (ulo, low_lo), (uhi, low_hi) = split_unscaled(ulo), split_unscaled(uhi)
                out[c] = (ulo, uhi, null_lo, null_hi, low_lo, low_hi)
                continue
            ulo = np.array(ulo, dtype=np.int64)
            uhi = np.array(uhi, dtype=np.int64)
        out[c] = (ulo, uhi, null_lo, null_hi)
    return out


def _looked_up(con, plan, c, s, lo, hi, null_lo, null_hi):
    """Unscaled bounds of a DECIMAL(p > 15, s) QI: per published coordinate the smallest (lower
    bounds) and largest (upper bounds) value of the column with that DOUBLE, as lists of
    Python ints (0 for a NULL bound)."""
    coords = np.unique(np.concatenate([lo[~null_lo], hi[~null_hi]]))
    q = quote_ident(c)
    # a DECIMAL's text has exactly s digits after the point: without it, the unscaled integer
    # (a product by 10^s can overflow DECIMAL(38) inside DuckDB)
    unscaled = "replace(CAST({} AS VARCHAR), '.', '')::HUGEINT"
    rows = con.execute(
        f"SELECT CAST({q} AS DOUBLE), {unscaled.format(f'min({q})')}, "
        f"{unscaled.format(f'max({q})')} FROM {plan.table_sql} "
        f"WHERE CAST({q} AS DOUBLE) IN (SELECT unnest(?::DOUBLE[])) GROUP BY 1",
        [coords.tolist()]).fetchall()
    smallest = {v: a for v, a, _ in rows}
    largest = {v: b for v, _, b in rows}

    def side(values, null, found, rounding):
        out = [0] * values.size
        for i in np.flatnonzero(~null):
            v = float(values[i])
            u = found.get(v)
            if u is None:  # not a value of the column: outward to the scale (kept for its peers)
                u = found[v] = int((Decimal(v) * (Decimal(10) ** s)).to_integral_value(rounding))
            out[i] = int(u)
        return out

    return (side(lo, null_lo, smallest, ROUND_FLOOR), side(hi, null_hi, largest, ROUND_CEILING))
