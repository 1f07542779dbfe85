"""Start-up: connect() imports nothing heavy; the shipped Adult files equal a fresh build."""
import json
import logging
import os
import subprocess
import sys
from importlib import resources

import duckdb
import pytest

import kanon_duckdb

from kanon_duckdb import examples_data as ex


def test_connect_and_load_example_import_no_numba_sqlglot_pandas():
    code = ("import sys, kanon_duckdb\n"
            "con = kanon_duckdb.connect(); kanon_duckdb.load_example(con)\n"
            "print(sorted(m for m in ('numba', 'sqlglot', 'pandas', 'scipy', 'sklearn') "
            "if m in sys.modules)); con.close()\n")
    env = {**os.environ, "KANON_DUCKDB_PRELOAD": "0"}  # the background preload imports numba
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=env)
    assert out.stdout.strip().splitlines()[0] == "[]"


def test_shipped_adult_files_equal_a_build_from_sources():
    con = duckdb.connect()
    with resources.as_file(ex.data_dir("adult") / "adult.data.gz") as src:
        ex._create_adult_table(con, str(src))
    built = con.sql("SELECT * FROM adult").fetchall()
    with resources.as_file(ex.data_dir("adult") / ex.TABLE_FILE) as path:
        shipped = con.execute("SELECT * FROM read_parquet(?)", [str(path)]).fetchall()
        types = con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(path)]).fetchall()
    assert shipped == built and len(built) == ex.ADULT_ROWS
    assert [t[1] for t in types] == [t[1] for t in con.sql("DESCRIBE adult").fetchall()]
    with resources.as_file(ex.data_dir("adult") / ex.TAXONOMY_FILE) as path:
        edges = con.execute("SELECT attr, child, parent FROM read_parquet(?)", [str(path)]).fetchall()
    assert edges == ex.adult_taxonomy_edges(con)
    con.close()


def test_the_shipped_adult_values_are_leaves_of_their_trees():
    # load_example no longer checks this at every load: this test does, for the shipped files
    con = duckdb.connect()
    try:
        assert ex.load_example(con) == ex.ADULT_ROWS
        ex._check_adult_coverage(con)
    finally:
        con.close()


def test_a_run_with_a_tree_refuses_an_adult_value_missing_from_it():
    # what stands in for the load-time check: the run codes its QIs against their trees
    con = kanon_duckdb.connect()
    try:
        kanon_duckdb.load_example(con)
        con.execute("UPDATE adult SET workclass = 'Astronaut' WHERE rowid = 0")
        with pytest.raises(duckdb.InvalidInputException,
                           match="TaxonomyError: 1 value.*'workclass'.*'Astronaut'"):
            con.execute("SELECT count(*) FROM k_anonymize('adult', k := 10, qi := ['age', "
                        "'workclass'])").fetchall()
    finally:
        con.close()


def test_load_example_refuses_a_value_missing_from_its_tree():
    con = duckdb.connect()
    ex.load_example(con)
    con.execute("UPDATE adult SET workclass = 'Astronaut' WHERE rowid = 0")
    import pytest

    from kanon_duckdb.errors import TaxonomyError
    with pytest.raises(TaxonomyError, match="workclass='Astronaut'"):
        ex._check_adult_coverage(con)
    con.close()


def test_compile_notice_logs_once_when_numba_compiles(caplog):
    import numba

    from kanon_duckdb.warmup import compile_notice

    @numba.njit
    def twice(x):
        return 2 * x

    @numba.njit
    def thrice(x):
        return 3 * x

    with caplog.at_level(logging.WARNING, logger="kanon_duckdb"), compile_notice("demo_algo"):
        assert twice(2) == 4 and thrice(1.5) == 4.5
    notes = [r.getMessage() for r in caplog.records if "compiling" in r.getMessage()]
    assert notes == [notes[0]] and notes[0].startswith("compiling demo_algo kernels, first use only")
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="kanon_duckdb"), compile_notice("demo_algo"):
        assert twice(3) == 6  # compiled already: silent
    assert not caplog.records


def test_warmup_runs_each_named_algorithm_and_refuses_unknown_ones():
    import pytest

    from kanon_duckdb.errors import InvalidParameterError
    from kanon_duckdb.warmup import warmup

    times = warmup(["mondrian"])
    assert list(times) == ["mondrian"] and times["mondrian"] > 0
    with pytest.raises(InvalidParameterError, match="unknown algo 'nosuch'"):
        warmup(["nosuch"])


def test_numba_openmp_workers_do_not_spin_unless_the_user_says_so():
    # busy-waiting OpenMP workers took the cores DuckDB's threads need (issue 14: statement CPU
    # 0.27 s -> 0.12 s on Adult); a value the user set is kept
    code = ("import os, kanon_duckdb._numba_config; print(os.environ['OMP_WAIT_POLICY'])")
    env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env=env)
    assert out.stdout.strip() == "PASSIVE"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**env, "OMP_WAIT_POLICY": "ACTIVE"})
    assert out.stdout.strip() == "ACTIVE"


def test_a_kanon_runs_table_of_an_earlier_version_gets_its_missing_columns(tmp_path):
    # ensure_runs_table skips the DDL for a complete table (one catalog look-up per run); an
    # older table (no qi_trees/num_lo/num_hi) must still be completed before a run records
    import duckdb

    import kanon_duckdb
    from kanon_duckdb.runs import RUNS_DDL, RunRecord, record_run
    path = str(tmp_path / "old.duckdb")
    old = duckdb.connect(path)
    ddl = "\n".join(line for line in RUNS_DDL.splitlines()
                    if not line.strip().startswith(("qi_trees", "num_lo", "num_hi")))
    old.execute(ddl.replace("DOUBLE[],\n)", "DOUBLE[]\n)").rstrip().rstrip(","))
    before = {r[0] for r in old.execute("DESCRIBE kanon_runs").fetchall()}
    old.close()
    assert "qi_trees" not in before and "num_lo" not in before
    con = kanon_duckdb.connect(path)
    rec = RunRecord(source="t", k=2, algo="mondrian", qi=["a"], numeric_qi=["a"],
                    categorical_qi=[], params={}, seed=0, n_rows=4, n_classes=2, n_suppressed=0,
                    elapsed_s=0.1, qi_loss=[0.25], num_lo=[1.0], num_hi=[9.0], qi_trees=[None])
    assert record_run(con, rec) == 1 and record_run(con, rec) == 2
    assert con.execute("SELECT run_id, num_lo, num_hi, qi_trees FROM kanon_runs ORDER BY run_id"
                       ).fetchall() == [(1, [1.0], [9.0], [None]), (2, [1.0], [9.0], [None])]
    con.close()


@pytest.mark.slow
def test_warmup_compiles_the_lattice_large_table_kernels_for_both_code_dtypes():
    # the first optimal at 1M rows compiled group_node_parallel for 13.6 s although
    # `kanon-duckdb warmup` had run: real runs reach that pass only from 2^18 distinct tuples
    import dataclasses

    import numpy as np
    from numba.core import event

    from kanon_duckdb import warmup as W
    from kanon_duckdb.algorithms.lattice import NodeChecker, build_space
    from kanon_duckdb.algorithms.lattice import _kernels as K
    from kanon_duckdb.encoding import encode, plan_qis

    times = W.warmup(["optimal", "datafly"])
    assert list(times) == ["optimal", W.LATTICE_THREADED, "datafly"]
    con = kanon_duckdb.connect()
    con.execute(W._WARMUP_SQL.replace("range(400)", "range(3000)"))
    plan = plan_qis(con, "__kanon_warmup", W._WARMUP_QI)
    _, data = encode(con, plan, need_num_trees=True, histogram=True)
    con.close()
    space = build_space(data)
    compiled = []

    class Count(event.Listener):
        def on_start(self, ev):
            compiled.append(ev.data["dispatcher"].py_func.__name__)

        def on_end(self, ev):
            pass

    listener = Count()
    event.register("numba:compile", listener)
    try:
        for dtype in (np.uint16, np.int32):  # int32: a level with 65,536 values or more
            sp = dataclasses.replace(space, code_dtype=dtype)
            ch = NodeChecker(sp, 3, 0.01, stop_early=True)
            ch.parallel_min = 0  # as a table with 2^18 distinct tuples
            before = len(K.group_node_parallel.overloads)
            res = ch.check(ch.bounds)
            assert res.n_classes > 0 or res.n_suppressed == -1
            # the pass reads the byte planes: one overload whatever the codes' dtype
            assert len(K.group_node_parallel.overloads) == before == 1
            ch = NodeChecker(sp, 3, 0.01, stop_early=True)
            ch.bucket_min = 0  # as a table with 2^15 distinct tuples: buckets
            low = tuple(0 for _ in ch.top)
            ch.check(low, keep_table=True)  # the planes, or a stop past cap
            ch.check(tuple(min(1, int(h)) for h in ch.top))  # rolled up from the cache or planes
            *args, ks, _ = ch._kernel_args(ch.top, ch._run_kernels(low)[:2] + (
                ch._run_kernels(low)[3], low))
            assert args[0].dtype == dtype  # a cached table's codes
            assert len(K.group_buckets.overloads) == 3  # planes, uint16 and int32 tables
    finally:
        event.unregister("numba:compile", listener)
    assert compiled == []


KERNELS_LOADED = r"""
import json, os, sys
import kanon_duckdb
from kanon_duckdb import warmup
from numba.core.dispatcher import Dispatcher
con = kanon_duckdb.connect()
kanon_duckdb.load_example(con)
if warmup._preload_thread is not None:
    warmup._preload_thread.join()
def loaded():
    out = set()
    for name, mod in list(sys.modules.items()):
        if name.startswith("kanon_duckdb"):
            for v in list(vars(mod).values()):
                if isinstance(v, Dispatcher):
                    out |= {f"{v.py_func.__module__}.{v.py_func.__name__}{s}" for s in v.overloads}
    return out
before = loaded() if "numba" in sys.modules else set()
con.execute("SELECT count(*) FROM k_anonymize('adult', k := 10, qi := ['age', 'workclass', "
            "'education', 'marital_status', 'occupation', 'race', 'sex', 'native_country'])"
            ).fetchall()
print(json.dumps([sorted(before), sorted(loaded() - before)]))
con.close()
"""


def _kernels_loaded(preload: str):
    env = {**os.environ, "KANON_DUCKDB_PRELOAD": preload}
    out = subprocess.run([sys.executable, "-c", KERNELS_LOADED], capture_output=True, text=True,
                         check=True, env=env, timeout=300)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_the_preload_loads_the_kernels_of_adults_first_call_and_little_else():
    # the first call then loads nothing, and the preload spends nothing on kernels that call
    # does not use (its warm-up table's DOUBLE QI added _fill_float and the rank path, and the
    # row-assignment kernels, which a base table of Adult's size no longer uses), except the
    # remap of a text QI without a tree (the warm-up table's; common in users' tables)
    preloaded, then = _kernels_loaded("1")
    nothing, first_call = _kernels_loaded("0")
    assert nothing == [] and len(first_call) >= 5
    assert then == [] and set(first_call) <= set(preloaded)
    assert {f.split("(")[0] for f in set(preloaded) - set(first_call)} <= {
        "kanon_duckdb.encoding._remap_codes"}
    # k alone: the privacy kernels are not loaded (spec.has_class_models reads no kernel)
    assert not [f for f in first_call if "privacy" in f]


def test_the_preload_starts_after_the_functions_and_before_the_macros(monkeypatch):
    # from there on registration runs inside DuckDB (GIL released): the preload overlaps it
    from kanon_duckdb import warmup
    seen = []

    def spy():
        seen.append([r[0] for r in con.execute(
            "SELECT DISTINCT function_type FROM duckdb_functions() WHERE function_name IN "
            "('__kanon_run', 'k_anonymize') ORDER BY 1").fetchall()])

    monkeypatch.setattr(warmup, "preload_in_background", spy)
    con = duckdb.connect()
    try:
        kanon_duckdb.register(con)
        assert seen == [["scalar"]]  # the UDF exists, the table macro not yet
        assert con.execute("SELECT count(*) FROM duckdb_functions() WHERE function_name = "
                           "'k_anonymize'").fetchall() == [(1,)]
    finally:
        con.close()


def test_the_preload_shortens_the_gil_switch_interval_while_it_runs_only():
    # DuckDB retakes the GIL after each statement; with the preload holding it, each waited up
    # to the 5 ms default (about 100 statements in register())
    from kanon_duckdb import warmup as W
    before = sys.getswitchinterval()
    try:
        sys.setswitchinterval(0.005)
        previous = W._hand_over_sooner()
        assert previous == 0.005 and sys.getswitchinterval() == W.PRELOAD_SWITCH_INTERVAL
        W._restore_switch_interval(previous)
        assert sys.getswitchinterval() == 0.005
        previous = W._hand_over_sooner()
        sys.setswitchinterval(0.002)  # the caller's own setting wins
        W._restore_switch_interval(previous)
        assert sys.getswitchinterval() == 0.002
        sys.setswitchinterval(0.0001)  # already shorter: left alone
        assert W._hand_over_sooner() is None and sys.getswitchinterval() == pytest.approx(1e-4)
    finally:
        sys.setswitchinterval(before)
    code = ("import sys, kanon_duckdb\nfrom kanon_duckdb import warmup\n"
            "con = kanon_duckdb.connect()\nwarmup._preload_thread.join()\n"
            "print(sys.getswitchinterval()); con.close()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "KANON_DUCKDB_PRELOAD": "1"})
    assert float(out.stdout.split()[-1]) == 0.005


def test_the_collector_pauses_for_registration_and_the_preload_and_comes_back():
    # start-up's objects are long-lived: collector passes over them were ~0.03 s of numba's
    # import; the collector is on again once register() and the preload are both done
    code = ("import gc, json\nimport kanon_duckdb\nfrom kanon_duckdb import warmup\n"
            "seen = [gc.isenabled()]\n"
            "orig = warmup.preload_in_background\n"
            "def spy():\n    orig(); seen.append(gc.isenabled())\n"
            "warmup.preload_in_background = spy\n"
            "con = kanon_duckdb.connect()\nseen.append(gc.isenabled())\n"
            "warmup._preload_thread.join()\nseen.append(gc.isenabled())\n"
            "gc.disable(); con2 = kanon_duckdb.connect(); seen.append(gc.isenabled())\n"
            "print(json.dumps(seen)); con.close(); con2.close()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "KANON_DUCKDB_PRELOAD": "1"})
    # on after import; off inside register(); still off after connect() while the preload runs
    # (unless it already ended); on once it has; a caller's gc.disable() is left alone
    seen = json.loads(out.stdout.strip().splitlines()[-1])
    assert seen[0] is True and seen[1] is False and seen[3] is True and seen[4] is False


def test_gc_holds_nest_and_restore_the_state_they_found():
    import gc

    from kanon_duckdb import warmup as W
    was = gc.isenabled()
    try:
        gc.enable()
        W.hold_gc()
        W.hold_gc()
        assert not gc.isenabled()
        W.release_gc()
        assert not gc.isenabled()  # one hold left
        W.release_gc()
        assert gc.isenabled()
        gc.disable()
        with W.gc_held():
            assert not gc.isenabled()
        assert not gc.isenabled()  # it was off: stays off
    finally:
        (gc.enable if was else gc.disable)()


def test_udf_types_are_parsed_once_and_serve_later_connections():
    from kanon_duckdb import udf_spec
    a = duckdb.connect()
    t = udf_spec.sql_type("STRUCT(x BIGINT[], y VARCHAR)", a)
    assert udf_spec.sql_type("STRUCT(x BIGINT[], y VARCHAR)") is t
    assert str(t) == str(duckdb.sqltype("STRUCT(x BIGINT[], y VARCHAR)"))
    a.close()
    b = duckdb.connect()  # the type outlives the connection that parsed it
    try:
        udf_spec.create(b, udf_spec.UDF("__t_f", lambda s: {"x": [1], "y": s}, ("VARCHAR",),
                                        "STRUCT(x BIGINT[], y VARCHAR)", arrow=False))
        assert b.execute("SELECT __t_f('q')").fetchall() == [({"x": [1], "y": "q"},)]
    finally:
        b.close()
