"""``bottomup`` (kanon-duckdb's own local recoding): k-anonymity on random data, exact classes
for repeated tuples, hand-computed cuts, and GCP on Adult below ARX 3.9.2's local recoding."""
import naive
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kanon_duckdb.qidata import QIData
from kanon_duckdb.algorithms.bottomup import level_groups, partition_rows
from kanon_duckdb.algorithms.bottomup._kernels import topdown_partition
from kanon_duckdb.taxonomy.tree import build_index


@st.composite
def cases(draw):
    _rng, data, k = naive.draw_qidata_k(draw, max_n=80)
    return data, k


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_every_class_has_k_rows_and_every_row_a_class(case):
    data, k = case
    ec, _info = partition_rows(data, k)
    assert ec.shape == (data.n,) and ec.min() >= 0
    sizes = np.bincount(ec)
    assert sizes[sizes > 0].min() >= min(k, data.n)


def _cat_data(values, tree):
    cat = np.array([[tree.leaf_of_label[v]] for v in values], dtype=np.int32)
    n = len(values)
    return QIData(n=n, num=np.zeros((n, 0)), num_null=np.zeros((n, 0), bool), num_lo=np.zeros(0),
                  num_hi=np.zeros(0), num_is_int=np.zeros(0, bool), cat=cat, trees=[tree],
                  num_names=[], cat_names=["c"])


def test_groups_of_k_equal_tuples_stay_exact_and_leftovers_join_the_cheapest_group():
    # a/b under X, c/d under Y; 'a' x3 and 'c' x3 form groups, the single b and d are leftovers
    tree = build_index("c", [("X", "*"), ("Y", "*"), ("a", "X"), ("b", "X"), ("c", "Y"),
                             ("d", "Y"), ("*", None)])
    data = _cat_data(["a", "a", "a", "c", "c", "c", "b", "d"], tree)
    group, n_groups, left, levels = level_groups(data, 3)
    assert list(group[:6]) == [0, 0, 0, 1, 1, 1]
    # once the two groups are out, 2 rows (< k) remain: they are leftovers, no level is raised
    assert n_groups == 2 and sorted(left.tolist()) == [6, 7] and levels[0] == 0
    ec, _ = partition_rows(data, 3)
    sizes = np.bincount(ec)
    assert sizes.min() >= 3
    # b joins the 'a' group (cost rises to 4 rows x NCP(X)=2/4), d the 'c' group, not the reverse
    assert ec[6] == ec[0] and ec[7] == ec[3] and ec[0] != ec[3]


def test_topdown_split_takes_the_cut_with_the_lowest_cost():
    # one numeric QI 0 0 0 1 | 9 9 10 10 (range 10), k = 2: the cheapest cut is after 4 rows
    # (cost 4*0.1 + 4*0.1 = 0.8) rather than the median-ish ones elsewhere
    X = np.array([[0.0], [0.0], [0.0], [1.0], [9.0], [9.0], [10.0], [10.0]])
    z = np.zeros(0, np.int32)
    z64 = np.zeros(1, np.int64)
    ec = topdown_partition(X, 2, 1, np.array([10.0]), np.array([0.0]), z, z64, z, z, z, z64,
                           np.arange(8, dtype=np.int64), np.array([0, 8], dtype=np.int64))
    sizes = np.bincount(ec)
    assert sizes.min() >= 2
    # every class stays on one side of the gap between 1 and 9
    for c in np.unique(ec):
        v = X[ec == c, 0]
        assert v.max() <= 1.0 or v.min() >= 9.0


# ARX 3.9.2 local recoding (optimizeIterativeFast) on the same 8 QIs, GCP from one script on
# both outputs (issue 14): k -> percent
ARX_LOCAL = {2: 3.30, 5: 6.57, 10: 9.03, 50: 16.75}
# gcp() in percent, with the refinement (before it: 1.8533 / 4.9088 / 7.6883 / 12.3604 / 16.551 /
# 21.7257)
GOLDEN = {2: 1.6451, 5: 4.6835, 10: 7.4542, 25: 11.9239, 50: 15.9235, 100: 20.7939}
QI = ["age", "workclass", "education", "marital_status", "occupation", "race", "sex",
      "native_country"]


@pytest.fixture(scope="module")
def adult():
    import kanon_duckdb
    con = kanon_duckdb.connect()
    kanon_duckdb.load_example(con)
    yield con
    con.close()


@pytest.mark.parametrize("k", [2, 5, 10, 25, 50, 100])
def test_adult_gcp_golden_and_below_arx_local_recoding(adult, k):
    from kanon_duckdb.demo import sql_list
    adult.execute(f"CREATE OR REPLACE TABLE bu AS FROM k_anonymize('adult', k := {k}, "
                  f"algo := 'bottomup', qi := {sql_list(QI)})")
    gcp, smallest, n = adult.execute(
        "SELECT gcp('bu'), min(ec_size), count(*) FROM bu").fetchall()[0]
    sizes = adult.execute("SELECT min(c) FROM (SELECT count(*) c FROM bu GROUP BY ec)").fetchall()
    assert smallest >= k and sizes[0][0] >= k and n == 30162
    pct = 100 * gcp
    assert pct == pytest.approx(GOLDEN[k], abs=5e-4)
    if k in ARX_LOCAL:
        assert pct < ARX_LOCAL[k]


def test_level_grouping_raises_the_level_that_groups_rows():
    # 2 x 'a', 2 x 'b' (under X), 1 x 'c', 1 x 'd' (under Y), k = 3: nothing groups at the
    # leaves; one level up X holds 4 rows, Y 2: X becomes a group, c and d are leftovers
    tree = build_index("c", [("X", "*"), ("Y", "*"), ("a", "X"), ("b", "X"), ("c", "Y"),
                             ("d", "Y"), ("*", None)])
    data = _cat_data(["a", "a", "b", "b", "c", "d"], tree)
    group, n_groups, left, levels = level_groups(data, 3)
    assert levels[0] == 1 and n_groups == 1
    assert list(group[:4]) == [0, 0, 0, 0] and sorted(left.tolist()) == [4, 5]


def test_never_worse_than_mondrian_on_uniform_data():
    # bench_mondrian's uniform synthetic table (flat trees) at 5,000 rows: step 1 alone reached
    # GCP 57.9 % against Mondrian's 53.2 % at k = 10 (issue 14: +33 % at 1M rows); the run starts
    # from Mondrian's classes there
    import json

    import kanon_duckdb
    from kanon_duckdb.demo import sql_list
    con = kanon_duckdb.connect()
    con.execute("""CREATE TABLE synth AS SELECT (hash(i) % 90)::INTEGER + 10 AS n1,
        (hash(i + 1) % 100000)::INTEGER AS n2, (hash(i + 2) % 1000)::DOUBLE / 10 AS n3,
        (hash(i + 3) % 50)::INTEGER AS n4, 'a' || (hash(i + 4) % 10)::VARCHAR AS c1,
        'b' || (hash(i + 5) % 40)::VARCHAR AS c2, 'c' || (hash(i + 6) % 3)::VARCHAR AS c3,
        'd' || (hash(i + 7) % 200)::VARCHAR AS c4 FROM range(5000) t(i)""")
    qi = sql_list(["n1", "n2", "n3", "n4", "c1", "c2", "c3", "c4"])
    gcp = {}
    for algo in ("mondrian", "bottomup"):
        con.execute(f"CREATE TABLE {algo} AS FROM k_anonymize('synth', k := 10, algo := '{algo}', "
                    f"qi := {qi})")
        gcp[algo], smallest = con.execute(f"SELECT gcp('{algo}'), min(ec_size) FROM {algo}").fetchall()[0]
        assert smallest >= 10
    details = json.loads(con.execute("SELECT details FROM kanon_runs WHERE algo = 'bottomup'"
                                     ).fetchall()[0][0])
    con.close()
    assert details["start"] == "mondrian" and details["gcp_bottomup"] > details["gcp_mondrian"]
    # the refinement starts from Mondrian's classes and lowers their GCP (53.2 % -> 49.2 %)
    assert gcp["bottomup"] < gcp["mondrian"] - 0.02
    assert gcp["bottomup"] == pytest.approx(details["gcp_refined"], abs=1e-9)
    assert details["gcp_start"] == pytest.approx(gcp["mondrian"], abs=1e-9)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_gcp_never_above_mondrian(case):
    from kanon_duckdb.algorithms.bottomup import gcp_of, run
    from kanon_duckdb.algorithms.mondrian import partition_rows as mondrian_rows
    data, k = case
    part = run(data, k, 0, {})
    assert gcp_of(data, part.ec) <= gcp_of(data, mondrian_rows(data, k)) + 1e-12
    assert np.bincount(part.ec)[np.bincount(part.ec) > 0].min() >= min(k, data.n)
