"""NCP (normalized certainty penalty, Xu et al. 2006) and the value policy, defined once.

Every Python user of NCP calls this module: ``generalize.per_qi_loss`` (the run's recorded
``qi_loss``), the lattice level tables, the clustering costs (``clustering/_ncp``), Mondrian's
tie-break and ``TaxonomyIndex.ncp``. The SQL macros (``sql/metrics_00_base.sql``) keep their own
SQL text of the same definition; ``tests/test_ncp_definition.py`` holds the two equal on random
tables.

Definition, for one class and one QI (the README's "Metrics" and "NULL policy"):

- numeric: (c_max - c_min) / (global max - global min), the global range being that of the
  data's finite non-NULL values (recorded in ``kanon_runs.num_lo/num_hi``); 0 when the column
  is constant. A NULL range (a class holding a NULL: "any value") counts ``NULL_NCP`` = 1, also
  for a constant column. A bound -inf / +inf counts as the global finite min / max (infinities
  are the ends of the order: [5, inf] covers everything from 5 up, [inf, inf] is exact).
  Computed on halves, so a range such as -1e308..1e308 does not overflow. An integer QI's spans
  and range are integer differences, each rounded to float64 once (``integer_ncp``): exact to
  ~1e-16 relative for any values (a double of 2^62 is off by up to 512); the run records its
  extremes exactly (``kanon_runs.int_lo/int_hi``).
- categorical: 0 when the published node covers one leaf, else leaves(node) / leaves(root).
- a suppressed row counts 1 on every QI.

Kernel coordinates: algorithms see each numeric QI as float64 coordinates (``QIData.num``);
a NULL is stored as ``null_sentinel(lo)``, strictly below every coordinate (the encoder picks a
representation where that holds, see ``encoding``), and flagged in ``QIData.num_null``.
"""
from __future__ import annotations

import numpy as np


NULL_NCP = 1.0        # a NULL range means "any value": fully generalized
SUPPRESSED_NCP = 1.0  # a suppressed row publishes nothing useful
NULL_OFFSET = 1.0     # NULLs sit at (lowest coordinate - NULL_OFFSET)


def null_sentinel(lo: float) -> float:
    """The coordinate a NULL gets when the column's lowest coordinate is ``lo``."""
    return lo - NULL_OFFSET


def sentinel_ok(lo: float, hi: float) -> bool:
    """True when a float64 column with finite extremes lo..hi can be carried as its own values:
    the NULL sentinel lies strictly below lo, the range does not overflow, and neither does its
    reciprocal (the kernels scale widths by 1 / range: a subnormal range such as 0..1e-310
    gives inf, then NaN costs)."""
    return bool(np.isfinite(lo) and np.isfinite(hi) and null_sentinel(lo) < lo
                and np.isfinite(hi - lo) and (hi == lo or np.isfinite(1.0 / (hi - lo))))


def range_or_one(lo, hi):
    """The divisor of numeric NCP: hi - lo (halved and doubled back, so it cannot overflow in
    the NCP quotient), 1.0 where the column is constant (its spans are 0 then)."""
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    r = hi - lo
    return np.where(hi > lo, r, 1.0)


def numeric_ncp(c_lo, c_hi, g_lo, g_hi):
    """NCP of published ranges [c_lo, c_hi] (arrays; NaN = NULL range) against the global range
    [g_lo, g_hi] (scalars or broadcastable). Returns float64 in [0, 1]. O(len)."""
    c_lo = np.asarray(c_lo, dtype=np.float64)
    c_hi = np.asarray(c_hi, dtype=np.float64)
    g_lo = np.asarray(g_lo, dtype=np.float64)
    g_hi = np.asarray(g_hi, dtype=np.float64)
    c_lo = np.where(np.isposinf(c_lo), g_hi, np.where(np.isneginf(c_lo), g_lo, c_lo))
    c_hi = np.where(np.isposinf(c_hi), g_hi, np.where(np.isneginf(c_hi), g_lo, c_hi))
    with np.errstate(invalid="ignore", over="ignore"):
        # halves only where the range overflows: halving is exact above the subnormals (same
        # ratio), and a subnormal range halves to 0
        sc = np.where(np.isinf(g_hi - g_lo), 0.5, 1.0)
        span = c_hi * sc - c_lo * sc
        rng = np.where(g_hi > g_lo, g_hi * sc - g_lo * sc, 1.0)
        ncp = np.where(g_hi > g_lo, span / rng, 0.0)
    ncp = np.where(np.isnan(c_lo) | np.isnan(c_hi), NULL_NCP, ncp)
    return np.clip(ncp, 0.0, 1.0)


def int_span(lo, hi) -> np.ndarray:
    """float64 of hi - lo for int64 arrays with hi >= lo, the difference taken exactly (in
    uint64, where it cannot overflow: it is below 2^64) and rounded once."""
    lo = np.asarray(lo, dtype=np.int64)
    hi = np.asarray(hi, dtype=np.int64)
    return (hi.view(np.uint64) - lo.view(np.uint64)).astype(np.float64)


def integer_ncp(c_lo, c_hi, null, g_lo: int, g_hi: int) -> np.ndarray:
    """NCP of published integer ranges [c_lo, c_hi] (int64 arrays; ``null`` True = NULL range)
    against the exact global range g_lo..g_hi (Python ints): spans and range are exact integer
    differences rounded once, so the quotient is within ~2 ulp of the exact ratio."""
    c_lo = np.asarray(c_lo, dtype=np.int64)
    c_hi = np.asarray(c_hi, dtype=np.int64)
    if g_hi > g_lo:
        ncp = np.minimum(int_span(c_lo, np.maximum(c_hi, c_lo)) / float(g_hi - g_lo), 1.0)
    else:
        ncp = np.zeros(c_lo.shape)
    return np.where(np.asarray(null, dtype=bool), NULL_NCP, ncp)


def node_ncp(n_leaves) -> np.ndarray:
    """Categorical NCP of every node of a tree from its leaf counts (node 0 = root). The root
    counts 1 in any tree with a counted leaf (as gcp() counts it: the implicit flat tree's '*'
    and the root of a tree of one leaf alike, so a recorded or level-table loss of a root does
    not read 0); a tree without a counted leaf costs 0."""
    nl = np.asarray(n_leaves, dtype=np.float64)
    if nl.size == 0:
        return nl
    out = np.where(nl <= 1, 0.0, nl / max(nl[0], 1.0))
    if nl[0] >= 1:  # a tree without a counted leaf keeps 0
        out[0] = 1.0
    return out


def cat_ncp_value(n_leaves_node, n_leaves_root):
    """Categorical NCP of one node: 0 for a single leaf, else the leaf fraction. Plain Python;
    ``cat_ncp`` is the same function compiled by numba for kernels."""
    return 0.0 if n_leaves_node <= 1 else n_leaves_node / n_leaves_root


def __getattr__(name):
    # ``cat_ncp`` compiles on first use, so importing this module (at connect time, through
    # taxonomy.tree) does not import numba
    if name == "cat_ncp":
        from ._numba_config import njit
        globals()["cat_ncp"] = njit(cat_ncp_value)
        return globals()["cat_ncp"]
    raise AttributeError(name)


def height_ratio(sub_height) -> np.ndarray:
    """Byun et al.'s categorical loss per node: height(subtree) / height(tree) (0 if flat)."""
    sh = np.asarray(sub_height, dtype=np.float64)
    if sh.size == 0 or sh[0] <= 0:
        return np.zeros(sh.size)
    return sh / sh[0]


def null_cost(dn: int, weights=None) -> np.ndarray:
    """Cost the clustering kernels charge a cluster holding a NULL on each numeric QI."""
    w = np.ones(dn) if weights is None else np.asarray(weights, dtype=np.float64)
    return (NULL_NCP * w).astype(np.float64)
