"""One NCP definition (kanon_duckdb/ncp.py) and the value policy (issue 9 section 2, issue 10).

- the run's recorded loss (Python) and the SQL metrics (gcp, kanon_qi_loss) agree on random
  tables, and both equal a naive recomputation;
- a constant numeric column holding NULLs costs 1 for a NULL range in both (the Python copy said
  0 before);
- gcp() divides by the data's global range (recorded by the run), not the published table's;
- discernibility() is N^2 when every row is suppressed;
- integers of every width come back exact (BIGINT near 2^62, the BIGINT extremes, HUGEINT and
  UBIGINT within the BIGINT range) or are refused by name; the NULL policy holds when
  ``min - 1 == min`` in double; +-inf are values every algorithm handles.
"""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import kanon_duckdb
import naive_metrics as naive
from kanon_duckdb.algorithms import registry
from kanon_duckdb.errors import DataError
from kanon_duckdb.ncp import numeric_ncp

ALGOS = sorted(registry())
FAST = ["mondrian", "kmember", "optimal", "datafly"]


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    yield c
    c.close()


def anonymize(con, table, qi, k, algo, **params):
    extra = "".join(f", {name} := {value}" for name, value in params.items())
    qi_sql = "[" + ", ".join(f"'{q}'" for q in qi) + "]"
    con.execute(f"CREATE OR REPLACE TABLE out_t AS FROM k_anonymize('{table}', k := {k}, "
                f"algo := '{algo}', qi := {qi_sql}{extra})")
    return con.execute("SELECT any_value(kanon_run) FROM out_t").fetchone()[0]


def recorded_loss(con, run_id):
    return con.execute("SELECT qi, qi_loss FROM kanon_runs WHERE run_id = ?", [run_id]).fetchone()


def sql_loss(con):
    return dict(con.execute("SELECT qi, ncp FROM kanon_qi_loss('out_t')").fetchall())


@st.composite
def tables(draw):
    n = draw(st.integers(6, 40))
    rng = np.random.default_rng(draw(st.integers(0, 2 ** 32 - 1)))
    cols = {}
    kinds = draw(st.lists(st.sampled_from(["int", "dbl", "const", "cat"]), min_size=1, max_size=3))
    for i, kind in enumerate(kinds):
        null = rng.random(n) < draw(st.sampled_from([0.0, 0.1, 0.4]))
        if kind == "int":
            v = [int(x) for x in rng.integers(-50, 50, n)]
        elif kind == "dbl":
            v = [float(x) for x in np.round(rng.normal(0, 10, n), 3)]
        elif kind == "const":
            v = [7] * n
        else:
            v = [f"v{x}" for x in rng.integers(0, 4, n)]
        cols[f"{kind}{i}"] = [None if m else x for x, m in zip(v, null)]
    k = draw(st.integers(1, max(1, n // 3)))
    algo = draw(st.sampled_from(FAST))
    return n, cols, k, algo


def _load(con, cols):
    names = list(cols)
    types = {"int": "INTEGER", "dbl": "DOUBLE", "const": "INTEGER", "cat": "VARCHAR"}
    ddl = ", ".join(f"{c} {types[c.rstrip('0123456789')]}" for c in names)
    con.execute(f"CREATE OR REPLACE TABLE rnd (id INTEGER, {ddl})")
    rows = [[i] + [cols[c][i] for c in names] for i in range(len(cols[names[0]]))]
    con.executemany(f"INSERT INTO rnd VALUES ({', '.join('?' for _ in range(len(names) + 1))})", rows)
    return names


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(tables())
def test_recorded_loss_equals_sql_metrics_and_naive(con, case):
    _n, cols, k, algo = case
    qi = _load(con, cols)
    run_id = anonymize(con, "rnd", qi, k, algo)
    names, loss = recorded_loss(con, run_id)
    sql = sql_loss(con)
    for q, v in zip(names, loss):
        assert sql[q] == pytest.approx(v, abs=1e-12)
    gcp = con.execute("SELECT gcp('out_t')").fetchone()[0]
    assert gcp == pytest.approx(sum(loss) / len(loss), abs=1e-12)
    assert gcp == pytest.approx(naive.gcp(con, "out_t"), abs=1e-12)


def test_constant_numeric_column_with_nulls_costs_one_for_a_null_range(con):
    # one QI, constant 5 with NULLs: the NULL class publishes the NULL range (NCP 1), the others
    # [5, 5] (NCP 0). The recorded loss said 0 for the NULL class before; gcp() said 1.
    con.execute("CREATE OR REPLACE TABLE cst AS SELECT i AS id, "
                "CASE WHEN i < 3 THEN NULL ELSE 5 END AS x FROM range(9) t(i)")
    run_id = anonymize(con, "cst", ["x"], 3, "mondrian")
    _, loss = recorded_loss(con, run_id)
    assert loss == [pytest.approx(3 / 9)]
    assert con.execute("SELECT gcp('out_t')").fetchone()[0] == pytest.approx(3 / 9)


def test_gcp_uses_the_data_range_not_the_published_one(con):
    # NULL sorts below every value, so the class {NULL, 0, 1} publishes the NULL range and the
    # published table's finite range is only 5..7; the data's range is 0..7.
    con.execute("CREATE OR REPLACE TABLE rg (id INTEGER, x INTEGER)")
    con.execute("INSERT INTO rg VALUES (1, NULL), (2, 0), (3, 1), (4, 5), (5, 6), (6, 7)")
    anonymize(con, "rg", ["x"], 3, "mondrian")
    got = con.execute("SELECT x_min, x_max FROM out_t ORDER BY id").fetchall()
    assert got == [(None, None)] * 3 + [(5, 7)] * 3
    want = (3 * 1.0 + 3 * (2 / 7)) / 6
    assert con.execute("SELECT gcp('out_t')").fetchone()[0] == pytest.approx(want)
    assert naive.gcp(con, "out_t") == pytest.approx(want)


def test_discernibility_is_n_squared_when_every_row_is_suppressed(con):
    con.execute("CREATE OR REPLACE TABLE allsup (x_min BIGINT, x_max BIGINT, ec BIGINT, "
                "ec_size BIGINT, suppressed BOOLEAN, kanon_run BIGINT)")
    con.execute("INSERT INTO allsup VALUES (NULL, NULL, 0, 4, true, 9001), "
                "(NULL, NULL, 0, 4, true, 9001), (NULL, NULL, 0, 4, true, 9001), "
                "(NULL, NULL, 0, 4, true, 9001)")
    con.execute("INSERT INTO kanon_runs (run_id, source, k, algo, qi, numeric_qi, categorical_qi, "
                "params, seed, details) VALUES (9001, 'raw', 2, 'hand', ['x'], ['x'], [], '{}', 0, '{}')")
    assert con.execute("SELECT discernibility('allsup')").fetchone()[0] == 16
    assert con.execute("SELECT gcp('allsup')").fetchone()[0] == pytest.approx(1.0)


def test_numeric_ncp_policy():
    nan, inf = float("nan"), float("inf")
    got = numeric_ncp([0, nan, 2, -inf, 1, -inf, inf], [10, nan, 2, 3, inf, inf, inf], 0, 10)
    # infinite bounds count as the global finite extremes
    assert list(got) == pytest.approx([1.0, 1.0, 0.0, 0.3, 0.9, 1.0, 0.0])
    assert list(numeric_ncp([-1e308], [0.0], -1e308, 1e308)) == [0.5]  # no overflow
    assert list(numeric_ncp([5.0, nan], [5.0, nan], 5.0, 5.0)) == [0.0, 1.0]  # constant column


# ------------------------------------------------------------------ truthful for every value

def _check_truthful(con, table, col, algo):
    """Every row's value lies in its published range, exactly (compared in the column's own
    type); a NULL value gets the NULL range; returns the number of rows checked."""
    bad = con.execute(
        f"SELECT count(*) FROM out_t o JOIN {table} t USING (id) WHERE "
        f"CASE WHEN t.{col} IS NULL OR isnan(t.{col}::DOUBLE) THEN o.{col}_min IS NOT NULL "
        f"OR o.{col}_max IS NOT NULL ELSE NOT coalesce(t.{col} >= o.{col}_min AND "
        f"t.{col} <= o.{col}_max, o.{col}_min IS NULL AND o.{col}_max IS NULL) END").fetchone()[0]
    assert bad == 0, f"{algo}: {bad} untruthful rows on {col}"
    inverted = con.execute(f"SELECT count(*) FROM out_t WHERE {col}_min > {col}_max").fetchone()[0]
    assert inverted == 0
    return con.execute("SELECT count(*) FROM out_t").fetchone()[0]


EXTREME = {
    # column -> SQL expression over i (0..59); NULL every 7th row where marked
    "big": "(4611686018427387904 + i * 1000003)::BIGINT",               # near 2^62, range < 2^53
    "wide": "CASE WHEN i % 2 = 0 THEN (-9223372036854775807 + i) ELSE 9223372036854775807 - i END",
    "bmin": "CASE WHEN i % 7 = 0 THEN NULL ELSE (-9223372036854775808 + i * 3)::BIGINT END",
    "huge": "(i * 12345678901234567)::HUGEINT",
    "ubig": "(9223372036854775000 + i)::UBIGINT",
    "dec": "CASE WHEN i % 7 = 0 THEN NULL ELSE (10::DECIMAL(38,0) ^ 30 + i)::DECIMAL(38,0) END",
    "neg": "CASE WHEN i % 7 = 0 THEN NULL ELSE -1e308 + i * 1e305 END",   # min - 1 == min
    "inf": "CASE WHEN i % 9 = 0 THEN 'inf'::DOUBLE WHEN i % 11 = 0 THEN '-inf'::DOUBLE "
           "WHEN i % 13 = 0 THEN NULL ELSE i / 3 END",
    "span": "CASE WHEN i % 2 = 0 THEN -1e308 + i ELSE 1e308 - i END",
}


@pytest.fixture(scope="module")
def extreme(con):
    cols = ", ".join(f"{expr} AS {name}" for name, expr in EXTREME.items())
    con.execute(f"CREATE OR REPLACE TABLE ext AS SELECT i AS id, {cols}, 'c' || (i % 3) AS c "
                f"FROM range(60) t(i)")
    return "ext"


@pytest.mark.parametrize("algo", ALGOS)
def test_every_algorithm_is_truthful_on_extreme_values(con, extreme, algo):
    params = {"sensitive": "'c'"} if algo == "info2means" else {}
    qi = list(EXTREME) + ["c"]
    if algo in ("optimal", "kgen", "random", "datafly"):
        qi = ["big", "bmin", "inf", "neg", "c"]  # a lattice over 10 QIs is needlessly slow
    run_id = anonymize(con, extreme, qi, 5, algo, **params)
    for col in qi[:-1]:
        assert _check_truthful(con, extreme, col, algo) == 60
    sizes = con.execute("SELECT min(ec_size) FROM out_t WHERE NOT suppressed").fetchone()[0]
    assert sizes is None or sizes >= 5
    gcp = con.execute("SELECT gcp('out_t')").fetchone()[0]
    _, loss = recorded_loss(con, run_id)
    assert all(-1e-12 <= v <= 1 + 1e-12 for v in loss) and math.isfinite(gcp)
    # integer QIs exactly (spans and range integer differences, also in the exact pass an
    # infinite bound triggers: it summed BIGINTs near 2^62 as doubles, 3e-4 off before)
    sql = sql_loss(con)
    names, _ = recorded_loss(con, run_id)
    for q, v in zip(names, loss):
        assert sql[q] == pytest.approx(v, rel=1e-12, abs=1e-14), q
    assert gcp == pytest.approx(sum(loss) / len(loss), rel=1e-12)


def test_integers_come_back_exact(con):
    con.execute("CREATE OR REPLACE TABLE ints AS SELECT i AS id, "
                "(4611686018427387904 + i)::BIGINT AS b FROM range(20) t(i)")
    anonymize(con, "ints", ["b"], 1, "mondrian")
    got = con.execute("SELECT b_min - 4611686018427387904, b_max - 4611686018427387904 "
                      "FROM out_t ORDER BY id").fetchall()
    assert got == [(i, i) for i in range(20)]  # k = 1: every value published as itself


def test_integer_beyond_bigint_is_refused_by_name(con):
    con.execute("CREATE OR REPLACE TABLE ub AS SELECT i AS id, "
                "(18000000000000000000 + i)::UBIGINT AS u FROM range(10) t(i)")
    with pytest.raises(Exception, match=r"'u' \(UBIGINT\).*outside the BIGINT range"):
        anonymize(con, "ub", ["u"], 2, "mondrian")


def test_encoder_refuses_beyond_bigint_in_python(con):
    from kanon_duckdb.anonymize import anonymize as py_anonymize
    con.execute("CREATE OR REPLACE TABLE hg AS SELECT i AS id, "
                "(170141183460469231731687303715884105727 - i)::HUGEINT AS h FROM range(10) t(i)")
    with pytest.raises(DataError, match="'h'"):
        py_anonymize(con, "hg", k=2, qi=["h"], record=False)


def test_runs_table_of_an_earlier_version_gains_the_range_columns():
    import duckdb

    from kanon_duckdb.runs import RUNS_COLUMNS
    c = duckdb.connect()
    try:
        c.execute("CREATE TABLE kanon_runs (run_id BIGINT PRIMARY KEY, created_at TIMESTAMP, "
                  "source VARCHAR, k BIGINT, algo VARCHAR, qi VARCHAR[], numeric_qi VARCHAR[], "
                  "categorical_qi VARCHAR[], params VARCHAR, seed BIGINT, n_rows BIGINT, "
                  "n_classes BIGINT, n_suppressed BIGINT, elapsed_s DOUBLE, qi_loss DOUBLE[], "
                  "weights DOUBLE[], details VARCHAR)")
        kanon_duckdb.register(c)
        cols = [r[0] for r in c.execute("DESCRIBE kanon_runs").fetchall()]
        assert [n for n, _ in RUNS_COLUMNS if n not in cols] == []
        c.execute("CREATE TABLE p AS SELECT i AS id, i % 10 AS x FROM range(20) t(i)")
        c.execute("CREATE TABLE q AS FROM k_anonymize('p', k := 4, qi := ['x'])")
        assert c.execute("SELECT num_lo, num_hi FROM kanon_runs").fetchall() == [([0.0], [9.0])]
    finally:
        c.close()


def test_the_null_leaf_is_not_counted_in_the_recorded_loss(con):
    # tree * -> {G -> {a, b}, c}; data a, b, c, c, NULL, NULL, k = 2: classes {a, b} (label G),
    # {c, c}, {NULL, NULL}. G covers 2 of the tree's 3 leaves: NCP 2/3 in gcp(); the
    # recorded qi_loss counted the NULL leaf of the NULL policy (2/4) before.
    con.execute("DELETE FROM kanon_taxonomy WHERE attr = 'nl.x'")
    con.execute("INSERT INTO kanon_taxonomy VALUES ('nl.x', '*', NULL), ('nl.x', 'G', '*'), "
                "('nl.x', 'c', '*'), ('nl.x', 'a', 'G'), ('nl.x', 'b', 'G')")
    con.execute("CREATE OR REPLACE TABLE nl AS SELECT * FROM (VALUES (1, 'a'), (2, 'b'), "
                "(3, 'c'), (4, 'c'), (5, NULL), (6, NULL)) v(id, x)")
    for algo in ("mondrian", "kmember"):
        run_id = anonymize(con, "nl", ["x"], 2, algo)
        assert con.execute("SELECT x, count(*) FROM out_t GROUP BY x ORDER BY x").fetchall() \
            == [("G", 2), ("c", 2), (None, 2)]
        _, loss = recorded_loss(con, run_id)
        assert loss == [pytest.approx(2 * (2 / 3) / 6)]
        assert con.execute("SELECT gcp('out_t')").fetchone()[0] == pytest.approx(2 * (2 / 3) / 6)


def test_gcp_of_large_integers_keeps_the_spans(con):
    # 100,000 BIGINTs 2^52 + 3i (every value and the range exact in a double), mondrian k = 2:
    # gcp() summed the bounds as doubles (sums near 4.5e20, ulp 65536) and subtracted the sums,
    # losing the spans (3 or 6 per class): 2.3e-5 instead of 1.7e-5 before (scale checker).
    con.execute("CREATE OR REPLACE TABLE bigx AS SELECT i AS id, (4503599627370496 + 3 * i)::BIGINT "
                "AS x FROM range(100000) r(i)")
    run_id = anonymize(con, "bigx", ["x"], 2, "mondrian")
    want = con.execute("SELECT avg((x_max - x_min)::DOUBLE) / (3 * 99999) FROM out_t").fetchone()[0]
    assert want > 0
    assert con.execute("SELECT gcp('out_t')").fetchone()[0] == pytest.approx(want, rel=1e-12)
    assert recorded_loss(con, run_id)[1] == [pytest.approx(want, rel=1e-12)]


@pytest.mark.parametrize("algo", ["mondrian", "optimal"])
def test_an_all_null_categorical_qi_runs_without_a_numpy_warning(con, algo):
    # the flat tree of a column holding only NULLs has no counted leaf (the NULL leaf is not
    # counted), so leaves(root) = 0: node_ncp divided 0 by 0 and numpy printed "divide by zero"
    # / "invalid value" RuntimeWarnings on the user's stderr (an error under -W error)
    con.execute("CREATE OR REPLACE TABLE alln AS SELECT i AS id, NULL::VARCHAR AS b, i % 9 AS c "
                "FROM range(40) r(i)")
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        anonymize(con, "alln", ["b", "c"], 3, algo)
    assert con.execute("SELECT DISTINCT b FROM out_t").fetchall() == [(None,)]
    assert con.execute("SELECT gcp('out_t')").fetchone()[0] == pytest.approx(0.0)


def test_node_ncp_of_a_tree_without_counted_leaves_is_zero():
    from kanon_duckdb.ncp import node_ncp
    assert node_ncp([0, 0]).tolist() == [0.0, 0.0]
    assert node_ncp([4, 2, 1, 1]).tolist() == [1.0, 0.5, 0.0, 0.0]
