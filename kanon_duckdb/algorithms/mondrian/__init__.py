"""Strict multidimensional Mondrian (LeFevre et al. 2006).

Choose the dimension with the widest normalized range (numeric: span / global range; categorical:
leaves of the LCA / leaves of the root). When several dimensions are (nearly) tied for the widest
-- within 5 %, which at the top of the recursion is every QI, since all have width 1 -- the cut
that lowers the row-weighted NCP of its dimension most wins (LeFevre et al. leave the choice among
ties open; taking the first one measurably hurts utility on Adult). Segments of more than 256 rows
rank the tied dimensions on a strided sample of 128 rows, then cut the best one exactly.
Numeric dimensions are cut at the median ('<= m', or '< m' when that is the allowable or more
balanced one). Categorical dimensions are cut along the taxonomy, between two children of the
segment's LCA: of the two boundaries next to the child holding the median row, the allowable one
that leaves the least NCP (a side holding a single child drops to that child), else the most
balanced allowable boundary; when no boundary is allowable, a median cut in depth-first leaf order
is used (``leaf_order_fallback``). If no tied dimension can be cut, the next widest are tried; a
segment with no allowable cut on any dimension is a final class (strict Mondrian). Classes are
published with the LCA of their leaves.

Weights (``weights :=``, ``objectives.weight_vector``) enter the choice of dimension only: a
dimension's normalized width and its cut's NCP gain are multiplied by its QI's weight (through
``scale``, ``objectives.weighted_scale``); equal weights leave ``scale`` untouched.

Privacy models (``privacy``): with l-diversity, t-closeness or risk limits a cut is allowable only
when both sides satisfy every model (LeFevre et al.'s extension; one linear pass over the
segment's sensitive codes, ``privacy._kernels.split_ok``); the models are monotone, so every
final class satisfies them when the whole table does. The model tuple comes from
``QIData.extra`` (``privacy.spec_of``); without it the kernel gets k alone.
"""
from __future__ import annotations

from concurrent.futures import wait

import numpy as np

from ... import interrupt, objectives
from ...arrowconv import dictionary_encode, from_numpy, to_numpy
from ..base import Algorithm, Partition, no_progress
from ...qidata import QIData
from ...taxonomy._lca import lca_nodes
from ...privacy import spec_of
from ..._numba_config import njit
from . import _kernels
from ._kernels import Dims, mondrian_partition, threads

LEAF_ORDER_FALLBACK = True  # measured on Adult (ARX QIs): lower GCP at every k with gain-based ties


def stack_dimensions(data: QIData):
    """(X (n, d) float64 row-major coordinates, scale (d,), tree_of (d,)): numeric QIs first
    (the layout of the privacy repair and bottomup kernels)."""
    d = data.dn + data.dc
    X = np.empty((data.n, d), dtype=np.float64)
    X[:, :data.dn] = data.num
    X[:, data.dn:] = data.cat
    return (X,) + _scales(data)[1:]


def _scales(data: QIData):
    """(None, scale (d,), tree_of (d,)): numeric ranges, then 1 per categorical QI."""
    d = data.dn + data.dc
    scale = np.ones(d)
    scale[:data.dn] = data.num_range
    tree_of = np.full(d, -1, dtype=np.int64)
    tree_of[data.dn:] = np.arange(data.dc)
    return None, scale, tree_of


SHORT_SPAN = 1 << 24  # integer coordinates spanning fewer values are coded by offset (no sort)


@njit
def _fill_codes(num, cat, base, by_offset, W, lo, hi):
    """W[:, j] = num[:, j] - base[j] for the numeric columns with ``by_offset[j]``, W[:, dn + j]
    = cat[:, j], in one row-major pass (the other numeric columns are filled by rank), which
    also gathers the smallest and largest value of each column of ``num`` and ``cat`` into
    ``lo``/``hi`` (float64 (dn + dc,); a categorical code as float64)."""
    dn = num.shape[1]
    for j in range(dn + cat.shape[1]):
        lo[j] = np.inf
        hi[j] = -np.inf
    for i in range(num.shape[0]):
        for j in range(dn):
            v = num[i, j]
            lo[j] = min(lo[j], v)
            hi[j] = max(hi[j], v)
            if by_offset[j]:
                W[i, j] = np.int32(v - base[j])
        for j in range(cat.shape[1]):
            c = cat[i, j]
            W[i, dn + j] = c
            lo[dn + j] = min(lo[dn + j], np.float64(c))
            hi[dn + j] = max(hi[dn + j], np.float64(c))


def _rank_codes(col: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int32 rank of each value among the column's distinct values, the sorted distinct
    values): a hash dictionary, then a sort of the distinct values only. Through ``arrowconv``:
    ``pa.array`` of a numpy array imports pandas and ``pyarrow.compute`` builds ~290 wrappers
    (about 1 s of CPU on a first call with a float QI)."""
    enc = dictionary_encode(from_numpy(col + 0.0))  # + 0.0: -0.0 and 0.0 are one value
    distinct = to_numpy(enc.dictionary)
    order = np.argsort(distinct, kind="stable")
    rank = np.empty(order.size, dtype=np.int32)
    rank[order] = np.arange(order.size, dtype=np.int32)
    return rank[to_numpy(enc.indices)], distinct[order]


def _row_blocks(n: int) -> list:
    """Row ranges (a, b) of the threads that share a pass over n rows (one below
    ``_kernels.PARALLEL_MIN_ROWS``)."""
    parts = threads() if n >= _kernels.PARALLEL_MIN_ROWS else 1
    cuts = [n * t // parts for t in range(parts + 1)]
    return list(zip(cuts[:-1], cuts[1:]))


def _on_blocks(fn, blocks) -> list:
    """fn(a, b) of every block, the first in this thread and the others in the kernels' pool
    (numba kernels release the GIL): their results in block order."""
    if len(blocks) == 1:
        return [fn(*blocks[0])]
    pool = _kernels._pool(len(blocks) - 1)
    others = [pool.submit(fn, a, b) for a, b in blocks[1:]]
    try:
        first = fn(*blocks[0])
    finally:
        wait(others)
    return [first] + [f.result() for f in others]


def code_dimensions(data: QIData):
    """(W int32 (n, d) row-major codes, vals float64, vals_off int64 (d + 1,)) for the kernels
    (see ``_kernels``), order preserving: numeric QIs first, coded by their offset from the
    smallest coordinate when the column is integral (integer SQL types, NULL coordinate
    included) and spans fewer than SHORT_SPAN values, else by rank (``_rank_codes``); then the
    categorical QIs' leaf ordinals, whose coordinate is the ordinal itself. O(n·d) in one
    row-major pass shared by the threads (``_row_blocks``) that also checks the extremes the
    encoding recorded (a second pass when they differ: a NULL or ranges set by ``with_ranges``),
    plus a hash and a sort of the distinct values of a float or wide column."""
    dn, d = data.dn, data.dn + data.dc
    W = np.empty((data.n, d), dtype=np.int32)
    blocks = _row_blocks(data.n)

    def fill(lo, hi):
        # the numeric columns' codes as their extremes lo/hi give them, and the extremes seen
        by_offset = np.array([bool(data.num_is_int[j]) and hi[j] - lo[j] < SHORT_SPAN
                              for j in range(dn)], dtype=np.bool_)
        base = np.array(lo[:dn], dtype=np.float64)
        ext = {a: (np.empty(d), np.empty(d)) for a, _b in blocks}
        _on_blocks(lambda a, b: _fill_codes(data.num[a:b], data.cat[a:b], base, by_offset, W[a:b],
                                            *ext[a]), blocks)
        return (np.min([x[0] for x in ext.values()], axis=0),
                np.max([x[1] for x in ext.values()], axis=0), by_offset)

    # one pass with the extremes the encoding recorded (its coordinates of the non-NULL values);
    # a column whose pass saw others (a NULL's coordinate lies below them; ranges set by
    # with_ranges) is coded again from what the pass saw
    lo, hi, by_offset = fill(data.num_lo, data.num_hi)
    if dn and not (np.array_equal(lo[:dn], data.num_lo) and np.array_equal(hi[:dn], data.num_hi)):
        lo, hi, by_offset = fill(lo, hi)
    vals, off = [], [0]
    for j in range(d):
        if j >= dn:
            v = np.arange(int(hi[j]) + 1, dtype=np.float64)  # a leaf ordinal is its coordinate
        elif by_offset[j]:
            v = lo[j] + np.arange(int(hi[j] - lo[j]) + 1, dtype=np.float64)
        else:
            W[:, j], v = _rank_codes(data.num[:, j])
        vals.append(v)
        off.append(off[-1] + v.size)
    return W, np.concatenate(vals) if vals else np.zeros(0), np.asarray(off, dtype=np.int64)


def _partition(data: QIData, k: int, leaf_order_fallback: bool, progress=no_progress):
    W, vals, vals_off = code_dimensions(data)
    _X, scale, tree_of = _scales(data)
    scale = objectives.weighted_scale(scale, objectives.weight_vector(data))  # weights := only
    trees = data.cat_arrays()
    spec = spec_of(data)
    # None when only class size matters: the kernel's specialization for None compiles no
    # privacy check (a shorter first compile of the default path)
    P = spec.packed() if spec is not None and spec.has_class_models else None
    ec, lo, hi = mondrian_partition(W, int(k), Dims(scale, tree_of, bool(leaf_order_fallback),
                                                    vals, vals_off),
                                    trees, interrupt.stop_flag(progress), P)
    interrupt.check(progress)
    del W
    for j in range(lo.shape[1]):  # codes -> coordinates
        lo[:, j] = vals[vals_off[j] + lo[:, j].astype(np.int64)]
        hi[:, j] = vals[vals_off[j] + hi[:, j].astype(np.int64)]
    return ec, lo, hi, trees


def partition_rows(data: QIData, k: int, leaf_order_fallback: bool = LEAF_ORDER_FALLBACK,
                   progress=no_progress) -> np.ndarray:
    """Class id per row (int64 (n,)) of strict Mondrian on all QIs of ``data``; stops with
    ``RunInterrupted`` when the run of ``progress`` is interrupted."""
    return _partition(data, k, leaf_order_fallback, progress)[0]


def run(data: QIData, k: int, seed: int, params: dict, progress=no_progress) -> Partition:
    """Strict Mondrian with the published values read off the kernel's class blocks: numeric
    min/max (NaN = NULL range when the class holds a NULL, encoded below the global minimum)
    and the LCA of each class's smallest and largest leaf. Same values as the generic
    ``generalize`` pass, without its scatter over rows."""
    ec, lo, hi, trees = _partition(data, k, LEAF_ORDER_FALLBACK, progress)
    leaf_node, leaf_off, parent, leaf_hi, _nl, node_off, _sub, _leaf_lo = trees
    dn = data.dn
    num_lo = np.ascontiguousarray(lo[:, :dn])  # lo/hi themselves when every QI is numeric
    num_hi = np.ascontiguousarray(hi[:, :dn])
    has_null = num_lo < data.num_lo[None, :]  # NULLs sit at ncp.null_sentinel, below every value
    num_lo[has_null] = np.nan
    num_hi[has_null] = np.nan
    nodes = lca_nodes(lo[:, dn:].astype(np.int32), hi[:, dn:].astype(np.int32), leaf_node,
                      leaf_off, parent, leaf_hi, node_off)
    progress(1.0)
    return Partition(ec=ec, num_lo=num_lo, num_hi=num_hi, cat_nodes=nodes)


ALGORITHMS = [Algorithm("mondrian", run, "local", {},
                        "strict multidimensional Mondrian (LeFevre et al. 2006)")]
