"""SQL utility metrics (sql/metrics_*.sql) on hand-made anonymized tables and on real outputs.

The tiny tables are built with INSERTs in k_anonymize's output shape, plus a kanon_runs row and a
taxonomy, so every expected number below is computed by hand from DESIGN.md's definitions.
"""
import math

import pytest

import kanon_duckdb

import naive_metrics as naive

# job tree (height 2, 5 leaves): * -> Tech -> {eng, dev}; * -> Art -> {painter, singer, actor}
JOB_EDGES = [("*", None), ("Tech", "*"), ("eng", "Tech"), ("dev", "Tech"),
             ("Art", "*"), ("painter", "Art"), ("singer", "Art"), ("actor", "Art")]

# 6 rows, 2 classes: ec 0 = age 20-30, job Tech; ec 1 = age 30-60, job *
ROWS = [
    (1, "<=50K", 20, 30, "Tech", 0, 3, False),
    (2, ">50K", 20, 30, "Tech", 0, 3, False),
    (3, ">50K", 20, 30, "Tech", 0, 3, False),
    (4, "<=50K", 30, 60, "*", 1, 3, False),
    (5, "<=50K", 30, 60, "*", 1, 3, False),
    (6, "<=50K", 30, 60, "*", 1, 3, False),
]
# 2 suppressed rows: published fully generalized (NULL range, root)
SUPPRESSED = [(7, ">50K", None, None, "*", 2, 2, True), (8, "<=50K", None, None, "*", 2, 2, True)]


def make(con, name, rows, run_id=1, k=3, weights=None, details="{}", edges=JOB_EDGES):
    con.execute(f"CREATE OR REPLACE TABLE {name} (id INTEGER, income VARCHAR, age_min BIGINT, "
                "age_max BIGINT, job VARCHAR, ec BIGINT, ec_size BIGINT, suppressed BOOLEAN, "
                "kanon_run BIGINT)")
    con.executemany(f"INSERT INTO {name} VALUES (?, ?, ?, ?, ?, ?, ?, ?, {run_id})", rows)
    con.execute("INSERT INTO kanon_runs (run_id, source, k, algo, qi, numeric_qi, categorical_qi, "
                "params, seed, weights, details) VALUES (?, 'raw', ?, 'hand', ['age', 'job'], "
                "['age'], ['job'], '{}', 0, ?, ?)", [run_id, k, weights, details])
    if edges is not None and not con.execute(
            "SELECT count(*) FROM kanon_taxonomy WHERE attr = 'job'").fetchall()[0][0]:
        con.executemany("INSERT INTO kanon_taxonomy VALUES ('job', ?, ?)", edges)


@pytest.fixture
def con():
    c = kanon_duckdb.connect()
    yield c
    c.close()


def one(con, sql):
    return con.sql("SELECT " + sql).fetchall()[0][0]


def test_gcp_hand_computed(con):
    make(con, "a", ROWS)
    # age NCP 10/40, 30/40; job NCP Tech 2/5, * 5/5 -> (3*(.25+.4)/2 + 3*(.75+1)/2) / 6
    assert one(con, "gcp('a')") == pytest.approx(0.6)


def test_total_il_and_gen_total_il_hand_computed(con):
    make(con, "a", ROWS)
    # class 0: 3 * (10/40 + 1/2); class 1: 3 * (30/40 + 2/2)
    assert one(con, "total_il('a')") == pytest.approx(7.5)
    assert one(con, "gen_total_il('a')") == pytest.approx(7.5 / 12)


def test_discernibility_cavg_suppression_hand_computed(con):
    make(con, "a", ROWS)
    assert one(con, "discernibility('a')") == 18
    assert one(con, "cavg('a')") == pytest.approx(1.0)
    assert one(con, "cavg('a', 2)") == pytest.approx(1.5)
    assert one(con, "suppression('a')") == 0.0


def test_suppressed_rows_count_as_fully_generalized(con):
    make(con, "s", ROWS + SUPPRESSED)
    assert one(con, "discernibility('s')") == 9 + 9 + 2 * 8
    assert one(con, "cavg('s')") == pytest.approx((8 / 2) / 3)
    assert one(con, "suppression('s')") == pytest.approx(0.25)
    # NCP sums: class 0 3*(.25+.4), class 1 3*(.75+1), suppressed 2*(1+1) -> / (8*2)
    assert one(con, "gcp('s')") == pytest.approx((1.95 + 5.25 + 4) / 16)
    assert one(con, "total_il('s')") == pytest.approx(7.5 + 4)
    assert one(con, "cm('s', 'income')") == pytest.approx(3 / 8)


def test_gcp_counts_tree_leaves_absent_from_data(con):
    # 'actor' never appears, yet leaves(root) = 5
    make(con, "a", [(1, "x", 1, 1, "eng", 0, 2, False), (2, "x", 1, 1, "eng", 0, 2, False),
                    (3, "y", 3, 3, "Art", 1, 2, False), (4, "y", 3, 3, "Art", 1, 2, False)], k=2)
    # age spans 0; job: eng single leaf 0, Art 3/5
    assert one(con, "gcp('a')") == pytest.approx((2 * 0 + 2 * 0.6) / 8)


def test_null_range_counts_one(con):
    make(con, "a", [(1, "x", None, None, "Tech", 0, 2, False), (2, "x", None, None, "Tech", 0, 2, False),
                    (3, "y", 0, 10, "Tech", 1, 2, False), (4, "y", 0, 10, "Tech", 1, 2, False)], k=2)
    # age: NULL range -> 1 (2 rows), [0,10] of global [0,10] -> 1; job Tech 0.4
    assert one(con, "gcp('a')") == pytest.approx((4 * 1 + 4 * 0.4) / 8)


def test_flat_tree_when_no_taxonomy(con):
    make(con, "a", [(1, "x", 5, 5, "eng", 0, 2, False), (2, "x", 5, 5, "eng", 0, 2, False),
                    (3, "y", 5, 5, "*", 1, 2, False), (4, "y", 5, 5, "*", 1, 2, False)],
         k=2, edges=None)
    # no tree for job: '*' counts 1, any other label 0; empty global age range -> 0
    assert one(con, "gcp('a')") == pytest.approx(2 / 8)
    assert one(con, "total_il('a')") == pytest.approx(2.0)


def test_cm_hand_computed(con):
    make(con, "a", ROWS)
    assert one(con, "cm('a', 'income')") == pytest.approx(1 / 6)


def test_info_loss_equal_weights_hand_computed(con):
    make(con, "a", ROWS)
    age = 3 * (math.log(11) + math.log(31)) / math.log(41)   # |R| = 40 + 1, step 1
    job = 3 * math.log(2) / math.log(5) + 3 * 1.0
    assert one(con, "info_loss('a')") == pytest.approx(0.5 * age + 0.5 * job)


def test_info_loss_uses_recorded_weights_and_names(con):
    make(con, "a", ROWS, weights=[0.8, 0.2], details='{"weight_names": ["job", "age"]}')
    age = 3 * (math.log(11) + math.log(31)) / math.log(41)
    job = 3 * math.log(2) / math.log(5) + 3 * 1.0
    assert one(con, "info_loss('a')") == pytest.approx(0.2 * age + 0.8 * job)


def test_log_level_from_recorded_node(con):
    make(con, "a", ROWS, details='{"node": {"age": 1, "job": 2}, "height": {"age": 4, "job": 2}}')
    assert one(con, "log_level('a')") == pytest.approx((1 / 4 + 2 / 2) / 2)


def test_lattice_accuracy_eq4(con):
    make(con, "s", ROWS, run_id=1, details='{"node": {"age": 3, "job": 1}, "height": {"age": 4, "job": 2}}')
    make(con, "o", ROWS, run_id=2, details='{"node": {"age": 2, "job": 0}, "height": {"age": 4, "job": 2}}')
    # H(S) = 4, H(opt) = 2, H(worst) = 6 -> 1 - 2/4
    assert one(con, "lattice_accuracy('s', 'o')") == pytest.approx(0.5)
    assert one(con, "lattice_accuracy('o', 'o')") == pytest.approx(1.0)


def test_lattice_accuracy_needs_lattice_runs(con):
    make(con, "a", ROWS)
    with pytest.raises(Exception, match="full-domain"):
        one(con, "lattice_accuracy('a', 'a')")


def test_metrics_read_fresh_taxonomy(con):
    make(con, "a", ROWS)
    assert one(con, "gcp('a')") == pytest.approx(0.6)
    con.execute("INSERT INTO kanon_taxonomy VALUES ('job', 'dancer', 'Art')")   # 6 leaves now
    assert one(con, "gcp('a')") == pytest.approx((3 * (0.25 + 2 / 6) / 2 + 3 * (0.75 + 1) / 2) / 6)


def test_label_missing_from_tree_is_an_error(con):
    make(con, "a", [(1, "x", 1, 2, "nurse", 0, 2, False), (2, "x", 1, 2, "nurse", 0, 2, False)], k=2)
    with pytest.raises(Exception, match="nurse"):
        one(con, "gcp('a')")


def test_not_an_anonymized_table_is_an_error(con):
    con.execute("CREATE TABLE raw AS SELECT 1 AS age")
    with pytest.raises(Exception, match="not an output of k_anonymize"):
        one(con, "gcp('raw')")
    with pytest.raises(Exception, match="does not exist"):
        one(con, "gcp('nope')")


@pytest.mark.parametrize("metric", ["gcp('{t}')", "total_il('{t}')", "discernibility('{t}')",
                                    "cavg('{t}')", "cavg('{t}', 2)", "suppression('{t}')",
                                    "cm('{t}', 'sex')"])
def test_every_utility_metric_refuses_a_table_that_is_no_output_by_name(con, metric):
    # a hand-made generalized table (no kanon_run / suppressed): gcp said "not an output of
    # k_anonymize"; discernibility, cavg, suppression and cm failed with DuckDB's binder error
    # 'Referenced column "kanon_run" not found in FROM clause!'
    con.execute("CREATE OR REPLACE TABLE hand AS SELECT * FROM (VALUES (20, 29, 'M', 1), "
                "(20, 29, 'M', 1), (30, 39, '*', 2), (30, 39, '*', 2)) v(age_min, age_max, sex, ec)")
    with pytest.raises(Exception, match="'hand' is not an output of k_anonymize "
                                        r"\(no column kanon_run, suppressed\)"):
        one(con, metric.format(t="hand"))


def test_macros_are_registered(con):
    names = {r[0] for r in con.execute(
        "SELECT function_name FROM duckdb_functions() WHERE function_type = 'macro'").fetchall()}
    assert {"gcp", "discernibility", "cavg", "total_il", "gen_total_il", "cm", "info_loss",
            "log_level", "suppression", "lattice_accuracy", "k_anonymity", "l_diversity",
            "t_closeness", "reidentification_risk"} <= names


# ---- real outputs of k_anonymize vs the brute-force reference ------------------------------------

@pytest.fixture
def real(con):
    con.execute("""CREATE TABLE people AS SELECT i AS id,
        20 + (i * 37) % 50 AS age, ((i * 13) % 17) * 0.5 AS score,
        ['eng', 'dev', 'painter', 'singer', 'actor'][(i * 7) % 5 + 1] AS job,
        ['f', 'm'][i % 2 + 1] AS sex, CASE WHEN (i * 11) % 3 = 0 THEN '>50K' ELSE '<=50K' END AS income
        FROM range(120) r(i)""")
    con.executemany("INSERT INTO kanon_taxonomy VALUES ('job', ?, ?)", JOB_EDGES)
    return con


def _check_all(con, tbl):
    assert one(con, f"gcp('{tbl}')") == pytest.approx(naive.gcp(con, tbl))
    assert one(con, f"total_il('{tbl}')") == pytest.approx(naive.total_il(con, tbl))
    assert one(con, f"gen_total_il('{tbl}')") == pytest.approx(naive.gen_total_il(con, tbl))
    assert one(con, f"discernibility('{tbl}')") == naive.discernibility(con, tbl)
    assert one(con, f"cavg('{tbl}')") == pytest.approx(naive.cavg(con, tbl))
    assert one(con, f"suppression('{tbl}')") == pytest.approx(naive.suppression(con, tbl))
    assert one(con, f"cm('{tbl}', 'income')") == pytest.approx(naive.cm(con, tbl, "income"))
    assert one(con, f"info_loss('{tbl}')") == pytest.approx(naive.info_loss(con, tbl))


@pytest.mark.parametrize("k", [2, 5, 13])
def test_metrics_match_reference_on_mondrian(real, k):
    real.execute(f"CREATE TABLE out AS FROM k_anonymize('people', k := {k}, "
                 "qi := ['age', 'score', 'job', 'sex'])")
    _check_all(real, "out")
    # the run's recorded per-QI loss is the mean NCP of each QI
    loss = dict(real.execute("SELECT qi, ncp FROM kanon_qi_loss('out')").fetchall())
    run = real.execute("SELECT qi, qi_loss FROM kanon_runs").fetchall()[0]
    for q, v in zip(*run):
        assert loss[q] == pytest.approx(v)


@pytest.mark.parametrize("algo", ["optimal", "datafly"])
def test_metrics_match_reference_on_lattice_with_suppression(real, algo):
    try:
        real.execute(f"CREATE TABLE out AS FROM k_anonymize('people', k := 4, algo := '{algo}', "
                     "qi := ['age', 'job', 'sex'], max_suppression := 0.05)")
    except Exception as exc:  # lattice family not registered in this checkout
        if "unknown algo" in str(exc).lower() or "not a known" in str(exc).lower():
            pytest.skip(str(exc))
        raise
    _check_all(real, "out")
    assert one(real, "log_level('out')") == pytest.approx(naive.log_level_recorded(real, "out"))
    recorded = real.execute("SELECT details::JSON->>'log' FROM kanon_runs").fetchall()[0][0]
    assert one(real, "log_level('out')") == pytest.approx(float(recorded))


def test_hostile_table_name_is_an_error_and_harmless(con):
    make(con, "a", ROWS)
    for sql in ("""SELECT gcp('a"; DROP TABLE a; --')""",
                """SELECT k_anonymity('a"; DROP TABLE a; --', ['age'])""",
                """SELECT cm('a', 'income"; DROP TABLE a; --')"""):
        with pytest.raises(Exception, match="quote|does not exist|is not a column"):
            con.execute(sql).fetchall()
    assert one(con, "count(*) FROM a") == 6


def test_lattice_accuracy_eq5_weighted_mean(con):
    make(con, "s", ROWS, run_id=1, details='{"node": {"age": 3, "job": 1}, "height": {"age": 4, "job": 2}}')
    make(con, "o", ROWS, run_id=2, details='{"node": {"age": 2, "job": 0}, "height": {"age": 4, "job": 2}}')
    make(con, "t", ROWS, run_id=3, details='{"node": {"age": 4, "job": 2}, "height": {"age": 4, "job": 2}}')
    # acc(s) = 0.5, acc(o) = 1, acc(t) = 1 - 4/4 = 0 (the worst node)
    assert one(con, "lattice_accuracy(['s', 'o', 't'], 'o', NULL)") == pytest.approx(0.5)
    assert one(con, "lattice_accuracy(['s', 'o', 't'], 'o', [2, 1, 1])") == pytest.approx(2 / 4)
    assert one(con, "lattice_accuracy(['s', 'o'], 'o', [1.0, 3.0])") == pytest.approx(3.5 / 4)
    assert one(con, "lattice_accuracy(['s'], 'o', NULL)") == one(con, "lattice_accuracy('s', 'o')")
    with pytest.raises(Exception, match="one weight per table"):
        one(con, "lattice_accuracy(['s', 'o'], 'o', [1.0])")


def test_info_loss_given_weights_override_the_run(con):
    make(con, "a", ROWS, weights=[0.8, 0.2], details='{"weight_names": ["job", "age"]}')
    make(con, "b", ROWS, run_id=2)
    age = 3 * (math.log(11) + math.log(31)) / math.log(41)
    job = 3 * math.log(2) / math.log(5) + 3 * 1.0
    assert one(con, "info_loss('b', weights := MAP {'age': 0.2, 'job': 0.8})") == pytest.approx(
        0.2 * age + 0.8 * job)
    # the same weights for both outputs: the info2means-style run's own weights
    assert one(con, "info_loss('b', weights := kanon_run_weights('a'))") == pytest.approx(
        one(con, "info_loss('a')"))
    assert one(con, "kanon_run_weights('b')") is None
    with pytest.raises(Exception, match="no entry for QI 'job'"):
        one(con, "info_loss('b', weights := MAP {'age': 1.0})")
    with pytest.raises(Exception, match="not QIs of the table"):
        one(con, "info_loss('b', weights := MAP {'age': 1.0, 'job': 1.0, 'zip': 1.0})")


def test_gcp_of_infinite_bounds_near_the_double_range_is_finite(con):
    """Four rows 1e308, inf, 0, inf in one class [0, inf]: each row's NCP on q0 is 1 (inf counts
    as the finite maximum 1e308), q1/q2 are constant (0), so gcp = 1/3; the infinite bounds'
    share (count * 1e308 / 2) used to overflow to inf before the division by the range."""
    con.execute("CREATE OR REPLACE TABLE inf_src (id INTEGER, q0 DOUBLE, q1 TINYINT, q2 TINYINT)")
    con.execute("INSERT INTO inf_src VALUES (0, 1e308, 0, 0), (1, 'inf', 0, 0), (2, 0.0, 0, 0), "
                "(3, 'inf', 0, 0)")
    con.execute("CREATE OR REPLACE TABLE inf_out AS FROM k_anonymize('inf_src', k := 3, "
                "algo := 'mondrian', qi := ['q0', 'q1', 'q2'])")
    assert con.execute("SELECT DISTINCT q0_min, q0_max FROM inf_out").fetchall() == [(0.0, math.inf)]
    assert con.execute("SELECT gcp('inf_out')").fetchall()[0][0] == pytest.approx(1 / 3, rel=1e-12)


def test_gcp_of_a_subnormal_range_is_its_ncp_not_nan(con):
    """Four rows 0, 5e-324 (the smallest subnormal), 0, 5e-324 in one class [0, 5e-324]: the
    global range is [0, 5e-324], so each row's NCP on q0 is 1 and q1/q2 are constant: gcp = 1/3.
    Halving such a range gives 0 (it was NaN); bounds are halved only where the range overflows."""
    con.execute("CREATE OR REPLACE TABLE sub_src (id INTEGER, q0 DOUBLE, q1 TINYINT, q2 TINYINT)")
    con.execute("INSERT INTO sub_src VALUES (0, 0.0, 0, 0), (1, 5e-324, 0, 0), (2, 0.0, 0, 0), "
                "(3, 5e-324, 0, 0)")
    con.execute("CREATE OR REPLACE TABLE sub_out AS FROM k_anonymize('sub_src', k := 4, "
                "algo := 'mondrian', qi := ['q0', 'q1', 'q2'])")
    assert con.execute("SELECT DISTINCT q0_min, q0_max FROM sub_out").fetchall() == [(0.0, 5e-324)]
    assert con.execute("SELECT gcp('sub_out')").fetchall()[0][0] == pytest.approx(1 / 3, rel=1e-12)
