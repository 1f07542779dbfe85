"""kanon_runs recording (runs.record_run): the UDFs' own cursors insert first and complete the
table only when the insert cannot bind it; any other connection completes it first, so a
caller's open transaction is never aborted by a failed statement."""
import pytest

import kanon_duckdb
from kanon_duckdb import runs
from kanon_duckdb.anonymize import anonymize
from kanon_duckdb.runs import RUNS_DDL, RunRecord, own_cursor, record_run

Q = "SELECT count(*) FROM k_anonymize('t', k := 2, qi := ['a', 'b'])"


@pytest.fixture
def con():
    c = kanon_duckdb.connect()
    c.execute("CREATE TABLE t AS SELECT i % 7 AS a, 'v' || (i % 3) AS b FROM range(40) r(i)")
    yield c
    c.close()


def _rec():
    return RunRecord(source="t", k=2, algo="mondrian", qi=["a"], numeric_qi=["a"],
                     categorical_qi=[], params={}, seed=0, n_rows=4, n_classes=2, n_suppressed=0,
                     elapsed_s=0.1, qi_loss=[0.25], num_lo=[1.0], num_hi=[9.0], qi_trees=[None])


def _runs(con):
    return con.execute("SELECT run_id, source, k, n_rows, num_lo FROM kanon_runs ORDER BY run_id"
                       ).fetchall()


def test_sql_run_recreates_a_dropped_kanon_runs(con):
    assert con.execute(Q).fetchall() == [(40,)]
    con.execute("DROP TABLE kanon_runs")
    assert con.execute(Q).fetchall() == [(40,)]
    assert _runs(con) == [(1, "t", 2, 40, [0.0])]
    assert con.execute(Q).fetchall() == [(40,)]
    assert [r[0] for r in _runs(con)] == [1, 2]


def test_sql_run_completes_a_kanon_runs_of_an_earlier_version(con):
    # replaced after connect(): only the run itself can complete it
    con.execute("DROP TABLE kanon_runs")
    ddl = "\n".join(line for line in RUNS_DDL.splitlines()
                    if not line.strip().startswith(("qi_trees", "num_lo", "num_hi")))
    con.execute(ddl.replace("DOUBLE[],\n)", "DOUBLE[]\n)").rstrip().rstrip(","))
    assert "num_lo" not in {r[0] for r in con.execute("DESCRIBE kanon_runs").fetchall()}
    assert con.execute(Q).fetchall() == [(40,)]
    assert _runs(con) == [(1, "t", 2, 40, [0.0])]


def test_own_cursor_inserts_without_the_table_check(con, monkeypatch):
    calls = []
    real = runs.ensure_runs_table
    monkeypatch.setattr(runs, "ensure_runs_table", lambda c: (calls.append(c), real(c))[1])
    cur = con.cursor()
    assert record_run(cur, _rec()) == 1 and calls == [cur]  # not marked: checked first
    own = own_cursor(con.cursor())
    assert record_run(own, _rec()) == 2 and calls == [cur]  # marked: the insert alone
    con.execute("DROP TABLE kanon_runs")
    assert record_run(own, _rec()) == 1 and calls == [cur, own]  # the insert failed: completed
    assert [r[0] for r in _runs(con)] == [1]


def test_python_run_in_an_open_transaction_keeps_it_usable(con):
    con.execute("BEGIN")
    con.execute("DROP TABLE kanon_runs")
    res = anonymize(con, "t", k=2, qi=["a", "b"])  # the table is made first, no failed statement
    assert res.run_id == 1
    con.execute("INSERT INTO t VALUES (1, 'v1')")  # the transaction is still usable
    con.execute("COMMIT")
    assert _runs(con) == [(1, "t", 2, 40, [0.0])]
    assert con.execute("SELECT count(*) FROM t").fetchall() == [(41,)]


def test_sql_runs_of_one_statement_get_distinct_ids(con):
    # two runs of one statement record from parallel threads through their own cursors
    con.execute("CREATE TABLE u AS SELECT i % 5 AS a, 'w' || (i % 2) AS b FROM range(30) r(i)")
    assert con.execute(
        "SELECT (SELECT count(*) FROM k_anonymize('t', k := 2, qi := ['a', 'b'])), "
        "(SELECT count(*) FROM k_anonymize('u', k := 3, qi := ['a', 'b']))").fetchall() == [(40, 30)]
    assert sorted((r[0], r[1]) for r in _runs(con)) in ([(1, "t"), (2, "u")], [(1, "u"), (2, "t")])
