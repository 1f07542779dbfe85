"""A TEMP table or view of the caller named like a regular table: DuckDB reads the TEMP one in
the caller's query, the UDFs' reader cursor sees only the regular one (kanon_duckdb/relation.py).
k_anonymize and the metric, check, query_error and classification_utility macros refuse the
name with the fixes (sql/00_shadow.sql) instead of silently reading the regular table; nothing
is recorded or created; the qualified names read the table each names."""
from __future__ import annotations

import duckdb
import pandas as pd
import pytest

import kanon_duckdb

QI = "qi := ['age', 'zip']"
SHADOW = "names a TEMP table or view of your connection, which shadows the table"


@pytest.fixture
def con():
    c = kanon_duckdb.connect()
    c.execute("CREATE TABLE p AS SELECT i AS id, (20 + (i * 7) % 40)::INTEGER AS age, "
              "'z' || (i % 3) AS zip FROM range(20) r(i)")
    yield c
    c.close()


def _runs(con):
    return con.execute("SELECT count(*) FROM kanon_runs").fetchall()[0][0]


@pytest.mark.parametrize("kind", ["TABLE", "VIEW"])
@pytest.mark.parametrize("name", ["p", "P", "main.p"])
def test_k_anonymize_refuses_a_temp_object_shadowing_a_table(con, kind, name):
    con.execute(f"CREATE TEMP {kind} p AS FROM memory.main.p WHERE id < 9")
    runs = _runs(con)
    with pytest.raises(duckdb.Error, match=SHADOW) as err:
        con.execute(f"CREATE TABLE never AS FROM k_anonymize('{name}', k := 3, {QI})")
    assert "'\"memory\".\"main\".\"p\"'" in str(err.value) and "temp." in str(err.value)
    assert _runs(con) == runs  # the check runs before the algorithm: nothing recorded
    assert not con.execute("FROM duckdb_tables() WHERE table_name = 'never'").fetchall()
    # the fixes the message names read the relation each names
    n, smallest = con.execute(f"SELECT count(*), min(ec_size) FROM k_anonymize('temp.main.p', "
                              f"k := 3, {QI})").fetchall()[0]
    assert n == 9 and smallest >= 3
    n, smallest = con.execute(f"SELECT count(*), min(ec_size) FROM k_anonymize('memory.main.p', "
                              f"k := 3, {QI})").fetchall()[0]
    assert n == 20 and smallest >= 3
    con.execute(f"DROP {kind} temp.main.p")
    assert con.execute(f"SELECT count(*) FROM k_anonymize('{name}', k := 3, {QI})").fetchall() == [(20,)]


@pytest.mark.parametrize("kind", ["TABLE", "VIEW"])
def test_metric_and_check_macros_refuse_a_temp_object_shadowing_a_table(con, kind):
    con.execute(f"CREATE TABLE o AS FROM k_anonymize('p', k := 3, {QI})")
    want = con.execute("SELECT gcp('o'), k_anonymity('o', ['age', 'zip'])").fetchall()
    con.execute(f"CREATE TEMP {kind} o AS FROM memory.main.o WHERE ec = 0")
    for sql in ("SELECT gcp('o')", "SELECT discernibility('o')",
                "SELECT k_anonymity('o', ['age', 'zip'])", "SELECT suppression('main.o')",
                "FROM kanon_classes('o')", "FROM kanon_compare(['memory.main.o', 'o'])",
                "SELECT kanon_metrics(t) FROM (VALUES ('o')) v(t)", "FROM kanon_mapping('o')"):
        with pytest.raises(duckdb.Error, match=SHADOW):
            con.execute(sql).fetchall()
    assert con.execute("SELECT gcp('memory.main.o'), k_anonymity('memory.main.o', ['age', 'zip'])"
                       ).fetchall() == want
    assert con.execute("SELECT kanon_metrics(t).gcp FROM (VALUES ('memory.main.o')) v(t)"
                       ).fetchall() == [want[0][:1]]
    con.execute(f"DROP {kind} temp.main.o")
    assert con.execute("SELECT gcp('o'), k_anonymity('o', ['age', 'zip'])").fetchall() == want


def test_query_error_refuses_a_temp_object_shadowing_either_table(con):
    con.execute(f"CREATE TABLE o AS FROM k_anonymize('p', k := 3, {QI})")
    q = "SELECT count(*) FROM p WHERE age < 40"
    want = con.execute(f"FROM query_error('{q}', 'p', 'o')").fetchall()
    for shadowed in ("p", "o"):
        con.execute(f"CREATE TEMP TABLE {shadowed} AS FROM memory.main.{shadowed} LIMIT 3")
        with pytest.raises(duckdb.Error, match=SHADOW):
            con.execute(f"FROM query_error('{q}', 'p', 'o')").fetchall()
        con.execute(f"DROP TABLE temp.main.{shadowed}")
    assert con.execute(f"FROM query_error('{q}', 'p', 'o')").fetchall() == want


def test_a_registered_object_named_like_a_table_is_read_not_refused(con):
    """con.register also makes a TEMP view, which the reader cursor is handed
    (kanon_duckdb/registered.py): both sides read the registered object."""
    con.register("p", pd.DataFrame({"id": range(6), "age": [30, 31, 32, 40, 41, 42],
                                    "zip": ["a", "a", "a", "b", "b", "b"]}))
    n, smallest = con.execute(f"SELECT count(*), min(ec_size) FROM k_anonymize('p', k := 3, "
                              f"{QI})").fetchall()[0]
    assert n == 6 and smallest >= 3
    con.register("o", con.sql(f"FROM k_anonymize('memory.main.p', k := 4, {QI})").to_arrow_table())
    assert con.execute("SELECT k_anonymity('o', ['age', 'zip'])").fetchall()[0][0] >= 4
