"""k_anonymize on relations only the caller's connection sees (kanon_duckdb/caller_read.py):
TEMP tables and views, an object registered before kanon_duckdb wrapped ``register``.

Each gives the base-table path's rows for the same data and seed (same classes, same published
values, same column names, order and types), leaves the source as it was, and is k-anonymous.
"""
from __future__ import annotations

import duckdb
import pyarrow as pa
import pytest

import kanon_duckdb
from kanon_duckdb import registered
from kanon_duckdb.encoding import _FLOAT_TYPES, _INT_TYPES, plan_qis
from kanon_duckdb.published import caller_bound_type

# Mixed kinds: integer, DECIMAL, DOUBLE, text, DATE (categorical), a case-mismatched QI name.
ARGS = "k := 5, qi := ['age', 'ZIP', 'score', 'born', 'sex', 'w'], seed := 3"


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    c.execute("""CREATE TABLE base AS SELECT i AS id, (20 + (i * 7) % 50)::INTEGER AS "Age",
                 'z' || (100 + (i * 13) % 9) AS zip, ((i * 11) % 23) * 1.25 AS score,
                 DATE '1990-01-01' + ((i * 5) % 4)::INTEGER AS born, 'n' || i AS note,
                 CASE WHEN i % 3 = 0 THEN 'F' ELSE 'M' END AS sex, ((i * 3) % 7) / 2.0 AS w
                 FROM range(300) r(i)""")
    c.execute("CREATE TEMP TABLE tmp AS FROM base")
    yield c
    c.close()


def _out(con, sql):
    rel = con.sql(sql)
    return rel.columns, [str(t) for t in rel.types], sorted(r[:-1] for r in rel.fetchall())


def _checksum(con, name):
    return con.execute(f'SELECT count(*), sum(hash(COLUMNS(*))) FROM "{name}"').fetchall()


@pytest.fixture(scope="module")
def base(con):
    return _out(con, f"FROM k_anonymize('base', {ARGS})")


def test_base_output_shape(base):
    cols, types, rows = base
    assert cols == ["id", "Age_min", "Age_max", "zip", "score_min", "score_max", "born", "note",
                    "sex", "w_min", "w_max", "ec", "ec_size", "suppressed", "kanon_run"]
    assert types[1:3] == ["INTEGER", "INTEGER"] and types[4:6] == ["DECIMAL(22,2)", "DECIMAL(22,2)"]
    assert len(rows) == 300


@pytest.mark.parametrize("make", [
    "CREATE OR REPLACE TEMP TABLE src AS FROM base",
    "CREATE OR REPLACE TEMP VIEW src AS FROM base",
])
def test_temp_relation_equals_the_base_table_path(con, base, make):
    con.execute(make)
    before = _checksum(con, "src")
    assert _out(con, f"FROM k_anonymize('src', {ARGS})") == base
    assert _checksum(con, "src") == before  # the source is never modified
    con.execute("DROP VIEW IF EXISTS src" if "VIEW" in make else "DROP TABLE src")


def test_temp_and_open_transaction_tables_of_a_database_file(con, base, tmp_path):
    """In a database file too (DuckDB refuses a view over a Python object there: the handed-over
    rows are registered on the reader cursor instead); the base path of the same data."""
    c = kanon_duckdb.connect(str(tmp_path / "f.duckdb"))
    try:
        c.register("rows", con.sql("FROM base").to_arrow_table())
        c.execute("CREATE TEMP TABLE src AS FROM rows")
        assert _out(c, f"FROM k_anonymize('src', {ARGS})") == base
        c.execute("BEGIN")
        c.execute("CREATE TABLE in_tx AS FROM rows")
        assert _out(c, f"FROM k_anonymize('in_tx', {ARGS})") == base
        c.execute("ROLLBACK")
    finally:
        c.close()


def test_temp_output_is_k_anonymous_and_truthful(con):
    rows = con.sql(f"FROM k_anonymize('tmp', {ARGS})").fetchall()
    raw = {r[0]: r for r in con.execute('SELECT id, "Age", score FROM tmp').fetchall()}
    classes = {}
    for r in rows:
        classes.setdefault(r[1:7] + r[8:11], []).append(r)
        assert r[1] <= raw[r[0]][1] <= r[2] and r[4] <= float(raw[r[0]][2]) <= r[5]
    assert len(rows) == 300 and min(len(v) for v in classes.values()) >= 5
    assert min(r[12] for r in rows) >= 5


def test_forced_kinds_and_sensitive_column_equal_the_base_path(con):
    args = ("k := 4, qi := ['age', 'zip', 'sex'], numeric := ['zip'], categorical := ['age'], "
            "sensitive := 'note', l := 2, seed := 1")
    con.execute("CREATE OR REPLACE TABLE base_num AS SELECT id, \"Age\", "
                "substr(zip, 2)::VARCHAR AS zip, sex, note FROM base")
    con.execute("CREATE OR REPLACE TEMP TABLE tmp_num AS FROM base_num")
    want = _out(con, f"FROM k_anonymize('base_num', {args})")
    assert want[0][:5] == ["id", "Age", "zip_min", "zip_max", "sex"]
    assert _out(con, f"FROM k_anonymize('tmp_num', {args})") == want


def test_object_registered_before_import_is_read_in_the_callers_query(con, base):
    """``registered._original_register`` is DuckDB's own register, as before the import."""
    tbl = con.sql("FROM base").arrow()
    tbl = tbl.read_all() if isinstance(tbl, pa.RecordBatchReader) else tbl
    registered._original_register(con, "early_reg", tbl)
    try:
        assert registered.lookup(registered.connection_id(con), "early_reg") is None
        assert _out(con, f"FROM k_anonymize('early_reg', {ARGS})") == base
    finally:
        con.unregister("early_reg")


def test_copy_of_a_temp_table_to_parquet(con, base, tmp_path):
    out = tmp_path / "tmp.parquet"
    con.execute(f"COPY (FROM k_anonymize('tmp', {ARGS})) TO '{out}'")
    assert _out(con, f"FROM '{out}'") == base


def test_quoted_temp_name_with_a_space(con):
    con.execute('CREATE OR REPLACE TEMP TABLE "my tmp" AS SELECT i % 4 AS a FROM range(12) r(i)')
    rows = con.sql("""FROM k_anonymize('"my tmp"', k := 3, qi := ['a'])""").fetchall()
    assert len(rows) == 12 and min(r[3] for r in rows) >= 3


def test_temp_bad_input_is_a_clear_error_and_nothing_is_created(con):
    with pytest.raises(duckdb.Error, match='"agee" not found'):
        con.sql("FROM k_anonymize('tmp', k := 2, qi := ['agee'])").fetchall()
    with pytest.raises(duckdb.Error, match="a bound of QI 'age'"):
        con.sql("FROM k_anonymize('tmp', k := 2, qi := ['age', 'age_min'])").fetchall()
    with pytest.raises(duckdb.Error, match="k=0 is invalid"):
        con.sql("FROM k_anonymize('tmp', k := 0, qi := ['age'])").fetchall()
    with pytest.raises(duckdb.Error, match="exceeds the number of rows"):
        con.execute("CREATE TABLE never AS FROM k_anonymize('tmp', k := 301, qi := ['age'])")
    assert not con.execute("SELECT * FROM duckdb_tables() WHERE table_name = 'never'").fetchall()
    con.execute("CREATE OR REPLACE TEMP TABLE tmp_empty AS FROM base LIMIT 0")
    with pytest.raises(duckdb.Error, match="is empty"):
        con.sql("FROM k_anonymize('tmp_empty', k := 2, qi := ['age'])").fetchall()


def test_names_that_are_not_table_names_are_never_read_in_the_callers_query(con):
    from kanon_duckdb.caller_read import table_name
    assert table_name("tmp") == '"tmp"' and table_name('temp.main."a b"') == '"temp"."main"."a b"'
    for bad in ("x; DROP TABLE base", "range(10)", "'x'", "a.b.c.d", "x.parquet", "dir/x",
                "*.csv", "", "a..b"):
        assert table_name(bad) is None, bad
    with pytest.raises(duckdb.Error, match="does not exist"):
        con.execute("FROM k_anonymize(?, k := 2, qi := ['a'])", ["x; DROP TABLE base; --"]).fetchall()
    assert con.execute("SELECT count(*) FROM base").fetchall() == [(300,)]


TYPES = sorted(_INT_TYPES - {"INT"}) + sorted(_FLOAT_TYPES) + [
    "DECIMAL(4,1)", "DECIMAL(38,10)", "BOOLEAN", "VARCHAR", "DATE", "TIMESTAMP", "TIMESTAMPTZ",
    "TIME", "INTERVAL", "BLOB", "UUID", "BIGNUM", "INTEGER[]", "STRUCT(a INTEGER)", "ENUM('a', 'b')"]


@pytest.mark.parametrize("sql_type", TYPES)
def test_overload_dispatch_follows_plan_qis(con, sql_type):
    """sql/caller_read.sql's overloads pick bounds exactly where encoding's plan_qis makes the
    QI numeric, of published.bound_type's type (the integer bound for integer QIs; a DECIMAL's
    own, published.caller_bound_type)."""
    con.execute(f"CREATE OR REPLACE TABLE typed AS SELECT NULL::{sql_type} AS v")
    plan = plan_qis(con, "typed", ["v"])
    cell, bound = con.execute("SELECT typeof(__kanon_cell(v, lo, hi, lab)), "
                              "typeof(__kanon_bound(v, v, 1::BIGINT, NULL::BIGINT, 0.5::DOUBLE)) "
                              "FROM (SELECT v, 1 AS lo, 2 AS hi, 'x' AS lab FROM typed)").fetchall()[0]
    assert cell.startswith("STRUCT(lo") == bool(plan.numeric), (cell, plan)
    want = caller_bound_type(plan.types["v"], bool(plan.integer)) if plan.numeric else "DOUBLE"
    assert bound == want, (bound, plan)


def test_metrics_of_a_temp_tables_output_equal_the_base_paths(con):
    """The run of a TEMP table is recorded like any (global ranges, trees): its stored output
    has the base-table output's metrics."""
    con.execute(f"CREATE OR REPLACE TABLE out_base AS FROM k_anonymize('base', {ARGS})")
    con.execute(f"CREATE OR REPLACE TABLE out_tmp AS FROM k_anonymize('tmp', {ARGS})")
    sql = "SELECT gcp('{t}'), discernibility('{t}'), total_il('{t}'), k_anonymity('{t}', ['Age', 'zip'])"
    got = con.execute(sql.format(t="out_tmp")).fetchall()[0]
    want = con.execute(sql.format(t="out_base")).fetchall()[0]
    assert got == pytest.approx(want, rel=1e-12) and want[3] >= 5
