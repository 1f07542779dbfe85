"""kanon_mapping(anon_tbl): raw value -> published value of a full-domain run, per-class boxes of
a local-recoding run (issue 12 §2). Exact expected rows on small hand-checked tables."""
import duckdb
import pytest
from pathlib import Path

import kanon_duckdb
from kanon_duckdb.taxonomy import store

RELATIONSHIP_CSV = Path(__file__).resolve().parent / "fixtures" / "arx" / "relationship.csv"
RELATIONSHIP = RELATIONSHIP_CSV.read_text()


@pytest.fixture
def con():
    c = kanon_duckdb.connect()
    c.execute("CREATE TABLE t AS SELECT * FROM (VALUES (20, 'Husband'), (21, 'Wife'), "
              "(40, 'Own-child'), (41, 'Other relative'), (60, 'Not-in-family'), "
              "(61, 'Unmarried')) v(age, rel)")
    store.load_arx_taxonomy(c, "rel", str(RELATIONSHIP_CSV))
    c.execute("SELECT kanon_build_intervals('t', 'age', [20])")
    yield c
    c.close()


def test_full_domain_mapping(con):
    # only (age level 1, rel level 1) is 2-anonymous without suppression: [20,40) etc. and groups
    con.execute("CREATE TABLE o AS FROM k_anonymize('t', k := 2, algo := 'optimal', "
                "qi := ['age', 'rel'], max_suppression := 0)")
    rows = con.execute("FROM kanon_mapping('o') ORDER BY qi, raw").fetchall()
    assert rows == sorted([
        ("age", "20", None, None, 20.0, 21.0), ("age", "21", None, None, 20.0, 21.0),
        ("age", "40", None, None, 40.0, 41.0), ("age", "41", None, None, 40.0, 41.0),
        ("age", "60", None, None, 60.0, 61.0), ("age", "61", None, None, 60.0, 61.0),
        ("rel", "Husband", None, "Spouse", None, None),
        ("rel", "Wife", None, "Spouse", None, None),
        ("rel", "Own-child", None, "Other relative", None, None),
        ("rel", "Other relative", None, "Other relative", None, None),
        ("rel", "Not-in-family", None, "Not related", None, None),
        ("rel", "Unmarried", None, "Not related", None, None)], key=lambda r: (r[0], r[1]))
    # the mapping reproduces every published row from its raw row
    m = {(q, r): (lab, lo, hi) for q, r, _, lab, lo, hi in rows}
    got = sorted(con.execute("SELECT age_min, age_max, rel FROM o").fetchall())
    raw = con.execute("SELECT age, rel FROM t").fetchall()
    assert got == sorted((m[("age", str(a))][1], m[("age", str(a))][2], m[("rel", r)][0])
                         for a, r in raw)


def test_full_domain_lists_tree_leaves_absent_from_data(con):
    con.execute("DELETE FROM t WHERE rel IN ('Husband', 'Wife')")
    con.execute("CREATE TABLE o AS FROM k_anonymize('t', k := 2, algo := 'optimal', "
                "qi := ['rel'], max_suppression := 0)")
    labels = dict(con.execute("SELECT raw, label FROM kanon_mapping('o') WHERE qi = 'rel'").fetchall())
    assert labels["Husband"] == "Spouse" and len(labels) == 6


def test_local_recoding_boxes(con):
    # Mondrian: median cut of age at 40 / 41, rel generalized to the root in both classes
    con.execute("CREATE TABLE m AS FROM k_anonymize('t', k := 2, qi := ['age', 'rel'])")
    rows = con.execute("FROM kanon_mapping('m') ORDER BY ec, qi").fetchall()
    assert rows == [("age", None, 0, None, 20.0, 40.0), ("rel", None, 0, "*", None, None),
                    ("age", None, 1, None, 41.0, 61.0), ("rel", None, 1, "*", None, None)]


def test_not_an_anonymized_table(con):
    with pytest.raises(duckdb.Error, match="not an output of k_anonymize"):
        con.execute("FROM kanon_mapping('t')").fetchall()


@pytest.mark.parametrize("through", ["connection", "cursor"])
def test_mapping_of_a_registered_output_equals_the_tables(con, through):
    """An anonymized table registered as Arrow on the calling connection or cursor
    (registered.CallerConnection) maps as the table does."""
    con.execute("CREATE OR REPLACE TABLE m2 AS FROM k_anonymize('t', k := 2, qi := ['age', 'rel'])")
    caller = con if through == "connection" else con.cursor()
    caller.register("m2_arrow", con.sql("FROM m2").to_arrow_table())
    try:
        assert (caller.execute("FROM kanon_mapping('m2_arrow') ORDER BY ec, qi").fetchall()
                == con.execute("FROM kanon_mapping('m2') ORDER BY ec, qi").fetchall())
    finally:
        caller.unregister("m2_arrow")
        if caller is not con:
            caller.close()


def test_local_recoding_mapping_needs_no_source(con, tmp_path):
    """A local-recoding mapping is the output's own class boxes: it still lists them after the
    run's source is dropped or its database detached (it failed at bind time with DuckDB's
    'Table with name ... does not exist', the recorded source being bound as a relation).
    A full-domain mapping reads its source and still needs it (or source :=)."""
    con.execute("CREATE TABLE src AS FROM t")
    con.execute("CREATE TABLE o AS FROM k_anonymize('src', k := 2, qi := ['age', 'rel'])")
    before = con.execute("FROM kanon_mapping('o') ORDER BY ALL").fetchall()
    assert len(before) == 4  # 2 classes x 2 QIs
    con.execute("DROP TABLE src")
    assert con.execute("FROM kanon_mapping('o') ORDER BY ALL").fetchall() == before
    con.execute(f"ATTACH '{tmp_path / 'other.duckdb'}' AS other")
    con.execute("CREATE TABLE other.src2 AS FROM t")
    con.execute("CREATE TABLE o2 AS FROM k_anonymize('other.src2', k := 2, qi := ['age', 'rel'])")
    con.execute("CREATE TABLE o3 AS FROM k_anonymize('other.src2', k := 2, algo := 'optimal', "
                "qi := ['age', 'rel'])")
    before2 = con.execute("FROM kanon_mapping('o2') ORDER BY ALL").fetchall()
    before3 = con.execute("FROM kanon_mapping('o3') ORDER BY ALL").fetchall()
    con.execute("DETACH other")
    assert con.execute("FROM kanon_mapping('o2') ORDER BY ALL").fetchall() == before2
    with pytest.raises(duckdb.Error, match="other.src2"):
        con.execute("FROM kanon_mapping('o3')").fetchall()
    assert con.execute("FROM kanon_mapping('o3', source := 't') ORDER BY ALL").fetchall() == before3
