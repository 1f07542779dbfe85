"""The generated ``hospital`` example (kanon_duckdb/hospital_data.py): deterministic content,
every value a leaf of its tree, the tree shapes it is meant to have, and an anonymization."""
import hashlib

import pytest

import kanon_duckdb
from kanon_duckdb import hospital_data
from kanon_duckdb.errors import InvalidParameterError


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    assert kanon_duckdb.load_example(c, "hospital") == 40_000
    yield c
    c.close()


def test_same_rows_on_every_machine(con):
    rows = con.execute("SELECT * FROM hospital").fetchall()
    assert len(rows) == 40_000
    assert [c[0] for c in con.execute("DESCRIBE hospital").fetchall()] == hospital_data.COLUMNS
    # pinned: numpy's legacy RandomState stream is fixed across versions
    assert hashlib.sha256(repr(rows).encode()).hexdigest() == \
        "7a37662c64d8d2de177c892acf5bf1c872e99db2f027a9501312928e3981df8d"
    assert con.execute("SELECT sum(age), sum(length_of_stay), count(DISTINCT zip), "
                       "count(DISTINCT diagnosis) FROM hospital").fetchall() == [(1739544, 198068, 600, 120)]


def test_trees_have_the_documented_shape(con):
    from kanon_duckdb.taxonomy.store import read_index
    zip_tree = read_index(con, "zip")
    assert zip_tree.leaf_count == 600 and zip_tree.height == 5  # 10003 -> 1000* -> ... -> *****
    diag = read_index(con, "diagnosis")
    assert diag.leaf_count == 120 and diag.height == 3  # code -> block -> chapter -> *
    assert read_index(con, "insurance").height == 2 and read_index(con, "sex").height == 1
    # no pregnancy code for a man or a child (the generator redraws those)
    assert con.execute("SELECT count(*) FROM hospital WHERE diagnosis LIKE 'O%' "
                       "AND (sex = 'M' OR age < 14)").fetchall() == [(0,)]


def test_values_outside_a_tree_are_refused(con):
    from kanon_duckdb.errors import TaxonomyError
    from kanon_duckdb.examples_data import _check_adult_coverage
    con.execute("CREATE TABLE h2 AS FROM hospital LIMIT 10")
    con.execute("UPDATE h2 SET zip = '99999' WHERE age = (SELECT min(age) FROM h2)")
    with pytest.raises(TaxonomyError, match="zip='99999'"):
        _check_adult_coverage(con, "h2", hospital_data.COLUMNS)


def test_anonymizes_with_k_and_unknown_names_are_refused(con):
    from kanon_duckdb.demo import sql_list
    con.execute(f"CREATE TABLE h_bu AS FROM k_anonymize('hospital', k := 25, algo := 'bottomup', "
                f"qi := {sql_list(hospital_data.QI)})")
    n, smallest = con.execute("SELECT count(*), min(ec_size) FROM h_bu").fetchall()[0]
    assert n == 40_000 and smallest >= 25
    assert con.execute("SELECT min(c) FROM (SELECT count(*) c FROM h_bu GROUP BY ec)").fetchall()[0][0] >= 25
    with pytest.raises(InvalidParameterError, match="valid names: adult, hospital"):
        kanon_duckdb.load_example(con, "hospitals")
