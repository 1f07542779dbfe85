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
                                naive.naive_kmember(data, k, seed))


def test_kmember_lazy_buffer_rescans_match_naive():
    """k large relative to the buffer forces refills (tau exceeded): result still exact."""
    data = naive.random_continuous_qidata(np.random.default_rng(7), 300, 2)
    info = {}
    ec = kmember.kmember_labels(data, 60, 3, info=info, buffer=5)
    assert info["scans"] > info["n_clusters"]  # some refills happened
    assert naive.same_partition(ec, naive.naive_kmember(data, 60, 3))


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
