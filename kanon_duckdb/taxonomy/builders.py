"""Pure-Python taxonomy builders: each returns a list of ``(child, parent)`` edges.

Contract shared by every builder:
- edges are ordered so that each node's children appear in a meaningful order (ascending
  intervals, ARX file order, sorted codes, chronological dates); that order becomes the leaf order
  of the tree (``tree.build_index``) once the edges are inserted in list order;
- the last edge is the root row ``(root, None)``;
- labels are strings; a label names exactly one node (a clash raises TaxonomyError).

Builders: ``arx_hierarchy_edges`` (ARX hierarchy CSV), ``interval_edges`` (nested numeric
intervals: fixed widths or quantiles), ``masking_edges`` (codes such as ZIP), ``date_edges``
(day -> month -> year), ``flat_edges`` (value -> '*').
"""
from __future__ import annotations

import csv
import io
import math
import os
import re
from decimal import Decimal
from fractions import Fraction

from ..errors import InvalidParameterError, TaxonomyError

ROOT = "*"


class _EdgeList:
    """Collects edges, keeping the first parent of each child and refusing a second one."""

    def __init__(self, attr: str):
        self.attr, self.parent_of, self.edges = attr, {}, []

    def add(self, child: str, parent: str, where: str = ""):
        old = self.parent_of.get(child)
        if old is None:
            self.parent_of[child] = parent
            self.edges.append((child, parent))
        elif old != parent:
            raise TaxonomyError(
                f"taxonomy '{self.attr}': label '{child}' appears under two different parents "
                f"('{old}' and '{parent}'){where}; a label names one node, so rename one of them")

    def finish(self, root: str) -> list:
        if root in self.parent_of:
            raise TaxonomyError(f"taxonomy '{self.attr}': the root label '{root}' is also used "
                                f"below the root (under '{self.parent_of[root]}')")
        return self.edges + [(root, None)]


# --------------------------------------------------------------------------- ARX hierarchies

def _read_text(path_or_text) -> str:
    if isinstance(path_or_text, os.PathLike) or (
            isinstance(path_or_text, str) and "\n" not in path_or_text
            and os.path.exists(path_or_text)):
        with open(path_or_text, encoding="utf-8-sig", newline="") as fh:
            return fh.read()
    if hasattr(path_or_text, "read_text"):  # importlib.resources Traversable
        return path_or_text.read_text(encoding="utf-8-sig")
    if isinstance(path_or_text, str) and "\n" not in path_or_text and (
            path_or_text.lower().endswith((".csv", ".txt"))):
        raise TaxonomyError(f"ARX hierarchy file '{path_or_text}' does not exist")
    return str(path_or_text)


def arx_hierarchy_edges(path_or_text, delimiter: str = ";", attr: str = "arx") -> list:
    """Edges of an ARX hierarchy (one row per leaf: leaf; level1; ...; '*'), in file order.

    Labels are scoped per level, as ARX reads them: a label repeated in one row (``A;A;*``, a value
    that stays the same for one level) becomes the self-edge ``(A, A)``, once per level it repeats
    at, so the row keeps its number of levels (tree.build_index expands it into a chain; the
    full-domain lattice sees ARX's levels). A leaf that is also the level-1 group holding it
    (``Other relative;Other relative;*`` next to ``Own-child;Other relative;*``) is such a repeat.
    A label at two places (different parents) raises TaxonomyError. All rows must end in the
    same root.
    """
    text = _read_text(path_or_text)
    rows = [[c.strip() for c in r] for r in csv.reader(io.StringIO(text), delimiter=delimiter)]
    rows = [r for r in rows if any(r)]
    if not rows:
        raise TaxonomyError(f"ARX hierarchy for '{attr}' is empty")
    out = _EdgeList(attr)
    leaves: dict = {}
    repeats: set = set()  # (label, level) of the self-edges emitted
    root = None
    for lineno, row in enumerate(rows, 1):
        if any(c == "" for c in row):
            raise TaxonomyError(f"ARX hierarchy for '{attr}', row {lineno}: empty label in {row}")
        if len(row) == 1 or all(c == row[0] for c in row):
            raise TaxonomyError(f"ARX hierarchy for '{attr}', row {lineno}: leaf '{row[0]}' "
                                f"has no generalization (a row needs at least leaf;*)")
        if root is None:
            root = row[-1]
        elif row[-1] != root:
            raise TaxonomyError(
                f"ARX hierarchy for '{attr}' has several roots ('{root}' and '{row[-1]}', row "
                f"{lineno}); every row must end with the same top label such as '*'")
        leaves.setdefault(row[0], lineno)  # a repeated row is harmless if it agrees (see add)
        for level, (child, parent) in enumerate(zip(row, row[1:])):
            if child != parent:
                out.add(child, parent, f" (row {lineno})")
            elif (child, level) not in repeats:
                repeats.add((child, level))
                out.edges.append((child, child))
    internal = {p for c, p in out.parent_of.items()}
    both = [leaf for leaf in leaves if leaf in internal and (leaf, 0) not in repeats]
    if both:
        leaf = both[0]
        raise TaxonomyError(
            f"ARX hierarchy for '{attr}': '{leaf}' is a leaf (row {leaves[leaf]}) and also a "
            f"generalization of other values, but not its own level-1 group; a label names one "
            f"node per level, so rename one of them")
    return out.finish(root)


# --------------------------------------------------------------------------- numeric intervals

def _exact(x) -> Fraction:
    """Exact value of a number; floats by their shortest decimal repr (0.3 -> 3/10)."""
    if isinstance(x, bool):
        raise InvalidParameterError(f"not a number: {x!r}")
    if isinstance(x, int):
        return Fraction(x)
    if isinstance(x, Decimal):
        if not x.is_finite():
            raise InvalidParameterError(f"interval hierarchies need finite numbers, got {x}")
        return Fraction(x)
    if isinstance(x, Fraction):
        return x
    try:
        f = float(x)
    except (TypeError, ValueError):
        raise InvalidParameterError(f"not a number: {x!r}") from None
    if not math.isfinite(f):
        raise InvalidParameterError(f"interval hierarchies need finite numbers, got {x!r}")
    return Fraction(repr(f))


def _fmt(q: Fraction) -> str:
    """A bound as a short decimal ('20', '0.25', '-1.5'); exact for decimal fractions."""
    if q.denominator == 1:
        return str(q.numerator)
    d = Decimal(q.numerator) / Decimal(q.denominator)
    s = format(d.normalize(), "f")
    return s


def default_label(x) -> str:
    """Leaf label of a number when none is given: DuckDB-like casts ('39', '1.5', '2.0')."""
    if isinstance(x, bool):
        return str(x).lower()
    if isinstance(x, (int, Decimal)):
        return str(x)
    return repr(float(x))


def nice_width(x: float) -> Fraction:
    """The number of the form {1, 2, 5} x 10^m nearest to x in log scale (x > 0)."""
    if not x > 0:
        return Fraction(1)
    m = math.floor(math.log10(x))
    best = None
    for e in (m - 1, m, m + 1):
        for b in (1, 2, 5):
            cand = Fraction(b) * (Fraction(10) ** e)
            dist = abs(math.log(float(cand)) - math.log(x))
            if best is None or dist < best[0]:
                best = (dist, cand)
    return best[1]


def default_widths(lo: Fraction, hi: Fraction, integral: bool, fine_bins: int = 16) -> list:
    """Nested widths: a nice base near (hi-lo)/fine_bins (>= 1 for integers), doubled per level
    while a level still has at least two intervals."""
    span = hi - lo
    if span <= 0:
        return []
    base = nice_width(float(span) / fine_bins)
    if integral and base < 1:
        base = Fraction(1)
    widths = [base]
    while math.floor(lo / widths[-1]) != math.floor(hi / widths[-1]) and len(widths) < 64:
        widths.append(widths[-1] * 2)
    return widths[:-1] if len(widths) > 1 else widths


def _check_widths(widths) -> list:
    ws = [_exact(w) for w in widths]
    if not ws:
        raise InvalidParameterError("widths must list at least one interval width, e.g. [5, 10, 20]")
    for w in ws:
        if w <= 0:
            raise InvalidParameterError(f"interval widths must be positive, got {_fmt(w)}")
    for a, b in zip(ws, ws[1:]):
        if b <= a or (b / a).denominator != 1:
            raise InvalidParameterError(
                f"interval widths must nest: each must be a multiple of the previous one and larger "
                f"(got {_fmt(a)} then {_fmt(b)}); try doubling, e.g. [5, 10, 20, 40]")
    return ws


def _prepare(values, labels, counts):
    vals = list(values)
    labs = list(labels) if labels is not None else [default_label(v) for v in vals]
    cnts = list(counts) if counts is not None else [1] * len(vals)
    if len(labs) != len(vals) or len(cnts) != len(vals):
        raise InvalidParameterError("values, labels and counts must have the same length")
    by_label: dict = {}
    for v, lab, c in zip(vals, labs, cnts):
        if v is None:
            continue
        q = _exact(v)
        lab = str(lab)
        if lab in by_label:
            if by_label[lab][0] != q:
                raise TaxonomyError(f"label '{lab}' is given to two different values")
            by_label[lab][1] += int(c)
        else:
            by_label[lab] = [q, int(c)]
    items = sorted(((q, lab, c) for lab, (q, c) in by_label.items()), key=lambda t: (t[0], t[1]))
    if not items:
        raise TaxonomyError("cannot build an interval taxonomy: the column has no non-NULL values")
    return items


def interval_edges(values, widths=None, *, quantiles=None, labels=None, counts=None,
                   attr: str = "interval") -> list:
    """Nested numeric interval hierarchy: leaf values -> '[lo, hi)' levels -> '*'.

    ``values``: numbers (int, float, Decimal); ``labels``: their leaf labels (default: like DuckDB's
    CAST(x AS VARCHAR); pass the strings DuckDB gives); ``counts``: rows per value (quantiles).
    Fixed widths (``widths``, each a multiple of the previous; default: a nice base width doubled
    per level): level-j interval of v is [m*w_j, (m+1)*w_j), m = floor(v / w_j), so intervals are
    aligned to multiples of their width and nest exactly. ``quantiles`` (True or a number of bins
    at the finest level, rounded up to a power of two; True = 16): equal-frequency bins (by
    ``counts``) whose cut points are data values, each coarser level keeping every other cut,
    labelled '[lo, hi)' with the last one '[lo, max]'; an interval that repeats on the next level
    is one node. Levels with a single interval are dropped (the root covers them).
    """
    items = _prepare(values, labels, counts)
    if widths is not None and quantiles:
        raise InvalidParameterError("give either widths or quantiles, not both")
    if quantiles:
        levels = _quantile_levels(items, quantiles)
    else:
        lo, hi = items[0][0], items[-1][0]
        integral = all(q.denominator == 1 for q, _, _ in items)
        ws = _check_widths(widths) if widths is not None else default_widths(lo, hi, integral)
        levels = _width_levels(items, ws)
    out = _EdgeList(attr)
    leaf_labels = {lab for _, lab, _ in items}
    prev = [lab for _, lab, _ in items]
    for level in levels:  # level: list (per item) of interval labels, nested by construction
        for child, parent in zip(prev, level):
            if child == parent:  # the same interval on two levels (quantiles): one node
                continue
            if parent in leaf_labels:
                raise TaxonomyError(f"interval label '{parent}' collides with a leaf label")
            out.add(child, parent)
        prev = level
    for child in prev:
        out.add(child, ROOT)
    return out.finish(ROOT)


def _width_levels(items, ws) -> list:
    levels = []
    if ws and ws[0].denominator == 1 and all(q.denominator == 1 for q, _, _ in items):
        w0 = ws[0].numerator  # integer fast path
        idx = [q.numerator // w0 for q, _, _ in items]
    else:
        idx = [math.floor(q / ws[0]) for q, _, _ in items] if ws else []
    for j, w in enumerate(ws):
        if j > 0:
            r = int(ws[j] / ws[j - 1])
            idx = [m // r for m in idx]  # integer nesting: exact whatever the floats
        distinct = set(idx)
        if len(distinct) < 2:
            break
        lab = {m: f"[{_fmt(m * w)}, {_fmt((m + 1) * w)})" for m in distinct}
        levels.append([lab[m] for m in idx])
    return levels


def _quantile_levels(items, quantiles) -> list:
    bins = 16 if quantiles is True else int(quantiles)
    if bins < 2:
        raise InvalidParameterError(f"quantiles must be True or a number of bins >= 2, got {quantiles}")
    h = max(1, math.ceil(math.log2(bins)))
    total = sum(c for _, _, c in items)
    cum, acc = [], 0
    for _, _, c in items:
        acc += c
        cum.append(acc)
    n = 2 ** h

    def cut_item(i):  # boundary b (items[b] starts a bin) whose rows-before is nearest i/n
        target = total * i  # compare cum * n with total * i: exact integers
        lo, hi = 1, len(items) - 1
        while lo < hi:
            mid = (lo + hi) // 2
            if cum[mid - 1] * n >= target:
                hi = mid
            else:
                lo = mid + 1
        if lo > 1 and abs(cum[lo - 2] * n - target) <= abs(cum[lo - 1] * n - target):
            lo -= 1
        return lo if len(items) > 1 else 0

    fine = [cut_item(i) for i in range(1, n)]
    levels = []
    for k in range(h, 0, -1):
        step = 2 ** (h - k)
        cuts = sorted({fine[i - 1] for i in range(step, n, step)} - {0})
        if not cuts:
            continue
        bounds = [0] + cuts
        level = []
        b = 0
        for i in range(len(items)):
            while b + 1 < len(bounds) and i >= bounds[b + 1]:
                b += 1
            lo_lab = items[bounds[b]][1]
            if b + 1 < len(bounds):
                level.append(f"[{lo_lab}, {items[bounds[b + 1]][1]})")
            else:
                level.append(f"[{lo_lab}, {items[-1][1]}]")
        if not levels or level != levels[-1]:
            levels.append(level)
    return levels


# --------------------------------------------------------------------------- masking, dates, flat

def masking_edges(values, step: int = 1, attr: str = "masking") -> list:
    """Right-to-left masking of codes: '80015' -> '8001*' -> '800**' -> ... -> '*****'.

    ``step`` characters are masked per level. Values of one length L share the root '*' * L;
    with several lengths each length has its own chain to '*' * L, and those hang under '*'.
    Values are sorted. A value that equals a masked label of another value raises TaxonomyError.
    """
    if step < 1:
        raise InvalidParameterError(f"step must be >= 1, got {step}")
    vals = sorted({str(v) for v in values if v is not None})
    if not vals:
        raise TaxonomyError(f"taxonomy '{attr}': no values to mask")
    lengths = {len(v) for v in vals}
    root = ROOT * lengths.pop() if len(lengths) == 1 and len(vals[0]) > 0 else ROOT
    out = _EdgeList(attr)
    leaves = set(vals)
    for v in vals:
        chain, n = [v], len(v)
        k = step
        while k < n:
            chain.append(v[:n - k] + ROOT * k)
            k += step
        top = ROOT * n if n else ROOT
        if chain[-1] != top:
            chain.append(top)
        if top != root:
            chain.append(root)
        path = [chain[0]]
        for lab in chain[1:]:
            if lab != path[-1]:
                path.append(lab)
        for child, parent in zip(path, path[1:]):
            if parent in leaves:
                raise TaxonomyError(
                    f"taxonomy '{attr}': value '{parent}' is also the masked form of '{v}'; "
                    f"values containing '*' cannot be masked unambiguously")
            out.add(child, parent)
    if root in leaves:
        raise TaxonomyError(f"taxonomy '{attr}': value '{root}' collides with the root label")
    return out.finish(root)


_DATE_RE = re.compile(r"^(-?\d{1,})-(\d{2})-(\d{2})(?:([ T])(.+?))?( \(BC\))?$")


def date_edges(values, attr: str = "date") -> list:
    """Dates 'YYYY-MM-DD' -> 'YYYY-MM' -> 'YYYY' -> '*' (timestamps: value -> 'YYYY-MM-DD' -> ...).

    Values are the strings DuckDB gives for DATE / TIMESTAMP (BC suffix kept on month and year);
    chronological order. An unparseable value raises TaxonomyError.
    """
    parsed = []
    for v in {str(v) for v in values if v is not None}:
        m = _DATE_RE.match(v)
        if not m:
            raise TaxonomyError(f"taxonomy '{attr}': '{v}' is not a date like 2024-05-31")
        year, month, day, _, time, bc = m.groups()
        bc = bc or ""
        y = int(year) * (-1 if bc else 1)
        parsed.append(((y, int(month), int(day), time or ""), v, year, month, day, time, bc))
    if not parsed:
        raise TaxonomyError(f"taxonomy '{attr}': no date values")
    parsed.sort()
    out = _EdgeList(attr)
    for _, v, year, month, day, time, bc in parsed:
        day_lab = f"{year}-{month}-{day}{bc}"
        chain = [v] + ([day_lab] if time else []) + [f"{year}-{month}{bc}", f"{year}{bc}", ROOT]
        for child, parent in zip(chain, chain[1:]):
            out.add(child, parent)
    return out.finish(ROOT)


def flat_edges(values, attr: str = "flat") -> list:
    """One level: every distinct value -> '*', in the given order (NULLs skipped).

    A value '*' is refused (TaxonomyError naming the column and the fix): in a published table
    '*' would mean both that value and "any value". This is the one rule for every flat tree
    (``tree.flat_index`` builds on it: the implicit tree of a QI without a taxonomy).
    """
    out = _EdgeList(attr)
    for v in values:
        if v is None:
            continue
        v = str(v)
        if v == ROOT:
            raise TaxonomyError(
                f"column '{attr}' holds the value '*', which a flat taxonomy (the automatic one "
                f"of a column without a taxonomy) uses as its root; give '{attr}' a taxonomy in "
                f"kanon_taxonomy in which '*' is an ordinary leaf (INSERT its edges)")
        out.add(v, ROOT)
    return out.finish(ROOT)
