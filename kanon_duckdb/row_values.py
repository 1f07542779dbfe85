"""The published values of a run's classes, and each row's, handed to DuckDB by class id.

``class_columns(res)`` decodes the published values of every class of an AnonymizationResult
once (numeric bounds through each column's codec, categorical labels as indices into one list
of every tree's labels): the one home of that decoding, read by ``udfs.anonymize`` (the class
table and the per-row lists of the positional statement) and by :class:`ClassValues`.

:class:`ClassValues` keeps them per class, row-major, in the types the output columns have, and
``at(ec)`` gives the ``ROW_TYPE`` value of rows whose class ids are ``ec``: what the statement of
``output_sql.output_sql`` publishes for each row of its second read, with no join (one gather
per kind of value, O(rows x QIs)). ``ROW_TYPE`` is fixed (a UDF's return type is declared when
it is registered), so the published values travel as one list per kind of value:

- ``i32`` the bounds of INTEGER QIs, ``i64`` those of every other integer type (cast in SQL to
  the column's type unless BIGINT) and of DECIMAL QIs (unscaled, ``published.unscaled_sql``; a
  DECIMAL(p > 18)'s as two halves, high then low, ``published.split_unscaled``), ``f64`` the bounds of the other numeric QIs (DOUBLE, cast to
  FLOAT for a FLOAT column), ``lab`` the categorical labels as 1-based positions in the run's
  list of every tree's labels (``ClassValues.ref``: handed to the statement once, read with
  DuckDB's list subscript, cheaper than a string per row and QI through Arrow); a QI's bounds
  are ``lo, hi`` next to each other, QIs in the relation's column order (``row_layout``);
- ``ec``, ``size``, ``sup`` and ``run``: the row's class id, class size, suppression flag and
  the run id.

The values and types are those of the class table of ``output_sql.published_layout`` (the same
decoding, the same casts from BIGINT and DOUBLE), so a row's published values do not depend on
which statement published it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from .arrowconv import _validity_buffer, from_numpy, strings

ROW_TYPE = ("STRUCT(ec BIGINT, size BIGINT, sup BOOLEAN, run BIGINT, i32 INTEGER[], i64 BIGINT[], "
            "f64 DOUBLE[], lab INTEGER[])")
# what the statement's run expression yields: the pass's token and the labels ``lab`` indexes
RUN_REF_TYPE = "STRUCT(token BIGINT, names VARCHAR[])"
_KINDS = ("i32", "i64", "f64", "lab")
_ARROW = {"i32": pa.int32(), "i64": pa.int64(), "f64": pa.float64(), "lab": pa.int32()}
_NUMPY = {"i32": np.int32, "i64": np.int64, "f64": np.float64, "lab": np.int32}
_ROW_ARROW = pa.struct([("ec", pa.int64()), ("size", pa.int64()), ("sup", pa.bool_()),
                        ("run", pa.int64())] + [(k, pa.list_(_ARROW[k])) for k in _KINDS])


@dataclass(frozen=True)
class Columns:
    """Per-class published values of a run (``class_columns``), C classes: integer and DECIMAL
    QIs (``published.int_carried`` order; a DECIMAL's as unscaled integers, a DECIMAL(p > 18)'s
    high halves, then its low halves at ``published.low_slots``) ``lo_i``/``hi_i`` int64
    (n_int, C) with NULL masks ``null_lo_i``/
    ``null_hi_i``; other numeric QIs ``lo_f``/``hi_f`` float64 (n_float, C), NaN = NULL;
    categorical QIs ``label`` int32 (n_cat, C), indices into ``names`` (every tree's labels,
    tree after tree; None = the NULL leaf); ``size`` int64 (C,), ``sup`` bool (C,)."""

    lo_i: np.ndarray
    hi_i: np.ndarray
    null_lo_i: np.ndarray
    null_hi_i: np.ndarray
    lo_f: np.ndarray
    hi_f: np.ndarray
    label: np.ndarray
    names: list
    size: np.ndarray
    sup: np.ndarray


def class_columns(res) -> Columns:
    """The published values of every class of the AnonymizationResult ``res`` (see
    :class:`Columns`): coordinates -> exact values through each column's codec (codec.py).
    O(classes x QIs)."""
    from .published import int_carried, low_slots
    g, plan, data = res.generalized, res.plan, res.data
    C = g.n_classes
    num_names = data.num_names
    carried = int_carried(plan)
    decimals = res.decimals or {}
    flt_cols = [i for i, c in enumerate(num_names) if c not in carried]

    def one(c, src, side):
        if c in decimals:  # unscaled exact bounds (kanon_duckdb.decimals)
            return decimals[c][side], decimals[c][2 + side]
        j = num_names.index(c)
        if data.codec(j) is not None:
            return data.codec(j).decode_int(src[:, j])
        return np.where(np.isnan(src[:, j]), 0, src[:, j]).astype(np.int64), np.isnan(src[:, j])

    def ints(src, side):
        pairs = [one(c, src, side) for c in carried]
        # then the low halves of the wide DECIMALs' unscaled integers (published.low_slots)
        pairs += [(decimals[c][4 + side], decimals[c][2 + side]) for c in low_slots(plan)]
        return (np.array([p[0] for p in pairs], dtype=np.int64).reshape(len(pairs), C),
                np.array([p[1] for p in pairs], dtype=bool).reshape(len(pairs), C))

    lo_i, null_lo_i = ints(g.lo, 0)
    hi_i, null_hi_i = ints(g.hi, 1)
    floats = [np.array([data.decode_float(j, src[:, j]) for j in flt_cols],
                       dtype=np.float64).reshape(len(flt_cols), C) for src in (g.lo, g.hi)]
    names, label = [], np.zeros((0, C), dtype=np.int32)
    if data.dc:
        names = [name for t in data.trees for name in t.labels]
        starts = np.cumsum([0] + [len(t.labels) for t in data.trees])[:data.dc].astype(np.int32)
        label = np.ascontiguousarray(g.nodes[:, :data.dc].T, dtype=np.int32) + starts[:, None]
    sup = np.zeros(C, dtype=bool)
    if g.suppressed is not None:
        sup = np.bincount(g.ec, weights=g.suppressed.astype(np.float64), minlength=C) > 0
    return Columns(lo_i, hi_i, null_lo_i, null_hi_i, floats[0], floats[1], label, names,
                   np.asarray(g.size, dtype=np.int64), sup)


def _kind(plan, c):
    """(list of ROW_TYPE holding numeric QI ``c``'s bounds, function from that list's SQL
    element to the output column's SQL)."""
    from .published import bound_type, decimal_width, unscaled_sql
    integer = c in plan.integer
    typ = bound_type(plan.types[c], integer)
    if not integer and decimal_width(plan.types[c]) is not None:
        return "i64", lambda expr: unscaled_sql(expr, typ)
    if integer:
        kind = "i32" if typ.upper() == "INTEGER" else "i64"
        same = typ.upper() in ("INTEGER", "BIGINT")
    else:
        kind, same = "f64", typ.upper() == "DOUBLE"
    return kind, (lambda expr: expr) if same else (lambda expr: f"CAST({expr} AS {typ})")


def row_layout(plan, row: str, names: str) -> list:
    """The output columns before ``ec``, in the relation's column order: (name, SQL expression
    over the ROW_TYPE value ``row`` and the run's label list ``names`` (RUN_REF_TYPE's)
    publishing it, or None for the source column of that name unchanged)."""
    from .published import bound_columns, bound_type, low_slots, unscaled_sql
    used = dict.fromkeys(_KINDS, 0)
    layout = []
    wide = low_slots(plan)
    for c in plan.columns:
        if c in plan.numeric:
            kind, sql = _kind(plan, c)
            for name in bound_columns(c):
                used[kind] += 1
                expr = f"{row}.{kind}[{used[kind]}]"
                if c in wide:  # (high, low) halves of the unscaled integer
                    used[kind] += 1
                    layout.append((name, unscaled_sql(expr, bound_type(plan.types[c], False),
                                                      f"{row}.{kind}[{used[kind]}]")))
                else:
                    layout.append((name, sql(expr)))
        elif c in plan.categorical:
            used["lab"] += 1
            layout.append((c, f"{names}[{row}.lab[{used['lab']}]]"))
        else:
            layout.append((c, None))
    return layout


class ClassValues:
    """The published values of a run's classes, row-major per ROW_TYPE list (see the module
    docstring), and the run's id and row count; ``at(ec)`` is a chunk's ROW_TYPE value."""

    def __init__(self, res):
        plan, cols = res.plan, class_columns(res)
        self.run_id, self.n_rows = int(res.run_id), int(res.data.n_rows)
        self.size, self.sup = cols.size, cols.sup
        C = cols.size.size
        parts = {kind: [] for kind in _KINDS}  # kind -> [(values (C,), NULL mask (C,) or None)]
        from .published import int_carried, low_slots
        carried = int_carried(plan)
        wide = low_slots(plan)
        floats = [c for c in plan.numeric if c not in carried]
        for c in plan.columns:
            if c in plan.numeric:
                kind = _kind(plan, c)[0]
                if c in wide:  # row_layout's order: lo high, lo low, hi high, hi low
                    j, w = carried.index(c), wide[c]
                    parts[kind] += [(cols.lo_i[j], cols.null_lo_i[j]), (cols.lo_i[w], cols.null_lo_i[w]),
                                    (cols.hi_i[j], cols.null_hi_i[j]), (cols.hi_i[w], cols.null_hi_i[w])]
                elif c in carried:
                    j = carried.index(c)
                    parts[kind] += [(cols.lo_i[j], cols.null_lo_i[j]), (cols.hi_i[j], cols.null_hi_i[j])]
                else:
                    j = floats.index(c)
                    parts[kind] += [(cols.lo_f[j], np.isnan(cols.lo_f[j])),
                                    (cols.hi_f[j], np.isnan(cols.hi_f[j]))]
            elif c in plan.categorical:
                parts["lab"].append((cols.label[plan.categorical.index(c)] + 1, None))  # 1-based
        self.width, self.values, self.nulls = {}, {}, {}
        for kind, items in parts.items():
            self.width[kind] = len(items)
            dtype = _NUMPY[kind]
            self.values[kind] = (np.stack([v for v, _ in items], axis=1).astype(dtype)
                                 if items else np.zeros((C, 0), dtype=dtype))
            masks = [m for _, m in items if m is not None]
            self.nulls[kind] = (np.stack([m for _, m in items], axis=1)
                                if masks and any(m.any() for m in masks) else None)
        self.names = cols.names
        self.any_sup = bool(self.sup.any())
        self._cache = {}  # what chunks of up to so many rows share (_buffer, _shared)

    def ref(self, token: int) -> pa.StructArray:
        """The RUN_REF_TYPE value (one row) of a pass ``token`` over these classes."""
        return pa.StructArray.from_arrays(
            [from_numpy(np.array([token]), pa.int64()),
             pa.ListArray.from_arrays(from_numpy(np.array([0, len(self.names)], dtype=np.int32),
                                                 pa.int32()), strings(self.names))],
            names=["token", "names"])

    def _buffer(self, what: str, m: int):
        """A buffer every chunk of up to ``m`` rows shares, built once for the longest chunk
        seen (an Arrow array of m rows reads its first m entries): a kind's list offsets, the
        run id column, the no-suppression column."""
        have = self._cache.get(what)
        if have is None or have[0] < m:
            n = max(m, 2048)
            if what in _KINDS:
                values = np.arange(n + 1, dtype=np.int32) * self.width[what]
            elif what == "run":
                values = np.full(n, self.run_id, dtype=np.int64)
            else:  # "sup"
                values = np.zeros((n + 7) // 8, dtype=np.uint8)
            have = self._cache[what] = (n, pa.py_buffer(values))
        return have[1]

    def _shared(self, what: str, m: int) -> pa.Array:
        """The column every chunk of ``m`` rows shares: the run id, no class suppressed, or
        the empty lists of a kind no QI uses (built once for the longest chunk seen, its first
        ``m`` rows)."""
        have = self._cache.get("column " + what)
        if have is None or len(have) < m:
            n = max(m, 2048)
            if what in _KINDS:
                have = pa.Array.from_buffers(
                    pa.list_(_ARROW[what]), n, [None, self._buffer(what, n)],
                    children=[pa.Array.from_buffers(_ARROW[what], 0, [None, None])])
            else:
                have = pa.Array.from_buffers(pa.int64() if what == "run" else pa.bool_(), n,
                                             [None, self._buffer(what, n)])
            self._cache["column " + what] = have
        return have if len(have) == m else have.slice(0, m)

    def _list(self, kind: str, ec: np.ndarray) -> pa.Array:
        m, w = ec.size, self.width[kind]
        if w == 0:
            return self._shared(kind, m)
        values = np.take(self.values[kind], ec, axis=0).reshape(-1)
        nulls = self.nulls[kind]
        mask = None if nulls is None else np.take(nulls, ec, axis=0).reshape(-1)
        child = pa.Array.from_buffers(_ARROW[kind], m * w,
                                      [_validity_buffer(mask), pa.py_buffer(values)])
        return pa.Array.from_buffers(pa.list_(_ARROW[kind]), m, [None, self._buffer(kind, m)],
                                     children=[child])

    def at(self, ec: np.ndarray) -> pa.StructArray:
        """The ROW_TYPE value of rows of class ids ``ec`` (int64), in order. O(rows x QIs)."""
        m = ec.size
        fields = [pa.Array.from_buffers(pa.int64(), m, [None, pa.py_buffer(ec)]),
                  pa.Array.from_buffers(pa.int64(), m, [None, pa.py_buffer(self.size[ec])]),
                  from_numpy(self.sup[ec], pa.bool_()) if self.any_sup else self._shared("sup", m),
                  self._shared("run", m)]
        fields += [self._list(kind, ec) for kind in _KINDS]
        return pa.Array.from_buffers(_ROW_ARROW, m, [None], children=fields)
