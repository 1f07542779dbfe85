"""Start-up and fixed per-statement overhead (issue 14 items 2 and 3).

Three sections, each measured in fresh processes of this interpreter:

1. Start-up split, numba's cache warm: median seconds over ``--repeat`` processes of
   ``import kanon_duckdb``, ``connect()``, ``load_example(con, 'adult')`` (and the three
   together: wall, and as ``data cpu`` the process CPU, the preload thread's share included),
   the first ``k_anonymize`` (Adult, k = 10, mondrian, 8 QIs, ``SELECT count(*)``; wall, and
   the process CPU while it runs: the preload thread's share included) and a second one; once
   with the background preload of ``connect()`` (default) and once with
   ``KANON_DUCKDB_PRELOAD=0``. Run ``kanon-duckdb warmup --algos mondrian`` first so nothing
   compiles.
2. Fixed overhead on Adult (30,162 rows, the demo's 8 QIs: age, education_num numeric), k = 10,
   ``mondrian`` and ``optimal`` (0 % suppression; also on ARX's 8 QIs): the whole statement
   ``CREATE OR REPLACE TABLE o AS FROM k_anonymize(...)`` against ``anonymize()``'s own time
   (``kanon_runs.elapsed_s``), wall and CPU seconds (process CPU, all threads: less noisy on a
   shared machine), median of ``--repeat`` statements in one process; the write alone (the
   output's 21 columns copied by ``CREATE TABLE AS`` through the statement's own sink operator)
   and the ratio without it; ``CREATE TABLE AS SELECT * FROM adult`` (15 columns, default
   plan); the same output fetched to Python (``fetchall``) next to ``SELECT * FROM adult``
   fetched the same way; and the statement's wall time split into its stages (before the run:
   parse, bind, plan; ``anonymize()``; the run record; the per-row values; DuckDB's second
   read, pairing, guard and write), from clock marks around the run and the per-row values;
   DuckDB's side alone (CPU): the statement's text with the run's per-row values from a cache,
   whole, without the change guard, and counted instead of written.
3. ``--cold``: the demo's default path (``run_demo(ks=[10])``: mondrian, Adult, the SQL metrics)
   in a process whose numba cache is an empty directory (``NUMBA_CACHE_DIR``), wall and CPU.

On a shared machine run it under ``flock /tmp/kanon-bench.lock``; the figures name the table.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SPLIT = r"""
import json, time
t0, c0 = time.perf_counter(), time.process_time()
import kanon_duckdb
t1 = time.perf_counter()
con = kanon_duckdb.connect()
t2 = time.perf_counter()
kanon_duckdb.load_example(con)
t3, c3 = time.perf_counter(), time.process_time()
q = ("SELECT count(*) FROM k_anonymize('adult', k := 10, qi := ['age', 'workclass', 'education', "
     "'marital_status', 'occupation', 'race', 'sex', 'native_country'])")
con.execute(q).fetchall()
t4, c4 = time.perf_counter(), time.process_time()
con.execute(q).fetchall()
t5 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "connect": t2 - t1, "load_example": t3 - t2,
                  "up to data": t3 - t0, "data cpu": c3 - c0, "first call": t4 - t3,
                  "first cpu": c4 - c3,
                  "second call": t5 - t4}))
con.close()
"""
OVERHEAD = r"""
import json, statistics, sys, time
import kanon_duckdb
import kanon_duckdb.udfs.anonymize as udfs_anonymize
from kanon_duckdb.demo import DEFAULT_QI, k_anonymize_sql
algo, repeat = sys.argv[1], int(sys.argv[2])
qi = json.loads(sys.argv[3]) if len(sys.argv) > 3 else DEFAULT_QI
con = kanon_duckdb.connect()
kanon_duckdb.load_example(con)
sql = k_anonymize_sql("adult", 10, algo, qi)
ctas = "CREATE OR REPLACE TABLE o AS " + sql
P = time.perf_counter
marks = {}
def marked(name, fn, before, after):
    # the statement's stages: clock marks around the run (udfs/anonymize.py run_on) and the
    # per-row values (rows_arrow / classes_arrow), the only Python steps inside the statement
    def wrapper(*a, **kw):
        marks[before] = P()
        try:
            return fn(*a, **kw)
        finally:
            marks[after] = P()
    setattr(udfs_anonymize, name, wrapper)
marked("run_on", udfs_anonymize.run_on, "run0", "run1")
for name in ("rows_arrow", "classes_arrow"):
    marked(name, getattr(udfs_anonymize, name), "pub0", "pub1")
for _ in range(2):
    con.execute(ctas)
def clock():
    return P(), time.process_time()
keys = ("stmt", "stmt_cpu", "inner", "before", "record", "publish", "duckdb", "fetch", "fetch_src",
        "copy_cpu", "write", "write_cpu")
rows = {key: [] for key in keys}
for _ in range(repeat):
    _w, c = clock()
    con.execute("CREATE OR REPLACE TABLE c AS SELECT * FROM adult")  # the source's width, no run
    rows["copy_cpu"].append(clock()[1] - c)
    marks.clear()
    w, c = clock()
    con.execute(ctas)
    w2, c2 = clock()
    rows["stmt"].append(w2 - w)
    rows["stmt_cpu"].append(c2 - c)
    inner = con.execute("SELECT elapsed_s FROM kanon_runs ORDER BY run_id DESC LIMIT 1").fetchall()[0][0]
    rows["inner"].append(inner)
    rows["before"].append(marks["run0"] - w)  # parse, bind (__kanon_sql), plan, the check
    rows["record"].append(marks["run1"] - marks["run0"] - inner)  # run record, losses, ...
    rows["publish"].append(marks["pub1"] - marks["run1"])  # per-row values to Arrow
    rows["duckdb"].append(w2 - marks["pub1"])  # second read, pairing, guard, write
    # the write alone: the same 21 columns copied by the operator the statement's sink is
    # (CREATE TABLE AS without batch indexes: one thread; the default plan of a copy of a
    # table writes in parallel batches, which costs more CPU on this small a table)
    con.execute("SET threads = 1")
    w, c = clock()
    con.execute("CREATE OR REPLACE TABLE w AS SELECT * FROM o")
    w3, c3 = clock()
    con.execute("RESET threads")
    rows["write"].append(w3 - w)
    rows["write_cpu"].append(c3 - c)
    w, _ = clock()
    con.execute(sql).fetchall()
    rows["fetch"].append(clock()[0] - w)
    w, _ = clock()
    con.execute("SELECT * FROM adult").fetchall()
    rows["fetch_src"].append(clock()[0] - w)
# anonymize()'s CPU: the Python call alone (no output statement), same process
from kanon_duckdb.anonymize import anonymize
cpu = []
for _ in range(repeat):
    _w, c = clock()
    anonymize(con, "adult", k=10, algo=algo, qi=qi, record=False)
    cpu.append(clock()[1] - c)
rows["inner_cpu"] = cpu
# DuckDB's side alone: the statement's own text with the run's per-row values handed back from
# a cache (no run, no bind-time UDF), whole, without the guard's filter, and counted (no write)
import re
import kanon_duckdb.output_sql as output_sql
seen = {}
positional, publish = output_sql.positional_sql, udfs_anonymize.rows_arrow
def keep_text(plan, expr):
    seen["text"], seen["expr"] = positional(plan, expr), expr
    return seen["text"]
def keep_rows(*a, **kw):
    seen["rows"] = publish(*a, **kw)
    return seen["rows"]
output_sql.positional_sql, udfs_anonymize.rows_arrow = keep_text, keep_rows
con.execute(ctas)
if "rows" in seen:
    con.create_function("__bench_rows", lambda x: seen["rows"], [con.sqltype("BIGINT")],
                        con.sqltype(udfs_anonymize.ROWS_TYPE), type="arrow", side_effects=True)
    cached = seen["text"].replace(seen["expr"], "__bench_rows(1)")
    unguarded = re.sub(r"\nWHERE CASE .*$", "", cached, flags=re.S)
    variants = {"cached": "CREATE OR REPLACE TABLE o AS " + cached,
                "unguarded": "CREATE OR REPLACE TABLE o AS " + unguarded,
                "counted": "SELECT count(*) FROM (" + unguarded + ")"}
    for name, q in variants.items():
        con.execute(q).fetchall()
        cpu = []
        for _ in range(repeat):
            _w, c = clock()
            con.execute(q).fetchall()
            cpu.append(clock()[1] - c)
        rows[name + "_cpu"] = cpu
print(json.dumps({k: statistics.median(v) for k, v in rows.items()}))
con.close()
"""
COLD = r"""
import io, json, time
t0, c0 = time.perf_counter(), time.process_time()
from kanon_duckdb.demo import run_demo
run_demo(ks=[10], out=io.StringIO())
print(json.dumps({"wall": time.perf_counter() - t0, "cpu": time.process_time() - c0}))
"""


def child(code: str, args=(), **env) -> dict:
    # bytecode caching as in an installed package: PYTHONDONTWRITEBYTECODE (set in some
    # sandboxes) would recompile every .py of numba, pandas, ... in each fresh process
    full = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    full.update(PYTHONPATH=str(ROOT), **env)
    out = subprocess.run([sys.executable, "-c", code, *map(str, args)], env=full,
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def split(preload: bool, repeat: int) -> dict:
    child(SPLIT)  # unmeasured: writes the bytecode caches
    runs = [child(SPLIT, KANON_DUCKDB_PRELOAD="1" if preload else "0") for _ in range(repeat)]
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--cold", action="store_true", help="also time the demo with an empty numba cache")
    ap.add_argument("--skip-split", action="store_true")
    a = ap.parse_args(argv)
    if not a.skip_split:
        print(f"1. start-up split, seconds, median of {a.repeat} fresh processes (Adult, k = 10, "
              f"mondrian, 8 QIs; numba cache warm; machine: 2 cores, shared)")
        rows = {"preload on": split(True, a.repeat), "preload off": split(False, a.repeat)}
        keys = list(next(iter(rows.values())))
        print(f"{'':12}" + "".join(f"{k:>14}" for k in keys))
        for name, r in rows.items():
            print(f"{name:12}" + "".join(f"{r[k]:>14.3f}" for k in keys))
    print(f"\n2. fixed overhead: Adult (30,162 rows, demo QIs), k = 10, median of {a.repeat} "
          f"statements; CREATE TABLE AS FROM k_anonymize(...) vs anonymize()'s own time")
    print(f"{'algo':<10}{'stmt s':>8}{'inner s':>9}{'ratio':>7}{'write s':>9}{'w/o write':>10}"
          f"{'stmt cpu':>10}{'inner cpu':>10}{'cpu ratio':>10}{'write cpu':>10}{'w/o write':>10}"
          f"{'copy cpu':>10}{'fetchall s':>11}{'adult fetchall s':>17}")
    from bench_mondrian import ADULT_ARX_QI  # beside this script
    splits = {}
    for algo, qi in (("mondrian", None), ("optimal", None), ("optimal", ADULT_ARX_QI)):
        r = child(OVERHEAD, (algo, a.repeat) + ((json.dumps(qi),) if qi else ()))
        algo = algo if qi is None else f"{algo}*"
        splits[algo] = r
        print(f"{algo:<10}{r['stmt']:>8.3f}{r['inner']:>9.3f}{r['stmt'] / r['inner']:>7.2f}"
              f"{r['write']:>9.3f}{(r['stmt'] - r['write']) / r['inner']:>10.2f}"
              f"{r['stmt_cpu']:>10.3f}{r['inner_cpu']:>10.3f}{r['stmt_cpu'] / r['inner_cpu']:>10.2f}"
              f"{r['write_cpu']:>10.3f}{(r['stmt_cpu'] - r['write_cpu']) / r['inner_cpu']:>10.2f}"
              f"{r['copy_cpu']:>10.3f}{r['fetch']:>11.3f}{r['fetch_src']:>17.3f}")
    print("(write: CREATE TABLE AS SELECT * FROM the output, 21 columns, by the statement's own "
          "sink operator (one thread); w/o write: (statement - write) / anonymize(); copy cpu: "
          "CREATE TABLE AS SELECT * FROM adult (15 columns, default threads: parallel batches); "
          "optimal*: ARX's 8 QIs, education with its ARX tree, 0 % suppression)")
    print("\nthe statement's wall time split, ms (medians of each stage): before the run = parse, "
          "bind (__kanon_sql), plan; anonymize() = kanon_runs.elapsed_s; after it = the run "
          "record and losses; per-row values = rows_arrow; DuckDB = second read, pairing, guard, "
          "write")
    stages = ("before", "inner", "record", "publish", "duckdb")
    print(f"{'algo':<10}" + "".join(f"{name:>15}" for name in
                                   ("before the run", "anonymize()", "after it", "per-row values",
                                    "DuckDB")) + f"{'statement':>12}")
    for algo, r in splits.items():
        print(f"{algo:<10}" + "".join(f"{r[key] * 1e3:>15.1f}" for key in stages)
              + f"{r['stmt'] * 1e3:>12.1f}")
    print("\nDuckDB's side alone, CPU ms: the statement's text with the run's per-row values from a "
          "cache (no run); without the guard; counted instead of written (no guard, no write); "
          "the write alone as above")
    print(f"{'algo':<10}{'cached':>10}{'unguarded':>11}{'counted':>9}{'write':>8}")
    for algo, r in splits.items():
        if "cached_cpu" in r:
            print(f"{algo:<10}{r['cached_cpu'] * 1e3:>10.1f}{r['unguarded_cpu'] * 1e3:>11.1f}"
                  f"{r['counted_cpu'] * 1e3:>9.1f}{r['write_cpu'] * 1e3:>8.1f}")
    if a.cold:
        with tempfile.TemporaryDirectory() as cache:
            r = child(COLD, NUMBA_CACHE_DIR=cache, KANON_DUCKDB_PRELOAD="0")
        print(f"\n3. cold compile: demo default path (mondrian, Adult, k = 10) with an empty numba "
              f"cache: {r['wall']:.1f} s wall, {r['cpu']:.1f} s CPU")


if __name__ == "__main__":
    main()
