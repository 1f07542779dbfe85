"""Level maps: every QI as a tree, each row as a leaf ordinal, and per level a compact code table.

Full-domain (global) recoding chooses one level per QI: a leaf maps to its ancestor ``L`` steps
up (``TaxonomyIndex.anc``, capped at the root). ``LatticeSpace`` precomputes, once per run:

- the level codes: per QI j and level L (column ``cstart[j] + L``) the compact code of each
  row's level-L ancestor, in QI order (numeric QIs first, then categorical, the order of
  ``QIData``), held byte by byte in ``planes`` (uint8 (n_planes, t), column c's low byte at row
  ``pstart[c]``, ``pbytes[c]`` bytes: one for a level of at most 256 codes, none for a level of
  one code); t is the number of encoded rows: the distinct QI tuples when ``QIData.counts``
  holds their row counts (``counts``), so the search's cost grows with the distinct tuples,
  not the rows. ``codes`` (n_cols, t) is the same as one matrix (``code_dtype``: uint16 when
  every level has < 65536 values, else int32), built on first use only (tests, wide lattices):
  searches read the planes and gather the codes of class representatives (``codes_at``);
- per column c and code x (flat, at ``coff[c] + x``): ``cnode`` the tree node (for output) and
  ``cncp`` its NCP; ``mcol[c]`` the number of codes;
- ``ncp_mean`` (d, Hmax+1): mean NCP over all rows of QI j at level L (GCP without suppression is
  a sum of these, so it needs no pass over the data).

From ``blocks.SORT_MIN`` encoded rows they are held sorted by the leaves of a few QIs
(``blocks.py``): position p holds the data's tuple ``perm[p]`` (planes and ``counts`` in that
order; ``data_order`` maps a per-position array back), and ``blocks`` (``TupleBlocks``) gives
each node's blocks of positions, which no class of the node crosses.

Numeric QIs use the interval tree of ``data.num_trees[j]`` (from ``kanon_taxonomy``, attached by
``encoding.attach_numeric_trees``) or, when there is none, a nested interval tree built here from
the column's distinct values (``taxonomy.intervals.interval_index``: the tree of
``builders.interval_edges`` with its default widths, built as arrays; the widths are reported in
``auto_widths``). A numeric NULL is its own leaf under the root. The published range
of a numeric node is the min/max of the data values under it (never parsed from labels); a node
covering the NULL leaf publishes the NULL range (NaN).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from . import _kernels as K
from . import blocks
from ...taxonomy import builders
from ...taxonomy.intervals import interval_index
from ...taxonomy.tree import TaxonomyIndex, flat_index
from ...qidata import QIData

_COUNT_RANGE = 1 << 24  # integer columns spanning fewer values: distinct values by counting
PARALLEL_ROWS = 1 << 18  # encoded rows from which the byte planes are written on numba's threads


@dataclass
class LatticeSpace:
    n: int                  # rows of the source (the sum of ``counts``)
    names: list             # QI names, numeric first then categorical
    dn: int                 # number of numeric QIs (the first dn QIs)
    trees: list             # TaxonomyIndex per QI
    heights: np.ndarray     # int64 (d,)
    code_dtype: type        # np.uint16 / np.int32: dtype of ``codes`` and class tables' codes
    cstart: np.ndarray      # int64 (d,): column of (j, level 0)
    mcol: np.ndarray        # int64 (n_cols,): codes per column
    coff: np.ndarray        # int64 (n_cols,): offset of a column's codes in cnode / cncp
    cnode: np.ndarray       # int32 flat: tree node of each code
    cncp: np.ndarray        # float64 flat: NCP of each code
    ncp_mean: np.ndarray    # float64 (d, Hmax+1)
    node_lo: list           # per numeric QI: float64 (n_nodes,) published lower bound (NaN = NULL)
    node_hi: list
    auto_widths: dict       # numeric QI -> widths of the automatically built tree
    counts: np.ndarray | None = None  # int64 (t,): rows per encoded tuple; None = one each
    leaf_codes: list = field(default_factory=list)  # per column: int64 code of each tree leaf
    planes: np.ndarray | None = None  # uint8 (n_planes, t): the codes byte by byte (see below)
    pstart: np.ndarray | None = None  # int64 (n_cols,): plane of a column's low byte
    pbytes: np.ndarray | None = None  # int64 (n_cols,): bytes of a column's codes (1..3)
    perm: np.ndarray | None = None  # int64 (t,): the data's tuple at each position (None: same)
    blocks: "blocks.TupleBlocks | None" = None  # the blocks of the sorted tuples (blocks.py)
    _maps: dict = field(default_factory=dict, repr=False)
    _codes: np.ndarray | None = field(default=None, repr=False)

    @property
    def codes(self) -> np.ndarray:
        """All level codes as one (n_cols, t) matrix of ``code_dtype`` (built on first use)."""
        if self._codes is None or self._codes.dtype != self.code_dtype:
            self._codes = self.codes_at(np.arange(self.mcol.size, dtype=np.int64),
                                        np.arange(self.t, dtype=np.int64))
        return self._codes

    def codes_at(self, cols, rows) -> np.ndarray:
        """(len(cols), len(rows)) ``code_dtype``: the codes of columns ``cols`` at ``rows``."""
        out = np.empty((len(cols), len(rows)), dtype=self.code_dtype)
        K.plane_gather(self.planes, self.pstart, self.pbytes, np.asarray(cols, dtype=np.int64),
                       np.asarray(rows, dtype=np.int64), out)
        return out

    def code_counts(self, c: int, counts=None) -> np.ndarray:
        """int64 (mcol[c],): rows per code of column c (``counts`` rows per encoded row, int64,
        empty or None: one each)."""
        cnt = np.zeros(0, dtype=np.int64) if counts is None else counts
        return K.plane_counts(self.planes, int(self.pstart[c]), int(self.pbytes[c]),
                              int(self.mcol[c]), cnt)

    def key_planes(self, cols, strides):
        """(plane rows, strides) whose weighted sum over ``planes`` is the mixed-radix key of
        ``cols`` / ``strides`` (int64 (d,)): a column of b bytes is b planes, byte i weighted
        by its stride << 8 i. Grouping passes read these narrow planes (most level columns have
        at most 256 codes: one byte per row instead of two or four) and get the same keys."""
        rows, st = [], []
        for c, s_ in zip(cols.tolist(), strides.tolist()):
            for i in range(int(self.pbytes[c])):
                rows.append(int(self.pstart[c]) + i)
                st.append(s_ << (8 * i))
        return np.array(rows, dtype=np.int64), np.array(st, dtype=np.int64)

    @property
    def t(self) -> int:
        """Encoded rows (distinct tuples for a histogram)."""
        return int(self.planes.shape[1])

    @property
    def d(self) -> int:
        return len(self.names)

    def data_order(self, per_position: np.ndarray) -> np.ndarray:
        """A per-tuple array in the data's tuple order (the tuples may be sorted: ``perm``)."""
        if self.perm is None:
            return per_position
        out = np.empty_like(per_position)
        out[self.perm] = per_position
        return out

    def cols(self, levels) -> np.ndarray:
        """Column of each QI at a node (int64 (d,))."""
        return self.cstart + np.asarray(levels, dtype=np.int64)

    def keyspace(self, levels):
        """(strides int64 (d,), key space size as a Python int) of a node."""
        strides = np.empty(self.d, dtype=np.int64)
        ks = 1
        for j, c in enumerate(self.cols(levels)):
            strides[j] = ks if ks < (1 << 62) else 0
            ks *= int(self.mcol[c])
        return strides, ks

    def level_map(self, j: int, src: int, dst: int) -> np.ndarray:
        """int64 (codes of QI j at level src,): the level-dst code of each level-src code
        (src <= dst: ancestors nest, so every leaf under a code agrees). Memoized."""
        a, b = int(self.cstart[j] + src), int(self.cstart[j] + dst)
        m = self._maps.get((a, b))
        if m is None:
            m = np.zeros(int(self.mcol[a]), dtype=np.int64)
            m[self.leaf_codes[a]] = self.leaf_codes[b]
            self._maps[(a, b)] = m
        return m

    def distinct_at(self, j: int, level: int) -> int:
        """Distinct generalized values of QI j present in the data at ``level``."""
        c = int(self.cstart[j] + level)
        return int(np.count_nonzero(self.code_counts(c)))


def _auto_numeric_tree(name, vals, is_int):
    """Interval tree over the distinct values ``vals`` (sorted float64) and its widths."""
    integral = bool(np.all(vals == np.floor(vals)))
    if is_int and integral:
        labels = [str(v) for v in vals.astype(np.int64).tolist()]
        lo, hi = (Fraction(int(v)) for v in (vals[0], vals[-1]))
    else:
        labels = [repr(v) for v in vals.tolist()]
        lo, hi = (Fraction(repr(float(v))) for v in (vals[0], vals[-1]))
    widths = builders.default_widths(lo, hi, integral) if hi > lo else []
    if widths:  # leaves in value order
        tree = interval_index(name, vals, labels, widths)
        leaf_of_value = np.arange(vals.shape[0], dtype=np.int32)
    else:
        tree = flat_index(name, labels)
        leaf_of_value = np.array([tree.leaf_of_label[lab] for lab in labels], dtype=np.int32)
    return tree, leaf_of_value, [int(w) if w.denominator == 1 else float(w) for w in widths]


def numeric_tree(data: QIData, j: int):
    """(tree, leaf ordinal per row, auto widths or None) of numeric QI j."""
    name = data.num_names[j]
    null = data.num_null[:, j]
    given = data.num_trees[j] if j < len(data.num_trees) else None
    if given is not None and data.num_leaf is not None:
        return given, np.ascontiguousarray(data.num_leaf[:, j], dtype=np.int32), None
    col = data.num[:, j]
    ok, vals, pos = K.distinct_integral(col, null, _COUNT_RANGE)  # integers: counted
    if not ok:
        vals, pos = K.distinct_sorted(col, col.view(np.int64), null)
    if vals.size == 0:  # all NULL: a single NULL leaf under the root
        tree = flat_index(name, []).with_null_leaf()
        return tree, np.full(data.n, tree.leaf_of_label[None], dtype=np.int32), []
    tree, leaf_of_value, widths = _auto_numeric_tree(name, vals, bool(data.num_is_int[j]))
    leaf = leaf_of_value[pos]  # NULL rows (pos -1) get the NULL leaf below
    if null.any():
        tree = tree.with_null_leaf()
        leaf = leaf.copy()
        leaf[null] = tree.leaf_of_label[None]
    return tree, leaf.astype(np.int32), widths


def _node_ranges(tree: TaxonomyIndex, leaf, values, null):
    """Published (lo, hi) per node: min/max of the data values of the leaves under it; NaN if
    the node covers a NULL row."""
    vmin, vmax, has_null = K.leaf_extremes(leaf, values, null, tree.leaf_count)
    n_nodes = tree.n_nodes
    lo = np.full(n_nodes, np.inf)
    hi = np.full(n_nodes, -np.inf)
    nn = np.zeros(n_nodes, dtype=bool)
    lo[tree.leaf_node] = vmin
    hi[tree.leaf_node] = vmax
    nn[tree.leaf_node] = has_null
    K.roll_up_extremes(tree.parent, lo, hi, nn)
    lo = np.where(nn | ~np.isfinite(lo), np.nan, lo)
    hi = np.where(nn | ~np.isfinite(hi), np.nan, hi)
    return lo, hi


def build_space(data: QIData) -> LatticeSpace:
    """Precompute rows, level maps and NCP tables for all QIs of ``data``. O(t·d + tree sizes),
    t the encoded rows (the distinct tuples of a histogram)."""
    n = data.n_rows
    trees, cols, names, auto = [], [], [], {}
    node_lo, node_hi, ncp_nodes = [], [], []
    for j in range(data.dn):
        tree, leaf, widths = numeric_tree(data, j)
        name = data.num_names[j]
        if widths is not None:
            auto[name] = widths
        lo, hi = _node_ranges(tree, leaf, data.num[:, j], data.num_null[:, j])
        ncp = data.numeric_ncp(j, lo, hi)
        trees.append(tree)
        cols.append(leaf)
        names.append(name)
        node_lo.append(lo)
        node_hi.append(hi)
        ncp_nodes.append(ncp)
    for j, tree in enumerate(data.trees):  # views of data.cat: read in place (any stride)
        trees.append(tree)
        cols.append(data.cat[:, j] if data.cat.dtype == np.int32 else data.cat[:, j].astype(np.int32))
        names.append(data.cat_names[j])
        ncp_nodes.append(tree.node_ncp())  # leaves as gcp() counts them
    d = len(trees)
    heights = np.array([t.height for t in trees], dtype=np.int64)
    cstart = np.zeros(d, dtype=np.int64)
    if d:
        cstart[1:] = np.cumsum(heights + 1)[:-1]
    n_cols = int((heights + 1).sum())
    hmax = int(heights.max()) if d else 0
    ncp_mean = np.zeros((d, hmax + 1))
    per_col = []  # (codes of leaves, nodes, ncp) per column
    wcnt = np.zeros(0, dtype=np.int64) if data.counts is None else np.ascontiguousarray(
        data.counts, dtype=np.int64)
    for j, tree in enumerate(trees):
        leaf_rows = K.leaf_rows(cols[j], wcnt, tree.leaf_count)
        for lv in range(heights[j] + 1):
            anc = tree.anc[:, lv]
            uniq, leaf_code = np.unique(anc, return_inverse=True)
            per_col.append((leaf_code.reshape(-1).astype(np.int64), uniq.astype(np.int32),
                            ncp_nodes[j][uniq]))
            ncp_mean[j, lv] = float(np.dot(leaf_rows, ncp_nodes[j][anc])) / n
        ncp_mean[j, heights[j] + 1:] = ncp_mean[j, heights[j]]
    mcol = np.array([p[1].size for p in per_col], dtype=np.int64)
    coff = np.zeros(n_cols, dtype=np.int64)
    if n_cols:
        coff[1:] = np.cumsum(mcol)[:-1]
    cnode = np.concatenate([p[1] for p in per_col]) if per_col else np.zeros(0, np.int32)
    cncp = np.concatenate([p[2] for p in per_col]) if per_col else np.zeros(0)
    dtype = np.uint16 if (mcol.size == 0 or mcol.max() < 65536) else np.int32
    counts, perm, tblocks = data.counts, None, None
    if counts is not None and n == data.n and (n == 0 or int(wcnt.min()) >= 1):
        counts = None  # every tuple stands for one row: the same as no counts
    if data.n >= blocks.SORT_MIN:  # the tuples in blocks of the sort QIs' leaves
        leaf_counts = [t.leaf_count for t in trees]
        perm, qis = blocks.sort_tuples(cols, leaf_counts, data.n)
        if perm is not None:
            cols = [blocks.gather(c, perm) for c in cols]
            counts = None if counts is None else blocks.gather(np.asarray(counts), perm)
            tblocks = blocks.TupleBlocks.build(np.stack([cols[j] for j in qis]), qis,
                                               leaf_counts)
    pstart, pbytes = plane_layout(mcol)
    planes = np.empty((int(pbytes.sum()), data.n), dtype=np.uint8)
    for j in range(d):
        rows = np.arange(cstart[j], cstart[j] + heights[j] + 1, dtype=np.int64)
        luts = [per_col[c][0] for c in rows]
        off = np.zeros(rows.size, dtype=np.int64)
        off[1:] = np.cumsum([m.size for m in luts[:-1]])
        write = K.level_codes_parallel if data.n >= PARALLEL_ROWS else K.level_codes
        write(np.ascontiguousarray(cols[j], dtype=np.int32), np.concatenate(luts), off,
              pstart[rows], pbytes[rows], planes)
    return LatticeSpace(n, names, data.dn, trees, heights, dtype, cstart, mcol, coff, cnode, cncp,
                        ncp_mean, node_lo, node_hi, auto, counts, [p[0] for p in per_col],
                        planes, pstart, pbytes, perm, tblocks)


def plane_layout(mcol: np.ndarray):
    """(pstart, pbytes int64 (n_cols,)): column c's codes (< mcol[c]) take pbytes[c] bytes (none
    when it has one code: every code is 0), held low byte first in planes pstart[c] ..
    pstart[c] + pbytes[c] - 1."""
    pbytes = np.array([(int(m) - 1).bit_length() + 7 >> 3 for m in mcol], dtype=np.int64)
    pstart = np.zeros(mcol.size, dtype=np.int64)
    if mcol.size:
        pstart[1:] = np.cumsum(pbytes)[:-1]
    return pstart, pbytes


def code_planes(codes: np.ndarray, mcol: np.ndarray):
    """(planes uint8 (n_planes, t), pstart, pbytes): ``codes`` (n_cols, t) byte by byte in the
    layout of ``plane_layout`` (the reference of what ``build_space`` writes)."""
    pstart, pbytes = plane_layout(mcol)
    planes = np.empty((int(pbytes.sum()), codes.shape[1]), dtype=np.uint8)
    for c in range(mcol.size):
        for i in range(int(pbytes[c])):
            if i == 0:
                np.copyto(planes[pstart[c]], codes[c], casting="unsafe")
            else:
                np.copyto(planes[pstart[c] + i], codes[c] >> (8 * i), casting="unsafe")
    return planes, pstart, pbytes
