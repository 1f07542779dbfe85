"""The contract every algorithm implements.

An algorithm is a function ``run(data: QIData, k: int, seed: int, params: dict, progress) ->
Partition``. It sees only encoded arrays (``QIData``), never DuckDB; the orchestrator
(``kanon_duckdb.anonymize``) validates input, encodes, calls it, and generalizes the result.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..progress import ProgressFn, no_progress  # noqa: F401 - the algorithms import them from here


@dataclass(frozen=True)
class QIData:
    """Encoded quasi-identifiers of n rows.

    num      float64 (n, dn)  numeric QIs; NULLs replaced by (global min - 1) so they sort first
    num_null bool    (n, dn)  True where the numeric value was NULL
    num_lo   float64 (dn,)    global min of each numeric QI (non-NULL values)
    num_hi   float64 (dn,)    global max
    num_is_int bool  (dn,)    column has an integer SQL type
    cat      int32   (n, dc)  leaf ordinal of each categorical value in its tree
    trees    list of TaxonomyIndex, one per categorical QI (NULL values map to the NULL leaf)
    num_names / cat_names: the column names, in the order of the array columns
    extra    dict of named per-row arrays an algorithm asked for (e.g. the sensitive attribute)
    tree_attrs dict QI name -> kanon_taxonomy attr of the tree it used (taxonomy.store.
             resolve_tree_attr); absent for the implicit flat tree or no tree
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

    @property
    def dn(self) -> int:
        return self.num.shape[1]

    @property
    def dc(self) -> int:
        return self.cat.shape[1]

    @property
    def num_range(self) -> np.ndarray:
        """Global range per numeric QI, 1.0 where the range is 0 (a constant column has NCP 0)."""
        r = self.num_hi - self.num_lo
        return np.where(r > 0, r, 1.0)

    def cat_arrays(self):
        """Packed tree arrays for kernels, see :func:`pack_trees`."""
        return pack_trees(self.trees)


def pack_trees(trees):
    """Concatenate the arrays of several TaxonomyIndex objects for numba kernels.

    Returns (leaf_node, leaf_off, parent, leaf_hi, n_leaves, node_off, sub_height, leaf_lo); node ids in
    ``leaf_node`` and ``parent`` are local to their tree (add node_off[j] to index the packed
    arrays). Leaf arrays are offset by leaf_off.
    """
    leaf_off = np.zeros(len(trees) + 1, dtype=np.int64)
    node_off = np.zeros(len(trees) + 1, dtype=np.int64)
    for j, t in enumerate(trees):
        leaf_off[j + 1] = leaf_off[j] + t.leaf_count
        node_off[j + 1] = node_off[j] + t.n_nodes
    cat = lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)
    return (cat([t.leaf_node for t in trees], np.int32), leaf_off,
            cat([t.parent for t in trees], np.int32), cat([t.leaf_hi for t in trees], np.int32),
            cat([t.n_leaves for t in trees], np.int32), node_off,
            cat([t.sub_height for t in trees], np.int32), cat([t.leaf_lo for t in trees], np.int32))


@dataclass
class Partition:
    """What an algorithm returns.

    ec          int64 (n,)  class id per row, 0..n_classes-1 (suppressed rows: their own class ids
                            are allowed but they are flagged)
    suppressed  bool (n,) or None
    cat_nodes   int32 (n_classes, dc) or None: node id per class and categorical QI, when the
                algorithm fixes the generalization (full-domain); default = LCA of the class's leaves
    num_lo/num_hi float64 (n_classes, dn) or None: range per class when the algorithm fixes it
                (full-domain intervals); default = min/max of the class's values
    info        dict recorded in kanon_runs.params/details (chosen node, weights, counters)
    """
    ec: np.ndarray
    suppressed: np.ndarray | None = None
    cat_nodes: np.ndarray | None = None
    num_lo: np.ndarray | None = None
    num_hi: np.ndarray | None = None
    info: dict = field(default_factory=dict)




@dataclass(frozen=True)
class Algorithm:
    """Registry entry: name, run function, family ('local' or 'lattice'), parameters, summary.

    ``params`` is given as ``kanon_duckdb.params.declared(name)`` (the Param declarations of
    ``params.ALGORITHM_PARAMS``; a ``{name: default}`` dict is still read, SHARED names typed);
    after construction ``specs`` maps each name to its Param and ``params`` to its default.
    """
    name: str
    run: Callable
    family: str
    params: dict
    summary: str
    needs_num_trees: bool = False
    specs: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        from ..params import declare
        specs = declare(self.params)
        object.__setattr__(self, "specs", specs)
        object.__setattr__(self, "params", {n: p.default for n, p in specs.items()})

    def column_params(self) -> list:
        """Names of the parameters that name input columns (read into ``QIData.extra``)."""
        return [n for n, p in self.specs.items() if p.kind in ("column", "columns")]
