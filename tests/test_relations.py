"""k_anonymize and kanon_duckdb.anonymize on every relation kind (issue 12 section 1).

For the same data and seed, every kind gives the rows of the base-table path (same classes,
same published values); the source is never modified; the output keeps the source's column
order with a numeric QI replaced in place by c_min, c_max.
"""
from __future__ import annotations

from types import SimpleNamespace

import duckdb
import pyarrow as pa
import pyarrow.dataset as ds
import pytest

import kanon_duckdb

QI = ["age", "zip", "sex"]
ARGS = "k := 4, qi := ['age', 'zip', 'sex'], seed := 7"
EXPECTED_COLUMNS = ["id", "age_min", "age_max", "zip", "note", "sex", "ec", "ec_size",
                    "suppressed", "kanon_run"]


@pytest.fixture(scope="module")
def con(tmp_path_factory):
    d = tmp_path_factory.mktemp("rel")
    c = kanon_duckdb.connect()
    c.execute("CREATE TABLE people AS SELECT i AS id, 20 + (i * 7) % 50 AS age, "
              "'z' || (10000 + (i * 13) % 40) AS zip, 'n' || i AS note, "
              "CASE WHEN i % 3 = 0 THEN 'F' ELSE 'M' END AS sex FROM range(400) r(i)")
    c.execute(f"COPY people TO '{d}/people.parquet'")
    (d / "csv").mkdir()
    c.execute(f"COPY (FROM people WHERE id < 200) TO '{d}/csv/a.csv'")
    c.execute(f"COPY (FROM people WHERE id >= 200) TO '{d}/csv/b.csv'")
    c.execute(f"ATTACH '{d}/other.duckdb' AS other")
    c.execute("CREATE SCHEMA other.s")
    c.execute("CREATE TABLE other.s.people AS FROM people")
    c.execute("CREATE SCHEMA hr")
    c.execute("CREATE TABLE hr.people AS FROM people")
    c.execute("CREATE VIEW people_v AS SELECT * FROM people")
    yield SimpleNamespace(c=c, dir=d)
    c.close()


def _rows(con, sql):
    """Output rows without kanon_run, by id (the class ids and values must match exactly)."""
    rel = con.sql(sql)
    assert rel.columns == EXPECTED_COLUMNS
    return sorted(r[:-1] for r in rel.fetchall())


@pytest.fixture(scope="module")
def base(con):
    return _rows(con.c, f"FROM k_anonymize('people', {ARGS})")


def test_base_table_is_k_anonymous_and_truthful(con, base):
    raw = {r[0]: r for r in con.c.execute("SELECT id, age, zip, note, sex FROM people").fetchall()}
    assert len(base) == 400 and min(r[7] for r in base) >= 4
    for r in base:
        assert r[1] <= raw[r[0]][1] <= r[2] and r[4] == raw[r[0]][3]


@pytest.mark.parametrize("source", [
    "main.people", "hr.people", "other.s.people", "people_v", "{dir}/people.parquet",
    "{dir}/csv/*.csv", "read_parquet(['{dir}/people.parquet'])",
    "read_csv(['{dir}/csv/a.csv', '{dir}/csv/b.csv'], header = true)",
])
def test_every_sql_relation_kind_equals_the_base_table_path(con, base, source):
    src = source.format(dir=con.dir).replace("'", "''")
    assert _rows(con.c, f"FROM k_anonymize('{src}', {ARGS})") == base


def test_streaming_copy_parquet_to_parquet_in_one_statement(con, base):
    out = con.dir / "out.parquet"
    con.c.execute(f"COPY (FROM k_anonymize('{con.dir}/people.parquet', {ARGS})) TO '{out}'")
    assert _rows(con.c, f"FROM '{out}'") == base


@pytest.mark.parametrize("kind", ["pandas", "arrow", "dataset", "reader", "relation", "name",
                                  "path", "temp", "view"])
def test_python_api_takes_every_kind_and_matches_sql(con, base, kind):
    con.c.execute("CREATE OR REPLACE TEMP TABLE people_tmp AS FROM people")
    tbl = con.c.sql("FROM people").arrow()
    tbl = tbl.read_all() if isinstance(tbl, pa.RecordBatchReader) else tbl
    data = {"pandas": lambda: con.c.sql("FROM people").df(), "arrow": lambda: tbl,
            "dataset": lambda: ds.dataset(tbl), "reader": lambda: tbl.to_reader(),
            "relation": lambda: con.c.sql("FROM people"), "name": lambda: "people",
            "path": lambda: con.dir / "people.parquet", "temp": lambda: "people_tmp",
            "view": lambda: "people_v"}[kind]()
    rel = kanon_duckdb.anonymize(data, k=4, qi=QI, seed=7, con=con.c)
    assert isinstance(rel, duckdb.DuckDBPyRelation)
    assert rel.columns == EXPECTED_COLUMNS
    assert sorted(r[:-1] for r in rel.fetchall()) == base
    assert sorted(r[:-1] for r in rel.fetchall()) == base  # a relation can be read again


@pytest.mark.parametrize("kind", ["pandas", "polars", "arrow", "dataset"])
@pytest.mark.parametrize("through", ["connection", "cursor"])
def test_registered_objects_in_sql_equal_the_base_table_path(con, base, kind, through):
    """An object registered on the caller's connection (or on a cursor of it, the one running
    the statement) is read by k_anonymize in SQL through the same Python object
    (kanon_duckdb/registered.py); it stays private to that connection."""
    tbl = con.c.sql("FROM people").arrow()
    tbl = tbl.read_all() if isinstance(tbl, pa.RecordBatchReader) else tbl
    if kind == "polars":
        pl = pytest.importorskip("polars")
        data = pl.from_arrow(tbl)
    else:
        data = {"pandas": lambda: tbl.to_pandas(), "arrow": lambda: tbl,
                "dataset": lambda: ds.dataset(tbl)}[kind]()
    caller = con.c if through == "connection" else con.c.cursor()
    caller.register("People_Reg", data)
    try:
        assert _rows(caller, f"FROM k_anonymize('people_reg', {ARGS})") == base
        out = con.dir / f"reg_{kind}_{through}.parquet"
        caller.execute(f"COPY (FROM k_anonymize('People_Reg', {ARGS})) TO '{out}'")
        assert _rows(caller, f"FROM '{out}'") == base
        other = con.c.cursor() if through == "connection" else con.c
        with pytest.raises(duckdb.Error, match="people_reg.*does not exist"):
            other.execute(f"FROM k_anonymize('people_reg', {ARGS})").fetchall()
    finally:
        caller.unregister("People_Reg")
    with pytest.raises(duckdb.Error, match="people_reg.*does not exist"):
        caller.execute(f"FROM k_anonymize('people_reg', {ARGS})").fetchall()


def test_registered_record_batch_reader_in_sql_is_a_clear_error(con):
    tbl = con.c.sql("FROM people").arrow()
    tbl = tbl.read_all() if isinstance(tbl, pa.RecordBatchReader) else tbl
    con.c.register("people_rdr", tbl.to_reader())
    try:
        with pytest.raises(duckdb.Error, match="RecordBatchReader.*read_all"):
            con.c.execute(f"FROM k_anonymize('people_rdr', {ARGS})").fetchall()
    finally:
        con.c.unregister("people_rdr")


def test_registered_objects_are_released_with_their_connection():
    from kanon_duckdb import registered
    c = kanon_duckdb.connect()
    cid = registered.connection_id(c)
    c.register("t_reg", pa.table({"a": [1, 2]}))
    assert registered.lookup(cid, "T_REG")[0] == "t_reg"
    c.unregister("t_reg")
    assert registered.lookup(cid, "t_reg") is None
    c.register("t_reg", pa.table({"a": [1, 2]}))
    c.close()
    assert registered.lookup(cid, "t_reg") is None


def test_polars_dataframe():
    pl = pytest.importorskip("polars")
    c = kanon_duckdb.connect()
    try:
        df = pl.DataFrame({"a": [i % 5 for i in range(40)], "b": [str(i % 3) for i in range(40)]})
        out = kanon_duckdb.anonymize(df, k=4, qi=["a", "b"], con=c).pl()
        assert out.height == 40 and out["ec_size"].min() >= 4
    finally:
        c.close()


def test_source_never_modified(con):
    before = con.c.execute("SELECT md5(string_agg(people::VARCHAR, ',' ORDER BY id)) FROM people").fetchall()
    con.c.execute(f"FROM k_anonymize('people', {ARGS})").fetchall()
    kanon_duckdb.anonymize("people", k=4, qi=QI, con=con.c).fetchall()
    after = con.c.execute("SELECT md5(string_agg(people::VARCHAR, ',' ORDER BY id)) FROM people").fetchall()
    assert before == after


def test_temp_table_in_sql_equals_the_base_table_path(con, base):
    """A TEMP table is read in the caller's query (kanon_duckdb/caller_read.py)."""
    con.c.execute("CREATE OR REPLACE TEMP TABLE people_tmp AS FROM people")
    assert _rows(con.c, f"FROM k_anonymize('people_tmp', {ARGS})") == base
    assert _rows(con.c, f"FROM k_anonymize('temp.main.people_tmp', {ARGS})") == base


def test_inside_a_transaction_a_table_created_in_it_is_anonymized(con):
    """A table created in the open transaction is not visible to the reader cursor: it is read
    in the caller's query, and the transaction stays usable (its CREATE TABLE survives COMMIT)."""
    con.c.execute("BEGIN")
    try:
        con.c.execute("CREATE TABLE fresh AS SELECT i % 5 AS a FROM range(30) r(i)")
        rows = con.c.sql("FROM k_anonymize('fresh', k := 3, qi := ['a'])").fetchall()
        assert len(rows) == 30 and min(r[3] for r in rows) >= 3
        con.c.execute("COMMIT")
    except BaseException:
        con.c.execute("ROLLBACK")
        raise
    assert con.c.execute("SELECT count(*) FROM fresh").fetchall() == [(30,)]
    assert con.c.execute("SELECT count(*) FROM k_anonymize('fresh', k := 3, qi := ['a'])").fetchall() == [(30,)]


def test_python_api_inside_a_transaction_sees_the_new_table(con):
    con.c.execute("BEGIN")
    try:
        con.c.execute("CREATE TABLE fresh2 AS SELECT i % 5 AS a FROM range(30) r(i)")
        rows = kanon_duckdb.anonymize("fresh2", k=3, qi=["a"], con=con.c).fetchall()
        assert len(rows) == 30
    finally:
        con.c.execute("ROLLBACK")


def test_reader_calls_other_than_file_readers_are_refused(con):
    for bad in ("range(10)", "read_csv('x.csv'); DROP TABLE people; --",
                "read_parquet((SELECT 'x'))", "query('SELECT 1')"):
        with pytest.raises(duckdb.Error, match="does not exist"):
            con.c.execute("FROM k_anonymize(?, k := 2, qi := ['a'])", [bad]).fetchall()
    assert con.c.execute("SELECT count(*) FROM people").fetchall() == [(400,)]


def test_metric_helpers_on_a_relation_and_on_a_name(con):
    con.c.execute(f"CREATE OR REPLACE TABLE people_k4 AS FROM k_anonymize('people', {ARGS})")
    by_name = kanon_duckdb.gcp("people_k4", con=con.c)
    rel = kanon_duckdb.anonymize("people", k=4, qi=QI, seed=7, con=con.c)
    assert kanon_duckdb.gcp(rel, con=con.c) == pytest.approx(by_name)
    assert 0 < by_name < 1
    assert kanon_duckdb.discernibility(rel, con=con.c) == con.c.execute(
        "SELECT sum(ec_size) FROM people_k4").fetchall()[0][0]


def test_qi_names_are_case_insensitive_in_the_python_api(con):
    rel = kanon_duckdb.anonymize("people", k=4, qi=["AGE", "Zip", "sex"], seed=7, con=con.c)
    assert rel.columns == EXPECTED_COLUMNS


def test_metrics_read_files_and_names_from_a_column(con):
    con.c.execute(f"CREATE OR REPLACE TABLE people_k4 AS FROM k_anonymize('people', {ARGS})")
    con.c.execute("CREATE OR REPLACE TABLE people_k8 AS FROM k_anonymize('people', k := 8, "
                  "qi := ['age', 'zip', 'sex'], seed := 7)")
    out = con.dir / "people_k4.parquet"
    con.c.execute(f"COPY people_k4 TO '{out}'")
    g4, d4 = con.c.execute("SELECT gcp('people_k4'), discernibility('people_k4')").fetchall()[0]
    assert con.c.execute(f"SELECT gcp('{out}'), discernibility('{out}')").fetchall() == [(g4, d4)]
    assert con.c.execute(f"SELECT k_anonymity('{out}', ['age', 'zip', 'sex'])").fetchall()[0][0] >= 4
    rows = con.c.execute("SELECT t, kanon_metrics(t).gcp, kanon_metrics(t).discernibility "
                         "FROM (VALUES ('people_k4'), ('people_k8')) v(t) ORDER BY t").fetchall()
    g8 = con.c.execute("SELECT gcp('people_k8')").fetchall()[0][0]
    assert rows == [("people_k4", g4, d4), ("people_k8", g8, rows[1][2])]
    assert g8 >= g4
    cmp = con.c.execute("SELECT \"table\", gcp FROM kanon_compare(['people_k4', 'people_k8'])").fetchall()
    assert sorted(cmp) == [("people_k4", g4), ("people_k8", g8)]


def test_registered_objects_stay_with_their_database():
    """DuckDB's current_connection_id() is unique only within one database (two connect() calls
    both get the same id): closing a connection of database A must not drop what a connection
    of database B registered, and B must not be handed A's object of the same name."""
    a, b = kanon_duckdb.connect(), kanon_duckdb.connect()
    assert (a.sql("SELECT current_connection_id()").fetchall()
            == b.sql("SELECT current_connection_id()").fetchall())
    b.register("people_x", pa.table({"age": list(range(30)), "sex": ["F", "M"] * 15}))
    a.register("people_x", pa.table({"age": list(range(20)), "sex": ["F", "M"] * 10}))
    a.close()
    assert b.sql("SELECT count(*) FROM k_anonymize('people_x', 2, qi := ['age'])").fetchall()[0][0] == 30
    assert b.sql("SELECT k_anonymity('people_x', ['age'])").fetchall()[0][0] == 1


def test_database_dot_table_resolves_like_duckdb(con):
    """'other.t' names table t in the default schema of the ATTACHed database 'other' when no
    schema 'other' exists (DuckDB's own rule). resolve_source refused it before, so k_anonymize
    read it in the caller's query (the TEMP path, copied as text) and a full-domain run's
    kanon_mapping failed: its source was handed to the cursor as an ambiguous 'people'."""
    from kanon_duckdb.relation import resolve_source
    c = con.c
    c.execute("CREATE OR REPLACE TABLE other.main.people2 AS FROM people")
    assert resolve_source(c, "other.people2").sql == '"other"."main"."people2"'
    assert resolve_source(c.cursor(), "other.people2").sql == '"other"."main"."people2"'
    assert resolve_source(c, "hr.people").sql.startswith('"memory"."hr"')  # a schema still wins
    c.execute("CREATE OR REPLACE TABLE o_db2 AS FROM k_anonymize('other.people2', k := 4, "
              "algo := 'optimal', qi := ['age', 'sex'])")
    mapped = c.execute("FROM kanon_mapping('o_db2') ORDER BY ALL").fetchall()
    assert mapped == c.execute("FROM kanon_mapping('o_db2', source := 'people') ORDER BY ALL"
                               ).fetchall()
    assert sorted(r[1] for r in mapped if r[0] == "age") == sorted(
        str(v) for (v,) in c.execute("SELECT DISTINCT age FROM people").fetchall())
