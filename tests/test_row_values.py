"""The statement of ``output_sql`` publishes each row's class values from ``__kanon_row``
(``row_values``: no join to a class table): the same rows, values and types as the positional
statement on every QI type, the class bounds of its rows, every row when the caller reads no
published column. Its refusal of a relation changed between the two reads, whichever columns
the caller reads: test_positional_statement.py."""
from __future__ import annotations

import math
import struct

import pytest

import kanon_duckdb
from kanon_duckdb.udfs import anonymize as udf_anonymize

# every kind of ROW_TYPE list: INTEGER (i32), other integer types (i64, cast), DOUBLE/DECIMAL
# (f64), FLOAT (f64, cast), labels; NULLs, NaN and -0.0, a DATE made categorical
QI = ["n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10", "c1", "c2", "c3"]
NUMERIC = ["n1", "n2", "n3", "n4", "n5", "n6", "n7", "n8", "n9", "n10"]


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    c.execute("""CREATE TABLE m AS SELECT i AS id,
        CASE WHEN i % 17 = 0 THEN NULL ELSE (hash(i) % 90)::INTEGER END AS n1,
        (hash(i + 1) % 1000)::BIGINT AS n2, (hash(i + 2) % 1000)::DOUBLE / 10 AS n3,
        CASE WHEN i % 23 = 0 THEN NULL ELSE (hash(i + 3) % 50)::SMALLINT END AS n4,
        (hash(i + 8) % 7)::TINYINT AS n5, (hash(i + 9) % 300)::UBIGINT AS n6,
        (hash(i + 10) % 77)::HUGEINT AS n7, (hash(i + 11) % 500)::DECIMAL(8, 2) / 7 AS n8,
        (hash(i + 12) % 64)::FLOAT / 4 AS n9,
        CASE WHEN i % 31 = 0 THEN 'NaN'::DOUBLE WHEN i % 37 = 0 THEN -0.0
             ELSE (hash(i + 13) % 9)::DOUBLE END AS n10,
        CASE WHEN i % 29 = 0 THEN NULL ELSE 'a' || (hash(i + 4) % 10) END AS c1,
        'b' || (hash(i + 5) % 40) AS c2, DATE '2020-01-01' + (hash(i + 6) % 30)::INTEGER AS c3,
        (hash(i + 99) % 1000003)::DOUBLE / 7 AS payload
        FROM range(3000) r(i)""")
    c.execute("CREATE VIEW m_view AS SELECT * FROM m")
    yield c
    c.close()


def _bits(v):
    """A value with floats by their bits (-0.0 and NaN compare exactly)."""
    return ("f", struct.pack("<d", v)) if isinstance(v, float) else v


def _rows(con, sql):
    rel = con.sql(sql)
    rows = sorted((tuple(map(_bits, r[:-1])) for r in rel.fetchall()), key=repr)
    return rel.columns, [str(t) for t in rel.types], rows


@pytest.mark.parametrize("qi, algo", [(QI, "mondrian"), (QI, "kmember"), (["c1"], "mondrian"),
                                      (["n9", "n1"], "mondrian"), (["c2", "c3"], "mondrian"),
                                      (["n1", "n4", "c1", "c3"], "optimal"), (["n9", "c2"], "datafly")])
def test_the_row_statement_equals_the_positional_statement(con, qi, algo):
    args = f"k := 5, qi := {qi!r}, algo := '{algo}'"
    by_row = _rows(con, f"FROM k_anonymize('m_view', {args})")  # a view: the row statement
    by_position = _rows(con, f"FROM k_anonymize('m', {args})")  # a base table: by position
    assert by_row == by_position


def test_the_python_api_equals_the_sql_statement(con):
    rel = kanon_duckdb.anonymize("m_view", k=4, qi=QI, con=con)
    api = (rel.columns, [str(t) for t in rel.types],
           sorted((tuple(map(_bits, r[:-1])) for r in rel.fetchall()), key=repr))
    assert api == _rows(con, f"FROM k_anonymize('m_view', k := 4, qi := {QI!r})")


def test_published_bounds_are_the_class_extremes_of_its_rows(con, monkeypatch):
    """Mondrian publishes each class's minimum and maximum (NULL when the class holds a NULL or
    NaN): checked against the source rows grouped by the published ``ec``, for a base table
    published by the row statement (positional pairing turned off)."""
    monkeypatch.setattr(udf_anonymize, "POSITIONAL_ROWS", 0)
    con.execute(f"CREATE OR REPLACE TABLE o AS FROM k_anonymize('m', k := 5, qi := {QI!r})")
    src = {r[0]: r[1:] for r in con.sql(f"SELECT id, {', '.join(NUMERIC)} FROM m").fetchall()}
    out = con.sql(f"SELECT id, ec, ec_size, {', '.join(f'{c}_min, {c}_max' for c in NUMERIC)} "
                  "FROM o").fetchall()
    assert sorted(r[0] for r in out) == sorted(src)
    classes = {}
    for r in out:
        classes.setdefault(r[1], []).append(r)
    for rows in classes.values():
        assert len(rows) == rows[0][2] >= 5
        for j in range(len(NUMERIC)):
            values = [src[r[0]][j] for r in rows]
            published = {(r[3 + 2 * j], r[4 + 2 * j]) for r in rows}
            assert len(published) == 1
            lo, hi = published.pop()
            if any(v is None or (isinstance(v, float) and math.isnan(v)) for v in values):
                assert lo is None and hi is None
            else:
                assert (lo, hi) == (min(values), max(values))


def test_a_query_reading_no_published_column_still_runs_and_publishes_every_row(monkeypatch):
    monkeypatch.setattr(udf_anonymize, "POSITIONAL_ROWS", 0)
    c = kanon_duckdb.connect()
    try:
        c.execute("CREATE TABLE w AS SELECT i AS id, i % 50 AS a FROM range(500) r(i)")
        assert c.sql("SELECT count(*) FROM k_anonymize('w', k := 3, qi := ['a'])").fetchall() == [(500,)]
        assert c.sql("SELECT count(DISTINCT id) FROM k_anonymize('w', k := 3, qi := ['a'])"
                     ).fetchall() == [(500,)]
        assert c.sql("SELECT count(*) FROM kanon_runs").fetchall() == [(2,)]
    finally:
        c.close()


@pytest.mark.parametrize("algo, params", [("datafly", ", max_suppression := 0.05"), ("mondrian", "")])
def test_chunks_of_any_length_and_suppressed_rows(con, algo, params):
    """A filtered view hands ``__kanon_row`` chunks of many lengths (its shared columns are
    prefixes of one buffer); with suppression some classes publish ``suppressed``. The same
    rows as the positional statement over a table of the view's rows."""
    con.execute("CREATE OR REPLACE VIEW m_sparse AS SELECT * FROM m WHERE hash(id) % 3 <> 1")
    con.execute("CREATE OR REPLACE TABLE m_dense AS FROM m_sparse")
    args = f"k := 10, qi := ['n1', 'c1'], algo := '{algo}'{params}"
    by_row = _rows(con, f"FROM k_anonymize('m_sparse', {args})")
    assert by_row == _rows(con, f"FROM k_anonymize('m_dense', {args})")
    suppressed = by_row[0].index("suppressed")
    assert (algo == "datafly") == any(r[suppressed] for r in by_row[2])
