"""Aligned text tables for the command line (the shell's result display and the demo's summary).

``format_table(columns, rows)`` renders a list of row tuples in the style of DuckDB's CLI:
numbers right-aligned, text left-aligned, NULL shown as ``NULL``, long cells cut with ``…``,
long results shown as their first and last rows around a ``·`` gap, and columns that do not fit
the width dropped from the middle (a ``…`` column marks the gap). A footer gives the row count.

>>> print(format_table(["k", "name"], [(2, "a"), (10, None)], footer=False, style="plain"))
 k  | name
----+-----
  2 | a
 10 | NULL
"""
from __future__ import annotations

import datetime
import decimal
import math
import os
import shutil
import sys
import unicodedata

__all__ = ["format_table", "format_value", "ResultCollector", "terminal_width"]

MAX_CELL = 40          # longest cell shown before cutting with "…"
MAX_ROWS = 40          # rows shown before eliding the middle (half at the top, half at the bottom)

_BOX = {"tl": "┌", "tm": "┬", "tr": "┐", "ml": "├", "mm": "┼", "mr": "┤", "bl": "└", "bm": "┴",
        "br": "┘", "h": "─", "v": "│"}


def terminal_width(default: int = 200) -> int:
    """Width of the terminal on stdout; ``$COLUMNS`` or ``default`` when stdout is not a terminal."""
    if sys.stdout.isatty():
        return max(40, shutil.get_terminal_size((default, 24)).columns)
    try:
        return max(40, int(os.environ["COLUMNS"]))
    except (KeyError, ValueError):
        return default


def _is_number(v) -> bool:
    return isinstance(v, (int, float, decimal.Decimal)) and not isinstance(v, bool)


def format_value(v) -> str:
    """One value as text: NULL, numbers without float noise, nested values like DuckDB."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return str(v)
        if v == int(v) and abs(v) < 1e15:
            return f"{v:.1f}"
        s = repr(v)
        return f"{v:.10g}" if len(s) > 14 else s
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(format_value(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ", ".join(f"{k}: {format_value(x)}" for k, x in v.items()) + "}"
    if isinstance(v, (datetime.datetime, datetime.date, datetime.time)):
        return v.isoformat(sep=" ") if isinstance(v, datetime.datetime) else v.isoformat()
    if isinstance(v, (bytes, bytearray, memoryview)):
        return "\\x" + bytes(v).hex()
    return str(v)


def _width(s: str) -> int:
    """Display width (East Asian wide characters take two cells)."""
    if s.isascii():
        return len(s)
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in s)


def _cut(s: str, limit: int) -> str:
    s = s.replace("\r", "\\r").replace("\n", "\\n").replace("\t", " ")
    if _width(s) <= limit:
        return s
    out, w = [], 0
    for ch in s:
        cw = _width(ch)
        if w + cw > limit - 1:
            break
        out.append(ch)
        w += cw
    return "".join(out) + "…"


def _pad(s: str, width: int, right: bool) -> str:
    gap = " " * (width - _width(s))
    return gap + s if right else s + gap


class ResultCollector:
    """Keep the first and last rows of a stream of rows (bounded memory) and count them all."""

    def __init__(self, max_rows: int = MAX_ROWS):
        self.max_rows = max_rows
        self.head: list = []
        self.tail: list = []
        self.n = 0
        self._half = max(1, max_rows // 2)

    def add(self, rows) -> None:
        for r in rows:
            self.n += 1
            if len(self.head) < self.max_rows:
                self.head.append(r)
                continue
            self.tail.append(r)
            if len(self.tail) > self._half:
                del self.tail[0]

    def rows(self):
        """(rows to show, elided?) — all rows when they fit, else the first and last halves."""
        if self.n <= self.max_rows:
            return self.head, False
        return self.head[: self._half] + self.tail, True


def format_table(columns, rows, *, types=None, total_rows=None, elided=False, max_width=None,
                 max_cell=MAX_CELL, max_rows=MAX_ROWS, footer=True, style="box",
                 align=None) -> str:
    """Render ``rows`` (sequence of tuples) under ``columns`` as an aligned table.

    ``types``: optional SQL type names (a numeric type right-aligns its column even when all
    values are NULL). ``total_rows``/``elided``: the row count and whether the middle was cut
    (as returned by :class:`ResultCollector`); when ``rows`` holds every row, leave them unset and
    rows beyond ``max_rows`` are elided here. ``style``: ``"box"`` (DuckDB-like frame) or
    ``"plain"`` (``|`` separators, no frame). ``align``: one ``"l"``/``"r"`` per column to
    override the automatic alignment (numbers right, the rest left).
    """
    columns = [str(c) for c in columns]
    rows = list(rows)
    if total_rows is None:
        total_rows = len(rows)
        if len(rows) > max_rows:
            half = max(1, max_rows // 2)
            rows = rows[:half] + rows[-half:]
            elided = True
    if max_width is None:
        max_width = terminal_width()
    ncol = len(columns)
    cells = [[_cut(format_value(v), max_cell) for v in r] for r in rows]
    right = []
    for j in range(ncol):
        vals = [r[j] for r in rows if r[j] is not None]
        if vals:
            right.append(all(_is_number(v) for v in vals))
        else:
            t = (types[j] if types and j < len(types) else "") or ""
            right.append(str(t).upper().split("(")[0] in _NUMERIC_TYPES)
    if align:
        right = [a == "r" for a in align]
    type_names = [str(types[j]).lower() if types and j < len(types) and types[j] else ""
                  for j in range(ncol)]
    widths = [max([_width(_cut(columns[j], max_cell)), _width(_cut(type_names[j], max_cell))]
                  + [_width(r[j]) for r in cells])
              for j in range(ncol)]
    sep = 3  # " | " between columns
    edge = 4 if style == "box" else 2

    # Drop columns from the middle until the table fits.
    shown = list(range(ncol))
    if ncol and sum(widths) + sep * (ncol - 1) + edge > max_width:
        keep_l, keep_r = [], []
        budget = max_width - edge - (1 + sep)  # room for the "…" column
        left, right_i = 0, ncol - 1
        used = 0
        while left <= right_i:
            j = left if len(keep_l) <= len(keep_r) else right_i
            need = widths[j] + sep
            if used + need > budget:
                break
            used += need
            if j == left:
                keep_l.append(j)
                left += 1
            else:
                keep_r.insert(0, j)
                right_i -= 1
        if not keep_l:
            keep_l = [0]
            widths[0] = max(1, min(widths[0], budget - sep))
        shown = keep_l + [None] + keep_r if left <= right_i else keep_l + keep_r

    def cell(j, text, is_header=False):
        if j is None:
            return "…"
        w = widths[j]
        t = _cut(text, w)
        return _pad(t, w, right[j] and not is_header) if not is_header else _pad(t, w, False)

    def colw(j):
        return 1 if j is None else widths[j]

    head = [cell(j, "" if j is None else columns[j], True) for j in shown]
    body = [[cell(j, "" if j is None else r[j]) for j in shown] for r in cells]
    half = len(body) // 2 if elided else None
    out = []
    if style == "box":
        b = _BOX

        def rule(l, m, r):
            return l + m.join(b["h"] * (colw(j) + 2) for j in shown) + r

        def line(parts):
            return b["v"] + b["v"].join(f" {p} " for p in parts) + b["v"]

        out.append(rule(b["tl"], b["tm"], b["tr"]))
        out.append(line(head))
        if types:
            out.append(line([" " if j is None else _pad(_cut(type_names[j], widths[j]),
                                                        widths[j], False) for j in shown]))
        out.append(rule(b["ml"], b["mm"], b["mr"]))
        for i, parts in enumerate(body):
            if half is not None and i == half:
                for _ in range(3):
                    out.append(line([_pad("·", colw(j), False) for j in shown]))
            out.append(line(parts))
        out.append(rule(b["bl"], b["bm"], b["br"]))
    else:
        out.append((" " + " | ".join(head)).rstrip())
        out.append("-" + "-+-".join("-" * colw(j) for j in shown) + "-")
        for i, parts in enumerate(body):
            if half is not None and i == half:
                out.append(" " + " | ".join(_pad("·", colw(j), False) for j in shown))
            out.append((" " + " | ".join(parts)).rstrip())
        # ruler width is cosmetic; trim the trailing "-" of the plain style
        out[1] = out[1][:-1]
    if footer:
        note = f"{total_rows} row{'s' if total_rows != 1 else ''}"
        if elided:
            note += f" ({len(rows)} shown)"
        if len(shown) < ncol or None in shown:
            n_shown = len([j for j in shown if j is not None])
            note += f", {ncol} columns ({n_shown} shown)"
        out.append(note)
    return "\n".join(out)


_NUMERIC_TYPES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                  "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "REAL", "DECIMAL"}
