"""cof_mondrian: the COF kernel against a brute-force reference, planted outliers, the outlier
handling (>= k outliers: own Mondrian; < k: merged back), properties on random data, SQL."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import naive
from kanon_duckdb.qidata import QIData
from kanon_duckdb.algorithms.clustering import cof_mondrian
from kanon_duckdb.algorithms.clustering._ncp import build_ncp_data, pair_dist
from kanon_duckdb.algorithms.mondrian import partition_rows
from kanon_duckdb.generalize import generalize

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def naive_cof(data, rows, n_neighbors, dist=None):
    """COF (Tang et al. 2002) of each row of ``rows``, straight from the definitions.

    ``dist`` defaults to the brute-force NCP distance; on data with equal distances pass the
    kernel's own distance, so that float rounding cannot reorder ties differently.
    """
    rows = list(rows)
    r = min(n_neighbors, len(rows) - 1)
    if r < 1:
        return {p: 1.0 for p in rows}
    if dist is None:
        dist = lambda a, b: naive.naive_pair_dist(data, a, b)
    nbrs = {}
    for p in rows:
        others = [q for q in rows if q != p]
        # stable sort by distance: ties keep the group order (as the kernel does)
        nbrs[p] = sorted(others, key=lambda q: dist(p, q))[:r]

    def ac_dist(p):
        G = set(nbrs[p])
        path = [p]
        costs = []
        while G:
            # next: the remaining point nearest to the path so far (ties: neighbour-list order)
            best = min(nbrs[p], key=lambda q: (min(dist(q, x) for x in path), nbrs[p].index(q))
                       if q in G else (np.inf, 0))
            costs.append(min(dist(best, x) for x in path))
            path.append(best)
            G.remove(best)
        return sum(2.0 * (r + 1 - i) / (r * (r + 1)) * c for i, c in enumerate(costs, start=1))

    ac = {p: ac_dist(p) for p in rows}
    out = {}
    for p in rows:
        s = sum(ac[o] for o in nbrs[p])
        out[p] = r * ac[p] / s if s > 0 else (np.inf if ac[p] > 0 else 1.0)
    return out


def numeric_data(points):
    num = np.asarray(points, dtype=np.float64)
    n, dn = num.shape
    return QIData(n=n, num=num, num_null=np.zeros((n, dn), bool), num_lo=num.min(0),
                  num_hi=num.max(0), num_is_int=np.ones(dn, bool), cat=np.zeros((n, 0), np.int32),
                  trees=[], num_names=[f"x{j}" for j in range(dn)], cat_names=[])


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(2, 25), st.integers(1, 6))
def test_cof_matches_naive_on_continuous_data(seed, n, nn):
    data = naive.random_continuous_qidata(np.random.default_rng(seed), n, 2)
    ds = build_ncp_data(data)
    ec = np.zeros(n, np.int64)
    got = cof_mondrian.cof_scores(ds, ec, nn)
    want = naive_cof(data, range(n), nn)
    assert got == pytest.approx(np.array([want[p] for p in range(n)]), rel=1e-9)


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(3, 50))
def test_cof_is_computed_within_each_class(seed, n):
    data = naive.random_qidata(np.random.default_rng(seed), n, 1, 2, max_value=30)
    ds = build_ncp_data(data)
    ec = np.random.default_rng(seed).integers(0, 3, n)
    ec = np.unique(ec, return_inverse=True)[1].astype(np.int64)
    got = cof_mondrian.cof_scores(ds, ec, 4)
    for c in np.unique(ec):
        rows = np.flatnonzero(ec == c)
        want = naive_cof(data, rows, 4, dist=lambda a, b: pair_dist(ds, a, b))
        for p in rows:
            assert got[p] == pytest.approx(want[p], rel=1e-9) or (np.isinf(got[p]) and np.isinf(want[p]))


def planted():
    """A 3x3 grid of points with unit spacing, a line of 5, and two planted outliers."""
    grid = [(x, y) for x in range(3) for y in range(3)]
    line = [(10 + t, 10) for t in range(5)]
    outliers = [(6, 16), (0, 20)]
    return numeric_data(grid + line + outliers), {len(grid) + len(line), len(grid) + len(line) + 1}


def test_cof_flags_planted_outliers_in_one_group():
    data, planted_rows = planted()
    ds = build_ncp_data(data)
    ec = np.zeros(data.n, np.int64)
    cof = cof_mondrian.cof_scores(ds, ec, 4)
    flagged = set(np.flatnonzero(cof > 1.5).tolist())
    assert flagged == planted_rows, cof
    out = cof_mondrian.pick_outliers(ec, cof, 3, 1.5)
    assert set(out.tolist()) == planted_rows


def test_pick_outliers_keeps_k_rows_per_class():
    ec = np.array([0, 0, 0, 0, 1, 1, 1])
    cof = np.array([5.0, 4.0, 3.0, 1.0, 9.0, 9.0, 9.0])
    out = cof_mondrian.pick_outliers(ec, cof, 3, 1.5)
    assert out.tolist() == [0]  # class 0 has room for one (highest COF), class 1 none


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(2, 5))
def test_run_pulls_outliers_out_and_anonymizes_them_separately(seed, k):
    data = naive.random_qidata(np.random.default_rng(seed), 120, 2, 1, max_value=100)
    params = {"cof_threshold": 1.0, "cof_neighbors": 4}
    part = cof_mondrian.run(data, k, 0, params)
    naive.check_truthful(data, part.ec, k)
    mon = partition_rows(data, k)
    out = cof_mondrian.pick_outliers(mon, cof_mondrian.cof_scores(build_ncp_data(data), mon, 4),
                                     k, 1.0)
    assert part.info["n_outliers"] == out.size
    is_out = np.zeros(data.n, bool)
    is_out[out] = True
    keep = ~is_out
    # the other rows keep Mondrian's partitions
    assert naive.same_partition(part.ec[keep], mon[keep])
    if out.size >= k:  # outliers form classes of their own (Mondrian on the outlier set)
        assert not set(part.ec[out].tolist()) & set(part.ec[keep].tolist())
        assert part.info["outlier_classes"] == len(set(part.ec[out].tolist()))
        assert naive.same_partition(part.ec[out], partition_rows(cof_mondrian.subset(data, out), k))
    elif out.size:
        assert set(part.ec[out].tolist()) <= set(part.ec[keep].tolist())


def test_fewer_than_k_outliers_are_merged_back():
    data, planted_rows = planted()
    part = cof_mondrian.run(data, 5, 0, {"cof_threshold": 1.5, "cof_neighbors": 4})
    naive.check_truthful(data, part.ec, 5)
    if 0 < part.info["n_outliers"] < 5:
        assert "merged" in part.info["outlier_handling"]
        assert part.info["outlier_classes"] == 0


def test_fewer_than_k_outliers_merge_into_least_loss_class():
    # two tight groups of 4 far apart and one row next to the second group, flagged by a low
    # threshold in a single partition: it must join the second group's class
    from kanon_duckdb.algorithms.clustering.cof_mondrian_kernels import merge_into_nearest
    data = numeric_data([(0,), (1,), (2,), (3,), (100,), (101,), (102,), (103,), (104,)])
    ds = build_ncp_data(data)
    ec = np.array([0, 0, 0, 0, 1, 1, 1, 1, 0], np.int64)
    is_out = np.zeros(9, bool)
    is_out[8] = True
    merge_into_nearest(ds, ec, 2, is_out, np.array([8], np.int64))
    assert ec[8] == 1


@st.composite
def cases(draw, max_n=60):
    _, data, k = naive.draw_qidata_k(draw, max_n, max_k=12, max_dn=2)
    params = {"cof_threshold": draw(st.sampled_from([1.0, 1.2, 1.5, 3.0])),
              "cof_neighbors": draw(st.integers(1, 12))}
    return data, k, params


@SETTINGS
@given(cases())
def test_cof_mondrian_properties(case):
    data, k, params = case
    part = cof_mondrian.run(data, k, 0, dict(params))
    naive.check_truthful(data, part.ec, k)
    assert part.ec.shape == (data.n,)
    g = generalize(data, part)
    for j in range(data.dn):
        lo, hi = g.lo[g.ec, j], g.hi[g.ec, j]
        assert (np.isnan(lo) | ((lo <= data.num[:, j]) & (data.num[:, j] <= hi))).all()
    assert np.array_equal(part.ec, cof_mondrian.run(data, k, 0, dict(params)).ec)
    assert part.info["n_outliers"] >= 0


def test_cof_mondrian_through_sql():
    import kanon_duckdb

    con = kanon_duckdb.connect()
    try:
        con.sql("CREATE TABLE t AS SELECT i AS id, CASE WHEN i % 17 = 0 THEN 90 ELSE 20 + i % 10 END "
                "AS age, (i * 11) % 7 AS zip FROM range(80) r(i)")
        rows = con.sql("FROM k_anonymize('t', k := 4, algo := 'cof_mondrian', qi := ['age', 'zip'], "
                       "cof_threshold := 1.5, cof_neighbors := 5)").fetchall()
        assert len(rows) == 80
        det = con.sql("SELECT details FROM kanon_runs WHERE algo = 'cof_mondrian'").fetchall()[0][0]
        assert "n_outliers" in det
    finally:
        con.close()


def test_large_groups_take_the_row_parallel_path_with_same_result(monkeypatch):
    data = naive.random_qidata(np.random.default_rng(9), 90, 2, 2, max_value=20)
    ds = build_ncp_data(data)
    ec = (np.arange(90) % 3).astype(np.int64)
    want = cof_mondrian.cof_scores(ds, ec, 5)
    monkeypatch.setattr(cof_mondrian, "BIG_GROUP", 10)
    seen = []
    got = cof_mondrian.cof_scores(ds, ec, 5, seen.append)
    assert np.array_equal(got, want)
    assert seen and seen[-1] == pytest.approx(1.0)


def test_a_big_class_of_identical_rows_scores_one_without_the_neighbour_search(monkeypatch):
    """Mondrian cannot cut identical rows, so heavy duplicates leave classes of any size; the
    neighbour search was O(m^2) in such a class (scale checker: 300k rows, 9 classes of ~33k
    identical rows ran for over 10 minutes). Every distance in it is 0: COF 1.0, no search."""
    rng = np.random.default_rng(3)
    pts = [(5.0, 5.0)] * 40 + [tuple(p) for p in rng.integers(0, 50, (30, 2)).astype(float)]
    data = numeric_data(pts)
    monkeypatch.setattr(cof_mondrian, "BIG_GROUP", 10)
    searched = []
    real = cof_mondrian.knn_rows

    def spy(ds, ids, r, a0, a1, nbr):
        searched.append(np.asarray(ids).copy())
        return real(ds, ids, r, a0, a1, nbr)

    monkeypatch.setattr(cof_mondrian, "knn_rows", spy)
    part = cof_mondrian.run(data, 2, 0, {"cof_threshold": 1.5, "cof_neighbors": 4})
    assert part.ec.size == 70
    for ids in searched:  # only classes holding more than one tuple are searched
        assert len({pts[i] for i in ids}) > 1
    # the same scores as the full search
    ds = build_ncp_data(data)
    ec = np.array([0] * 40 + [1] * 30, dtype=np.int64)
    full = cof_mondrian.cof_scores(ds, ec, 4)
    assert np.array_equal(cof_mondrian.cof_scores(ds, ec, 4, data=data), full)
    assert (full[:40] == 1.0).all()
