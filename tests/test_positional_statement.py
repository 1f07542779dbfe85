"""k_anonymize on a base table pairs the run's rows with the second read by position (issue 14
item 2: no per-row look-up, no join, no count): the same output as the class-join path, and a
clear error when the table changed between the two reads."""
from __future__ import annotations

import json

import duckdb
import pytest

import kanon_duckdb
from kanon_duckdb.udfs import anonymize as udf_anonymize
from kanon_duckdb.udfs.anonymize import read_in_order
from kanon_duckdb.relation import resolve_source

QI = ["age", "score", "zip", "sex"]
ARGS = "k := 4, qi := ['age', 'score', 'zip', 'sex'], seed := 5"


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    # NULLs in every QI kind, repeated QI tuples, a DOUBLE and a SMALLINT QI, non-QI columns of
    # types that must come through unchanged
    c.execute("""CREATE TABLE t AS SELECT i AS id,
        CASE WHEN i % 23 = 0 THEN NULL ELSE (20 + (i * 7) % 50)::SMALLINT END AS age,
        CASE WHEN i % 19 = 0 THEN NULL ELSE ((i * 13) % 40) / 4.0 END::DOUBLE AS score,
        CASE WHEN i % 29 = 0 THEN NULL ELSE 'z' || (i % 6) END AS zip,
        CASE WHEN i % 3 = 0 THEN 'F' ELSE 'M' END AS sex,
        (i / 7)::DECIMAL(9, 2) AS amount, DATE '2020-01-01' + i::INTEGER AS day,
        [i, i + 1] AS tags, {'a': i, 'b': 'x' || i} AS info, ('b' || i)::BLOB AS raw
        FROM range(600) r(i)""")
    c.execute("CREATE VIEW t_view AS SELECT * FROM t")
    yield c
    c.close()


def _statement(con, name, algo="mondrian"):
    spec = {"k": 4, "algo": algo, "qi": QI, "seed": 5, "numeric": None, "categorical": None,
            "taxonomies": None, "params": None, "named": None, "conn": 0}
    return con.execute("SELECT __kanon_sql(?, ?)", [name, json.dumps(spec)]).fetchall()[0][0]


def _output(con, name, algo):
    rel = con.sql(f"FROM k_anonymize('{name}', {ARGS}, algo := '{algo}')")
    return rel.columns, [str(t) for t in rel.types], sorted(map(repr, (r[:-1] for r in rel.fetchall())))


@pytest.mark.parametrize("algo", ["mondrian", "kmember", "cof_mondrian", "optimal", "datafly",
                                  "kgen", "random"])
def test_a_base_table_is_paired_by_position_and_equals_the_class_join_path(con, algo):
    assert "POSITIONAL JOIN" in _statement(con, "t", algo)
    assert "POSITIONAL JOIN" not in _statement(con, "t_view", algo)  # a view: the class join
    assert _output(con, "t", algo) == _output(con, "t_view", algo)
    # k-anonymous, truthful row by row, every row once, the run recorded
    con.execute(f"CREATE OR REPLACE TABLE o AS FROM k_anonymize('t', {ARGS}, algo := '{algo}')")
    assert con.sql("SELECT count(*), count(DISTINCT id), min(ec_size) FILTER (NOT suppressed) >= 4 "
                   "FROM o").fetchall() == [(600, 600, True)]
    assert con.sql("SELECT count(*) FROM (SELECT ec, count(*) AS n, any_value(ec_size) AS s FROM o "
                   "GROUP BY ec) WHERE n <> s").fetchall() == [(0,)]
    assert con.sql("""SELECT count(*) FROM t JOIN o USING (id) WHERE
        NOT (t.age IS NULL AND o.age_min IS NULL OR t.age BETWEEN o.age_min AND o.age_max)
        OR NOT (t.score IS NULL AND o.score_min IS NULL OR t.score BETWEEN o.score_min AND o.score_max)
        OR (o.zip <> '*' AND o.zip IS DISTINCT FROM t.zip) OR (o.sex <> '*' AND o.sex <> t.sex)
        OR t.amount <> o.amount OR t.day <> o.day OR t.tags <> o.tags OR t.info <> o.info
        OR t.raw <> o.raw""").fetchall() == [(0,)]
    # a class of NULL zips publishes NULL (the NULL leaf's label), never over a non-NULL zip
    nulls, wrong = con.sql("SELECT count(*) FILTER (o.zip IS NULL), count(*) FILTER (o.zip IS NULL "
                           "AND t.zip IS NOT NULL) FROM t JOIN o USING (id)").fetchall()[0]
    assert wrong == 0 and (nulls > 0 or algo != "mondrian")
    # the same class ids and published values row by row as the class join (full-domain runs
    # are put in row order by their own grouping of the rows: their ec ids must survive it)
    assert (con.sql("SELECT * EXCLUDE (kanon_run) FROM o ORDER BY id").fetchall()
            == con.sql(f"SELECT * EXCLUDE (kanon_run) FROM k_anonymize('t_view', {ARGS}, "
                       f"algo := '{algo}') ORDER BY id").fetchall())
    run = con.sql("SELECT DISTINCT kanon_run FROM o").fetchall()
    assert len(run) == 1
    assert con.execute("SELECT n_rows, algo FROM kanon_runs WHERE run_id = ?", [run[0][0]]).fetchall() == [(600, algo)]


def test_which_relations_are_paired_by_position(con, monkeypatch, tmp_path):
    con.execute(f"ATTACH '{tmp_path}/other.duckdb' AS other")
    con.execute("CREATE TABLE other.main.t2 AS SELECT * FROM t")
    cur = con.cursor()
    try:
        assert read_in_order(resolve_source(cur, "t"))
        assert read_in_order(resolve_source(cur, "other.main.t2"))  # DuckDB file
        assert not read_in_order(resolve_source(cur, "t_view"))
        monkeypatch.setattr(udf_anonymize, "POSITIONAL_ROWS", 599)
        assert not read_in_order(resolve_source(cur, "t"))  # too many rows
        monkeypatch.setattr(udf_anonymize, "POSITIONAL_ROWS", 600)
        assert read_in_order(resolve_source(cur, "t"))
    finally:
        cur.close()
        con.execute("DETACH other")


def test_unordered_scans_take_the_class_join_path():
    c = kanon_duckdb.connect()
    try:
        c.execute("CREATE TABLE u AS SELECT i AS id, i % 13 AS a FROM range(100) r(i)")
        c.execute("SET preserve_insertion_order = false")
        cur = c.cursor()
        assert not read_in_order(resolve_source(cur, "u"))
        cur.close()
        rows = c.sql("SELECT id, a_min, a_max, ec_size FROM k_anonymize('u', k := 5, qi := ['a'])").fetchall()
        assert len(rows) == 100 and all(lo <= i % 13 <= hi and s >= 5 for i, lo, hi, s in rows)
    finally:
        c.close()


@pytest.mark.parametrize("change", [
    "DELETE FROM w WHERE id % 10 = 3",                                 # the first read has fewer rows
    "INSERT INTO w SELECT 1000 + i, NULL, NULL FROM range(5) r(i)",    # more rows (all-NULL QIs)
    "UPDATE w SET a = a + 100 WHERE id = 250",                         # a QI value differs
])
@pytest.mark.parametrize("query", ["FROM k_anonymize('w', k := 3, qi := ['a', 'b'])",
                                   "SELECT count(*) FROM k_anonymize('w', k := 3, qi := ['a', 'b'])",
                                   "SELECT id FROM k_anonymize('w', k := 3, qi := ['a', 'b'])",
                                   "FROM k_anonymize('w', k := 3, qi := ['a', 'b'], algo := 'optimal')",
                                   "SELECT id FROM k_anonymize('w', k := 3, qi := ['a', 'b'], algo := 'datafly')"])
@pytest.mark.parametrize("path", ["positional", "row values"])
def test_a_table_that_changed_between_the_reads_is_a_clear_error(change, query, path, monkeypatch):
    """The caller's open transaction reads the table as it was; the run's reader, a cursor,
    reads it as another connection committed it since: the positional pairing must refuse,
    and so must the statement of ``output_sql`` (``row_values``: DuckDB drops unread
    projections, so its per-row look-up must not be one), whatever columns the caller reads."""
    if path == "row values":
        monkeypatch.setattr(udf_anonymize, "POSITIONAL_ROWS", 0)
    c = kanon_duckdb.connect()
    try:
        c.execute("CREATE TABLE w AS SELECT i AS id, i % 50 AS a, (i % 7)::VARCHAR AS b FROM range(500) r(i)")
        c.execute("BEGIN")
        assert c.sql("SELECT count(*) FROM w").fetchall() == [(500,)]  # the caller's snapshot
        other = c.cursor()  # another connection: its change commits at once
        other.execute(change)
        with pytest.raises(duckdb.Error, match="changed during the call"):
            c.execute(query).fetchall()
        c.execute("ROLLBACK")
        other.close()
    finally:
        c.close()


def test_a_histogram_run_is_put_in_row_order_and_refuses_a_different_read():
    """``assignment.classes_in_order`` hands each row key its tuple's class as many times as
    the histogram counted it; a key it did not count, one key too many, or a row missing is
    ConcurrentChangeError (the key read then differs from the histogram's read)."""
    import numpy as np
    from types import SimpleNamespace
    from kanon_duckdb.assignment import Assignment, classes_in_order
    from kanon_duckdb.errors import ConcurrentChangeError
    tuple_keys = np.array([40, 10, 30], dtype=np.uint64)
    data = SimpleNamespace(counts=np.array([2, 1, 3], dtype=np.int64), num=np.zeros((3, 1)),
                           num_null=np.zeros((3, 1), dtype=bool),
                           cat=np.arange(3, dtype=np.int32).reshape(3, 1))
    a = Assignment(tuple_keys, np.array([7, 5, 6]), data)
    rows = np.array([30, 40, 10, 30, 40, 30], dtype=np.uint64)
    assert classes_in_order(a, rows).tolist() == [6, 7, 5, 6, 7, 6]
    for bad in ([30, 40, 10, 30, 40, 99], [30, 40, 10, 30, 40, 40], [30, 40, 10, 30, 40]):
        with pytest.raises(ConcurrentChangeError, match="changed during the call"):
            classes_in_order(a, np.array(bad, dtype=np.uint64))


def test_a_full_domain_run_with_a_sensitive_column_is_paired_by_position(con):
    """With a sensitive column the full-domain histogram is DuckDB's GROUP BY over (QIs,
    sensitive), put in row order by a read of the row keys (``rows_in_order``): the same rows
    as the class join, l-diverse."""
    con.execute("CREATE OR REPLACE TABLE ts AS SELECT *, (id % 4)::VARCHAR AS disease FROM t")
    con.execute("CREATE OR REPLACE VIEW ts_view AS SELECT * FROM ts")
    spec = {"k": 4, "algo": "optimal", "qi": QI, "seed": 5, "numeric": None, "categorical": None,
            "taxonomies": None, "params": {"sensitive": "disease", "l": 2}, "named": None,
            "conn": 0}
    text = con.execute("SELECT __kanon_sql('ts', ?)", [json.dumps(spec)]).fetchall()[0][0]
    assert "POSITIONAL JOIN" in text
    args = f"{ARGS}, algo := 'optimal', sensitive := 'disease', l := 2"
    out = con.sql(f"SELECT * EXCLUDE (kanon_run) FROM k_anonymize('ts', {args}) ORDER BY id").fetchall()
    assert out == con.sql(f"SELECT * EXCLUDE (kanon_run) FROM k_anonymize('ts_view', {args}) "
                          f"ORDER BY id").fetchall()
    assert len(out) == 600
    assert con.sql(f"SELECT count(*) FROM (SELECT ec, count(DISTINCT disease) AS d, "
                   f"bool_and(suppressed) AS s FROM k_anonymize('ts', {args}) GROUP BY ec) "
                   f"WHERE d < 2 AND NOT s").fetchall() == [(0,)]
