"""kab / bha (black-hole search): properties on random data, Algorithm 1 against a naive reference,
the record-exchange move (exact incremental costs, hand-computed cases), "never worse than the best
initial star", the search's trace, and the SQL entry point."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import naive
from kanon_duckdb.algorithms.clustering import bha, kab
from kanon_duckdb.algorithms.clustering import _blackhole
from kanon_duckdb.algorithms.clustering._blackhole import (dense_labels, differing_clusters,
                                                           fitness, match_clusters)
from kanon_duckdb.algorithms._member_lists import lists as _lists, move
from kanon_duckdb.algorithms.clustering._exchange import (_fill_all, _fill_top2, _ncp_exchanged,
                                                          _pop_needs_rescan, _stats, _update,
                                                          cluster_ncps, exchange_toward,
                                                          exchange_worst)
from kanon_duckdb.algorithms.clustering.kab_stars import StarMaker
from kanon_duckdb.algorithms.clustering._ncp import build_ncp_data, pair_dist
from kanon_duckdb.generalize import generalize

SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def cases(draw, max_n=60):
    _, data, k = naive.draw_qidata_k(draw, max_n, max_k=12, max_dn=2)
    return data, k, draw(st.integers(0, 1000))


def check_partition(data, part, k):
    ec = part.ec
    naive.check_truthful(data, ec, k)  # classes >= k, LCAs cover their rows
    assert np.bincount(np.unique(ec, return_inverse=True)[1]).sum() == data.n  # rows preserved
    g = generalize(data, part)
    for j in range(data.dn):  # numeric values inside their class range (NULL range = any value)
        lo, hi = g.lo[g.ec, j], g.hi[g.ec, j]
        ok = np.isnan(lo) | ((lo <= data.num[:, j]) & (data.num[:, j] <= hi))
        assert ok.all()


PARAMS = {"stars": 2, "iterations": 3}


@pytest.mark.parametrize("algo", [kab, bha])
@SETTINGS
@given(cases())
def test_black_hole_properties(algo, case):
    data, k, seed = case
    part = algo.run(data, k, seed, dict(PARAMS))
    check_partition(data, part, k)
    again = algo.run(data, k, seed, dict(PARAMS))
    assert np.array_equal(part.ec, again.ec)  # deterministic for a seed


@SETTINGS
@given(cases())
def test_kab_class_sizes_between_k_and_2k_minus_1(case):
    data, k, seed = case
    sizes = np.bincount(dense_labels(kab.run(data, k, seed, dict(PARAMS)).ec)[0])
    assert sizes.min() >= min(k, data.n)
    assert sizes.max() <= max(2 * k - 1, data.n if data.n < 2 * k else 0)


def naive_algorithm1(data, k, order, dist=None):
    """KAB Fig. 2 straight from the text: seeds in ``order``, k-1 nearest unassigned records.

    ``dist`` defaults to the brute-force NCP distance; with equal distances pass the kernel's
    own, so that float rounding cannot order ties differently.
    """
    n = data.n
    if dist is None:
        dist = lambda a, b: naive.naive_pair_dist(data, a, b)
    assigned = np.zeros(n, bool)
    clusters, seeds = [], []
    it = iter(order)
    for _ in range(max(n // k, 1)):
        r = next(x for x in it if not assigned[x])
        assigned[r] = True
        rest = [x for x in range(n) if not assigned[x]]
        near = sorted(rest, key=lambda x: dist(r, x))[:k - 1]
        assigned[near] = True
        clusters.append([r] + near)
        seeds.append(r)
    for x in np.flatnonzero(~assigned):
        best = min(range(len(seeds)), key=lambda c: dist(x, seeds[c]))
        clusters[best].append(int(x))
    ec = np.empty(n, np.int64)
    for c, e in enumerate(clusters):
        ec[e] = c
    return ec


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(2, 40), st.integers(1, 3), st.integers(1, 6))
def test_algorithm1_matches_naive_without_ties(seed, n, dn, k):
    data = naive.random_continuous_qidata(np.random.default_rng(seed), n, dn)
    k = min(k, n)
    ds = build_ncp_data(data)
    got = kab.ncp_clustering(ds, n, k, np.random.default_rng(seed))
    order = np.random.default_rng(seed).permutation(n)
    assert naive.same_partition(got, naive_algorithm1(data, k, order))


@SETTINGS
@given(cases(max_n=40))
def test_algorithm1_matches_naive_with_ties(case):
    """Integer data with many equal distances: ties go to the smaller record id in both."""
    data, k, seed = case
    ds = build_ncp_data(data)
    got = kab.ncp_clustering(ds, data.n, k, np.random.default_rng(seed))
    order = np.random.default_rng(seed).permutation(data.n)
    assert naive.same_partition(got, naive_algorithm1(data, k, order,
                                                      dist=lambda a, b: pair_dist(ds, a, b)))


def test_match_clusters_identical_up_to_renaming():
    a = np.array([0, 0, 1, 1, 2, 2, 2])
    b = np.array([2, 2, 0, 0, 1, 1, 1])
    mapping, overlap = match_clusters(a, 3, b, 3)
    assert overlap == 7
    assert mapping.tolist() == [2, 0, 1]


def test_match_clusters_greedy_by_overlap_and_fresh_ids():
    bh = np.array([0, 0, 0, 1, 1, 2])
    star = np.array([0, 0, 1, 0, 0, 1])
    mapping, overlap = match_clusters(bh, 3, star, 2)
    # (bh1, s0) overlap 2 and (bh0, s0) overlap 2 tie -> the first key (bh0, s0) wins;
    # bh1 then has only s0 (taken): fresh id; bh2 takes s1.
    assert mapping.tolist() == [0, 2, 1]
    assert overlap == 3


def naive_match(bh, star):
    """Greedy matching straight from its definition: pairs (BH cluster, star cluster) by
    decreasing overlap, ties by BH id then star id; each side used once."""
    pairs = {}
    for b, s in zip(bh.tolist(), star.tolist()):
        pairs[(b, s)] = pairs.get((b, s), 0) + 1
    mapping, used, overlap = {}, set(), 0
    for (b, s), c in sorted(pairs.items(), key=lambda p: (-p[1], p[0])):
        if b not in mapping and s not in used:
            mapping[b] = s
            used.add(s)
            overlap += c
    return mapping, overlap


@SETTINGS
@given(st.data())
def test_match_clusters_equals_the_naive_greedy(draw):
    n = draw.draw(st.integers(1, 40))
    bh = np.array(draw.draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), np.int64)
    star = np.array(draw.draw(st.lists(st.integers(0, 5), min_size=n, max_size=n)), np.int64)
    n_bh, n_star = int(bh.max()) + 1 + draw.draw(st.integers(0, 2)), int(star.max()) + 1
    mapping, overlap = match_clusters(bh, n_bh, star, n_star)
    want, want_overlap = naive_match(bh, star)
    assert overlap == want_overlap
    fresh = iter(range(n_star, n_star + n_bh))
    assert mapping.tolist() == [want[b] if b in want else next(fresh) for b in range(n_bh)]


@SETTINGS
@given(st.data())
def test_fill_all_equals_a_fill_per_cluster(draw):
    """``_fill_all`` (records grouped by label, one pass per cluster) gives every cluster the
    statistics of ``_fill_top2`` over its member list, sentinels and NCP 0 for empty labels."""
    rng = np.random.default_rng(draw.draw(st.integers(0, 10_000)))
    n = draw.draw(st.integers(1, 30))
    dn = draw.draw(st.integers(0, 2))
    data = naive.random_qidata(rng, n, dn, draw.draw(st.integers(0 if dn else 1, 2)),
                               max_leaves=4, null_frac=0.2, max_value=4)
    ds = build_ncp_data(data)
    C = draw.draw(st.integers(1, 6))
    lab = rng.integers(0, C, n).astype(np.int64)
    got = _stats(ds, C)
    _fill_all(ds, lab, C, *got)
    head, nxt, _, size = _lists(lab, C)
    want = _stats(ds, C)
    for c in range(C):
        _fill_top2(ds, head, nxt, c, c, *want[:5])
    for g, w in zip(got[:5], want[:5]):
        assert np.array_equal(g, w)
    for c in range(C):
        members = np.flatnonzero(lab == c)
        assert got[5][c] == (pytest.approx(naive.naive_ncp(data, members), abs=1e-12)
                             if size[c] else 0.0)


def _exchange(ds, lab, C, guide, k, max_size, tried=None):
    lab = np.asarray(lab, np.int64).copy()
    guide = np.asarray(guide, np.int64)
    tried = np.arange(C, dtype=np.int64) if tried is None else np.asarray(tried, np.int64)
    rel, sw = exchange_toward(ds, lab, C, guide, int(guide.max()) + 1, tried, k, max_size, 8)
    return lab, rel, sw


def _five_points():
    """x = 0, 1, 2, 10, 11 (range 11). Star: A = {x0, x1, x3} (NCP 10/11), B = {x2, x4} (9/11):
    IL = 48/11. Black hole: {x0, x1, x2}, {x3, x4}: IL = 8/11."""
    data = naive.numeric_qidata([[0.0], [1.0], [2.0], [10.0], [11.0]])
    return data, build_ncp_data(data), np.array([0, 0, 1, 0, 1]), np.array([0, 0, 0, 1, 1])


def test_exchange_hand_computed():
    """k = 2, classes up to 3. A is tried first (worst). x0's BH-mate x2 is in B: the best try is
    the swap x0 <-> x4 (A = {x1, x3, x4}: 30/11, B = {x0, x2}: 4/11; 34/11 < 48/11). x1's
    BH-mates are now in B: moving x1 there (A = {x3, x4}: 2/11, B = {x0, x1, x2}: 6/11) beats
    every swap. The star is then the black hole (IL 8/11): one relocation, one swap."""
    data, ds, star, bh = _five_points()
    lab, rel, sw = _exchange(ds, star, 2, bh, 2, 3)
    assert (rel, sw) == (1, 1) and naive.same_partition(lab, bh)
    assert naive.naive_partition_il(data, lab) == pytest.approx(8 / 11)


def test_exchange_respects_max_size_and_keeps_only_improvements():
    """Classes capped at 2: no relocation into B. After the swap x0 <-> x4, swapping x1 <-> x2
    gives A = {x2, x3, x4} (27/11), B = {x0, x1} (2/11): 29/11; nothing else improves."""
    data, ds, star, bh = _five_points()
    lab, rel, sw = _exchange(ds, star, 2, bh, 2, 2)
    assert (rel, sw) == (0, 2)
    assert naive.same_partition(lab, [1, 1, 0, 0, 0])
    assert naive.naive_partition_il(data, lab) == pytest.approx(29 / 11)
    # a guide equal to the star suggests nothing; no tried cluster moves nothing
    assert _exchange(ds, star, 2, star, 2, 3)[1:] == (0, 0)
    assert _exchange(ds, star, 2, bh, 2, 3, tried=[])[1:] == (0, 0)
    # the black hole moved toward a worse star stays as it is
    lab, rel, sw = _exchange(ds, bh, 2, star, 2, 3)
    assert (rel, sw) == (0, 0) and naive.same_partition(lab, bh)


def test_exchange_with_singleton_classes():
    """k = 1 (bha's random stars can hold classes of one row): a singleton's record may be tried;
    NCP(A - r) of an empty A is 0, never read from the sentinel statistics (it crashed the
    process before: a categorical LCA table lookup at leaf -1 / INT32_MAX)."""
    data = naive.random_qidata(np.random.default_rng(5), 6, 1, 2, max_leaves=4, max_value=10)
    ds = build_ncp_data(data)
    star = np.array([0, 1, 2, 3, 4, 5])
    bh = np.array([0, 0, 0, 1, 1, 1])
    lab, rel, sw = _exchange(ds, star, 6, bh, 1, 6)
    assert naive.naive_partition_il(data, lab) <= naive.naive_partition_il(data, star)
    lab, rel, sw = _exchange(ds, bh, 2, star, 1, 6)
    assert naive.naive_partition_il(data, lab) <= naive.naive_partition_il(data, bh)
    assert np.bincount(lab).min() >= 1


NO_MASK = np.zeros(0, dtype=np.bool_)


def test_exchange_worst_tries_the_worst_allowed_clusters():
    """exchange_worst picks the tried clusters: share 0.5 of 2 -> A (the worst) alone, which
    reaches the black hole as in test_exchange_hand_computed; B alone (mask): x2 (BH-mates x0, x1
    in A) swaps with x3 (A = {x0, x1, x2}: 2/11, B = {x3, x4}: 1/11; 8/11), the black hole too."""
    _, ds, star, bh = _five_points()
    lab = star.copy()
    assert exchange_worst(ds, lab, 2, bh, 2, 0.5, NO_MASK, 2, 3, 8, 0) == (1, 1, 1)
    assert naive.same_partition(lab, bh)
    lab = star.copy()
    only_b = np.array([False, True])
    assert exchange_worst(ds, lab, 2, bh, 2, 1.0, only_b, 2, 3, 8, 0) == (0, 1, 1)
    assert naive.same_partition(lab, bh)
    # share of the allowed clusters: 0.5 of the one allowed cluster is that cluster
    assert exchange_worst(ds, star.copy(), 2, bh, 2, 0.5, only_b, 2, 3, 8, 0)[2] == 1


def test_exchange_worst_patience_stops_an_idle_move():
    """A guide equal to the star suggests nothing: patience 1 stops after the first tried
    cluster, patience 0 tries both."""
    _, ds, star, _ = _five_points()
    assert exchange_worst(ds, star.copy(), 2, star, 2, 1.0, NO_MASK, 2, 3, 8, 1) == (0, 0, 1)
    assert exchange_worst(ds, star.copy(), 2, star, 2, 1.0, NO_MASK, 2, 3, 8, 0) == (0, 0, 2)


def test_differing_clusters_hand_computed():
    a = np.array([0, 0, 1, 1, 2, 2])
    b = np.array([5, 5, 0, 1, 2, 2])
    assert differing_clusters(a, 3, b, 6).tolist() == [False, True, False]
    # a cluster inside a larger one of b differs too
    assert differing_clusters(np.array([0, 0, 1, 1]), 2, np.zeros(4, np.int64), 1).tolist() \
        == [True, True]


def test_removing_one_of_many_tied_extremes_needs_no_rescan():
    """bha's regression (65 s at k = 40 on Adult): every record leaving a large class that ties on
    a categorical leaf with the class's second-smallest / -largest value forced a rescan of the
    class. With the holders of each extreme counted, removing one of >= 3 holders is O(d), and
    the statistics stay those of a fresh fill; with 2 holders a rescan is still needed."""
    data = naive.numeric_qidata([[1.0], [1.0], [1.0], [5.0], [5.0], [5.0], [9.0], [9.0]])
    ds = build_ncp_data(data)
    lab = np.zeros(8, np.int64)
    head, nxt, prv, _ = _lists(lab, 1)
    nlo, nhi, nnn, clo, chi, ncp = _stats(ds, 1)
    _fill_top2(ds, head, nxt, 0, 0, nlo, nhi, nnn, clo, chi)
    assert nlo[0, :, 0].tolist() == [1, 1, 3] and nhi[0, :, 0].tolist() == [9, 9, 2]
    assert not _pop_needs_rescan(ds, 0, 0, nlo, nhi, nnn, clo, chi)  # one of three 1s
    assert nlo[0, :, 0].tolist() == [1, 1, 2] and nhi[0, :, 0].tolist() == [9, 9, 2]
    six = 6  # one of the two 9s: the runner-up would be needed
    assert _pop_needs_rescan(ds, 0, six, nlo, nhi, nnn, clo, chi)


@SETTINGS
@given(st.data())
def test_incremental_statistics_match_a_fresh_fill(draw):
    """Random exchanges between two clusters with many ties (few leaves, few values, NULLs):
    after each ``_update`` the statistics (two extremes, holder counts, NULL counts) and the NCP
    equal a fresh fill and NCP from scratch."""
    rng = np.random.default_rng(draw.draw(st.integers(0, 10_000)))
    n = draw.draw(st.integers(4, 16))
    dn = draw.draw(st.integers(0, 2))
    data = naive.random_qidata(rng, n, dn, draw.draw(st.integers(0 if dn else 1, 2)),
                               max_leaves=3, null_frac=0.2, max_value=3)
    ds = build_ncp_data(data)
    lab = np.arange(n, dtype=np.int64) % 2
    head, nxt, prv, size = _lists(lab, 2)
    nlo, nhi, nnn, clo, chi, ncp = _stats(ds, 2)
    for c in range(2):
        _fill_top2(ds, head, nxt, c, c, nlo, nhi, nnn, clo, chi)
    for _ in range(draw.draw(st.integers(1, 12))):
        r = int(rng.integers(n))
        a = lab[r]
        if size[a] <= 1:
            continue
        b = 1 - a
        move(head, nxt, prv, size, lab, r, a, b)
        _update(ds, head, nxt, a, r, -1, nlo, nhi, nnn, clo, chi, ncp)
        _update(ds, head, nxt, b, -1, r, nlo, nhi, nnn, clo, chi, ncp)
        fresh = _stats(ds, 2)
        for c in range(2):
            _fill_top2(ds, head, nxt, c, c, *fresh[:5])
            for got, want in zip((nlo, nhi, nnn, clo, chi), fresh[:5]):
                assert np.array_equal(got[c], want[c])
            assert ncp[c] == pytest.approx(naive.naive_ncp(data, np.flatnonzero(lab == c)),
                                           abs=1e-12)
    assert cluster_ncps(ds, lab, 2) == pytest.approx(ncp, abs=1e-12)


@pytest.mark.parametrize("k", [2, 5])
def test_star_maker_fresh_and_reborn_stars(k):
    """Stars of kab on 2,500 rows (Mondrian blocks in use): k-anonymous with classes of k..2k-1,
    the same for the same seed; a reborn star keeps every black-hole cluster it does not redo
    and redoes at least the share asked for."""
    data = naive.random_qidata(np.random.default_rng(k), 2500, 2, 2, max_leaves=8, max_value=60)
    ds = build_ncp_data(data)
    maker = StarMaker(data, ds, k)
    star, C = dense_labels(maker.fresh(np.random.default_rng(1)))
    assert np.array_equal(star, dense_labels(maker.fresh(np.random.default_rng(1)))[0])
    sizes = np.bincount(star)
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1
    naive.check_truthful(data, star, k)
    reborn, _ = dense_labels(maker.reborn(star, C, 0.3, np.random.default_rng(2)))
    sizes = np.bincount(reborn)
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1
    kept = ~differing_clusters(star, C, reborn, int(reborn.max()) + 1)
    assert kept.any() and not kept.all()
    assert np.isin(star, np.flatnonzero(kept)).sum() <= 0.7 * data.n  # >= 30 % redone
    assert maker.reborn(star, C, 0.0, np.random.default_rng(2)).tolist() == star.tolist()


@SETTINGS
@given(st.data())
def test_ncp_exchanged_matches_brute_force(draw):
    """The O(d) cost of cluster - {x} + {r} from the top-2 statistics equals NCP computed from
    scratch, with NULLs, ties and categorical trees."""
    seed = draw.draw(st.integers(0, 10_000))
    rng = np.random.default_rng(seed)
    n = draw.draw(st.integers(2, 12))
    dn = draw.draw(st.integers(0, 2))
    data = naive.random_qidata(rng, n, dn, draw.draw(st.integers(0 if dn else 1, 2)), max_leaves=5, null_frac=draw.draw(st.sampled_from([0.0, 0.3])),
                               max_value=4)
    ds = build_ncp_data(data)
    lab = (rng.random(n) < 0.5).astype(np.int64)
    lab[0], lab[1] = 0, 1
    head, nxt, _prv, _size = _lists(lab, 2)
    dn, dc = data.dn, data.dc
    nlo, nhi = np.empty((1, 3, dn)), np.empty((1, 3, dn))
    nnn = np.empty((1, dn), np.int64)
    clo, chi = np.empty((1, 3, dc), np.int32), np.empty((1, 3, dc), np.int32)
    _fill_top2(ds, head, nxt, 0, 0, nlo, nhi, nnn, clo, chi)
    members = list(np.flatnonzero(lab == 0))
    for x in [-1] + members:
        for r in [-1] + list(np.flatnonzero(lab == 1)):
            rows = [m for m in members if m != x] + ([r] if r >= 0 else [])
            if not rows:
                continue
            got = _ncp_exchanged(ds, 0, x, r, nlo, nhi, nnn, clo, chi)
            assert got == pytest.approx(naive.naive_ncp(data, rows), abs=1e-12)


@pytest.mark.parametrize("k,max_size", [(2, 3), (3, 5), (3, 300)])
@pytest.mark.parametrize("seed", [0, 1])
def test_exchange_improves_and_keeps_classes_in_bounds(k, max_size, seed):
    """Two stars of Algorithm 1 (fixed seeds), the worse moved toward the better: the IL (from
    scratch) drops, every class keeps between k and max_size rows, labels stay 0..C-1."""
    n = 200
    data = naive.random_qidata(np.random.default_rng(seed), n, 2, 2, max_leaves=6, max_value=50,
                               null_frac=0.05)
    ds = build_ncp_data(data)
    a, ca = dense_labels(kab.ncp_clustering(ds, n, k, np.random.default_rng(10 + seed)))
    b, cb = dense_labels(kab.ncp_clustering(ds, n, k, np.random.default_rng(20 + seed)))
    if naive.naive_partition_il(data, a) < naive.naive_partition_il(data, b):
        a, ca, b, cb = b, cb, a, ca
    before = naive.naive_partition_il(data, a)
    lab, rel, sw = _exchange(ds, a, ca, b, k, max_size)
    sizes = np.bincount(lab, minlength=ca)
    assert rel + sw > 0 and naive.naive_partition_il(data, lab) < before
    assert sizes.min() >= k and sizes.max() <= max(max_size, np.bincount(a).max())
    naive.check_truthful(data, lab, k)


def test_kab_search_does_work():
    """On 300 random rows (seed fixed) the recorded counters show improving moves and a final
    fitness below the best initial star."""
    data = naive.random_qidata(np.random.default_rng(11), 300, 2, 2, max_leaves=8, max_value=100)
    info = kab.run(data, 5, 0, {"stars": 3, "iterations": 5}).info
    moves = [t for t in info["trace"] if "fitness_after" in t]
    assert info["moves"] == len(moves) and info["moves_improved"] > 0 and info["record_moves"] > 0
    assert info["record_moves"] == sum(t["relocations"] + t["swaps"] for t in moves)
    assert info["best_fitness"] < info["best_initial_fitness"] == min(info["initial_fitness"])


@pytest.mark.parametrize("algo", [kab, bha])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_never_worse_than_best_initial_star(algo, seed):
    data = naive.random_qidata(np.random.default_rng(seed), 150, 2, 2, max_leaves=8, max_value=100)
    k = 4
    start = algo.run(data, k, seed, {"stars": 3, "iterations": 0})
    part = algo.run(data, k, seed, {"stars": 3, "iterations": 6})
    # the same seed draws the same initial stars
    assert part.info["initial_fitness"] == start.info["initial_fitness"]
    best_initial = min(part.info["initial_fitness"])
    # fitness of the returned partition, recomputed from scratch (eq. 4 with a k-anonymous star)
    il = naive.naive_partition_il(data, part.ec)
    assert part.info["best_fitness"] == pytest.approx(0.5 * il / (data.n * 4))
    assert part.info["best_fitness"] <= best_initial + 1e-12
    assert 0.5 * naive.naive_partition_il(data, start.ec) / (data.n * 4) == pytest.approx(best_initial)
    assert len(part.info["fitness_history"]) == 7
    assert all(x >= y for x, y in zip(part.info["fitness_history"], part.info["fitness_history"][1:]))


def test_fitness_privacy_term():
    data = naive.random_qidata(np.random.default_rng(0), 10, 1, 1)
    ds = build_ncp_data(data)
    lab = np.array([0] * 9 + [1])
    assert fitness(ds, lab, 2, 2, 2) >= 0.5  # a class below k: privacy = 1
    assert fitness(ds, np.zeros(10, np.int64), 1, 2, 2) <= 0.5


def test_bha_random_clustering_is_k_anonymous():
    for seed in range(20):
        lab = bha.random_clustering(53, 5, np.random.default_rng(seed))
        assert np.bincount(lab).min() >= 5


def test_progress_reaches_one():
    data = naive.random_qidata(np.random.default_rng(0), 40, 1, 1)
    seen = []
    kab.run(data, 3, 0, dict(PARAMS), seen.append)
    assert seen and seen[-1] == 1.0 and all(0 <= f <= 1 for f in seen)


def test_kab_through_sql():
    import kanon_duckdb

    con = kanon_duckdb.connect()
    try:
        con.sql("CREATE TABLE t AS SELECT i AS id, (i * 37) % 90 AS age, (i * 11) % 7 AS zip, "
                "CASE WHEN i % 3 = 0 THEN 'a' WHEN i % 3 = 1 THEN 'b' ELSE 'c' END AS g "
                "FROM range(50) r(i)")
        out = con.sql("FROM k_anonymize('t', k := 3, algo := 'kab', qi := ['age', 'zip', 'g'], "
                      "stars := 2, iterations := 3)")
        rows = out.fetchall()
        assert len(rows) == 50
        sizes = con.sql("SELECT min(c) FROM (SELECT count(*) c FROM (FROM k_anonymize('t', k := 3, "
                        "algo := 'kab', qi := ['age', 'zip', 'g'], stars := 2, iterations := 3)) "
                        "GROUP BY age_min, age_max, zip_min, zip_max, g)").fetchall()[0][0]
        assert sizes >= 3
        params = con.sql("SELECT params FROM kanon_runs WHERE algo = 'kab' ORDER BY run_id DESC "
                         "LIMIT 1").fetchall()[0][0]
        assert '"stars"' in params and '"iterations"' in params
    finally:
        con.close()


def test_kab_run_record_counts_the_search():
    """kanon_runs.details of a kab run: moves, improving moves, swallowed stars, the best initial
    star's fitness and the final one, consistent with the trace."""
    import json

    import kanon_duckdb

    con = kanon_duckdb.connect()
    try:
        con.sql("CREATE TABLE t AS SELECT (i * 37) % 90 AS age, (i * 11) % 17 AS zip "
                "FROM range(300) r(i)")
        con.sql("CREATE TABLE o AS FROM k_anonymize('t', k := 5, algo := 'kab', "
                "qi := ['age', 'zip'], stars := 3, iterations := 4)")
        d = json.loads(con.sql("SELECT details FROM kanon_runs WHERE algo = 'kab'").fetchall()[0][0])
        moves = [t for t in d["trace"] if "fitness_after" in t]
        assert d["moves"] == len(moves) >= 4 * 2
        assert d["moves_improved"] == sum(t["fitness_after"] < t["fitness_before"] for t in moves)
        assert d["swallowed"] == sum(1 for t in d["trace"] if t.get("swallowed")) \
            == sum(1 for t in d["trace"] if t.get("replaced"))
        swallows = [t for t in d["trace"] if t.get("swallowed")]
        assert d["swallows_improving_black_hole"] == sum(
            t["black_hole_after"] < t["black_hole_before"] for t in swallows)
        assert all(t["black_hole_after"] <= t["black_hole_before"] for t in swallows)
        assert d["record_moves"] == sum(t["relocations"] + t["swaps"] for t in moves)
        # every star but the black hole gets a distance per iteration; swallowed = inside R
        dists = [t for t in d["trace"] if "distance" in t]
        assert len(dists) == 4 * 2
        assert sum(t["distance"] < t["radius"] for t in dists) == d["swallowed"]
        assert d["best_initial_fitness"] == min(d["initial_fitness"])
        assert d["best_fitness"] <= d["best_initial_fitness"]
        finals = [t for t in d["trace"] if t.get("final_swallow")]  # the end: 2 other stars
        assert len(finals) == 2 and all(t["black_hole_after"] <= t["black_hole_before"]
                                        for t in finals)
        assert d["best_fitness"] == d["fitness_history"][-1] == finals[-1]["black_hole_after"]
        lo, hi = _blackhole.BUDGET.rebirth_share  # replacements are reborn near the black hole
        assert all(lo <= t["reborn_share"] <= hi for t in d["trace"] if t.get("replaced"))
        gcp = con.sql("SELECT gcp('o')").fetchall()[0][0]
        assert d["best_fitness"] == pytest.approx(gcp / 2)  # fitness = GCP / 2 (eq. 4 with d QIs)
    finally:
        con.close()


@pytest.mark.parametrize("k", [kab.LARGE_K - 1, kab.LARGE_K])
def test_kab_stars_use_the_height_cost_from_large_k(k):
    """kab's k-member stars are built with the NCP of eq. 2 below LARGE_K and with Byun's
    height IL from LARGE_K on (the search and its fitness stay on eq. 2's NCP)."""
    data = naive.random_qidata(np.random.default_rng(3), 400, 1, 3, max_leaves=12)
    ds = build_ncp_data(data)
    fresh, _ = kab._stars("kmember")(data, ds, k)
    got = fresh(np.random.default_rng(7), lambda: False)
    cost = "height" if k >= kab.LARGE_K else "ncp"
    assert kab.star_cost(k) == cost
    want = StarMaker(data, build_ncp_data(data, cost=cost), k).fresh(np.random.default_rng(7))
    other = StarMaker(data, build_ncp_data(data, cost="ncp" if cost == "height" else "height"),
                      k).fresh(np.random.default_rng(7))
    assert np.array_equal(got, want)
    assert not naive.same_partition(want, other)  # the case tells the two costs apart
    info = kab.run(data, k, 0, {"stars": 3, "iterations": 2, "init": "kmember"}).info
    assert info["star_cost"] == cost
    assert info["best_fitness"] == pytest.approx(fitness(ds, *dense_labels(
        kab.run(data, k, 0, {"stars": 3, "iterations": 2, "init": "kmember"}).ec), k, 4))


@pytest.mark.parametrize("k", [kab.MID_K, kab.LARGE_K])
def test_kab_budget_bounds_the_reborn_share_and_the_moves(k):
    """From MID_K on the search runs on a smaller budget (LARGE_K_BUDGET from LARGE_K): reborn
    shares drawn in its range, and no move tries more than ``patience`` clusters in a row
    without an exchange (so a move that kept nothing tried at most ``patience`` clusters)."""
    rng = np.random.default_rng(5)
    data = naive.random_qidata(rng, 3000, 2, 2, max_leaves=8)
    budget = kab.budget(k)
    assert budget == (kab.LARGE_K_BUDGET if k >= kab.LARGE_K else kab.MID_K_BUDGET)
    assert kab.budget(kab.MID_K - 1) == _blackhole.BUDGET
    assert budget.patience < _blackhole.BUDGET.patience
    info = kab.run(data, k, 1, {"stars": 3, "iterations": 6, "init": "kmember"}).info
    reborn = [t["reborn_share"] for t in info["trace"] if t.get("replaced")]
    assert reborn and all(budget.rebirth_share[0] <= x <= budget.rebirth_share[1]
                          for x in reborn)
    idle = [t for t in info["trace"] if "clusters_tried" in t
            and t["relocations"] + t["swaps"] == 0]
    assert all(t["clusters_tried"] <= budget.patience for t in idle)
