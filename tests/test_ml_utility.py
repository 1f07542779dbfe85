"""classification_utility: encoding on hand-made trees, the leak-free split, SQL end to end."""
import builtins

import numpy as np
import pyarrow as pa
import pytest

import kanon_duckdb
from kanon_duckdb import ml_utility as mu
from kanon_duckdb.errors import InvalidParameterError
from kanon_duckdb.taxonomy.tree import build_index

pytest.importorskip("sklearn")

QI = ["age", "workclass", "education", "marital_status", "occupation", "race", "sex",
      "native_country"]


def load_adult_sample(con, n=2000):
    """Table ``adult_s``: the first n rows of the packaged Adult data (with its taxonomies)."""
    kanon_duckdb.load_example(con, "adult")
    con.execute(f"CREATE OR REPLACE TABLE adult_s AS SELECT * FROM adult WHERE rowid < {n}")


@pytest.fixture(scope="module")
def adult_con():
    con = kanon_duckdb.connect()
    load_adult_sample(con)
    con.execute("CREATE TABLE adult_k5 AS FROM k_anonymize('adult_s', k := 5, qi := ?)", [QI])
    yield con
    con.close()


# --------------------------------------------------------------------------- encoding

TREE = build_index("c", [("A", "AB"), ("B", "AB"), ("C", "CD"), ("D", "CD"), ("AB", "*"),
                         ("CD", "*"), ("*", None)])


def test_encode_ordinal_generalized_label_is_leaf_range_midpoint():
    col = pa.chunked_array([pa.array(["A", "AB", "CD", "*", "D", None])])
    x = mu._encode_tree_column(col, TREE, "c", onehot=False, leaves_only=False)
    assert x.shape == (6, 1)
    np.testing.assert_allclose(x[:, 0], [0.0, 0.5, 2.5, 1.5, 3.0, 1.5])


def test_encode_onehot_spreads_uniformly_over_leaves():
    col = pa.chunked_array([pa.array(["B", "AB", "*"])])
    x = mu._encode_tree_column(col, TREE, "c", onehot=True, leaves_only=False)
    np.testing.assert_allclose(x, [[0, 1, 0, 0], [0.5, 0.5, 0, 0], [0.25] * 4])
    np.testing.assert_allclose(x.sum(axis=1), 1.0)


def test_encode_raw_value_must_be_a_leaf():
    col = pa.chunked_array([pa.array(["AB"])])
    with pytest.raises(InvalidParameterError, match="not a leaf"):
        mu._encode_tree_column(col, TREE, "c", onehot=False, leaves_only=True)
    with pytest.raises(InvalidParameterError, match="'Z'"):
        mu._encode_tree_column(pa.chunked_array([pa.array(["Z"])]), TREE, "c", False, False)


# --------------------------------------------------------------------------- split


def _tables(seed):
    rng = np.random.default_rng(seed)
    n = 500
    key = rng.integers(0, 200, n)          # duplicates on purpose
    lab = rng.choice(["x", "y"], n)
    raw = pa.table({"key": pa.array(key.astype(float)), "lab": pa.array(lab)})
    perm = rng.permutation(n)
    anon = raw.take(pa.array(perm))        # same rows, another order
    return raw, anon


def test_split_keeps_equal_keys_on_one_side_and_ignores_row_order():
    raw, anon = _tables(1)
    h_raw, h_anon = mu.key_hashes(raw, anon, ["key", "lab"], seed=7)
    test_raw = mu._unit(h_raw) < 0.3
    train_anon = mu._unit(h_anon) >= 0.3
    keys = lambda t, m: {(k, l) for k, l, keep in zip(t.column("key").to_pylist(),
                                                      t.column("lab").to_pylist(), m) if keep}
    assert keys(raw, test_raw).isdisjoint(keys(anon, train_anon))
    # the anonymized rows cover exactly the raw rows of the train side (same multiset)
    assert sorted(zip(*[anon.filter(pa.array(train_anon)).column(c).to_pylist() for c in ("key", "lab")])) == \
        sorted(zip(*[raw.filter(pa.array(~test_raw)).column(c).to_pylist() for c in ("key", "lab")]))
    assert 0.2 < test_raw.mean() < 0.4


def test_split_is_deterministic_for_a_seed_and_changes_with_it():
    raw, anon = _tables(2)
    a = mu.key_hashes(raw, anon, ["key", "lab"], seed=3)[0]
    b = mu.key_hashes(raw, anon, ["key", "lab"], seed=3)[0]
    c = mu.key_hashes(raw, anon, ["key", "lab"], seed=4)[0]
    np.testing.assert_array_equal(a, b)
    assert (mu._unit(a) < 0.3).tolist() != (mu._unit(c) < 0.3).tolist()


# --------------------------------------------------------------------------- end to end


def test_sql_macro_returns_one_row_per_model(adult_con):
    rows = adult_con.execute(
        "SELECT model, accuracy_anon, f1_anon, accuracy_raw, f1_raw, n_train, n_test, split "
        "FROM classification_utility('adult_s', 'adult_k5', 'income')").fetchall()
    assert [r[0] for r in rows] == ["knn", "svm", "rf", "nb"]
    for _, acc_a, f1_a, acc_r, f1_r, n_train, n_test, split in rows:
        assert 0.6 < acc_a <= 1 and 0.6 < acc_r <= 1
        assert 0 <= f1_a <= 1 and 0 <= f1_r <= 1
        assert split == "disjoint"
        assert 400 < n_test < 800 and n_train + n_test == 2000
    # raw Adult baselines are well above the majority rate (about 0.75)
    assert max(r[3] for r in rows) > 0.78


@pytest.mark.parametrize("where", ["connection", "cursor"])
def test_sql_macro_reads_registered_objects_and_views_as_the_base_tables(adult_con, where,
                                                                         tmp_path):
    """classification_utility takes the relations the metric macros take: a registered
    DataFrame / Arrow table (on the connection or a cursor of it), a view, a Parquet file;
    each gives the base tables' value (same rows, same seed)."""
    q = ("SELECT model, accuracy_anon, f1_anon, accuracy_raw, f1_raw, n_train, n_test "
         "FROM classification_utility({raw}, {anon}, 'income', models := ['nb', 'dt'])")
    want = adult_con.execute(q.format(raw="'adult_s'", anon="'adult_k5'")).fetchall()
    c = adult_con if where == "connection" else adult_con.cursor()
    c.register("raw_df", adult_con.sql("FROM adult_s").df())
    c.register("anon_arrow", adult_con.sql("FROM adult_k5").to_arrow_table())
    assert c.execute(q.format(raw="'raw_df'", anon="'anon_arrow'")).fetchall() == want
    c.unregister("raw_df")
    c.unregister("anon_arrow")
    adult_con.execute("CREATE OR REPLACE VIEW adult_k5_v AS FROM adult_k5")
    path = str(tmp_path / "raw.parquet")
    adult_con.execute(f"COPY adult_s TO '{path}'")
    assert adult_con.execute(q.format(raw=f"'{path}'", anon="'adult_k5_v'")).fetchall() == want


def test_same_seed_same_result_other_seed_other_split(adult_con):
    q = ("SELECT model, accuracy_anon, f1_anon, accuracy_raw, n_test FROM classification_utility("
         "'adult_s', 'adult_k5', 'income', models := ['rf', 'nb'], seed := ?)")
    a = adult_con.execute(q, [11]).fetchall()
    assert a == adult_con.execute(q, [11]).fetchall()
    assert a != adult_con.execute(q, [12]).fetchall()


@pytest.mark.parametrize("encoding", ["ordinal", "onehot"])
def test_ungeneralized_table_gives_the_raw_accuracy(adult_con, encoding):
    # A "k = 1" publication built by hand: point ranges, leaf labels, rows in another order.
    adult_con.execute("CREATE OR REPLACE TABLE ident AS SELECT * EXCLUDE (age), age AS age_min, "
                      "age AS age_max FROM adult_s ORDER BY hash(rowid)")
    rows = mu.classification_utility(adult_con, "adult_s", "ident", "income", models=["nb"],
                                     qi=["age", "sex", "race", "education"], encoding=encoding)
    assert rows[0]["split"] == "disjoint"
    assert rows[0]["accuracy_anon"] == pytest.approx(rows[0]["accuracy_raw"], abs=1e-3)
    assert rows[0]["f1_anon"] == pytest.approx(rows[0]["f1_raw"], abs=1e-2)


def test_features_default_to_the_published_qis(adult_con):
    plan = mu.plan_utility(adult_con, "adult_s", "adult_k5", "income")
    raw, anon = mu._read(adult_con, plan, False), mu._read(adult_con, plan, True)
    _, _, names = mu.encode_features(adult_con, plan, raw, anon, "ordinal")
    assert sorted(names) == sorted(QI)
    xr, xa, names_all = mu.encode_features(adult_con, plan, raw, anon, "ordinal", "all")
    extra = [c for c in plan.passthrough if c != "income"]
    assert sorted(names_all) == sorted(QI + extra) and "fnlwgt" in names_all
    assert xr.shape == xa.shape == (2000, len(QI) + len(extra))


def test_features_all_differs_from_qi_in_sql(adult_con):
    q = ("SELECT accuracy_anon, accuracy_raw FROM classification_utility('adult_s', 'adult_k5', "
         "'income', models := ['nb'], features := ?)")
    qi_only, everything = adult_con.execute(q, ["qi"]).fetchall(), adult_con.execute(q, ["all"]).fetchall()
    assert qi_only == adult_con.execute(q.replace(", features := ?", "")).fetchall()  # the default
    assert qi_only != everything


def test_onehot_encoding_runs_and_matches_model_list(adult_con):
    rows = mu.classification_utility(adult_con, "adult_s", "adult_k5", "income",
                                     models=["lr", "dt"], encoding="onehot", test_fraction=0.25)
    assert [r["model"] for r in rows] == ["lr", "dt"]
    assert all(0.6 < r["accuracy_anon"] <= 1 for r in rows)


def test_without_distinct_keys_falls_back_to_overlap_split():
    con = kanon_duckdb.connect()
    try:
        con.execute("CREATE TABLE t AS SELECT (i % 50)::INTEGER AS a, (i % 7)::INTEGER AS b, "
                    "CASE WHEN i % 50 < 25 THEN 'lo' ELSE 'hi' END AS y FROM range(400) r(i)")
        con.execute("CREATE TABLE t3 AS FROM k_anonymize('t', k := 3, qi := ['a', 'b'])")
        rows = mu.classification_utility(con, "t", "t3", "y", models=["dt"])
        assert rows[0]["split"] == "overlap"
        assert rows[0]["n_test"] == 120 and rows[0]["n_train"] == 400
        assert rows[0]["accuracy_raw"] > 0.9
    finally:
        con.close()


# --------------------------------------------------------------------------- errors


@pytest.mark.parametrize("kwargs, match", [
    ({"models": ["xgb"]}, "unknown model"),
    ({"models": []}, "models is empty"),
    ({"test_fraction": 1.0}, "test_fraction"),
    ({"encoding": "binary"}, "encoding"),
    ({"features": "some"}, "features='some'; choose 'qi'"),
])
def test_bad_parameters_are_named(adult_con, kwargs, match):
    with pytest.raises(InvalidParameterError, match=match):
        mu.classification_utility(adult_con, "adult_s", "adult_k5", "income", **kwargs)


def test_label_that_is_a_qi_is_refused(adult_con):
    with pytest.raises(InvalidParameterError, match="quasi-identifier"):
        mu.classification_utility(adult_con, "adult_s", "adult_k5", "sex")


def test_table_without_run_needs_qi(adult_con):
    adult_con.execute("CREATE OR REPLACE TABLE plain AS SELECT * EXCLUDE (kanon_run) FROM adult_k5")
    with pytest.raises(InvalidParameterError, match="pass qi"):
        mu.classification_utility(adult_con, "adult_s", "plain", "income", models=["nb"])
    rows = mu.classification_utility(adult_con, "adult_s", "plain", "income", models=["nb"], qi=QI)
    assert rows[0]["split"] == "disjoint"


def test_sql_error_reaches_the_user(adult_con):
    with pytest.raises(Exception, match="unknown model"):
        adult_con.execute("FROM classification_utility('adult_s', 'adult_k5', 'income', "
                          "models := ['nope'])").fetchall()


def test_missing_sklearn_names_the_extra(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "sklearn" or name.startswith("sklearn."):
            raise ImportError("No module named 'sklearn'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(InvalidParameterError, match=r"kanon-duckdb\[ml\]"):
        mu.require_sklearn()
