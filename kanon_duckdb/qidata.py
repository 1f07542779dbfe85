"""The encoded data every algorithm reads: ``QIData`` (rows as arrays) and ``PackedTrees``
(its taxonomy trees concatenated for numba kernels).

Built by ``kanon_duckdb.encoding`` from a table; no DuckDB here. The NCP of a published range or
node is ``kanon_duckdb.ncp``'s (these types only look up the ranges and tree shapes it needs).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from .ncp import height_ratio, integer_ncp, node_ncp, numeric_ncp, range_or_one


@dataclass(frozen=True)
class QIData:
    """Encoded quasi-identifiers of n rows.

    num      float64 (n, dn)  numeric QIs as coordinates (the values themselves for nearly every
                              column; see codec.py); NULLs at ncp.null_sentinel (below every
                              coordinate) so they sort first
    num_null bool    (n, dn)  True where the numeric value was NULL
    num_lo   float64 (dn,)    lowest coordinate of each numeric QI (non-NULL values)
    num_hi   float64 (dn,)    highest coordinate
    num_codec list (dn,)      None (plain: coordinate = value) or a codec.NumericCodec
    num_is_int bool  (dn,)    column has an integer SQL type
    cat      int32   (n, dc)  leaf ordinal of each categorical value in its tree
    trees    list of TaxonomyIndex, one per categorical QI (NULL values map to the NULL leaf)
    num_names / cat_names: the column names, in the order of the array columns
    extra    dict of named per-row arrays an algorithm asked for (e.g. the sensitive attribute)
    tree_attrs dict QI name -> kanon_taxonomy attr of the tree it used (taxonomy.store.
             resolve_tree_attr); absent for the implicit flat tree or no tree
    counts   int64 (n,) or None: source rows each encoded row stands for (the histogram of
             distinct QI tuples that the lattice family reads, ``encoding.encode(histogram=
             True)``); None = one row each. ``n_rows`` is the source's row count either way.
    """
    n: int
    num: np.ndarray
    num_null: np.ndarray
    num_lo: np.ndarray
    num_hi: np.ndarray
    num_is_int: np.ndarray
    cat: np.ndarray
    trees: list
    num_names: list
    cat_names: list
    extra: dict = field(default_factory=dict)
    num_trees: list = field(default_factory=list)  # optional interval trees for numeric QIs (lattice)
    num_leaf: np.ndarray | None = None  # int32 (n, dn) leaf ordinal in num_trees, when present
    tree_attrs: dict = field(default_factory=dict)
    num_codec: list = field(default_factory=list)  # per numeric QI: None (plain) or NumericCodec
    counts: np.ndarray | None = None  # int64 (n,): rows per encoded (distinct) tuple

    def tree_rows(self) -> dict:
        """{kanon_taxonomy attr: the rows its tree was built from (``TaxonomyIndex.rows``, None
        where not known)} of every tree a QI used (``tree_attrs``): what the run's tree
        fingerprints are looked up by (``taxonomy.store.tree_fingerprints``)."""
        used = {**dict(zip(self.cat_names, self.trees)),
                **dict(zip(self.num_names, self.num_trees or []))}
        return {a: getattr(used.get(c), "rows", None) for c, a in self.tree_attrs.items()}

    @property
    def n_rows(self) -> int:
        """Rows of the source: ``n``, or the sum of ``counts`` for a histogram."""
        return self.n if self.counts is None else int(self.counts.sum())

    def row_counts(self) -> np.ndarray:
        """int64 (n,): ``counts``, or ones."""
        return np.ones(self.n, dtype=np.int64) if self.counts is None else self.counts

    @property
    def dn(self) -> int:
        return self.num.shape[1]

    @property
    def dc(self) -> int:
        return self.cat.shape[1]

    @property
    def num_range(self) -> np.ndarray:
        """Global range of the coordinates per numeric QI, 1.0 where it is 0 (the kernels'
        width scale; a constant column has width 0)."""
        return range_or_one(self.num_lo, self.num_hi)

    def codec(self, j: int):
        """The codec of numeric QI j (None = plain)."""
        return self.num_codec[j] if j < len(self.num_codec) else None

    def value_range(self, j: int) -> tuple[float, float]:
        """(min, max) of the finite values of numeric QI j as floats: the global range of its
        NCP (rounded for integers beyond 2^53; ``int_range`` has them exactly)."""
        c = self.codec(j)
        if c is None:
            return float(self.num_lo[j]), float(self.num_hi[j])
        return float(c.value_lo), float(c.value_hi)

    def int_range(self, j: int) -> tuple[int, int] | None:
        """Exact (min, max) Python ints of integer numeric QI j's values ((0, 0) when all are
        NULL), None for a non-integer QI."""
        if not (j < self.num_is_int.size and self.num_is_int[j]):
            return None
        c = self.codec(j)
        if c is None:  # plain: the coordinates are the values, exact in float64
            return int(self.num_lo[j]), int(self.num_hi[j])
        return int(c.value_lo), int(c.value_hi)

    def decode_float(self, j: int, coords) -> np.ndarray:
        """Real values (float64; NaN = NULL range kept) of coordinates of numeric QI j."""
        c = self.codec(j)
        return np.asarray(coords, dtype=np.float64) if c is None else c.decode_float(coords)

    def numeric_ncp(self, j: int, lo, hi) -> np.ndarray:
        """NCP (kanon_duckdb.ncp) of published coordinate ranges [lo, hi] of numeric QI j
        (NaN = NULL range); an integer QI beyond 2^53 by exact integer spans (``integer_ncp``)."""
        c = self.codec(j)
        if c is not None and self.num_is_int[j]:
            (ilo, null), (ihi, _) = c.decode_int(lo), c.decode_int(hi)
            return integer_ncp(ilo, ihi, null, *self.int_range(j))
        g_lo, g_hi = self.value_range(j)
        return numeric_ncp(self.decode_float(j, lo), self.decode_float(j, hi), g_lo, g_hi)

    def cat_arrays(self):
        """Packed tree arrays for kernels, see :func:`pack_trees`."""
        return pack_trees(self.trees)


class PackedTrees(NamedTuple):
    """Several TaxonomyIndex trees concatenated for numba kernels (one type for every family).

    Node ids in ``leaf_node`` and ``parent`` are local to their tree: tree j's nodes are at
    ``node_off[j]:node_off[j+1]`` of the per-node arrays (parent, leaf_hi, n_leaves, sub_height,
    leaf_lo), its leaves at ``leaf_off[j]:leaf_off[j+1]`` of ``leaf_node``. Unpacks as the
    8-tuple the kernels take.
    """
    leaf_node: np.ndarray   # int32, by leaf ordinal: local node id of the leaf
    leaf_off: np.ndarray    # int64 (dc + 1,)
    parent: np.ndarray      # int32, local parent id (-1 at the root)
    leaf_hi: np.ndarray     # int32, last leaf ordinal under the node
    n_leaves: np.ndarray    # int32, leaves as NCP counts them (TaxonomyIndex.table_leaves:
    #                         the NULL policy's leaf left out of the root's count, as gcp())
    node_off: np.ndarray    # int64 (dc + 1,)
    sub_height: np.ndarray  # int32, height of the node's subtree
    leaf_lo: np.ndarray     # int32, first leaf ordinal under the node

    def lca(self, j: int, lo_leaf: int, hi_leaf: int) -> int:
        """Local node id of the LCA of leaves lo_leaf..hi_leaf of tree j. O(height)."""
        from .taxonomy._lca import lca_of_range
        a, b = int(self.node_off[j]), int(self.node_off[j + 1])
        lf = self.leaf_node[int(self.leaf_off[j]):int(self.leaf_off[j + 1])]
        return int(lca_of_range(lf, self.parent[a:b], self.leaf_hi[a:b], lo_leaf, hi_leaf))

    def node_ncp(self) -> np.ndarray:
        """Categorical NCP (kanon_duckdb.ncp) of every packed node. O(nodes)."""
        return np.concatenate([node_ncp(self.n_leaves[a:b]) for a, b in
                               zip(self.node_off[:-1], self.node_off[1:])] or [np.zeros(0)])

    def height_ratio(self) -> np.ndarray:
        """height(subtree) / height(tree) of every packed node. O(nodes)."""
        return np.concatenate([height_ratio(self.sub_height[a:b]) for a, b in
                               zip(self.node_off[:-1], self.node_off[1:])] or [np.zeros(0)])


def pack_trees(trees) -> PackedTrees:
    """Concatenate the arrays of several TaxonomyIndex objects (see :class:`PackedTrees`)."""
    leaf_off = np.zeros(len(trees) + 1, dtype=np.int64)
    node_off = np.zeros(len(trees) + 1, dtype=np.int64)
    for j, t in enumerate(trees):
        leaf_off[j + 1] = leaf_off[j] + t.leaf_count
        node_off[j + 1] = node_off[j] + t.n_nodes
    cat = lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)
    return PackedTrees(cat([t.leaf_node for t in trees], np.int32), leaf_off,
                       cat([t.parent for t in trees], np.int32),
                       cat([t.leaf_hi for t in trees], np.int32),
                       cat([t.table_leaves() for t in trees], np.int32), node_off,
                       cat([t.sub_height for t in trees], np.int32),
                       cat([t.leaf_lo for t in trees], np.int32))
