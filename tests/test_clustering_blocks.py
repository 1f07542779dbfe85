"""The shared NCP building blocks (clustering/_ncp.py) against brute force on tiny random data."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import naive
from kanon_duckdb.algorithms.clustering import _ncp as N

SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def datasets(draw, min_n=2, max_n=25):
    seed = draw(st.integers(0, 2**32 - 1))
    n = draw(st.integers(min_n, max_n))
    dn = draw(st.integers(0, 3))
    dc = draw(st.integers(0 if dn else 1, 3))
    null_frac = draw(st.sampled_from([0.0, 0.0, 0.2]))
    rng = np.random.default_rng(seed)
    return naive.random_qidata(rng, n, dn, dc, max_leaves=draw(st.integers(1, 9)), null_frac=null_frac,
                               max_value=draw(st.sampled_from([0, 3, 50]))), rng


def _build(data, cost, use_tables):
    old = N.PAIR_TABLE_MAX_LEAVES
    N.PAIR_TABLE_MAX_LEAVES = old if use_tables else 0
    try:
        return N.build_ncp_data(data, cost=cost)
    finally:
        N.PAIR_TABLE_MAX_LEAVES = old


@SETTINGS
@given(datasets(), st.sampled_from(["ncp", "height"]), st.booleans())
def test_pair_dist_matches_naive(case, cost, use_tables):
    data, rng = case
    ds = _build(data, cost, use_tables)
    for _ in range(10):
        a, b = rng.integers(0, data.n, 2)
        assert N.pair_dist(ds, a, b) == pytest.approx(naive.naive_pair_dist(data, a, b, cost))
        assert N.pair_dist(ds, a, b) == pytest.approx(N.pair_dist(ds, b, a))
    assert N.pair_dist(ds, 0, 0) == pytest.approx(naive.naive_ncp(data, [0], cost))


@SETTINGS
@given(datasets(), st.sampled_from(["ncp", "height"]), st.booleans())
def test_cluster_costs_match_naive(case, cost, use_tables):
    data, rng = case
    ds = _build(data, cost, use_tables)
    C = int(rng.integers(1, 5))
    ec = rng.integers(0, C, data.n)
    stats = N.stats_from_labels(ds, ec, C)
    members = [list(np.flatnonzero(ec == c)) for c in range(C)]
    for c in range(C):
        ref = naive.naive_ncp(data, members[c], cost) if members[c] else 0.0
        assert N.cluster_ncp(ds, stats, c) == pytest.approx(ref)
        assert N.cluster_il(ds, stats, c) == pytest.approx(len(members[c]) * ref)
        for r in rng.integers(0, data.n, 4):
            with_r = naive.naive_ncp(data, members[c] + [r], cost)
            assert N.ncp_with(ds, stats, c, r) == pytest.approx(with_r)
            assert N.cost_of_adding(ds, stats, c, r) == pytest.approx((len(members[c]) + 1) * with_r)
            assert N.il_increase(ds, stats, c, r) == pytest.approx(
                (len(members[c]) + 1) * with_r - len(members[c]) * ref)
    assert N.partition_il(ds, ec, C) == pytest.approx(naive.naive_partition_il(data, ec, cost))
    np.testing.assert_allclose(
        N.partition_ncp(ds, ec, C),
        [naive.naive_ncp(data, m, cost) if m else 0.0 for m in members])


@SETTINGS
@given(datasets())
def test_add_and_merge_agree_with_rebuilt_stats(case):
    data, rng = case
    ds = N.build_ncp_data(data)
    stats = N.new_stats(ds, 3)
    order = rng.permutation(data.n)
    half = data.n // 2
    for r in order[:half]:
        N.add_record(ds, stats, 0, r)
    for r in order[half:]:
        N.add_record(ds, stats, 1, r)
    assert N.merged_ncp(ds, stats, 0, 1) == pytest.approx(naive.naive_ncp(data, range(data.n)))
    assert N.merged_ncp(ds, stats, 0, 2) == pytest.approx(N.cluster_ncp(ds, stats, 0))
    N.merge_clusters(stats, 0, 1)
    assert stats.size[0] == data.n
    assert N.cluster_ncp(ds, stats, 0) == pytest.approx(naive.naive_ncp(data, range(data.n)))
    N.clear_cluster(stats, 0)
    assert stats.size[0] == 0 and N.cluster_ncp(ds, stats, 0) == 0.0
    N.add_record(ds, stats, 0, order[0])
    assert N.cluster_ncp(ds, stats, 0) == pytest.approx(naive.naive_ncp(data, [order[0]]))


@SETTINGS
@given(datasets())
def test_vector_helpers(case):
    data, rng = case
    ds = N.build_ncp_data(data)
    ids = rng.permutation(data.n).astype(np.int64)
    out = np.empty(data.n)
    N.dists_to_record(ds, 0, ids, out)
    np.testing.assert_allclose(out, [naive.naive_pair_dist(data, 0, i) for i in ids])
    ec = np.zeros(data.n, dtype=np.int64)
    ec[: data.n // 2] = 1
    stats = N.stats_from_labels(ds, ec, 2)
    N.ncp_with_all(ds, stats, 1, ids, out)
    m1 = list(np.flatnonzero(ec == 1))
    np.testing.assert_allclose(out, [naive.naive_ncp(data, m1 + [i]) for i in ids])


@SETTINGS
@given(datasets())
def test_inside_record_costs_exactly_cluster_ncp(case):
    """The early-exit lower bound: a member's ncp_with equals cluster_ncp bit for bit."""
    data, rng = case
    ds = N.build_ncp_data(data)
    ec = rng.integers(0, 2, data.n)
    stats = N.stats_from_labels(ds, ec, 2)
    for r in range(data.n):
        assert N.ncp_with(ds, stats, ec[r], r) == N.cluster_ncp(ds, stats, ec[r])


def test_lca_and_cat_cost_hand_computed():
    from kanon_duckdb.taxonomy.tree import build_index
    edges = [("a", "ab"), ("b", "ab"), ("c", "cd"), ("d", "cd"), ("e", "*"), ("ab", "*"),
             ("cd", "*"), ("*", None)]
    t = build_index("x", edges)
    data = naive.random_qidata(np.random.default_rng(0), 5, 0, 0)
    data = type(data)(n=5, num=np.zeros((5, 0)), num_null=np.zeros((5, 0), bool), num_lo=np.zeros(0),
                      num_hi=np.zeros(0), num_is_int=np.zeros(0, bool),
                      cat=np.array([[t.leaf_of_label[x]] for x in "abcde"], dtype=np.int32),
                      trees=[t], num_names=[], cat_names=["x"])
    ds = N.build_ncp_data(data)
    a, b, c, e = (t.leaf_of_label[x] for x in "abce")
    assert t.labels[N.lca_node(ds, 0, min(a, b), max(a, b))] == "ab"
    assert N.pair_dist(ds, 0, 1) == pytest.approx(2 / 5)   # LCA 'ab': 2 of 5 leaves
    assert N.pair_dist(ds, 0, 2) == pytest.approx(1.0)     # root
    assert N.pair_dist(ds, 4, 4) == 0.0                    # same leaf
    dsh = N.build_ncp_data(data, cost="height")
    assert N.pair_dist(dsh, 0, 1) == pytest.approx(1 / 2)  # height(ab)=1 / height(tree)=2
    assert N.cat_cost(ds, 0, min(c, e), max(c, e)) == pytest.approx(1.0)


@SETTINGS
@given(datasets(), st.integers(1, 6))
def test_scans_match_brute_force(case, B):
    data, rng = case
    ds = N.build_ncp_data(data)
    ids = rng.permutation(data.n).astype(np.int64)
    m = int(rng.integers(1, data.n + 1))
    ec = rng.integers(0, 2, data.n)
    stats = N.stats_from_labels(ds, ec, 2)
    costs = np.array([naive.naive_ncp(data, list(np.flatnonzero(ec == 1)) + [r]) for r in ids[:m]])
    dists = np.array([naive.naive_pair_dist(data, ids[0], r) for r in ids[:m]])
    # argmax: ties to the smallest record id
    p, v = N.argmax_pair_dist(ds, ids[0], ids, m, 1)
    assert v == pytest.approx(dists.max())
    exact_d = np.array([N.pair_dist(ds, ids[0], r) for r in ids[:m]])
    assert ids[p] == min(ids[:m][exact_d == exact_d.max()])
    # argmin: the first position reaching the minimum
    p, v = N.argmin_ncp_with(ds, stats, 1, ids, m, N.cluster_ncp(ds, stats, 1), 1)
    assert v == pytest.approx(costs.min()) and costs[p] == pytest.approx(costs.min())
    # the B smallest by (cost, id) and the bound on the others
    bc, bi = np.empty(B), np.empty(B, dtype=np.int64)
    cnt, tau, tau_id = N.smallest_ncp_with(ds, stats, 1, ids, m, B, 1, bc, bi)
    exact = [N.ncp_with(ds, stats, 1, r) for r in ids[:m]]  # ≈ costs; exact for the ordering
    np.testing.assert_allclose(exact, costs)
    order = sorted(zip(exact, ids[:m]))
    assert cnt == min(B, m)
    assert list(bi[:cnt]) == [r for _, r in order[:cnt]]
    if cnt < m:
        assert (tau, tau_id) == (bc[cnt - 1], bi[cnt - 1])
    else:
        assert tau == np.inf


def test_parallel_scan_bodies_agree_with_serial():
    """The thread-share versions give the serial answer for any number of shares."""
    data = naive.random_qidata(np.random.default_rng(5), 400, 2, 3, max_leaves=9)
    ds = N.build_ncp_data(data)
    ids = np.random.default_rng(6).permutation(data.n).astype(np.int64)
    stats = N.stats_from_labels(ds, np.arange(data.n) % 7, 7)
    m = data.n
    lc = np.empty(ds.leaf_off[-1])
    N.leaf_costs_of_record(ds, ids[3], lc)
    serial = N._argmax_pair_body(ds, ids[3], lc, True, ids, 0, m)
    N.leaf_costs_of_cluster(ds, stats, 2, lc)
    serial_min = N._argmin_with_body(ds, stats, 2, lc, True, ids, 0, m, -1.0)
    B = 9
    ref_c, ref_i = np.empty(B), np.empty(B, dtype=np.int64)
    ref_n = N._smallest_body(ds, stats, 2, lc, True, ids, 0, m, B, ref_c, ref_i)
    for nt in (2, 3, 5):
        N.leaf_costs_of_record(ds, ids[3], lc)
        assert N._argmax_pair_par(ds, ids[3], lc, True, ids, m, nt) == serial
        N.leaf_costs_of_cluster(ds, stats, 2, lc)
        assert N._argmin_with_par(ds, stats, 2, lc, True, ids, m, -1.0, nt) == serial_min
        tc, ti, tn = np.empty((nt, B)), np.empty((nt, B), dtype=np.int64), np.zeros(nt, dtype=np.int64)
        N._smallest_par(ds, stats, 2, lc, True, ids, m, B, nt, tc, ti, tn)
        merged_c, merged_i, cnt = np.empty(B), np.empty(B, dtype=np.int64), 0
        for t in range(nt):
            for q in range(tn[t]):
                cnt = N._insert_sorted(merged_c, merged_i, cnt, B, tc[t, q], ti[t, q])
        assert cnt == ref_n and list(merged_i) == list(ref_i)
