"""NCP building blocks shared by every clustering algorithm (numba kernels over encoded QIs).

Loss model (Xu et al. 2006 NCP; the cost Byun et al. 2007 minimise, with leaf-count NCP for
categoricals as in the KAB paper eq. 1-3, i.e. the quantity GCP reports):

- numeric QI j of a cluster e:  NCP_j(e) = (max - min) / range_j  (range_j = global max - min,
  1.0 for a constant column). A cluster holding a NULL on j costs ``null_cost[j]`` = 1 (0 for a
  constant column), exactly what ``generalize.per_qi_loss`` charges for a NULL range.
- categorical QI j:  NCP_j(e) = node_cost[LCA(e)]; with the default ``cost='ncp'`` that is
  leaves(LCA)/leaves(root), and 0 when the class holds a single leaf. ``cost='height'`` gives
  Byun's height(LCA subtree)/height(tree) instead (the ``total_il`` metric).
- NCP(e) = sum_j NCP_j(e) (unweighted; pass ``weights`` to build_ncp_data for a weighted sum),
  IL(e) = |e| * NCP(e), total IL of a partition = sum_e IL(e).
- record-to-record distance d(a, b) = NCP({a, b}) (numeric |a-b|/range, categorical cost of
  LCA(a, b), 0 for the same leaf); record-to-cluster distance = NCP(e U {r}).

Data bundle ``ds`` (an :class:`NCPData` named tuple; build it once with :func:`build_ncp_data`):

    num       float64 (n, dn)   numeric values (NULL rows hold a placeholder, see num_null)
    num_null  bool    (n, dn)   NULL flags
    inv_range float64 (dn,)     weight_j / range_j
    null_cost float64 (dn,)     NCP charged for a NULL-holding cluster (weight_j, 0 if constant)
    cat       int32   (n, dc)   leaf ordinal per categorical QI
    leaf_node int32, leaf_off int64, parent int32, leaf_hi int32, node_off int64: packed trees
              (base.pack_trees; local node ids, add node_off[j] / leaf_off[j])
    node_cost float64 (total nodes,) packed per-node cost (weight_j * NCP or height ratio)
    pair_off  int64   (dc + 1,) offsets into pair_cost; pair_off[j+1] == pair_off[j] when tree j
              is too large for a table (> PAIR_TABLE_MAX_LEAVES leaves; the LCA walk is used then)
    pair_cost float64 flat      row-major (L_j, L_j) table: cost of LCA(a, b) for leaves a <= b
    n_leaf    int64   (dc,)     number of leaves of tree j

Cluster statistics ``st`` (a :class:`ClusterStats` named tuple of arrays, C clusters):

    size int64 (C,); nmin/nmax float64 (C, dn) (min/max of non-NULL values; +inf/-inf when none);
    nnull bool (C, dn); cmin/cmax int32 (C, dc) smallest/largest leaf ordinal (LCA = lca(cmin, cmax)).

Functions (all ``@njit`` unless marked Python; n = rows, d = dn + dc, h = tree height):

    build_ncp_data(data, cost='ncp', weights=None) -> NCPData          Python, O(n d + sum L_j^2)
    new_stats(ds, C) -> ClusterStats (all clusters empty)                O(C d)
    stats_from_labels(ds, ec, C) -> ClusterStats                         O(n d)
    clear_cluster(st, c)                 make cluster c empty            O(d)
    add_record(ds, st, c, r)             e_c := e_c U {r}  (also creates a singleton from empty)
    merge_clusters(st, a, b)             e_a := e_a U e_b  (b left unchanged)   O(d)
    lca_node(ds, j, lo, hi) -> int       local node id of LCA of leaves lo..hi of tree j, O(h)
    cat_cost(ds, j, lo, hi) -> float     cost of LCA(lo..hi); 0 if lo == hi; O(1) with a table
    pair_dist(ds, a, b) -> float         d(a, b) = NCP({a, b})                              O(d)
    cluster_ncp(ds, st, c) -> float      NCP(e_c) (0 for an empty cluster)                  O(d)
    cluster_il(ds, st, c) -> float       IL(e_c) = |e_c| * NCP(e_c)                         O(d)
    ncp_with(ds, st, c, r) -> float      NCP(e_c U {r})  (record-to-cluster distance)       O(d)
    cost_of_adding(ds, st, c, r) -> float  IL(e_c U {r}) = (|e_c|+1) * NCP(e_c U {r})       O(d)
    il_increase(ds, st, c, r) -> float   IL(e_c U {r}) - IL(e_c)                            O(d)
    merged_ncp(ds, st, a, b) -> float    NCP(e_a U e_b)                                     O(d)
    dists_to_record(ds, r, ids, out)     out[i] = d(r, ids[i])            (parallel)        O(m d)
    ncp_with_all(ds, st, c, ids, out)    out[i] = NCP(e_c U {ids[i]})     (parallel)        O(m d)
    partition_il(ds, ec, C) -> float     total IL of labels ec (0..C-1)                     O(n d)
    partition_ncp(ds, ec, C) -> float64 (C,)  NCP of every class                            O(n d)

O(1) "with a table": every tree with at most PAIR_TABLE_MAX_LEAVES leaves gets a dense table of
LCA costs, so a categorical term is one lookup; larger trees walk up from the smaller leaf (O(h)).
Costs are summed in the fixed order numeric 0..dn-1 then categorical 0..dc-1, so a record inside a
cluster's generalization gets ``ncp_with == cluster_ncp`` bit for bit (algorithms use that as an
exact lower bound for early exits).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
from numba import prange

from ..._numba_config import njit, njit_parallel
from ..base import QIData, pack_trees

PAIR_TABLE_MAX_LEAVES = 512
_INT32_MAX = np.iinfo(np.int32).max


class NCPData(NamedTuple):
    num: np.ndarray
    num_null: np.ndarray
    inv_range: np.ndarray
    null_cost: np.ndarray
    cat: np.ndarray
    leaf_node: np.ndarray
    leaf_off: np.ndarray
    parent: np.ndarray
    leaf_hi: np.ndarray
    node_off: np.ndarray
    node_cost: np.ndarray
    pair_off: np.ndarray
    pair_cost: np.ndarray
    n_leaf: np.ndarray


class ClusterStats(NamedTuple):
    size: np.ndarray
    nmin: np.ndarray
    nmax: np.ndarray
    nnull: np.ndarray
    cmin: np.ndarray
    cmax: np.ndarray


@njit
def _fill_pair_table(leaf_node, parent, leaf_hi, node_cost, L, out):
    """out[a * L + b] = node_cost[LCA(a, b)] for a <= b (node ids local, node_cost local)."""
    for a in range(L):
        u = leaf_node[a]
        out[a * L + a] = 0.0
        for b in range(a + 1, L):
            while leaf_hi[u] < b:
                u = parent[u]
            out[a * L + b] = node_cost[u]


def build_ncp_data(data: QIData, cost: str = "ncp", weights=None) -> NCPData:
    """Pack ``data`` into the :class:`NCPData` bundle the kernels take (Python, once per run).

    cost     'ncp' (leaves(LCA)/leaves(root), default) or 'height' (height(LCA)/height(tree)).
    weights  optional per-QI weights, numeric QIs first then categorical (default all 1).
    """
    if cost not in ("ncp", "height"):
        raise ValueError(f"cost must be 'ncp' or 'height', got {cost!r}")
    dn, dc = data.dn, data.dc
    w = np.ones(dn + dc) if weights is None else np.asarray(weights, dtype=np.float64)
    rng = data.num_range
    inv_range = w[:dn] / rng
    null_cost = np.where(data.num_hi > data.num_lo, w[:dn], 0.0).astype(np.float64)
    leaf_node, leaf_off, parent, leaf_hi, n_leaves, node_off, sub_height, _leaf_lo = pack_trees(data.trees)
    node_cost = np.zeros(int(node_off[-1]), dtype=np.float64)
    pair_off = np.zeros(dc + 1, dtype=np.int64)
    tables = []
    for j, t in enumerate(data.trees):
        a, b = int(node_off[j]), int(node_off[j + 1])
        nl = n_leaves[a:b].astype(np.float64)
        if cost == "ncp":
            c = np.where(nl <= 1, 0.0, nl / nl[0])
        else:
            h = float(sub_height[a])
            c = sub_height[a:b].astype(np.float64) / h if h > 0 else np.zeros(b - a)
        node_cost[a:b] = w[dn + j] * c
        L = t.leaf_count
        if L <= PAIR_TABLE_MAX_LEAVES:
            tab = np.zeros(L * L, dtype=np.float64)
            _fill_pair_table(t.leaf_node.astype(np.int32), t.parent.astype(np.int32),
                             t.leaf_hi.astype(np.int32), node_cost[a:b], L, tab)
            tables.append(tab)
            pair_off[j + 1] = pair_off[j] + L * L
        else:
            pair_off[j + 1] = pair_off[j]
    pair_cost = np.concatenate(tables) if tables else np.zeros(0, dtype=np.float64)
    return NCPData(np.ascontiguousarray(data.num, dtype=np.float64),
                   np.ascontiguousarray(data.num_null, dtype=np.bool_),
                   np.ascontiguousarray(inv_range, dtype=np.float64), null_cost,
                   np.ascontiguousarray(data.cat, dtype=np.int32),
                   leaf_node, leaf_off, parent, leaf_hi, node_off, node_cost, pair_off, pair_cost,
                   np.diff(leaf_off).astype(np.int64))


# --------------------------------------------------------------------------------------------
# cluster statistics

@njit
def new_stats(ds, C):
    dn = ds.num.shape[1]
    dc = ds.cat.shape[1]
    return ClusterStats(np.zeros(C, dtype=np.int64), np.full((C, dn), np.inf),
                        np.full((C, dn), -np.inf), np.zeros((C, dn), dtype=np.bool_),
                        np.full((C, dc), _INT32_MAX, dtype=np.int32),
                        np.full((C, dc), -1, dtype=np.int32))


@njit
def clear_cluster(st, c):
    st.size[c] = 0
    for j in range(st.nmin.shape[1]):
        st.nmin[c, j] = np.inf
        st.nmax[c, j] = -np.inf
        st.nnull[c, j] = False
    for j in range(st.cmin.shape[1]):
        st.cmin[c, j] = _INT32_MAX
        st.cmax[c, j] = -1


@njit
def add_record(ds, st, c, r):
    st.size[c] += 1
    for j in range(ds.num.shape[1]):
        if ds.num_null[r, j]:
            st.nnull[c, j] = True
        else:
            v = ds.num[r, j]
            if v < st.nmin[c, j]:
                st.nmin[c, j] = v
            if v > st.nmax[c, j]:
                st.nmax[c, j] = v
    for j in range(ds.cat.shape[1]):
        v = ds.cat[r, j]
        if v < st.cmin[c, j]:
            st.cmin[c, j] = v
        if v > st.cmax[c, j]:
            st.cmax[c, j] = v


@njit
def merge_clusters(st, a, b):
    st.size[a] += st.size[b]
    for j in range(st.nmin.shape[1]):
        st.nnull[a, j] = st.nnull[a, j] or st.nnull[b, j]
        st.nmin[a, j] = min(st.nmin[a, j], st.nmin[b, j])
        st.nmax[a, j] = max(st.nmax[a, j], st.nmax[b, j])
    for j in range(st.cmin.shape[1]):
        st.cmin[a, j] = min(st.cmin[a, j], st.cmin[b, j])
        st.cmax[a, j] = max(st.cmax[a, j], st.cmax[b, j])


@njit
def stats_from_labels(ds, ec, C):
    st = new_stats(ds, C)
    for r in range(ec.shape[0]):
        add_record(ds, st, ec[r], r)
    return st


# --------------------------------------------------------------------------------------------
# costs

@njit
def lca_node(ds, j, lo, hi):
    no = ds.node_off[j]
    u = ds.leaf_node[ds.leaf_off[j] + lo]
    while ds.leaf_hi[no + u] < hi:
        u = ds.parent[no + u]
    return u


@njit
def cat_cost(ds, j, lo, hi):
    if lo == hi:
        return 0.0
    p0 = ds.pair_off[j]
    if ds.pair_off[j + 1] > p0:
        return ds.pair_cost[p0 + lo * ds.n_leaf[j] + hi]
    return ds.node_cost[ds.node_off[j] + lca_node(ds, j, lo, hi)]


@njit
def pair_dist(ds, a, b):
    s = 0.0
    for j in range(ds.num.shape[1]):
        if ds.num_null[a, j] or ds.num_null[b, j]:
            s += ds.null_cost[j]
        else:
            s += abs(ds.num[a, j] - ds.num[b, j]) * ds.inv_range[j]
    for j in range(ds.cat.shape[1]):
        x = ds.cat[a, j]
        y = ds.cat[b, j]
        if x <= y:
            s += cat_cost(ds, j, x, y)
        else:
            s += cat_cost(ds, j, y, x)
    return s


@njit
def cluster_ncp(ds, st, c):
    if st.size[c] == 0:
        return 0.0
    s = 0.0
    for j in range(ds.num.shape[1]):
        if st.nnull[c, j]:
            s += ds.null_cost[j]
        else:
            s += (st.nmax[c, j] - st.nmin[c, j]) * ds.inv_range[j]
    for j in range(ds.cat.shape[1]):
        s += cat_cost(ds, j, st.cmin[c, j], st.cmax[c, j])
    return s


@njit
def cluster_il(ds, st, c):
    return st.size[c] * cluster_ncp(ds, st, c)


@njit
def ncp_with(ds, st, c, r):
    s = 0.0
    for j in range(ds.num.shape[1]):
        if st.nnull[c, j] or ds.num_null[r, j]:
            s += ds.null_cost[j]
        else:
            v = ds.num[r, j]
            s += (max(st.nmax[c, j], v) - min(st.nmin[c, j], v)) * ds.inv_range[j]
    for j in range(ds.cat.shape[1]):
        v = ds.cat[r, j]
        s += cat_cost(ds, j, min(st.cmin[c, j], v), max(st.cmax[c, j], v))
    return s


@njit
def cost_of_adding(ds, st, c, r):
    return (st.size[c] + 1) * ncp_with(ds, st, c, r)


@njit
def il_increase(ds, st, c, r):
    return (st.size[c] + 1) * ncp_with(ds, st, c, r) - st.size[c] * cluster_ncp(ds, st, c)


@njit
def merged_ncp(ds, st, a, b):
    if st.size[a] == 0:
        return cluster_ncp(ds, st, b)
    if st.size[b] == 0:
        return cluster_ncp(ds, st, a)
    s = 0.0
    for j in range(ds.num.shape[1]):
        if st.nnull[a, j] or st.nnull[b, j]:
            s += ds.null_cost[j]
        else:
            s += (max(st.nmax[a, j], st.nmax[b, j]) - min(st.nmin[a, j], st.nmin[b, j])) * ds.inv_range[j]
    for j in range(ds.cat.shape[1]):
        s += cat_cost(ds, j, min(st.cmin[a, j], st.cmin[b, j]), max(st.cmax[a, j], st.cmax[b, j]))
    return s


@njit_parallel
def dists_to_record(ds, r, ids, out):
    for i in prange(ids.shape[0]):
        out[i] = pair_dist(ds, r, ids[i])


@njit_parallel
def ncp_with_all(ds, st, c, ids, out):
    for i in prange(ids.shape[0]):
        out[i] = ncp_with(ds, st, c, ids[i])


@njit
def partition_ncp(ds, ec, C):
    st = stats_from_labels(ds, ec, C)
    out = np.empty(C, dtype=np.float64)
    for c in range(C):
        out[c] = cluster_ncp(ds, st, c)
    return out


@njit
def partition_il(ds, ec, C):
    st = stats_from_labels(ds, ec, C)
    s = 0.0
    for c in range(C):
        s += cluster_il(ds, st, c)
    return s
