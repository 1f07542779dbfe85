"""oka and ika: properties on random data, agreement with naive implementations of their
descriptions (on tie-free data), and the SQL entry point."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import naive
from kanon_duckdb.algorithms.clustering import ika, oka

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
LABELS = {"oka": oka.oka_labels, "ika": ika.ika_labels}
NAIVE = {"oka": naive.naive_oka, "ika": naive.naive_ika}


@st.composite
def cases(draw, max_n=60):
    _, data, k = naive.draw_qidata_k(draw, max_n)
    return data, k, draw(st.integers(0, 1000))


@pytest.mark.parametrize("algo", ["oka", "ika"])
@SETTINGS
@given(case=cases())
def test_properties(algo, case):
    data, k, seed = case
    ec = LABELS[algo](data, k, seed)
    naive.check_truthful(data, ec, k)
    assert np.bincount(ec).sum() == data.n
    assert len(np.unique(ec)) == max(1, data.n // k)  # floor(n/k) clusters, none lost
    assert np.array_equal(ec, LABELS[algo](data, k, seed))


@pytest.mark.parametrize("algo", ["oka", "ika"])
@SETTINGS
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(2, 40), dn=st.integers(1, 3),
       k=st.integers(2, 6))
def test_matches_naive_without_ties(algo, seed, n, dn, k):
    data = naive.random_continuous_qidata(np.random.default_rng(seed), n, dn)
    k = min(k, n)
    assert naive.same_partition(LABELS[algo](data, k, seed), NAIVE[algo](data, k, seed))


@pytest.mark.parametrize("algo", ["oka", "ika"])
def test_single_class_when_n_below_2k(algo):
    data = naive.random_qidata(np.random.default_rng(1), 9, 1, 1)
    assert len(set(LABELS[algo](data, 5, 0).tolist())) == 1


def test_ika_centroids_spread_farthest_first():
    """Two far-apart groups of k: the second centroid is taken from the other group."""
    num = np.array([[0.0], [0.01], [0.02], [1.0], [0.99], [0.98]])
    data = naive.random_continuous_qidata(np.random.default_rng(0), 6, 1)
    data = type(data)(**{**data.__dict__, "num": num, "num_lo": num.min(0), "num_hi": num.max(0)})
    ec = ika.ika_labels(data, 3, 0)
    assert len({ec[0], ec[1], ec[2]}) == 1 and len({ec[3], ec[4], ec[5]}) == 1 and ec[0] != ec[3]


@pytest.mark.parametrize("algo", ["oka", "ika"])
def test_through_sql(algo):
    import kanon_duckdb
    con = kanon_duckdb.connect()
    try:
        rng = np.random.default_rng(0)
        rows = [(int(a), ["x", "y", "z"][int(c)], i) for i, (a, c) in
                enumerate(zip(rng.integers(18, 90, 40), rng.integers(0, 3, 40)))]
        con.execute("CREATE TABLE t (age INTEGER, g VARCHAR, payload INTEGER)")
        con.executemany("INSERT INTO t VALUES (?, ?, ?)", rows)
        out = con.sql(f"FROM k_anonymize('t', k := 4, algo := '{algo}', qi := ['age', 'g'], seed := 3)")
        res = out.fetchall()
        cols = out.columns
        assert len(res) == 40
        assert min(r[cols.index("ec_size")] for r in res) >= 4
        assert sorted(r[cols.index("payload")] for r in res) == list(range(40))
    finally:
        con.close()
