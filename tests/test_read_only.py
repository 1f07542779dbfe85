"""A database opened read-only (kanon_duckdb/readonly.py): registration writes nothing into the
file (its macros go to the temp schema), every reading function gives the values it gives
read-write, and what must write (k_anonymize's kanon_runs row, the taxonomy builders) is refused
by a ReadOnlyDatabaseError that names the fix."""
import hashlib
import os

import duckdb
import pytest

import kanon_duckdb

QI = "['age', 'zip', 'sex']"
READS = {
    "gcp": "SELECT gcp('o')",
    "discernibility": "SELECT discernibility('o')",
    "cavg": "SELECT cavg('o')",
    "total_il": "SELECT total_il('o')",
    "suppression": "SELECT suppression('o')",
    "k_anonymity": f"SELECT k_anonymity('o', {QI})",
    "l_diversity": f"SELECT l_diversity('o', {QI}, 'dis')",
    "t_closeness": f"SELECT t_closeness('o', {QI}, 'dis')",
    "risk": f"SELECT reidentification_risk('o', {QI})",
    "query_error": "SELECT * FROM query_error("
                   "'SELECT count(*) FROM t WHERE age BETWEEN 30 AND 45 AND sex = ''F''', 't', 'o')",
    "metrics": "SELECT kanon_metrics('o')",
    "compare": "SELECT * FROM kanon_compare(['o'])",
    "mapping": "SELECT count(*) FROM kanon_mapping('o')",
    "runs": "SELECT run_id, k, algo FROM kanon_runs",
    "sex_tree": "SELECT count(*) FROM kanon_taxonomy WHERE attr = 'sex'",
}
WRITES = {
    "k_anonymize records each run in kanon_runs":
        f"SELECT count(*) FROM k_anonymize('t', k := 3, qi := {QI})",
    "the taxonomy builders write their trees in kanon_taxonomy":
        "SELECT kanon_build_flat('t', 'zip')",
}


def _state(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest(), os.stat(path).st_mtime_ns


def _reads(con):
    return {name: con.execute(sql).fetchall() for name, sql in READS.items()}


@pytest.fixture(scope="module")
def published(tmp_path_factory):
    """A database file holding t, its anonymization o (a tree for sex), and the values every
    READS query gives read-write."""
    path = str(tmp_path_factory.mktemp("ro") / "pub.duckdb")
    con = kanon_duckdb.connect(path)
    try:
        con.execute("CREATE TABLE t AS SELECT i AS id, 20 + (i * 7) % 50 AS age, "
                    "(10000 + (i * 13) % 97)::VARCHAR AS zip, CASE WHEN i % 2 = 0 THEN 'F' "
                    "ELSE 'M' END AS sex, ['flu', 'cold', 'hiv'][1 + i % 3] AS dis "
                    "FROM range(240) r(i)")
        con.execute("SELECT kanon_build_flat('t', 'sex')")
        con.execute(f"CREATE TABLE o AS FROM k_anonymize('t', k := 4, qi := {QI})")
        expected = _reads(con)
    finally:
        con.close()
    return path, expected


def _open_connect(path):
    return kanon_duckdb.connect(path, read_only=True)


def _open_register(path):
    return kanon_duckdb.register(duckdb.connect(path, read_only=True))


@pytest.mark.parametrize("opener", [_open_connect, _open_register])
def test_reads_equal_read_write_and_file_untouched(published, opener):
    path, expected = published
    before = _state(path)
    con = opener(path)
    try:
        assert _reads(con) == expected
        assert expected["k_anonymity"][0][0] >= 4 and expected["gcp"][0][0] > 0
        # the macros are the connection's own (temp), none written into the file
        where = con.execute("SELECT DISTINCT database_name FROM duckdb_functions() "
                            "WHERE function_name = 'query_error'").fetchall()
        assert ("temp",) in where
    finally:
        con.close()
    assert _state(path) == before


@pytest.mark.parametrize("what", sorted(WRITES))
def test_writes_are_refused_naming_the_fix(published, what):
    path, _ = published
    before = _state(path)
    con = kanon_duckdb.connect(path, read_only=True)
    try:
        with pytest.raises(duckdb.Error) as err:
            con.execute(WRITES[what]).fetchall()
        msg = str(err.value)
        assert "ReadOnlyDatabaseError" in msg and "opened read-only" in msg
        assert what in msg and "open it read-write" in msg and "ATTACH" in msg
        assert con.execute("SELECT count(*) FROM kanon_runs").fetchall() == [(1,)]
    finally:
        con.close()
    assert _state(path) == before


def test_attach_read_only_into_a_writable_connection_anonymizes(published):
    """The fix the message names: the run is recorded in the writable database."""
    path, _ = published
    before = _state(path)
    con = kanon_duckdb.connect()
    try:
        con.execute(f"ATTACH '{path}' AS pub (READ_ONLY)")
        con.execute(f"CREATE TABLE o2 AS FROM k_anonymize('pub.t', k := 4, qi := {QI})")
        assert con.execute(f"SELECT k_anonymity('o2', {QI})").fetchall()[0][0] >= 4
        assert con.execute("SELECT count(*) FROM memory.kanon_runs").fetchall() == [(1,)]
    finally:
        con.close()
    assert _state(path) == before


def test_a_plain_read_only_file_gets_temp_stand_ins_only(tmp_path):
    """A file never registered read-write (no kanon_runs, no kanon_taxonomy): the checks run,
    the stand-ins are temp tables, the file still has only its own table."""
    path = str(tmp_path / "plain.duckdb")
    raw = duckdb.connect(path)
    raw.execute("CREATE TABLE p AS SELECT (i % 5)::VARCHAR AS a, (i % 2)::VARCHAR AS s "
                "FROM range(50) r(i)")
    raw.close()
    before = _state(path)
    con = kanon_duckdb.connect(path, read_only=True)
    try:
        assert con.execute("SELECT k_anonymity('p', ['a'])").fetchall() == [(10,)]
        assert con.execute("SELECT l_diversity('p', ['a'], 's').distinct").fetchall() == [(2,)]
        tables = set(con.execute("SELECT database_name, table_name FROM duckdb_tables()").fetchall())
        assert tables == {("plain", "p"), ("temp", "kanon_runs"), ("temp", "kanon_taxonomy")}
    finally:
        con.close()
    assert _state(path) == before
