"""Taxonomy (generalization) trees: validation and the array index the kernels use.

A tree is a set of edges ``(child, parent)`` for one attribute, as stored in the SQL table
``kanon_taxonomy(attr, child, parent)``; the root has ``parent IS NULL`` or is simply a parent
that is nobody's child. Leaves are ordered depth-first, children in first-appearance order of the
edges (insertion order of the table), so every node covers a contiguous range of leaf ordinals
``[leaf_lo[u], leaf_hi[u]]``. That makes the lowest common ancestor of any set of leaves the LCA
of its smallest and largest ordinal, found by walking up from one leaf: O(height).

Arrays (all int32 unless noted), indexed by node id (0 = root, depth-first pre-order):

- ``parent``      parent node, -1 for the root
- ``depth``       edges from the root
- ``leaf_lo``/``leaf_hi``  inclusive range of leaf ordinals under the node
- ``n_leaves``    leaf_hi - leaf_lo + 1
- ``sub_height``  height of the subtree rooted at the node (0 for a leaf)
- ``leaf_node``   (by leaf ordinal) node id of that leaf
- ``anc``         (n_leaves, height+1) ancestor of each leaf ``l`` steps up, capped at the root

The NULL policy adds one extra leaf, labelled NULL, directly under the root when the data hold
NULLs (``with_null_leaf``); it is not part of the SQL table and not counted by the SQL metrics.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import TaxonomyError
from ..ncp import cat_ncp_value, node_ncp
from .builders import flat_edges


@dataclass(frozen=True)
class TaxonomyIndex:
    attr: str
    labels: list  # node id -> label (str, or None for the NULL leaf)
    parent: np.ndarray
    depth: np.ndarray
    leaf_lo: np.ndarray
    leaf_hi: np.ndarray
    n_leaves: np.ndarray
    sub_height: np.ndarray
    leaf_node: np.ndarray
    anc: np.ndarray
    leaf_of_label: dict = field(repr=False)  # leaf label -> leaf ordinal
    node_of_label: dict = field(repr=False)  # any label -> node id
    has_null_leaf: bool = False
    # the kanon_taxonomy rows ((child, parent), in the order read) it was built from, when read
    # from the table (store.cached_index; with_null_leaf keeps them): what a run's tree
    # fingerprint is looked up by (store.tree_fingerprints)
    rows: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def height(self) -> int:
        return int(self.sub_height[0])

    @property
    def leaf_count(self) -> int:
        return int(self.leaf_node.shape[0])

    @property
    def n_nodes(self) -> int:
        return len(self.labels)

    def leaf_labels(self) -> list:
        return [self.labels[u] for u in self.leaf_node]

    def lca(self, lo_leaf: int, hi_leaf: int) -> int:
        from ._lca import lca_of_range
        return int(lca_of_range(self.leaf_node, self.parent, self.leaf_hi, lo_leaf, hi_leaf))

    def ncp(self, node: int) -> float:
        """Categorical NCP (Xu et al. 2006) of ``node``: 0 for a single leaf, else
        leaves(u)/leaves(root), leaves counted as gcp() counts them (``table_leaves``)."""
        nl = self.table_leaves()
        return float(cat_ncp_value(float(nl[node]), float(nl[0])))

    def node_ncp(self) -> np.ndarray:
        """Categorical NCP of every node (``ncp.node_ncp`` of ``table_leaves``): what gcp(), the
        recorded qi_loss and every algorithm's internal cost charge for publishing the node."""
        return node_ncp(self.table_leaves())

    def table_leaves(self) -> np.ndarray:
        """Leaves per node as ``kanon_taxonomy`` holds the tree: the NULL leaf of the NULL policy
        (directly under the root, not in the SQL table) is left out of the root's count, as the
        SQL metrics count it, except beside a single leaf: the root of one value and NULL covers
        two leaves (NCP 1: a reader cannot tell the value from NULL; gcp() counts that root 1).
        Every NCP of a node divides these (the run's ``qi_loss``, the kernels' costs through
        ``qidata.pack_trees``). A tree of the NULL leaf alone keeps 1 at its root, so ratios
        stay finite (its NCP is 0 either way: one leaf)."""
        if not self.has_null_leaf:
            return self.n_leaves
        out = self.n_leaves.copy()
        if int(out[0]) > 2:
            out[0] = int(out[0]) - 1
        return out

    def with_null_leaf(self) -> "TaxonomyIndex":
        """A copy with an extra NULL leaf under the root (the NULL policy for categorical QIs)."""
        if self.has_null_leaf:
            return self
        edges = [(self.labels[0], None)]  # keeps a root-only tree (an all-NULL column) non-empty
        edges += [(self.labels[u], self.labels[self.parent[u]]) for u in range(1, self.n_nodes)]
        return replace(build_index(self.attr, edges, root=self.labels[0], _null_leaf=True),
                       rows=self.rows)


def __getattr__(name):
    # The LCA kernels live in _lca.py so that importing this module (at connect time) does not
    # import numba; ``tree.lca_of_range`` / ``tree.lca_nodes`` still resolve.
    if name in ("lca_of_range", "lca_nodes", "lca_packed"):
        from . import _lca
        return getattr(_lca, name)
    raise AttributeError(name)


_CHAIN = object()  # marks where a label's own next level sits among its children


def build_index(attr: str, edges, root=None, _null_leaf: bool = False) -> TaxonomyIndex:
    """Validate ``edges`` (iterable of (child, parent) in table order) and build the index.

    A self-edge ``(X, X)`` says that label X stays X for one more level (ARX hierarchies, where a
    label is scoped to its level: ``95;[80,99];[80,99];*`` or a leaf 'Other relative' under the
    level-1 group 'Other relative'); e self-edge rows give X a vertical chain of e + 1 nodes.
    Levels are counted from the leaves as in ARX's rectangular hierarchies: hmin(X) = max(e(X),
    hmin(child) + 1) bottom-up, the root's top level is hmin(root), and a child c of X hangs at
    the node of X's chain at level min(top(X), max(top(X) - e(X), hmin(c) + 1)). So a chain whose
    bottom reaches level 0 ends in a leaf labelled X (the data value), and without self-edges the
    tree is exactly the label tree. A published label names the top node of its chain.

    Raises TaxonomyError naming the problem: NULL child, a node with two parents, several roots,
    a cycle, or an empty tree.
    """
    children = defaultdict(list)
    parent_of: dict = {}
    order: dict = {}
    extra: dict = defaultdict(int)
    explicit_roots = []

    def seen(x):
        if x not in order:
            order[x] = len(order)

    for child, par in edges:
        if child is None:
            raise TaxonomyError(f"taxonomy '{attr}': a row has child NULL; every row needs a child label")
        seen(child)
        if par is None:
            if child not in explicit_roots:
                explicit_roots.append(child)
            continue
        if child == par:
            if not extra[child]:
                children[child].append(_CHAIN)
            extra[child] += 1
            continue
        if child in parent_of and parent_of[child] != par:
            raise TaxonomyError(
                f"taxonomy '{attr}': node '{child}' appears at two places (parents "
                f"'{parent_of[child]}' and '{par}'); each node needs exactly one parent")
        if child in parent_of:
            continue  # duplicate edge, harmless
        seen(par)
        parent_of[child] = par
        children[par].append(child)

    if not order:
        raise TaxonomyError(f"taxonomy '{attr}' is empty; insert rows into kanon_taxonomy or build one")
    for r in explicit_roots:
        if r in parent_of:
            raise TaxonomyError(
                f"taxonomy '{attr}': node '{r}' is marked as a root (parent NULL) but also has parent "
                f"'{parent_of[r]}'")
    roots = [x for x in order if x not in parent_of]
    if root is not None:
        roots = [root] if root in order else roots
    if len(roots) > 1:
        shown = ", ".join(f"'{r}'" for r in roots[:10])
        raise TaxonomyError(
            f"taxonomy '{attr}' has {len(roots)} roots ({shown}); a tree needs exactly one. "
            f"Add a common parent such as '*' for them")
    if not roots:
        raise TaxonomyError(f"taxonomy '{attr}' has no root: its edges form a cycle")
    root = roots[0]

    # Label tree in pre-order (cycle check), then hmin bottom-up and chain tops top-down.
    pre, visited, stack = [], set(), [root]
    while stack:
        lab = stack.pop()
        if lab in visited:
            raise TaxonomyError(f"taxonomy '{attr}': cycle through node '{lab}'")
        visited.add(lab)
        pre.append(lab)
        stack.extend(c for c in reversed(children.get(lab, ())) if c is not _CHAIN)
    if len(pre) != len(order):
        lost = [x for x in order if x not in visited][:10]
        raise TaxonomyError(
            f"taxonomy '{attr}': nodes {lost} are not reachable from root '{root}' (their parents "
            f"form a cycle)")
    hmin = {}
    for lab in reversed(pre):
        hmin[lab] = max([extra[lab]] + [hmin[c] + 1 for c in children.get(lab, ()) if c is not _CHAIN])
    top = {root: hmin[root]}
    attach = {}
    for lab in pre:
        t, e = top[lab], extra[lab]
        for c in children.get(lab, ()):
            if c is not _CHAIN:
                attach[c] = min(t, max(t - e, hmin[c] + 1))
                top[c] = attach[c] - 1

    # Expanded tree, depth-first pre-order: (label, level) nodes.
    labels, parent, depth = [], [], []
    node_of_label = {}
    stack = [(root, top[root], -1, 0)]
    while stack:
        lab, level, par, dep = stack.pop()
        node_of_label.setdefault(lab, len(labels))  # the top of the chain comes first
        labels.append(lab)
        parent.append(par)
        depth.append(dep)
        me = len(labels) - 1
        below = []
        for c in children.get(lab, ()):
            if c is _CHAIN:
                if level > top[lab] - extra[lab]:
                    below.append((lab, level - 1))
            elif attach[c] == level:
                below.append((c, top[c]))
        for ch, lv in reversed(below):
            stack.append((ch, lv, me, dep + 1))
    if _null_leaf:
        node_of_label[None] = len(labels)
        labels.append(None)
        parent.append(0)
        depth.append(1)

    n = len(labels)
    parent = np.asarray(parent, dtype=np.int32)
    depth = np.asarray(depth, dtype=np.int32)
    has_child = np.zeros(n, dtype=bool)
    has_child[parent[1:]] = True
    is_leaf = ~has_child
    # Pre-order: leaves get ordinals in order of node id (the NULL leaf is last, after its siblings).
    leaf_node = np.flatnonzero(is_leaf).astype(np.int32)
    leaf_ord = np.full(n, -1, dtype=np.int32)
    leaf_ord[leaf_node] = np.arange(leaf_node.size, dtype=np.int32)
    leaf_lo = np.where(is_leaf, leaf_ord, np.iinfo(np.int32).max).astype(np.int32)
    leaf_hi = np.where(is_leaf, leaf_ord, -1).astype(np.int32)
    sub_height = np.zeros(n, dtype=np.int32)
    for u in range(n - 1, 0, -1):  # children have larger ids than parents
        p = parent[u]
        leaf_lo[p] = min(leaf_lo[p], leaf_lo[u])
        leaf_hi[p] = max(leaf_hi[p], leaf_hi[u])
        sub_height[p] = max(sub_height[p], sub_height[u] + 1)
    if _null_leaf:
        # The NULL leaf was appended after the pre-order walk; its range is already right
        # because it is the last node and the last leaf.
        pass
    n_leaves = (leaf_hi - leaf_lo + 1).astype(np.int32)
    height = int(sub_height[0])
    anc = np.empty((leaf_node.size, height + 1), dtype=np.int32)
    for i, u in enumerate(leaf_node):
        v = u
        for lvl in range(height + 1):
            anc[i, lvl] = v
            if parent[v] >= 0:
                v = parent[v]
    leaf_of_label = {labels[u]: i for i, u in enumerate(leaf_node)}
    return TaxonomyIndex(attr, labels, parent, depth, leaf_lo, leaf_hi, n_leaves, sub_height,
                         leaf_node, anc, leaf_of_label, node_of_label, _null_leaf)


def flat_index(attr: str, values) -> TaxonomyIndex:
    """The implicit tree of a column without a taxonomy: every distinct non-NULL value (leaves
    in the given order) directly under '*'; no values: the root alone. A value '*' raises
    TaxonomyError (see ``builders.flat_edges``, the one rule). O(values)."""
    return build_index(attr, flat_edges(values, attr=attr))
