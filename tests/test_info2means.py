"""info2means: weights by logistic regression, information-quantity loss against a brute-force
reference, the mean-center 2-means, properties on random data, and the SQL entry point."""
import math

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import naive
from kanon_duckdb.algorithms.clustering import info2means
from kanon_duckdb.algorithms.clustering._ncp import build_ncp_data
from kanon_duckdb.algorithms.clustering.info2means_kernels import info_loss_labels, two_means
from kanon_duckdb.generalize import generalize

SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def test_logistic_regression_matches_sklearn():
    from sklearn.linear_model import LogisticRegression

    rng = np.random.default_rng(0)
    X = rng.normal(size=(400, 3))
    y = (X @ np.array([1.5, -0.5, 0.0]) + rng.logistic(size=400) > 0).astype(float)
    ours = info2means.logistic_regression(X, y)
    ref = LogisticRegression(C=1e8, max_iter=10_000, tol=1e-12).fit(X, y).coef_[0]
    assert ours == pytest.approx(ref, rel=1e-3, abs=1e-4)


def test_weights_follow_the_sensitive_attribute():
    rng = np.random.default_rng(1)
    data = naive.random_qidata(rng, 500, 2, 2, max_leaves=6, max_value=100)
    income = np.where(data.num[:, 1] + rng.normal(0, 5, 500) > 50, ">50K", "<=50K")
    w, info = info2means.sensitive_weights(data, pa.array(income))
    assert w.sum() == pytest.approx(1.0) and (w >= 0).all()
    assert int(np.argmax(w)) == 1  # n1 drives the sensitive attribute
    assert "logistic regression" in info["weights_source"]


def test_categorical_weights_use_target_encoding():
    rng = np.random.default_rng(2)
    data = naive.random_qidata(rng, 600, 1, 2, max_leaves=6, max_value=100)
    y = np.where(data.cat[:, 1] % 2 == 0, "a", "b")  # depends on categorical c1 only
    w, _ = info2means.sensitive_weights(data, pa.array(y))
    assert int(np.argmax(w)) == 2


def test_missing_or_constant_sensitive_gives_equal_weights():
    data = naive.random_qidata(np.random.default_rng(3), 50, 1, 2)
    w, info = info2means.sensitive_weights(data, None)
    assert w.tolist() == pytest.approx([1 / 3] * 3)
    assert "equal" in info["weights_source"]
    w, info = info2means.sensitive_weights(data, pa.array(["x"] * 50))
    assert w.tolist() == pytest.approx([1 / 3] * 3) and "equal" in info["weights_source"]
    part = info2means.run(data, 3, 0, {"sensitive": "income"})
    assert "equal" in part.info["weights_source"]
    assert part.info["weight_names"] == ["n0", "c0", "c1"]


def test_multiclass_targets():
    col = pa.array([1.0, 2.0, 3.0, 4.0, None])
    y, valid, desc = info2means.binary_target(col)
    assert valid.tolist() == [True] * 4 + [False] and y[:4].tolist() == [0, 0, 1, 1]
    y, valid, desc = info2means.binary_target(pa.array(["a", "b", "b", "c"]))
    assert y.tolist() == [0, 1, 1, 0] and "'b' vs rest" in desc


def naive_info_loss(data, ec, weights):
    """Eq. 2-4 of the paper, straight from the formulas (integer numeric QIs: x = 0)."""
    total = 0.0
    for c in np.unique(ec):
        rows = np.flatnonzero(ec == c)
        n = rows.size
        for j in range(data.dn):
            R = data.num_hi[j] - data.num_lo[j] + 1
            if R <= 1:
                continue
            if data.num_null[rows, j].any():
                total += weights[j] * n
                continue
            span = data.num[rows, j].max() - data.num[rows, j].min()
            total += weights[j] * n * math.log(span + 1) / math.log(R)
        for j, t in enumerate(data.trees):
            L = t.n_leaves[0]
            if L <= 1:
                continue
            u = naive._lca_by_ancestor_sets(t, data.cat[rows, j])
            total += weights[data.dn + j] * n * math.log(t.n_leaves[u]) / math.log(L)
    return total


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.integers(0, 2), st.integers(0, 2))
def test_info_loss_matches_formula(seed, n, dn, dc):
    if dn + dc == 0:
        dc = 1
    rng = np.random.default_rng(seed)
    data = naive.random_qidata(rng, n, dn, dc, null_frac=0.1, max_value=30)
    w = rng.random(dn + dc)
    w /= w.sum()
    ds = build_ncp_data(data, weights=w)
    iq_num, iq_node = info2means._iq_tables(data, ds, w)
    ec = rng.integers(0, 4, n)
    ec = np.unique(ec, return_inverse=True)[1].astype(np.int64)
    got = info_loss_labels(ds, ec, int(ec.max()) + 1, iq_num, iq_node)
    assert got == pytest.approx(naive_info_loss(data, ec, w), rel=1e-9, abs=1e-12)


def test_decimal_step_of_float_columns():
    from kanon_duckdb.qidata import QIData

    num = np.array([[0.5], [1.25], [2.0]])
    data = QIData(n=3, num=num, num_null=np.zeros((3, 1), bool), num_lo=np.array([0.5]),
                  num_hi=np.array([2.0]), num_is_int=np.array([False]),
                  cat=np.zeros((3, 0), np.int32), trees=[], num_names=["x"], cat_names=[])
    ds = build_ncp_data(data)
    iq_num, _ = info2means._iq_tables(data, ds, np.array([1.0]))
    assert iq_num[0, 1] == 100.0  # step 0.01 -> x = 2
    assert iq_num[0, 2] == pytest.approx(1 / math.log(151))  # |R| = 150 steps + 1


def test_two_means_separates_two_blobs_and_ignores_3_sigma_outliers():
    rng = np.random.default_rng(4)
    a = rng.normal(10, 1, (30, 2))
    b = rng.normal(40, 1, (30, 2))
    pts = np.vstack([a, b])
    data = naive.random_continuous_qidata(rng, 60, 2)
    data = data.__class__(**{**data.__dict__, "num": pts, "num_lo": pts.min(0), "num_hi": pts.max(0)})
    ds = build_ncp_data(data, weights=np.array([0.5, 0.5]))
    side = np.zeros(60, bool)
    assert two_means(ds, np.arange(60, dtype=np.int64), 30, side)
    assert naive.same_partition(side, np.r_[np.zeros(30), np.ones(30)])


def test_two_means_refuses_identical_rows():
    data = naive.random_qidata(np.random.default_rng(0), 10, 1, 1, max_value=0, max_leaves=1)
    ds = build_ncp_data(data)
    assert not two_means(ds, np.arange(10, dtype=np.int64), 30, np.zeros(10, bool))


@st.composite
def cases(draw, max_n=60):
    rng, data, k = naive.draw_qidata_k(draw, max_n, max_k=12, max_dn=2)
    if draw(st.booleans()):
        y = rng.integers(0, 2, data.n)
        data = data.__class__(**{**data.__dict__, "extra": {"income": pa.array(y)}})
    return data, k


@SETTINGS
@given(cases())
def test_info2means_properties(case):
    data, k = case
    part = info2means.run(data, k, 0, {"sensitive": "income"})
    naive.check_truthful(data, part.ec, k)
    g = generalize(data, part)
    for j in range(data.dn):
        lo, hi = g.lo[g.ec, j], g.hi[g.ec, j]
        assert (np.isnan(lo) | ((lo <= data.num[:, j]) & (data.num[:, j] <= hi))).all()
    assert len(part.info["weights"]) == data.dn + data.dc
    assert sum(part.info["weights"]) == pytest.approx(1.0)
    assert np.array_equal(part.ec, info2means.run(data, k, 5, {"sensitive": "income"}).ec)


@SETTINGS
@given(st.integers(0, 2**32 - 1), st.integers(1, 6))
def test_info2means_sizes_below_2k_on_distinct_rows(seed, k):
    data = naive.random_continuous_qidata(np.random.default_rng(seed), 80, 2)
    sizes = np.bincount(info2means.run(data, k, 0, {"sensitive": ""}).ec)
    assert sizes.min() >= k and sizes.max() <= 2 * k - 1


def test_info2means_through_sql_records_weights():
    import kanon_duckdb

    con = kanon_duckdb.connect()
    try:
        con.sql("CREATE TABLE t AS SELECT i AS id, 20 + (i * 37) % 50 AS age, (i * 11) % 7 AS zip, "
                "CASE WHEN i % 3 = 0 THEN 'a' ELSE 'b' END AS g, "
                "CASE WHEN 20 + (i * 37) % 50 > 40 THEN '>50K' ELSE '<=50K' END AS income "
                "FROM range(90) r(i)")
        rows = con.sql("FROM k_anonymize('t', k := 4, algo := 'info2means', "
                       "qi := ['age', 'zip', 'g'], sensitive := 'income')").fetchall()
        assert len(rows) == 90
        w = con.sql("SELECT weights FROM kanon_runs WHERE algo = 'info2means'").fetchall()[0][0]
        assert len(w) == 3 and sum(w) == pytest.approx(1.0)
        assert w[0] == max(w)  # age decides income here
    finally:
        con.close()
