"""A numeric QI's bounds keep the column's SQL type (published.bound_type): integers,
FLOAT/DOUBLE and DECIMAL(p, s) (any p) as they are, columns made numeric with ``numeric :=`` as
DOUBLE; on the base-table path, the Python API and the TEMP-table path (sql/caller_read.sql)
alike. The bounds stay truthful, and the readers that do arithmetic on them (the query rewriter)
widen them first.
"""
from __future__ import annotations

import pytest

import kanon_duckdb
from kanon_duckdb.published import bound_type, caller_bound_type
from kanon_duckdb.rewrite import kanon_rewrite

# column -> (SQL expression over i in range(240), the bounds' expected type)
COLUMNS = {
    "t1": ("(i % 200 - 100)::TINYINT", "TINYINT"),
    "s2": ("(i * 251 % 60000 - 30000)::SMALLINT", "SMALLINT"),
    "i4": ("(i * 7919 % 100000)::INTEGER", "INTEGER"),
    "i8": ("(i * 104729)::BIGINT - 9000000000000", "BIGINT"),
    "u1": ("(i % 250)::UTINYINT", "UTINYINT"),
    "u2": ("(i * 31 % 65000)::USMALLINT", "USMALLINT"),
    "u4": ("(i * 97)::UINTEGER", "UINTEGER"),
    "u8": ("(i * 1013)::UBIGINT", "UBIGINT"),
    "h16": ("(i * 3 - 300)::HUGEINT", "HUGEINT"),
    "f4": ("(i % 37 / 4)::FLOAT", "FLOAT"),
    "f8": ("(i % 41 / 3)::DOUBLE", "DOUBLE"),
    "dec": ("(i % 29 * 1.25)::DECIMAL(9,2)", "DECIMAL(9,2)"),
    "d18": ("(i % 31 * 1.5)::DECIMAL(18,4)", "DECIMAL(18,4)"),
    "txt": ("(i % 17)::VARCHAR", "DOUBLE"),  # numeric := ['txt']
}
QI = list(COLUMNS)
ARGS = f"k := 4, qi := {QI!r}, \"numeric\" := ['txt'], seed := 2"


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    cols = ", ".join(f"{expr} AS {name}" for name, (expr, _) in COLUMNS.items())
    c.execute(f"CREATE TABLE src AS SELECT i AS id, {cols} FROM range(240) r(i)")
    c.execute("CREATE TEMP TABLE tmp_src AS FROM src")
    c.execute(f"CREATE TABLE out AS FROM k_anonymize('src', {ARGS})")
    yield c
    c.close()


def _types(con, sql):
    rel = con.sql(sql)
    return dict(zip(rel.columns, (str(t) for t in rel.types)))


def test_bounds_keep_the_column_type(con):
    types = _types(con, "FROM out")
    for name, (_, want) in COLUMNS.items():
        assert types[f"{name}_min"] == want and types[f"{name}_max"] == want, name
    assert [types[c] for c in ("ec", "ec_size", "suppressed", "kanon_run")] == [
        "BIGINT", "BIGINT", "BOOLEAN", "BIGINT"]


def test_bound_type_rule():
    assert bound_type("SMALLINT", True) == "SMALLINT"
    assert bound_type("FLOAT", False) == "FLOAT"
    assert bound_type("DECIMAL(18,3)", False) == "DECIMAL(18,3)"
    assert bound_type("DECIMAL(15,3)", False) == "DECIMAL(15,3)"
    assert bound_type("DECIMAL(5, 2)", False) == "DECIMAL(5,2)"
    assert bound_type("DECIMAL(16,0)", False) == "DECIMAL(16,0)"
    assert bound_type("DECIMAL", False) == "DECIMAL(18,3)"
    assert caller_bound_type("DECIMAL(5,2)", False) == "DECIMAL(5,2)"
    assert caller_bound_type("SMALLINT", True) == "SMALLINT"
    assert bound_type("VARCHAR", False) == "DOUBLE"


def test_bounds_are_truthful_and_k_anonymous(con):
    checks = " AND ".join(
        f"s.{c} BETWEEN o.{c}_min AND o.{c}_max" if c != "txt"
        else f"s.{c}::DOUBLE BETWEEN o.{c}_min AND o.{c}_max" for c in QI)
    bad, n = con.execute(f"SELECT count(*) FILTER (WHERE NOT ({checks})), count(*) "
                         f"FROM src s JOIN out o USING (id)").fetchall()[0]
    assert (bad, n) == (0, 240)
    assert con.execute("SELECT min(ec_size), min(c) FROM out, (SELECT count(*) AS c FROM out "
                       "GROUP BY ec)").fetchall()[0] >= (4, 4)


def test_temp_table_and_python_api_publish_the_same_types_and_rows(con):
    # the TEMP-table path publishes the same types (a DECIMAL's own, also past 15 digits)
    want = con.execute("SELECT * EXCLUDE (kanon_run) FROM out ORDER BY id").fetchall()
    temp = f"SELECT * EXCLUDE (kanon_run) FROM k_anonymize('tmp_src', {ARGS}) ORDER BY id"
    assert _types(con, temp) == _types(con, "SELECT * EXCLUDE (kanon_run) FROM out")
    assert con.execute(temp).fetchall() == want
    rel = kanon_duckdb.anonymize("src", k=4, qi=QI, numeric=["txt"], seed=2, con=con)
    assert dict(zip(rel.columns, map(str, rel.types))) == _types(con, "FROM out")


def test_rewriter_widens_narrow_bounds(con):
    """A TINYINT class spanning -100..99 has 200 points: c_max - c_min + 1 overflows TINYINT, and
    so does c_min + c_max for a midpoint; the rewritten queries widen the bounds first."""
    con.execute("CREATE OR REPLACE TABLE wide AS SELECT (i - 100)::TINYINT AS t, 'x' AS g "
                "FROM range(200) r(i)")
    con.execute("CREATE OR REPLACE TABLE wide_out AS FROM k_anonymize('wide', k := 200, qi := ['t'])")
    assert con.execute("SELECT DISTINCT t_min, t_max FROM wide_out").fetchall() == [(-100, 99)]
    count = kanon_rewrite(con, "SELECT count(*) FROM wide WHERE t BETWEEN 0 AND 49", "wide_out")
    assert con.execute(count).fetchall()[0][0] == pytest.approx(50.0)
    avg = kanon_rewrite(con, "SELECT avg(t) FROM wide", "wide_out")
    assert con.execute(avg).fetchall()[0][0] == pytest.approx(-0.5)
    grouped = kanon_rewrite(con, "SELECT t, count(*) FROM wide GROUP BY t ORDER BY t", "wide_out")
    rows = con.execute(grouped).fetchall()
    assert len(rows) == 200 and all(r[1] == pytest.approx(1.0) for r in rows)
