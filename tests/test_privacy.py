"""Privacy checks in SQL (sql/privacy.sql): k_anonymity, l_diversity, t_closeness,
reidentification_risk on raw and anonymized tables; hand-computed values, a brute-force reference
on random tables, and pycanon on Adult when it is installed."""
import math
import random

import pytest

import kanon_duckdb

import naive_metrics as naive
from test_metrics import ROWS, SUPPRESSED, con, make, one  # noqa: F401 (con is a fixture)


QI = "['age', 'job']"


def test_k_anonymity_on_anonymized_table_maps_numeric_qi_to_range(con):
    make(con, "a", ROWS)
    assert one(con, f"k_anonymity('a', {QI})") == 3
    assert one(con, "k_anonymity('a', ['job'])") == 3


def test_k_anonymity_on_raw_table(con):
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES (1, 'a'), (1, 'a'), (2, 'a'), (2, 'b'), "
                "(2, 'b'), (2, 'b')) t(x, y)")
    assert one(con, "k_anonymity('r', ['x'])") == 2
    assert one(con, "k_anonymity('r', ['x', 'y'])") == 1
    assert one(con, "k_anonymity('r', ['y'])") == 3


def test_suppressed_rows_form_no_class(con):
    make(con, "s", ROWS + SUPPRESSED)  # 2 suppressed rows would be a class of 2
    assert one(con, f"k_anonymity('s', {QI})") == 3
    risk = one(con, f"reidentification_risk('s', {QI})")
    assert risk["records"] == 6 and risk["classes"] == 2


def test_l_diversity_hand_computed(con):
    make(con, "a", ROWS)
    # class 0: <=50K, >50K, >50K; class 1: <=50K x3
    assert one(con, f"l_diversity('a', {QI}, 'income')") == {"distinct": 1, "entropy": 1.0,
                                                                "recursive": None}
    got = one(con, "l_diversity('a', ['age'], 'id')")
    assert got["distinct"] == 3 and got["entropy"] == pytest.approx(3.0)


def test_l_diversity_entropy_of_mixed_class(con):
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES (1, 'a'), (1, 'b'), (1, 'b'), (1, 'c')) t(x, s)")
    h = -(0.25 * math.log(0.25) * 2 + 0.5 * math.log(0.5))
    assert one(con, "l_diversity('r', ['x'], 's')") == {"distinct": 3, "entropy": pytest.approx(math.exp(h)),
                                                     "recursive": None}


def test_t_closeness_equal_distance_hand_computed(con):
    make(con, "a", ROWS)
    # table: <=50K 4/6, >50K 2/6; class 0 (1/3, 2/3), class 1 (1, 0): EMD 1/3 each
    assert one(con, f"t_closeness('a', {QI}, 'income')") == pytest.approx(1 / 3)


def test_t_closeness_ordered_distance_hand_computed(con):
    # Li et al.'s example shape: values 1..3, table uniform; class A = {1, 1}, class B = {2, 3, 3, 2}
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES ('A', 1), ('A', 1), ('B', 2), ('B', 3), "
                "('B', 3), ('B', 2)) t(g, s)")
    # p = (2/6, 2/6, 2/6); A: q = (1, 0, 0) -> cum (2/3, 1/3, 0) -> 1/2 * 1 = 0.5
    # B: q = (0, 1/2, 1/2) -> cum (-1/3, -1/6, 0) -> 1/2 * 1/2 = 0.25
    assert one(con, "t_closeness('r', ['g'], 's')") == pytest.approx(0.5)
    con.execute("CREATE TABLE c AS SELECT g, s::VARCHAR AS s FROM r")   # categorical: equal distance
    # A: 1/2 (2/3 + 1/3 + 1/3) = 2/3
    assert one(con, "t_closeness('c', ['g'], 's')") == pytest.approx(2 / 3)


def test_t_closeness_single_value_is_zero(con):
    con.execute("CREATE TABLE r AS SELECT i % 2 AS g, 7 AS s FROM range(6) t(i)")
    assert one(con, "t_closeness('r', ['g'], 's')") == 0.0


def test_reidentification_risk_hand_computed(con):
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES (1), (2), (2), (3), (3), (3), (3), (3)) t(x)")
    got = one(con, "reidentification_risk('r', ['x'])")
    assert got["max_risk"] == 1.0
    assert got["avg_risk"] == pytest.approx(3 / 8)
    assert got["records_at_risk"] == pytest.approx(3 / 8)     # classes of 1 and 2 (risk > 0.2)
    assert got["unique_share"] == pytest.approx(1 / 8)
    assert (got["classes"], got["records"]) == (3, 8)
    assert one(con, "reidentification_risk('r', ['x'], threshold := 0.5)")["records_at_risk"] == \
        pytest.approx(1 / 8)


def test_unknown_columns_are_named(con):
    make(con, "a", ROWS)
    with pytest.raises(Exception, match="quasi-identifier 'nope'"):
        one(con, "k_anonymity('a', ['nope'])")
    with pytest.raises(Exception, match="column 'salary'"):
        one(con, f"l_diversity('a', {QI}, 'salary')")
    with pytest.raises(Exception, match="non-empty list"):
        one(con, "k_anonymity('a', []::VARCHAR[])")


@pytest.mark.parametrize("seed", range(6))
def test_privacy_checks_match_reference_on_random_tables(con, seed):
    rnd = random.Random(seed)
    n = rnd.randint(5, 60)
    rows = [(rnd.randint(0, 3), rnd.choice("abc"), rnd.randint(0, 5), rnd.choice(["u", "v", "w"]))
            for _ in range(n)]
    con.execute("CREATE TABLE r (x INTEGER, y VARCHAR, s INTEGER, c VARCHAR)")
    con.executemany("INSERT INTO r VALUES (?, ?, ?, ?)", rows)
    dicts = [dict(zip("xysc", r)) for r in rows]
    cols = ["x", "y"][: rnd.randint(1, 2)]
    q = "[" + ", ".join(f"'{c}'" for c in cols) + "]"
    assert one(con, f"k_anonymity('r', {q})") == naive.k_anonymity(dicts, cols)
    l_d, l_e = naive.l_diversity(dicts, cols, "c")
    got = one(con, f"l_diversity('r', {q}, 'c')")
    assert got["distinct"] == l_d and got["entropy"] == pytest.approx(l_e)
    assert one(con, f"t_closeness('r', {q}, 's')") == pytest.approx(naive.t_closeness(dicts, cols, "s", True))
    assert one(con, f"t_closeness('r', {q}, 'c')") == pytest.approx(naive.t_closeness(dicts, cols, "c", False))
    got = one(con, f"reidentification_risk('r', {q})")
    for key, val in naive.reidentification_risk(dicts, cols).items():
        assert got[key] == pytest.approx(val)


def test_privacy_checks_match_pycanon_on_adult(con):
    anonymity = pytest.importorskip("pycanon.anonymity")
    kanon_duckdb.load_example(con, "adult")
    qi = ["age", "education", "marital_status", "race", "sex"]
    q = "[" + ", ".join(f"'{c}'" for c in qi) + "]"
    con.execute(f"CREATE TABLE a10 AS FROM k_anonymize('adult', k := 20, qi := {q})")
    df = con.sql("SELECT * FROM a10").df()
    cols = ["age_min", "age_max", "education", "marital_status", "race", "sex"]
    assert one(con, f"k_anonymity('a10', {q})") == anonymity.k_anonymity(df, cols)
    ld = one(con, f"l_diversity('a10', {q}, 'income')")
    assert ld["distinct"] == anonymity.l_diversity(df, cols, ["income"])
    assert int(ld["entropy"] + 1e-9) == anonymity.entropy_l_diversity(df, cols, ["income"])
    assert one(con, f"t_closeness('a10', {q}, 'income')") == pytest.approx(
        anonymity.t_closeness(df, cols, ["income"]))
    # raw table, numeric sensitive attribute (ordered distance), on a sample for pycanon's speed
    con.execute("CREATE TABLE sample AS SELECT * FROM adult WHERE fnlwgt % 10 = 0")
    raw = con.sql("SELECT * FROM sample").df()
    rq = ["sex", "race"]
    assert one(con, "k_anonymity('sample', ['sex', 'race'])") == anonymity.k_anonymity(raw, rq)
    assert one(con, "t_closeness('sample', ['sex', 'race'], 'hours_per_week')") == pytest.approx(
        anonymity.t_closeness(raw, rq, ["hours_per_week"]))
    ld = one(con, "l_diversity('sample', ['sex', 'race'], 'education')")
    assert ld["distinct"] == anonymity.l_diversity(raw, rq, ["education"])
    assert int(ld["entropy"] + 1e-9) == anonymity.entropy_l_diversity(raw, rq, ["education"])
