"""NCP building blocks shared by every clustering algorithm (numba kernels over encoded QIs).

Loss model (Xu et al. 2006 NCP; the cost Byun et al. 2007 minimise, with leaf-count NCP for
categoricals as in the KAB paper eq. 1-3, i.e. the quantity GCP reports):

- numeric QI j of a cluster e:  NCP_j(e) = (max - min) / range_j  (range_j = global max - min,
  1.0 for a constant column). A cluster holding a NULL on j costs ``null_cost[j]`` = 1 (also for
  a constant column), exactly what ``generalize.per_qi_loss`` charges for a NULL range; both
  come from ``kanon_duckdb.ncp``.
- categorical QI j:  NCP_j(e) = node_cost[LCA(e)]; with the default ``cost='ncp'`` that is
  leaves(LCA)/leaves(root), and 0 when the class holds a single leaf. ``cost='height'`` gives
  Byun's height(LCA subtree)/height(tree) instead (the ``total_il`` metric).
- NCP(e) = sum_j w_j NCP_j(e), w the run's per-QI ``weights :=`` (mean 1; all 1 by default) or
  the ``weights`` passed to build_ncp_data; the categorical node costs come from the objectives
  registry (``kanon_duckdb.objectives``),
  IL(e) = |e| * NCP(e), total IL of a partition = sum_e IL(e).
- record-to-record distance d(a, b) = NCP({a, b}) (numeric |a-b|/range, categorical cost of
  LCA(a, b), 0 for the same leaf); record-to-cluster distance = NCP(e U {r}).

Data bundle ``ds`` (an :class:`NCPData` named tuple; build it once with :func:`build_ncp_data`):

    num       float64 (n, dn)   numeric values (NULL rows hold a placeholder, see num_null)
    num_null  bool    (n, dn)   NULL flags
    inv_range float64 (dn,)     weight_j / range_j
    null_cost float64 (dn,)     NCP charged for a NULL-holding cluster (weight_j * ncp.NULL_NCP)
    cat       int32   (n, dc)   leaf ordinal per categorical QI
    leaf_node int32, leaf_off int64, parent int32, leaf_hi int32, node_off int64: packed trees
              (qidata.pack_trees; local node ids, add node_off[j] / leaf_off[j])
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
    assign_to_nearest(ds, rows, m, centers, C, labels, fallback)   each rows[:m] gets the label of
                                         its closest center record                          O(m C d)
    assign_to_cheapest(ds, st, rows, m, C, labels, skip_empty)   each rows[:m], in order, joins the
                                         cluster whose IL grows least (stats updated)       O(m C d)
    leaf_costs_of_record(ds, a, lc) / leaf_costs_of_cluster(ds, st, c, lc)   fill lc (sum_j L_j,)
                                         with the categorical cost per leaf for a fixed record /
                                         cluster                              O(sum_j L_j) with tables
    pair_dist_lc(ds, a, lc, b), ncp_with_lc(ds, st, c, lc, r)   the same values as pair_dist /
                                         ncp_with, one lookup per categorical QI (use in scans)
    ncp_with_bounded(ds, st, c, r, bound), ncp_with_lc_bounded(..., lc, r, bound),
    pair_dist_lc_bounded(ds, a, lc, b, bound)   may stop once the partial sum exceeds bound
                                         (then return that partial sum); exact when <= bound
    dists_to_record(ds, r, ids, out)     out[i] = d(r, ids[i])            (parallel)        O(m d)
    ncp_with_all(ds, st, c, ids, out)    out[i] = NCP(e_c U {ids[i]})     (parallel)        O(m d)
    partition_il(ds, ec, C) -> float     total IL of labels ec (0..C-1)                     O(n d)
    partition_ncp(ds, ec, C) -> float64 (C,)  NCP of every class                            O(n d)
    argmin_ncp_with(ds, st, c, ids, m, lower_bound, nt) -> (pos, cost)   best record for cluster
                                         c among ids[:m], ties to smallest pos, early exit at the
                                         lower bound, nt = n_threads() shares (parallel)    O(m d)
    smallest_ncp_with(ds, st, c, ids, m, B, nt, out_cost, out_ids) -> (count, tau, tau_id)
                                         the B best records for cluster c by (cost, id) and a
                                         bound (tau, tau_id) below all others (parallel)   O(m d log B)
    argmax_pair_dist(ds, r, ids, m, nt) -> (pos, dist)  furthest record from r in ids[:m],
                                         ties to the smallest record id                    O(m d)
    n_threads() -> int                   Python: numba's thread count, for the nt arguments
    run_in_chunks(step, progress)        Python driver: progress + Ctrl-C between kernel chunks

O(1) "with a table": every tree with at most PAIR_TABLE_MAX_LEAVES leaves gets a dense table of
LCA costs, so a categorical term is one lookup; larger trees walk up from the smaller leaf (O(h)).
Costs are summed in the fixed order numeric 0..dn-1 then categorical 0..dc-1, so a record inside a
cluster's generalization gets ``ncp_with == cluster_ncp`` bit for bit (algorithms use that as an
exact lower bound for early exits).
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np
import numba
from numba import prange

from ..._numba_config import njit, njit_parallel
from ... import ncp as ncp_def
from ... import objectives
from ...class_stats import class_stats
from ...taxonomy._lca import lca_packed
from ...qidata import QIData, pack_trees

PAIR_TABLE_MAX_LEAVES = 512
PAR_MIN = 65536  # one thread share per PAR_MIN candidates: a parallel launch costs ~20 us idle, ms on a busy machine
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

    cost     a clustering objective of ``kanon_duckdb.objectives``: 'ncp' (leaves(LCA)/leaves(root),
             default), 'height' (height(LCA)/height(tree)) or 'iq' (information quantity).
    weights  per-QI weights, numeric QIs first then categorical; default the run's ``weights :=``
             (``objectives.weight_vector``), all 1 when none were given.
    """
    objective = objectives.get(cost, "cluster")
    dn, dc = data.dn, data.dc
    if weights is None:
        weights = objectives.weight_vector(data)
    w = np.ones(dn + dc) if weights is None else np.asarray(weights, dtype=np.float64)
    rng = data.num_range
    inv_range = w[:dn] / rng
    null_cost = ncp_def.null_cost(dn, w[:dn])
    packed = pack_trees(data.trees)
    leaf_node, leaf_off, parent, leaf_hi, n_leaves, node_off, sub_height, _leaf_lo = packed
    node_cost = np.zeros(int(node_off[-1]), dtype=np.float64)
    pair_off = np.zeros(dc + 1, dtype=np.int64)
    tables = []
    for j, t in enumerate(data.trees):
        a, b = int(node_off[j]), int(node_off[j + 1])
        node_cost[a:b] = objective.node_cost(t, w[dn + j])
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
def copy_cluster(src, a, dst, b):
    """dst cluster b := src cluster a (statistics only; src and dst may be the same)."""
    dst.size[b] = src.size[a]
    for j in range(src.nmin.shape[1]):
        dst.nmin[b, j] = src.nmin[a, j]
        dst.nmax[b, j] = src.nmax[a, j]
        dst.nnull[b, j] = src.nnull[a, j]
    for j in range(src.cmin.shape[1]):
        dst.cmin[b, j] = src.cmin[a, j]
        dst.cmax[b, j] = src.cmax[a, j]


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
    size, nmin, nmax, nnull, cmin, cmax = class_stats(ec, C, ds.num, ds.num_null, ds.cat)
    return ClusterStats(size, nmin, nmax, nnull, cmin, cmax)


# --------------------------------------------------------------------------------------------
# costs

@njit
def lca_node(ds, j, lo, hi):
    return lca_packed(ds.leaf_node, ds.leaf_off, ds.parent, ds.leaf_hi, ds.node_off, j, lo, hi)


@njit
def cat_cost(ds, j, lo, hi):
    p0 = ds.pair_off[j]
    if ds.pair_off[j + 1] > p0:  # table (its diagonal is 0): one lookup, no data-dependent branch
        return ds.pair_cost[p0 + lo * ds.n_leaf[j] + hi]
    if lo == hi:
        return 0.0
    return ds.node_cost[ds.node_off[j] + lca_node(ds, j, lo, hi)]


@njit
def _num_pair(ds, a, b):
    """Numeric part of pair_dist (terms summed in order from 0.0)."""
    s = 0.0
    for j in range(ds.num.shape[1]):
        if ds.num_null[a, j] or ds.num_null[b, j]:
            s += ds.null_cost[j]
        else:
            s += abs(ds.num[a, j] - ds.num[b, j]) * ds.inv_range[j]
    return s


@njit
def _num_with(ds, st, c, r):
    """Numeric part of ncp_with (terms summed in order from 0.0)."""
    s = 0.0
    for j in range(ds.num.shape[1]):
        if st.nnull[c, j] or ds.num_null[r, j]:
            s += ds.null_cost[j]
        else:
            v = ds.num[r, j]
            s += (max(st.nmax[c, j], v) - min(st.nmin[c, j], v)) * ds.inv_range[j]
    return s


@njit
def pair_dist(ds, a, b):
    s = _num_pair(ds, a, b)
    for j in range(ds.cat.shape[1]):
        x = ds.cat[a, j]
        y = ds.cat[b, j]
        s += cat_cost(ds, j, min(x, y), max(x, y))
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
    s = _num_with(ds, st, c, r)
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


@njit
def assign_to_nearest(ds, rows, m, centers, C, labels, fallback):
    """labels[r] = the c < C minimising d(r, centers[c]) (ties: lowest c) for each r of rows[:m];
    ``fallback`` when no distance is finite."""
    for i in range(m):
        r = rows[i]
        best = fallback
        bv = np.inf
        for c in range(C):
            v = pair_dist(ds, r, centers[c])
            if v < bv:
                bv = v
                best = c
        labels[r] = best


@njit
def assign_to_cheapest(ds, st, rows, m, C, labels, skip_empty):
    """Each r of rows[:m], in order, joins the cluster c < C with the least il_increase (ties: lowest
    c; clusters of size 0 are passed over when ``skip_empty``); stats and labels[r] are updated."""
    for i in range(m):
        r = rows[i]
        best = -1
        bv = np.inf
        for c in range(C):
            if skip_empty and st.size[c] == 0:
                continue
            v = il_increase(ds, st, c, r)
            if v < bv:
                bv = v
                best = c
        add_record(ds, st, best, r)
        labels[r] = best


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


# --------------------------------------------------------------------------------------------
# per-scan leaf-cost vectors: with one side of every comparison fixed (a record or a cluster), the
# categorical term depends only on the other record's leaf, so it is precomputed per leaf
# (sum_j L_j entries) and a scan does one lookup per categorical QI. Values are the very numbers
# cat_cost returns, summed in the same order, so results are bit-identical to pair_dist/ncp_with.

@njit
def _fill_leaf_costs(ds, j, lo, hi, out):
    """OUT out[leaf_off[j] + x] = cost of LCA(leaves lo..hi U {x}) for every leaf x of tree j."""
    base = ds.leaf_off[j]
    for x in range(ds.n_leaf[j]):
        out[base + x] = cat_cost(ds, j, min(lo, x), max(hi, x))


@njit
def leaf_costs_of_record(ds, a, out):
    """OUT out[leaf_off[j] + x] = cost of LCA(cat[a, j], x) for every leaf x of every tree j."""
    for j in range(ds.cat.shape[1]):
        v = ds.cat[a, j]
        _fill_leaf_costs(ds, j, v, v, out)


@njit
def leaf_costs_of_cluster(ds, st, c, out):
    """OUT out[leaf_off[j] + x] = cost of LCA(cluster c's leaves U {x}) on tree j."""
    for j in range(ds.cat.shape[1]):
        _fill_leaf_costs(ds, j, st.cmin[c, j], st.cmax[c, j], out)


@njit
def _add_leaf_costs(ds, lc, r, s):
    """s + the categorical terms of record r looked up in lc, added in QI order."""
    for j in range(ds.cat.shape[1]):
        s += lc[ds.leaf_off[j] + ds.cat[r, j]]
    return s


@njit
def _add_leaf_costs_bounded(ds, lc, r, s, bound):
    """_add_leaf_costs, returning the partial sum as soon as it exceeds bound."""
    if s > bound:
        return s
    for j in range(ds.cat.shape[1]):
        s += lc[ds.leaf_off[j] + ds.cat[r, j]]
        if s > bound:
            return s
    return s


@njit
def pair_dist_lc(ds, a, lc, b):
    """pair_dist(ds, a, b) with lc = leaf_costs_of_record(ds, a)."""
    s = _num_pair(ds, a, b)
    return _add_leaf_costs(ds, lc, b, s)


@njit
def ncp_with_lc(ds, st, c, lc, r):
    """ncp_with(ds, st, c, r) with lc = leaf_costs_of_cluster(ds, st, c)."""
    s = _num_with(ds, st, c, r)
    return _add_leaf_costs(ds, lc, r, s)


@njit
def ncp_with_bounded(ds, st, c, r, bound):
    """ncp_with, but may stop early and return any partial sum > bound once it exceeds bound.

    Terms are non-negative and added in the usual order, so a result <= bound is exact."""
    s = _num_with(ds, st, c, r)
    if s > bound:
        return s
    for j in range(ds.cat.shape[1]):
        v = ds.cat[r, j]
        s += cat_cost(ds, j, min(st.cmin[c, j], v), max(st.cmax[c, j], v))
        if s > bound:
            return s
    return s


@njit
def ncp_with_lc_bounded(ds, st, c, lc, r, bound):
    """ncp_with_lc with the early stop of ncp_with_bounded."""
    s = _num_with(ds, st, c, r)
    return _add_leaf_costs_bounded(ds, lc, r, s, bound)


@njit
def pair_dist_lc_bounded(ds, a, lc, b, bound):
    """pair_dist_lc with the early stop of ncp_with_bounded."""
    s = _num_pair(ds, a, b)
    return _add_leaf_costs_bounded(ds, lc, b, s, bound)


# --------------------------------------------------------------------------------------------
# scans shared by the greedy algorithms (deterministic: ties go to the smallest position / id,
# whatever the number of threads). Each has a serial body over ids[lo:hi]; the public function
# runs it directly when the scan is short (a parallel launch costs more than it saves, and far
# more on a busy machine) and over thread shares with an explicit reduction otherwise.

@njit
def _threads_for(m, n_threads):
    return max(1, min(n_threads, m // PAR_MIN))


@njit
def _scan_leaf_costs(ds, st, c, m):
    """(use_lc, lc) for a scan of m candidates against cluster c: the per-leaf cost vector when
    it is no longer than the scan (else an empty placeholder)."""
    use_lc = ds.leaf_off[-1] <= m
    lc = np.empty(ds.leaf_off[-1] if use_lc else 0)
    if use_lc:
        leaf_costs_of_cluster(ds, st, c, lc)
    return use_lc, lc


@njit
def _argmin_with_body(ds, st, c, lc, use_lc, ids, lo, hi, lower_bound):
    v_best = np.inf
    i_best = -1
    for i in range(lo, hi):
        v = ncp_with_lc(ds, st, c, lc, ids[i]) if use_lc else ncp_with(ds, st, c, ids[i])
        if v < v_best:
            v_best = v
            i_best = i
            if v <= lower_bound:
                break
    return i_best, v_best


@njit_parallel
def _argmin_with_par(ds, st, c, lc, use_lc, ids, m, lower_bound, nt):
    chunk = (m + nt - 1) // nt
    bv = np.full(nt, np.inf)
    bi = np.full(nt, -1, dtype=np.int64)
    for t in prange(nt):
        i, v = _argmin_with_body(ds, st, c, lc, use_lc, ids, t * chunk, min(m, (t + 1) * chunk),
                                 lower_bound)
        bi[t] = i
        bv[t] = v
    return _reduce_min(bv, bi, np.arange(m))


@njit
def argmin_ncp_with(ds, st, c, ids, m, lower_bound, n_threads):
    """Position i in ids[:m] minimising NCP(e_c U {ids[i]}), ties to the smallest position i.

    Each thread share stops at its first candidate whose cost reaches ``lower_bound`` (pass
    cluster_ncp(ds, st, c): nothing can cost less), which keeps the result exact.
    Returns (position, cost); (-1, inf) when m == 0.
    """
    use_lc, lc = _scan_leaf_costs(ds, st, c, m)
    nt = _threads_for(m, n_threads)
    if nt == 1:
        return _argmin_with_body(ds, st, c, lc, use_lc, ids, 0, m, lower_bound)
    return _argmin_with_par(ds, st, c, lc, use_lc, ids, m, lower_bound, nt)


@njit
def _argmax_pair_body(ds, r, lc, use_lc, ids, lo, hi):
    v_best = -np.inf
    i_best = -1
    for i in range(lo, hi):
        v = pair_dist_lc(ds, r, lc, ids[i]) if use_lc else pair_dist(ds, r, ids[i])
        if v > v_best or (v == v_best and ids[i] < ids[i_best]):
            v_best = v
            i_best = i
    return i_best, v_best


@njit_parallel
def _argmax_pair_par(ds, r, lc, use_lc, ids, m, nt):
    chunk = (m + nt - 1) // nt
    bv = np.full(nt, np.inf)
    bi = np.full(nt, -1, dtype=np.int64)
    for t in prange(nt):
        i, v = _argmax_pair_body(ds, r, lc, use_lc, ids, t * chunk, min(m, (t + 1) * chunk))
        bi[t] = i
        bv[t] = -v
    i, v = _reduce_min(bv, bi, ids)
    return i, -v


@njit
def argmax_pair_dist(ds, r, ids, m, n_threads):
    """Position i in ids[:m] maximising d(r, ids[i]), ties to the smallest record id ids[i].

    Returns (position, distance); (-1, -inf) if m == 0.
    """
    use_lc = ds.leaf_off[-1] <= m
    lc = np.empty(ds.leaf_off[-1] if use_lc else 0)
    if use_lc:
        leaf_costs_of_record(ds, r, lc)
    nt = _threads_for(m, n_threads)
    if nt == 1:
        return _argmax_pair_body(ds, r, lc, use_lc, ids, 0, m)
    return _argmax_pair_par(ds, r, lc, use_lc, ids, m, nt)


@njit
def _remove(U, pos, m, r):
    """Remove record r from the active prefix U[:m] (swap with the last, keep pos[] in sync)."""
    p = pos[r]
    last = U[m - 1]
    U[p] = last
    pos[last] = p
    U[m - 1] = r
    pos[r] = m - 1


@njit
def _insert_sorted(cost, ids, count, B, v, r):
    """Insert (v, r) into the ascending (cost, id) buffer cost/ids[:count] capped at B; new count."""
    if count == B and (v > cost[B - 1] or (v == cost[B - 1] and r > ids[B - 1])):
        return count
    i = count if count < B else B - 1
    while i > 0 and (cost[i - 1] > v or (cost[i - 1] == v and ids[i - 1] > r)):
        cost[i] = cost[i - 1]
        ids[i] = ids[i - 1]
        i -= 1
    cost[i] = v
    ids[i] = r
    return count + 1 if count < B else B


@njit
def _smallest_body(ds, st, c, lc, use_lc, ids, lo, hi, B, out_cost, out_ids):
    cnt = 0
    for i in range(lo, hi):
        r = ids[i]
        bound = out_cost[B - 1] if cnt == B else np.inf
        if use_lc:
            v = ncp_with_lc_bounded(ds, st, c, lc, r, bound)
        else:
            v = ncp_with_bounded(ds, st, c, r, bound)
        if cnt < B or v <= out_cost[B - 1]:
            cnt = _insert_sorted(out_cost, out_ids, cnt, B, v, r)
    return cnt


@njit_parallel
def _smallest_par(ds, st, c, lc, use_lc, ids, m, B, nt, tc, ti, tn):
    chunk = (m + nt - 1) // nt
    for t in prange(nt):
        tn[t] = _smallest_body(ds, st, c, lc, use_lc, ids, t * chunk, min(m, (t + 1) * chunk), B,
                               tc[t], ti[t])


@njit
def smallest_ncp_with(ds, st, c, ids, m, B, n_threads, out_cost, out_ids):
    """The B records of ids[:m] with the smallest NCP(e_c U {r}), ordered by (cost, record id).

    OUT out_cost/out_ids[:count] (arrays of length >= B). Returns (count, tau, tau_id): every
    record x left out has (cost_x, x) > (tau, tau_id) lexicographically (tau = +inf, tau_id = -1
    when none was left out). Because NCP(e U r) can only grow as e grows, the bound stays valid
    while records are added to cluster c: the basis of the lazy greedy step in kmember.
    Independent of the number of threads.
    """
    use_lc, lc = _scan_leaf_costs(ds, st, c, m)
    nt = _threads_for(m, n_threads)
    if nt == 1:
        count = _smallest_body(ds, st, c, lc, use_lc, ids, 0, m, B, out_cost, out_ids)
    else:
        tc = np.empty((nt, B))
        ti = np.empty((nt, B), dtype=np.int64)
        tn = np.zeros(nt, dtype=np.int64)
        _smallest_par(ds, st, c, lc, use_lc, ids, m, B, nt, tc, ti, tn)
        count = 0
        for t in range(nt):
            for q in range(tn[t]):
                count = _insert_sorted(out_cost, out_ids, count, B, tc[t, q], ti[t, q])
    tau = np.inf
    tau_id = -1
    if count < m:
        tau = out_cost[count - 1]
        tau_id = out_ids[count - 1]
    return count, tau, tau_id


@njit
def _reduce_min(bv, bi, key):
    """Thread reduction: smallest bv, ties to the smallest key[bi]."""
    v = np.inf
    i = -1
    for t in range(bv.shape[0]):
        if bi[t] >= 0 and (bv[t] < v or (bv[t] == v and key[bi[t]] < key[i])):
            v = bv[t]
            i = bi[t]
    return i, v


def n_threads() -> int:
    """Threads numba will use (Python; pass it to the parallel scans, which cannot ask)."""
    return int(numba.get_num_threads())


def run_in_chunks(step, progress, first: int = 8, target_s: float = 0.2):
    """Drive a chunked kernel from Python so progress is reported and Ctrl-C lands between chunks.

    ``step(budget) -> (fraction_done, finished)`` runs at most ``budget`` units of work in numba;
    the budget adapts so that one call takes about ``target_s`` seconds.
    """
    import time
    budget = max(1, int(first))
    while True:
        t0 = time.perf_counter()
        frac, finished = step(budget)
        progress(min(1.0, max(0.0, float(frac))))
        if finished:
            return
        dt = time.perf_counter() - t0
        budget = max(1, int(budget * min(4.0, max(0.25, target_s / max(dt, 1e-4)))))
