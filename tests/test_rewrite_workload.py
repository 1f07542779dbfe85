"""Random query workloads (query_workload) and their error (workload_error, workload_query_errors)."""
from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

from kanon_duckdb.errors import InvalidParameterError, UnsupportedQueryError
from kanon_duckdb.rewrite import generate_workload, query_error_sql, workload_errors

from test_rewrite import con  # noqa: F401 (a fixture)


def predicate_columns(sql: str) -> list:
    where = sqlglot.parse_one(sql, dialect="duckdb").args["where"].this
    parts = list(where.flatten()) if isinstance(where, exp.And) else [where]
    return [p.this.name for p in parts]


def test_query_workload_is_deterministic_for_a_seed(con):
    a = con.execute("FROM query_workload('people', n := 50, seed := 7)").fetchall()
    b = con.execute("FROM query_workload('people', n := 50, seed := 7)").fetchall()
    c = con.execute("FROM query_workload('people', n := 50, seed := 8)").fetchall()
    assert a == b and a != c
    assert [q for q, _ in a] == list(range(1, 51))


def test_query_workload_uses_dims_distinct_qis_from_the_run(con):
    rows = con.execute("FROM query_workload('people', n := 40, seed := 1, dims := 3)").fetchall()
    for _, sql in rows:
        cols = predicate_columns(sql)
        assert len(cols) == 3 and len(set(cols)) == 3
        assert set(cols) <= {"age", "hours", "race", "edu"}


def test_query_workload_qi_parameter(con):
    rows = con.execute("FROM query_workload('people', n := 20, dims := 1, qi := ['salary', 'income'])")\
        .fetchall()
    kinds = {predicate_columns(sql)[0] for _, sql in rows}
    assert kinds == {"salary", "income"}
    assert any("BETWEEN" in sql for _, sql in rows if "salary" in sql)


def test_query_workload_bad_parameters(con):
    with pytest.raises(InvalidParameterError, match="dims=5"):
        generate_workload(con, "people", n=3, dims=5)
    with pytest.raises(InvalidParameterError, match="n=0"):
        generate_workload(con, "people", n=0)
    con.execute("CREATE OR REPLACE TABLE no_run AS SELECT 1 AS x")
    with pytest.raises(InvalidParameterError, match="pass qi :="):
        generate_workload(con, "no_run", n=3)


def test_workload_error_is_zero_on_non_generalized_table(con):
    con.execute("CREATE OR REPLACE TABLE wl AS FROM query_workload('people', n := 200, seed := 3)")
    row = con.execute("FROM workload_error('wl', 'people', 'people_exact')").fetchall()[0]
    n_queries, n_skipped, mean, median, p95, worst = row
    zero = con.execute("SELECT count(*) FROM workload_query_errors('wl', 'people', 'people_exact') "
                       "WHERE raw_value = 0").fetchall()[0][0]
    assert n_queries == 200 and n_skipped == zero
    assert mean == 0 and median == 0 and p95 == 0 and worst == 0


def test_workload_query_errors_match_query_error(con):
    con.execute("CREATE OR REPLACE TABLE wl AS FROM query_workload('people', n := 30, seed := 5)")
    fast = con.execute("FROM workload_query_errors('wl', 'people', 'people_anon')").fetchall()
    for (qid, raw, est, rel), (qid2, sql) in zip(fast, con.execute("FROM wl ORDER BY qid").fetchall()):
        assert qid == qid2
        raw2, est2, rel2 = con.execute(query_error_sql(con, sql, "people", "people_anon")).fetchall()[0]
        assert raw == raw2 and math.isclose(est, est2, abs_tol=1e-9)
        assert (rel is None and rel2 is None) or math.isclose(rel, rel2, abs_tol=1e-9)


def test_workload_error_summary_statistics(con):
    con.execute("CREATE OR REPLACE TABLE wl AS SELECT * FROM (VALUES "
                "(1, 'SELECT COUNT(*) FROM people WHERE age > 24'), "          # 9 vs 8.875
                "(2, 'SELECT COUNT(*) FROM people WHERE race = ''White'''), "  # 6 vs 5
                "(3, 'SELECT COUNT(*) FROM people WHERE age > 100')) v(qid, sql)")
    n, skipped, mean, median, p95, worst = con.execute(
        "FROM workload_error('wl', 'people', 'people_anon')").fetchall()[0]
    errors = [0.125 / 9, 1 / 6]
    assert (n, skipped) == (3, 1)
    assert math.isclose(mean, sum(errors) / 2) and math.isclose(median, sum(errors) / 2)
    assert math.isclose(worst, 1 / 6)
    assert math.isclose(p95, errors[0] + 0.95 * (errors[1] - errors[0]))


def test_workload_refuses_grouped_queries(con):
    con.execute("CREATE OR REPLACE TABLE wl_bad AS SELECT 4 AS qid, "
                "'SELECT income, COUNT(*) FROM people WHERE age > 3 GROUP BY income' AS sql")
    with pytest.raises(UnsupportedQueryError, match="qid=4"):
        workload_errors(con, "wl_bad", "people", "people_anon")


# ------------------------------------------------------------------------- Adult (slow)
QI = ["age", "workclass", "education", "marital_status", "occupation", "race", "sex", "native_country"]


@pytest.fixture(scope="module")
def adult():
    """Adult (30,162 rows) and a generalized copy: age in decades, categoricals one level up."""
    import kanon_duckdb
    c = kanon_duckdb.connect()
    kanon_duckdb.load_example(c, "adult")
    parent = "(SELECT parent FROM kanon_taxonomy t WHERE t.attr = '{0}' AND t.child = a.{0})"
    up = ", ".join(f"coalesce({parent.format(a)}, a.{a}) AS {a}" for a in QI[1:6])
    c.execute(f"""CREATE TABLE adult_gen AS
        SELECT * EXCLUDE ({', '.join(QI)}), age // 10 * 10 AS age_min, age // 10 * 10 + 9 AS age_max, {up},
               sex, native_country, 9001::BIGINT AS kanon_run
        FROM adult AS a""")
    c.execute("INSERT INTO kanon_runs (run_id, source, k, algo, qi, numeric_qi, categorical_qi) "
              "VALUES (9001, 'adult', 1, 'hand', ?, ['age'], ?)", [QI, QI[1:]])
    yield c
    c.close()


@pytest.mark.slow
def test_workload_error_adult_1000_queries(adult):
    adult.execute("CREATE TABLE wl AS FROM query_workload('adult', n := 1000, seed := 0, dims := 2)")
    row = adult.execute("FROM workload_error('wl', 'adult', 'adult_gen')").fetchall()[0]
    assert row[0] == 1000 and 0 < row[2] < 10
    sample = adult.execute("FROM wl ORDER BY qid LIMIT 25").fetchall()
    fast = dict((q, (a, e)) for q, a, e, _ in adult.execute(
        "FROM workload_query_errors('wl', 'adult', 'adult_gen') WHERE qid <= 25").fetchall())
    for qid, sql in sample:
        raw, est, _ = adult.execute(query_error_sql(adult, sql, "adult", "adult_gen")).fetchall()[0]
        assert fast[qid][0] == raw and math.isclose(fast[qid][1], est, rel_tol=1e-9, abs_tol=1e-9)


@pytest.mark.slow
def test_query_error_adult_paper_queries(adult):
    """The four queries of examples/query_error_adult.sql run on Adult through query_error."""
    text = (Path(__file__).resolve().parents[1] / "examples" / "query_error_adult.sql").read_text()
    queries = [m[1].replace("''", "'") for m in re.finditer(r"^\s*\(\d, '(.*)'\)[,;]$", text, re.M)]
    assert len(queries) == 4
    for q in queries:
        raw, est, rel = adult.execute("FROM query_error(?, 'adult', 'adult_gen')", [q]).fetchall()[0]
        assert raw > 0 and est > 0 and rel >= 0
