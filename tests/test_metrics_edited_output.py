"""Metrics of an anonymized table edited by hand after its run refuse it, naming the problem
and the fix (run k_anonymize again), instead of measuring the edited rows as if the run had
published them: bounds inverted (c_min > c_max), a NULL suppressed flag, a class whose ec_size no
longer matches its rows (a row deleted, added or moved, or ec_size changed), and rows deleted or
added as whole classes (the row count differs from the run's kanon_runs.n_rows).
One aggregate and one GROUP BY over the table, memoized with the metric's column look-up until
the database changes (udfs/metrics.py), so a repeated metric costs nothing more.

Before: every edit below gave a number (gcp 0.0667 -> 0.0633 for one inverted class, say)."""
import duckdb
import pytest

import kanon_duckdb

METRICS = ["gcp('{t}')", "total_il('{t}')", "gen_total_il('{t}')", "discernibility('{t}')",
           "cavg('{t}')", "cavg('{t}', 5)", "suppression('{t}')", "cm('{t}', 'label')"]
LAYOUT = ("gcp", "total_il", "gen_total_il")  # read the numeric bounds through the run's layout
EDITS = {  # edit -> (SQL on table e, words the error names, metrics that must refuse it)
    "inverted bounds": ("UPDATE e SET age_min = age_max + 1 WHERE ec = (SELECT min(ec) FROM e "
                        "WHERE age_min < age_max)", "age_min > age_max", LAYOUT),
    "NULL suppressed": ("UPDATE e SET suppressed = NULL WHERE id = 7", "NULL suppressed", None),
    "ec_size changed": ("UPDATE e SET ec_size = ec_size + 1 WHERE id = 7", "ec_size", None),
    "a row deleted": ("DELETE FROM e WHERE id = 7", "ec_size", None),
    "a row added": ("INSERT INTO e SELECT * FROM e WHERE id = 7", "ec_size", None),
    # verify7: one row's flag flipped (k_anonymize suppresses whole classes); measured before
    "suppressed flipped": ("UPDATE e SET suppressed = NOT suppressed WHERE id = 7",
                           "suppressed and published", None),
}


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    c.execute("CREATE TABLE t AS SELECT i AS id, (i * 37) % 90 AS age, ['a', 'b', 'c'][1 + i % 3] "
              "AS c, ['y', 'n'][1 + i % 2] AS label FROM range(300) r(i)")
    c.execute("CREATE TABLE o AS FROM k_anonymize('t', k := 5, qi := ['age', 'c'])")
    yield c
    c.close()


@pytest.mark.parametrize("edit", list(EDITS))
def test_metrics_refuse_a_table_edited_after_its_run(con, edit):
    sql, words, which = EDITS[edit]
    con.execute("CREATE OR REPLACE TABLE e AS FROM o")
    fresh = {m: con.execute(f"SELECT {m.format(t='e')}").fetchall() for m in METRICS}
    assert fresh == {m: con.execute(f"SELECT {m.format(t='o')}").fetchall() for m in METRICS}
    con.execute(sql)
    for m in METRICS:
        if which is not None and not m.startswith(which):
            continue
        with pytest.raises(duckdb.Error, match="edited after") as exc:
            con.execute(f"SELECT {m.format(t='e')}").fetchall()
        msg = str(exc.value)
        assert words in msg and "'e'" in msg and "run k_anonymize again" in msg, (m, msg)
    # the original, untouched, still measures
    assert con.execute("SELECT gcp('o'), discernibility('o')").fetchall() == \
        [(fresh["gcp('{t}')"][0][0], fresh["discernibility('{t}')"][0][0])]


def test_whole_classes_of_an_output_are_measured_as_they_are(con):
    con.execute("CREATE OR REPLACE TABLE half AS FROM o WHERE ec % 2 = 0")
    want = con.execute("SELECT sum(n * n) FROM (SELECT count(*) AS n FROM half GROUP BY ec)"
                       ).fetchall()[0][0]
    assert con.execute("SELECT discernibility('half')").fetchall()[0][0] == want
    assert 0 <= con.execute("SELECT gcp('half')").fetchall()[0][0] <= 1
