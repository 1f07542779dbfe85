"""query_error, workload_error, workload_query_errors, query_workload and kanon_rewrite take any
relation k_anonymize reads (relation.resolve_source) for their raw and anonymized arguments:
tables, views, Parquet/CSV files and file reader calls; the answers equal the base-table ones."""
from __future__ import annotations

import duckdb
import pytest

import kanon_duckdb

QUERIES = [
    "SELECT count(*) FROM people WHERE age BETWEEN 30 AND 45",
    "SELECT sex, count(*) FROM people WHERE zip < 10050 GROUP BY sex",
    "SELECT avg(age) FROM people WHERE sex = 'F'",
]


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    d = tmp_path_factory.mktemp("qe")
    con = kanon_duckdb.connect()
    con.execute("CREATE TABLE people AS SELECT i AS id, 20 + (i * 7) % 50 AS age, "
                "10000 + (i * 13) % 97 AS zip, CASE WHEN i % 3 = 0 THEN 'F' ELSE 'M' END AS sex, "
                "(i * 31) % 1000 AS income FROM range(300) t(i)")
    con.execute("CREATE TABLE people_k5 AS FROM k_anonymize('people', k := 5, "
                "qi := ['age', 'zip', 'sex'], seed := 3)")
    paths = {"raw_pq": d / "people.parquet", "anon_pq": d / "people_k5.parquet",
             "raw_csv": d / "people.csv", "wl_pq": d / "workload.parquet"}
    con.execute(f"COPY people TO '{paths['raw_pq']}'")
    con.execute(f"COPY people_k5 TO '{paths['anon_pq']}'")
    con.execute(f"COPY people TO '{paths['raw_csv']}'")
    con.execute("CREATE VIEW people_v AS FROM people")
    con.execute("CREATE VIEW people_k5_v AS FROM people_k5")
    con.execute("CREATE TABLE wl AS FROM query_workload('people', n := 60, seed := 5)")
    con.execute(f"COPY wl TO '{paths['wl_pq']}'")
    yield con, {k: str(v) for k, v in paths.items()}
    con.close()


def forms(paths):
    """(raw, anon) argument pairs that all name the same data."""
    return [("people_v", "people_k5_v"),
            (paths["raw_pq"], paths["anon_pq"]),
            (f"read_csv('{paths['raw_csv']}')", f"read_parquet(['{paths['anon_pq']}'])"),
            ("people", paths["anon_pq"])]


def close(rows, base):
    """Equal rows, floats up to summation order (the files are grouped in another order)."""
    return len(rows) == len(base) and all(
        len(r) == len(b) and all(x == y or (isinstance(x, float) and y == pytest.approx(x, rel=1e-9))
                                 for x, y in zip(r, b)) for r, b in zip(rows, base))


def query_error(con, sql, raw, anon):
    return con.execute("FROM query_error(?, ?, ?)", [sql, raw, anon]).fetchall()


@pytest.mark.parametrize("sql", QUERIES)
def test_query_error_on_views_files_and_reader_calls_equals_tables(db, sql):
    con, paths = db
    base = query_error(con, sql, "people", "people_k5")
    assert base and all(r[-3] is not None for r in base)  # raw answers exist
    for raw, anon in forms(paths):
        assert close(query_error(con, sql, raw, anon), base), (raw, anon)


def test_workload_error_on_files_equals_tables(db):
    con, paths = db
    sql = "FROM workload_query_errors(?, ?, ?) ORDER BY qid"
    base = con.execute(sql, ["wl", "people", "people_k5"]).fetchall()
    assert len(base) == 60
    summary = con.execute("FROM workload_error(?, ?, ?)", ["wl", "people", "people_k5"]).fetchall()
    for raw, anon in forms(paths):
        assert close(con.execute(sql, [paths["wl_pq"], raw, anon]).fetchall(), base), (raw, anon)
        assert close(con.execute("FROM workload_error(?, ?, ?)",
                                 [paths["wl_pq"], raw, anon]).fetchall(), summary)


def test_query_workload_from_a_file_is_the_tables_workload(db):
    con, paths = db
    base = con.execute("FROM query_workload('people', n := 30, seed := 2, "
                       "qi := ['age', 'zip', 'sex'])").fetchall()
    on_file = con.execute("FROM query_workload(?, n := 30, seed := 2, qi := ['age', 'zip', 'sex'])",
                          [paths["raw_pq"]]).fetchall()
    assert [(q, s.replace(f'"{paths["raw_pq"]}"', '"people"').replace(
        f"'{paths['raw_pq']}'", '"people"')) for q, s in on_file] == base
    # each generated query runs on the file and has the same answer as on the table
    for (_, s), (_, t) in zip(on_file[:5], base[:5]):
        assert con.execute(s).fetchall() == con.execute(t).fetchall()


def test_kanon_rewrite_reads_the_anonymized_file(db):
    con, paths = db
    text = con.execute("SELECT kanon_rewrite(?, ?)", [QUERIES[0], paths["anon_pq"]]).fetchall()[0][0]
    assert paths["anon_pq"] in text
    est = con.execute(text).fetchall()
    assert est == con.execute(kanon_duckdb.rewrite.kanon_rewrite(con, QUERIES[0], "people_k5")
                              ).fetchall()


def test_missing_file_is_a_clear_error(db):
    con, paths = db
    with pytest.raises(duckdb.Error, match="nope.parquet.*cannot read it as a file"):
        query_error(con, QUERIES[0], "people", paths["anon_pq"].replace("people_k5", "nope"))


@pytest.mark.parametrize("through", ["connection", "cursor"])
def test_registered_objects_equal_tables(db, through):
    """DataFrames / Arrow tables registered on the caller (the connection or a cursor of it) are
    read by the query-error macros (registered.CallerConnection)."""
    con, _paths = db
    caller = con if through == "connection" else con.cursor()
    caller.register("raw_df", con.sql("FROM people").df())
    caller.register("anon_arrow", con.sql("FROM people_k5").to_arrow_table())
    caller.register("wl_df", con.sql("FROM wl").df())
    try:
        for sql in QUERIES:
            assert close(query_error(caller, sql, "raw_df", "anon_arrow"),
                         query_error(con, sql, "people", "people_k5")), sql
        wsql = "FROM workload_query_errors(?, ?, ?) ORDER BY qid"
        assert close(caller.execute(wsql, ["wl_df", "raw_df", "anon_arrow"]).fetchall(),
                     con.execute(wsql, ["wl", "people", "people_k5"]).fetchall())
        assert caller.execute("SELECT kanon_rewrite(?, 'anon_arrow')", [QUERIES[0]]).fetchall()
        assert len(caller.execute("FROM query_workload('raw_df', n := 10, seed := 1, "
                                  "qi := ['age', 'zip', 'sex'])").fetchall()) == 10
    finally:
        for name in ("raw_df", "anon_arrow", "wl_df"):
            caller.unregister(name)
        if caller is not con:
            caller.close()


def test_output_types_follow_the_raw_query(db):
    """A group key has the raw query's type (a SMALLINT QI stays SMALLINT, though its estimate
    spreads over BIGINT values) and anon_estimate is DOUBLE, also where the estimate is exact:
    the types are known from the query and the raw relation alone (rewrite/compare.py)."""
    con, _paths = db
    con.execute("CREATE OR REPLACE TABLE narrow AS SELECT age::SMALLINT AS age, sex, "
                "income::DECIMAL(9, 2) AS income FROM people")
    con.execute("CREATE OR REPLACE TABLE narrow_k5 AS FROM k_anonymize('narrow', k := 5, "
                "qi := ['age', 'sex'], seed := 3)")
    rel = con.sql("FROM query_error('SELECT age, count(*), sum(income) FROM narrow GROUP BY age', "
                  "'narrow', 'narrow_k5')")
    assert [str(t) for t in rel.types] == ["SMALLINT", "VARCHAR", "DECIMAL(38,2)", "DOUBLE", "DOUBLE"]
    rows = rel.fetchall()
    assert len(rows) == 2 * 50 and {r[0] for r in rows} == set(range(20, 70))
    exact = con.sql("FROM query_error('SELECT sum(income) FROM narrow', 'narrow', 'narrow_k5')")
    assert [str(t) for t in exact.types] == ["DECIMAL(38,2)", "DOUBLE", "DOUBLE"]
    (raw, est, err), = exact.fetchall()
    assert est == float(raw) and err == 0
