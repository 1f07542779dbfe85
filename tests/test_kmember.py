"""kmember (greedy k-member clustering): properties on random data, agreement with a naive
implementation of the pseudo-code, and the SQL entry point."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import naive
from kanon_duckdb.algorithms.clustering import kmember

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def cases(draw, max_n=60):
    _, data, k = naive.draw_qidata_k(draw, max_n)
    return data, k, draw(st.integers(0, 1000))


@SETTINGS
@given(cases())
def test_kmember_properties(case):
    data, k, seed = case
    ec = kmember.kmember_labels(data, k, seed)
    naive.check_truthful(data, ec, k)       # every class >= k, published values cover the rows
    sizes = np.bincount(ec)
    assert sizes.sum() == data.n             # rows preserved, each in exactly one class
    if data.n >= k:
        assert sizes.max() <= max(2 * k - 1, k)  # Byun: sizes in [k, 2k-1]
    assert np.array_equal(ec, kmember.kmember_labels(data, k, seed))  # deterministic


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(2, 40), st.integers(1, 3), st.integers(2, 6),
       st.sampled_from([None, 1, 2]))
def test_kmember_matches_naive_pseudocode_without_ties(seed, n, dn, k, buffer):
    data = naive.random_continuous_qidata(np.random.default_rng(seed), n, dn)
    k = min(k, n)
    assert naive.same_partition(kmember.kmember_labels(data, k, seed, buffer=buffer),
                                naive.naive_kmember(data, k, seed, kmember.DEFAULT_SEED_CHOICE,
                                                    kmember.DEFAULT_COST))


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(2, 40), st.integers(1, 3), st.integers(2, 6),
       st.sampled_from(["furthest", "random"]))
def test_kmember_seed_choices_match_naive_pseudocode(seed, n, dn, k, seed_choice):
    data = naive.random_continuous_qidata(np.random.default_rng(seed), n, dn)
    k = min(k, n)
    got = kmember.kmember_labels(data, k, seed, seed_choice=seed_choice)
    assert naive.same_partition(got, naive.naive_kmember(data, k, seed, seed_choice))


def _seed_whose_first_random_seed_is(n, record):
    """A ``seed`` for which kmember_labels(seed_choice='random') starts its first cluster at
    ``record`` (the draws: r0, then the permutation giving the seed order)."""
    for s in range(10_000):
        g = np.random.default_rng(s)
        g.integers(n)
        if g.permutation(n)[0] == record:
            return s
    raise AssertionError("no seed found")


def _height_vs_ncp_data():
    """x0 (0, a1), x1 (0.3, a2), x2 (0, b), x3 (1, a3); tree * -> {A -> a1..a4, b}.

    From the cluster {x0}: x1 costs 0.3 + NCP(A) = 0.3 + 4/5 = 1.1 with the leaf-count cost and
    0.3 + height(A)/height(*) = 0.3 + 1/2 = 0.8 with the height cost (Def. 5); x2 costs 0 + 1."""
    from kanon_duckdb.qidata import QIData
    from kanon_duckdb.taxonomy.tree import build_index
    edges = [("*", None), ("A", "*"), ("a1", "A"), ("a2", "A"), ("a3", "A"), ("a4", "A"), ("b", "*")]
    t = build_index("c", edges)
    cat = np.array([[t.leaf_of_label[x]] for x in ("a1", "a2", "b", "a3")], dtype=np.int32)
    num = np.array([[0.0], [0.3], [0.0], [1.0]])
    return QIData(n=4, num=num, num_null=np.zeros((4, 1), bool), num_lo=np.array([0.0]),
                  num_hi=np.array([1.0]), num_is_int=np.zeros(1, bool), cat=cat, trees=[t],
                  num_names=["x"], cat_names=["c"])


@pytest.mark.parametrize("cost, want", [("height", [0, 0, 1, 1]), ("ncp", [0, 1, 0, 1])])
def test_kmember_table_iii_cost_hand_computed(cost, want):
    data = _height_vs_ncp_data()
    seed = _seed_whose_first_random_seed_is(4, 0)
    ec = kmember.kmember_labels(data, 2, seed, seed_choice="random", cost=cost)
    assert naive.same_partition(ec, want)
    assert naive.same_partition(naive.naive_kmember(data, 2, seed, "random", cost), want)


def test_kmember_bad_variant_is_named_error():
    from kanon_duckdb.errors import InvalidParameterError
    data = naive.random_continuous_qidata(np.random.default_rng(0), 10, 1)
    with pytest.raises(InvalidParameterError, match="seed_choice must be one of furthest, random"):
        kmember.kmember_labels(data, 2, 0, seed_choice="nearest")
    with pytest.raises(InvalidParameterError, match="cost must be one of ncp, height"):
        kmember.kmember_labels(data, 2, 0, cost="leaves")


def test_kmember_lazy_buffer_rescans_match_naive():
    """k large relative to the buffer forces refills (tau exceeded): result still exact."""
    data = naive.random_continuous_qidata(np.random.default_rng(7), 300, 2)
    info = {}
    ec = kmember.kmember_labels(data, 60, 3, info=info, buffer=5)
    assert info["scans"] > info["n_clusters"]  # some refills happened
    assert naive.same_partition(ec, naive.naive_kmember(data, 60, 3, kmember.DEFAULT_SEED_CHOICE,
                                                        kmember.DEFAULT_COST))


def test_kmember_single_class_when_n_below_2k():
    data = naive.random_qidata(np.random.default_rng(1), 9, 1, 1)
    assert len(set(kmember.kmember_labels(data, 5, 0).tolist())) == 1


def test_kmember_progress_reaches_one():
    data = naive.random_qidata(np.random.default_rng(2), 200, 2, 2)
    seen = []
    kmember.kmember_labels(data, 4, 0, progress=seen.append)
    assert seen and seen[-1] == pytest.approx(1.0) and all(0 <= f <= 1 for f in seen)


def test_kmember_through_sql():
    import kanon_duckdb
    con = kanon_duckdb.connect()
    try:
        rng = np.random.default_rng(0)
        rows = [(int(a), str(b), ["x", "y", "z"][int(c)], i) for i, (a, b, c) in
                enumerate(zip(rng.integers(18, 90, 50), rng.integers(0, 5, 50), rng.integers(0, 3, 50)))]
        con.execute("CREATE TABLE t (age INTEGER, zip VARCHAR, g VARCHAR, payload INTEGER)")
        con.executemany("INSERT INTO t VALUES (?, ?, ?, ?)", rows)
        out = con.sql("FROM k_anonymize('t', k := 3, algo := 'kmember', qi := ['age', 'zip', 'g'])")
        res = out.fetchall()
        cols = out.columns
        assert len(res) == 50
        sizes = [r[cols.index("ec_size")] for r in res]
        assert min(sizes) >= 3 and max(sizes) <= 5
        assert sorted(r[cols.index("payload")] for r in res) == list(range(50))
        for r in res:  # truthful: raw age inside the published range
            assert r[cols.index("age_min")] <= rows[r[cols.index("payload")]][0] <= r[cols.index("age_max")]
        runs = con.sql("SELECT algo, n_rows FROM kanon_runs").fetchall()
        assert ("kmember", 50) in runs
    finally:
        con.close()


def test_kmember_table_iii_from_sql():
    """seed_choice / cost reach the kernel from SQL and are recorded with the run."""
    import json

    import kanon_duckdb
    con = kanon_duckdb.connect()
    try:
        con.execute("CREATE TABLE t AS SELECT (i * 37) % 90 AS age, ['a', 'b', 'c'][1 + i % 3] AS g "
                    "FROM range(60) r(i)")
        con.execute("CREATE TABLE o AS FROM k_anonymize('t', k := 4, algo := 'kmember', "
                    "qi := ['age', 'g'], seed_choice := 'random', cost := 'height')")
        assert con.sql("SELECT count(*), min(ec_size), max(ec_size) FROM o").fetchall() == [(60, 4, 4)]
        assert con.sql("SELECT k_anonymity('o', ['age_min', 'age_max', 'g'])").fetchall()[0][0] >= 4
        params = json.loads(con.sql("SELECT params FROM kanon_runs").fetchall()[0][0])
        assert (params["seed_choice"], params["cost"]) == ("random", "height")
        with pytest.raises(Exception, match="'seed_choice' of algo 'kmember' must be one of 'furthest', 'random'"):
            con.sql("FROM k_anonymize('t', k := 4, algo := 'kmember', qi := ['age', 'g'], "
                    "seed_choice := 'nearest')").fetchall()
    finally:
        con.close()
