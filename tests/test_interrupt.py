"""Interruption: ``con.interrupt()`` (and Ctrl-C, which raises the same flag) stops every algorithm
family within about a second, writing nothing and recording no run."""
import threading
import time

import pytest

import kanon_duckdb
from kanon_duckdb import interrupt
from kanon_duckdb.algorithms import registry
from kanon_duckdb.errors import RunInterrupted


def _stopped_progress():
    """A guarded progress callback whose run was already asked to stop."""
    with interrupt.watch(None, lambda _f: None) as progress:
        pass
    progress.flag[0] = 1
    return progress


@pytest.mark.parametrize("name", sorted(registry()))
def test_every_algorithm_honours_the_stop_flag(name):
    """Every registered algorithm (new ones included) raises RunInterrupted for a stopped run."""
    from kanon_duckdb.encoding import encode, plan_qis
    algo = registry()[name]
    con = kanon_duckdb.connect()
    try:
        _table(con, 300)
        plan = plan_qis(con, "t", ["a", "b", "c"], None, None)
        _rowid, data = encode(con, plan, need_num_trees=algo.needs_num_trees)
        with pytest.raises(RunInterrupted):
            algo.run(data, 3, 0, dict(algo.params), _stopped_progress())
    finally:
        con.close()


def test_mondrian_kernel_returns_early_when_flagged():
    from kanon_duckdb.algorithms import mondrian
    from kanon_duckdb.encoding import encode, plan_qis
    con = kanon_duckdb.connect()
    _table(con, 5000)
    _rowid, data = encode(con, plan_qis(con, "t", ["a", "b", "c"], None, None))
    con.close()
    with pytest.raises(RunInterrupted):
        mondrian.partition_rows(data, 2, progress=_stopped_progress())


def test_stop_runs_reaches_only_that_connections_runs():
    a, b = kanon_duckdb.connect(), kanon_duckdb.connect()
    try:
        ca = a.cursor()
        with interrupt.watch(a, lambda _f: None) as pa_, interrupt.watch(b, lambda _f: None) as pb:
            ca.interrupt()  # a cursor of a: stops a's runs, not b's
            assert pa_.flag[0] == 1 and pb.flag[0] == 0
            with pytest.raises(RunInterrupted):
                pa_(0.5)
            pb(0.5)
        ca.close()
    finally:
        a.close()
        b.close()


def _table(con, n):
    con.execute(f"""CREATE TABLE t AS SELECT (hash(i) % 90)::INTEGER AS a,
                       (hash(i + 7) % 100000) / 1000.0 AS b, (hash(i + 13) % 1000)::INTEGER AS c
                   FROM range({int(n)}) r(i)""")


def _interrupted_after(con, sql, delay):
    """Run ``sql``, call con.interrupt() from another thread after ``delay`` s; returns the
    seconds from the interrupt to the statement's failure."""
    when = {}

    def later():
        time.sleep(delay)
        when["t"] = time.perf_counter()
        con.interrupt()

    th = threading.Thread(target=later)
    th.start()
    try:
        with pytest.raises(Exception) as exc:
            con.execute(sql)
        end = time.perf_counter()
    finally:
        th.join()
    assert "interrupt" in str(exc.value).lower()
    assert "t" in when, "the statement ended before the interrupt"
    return end - when["t"]


@pytest.mark.parametrize("algo,n,params", [
    ("kab", 600, "iterations := 1000000"),       # unbounded black-hole iterations
    ("kmember", 40000, ""),                      # O(n^2/k) greedy clustering
])
def test_con_interrupt_stops_a_long_run_within_two_seconds(algo, n, params):
    con = kanon_duckdb.connect()
    try:
        _table(con, n)
        extra = f", {params}" if params else ""
        # warm up (numba compiles) on a few rows
        con.execute("CREATE TABLE small AS FROM t LIMIT 60")
        warm_extra = ", iterations := 1" if algo == "kab" else extra
        con.execute(f"FROM k_anonymize('small', k := 3, algo := '{algo}', qi := ['a', 'b', 'c']{warm_extra})").fetchall()
        runs = con.execute("SELECT count(*) FROM kanon_runs").fetchone()[0]
        took = _interrupted_after(
            con, f"CREATE TABLE out AS FROM k_anonymize('t', k := 2, algo := '{algo}', "
                 f"qi := ['a', 'b', 'c']{extra})", 1.5)
        assert took < 2.0, f"{algo} stopped {took:.2f} s after con.interrupt()"
        assert con.execute("SELECT count(*) FROM kanon_runs").fetchone()[0] == runs
        assert not con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'out'").fetchone()[0]
        # the connection stays usable
        assert con.execute("SELECT count(*) FROM t").fetchone()[0] == n
    finally:
        con.close()
