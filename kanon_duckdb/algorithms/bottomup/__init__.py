"""``bottomup``: kanon-duckdb's own local-recoding algorithm (not from a paper).

Categorical exactness dominates GCP (a categorical QI generalized to the root costs as much as a
numeric range spanning its whole domain), so classes are first formed on categorical values
alone, generalizing only the rows that need it, then cut along every QI:

1. Level grouping (bottom-up, in the spirit of ARX's iterative local recoding but per group):
   the rows are grouped by their categorical tuple; every group of >= k rows becomes a group for
   good. The remaining rows are generalized one taxonomy level further on one categorical QI,
   chosen greedily as the QI whose step puts the most remaining rows into groups of >= k per
   unit of NCP added, and regrouped; repeat until fewer than k rows remain (at the latest when
   every categorical QI is at its root, where all remaining rows form one group).
2. Leftovers (< k rows): each joins the group whose cost, rows x sum of NCP over the QIs of its
   box, it raises least.
3. Top-down split (Xu et al. 2006's top-down greedy idea, without seeds): while a group has
   >= 2k rows, sort it along every QI (numeric value, or categorical leaf ordinal in depth-first
   order) and take the cut over all QIs and positions leaving >= k rows on each side that
   minimizes the summed cost of the two sides; cuts fall between distinct values unless no
   such cut is allowed.

4. Never worse than Mondrian: strict Mondrian's classes are computed too and the one of lower
   GCP (mean NCP over rows and QIs, ``generalize.per_qi_loss``) is the start of step 5. On
   structured data (Adult) steps 1-3 win at every k; on uniform random data with flat trees
   (bench_scale's synthetic table at 1M rows) step 1 generalizes whole categorical QIs to the
   root and Mondrian's numeric cuts win (``kanon_runs.details.start`` says which one).
5. Refinement (``_refine``): rows move to, or swap with rows of, neighbouring classes while
   the summed cost drops, every class keeping >= k rows (and the privacy models it satisfied);
   classes that grow to >= 2k rows are cut again. Most classes are below 2k rows, so cuts alone
   cannot reshape them; moving rows can. The refined classes are kept when their GCP is not
   above the start's (``details``: gcp_start, gcp_refined, moves, swaps, splits, rounds).

Per-QI ``weights :=`` multiply each QI's NCP in every cost above, the comparison of step 4
included (a numeric NULL still costs 1 in steps 2-3).

Every class has >= k rows and is published with its exact ranges and LCAs (the generic
``generalize`` pass), so a group generalized to a level in step 1 is usually published lower.
Cost: step 1 O(passes · dc · n), step 2 O(leftover · groups · d), step 3 O(d · n · log n +
d² · n) per level of the split tree, step 4 one Mondrian run and two O(n · d) loss passes,
step 5 at most 8 rounds (see ``_refine``). Numeric QIs take part in steps 2, 3 and 5 only.
"""
from __future__ import annotations

import numpy as np

from ... import objectives
from ...params import declared
from ..base import Algorithm, Partition, no_progress
from ...qidata import QIData
from ..mondrian import partition_rows as mondrian_rows
from ..mondrian import stack_dimensions
from ._kernels import join_cheapest, ncp_chains, topdown_partition
from ._refine import refine


def _group_keys(codes: np.ndarray):
    """(group id per row, rows per group) of the rows of ``codes`` int64 (m, dc)."""
    if codes.shape[1] == 0:
        return np.zeros(codes.shape[0], np.int64), np.array([codes.shape[0]], np.int64)
    radix = codes.max(axis=0) + 1
    if float(np.prod(radix.astype(np.float64))) < 2.0 ** 62:
        key = np.zeros(codes.shape[0], np.int64)
        for j in range(codes.shape[1]):
            key = key * int(radix[j]) + codes[:, j]
        _u, inv, cnt = np.unique(key, return_inverse=True, return_counts=True)
    else:
        _u, inv, cnt = np.unique(codes, axis=0, return_inverse=True, return_counts=True)
    return inv.reshape(-1).astype(np.int64), cnt.astype(np.int64)


def level_groups(data: QIData, k: int):
    """Step 1: (group id per row, -1 for the leftover rows; number of groups; levels reached)."""
    n, dc = data.n, data.dc
    group = np.full(n, -1, dtype=np.int64)
    n_groups = 0
    left = np.arange(n)
    levels = np.zeros(dc, dtype=np.int64)
    anc = [t.anc for t in data.trees]
    ncp = [t.node_ncp() for t in data.trees]
    w = objectives.weight_vector(data)
    if w is not None:  # weights := scale each categorical QI's NCP
        ncp = [w[data.dn + j] * c for j, c in enumerate(ncp)]

    def coded(rows, lv):
        return np.stack([anc[j][data.cat[rows, j], min(int(lv[j]), anc[j].shape[1] - 1)]
                         for j in range(dc)], axis=1).astype(np.int64) if dc else \
            np.zeros((rows.size, 0), np.int64)

    while left.size >= k:
        inv, cnt = _group_keys(coded(left, levels))
        full = cnt[inv] >= k
        if full.any():
            _u, ids = np.unique(inv[full], return_inverse=True)
            group[left[full]] = n_groups + ids.reshape(-1)
            n_groups += int(ids.max()) + 1
            left = left[~full]
            if left.size < k:
                break
        best, best_j = -1.0, -1
        for j in range(dc):
            if levels[j] >= data.trees[j].height:
                continue
            step = levels.copy()
            step[j] += 1
            inv2, cnt2 = _group_keys(coded(left, step))
            gained = int((cnt2[inv2] >= k).sum())
            col = data.cat[left, j]
            h = anc[j].shape[1] - 1
            added = float((ncp[j][anc[j][col, min(int(step[j]), h)]]
                           - ncp[j][anc[j][col, min(int(levels[j]), h)]]).sum())
            score = (gained + 1e-3) / (added + 1e-9)
            if score > best:
                best, best_j = score, j
        if best_j < 0:  # every categorical QI at its root: the rest is one group
            group[left] = n_groups
            n_groups += 1
            left = left[:0]
            break
        levels[best_j] += 1
    return group, n_groups, left, levels


def _dimensions(data: QIData):
    """(X float64 (n, d), scale (d,) with the run's weights, gmin (d,)): the kernels' layout."""
    X, scale, _tree_of = stack_dimensions(data)
    scale = objectives.weighted_scale(scale, objectives.weight_vector(data))  # weights :=
    gmin = np.full(X.shape[1], -np.inf)
    gmin[:data.dn] = data.num_lo
    return X, scale, gmin


def partition_rows(data: QIData, k: int):
    """Class id per row (int64 (n,)) and details for kanon_runs."""
    X, scale, gmin = _dimensions(data)
    leaf_node, leaf_off, parent, leaf_hi, n_leaves, node_off, _sub, _lo = data.cat_arrays()
    trees = (leaf_node, leaf_off, parent, leaf_hi, n_leaves, node_off)
    if data.n < 2 * k:
        return np.zeros(data.n, dtype=np.int64), {"level_groups": 1, "leftover_rows": 0}
    group, n_groups, left, levels = level_groups(data, k)
    if left.size:
        if n_groups == 0:  # fewer than k rows could be grouped: impossible when n >= 2k
            group[left] = 0
            n_groups = 1
        else:
            join_cheapest(X, group, n_groups, left.astype(np.int64), data.dn, scale, gmin, *trees)
    idx = np.argsort(group, kind="stable").astype(np.int64)
    seg_start = np.concatenate([[0], np.cumsum(np.bincount(group, minlength=n_groups))])
    ec = topdown_partition(X, int(k), data.dn, scale, gmin, *trees, idx,
                           seg_start.astype(np.int64))
    info = {"level_groups": int(n_groups), "leftover_rows": int(left.size),
            "final_levels": {c: int(v) for c, v in zip(data.cat_names, levels)}}
    return ec, info


def refine_rows(data: QIData, k: int, ec: np.ndarray, rounds: int = 8):
    """Step 5 on class ids ``ec`` (every class >= k rows; not modified): (refined class ids
    int64 (n,), details). Privacy models of the run (``QIData.extra``) are kept by every step."""
    from ...privacy import spec_of
    X, scale, gmin = _dimensions(data)
    base, ch = ncp_chains(*data.cat_arrays()[:6])
    spec = spec_of(data)
    P = spec.packed() if spec is not None and spec.has_class_models else None
    out = np.array(ec, dtype=np.int64)  # a copy: refine works in place
    _C, stats = refine(X, out, int(k), data.dn, scale, gmin, base, ch, P, rounds=rounds)
    return out, {"moves": int(stats[:, 0].sum()), "swaps": int(stats[:, 1].sum()),
                 "splits": int(stats[:, 2].sum()), "rounds": int(stats.shape[0])}


def gcp_of(data: QIData, ec: np.ndarray) -> float:
    """GCP (mean over QIs of the row-mean NCP, ``generalize.per_qi_loss``; weighted by the run's
    ``weights :=``) of class ids ``ec``."""
    from ...generalize import generalize, per_qi_loss
    loss = per_qi_loss(data, generalize(data, Partition(ec=ec)))
    w = objectives.weight_vector(data)
    if w is not None:  # mean 1: the weighted mean over QIs
        return float(np.dot(w, loss)) / loss.size
    return float(loss.mean()) if loss.size else 0.0


def run(data: QIData, k: int, seed: int, params: dict, progress=no_progress) -> Partition:
    """Steps 1-5 (module docstring). Deterministic: ``seed`` is not used."""
    ec, info = partition_rows(data, k)
    progress(0.4)
    ec_m = mondrian_rows(data, k, progress=progress)
    own, mondrian = gcp_of(data, ec), gcp_of(data, ec_m)
    start = ec if own <= mondrian else ec_m
    info.update(start="bottomup" if own <= mondrian else "mondrian", gcp_bottomup=own,
                gcp_mondrian=mondrian)
    progress(0.5)
    refined, steps = refine_rows(data, k, start)
    gcp_refined = gcp_of(data, refined)
    info.update(steps, gcp_start=min(own, mondrian), gcp_refined=gcp_refined)
    progress(1.0)
    return Partition(ec=refined if gcp_refined <= min(own, mondrian) else start, info=info)


ALGORITHMS = [Algorithm("bottomup", run, "local", declared("bottomup"),
                        "kanon-duckdb's own: bottom-up categorical level grouping, greedy "
                        "top-down NCP splits, then a record-moving refinement")]
