"""Sets of numbers as unions of intervals: what a numeric predicate on one attribute selects.

A predicate on one numeric quasi-identifier (``age > 24 AND NOT age BETWEEN 30 AND 35``) selects a
union of disjoint intervals. Combining predicates on the same attribute exactly (AND = intersection,
OR = union, NOT = complement) is set algebra on these. Bounds are exact ``Fraction`` values (SQL
literals are decimal), ``None`` means unbounded. For integer-valued attributes every interval is
normalised to closed integer bounds (``age > 24.5`` is ``[25, +inf)``), so counting integer points
is ``hi - lo + 1``.

>>> s = IntervalSet.compare(">", Fraction(24), integer=True)
>>> s
IntervalSet([25, +inf), integer)
>>> s.intersect(IntervalSet.compare("<=", Fraction(29), integer=True))
IntervalSet([25, 29], integer)
>>> s.complement()
IntervalSet((-inf, 24], integer)
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

Bound = Fraction | None


@dataclass(frozen=True)
class Interval:
    """One interval; ``lo=None`` is -inf, ``hi=None`` is +inf (infinite ends are never closed)."""

    lo: Bound
    hi: Bound
    lo_closed: bool = True
    hi_closed: bool = True

    def is_empty(self) -> bool:
        if self.lo is None or self.hi is None:
            return False
        return self.lo > self.hi or (self.lo == self.hi and not (self.lo_closed and self.hi_closed))

    def is_point(self) -> bool:
        return self.lo is not None and self.lo == self.hi and not self.is_empty()

    def __repr__(self) -> str:
        left = "(-inf" if self.lo is None else ("[" if self.lo_closed else "(") + _fmt(self.lo)
        right = "+inf)" if self.hi is None else _fmt(self.hi) + ("]" if self.hi_closed else ")")
        return f"{left}, {right}"


def _fmt(x: Fraction) -> str:
    return str(x.numerator) if x.denominator == 1 else str(float(x))


def _lo_key(iv: Interval):
    # Sort key of a lower bound: -inf first; at equal value a closed bound starts earlier.
    return (0, 0, 0) if iv.lo is None else (1, iv.lo, 0 if iv.lo_closed else 1)


def _lower_max(a: Interval, b: Interval):
    """The tighter (larger) lower bound of two intervals, as (value, closed)."""
    if a.lo is None:
        return b.lo, b.lo_closed
    if b.lo is None:
        return a.lo, a.lo_closed
    if a.lo != b.lo:
        return (a.lo, a.lo_closed) if a.lo > b.lo else (b.lo, b.lo_closed)
    return a.lo, a.lo_closed and b.lo_closed


def _upper_min(a: Interval, b: Interval):
    if a.hi is None:
        return b.hi, b.hi_closed
    if b.hi is None:
        return a.hi, a.hi_closed
    if a.hi != b.hi:
        return (a.hi, a.hi_closed) if a.hi < b.hi else (b.hi, b.hi_closed)
    return a.hi, a.hi_closed and b.hi_closed


@dataclass(frozen=True)
class IntervalSet:
    """A union of disjoint intervals, sorted; ``integer=True`` keeps closed integer bounds.

    Over the extended reals, as SQL orders DOUBLE: an end unbounded on one side also holds that
    infinity (``x < 0`` holds -inf). ``infinities`` = (holds -inf, holds +inf) only where a
    comparison with an infinite constant made it differ from that (``x < 'inf'::DOUBLE``: every
    finite value and -inf, not +inf); None otherwise (one canonical form, so equal sets compare
    equal)."""

    parts: tuple
    integer: bool = False
    infinities: tuple | None = None

    # ----------------------------------------------------------------- constructors
    @classmethod
    def everything(cls, integer: bool = False) -> "IntervalSet":
        return cls((Interval(None, None, False, False),), integer)

    @classmethod
    def nothing(cls, integer: bool = False) -> "IntervalSet":
        return cls((), integer)

    @classmethod
    def of(cls, intervals, integer: bool = False, infinities=None) -> "IntervalSet":
        """Normalise arbitrary (possibly overlapping, empty) intervals into a set (holding the
        infinities ``infinities`` = (-inf?, +inf?) when given, else as its ends imply)."""
        ivs = [_integerize(iv) if integer else iv for iv in intervals]
        ivs = sorted((iv for iv in ivs if iv is not None and not iv.is_empty()), key=_lo_key)
        merged: list[Interval] = []
        for iv in ivs:
            if merged and _touches(merged[-1], iv, integer):
                last = merged.pop()
                hi, hic = (last.hi, last.hi_closed) if _upper_greater(last, iv) else (iv.hi, iv.hi_closed)
                iv = Interval(last.lo, hi, last.lo_closed, hic)
            merged.append(iv)
        out = cls(tuple(merged), integer)
        if infinities is not None and tuple(infinities) != out._implied():
            out = cls(out.parts, integer, tuple(bool(x) for x in infinities))
        return out

    def _implied(self) -> tuple:
        return (any(iv.lo is None for iv in self.parts), any(iv.hi is None for iv in self.parts))

    def _inf(self) -> tuple:
        return self.infinities if self.infinities is not None else self._implied()

    @classmethod
    def compare(cls, op: str, value, integer: bool = False) -> "IntervalSet":
        """The set ``{x : x <op> value}`` for op in =, <>, <, <=, >, >=; ``value`` a Fraction
        (or int), or the float -inf / inf (SQL's infinite DOUBLE, below / above every number)."""
        if isinstance(value, float) and math.isinf(value):
            return cls._compare_infinite(op, 1 if value > 0 else -1, integer)
        v = Fraction(value)
        if op == "=":
            return cls.of([Interval(v, v)], integer)
        if op == "<>":
            return cls.of([Interval(v, v)], integer).complement()
        if op == "<":
            return cls.of([Interval(None, v, False, False)], integer)
        if op == "<=":
            return cls.of([Interval(None, v, False, True)], integer)
        if op == ">":
            return cls.of([Interval(v, None, False, False)], integer)
        if op == ">=":
            return cls.of([Interval(v, None, True, False)], integer)
        raise ValueError(f"unknown comparison {op!r}")

    @classmethod
    def _compare_infinite(cls, op: str, sign: int, integer: bool) -> "IntervalSet":
        """``{x : x <op> sign * inf}``: -inf, every finite value and +inf rank -1, 0, 1, and
        the constant ranks ``sign``; each of the three is in the set or not."""
        test = {"=": int.__eq__, "<>": int.__ne__, "<": int.__lt__, "<=": int.__le__,
                ">": int.__gt__, ">=": int.__ge__}.get(op)
        if test is None:
            raise ValueError(f"unknown comparison {op!r}")
        finite = [Interval(None, None, False, False)] if test(0, sign) else []
        return cls.of(finite, integer, (test(-1, sign), test(1, sign)))

    @classmethod
    def between(cls, low: Fraction, high: Fraction, integer: bool = False) -> "IntervalSet":
        """``low <= x <= high`` (SQL BETWEEN is inclusive; empty when low > high)."""
        return cls.of([Interval(Fraction(low), Fraction(high))], integer)

    # ------------------------------------------------------------------- algebra
    def union(self, other: "IntervalSet") -> "IntervalSet":
        a, b = self._inf(), other._inf()
        return IntervalSet.of(self.parts + other.parts, self.integer,
                              (a[0] or b[0], a[1] or b[1]))

    def intersect(self, other: "IntervalSet") -> "IntervalSet":
        out = []
        for a in self.parts:
            for b in other.parts:
                lo, loc = _lower_max(a, b)
                hi, hic = _upper_min(a, b)
                out.append(Interval(lo, hi, lo is not None and loc, hi is not None and hic))
        a, b = self._inf(), other._inf()
        return IntervalSet.of(out, self.integer, (a[0] and b[0], a[1] and b[1]))

    def complement(self) -> "IntervalSet":
        out = []
        lo, loc = None, False
        inf = tuple(not x for x in self._inf())
        for iv in self.parts:
            if iv.lo is not None:
                out.append(Interval(lo, iv.lo, loc, not iv.lo_closed))
            if iv.hi is None:
                return IntervalSet.of(out, self.integer, inf)
            lo, loc = iv.hi, not iv.hi_closed
        out.append(Interval(lo, None, loc, False))
        return IntervalSet.of(out, self.integer, inf)

    def is_empty(self) -> bool:
        return not self.parts

    def holds_infinity(self, sign: int) -> bool:
        """Whether -inf (``sign < 0``) / +inf (``sign > 0``) lies in the set: a part unbounded on
        that side (SQL orders -inf below and +inf above every number, so ``x < 0`` holds for
        -inf and ``x BETWEEN -1 AND 1`` for neither)."""
        return self._inf()[0 if sign < 0 else 1]

    def covers(self, lo: Fraction, hi: Fraction) -> bool:
        """True when the closed range [lo, hi] lies inside the set."""
        probe = IntervalSet.of([Interval(lo, hi)], self.integer)
        return probe.intersect(self) == probe

    def __repr__(self) -> str:
        body = " U ".join(map(repr, self.parts)) or "{}"
        inf = "" if self.infinities is None else \
            f", -inf {'in' if self.infinities[0] else 'out'}, +inf {'in' if self.infinities[1] else 'out'}"
        return f"IntervalSet({body}{', integer' if self.integer else ''}{inf})"


def _integerize(iv: Interval) -> Interval | None:
    lo = None if iv.lo is None else (math.ceil(iv.lo) if iv.lo_closed else math.floor(iv.lo) + 1)
    hi = None if iv.hi is None else (math.floor(iv.hi) if iv.hi_closed else math.ceil(iv.hi) - 1)
    lo = None if lo is None else Fraction(lo)
    hi = None if hi is None else Fraction(hi)
    out = Interval(lo, hi, lo is not None, hi is not None)
    return None if out.is_empty() else out


def _upper_greater(a: Interval, b: Interval) -> bool:
    """True when a's upper end reaches at least as far as b's."""
    if a.hi is None:
        return True
    if b.hi is None:
        return False
    return a.hi > b.hi or (a.hi == b.hi and (a.hi_closed or not b.hi_closed))


def _touches(a: Interval, b: Interval, integer: bool) -> bool:
    """Whether b (starting at or after a) overlaps or abuts a, so that they merge."""
    if a.hi is None or b.lo is None:
        return True
    if integer:
        return b.lo <= a.hi + 1
    return b.lo < a.hi or (b.lo == a.hi and (a.hi_closed or b.lo_closed))
