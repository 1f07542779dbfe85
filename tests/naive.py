"""Brute-force references for kernels and metrics, plus small random-data builders for tests.

Everything here is plain Python/numpy, written for obviousness, not speed (tiny inputs only).
Append new references at the end of the file.
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from kanon_duckdb.qidata import QIData
from kanon_duckdb.taxonomy.tree import build_index


# --------------------------------------------------------------------------------------------
# random data builders

def grouped_tree_edges(attr: str, n_leaves: int, shuffled, group_size, coin):
    """Random (possibly unbalanced) tree over leaves f'{attr}{i}'; edges in (child, parent) form.

    Level by level: ``shuffled(nodes)`` reorders the nodes, which are cut into runs of
    ``group_size()`` (1..3) nodes each getting a parent; a run of one skips the level when
    ``coin() < 0.5``. The three callables are the source of randomness."""
    nodes = [f"{attr}{i}" for i in range(n_leaves)]
    edges = []
    level = 0
    while len(nodes) > 1:
        nodes = shuffled(nodes)
        groups, i = [], 0
        while i < len(nodes):
            g = group_size()
            groups.append(nodes[i:i + g])
            i += g
        if len(groups) == len(nodes):  # force progress
            groups = [nodes[:2]] + [[x] for x in nodes[2:]]
        new_nodes = []
        for gi, g in enumerate(groups):
            if len(g) == 1 and coin() < 0.5:
                new_nodes.append(g[0])  # unbalanced: skip a level
                continue
            p = f"{attr}_L{level}_{gi}"
            edges += [(c, p) for c in g]
            new_nodes.append(p)
        nodes = new_nodes
        level += 1
    edges.append((nodes[0], None))
    return edges


def random_tree_edges(rng: np.random.Generator, attr: str, n_leaves: int):
    """grouped_tree_edges drawing from a numpy Generator."""
    return grouped_tree_edges(attr, n_leaves,
                              lambda nodes: [nodes[i] for i in rng.permutation(len(nodes))],
                              lambda: int(rng.integers(1, 4)), rng.random)


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


def draw_qidata_k(draw, max_n: int = 60, max_k: int | None = None, max_dn: int = 3):
    """Hypothesis draws shared by the clustering tests (call inside an ``st.composite``):
    (rng, data, k) with 1 <= n <= max_n rows, 1 <= k <= min(n, max_k) (k <= n when max_k is
    None), 0..max_dn numeric and 0..3 categorical QIs (at least one), some NULLs, small trees."""
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    n = draw(st.integers(1, max_n))
    k = draw(st.integers(1, n if max_k is None else max(1, min(n, max_k))))
    dn = draw(st.integers(0, max_dn))
    dc = draw(st.integers(0 if dn else 1, 3))
    data = random_qidata(rng, n, dn, dc, max_leaves=draw(st.integers(1, 8)),
                         null_frac=draw(st.sampled_from([0.0, 0.1])),
                         max_value=draw(st.sampled_from([0, 5, 100])))
    return rng, data, k


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
    """Sum over QIs of the NCP of the class made of ``rows`` (NULL numeric -> 1, also for a
    constant column; constant column without NULL -> 0)."""
    rows = list(rows)
    s = 0.0
    for j in range(data.dn):
        rangej = data.num_hi[j] - data.num_lo[j]
        if any(data.num_null[r, j] for r in rows):
            s += 1.0
        elif rangej <= 0:
            continue
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


# --------------------------------------------------------------------------------------------
# clustering algorithms, straight from their descriptions (O(n^2 k) or worse: tiny inputs).
# On data without ties (continuous numeric QIs) they must give the same partition as the kernels.

def naive_kmember(data: QIData, k: int, seed: int, seed_choice="furthest", cost="ncp"):
    """Greedy k-member clustering straight from the pseudo-code (Byun et al. 2007 with
    seed_choice='furthest'; Wang, Liu, Gao Table III with seed_choice='random', cost='height').
    The random draws follow kmember_labels: r0, a permutation of the rows (seed order), a
    permutation of the leftovers (taken in ascending id, then shuffled)."""
    n = data.n
    rng = np.random.default_rng(seed)
    r = int(rng.integers(n))
    order = [int(x) for x in rng.permutation(n)]
    S = list(range(n))
    clusters = []
    while len(S) >= k:
        if seed_choice == "random":
            s = next(x for x in order if x in S)
        else:
            s = max(S, key=lambda x: naive_pair_dist(data, r, x, cost))
        S.remove(s)
        e = [s]
        r = s
        while len(e) < k:
            x = min(S, key=lambda x: naive_il(data, e + [x], cost))
            S.remove(x)
            e.append(x)
        clusters.append(e)
    S = sorted(S)
    for i in rng.permutation(len(S)):
        x = S[i]
        best = min(range(len(clusters)),
                   key=lambda c: naive_il(data, clusters[c] + [x], cost) - naive_il(data, clusters[c], cost))
        clusters[best].append(x)
    return _labels(n, clusters)


def naive_ika(data: QIData, k: int, seed: int):
    n = data.n
    first = int(np.random.default_rng(seed).integers(n))
    S = list(range(n))
    centroids, clusters = [], []
    while len(S) >= k:
        if not centroids:
            c = first
        else:
            c = max(S, key=lambda x: min(naive_pair_dist(data, x, y) for y in centroids))
        S.remove(c)
        close = sorted(S, key=lambda x: (naive_pair_dist(data, c, x), x))[:k - 1]
        for x in close:
            S.remove(x)
        centroids.append(c)
        clusters.append([c] + close)
    for x in S:
        best = min(range(len(centroids)), key=lambda i: naive_pair_dist(data, x, centroids[i]))
        clusters[best].append(x)
    return _labels(n, clusters)


def naive_oka(data: QIData, k: int, seed: int):
    n = data.n
    rng = np.random.default_rng(seed)
    K = max(1, n // k)
    seeds = rng.choice(n, size=K, replace=False)
    clusters = [[int(s)] for s in seeds]
    rest = np.setdiff1d(np.arange(n), seeds)
    for x in rest[rng.permutation(rest.size)]:
        best = min(range(K), key=lambda c: naive_ncp(data, clusters[c] + [int(x)]))
        clusters[best].append(int(x))
    pool = []
    for e in clusters:
        if len(e) <= k:
            continue
        rows = np.array(sorted(e))
        mean = []
        for j in range(data.dn):
            ok = ~data.num_null[rows, j]
            mean.append(data.num[rows[ok], j].mean() if ok.any() else 0.0)
        mode = []
        for j in range(data.dc):
            vals, cnt = np.unique(data.cat[rows, j], return_counts=True)
            mode.append(int(vals[np.argmax(cnt)]))  # np.unique sorts: first max = lowest ordinal

        def dist(r):
            s = 0.0
            for j in range(data.dn):
                rng_j = data.num_hi[j] - data.num_lo[j]
                if rng_j <= 0:
                    continue
                s += 1.0 if data.num_null[r, j] else abs(data.num[r, j] - mean[j]) / rng_j
            for j, t in enumerate(data.trees):
                s += naive_cat_cost(t, [data.cat[r, j], mode[j]])
            return s
        order = sorted(rows, key=lambda r: (dist(r), r))
        out = order[k:]
        for r in out:
            e.remove(int(r))
        pool += [int(r) for r in out]
    pool = np.sort(np.array(pool, dtype=np.int64))
    for x in pool[rng.permutation(pool.size)]:
        under = [c for c in range(K) if len(clusters[c]) < k]
        cand = under if under else range(K)
        best = min(cand, key=lambda c: naive_ncp(data, clusters[c] + [int(x)]))
        clusters[best].append(int(x))
    return _labels(n, clusters)


def _labels(n, clusters):
    ec = np.full(n, -1, dtype=np.int64)
    for c, e in enumerate(clusters):
        ec[e] = c
    assert (ec >= 0).all()
    return ec


def same_partition(a, b) -> bool:
    """True when two label vectors describe the same partition (up to renaming)."""
    a = np.asarray(a)
    b = np.asarray(b)
    pairs = set(zip(a.tolist(), b.tolist()))
    return len(pairs) == len(set(a.tolist())) == len(set(b.tolist()))


def random_continuous_qidata(rng: np.random.Generator, n: int, dn: int) -> QIData:
    """Numeric-only QIData with continuous values: distance ties have probability zero."""
    num = rng.random((n, dn))
    return QIData(n=n, num=num, num_null=np.zeros((n, dn), dtype=bool), num_lo=num.min(0),
                  num_hi=num.max(0), num_is_int=np.zeros(dn, dtype=bool),
                  cat=np.zeros((n, 0), dtype=np.int32), trees=[],
                  num_names=[f"n{j}" for j in range(dn)], cat_names=[])


def numeric_qidata(rows) -> QIData:
    """Numeric-only QIData from a list of rows of floats (no NULLs), for hand-computed cases."""
    num = np.asarray(rows, dtype=np.float64)
    n, dn = num.shape
    return QIData(n=n, num=num, num_null=np.zeros((n, dn), dtype=bool), num_lo=num.min(0),
                  num_hi=num.max(0), num_is_int=np.zeros(dn, dtype=bool),
                  cat=np.zeros((n, 0), dtype=np.int32), trees=[],
                  num_names=[f"n{j}" for j in range(dn)], cat_names=[])
