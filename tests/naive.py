"""Brute-force references for kernels and metrics, plus small random-data builders for tests.

Everything here is plain Python/numpy, written for obviousness, not speed (tiny inputs only).
Append new references at the end of the file.
"""
from __future__ import annotations

import numpy as np

from kanon_duckdb.algorithms.base import QIData
from kanon_duckdb.taxonomy.tree import build_index


# --------------------------------------------------------------------------------------------
# random data builders

def random_tree_edges(rng: np.random.Generator, attr: str, n_leaves: int):
    """Random (possibly unbalanced) tree over leaves f'{attr}{i}'; edges in (child, parent) form."""
    nodes = [f"{attr}{i}" for i in range(n_leaves)]
    edges = []
    level = 0
    while len(nodes) > 1:
        order = list(rng.permutation(len(nodes)))
        nodes = [nodes[i] for i in order]
        groups, i = [], 0
        while i < len(nodes):
            g = int(rng.integers(1, 4))
            groups.append(nodes[i:i + g])
            i += g
        if len(groups) == len(nodes):  # force progress
            groups = [nodes[:2]] + [[x] for x in nodes[2:]]
        new_nodes = []
        for gi, g in enumerate(groups):
            if len(g) == 1 and rng.random() < 0.5:
                new_nodes.append(g[0])
                continue
            p = f"{attr}_L{level}_{gi}"
            edges += [(c, p) for c in g]
            new_nodes.append(p)
        nodes = new_nodes
        level += 1
    edges.append((nodes[0], None))
    return edges


def random_qidata(rng: np.random.Generator, n: int, dn: int, dc: int, max_leaves: int = 6,
                  null_frac: float = 0.0, max_value: int = 20) -> QIData:
    """A QIData built by hand: dn integer-valued numeric QIs, dc categorical QIs on random trees."""
    num = rng.integers(0, max_value + 1, size=(n, dn)).astype(np.float64)
    num_null = rng.random((n, dn)) < null_frac
    lo = np.zeros(dn)
    hi = np.zeros(dn)
    for j in range(dn):
        ok = ~num_null[:, j]
        lo[j] = num[ok, j].min() if ok.any() else 0.0
        hi[j] = num[ok, j].max() if ok.any() else 0.0
        num[~ok, j] = lo[j] - 1
    trees = []
    cat = np.zeros((n, dc), dtype=np.int32)
    for j in range(dc):
        L = int(rng.integers(1, max_leaves + 1))
        t = build_index(f"c{j}", random_tree_edges(rng, f"c{j}_", L))
        trees.append(t)
        cat[:, j] = rng.integers(0, t.leaf_count, size=n)
    return QIData(n=n, num=num, num_null=num_null, num_lo=lo, num_hi=hi,
                  num_is_int=np.ones(dn, dtype=bool), cat=cat, trees=trees,
                  num_names=[f"n{j}" for j in range(dn)], cat_names=[f"c{j}" for j in range(dc)])


# --------------------------------------------------------------------------------------------
# NCP / information loss (clustering building blocks)

def _lca_by_ancestor_sets(tree, leaves):
    """LCA of a set of leaf ordinals by intersecting ancestor chains (independent of leaf order)."""
    chains = []
    for l in set(int(x) for x in leaves):
        u = int(tree.leaf_node[l])
        chain = [u]
        while tree.parent[u] >= 0:
            u = int(tree.parent[u])
            chain.append(u)
        chains.append(chain)
    common = set(chains[0]).intersection(*map(set, chains[1:]))
    return min(common, key=lambda u: -int(tree.depth[u]))  # deepest common ancestor


def naive_cat_cost(tree, leaves, cost="ncp"):
    u = _lca_by_ancestor_sets(tree, leaves)
    if cost == "height":
        return tree.sub_height[u] / tree.height if tree.height > 0 else 0.0
    nl = int(tree.n_leaves[u])
    return 0.0 if nl <= 1 else nl / float(tree.n_leaves[0])


def naive_ncp(data: QIData, rows, cost="ncp") -> float:
    """Sum over QIs of the NCP of the class made of ``rows`` (NULL numeric -> 1, constant -> 0)."""
    rows = list(rows)
    s = 0.0
    for j in range(data.dn):
        rangej = data.num_hi[j] - data.num_lo[j]
        if rangej <= 0:
            continue
        if any(data.num_null[r, j] for r in rows):
            s += 1.0
        else:
            vals = [data.num[r, j] for r in rows]
            s += (max(vals) - min(vals)) / rangej
    for j, t in enumerate(data.trees):
        s += naive_cat_cost(t, [data.cat[r, j] for r in rows], cost)
    return s


def naive_pair_dist(data: QIData, a: int, b: int, cost="ncp") -> float:
    return naive_ncp(data, [a, b], cost)


def naive_il(data: QIData, rows, cost="ncp") -> float:
    return len(list(rows)) * naive_ncp(data, rows, cost)


def naive_partition_il(data: QIData, ec, cost="ncp") -> float:
    ec = np.asarray(ec)
    return sum(naive_il(data, np.flatnonzero(ec == c), cost) for c in np.unique(ec))


def check_truthful(data: QIData, ec, k: int):
    """Assert every class has >= k rows and that its published values (min/max, LCA) cover it.

    The LCA is computed by ancestor-set intersection, so this does not trust the leaf order.
    """
    ec = np.asarray(ec)
    assert ec.shape == (data.n,)
    _, counts = np.unique(ec, return_counts=True)
    assert counts.min() >= k, f"class of size {counts.min()} < k={k}"
    for c in np.unique(ec):
        rows = np.flatnonzero(ec == c)
        for j, t in enumerate(data.trees):
            u = _lca_by_ancestor_sets(t, data.cat[rows, j])
            for r in rows:  # every leaf is under the published node
                lo, hi = t.leaf_lo[u], t.leaf_hi[u]
                assert lo <= data.cat[r, j] <= hi
