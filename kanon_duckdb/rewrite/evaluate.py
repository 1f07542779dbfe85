"""Evaluate predicate trees on arrays: many queries against one table summary (workload_error).

Running 1,000 rewritten queries as SQL costs seconds of binding alone; here each table is read once,
pre-aggregated by the columns the predicates use (an anonymized table collapses to its classes),
and every query is folded over the same arrays with ``fraction.combine``, the structure that
builds the SQL. The algebra mirrors ``fraction.SqlAlgebra`` term by term.

On the raw table (``raw=True``) values are points and the algebra is SQL's three-valued logic:
1 true, 0 false, NaN unknown (a NULL value, or a value absent from the taxonomy); a query counts
the rows that are exactly 1, as SQL's WHERE does.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .context import table_sql
from .fraction import Exact, clip, combine, node_hits
from .sqlgen import number, quote, to_sql
from .unqualify_columns import unqualify_columns


@dataclass
class Summary:
    """A table grouped by the predicate columns: one entry per group (arrays of equal length)."""

    size: int
    numeric: dict  # attr -> (lo, hi) float64 arrays (raw: lo = hi = value, NaN for NULL)
    categorical: dict  # attr -> int64 node ids (n_nodes: NULL or a label outside the tree)
    exact: dict  # SQL text of a non-QI predicate -> float64 1 / 0 / NaN
    weights: dict  # "__n" rows; "__s<k>"/"__c<k>": sum / count of aggregate argument k
    inf_points: dict = field(default_factory=dict)  # attr -> -1 / 1 for a class [-inf, -inf] / [inf, inf], else 0


def exact_key(expr) -> str:
    """The SQL text identifying a non-QI predicate (table qualifiers dropped)."""
    return to_sql(unqualify_columns(expr, None))


def exact_parts(node) -> list:
    """Every Exact predicate in a tree."""
    if isinstance(node, Exact):
        return [node.expr]
    kids = getattr(node, "parts", None) or ([node.part] if hasattr(node, "part") else [])
    return [e for k in kids for e in exact_parts(k)]


def load_summary(con, ctx, raw: bool, attrs, exact_exprs, agg_args) -> Summary:
    """Group the raw (``raw=True``) or anonymized table of ``ctx`` by what the predicates read.

    ``attrs``: QI names (lower case); ``exact_exprs``: {key: expression}; ``agg_args``:
    {SQL text of an aggregate argument: k}.
    """
    keys = []
    for i, a in enumerate(attrs):
        if ctx.kind(a) == "numeric":
            q = ctx.numeric[a]
            if raw:
                keys.append(f"CAST({quote(q.name)} AS DOUBLE) AS lo{i}")
            else:
                keys.append(f"CAST(COALESCE({quote(q.lo_col)}, {to_sql(number(q.gmin))}) AS DOUBLE) AS lo{i}")
                keys.append(f"CAST(COALESCE({quote(q.hi_col)}, {to_sql(number(q.gmax))}) AS DOUBLE) AS hi{i}")
        else:
            q = ctx.categorical[a]
            keys.append(f"CAST({quote(q.name if raw else q.column)} AS VARCHAR) AS c{i}")
    exact_names = list(exact_exprs)
    for j, key in enumerate(exact_names):
        keys.append(f"CASE WHEN {key} THEN 1 WHEN NOT ({key}) THEN 0 END AS x{j}")
    sums = ["count(*) AS __n"] + [f"CAST(sum({a}) AS DOUBLE) AS __s{k}, count({a}) AS __c{k}"
                                  for a, k in agg_args.items()]
    table = ctx.raw_table if raw else ctx.anon_table
    sql = f"SELECT {', '.join(keys + sums)} FROM {table_sql(table)}" + (" GROUP BY ALL" if keys else "")
    cur = con.cursor()
    try:
        data = cur.sql(sql).fetchnumpy()  # (masked) numpy arrays; cheaper to start than Arrow
    finally:
        cur.close()
    numeric, categorical, exact, inf_points = {}, {}, {}, {}
    for i, a in enumerate(attrs):
        if ctx.kind(a) == "numeric":
            lo = _floats(data[f"lo{i}"])
            hi = lo if raw else _floats(data[f"hi{i}"])
            q = ctx.numeric[a]
            if not raw and q.has_inf:  # +-inf bounds read as the finite extremes (NumericQI.bounds)
                with np.errstate(invalid="ignore"):  # a class [-inf, -inf] / [inf, inf]: exact
                    inf_points[a] = np.where(np.isinf(lo) & (lo == hi), np.sign(lo), 0.0)
                lo, hi = (np.clip(x, float(q.gmin), float(q.gmax)) for x in (lo, hi))
            numeric[a] = (lo, hi)
        else:
            categorical[a] = _node_ids(data[f"c{i}"], ctx.categorical[a].taxonomy)
    for j, key in enumerate(exact_names):
        exact[key] = _floats(data[f"x{j}"])
    weights = {name: _floats(col) for name, col in data.items() if name.startswith("__")}
    return Summary(len(data["__n"]), numeric, categorical, exact, weights, inf_points)


def _floats(col) -> np.ndarray:
    """float64 values, NaN for NULL."""
    if np.ma.isMaskedArray(col):
        return np.ma.filled(col.astype(np.float64), np.nan)
    return np.asarray(col, dtype=np.float64)


def _node_ids(col, tree) -> np.ndarray:
    """Node id of each label; ``tree.n_nodes`` (one past the last node) for NULL / unknown."""
    missing, lookup = tree.n_nodes, tree.node_of_label
    values = np.ma.getdata(col).tolist()
    ids = np.fromiter((lookup.get(v, missing) for v in values), dtype=np.int64, count=len(values))
    if np.ma.isMaskedArray(col):
        ids[np.ma.getmaskarray(col)] = missing
    return ids


class ArrayAlgebra:
    """``fraction.combine`` over the arrays of a Summary (see SqlAlgebra for the SQL twin)."""

    def __init__(self, ctx, summary: Summary, raw: bool):
        self.ctx, self.s, self.raw = ctx, summary, raw

    def const(self, value: bool):
        return np.full(self.s.size, 1.0 if value else 0.0)

    def values(self, attr, values):
        if self.ctx.kind(attr) == "numeric":
            q = self.ctx.numeric[attr]
            lo, hi = self.s.numeric[attr]
            if self.raw:  # points, possibly outside the anonymized table's global range
                out = _member(values, lo).astype(float)
                out[np.isnan(lo)] = np.nan
                return out
            out = _numeric(q, clip(q, values), lo, hi)
            sign = self.s.inf_points.get(attr)
            if sign is None:
                return out
            # a class at one infinity is exact, as fraction._numeric_fraction
            return np.where(sign < 0, float(values.holds_infinity(-1)),
                            np.where(sign > 0, float(values.holds_infinity(1)), out))
        q = self.ctx.categorical[attr]
        ids = self.s.categorical[attr]
        table = np.zeros(q.taxonomy.n_nodes + 1)  # last slot: NULL / label outside the tree
        if values and values >= q.leaf_set:
            table[:-1] = 1.0  # the SQL: 1 unless the label is NULL (the last slot)
        elif values:
            for u, _, hit, total in node_hits(q, values):
                table[u] = hit / total
        if self.raw:
            table[-1] = np.nan
        return table[ids]

    def exact(self, exprs, conj: bool):
        arrays = [self.s.exact[exact_key(e)] for e in exprs]
        out = _and(arrays) if conj else 1.0 - _and([1.0 - a for a in arrays])
        return out if self.raw else np.nan_to_num(out, nan=0.0)

    def product(self, factors):
        return _and(factors) if factors else self.const(True)

    @staticmethod
    def one_minus(f):
        return 1.0 - f


def _and(factors):
    """Product with three-valued AND: an exact 0 gives 0 even next to NaN (unknown)."""
    out = np.asarray(factors[0], dtype=float)
    for f in factors[1:]:
        out = out * f
    if len(factors) > 1 and np.isnan(out).any():  # only raw NULLs produce NaN
        zero = np.zeros(out.shape, dtype=bool)
        for f in factors:
            zero |= f == 0
        out[zero] = 0.0
    return out


def _member(s, x) -> np.ndarray:
    """Whether each x lies in the interval set s (unbounded ends allowed; -inf and +inf by
    ``s.holds_infinity``)."""
    out = np.zeros(x.shape, dtype=bool)
    with np.errstate(invalid="ignore"):
        for iv in s.parts:
            inside = np.ones(x.shape, dtype=bool)
            if iv.lo is not None:
                inside &= (x >= float(iv.lo)) if iv.lo_closed else (x > float(iv.lo))
            if iv.hi is not None:
                inside &= (x <= float(iv.hi)) if iv.hi_closed else (x < float(iv.hi))
            out |= inside
        if s.infinities is not None:
            out = np.where(np.isposinf(x), s.holds_infinity(1),
                           np.where(np.isneginf(x), s.holds_infinity(-1), out))
    return out


def _numeric(q, s, lo, hi):
    if isinstance(s, int):
        return np.full(lo.shape, float(s))
    gmin, gmax = q.gmin, q.gmax

    def up(iv):
        return hi if iv.hi >= gmax else np.minimum(hi, float(iv.hi))

    def down(iv):
        return lo if iv.lo <= gmin else np.maximum(lo, float(iv.lo))

    with np.errstate(invalid="ignore", divide="ignore"):
        if q.integer:
            num = sum(np.maximum(up(iv) - down(iv) + 1.0, 0.0) for iv in s.parts)
            return num / (hi - lo + 1.0)
        member = _member(s, lo)
        length = sum((np.maximum(up(iv) - down(iv), 0.0) for iv in s.parts if not iv.is_point()),
                     np.zeros(lo.shape))
        width = hi - lo
        return np.where(width > 0, length / np.where(width > 0, width, 1.0), member.astype(float))


def evaluate(tree, ctx, summary: Summary, raw: bool) -> np.ndarray:
    """Per-group truth (raw) or fraction (anonymized) of one predicate tree."""
    return combine(tree, ctx, ArrayAlgebra(ctx, summary, raw))


def aggregate(kind: str, k, value: np.ndarray, summary: Summary, raw: bool):
    """COUNT(*) / COUNT(x) / SUM(x) / AVG(x) over a summary, weighted like the rewritten SQL.

    Raw: the groups whose predicate is exactly true. Anonymized: every group with its fraction
    (SUM and AVG over groups with a positive fraction; NULL when there is none).
    """
    w = (value == 1).astype(float) if raw else value
    n = summary.weights["__n"]
    if kind == "count_star":
        return float(np.sum(w * n))
    c = summary.weights[f"__c{k}"]
    if kind == "count":
        return float(np.sum(w * c))
    s = summary.weights[f"__s{k}"]
    use = (w > 0) & ~np.isnan(s)
    if not use.any():
        return None
    total = float(np.sum(w[use] * s[use]))
    if kind == "sum":
        return total
    den = float(np.sum(w[use] * c[use]))
    return total / den if den > 0 else None
