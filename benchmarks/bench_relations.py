"""Relations benchmark: Parquet in -> Parquet out vs the base-table path; Adult fixed overhead.

1. The synthetic table of bench_mondrian.py (n rows, 8 QIs: 4 numeric, 4 categorical, plus id and
   payload) written to Parquet once; then, each in its own fresh process (numba cache warm):
   - parquet:    ``COPY (FROM k_anonymize('<in>.parquet', ...)) TO '<out>.parquet'``
   - base table: the same Parquet loaded into an in-memory table first (not timed), then
     ``COPY (FROM k_anonymize('synth', ...)) TO '<out>.parquet'``
   - temp (with --temp): the same loaded into a TEMP table, read in the caller's query
     (kanon_duckdb/caller_read.py: the relation goes to the algorithm once as text)
   Prints wall seconds and CPU seconds (user + system, all threads; steadier than wall time on
   a shared machine) of the timed statement (median of --repeat runs), their ratios, peak RSS of
   the child process (VmHWM) and its peak before the timed statement (the base-table path holds
   the table in memory, the Parquet path does not). Each child first warms numba through the
   same kind of relation it times, so no compile lands in the timed statement.
2. Adult (30,162 rows, the demo's 8 QIs), mondrian k=10: seconds of the whole SQL statement
   ``FROM k_anonymize('adult', ...)`` (fetched) vs ``anonymize()``'s own time recorded in
   kanon_runs.elapsed_s, median of --repeat runs, and the Python API on the same table.

    python benchmarks/bench_relations.py --n 1e6
    python benchmarks/bench_relations.py --n 1e5 --temp --skip-adult
    flock /tmp/kanon-bench.lock python benchmarks/bench_relations.py --n 1e7 --repeat 1
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_mondrian import ADULT_DEMO_QI, SYNTH_QI, SYNTH_SQL  # noqa: E402


def peak_rss_mb() -> float:
    """Peak RSS of this process image: VmHWM on Linux (ru_maxrss would also count the parent's
    memory at fork time, which holds the generated table), else ru_maxrss."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def cpu_seconds() -> float:
    """User + system CPU seconds of this process (all threads): less sensitive than wall time
    to other jobs on a shared machine."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _child(mode: str, src: str, out: str, repeat: int) -> dict:
    import kanon_duckdb
    con = kanon_duckdb.connect()
    # warm the numba cache through the same kind of relation as the timed run (a Parquet file
    # hands the kernels read-only arrays, a table writable ones: separate numba signatures)
    con.execute(SYNTH_SQL.format(n=1000).replace("synth", "warm"))
    warm = "warm"
    if mode == "temp":
        con.execute("CREATE TEMP TABLE warm_t AS FROM warm")
        warm = "warm_t"
    elif mode != "table":
        warm = str(Path(out).with_name("warm.parquet"))
        con.execute(f"COPY warm TO '{warm}'")
    con.execute(f"FROM k_anonymize('{warm}', k := 10, qi := {SYNTH_QI!r})").fetchall()
    con.execute("DROP TABLE warm")
    if mode in ("table", "temp"):
        con.execute(f"CREATE {'TEMP ' if mode == 'temp' else ''}TABLE synth AS FROM '{src}'")
        rel = "synth"
    else:
        rel = src
    before = peak_rss_mb()
    runs, cpu = [], []
    for _ in range(repeat):
        c0, t0 = cpu_seconds(), time.perf_counter()
        con.execute(f"COPY (FROM k_anonymize('{rel}', k := 10, qi := {SYNTH_QI!r})) TO '{out}'")
        runs.append(time.perf_counter() - t0)
        cpu.append(cpu_seconds() - c0)
    peak = peak_rss_mb()
    n_out, min_class = con.execute(f"SELECT count(*), min(ec_size) FROM '{out}'").fetchall()[0]
    kernel = con.execute("SELECT elapsed_s FROM kanon_runs ORDER BY run_id DESC LIMIT 1").fetchall()[0][0]
    con.close()
    return {"seconds": statistics.median(runs), "runs": runs, "cpu_s": statistics.median(cpu),
            "peak_rss_mb": peak,
            "rss_before_mb": before, "rows": n_out, "min_class": min_class, "anonymize_s": kernel}


def adult(repeat: int) -> dict:
    import kanon_duckdb
    con = kanon_duckdb.connect()
    kanon_duckdb.load_example(con, "adult")
    sql = f"FROM k_anonymize('adult', k := 10, qi := {ADULT_DEMO_QI!r})"
    con.execute(sql).fetchall()  # warm
    total, inner, api = [], [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        con.execute(sql).fetchall()
        total.append(time.perf_counter() - t0)
        inner.append(con.execute("SELECT elapsed_s FROM kanon_runs ORDER BY run_id DESC LIMIT 1"
                                 ).fetchall()[0][0])
        t0 = time.perf_counter()
        kanon_duckdb.anonymize("adult", k=10, qi=ADULT_DEMO_QI, con=con).fetchall()
        api.append(time.perf_counter() - t0)
    con.close()
    return {"sql_s": statistics.median(total), "anonymize_s": statistics.median(inner),
            "api_s": statistics.median(api)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=float, default=1e6)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--skip-adult", action="store_true")
    ap.add_argument("--temp", action="store_true", help="also time a TEMP table (caller_read.py)")
    ap.add_argument("--child", nargs=4, metavar=("MODE", "SRC", "OUT", "REPEAT"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.child:
        mode, src, out, repeat = args.child
        print(json.dumps(_child(mode, src, out, int(repeat))))
        return
    if not args.skip_adult:
        a = adult(max(args.repeat, 5))
        print(f"Adult (30,162 rows, 8 QIs), mondrian k=10, median of {max(args.repeat, 5)}: "
              f"SQL statement {a['sql_s']:.3f} s, anonymize() {a['anonymize_s']:.3f} s, "
              f"ratio {a['sql_s'] / a['anonymize_s']:.2f}x; Python API {a['api_s']:.3f} s")
    n = int(args.n)
    import duckdb
    with tempfile.TemporaryDirectory() as d:
        src = f"{d}/synth.parquet"
        con = duckdb.connect()
        con.execute(SYNTH_SQL.format(n=n))
        con.execute(f"COPY synth TO '{src}'")
        con.close()
        res = {}
        modes = ("parquet", "table") + (("temp",) if args.temp else ())
        for mode in modes:
            out = subprocess.run([sys.executable, __file__, "--child", mode, src, f"{d}/out_{mode}.parquet",
                                  str(args.repeat)], capture_output=True, text=True, check=True)
            res[mode] = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"\nsynthetic table of bench_mondrian.py, {n:,} rows x 8 QIs, mondrian k=10, "
          f"Parquet out (median of {args.repeat}; shared 2-core machine, times are noisy)")
    print(f"{'path':<10} {'seconds':>8} {'CPU s':>7} {'anonymize()':>12} {'peak RSS MB':>12} "
          f"{'RSS before MB':>14} {'rows':>10} {'min class':>9}")
    for mode, label in (("parquet", "parquet"), ("table", "base table"), ("temp", "TEMP table")):
        if mode not in res:
            continue
        r = res[mode]
        print(f"{label:<10} {r['seconds']:>8.2f} {r['cpu_s']:>7.1f} {r['anonymize_s']:>12.2f} "
              f"{r['peak_rss_mb']:>12.0f} {r['rss_before_mb']:>14.0f} {r['rows']:>10,} {r['min_class']:>9}")
    print(f"ratio parquet / base table: {res['parquet']['seconds'] / res['table']['seconds']:.2f}x "
          f"(wall), {res['parquet']['cpu_s'] / res['table']['cpu_s']:.2f}x (CPU)")
    if "temp" in res:
        print(f"ratio TEMP table / base table: {res['temp']['seconds'] / res['table']['seconds']:.2f}x "
              f"(wall), {res['temp']['cpu_s'] / res['table']['cpu_s']:.2f}x (CPU)")


if __name__ == "__main__":
    main()
