"""COF-Mondrian: Mondrian with connectivity-based outlier removal (Kara & Eyüpoğlu 2023).

``algo := 'cof_mondrian'``, parameters ``cof_threshold`` (default 1.5) and ``cof_neighbors``
(default 10).

Steps, following the paper's Algorithm 1 (Steps 1-18):

1. Partitioning (Steps 1-10): strict Mondrian on all rows (``mondrian.partition_rows``).
2. Outlier detection (Steps 11-14): in every final partition, the connectivity-based outlier
   factor of Tang et al. 2002 (see ``cof_mondrian_kernels``) with r = min(cof_neighbors, |P| - 1)
   nearest neighbours by the NCP record distance. A row is an outlier when COF > cof_threshold.
   The paper gives no threshold; COF is about 1 for a row as well connected as its neighbours,
   and 1.5 ("50 % longer chains than its neighbours") is our default. A partition never gives up
   more than |P| - k rows (the highest COF first), so it stays k-anonymous.
3. Outliers as a new data set (Steps 15-16): the pulled-out rows are partitioned by Mondrian
   again, on their own. The paper's recursion stops there (Step 16 returns the result of the
   second invocation), so the outlier set is not searched for outliers a second time and no row
   is ever dropped. When fewer than k outliers were found they cannot form a class of their own:
   each goes back to the class whose IL = |e|·NCP grows least by taking it (possibly its own
   former partition). ``Partition.info['outlier_handling']`` says which case happened.
Privacy models (``l``, ``t``..., issue 13): both Mondrian passes cut only where both sides
satisfy every model (the outlier set's pass too, when the outlier set as a whole satisfies them);
a row is pulled out as an outlier only while its partition keeps satisfying every model. What
still violates (an outlier set that does not satisfy the models, outliers merged back) goes to the
final pass (``privacy.enforce.repair``).
4. Generalization (Steps 17-18) is the shared ``generalize`` step (ranges / LCA labels).

``Partition.info``: n_outliers, outlier_classes, cof_neighbors, cof_threshold, outlier_handling.
Deterministic (no randomness; ``seed`` is unused). Cost: Mondrian O(n log n · d) plus COF
O(Σ |P|² d) over the partitions (|P| < 2k on typical data).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from ...params import declared
from ...privacy import EXTRA_KEY, spec_of
from ...privacy import _kernels as PK
from ..base import Algorithm, Partition, no_progress
from ...qidata import QIData
from ..mondrian import partition_rows
from ._ncp import build_ncp_data
from .cof_mondrian_kernels import ac_rows, cof_all_groups, cof_from_ac, knn_rows, merge_into_nearest


def group_members(ec: np.ndarray):
    """(members int64 (n,), start int64 (C+1,)): rows grouped by class id 0..C-1."""
    C = int(ec.max()) + 1 if ec.size else 0
    members = np.argsort(ec, kind="stable").astype(np.int64)
    start = np.zeros(C + 1, dtype=np.int64)
    start[1:] = np.cumsum(np.bincount(ec, minlength=C))
    return members, start


BIG_GROUP = 2048  # groups above this size are done row-parallel, in chunks


def constant_rows(data: QIData, ids: np.ndarray) -> bool:
    """Whether the rows ``ids`` all hold one QI tuple (coordinates, NULL flags, leaves)."""
    for a in (data.num, data.num_null, data.cat):
        block = a[ids]
        if block.size and not (block == block[:1]).all():
            return False
    return True


def cof_scores(ds, ec: np.ndarray, n_neighbors: int, progress=no_progress,
               data: QIData | None = None) -> np.ndarray:
    """COF of every row within its class of ``ec``: float64 (n,).

    With ``data``, a class above ``BIG_GROUP`` rows that holds one QI tuple (Mondrian cannot cut
    identical rows, so heavy duplicates leave such classes of any size) scores 1.0 for every row
    without the O(m^2) neighbour search: every distance in it is 0, so every ac-dist is 0 and
    ``_cof_from_ac`` gives 1.0."""
    members, start = group_members(ec)
    sizes = np.diff(start)
    out = np.empty(ec.shape[0])
    small = np.flatnonzero(sizes <= BIG_GROUP).astype(np.int64)
    cof_all_groups(ds, members, start, small, int(n_neighbors), out)
    big = np.flatnonzero(sizes > BIG_GROUP)
    if data is not None and big.size:
        same = np.array([constant_rows(data, members[start[g]:start[g + 1]]) for g in big],
                        dtype=bool)
        for g in big[same]:
            out[members[start[g]:start[g + 1]]] = 1.0
        big = big[~same]
    work = float(sum(int(sizes[g]) ** 2 for g in big)) or 1.0
    done = 0.0
    for g in big:
        ids = members[start[g]:start[g + 1]]
        m = ids.size
        r = min(int(n_neighbors), m - 1)
        nbr = np.empty((m, r), dtype=np.int64)
        ac = np.empty(m)
        step = max(1, 20_000_000 // m)  # ~20M distances per kernel call
        for a0 in range(0, m, step):
            knn_rows(ds, ids, r, a0, min(m, a0 + step), nbr)
            done += min(step, m - a0) * m
            progress(done / work)
        ac_rows(ds, ids, nbr, r, 0, m, ac)
        loc = np.empty(m)
        cof_from_ac(nbr, ac, r, loc)
        out[ids] = loc
    return out


def pick_outliers(ec: np.ndarray, cof: np.ndarray, k: int, threshold: float,
                  spec=None) -> np.ndarray:
    """Rows with COF > threshold, at most |P| - k per class (highest COF first); sorted row ids.
    With privacy models (``spec``, a PrivacySpec) a row leaves its class only while the class
    keeps satisfying every model (``privacy._kernels.class_ok``)."""
    cand = np.flatnonzero(cof > threshold)
    if cand.size == 0:
        return cand.astype(np.int64)
    sizes = np.bincount(ec)
    # highest COF first, ties by row id
    order = cand[np.lexsort((cand, -cof[cand]))]
    room = sizes - k
    taken = np.zeros_like(sizes)
    keep = []
    closing = spec is not None and spec.has_class_models
    if closing:
        P = spec.packed()
        hist = PK.class_hist(ec, sizes.size, P, spec.row_w)
        scr = np.empty((4, spec.scr_cols))
    for r in order:
        c = ec[r]
        if taken[c] < room[c]:
            if closing:
                PK.add_row(hist[c], r, P, -1.0)
                if not PK.class_ok(hist[c], float(sizes[c] - taken[c] - 1), P, scr):
                    PK.add_row(hist[c], r, P, 1.0)
                    continue
            taken[c] += 1
            keep.append(r)
    return np.sort(np.asarray(keep, dtype=np.int64))


def subset(data: QIData, rows: np.ndarray) -> QIData:
    """The rows ``rows`` of ``data`` as a QIData (global ranges kept, so NCP stays comparable);
    the run's privacy models come along (their table distribution stays the input's)."""
    spec = spec_of(data)
    return dataclasses.replace(
        data, n=int(rows.size), num=np.ascontiguousarray(data.num[rows]),
        num_null=np.ascontiguousarray(data.num_null[rows]), cat=np.ascontiguousarray(data.cat[rows]),
        extra={} if spec is None else {EXTRA_KEY: spec.subset(rows)},
        num_leaf=None if data.num_leaf is None else data.num_leaf[rows])


def run(data: QIData, k: int, seed: int, params: dict, progress=no_progress) -> Partition:
    threshold = float(params["cof_threshold"])
    n_neighbors = max(int(params["cof_neighbors"]), 1)
    ec = partition_rows(data, k, progress=progress).astype(np.int64)
    progress(0.3)
    ds = build_ncp_data(data)
    cof = cof_scores(ds, ec, n_neighbors, lambda f: progress(0.3 + 0.5 * f), data=data)
    progress(0.8)
    out = pick_outliers(ec, cof, k, threshold, spec_of(data))
    C = int(ec.max()) + 1
    info = {"cof_threshold": threshold, "cof_neighbors": n_neighbors, "n_outliers": int(out.size),
            "mondrian_classes": C, "outlier_classes": 0}
    if out.size >= k:
        sub_ec = partition_rows(subset(data, out), k, progress=progress).astype(np.int64)
        ec[out] = C + sub_ec
        info["outlier_classes"] = int(sub_ec.max()) + 1
        info["outlier_handling"] = "anonymized as a separate data set (Mondrian)"
    elif out.size > 0:
        is_out = np.zeros(data.n, dtype=np.bool_)
        is_out[out] = True
        merge_into_nearest(ds, ec, C, is_out, out)
        info["outlier_handling"] = f"fewer than k={k} outliers: merged into their least-loss classes"
    else:
        info["outlier_handling"] = "no outliers"
    progress(1.0)
    return Partition(ec=ec, info=info)


ENTRY = Algorithm("cof_mondrian", run, "local", declared("cof_mondrian"),
              "Mondrian + connectivity-based outlier factor (Kara & Eyüpoğlu 2023)")
ALGORITHMS = [ENTRY]
