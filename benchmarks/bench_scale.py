"""Big tables (issue 15): partition-then-cluster and the lattice on large synthetic tables.

Prints, per size (``--sizes``, default 1e6) on the 8-QI mixed synthetic table of
``bench_mondrian.py`` (4 numeric + 4 categorical QIs with flat trees, k = 10 unless ``--k``):

- for each algorithm in ``--algos`` (default mondrian,kmember,kab): seconds of
  ``CREATE TABLE .. AS FROM k_anonymize(..)`` (clustering algorithms partition-then-cluster
  with their defaults: blocks of about 1,000-2,000 rows above 50,000 rows), GCP through the SQL
  ``gcp()`` macro, GCP relative to Mondrian's in the same run, blocks used (kanon_runs.details);
- lattice ``optimal`` (1 % suppression, ``--lattice``): seconds of the run (``kanon_runs.
  elapsed_s``: histogram ``GROUP BY`` + search + published classes) and of the whole
  ``CREATE TABLE .. AS FROM k_anonymize(..)`` (the row-level join included), next to DuckDB's own
  ``CREATE TABLE g AS SELECT <QIs>, count(*) FROM synth GROUP BY ALL`` in the same run, wall and
  CPU seconds (the process: DuckDB's threads and the kernels); the seconds of level maps +
  search (``details.search_s``), distinct tuples, nodes grouped (and of them passes over every
  tuple, and all inputs grouped in tuple-equivalents), the node and its LOG;
  ``--adult`` adds Adult (ARX QIs, k = 10, 1 %);
- Spark (``--spark``, PySpark in local[2]): ``kanon_duckdb.spark.k_anonymize`` Mondrian on the
  same table read from Parquet, written to Parquet: seconds, partitions, GCP through the SQL
  ``gcp()`` macro (the Spark output is loaded into DuckDB and measured under the single-machine
  run's record: same QIs, trees and global ranges) and its difference to the single-machine
  Mondrian GCP in points, peak RSS of the JVM and of the largest Python worker and CPU seconds
  of the driver, JVM and workers (sampled from /proc), and from the run's ``partition_log``:
  seconds inside the workers' partitions, the largest partition, worker processes, numba
  compiles;
- Spark lattice (``--spark-lattice``): ``kanon_duckdb.spark.k_anonymize`` ``optimal`` (k, 1 %
  suppression) on the same table from Parquet, written to Parquet, in a child process (the
  driver): seconds, distinct tuples, the driver process's own peak RSS (``ru_maxrss``) and the
  JVM's (sampled), rows written and their smallest class.

Each run happens in this process after one warm-up on 2,000 rows (compiles excluded; with the
lattice also ``kanon_duckdb.warmup``'s, which compiles the kernels only large tables reach). Run it
under ``flock /tmp/kanon-bench.lock`` on a shared machine and say so with the figures.
"""
from __future__ import annotations

import argparse
import json
import resource
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_mondrian import SYNTH_QI, SYNTH_SQL

import kanon_duckdb


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_algo(con, algo, k, extra=""):
    qi = "[" + ", ".join(f"'{c}'" for c in SYNTH_QI) + "]"
    t0 = time.perf_counter()
    con.execute(f"CREATE OR REPLACE TABLE out AS FROM k_anonymize('synth', k := {k}, "
                f"algo := '{algo}', qi := {qi}{extra})")
    secs = time.perf_counter() - t0
    gcp = con.execute("SELECT gcp('out')").fetchall()[0][0]
    details = json.loads(con.execute(
        "SELECT details FROM kanon_runs WHERE run_id = (SELECT max(kanon_run) FROM out)"
    ).fetchall()[0][0] or "{}")
    return secs, gcp, details


def lattice_row(con, table, qi, k, n_label):
    """Time optimal (1 % suppression) on ``table`` next to DuckDB's GROUP BY of the QIs: wall
    and CPU seconds (this process: DuckDB's threads and the kernels)."""
    cols = ", ".join(qi)
    t0, c0 = time.perf_counter(), time.process_time()
    con.execute(f"CREATE OR REPLACE TABLE g AS SELECT {cols}, count(*) c FROM {table} GROUP BY ALL")
    gb, gb_cpu = time.perf_counter() - t0, time.process_time() - c0
    distinct = con.execute("SELECT count(*) FROM g").fetchall()[0][0]
    q = "[" + ", ".join(f"'{c}'" for c in qi) + "]"
    t0, c0 = time.perf_counter(), time.process_time()
    con.execute(f"CREATE OR REPLACE TABLE out AS FROM k_anonymize('{table}', k := {k}, "
                f"algo := 'optimal', qi := {q}, max_suppression := 0.01)")
    total, total_cpu = time.perf_counter() - t0, time.process_time() - c0
    run_s, det = con.execute("SELECT elapsed_s, details FROM kanon_runs WHERE run_id = "
                             "(SELECT max(kanon_run) FROM out)").fetchall()[0]
    det = json.loads(det or "{}")
    gcp = con.execute("SELECT gcp('out')").fetchall()[0][0]
    print(f"{n_label:>10} {'optimal':>9} run {run_s:7.2f} s = {run_s / gb:4.1f}x GROUP BY "
          f"{gb:.2f} s (CPU {gb_cpu:.2f} s); with output {total:.2f} s = {total / gb:4.1f}x "
          f"(CPU {total_cpu:.2f} s); levels+search {det.get('search_s', 0):.2f} s; "
          f"{distinct:,} distinct tuples, {det.get('n_evaluated')} nodes grouped "
          f"({det.get('n_passes')} passes over the tuples, "
          f"{det.get('rows_grouped', 0) / max(distinct, 1):.0f} tuple-equivalents in all), node "
          f"{det.get('levels')}, LOG {det.get('log', 0):.4f}, GCP {100 * gcp:.2f} %", flush=True)


class RssSampler:
    """Peak RSS (MB) and CPU seconds of this process's descendants, sampled every 0.2 s from
    /proc: the JVM and the Python workers of Spark local mode (CPU: user + system at each
    process's last sample)."""

    def __init__(self):
        import os
        import threading
        self.peak = {}
        self.names = {}
        self.cpu = {}  # pid -> user + system CPU seconds at its last sample
        self._stop = threading.Event()
        self._root = os.getpid()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _children(self):
        import os
        kids = {}
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        kids[int(pid)] = int(f.read().rsplit(")", 1)[1].split()[1])
                except OSError:
                    pass
        out, todo = [], [self._root]
        while todo:
            p = todo.pop()
            for c, parent in kids.items():
                if parent == p:
                    out.append(c)
                    todo.append(c)
        return out

    def _run(self):
        import os
        while not self._stop.wait(0.2):
            for pid in self._children():
                try:
                    with open(f"/proc/{pid}/status") as f:
                        st = f.read()
                    with open(f"/proc/{pid}/cmdline") as f:
                        cmd = f.read().replace("\0", " ")
                    with open(f"/proc/{pid}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                except OSError:
                    continue
                self.cpu[pid] = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
                rss = int(st.split("VmRSS:")[1].split()[0]) / 1024 if "VmRSS:" in st else 0
                self.peak[pid] = max(self.peak.get(pid, 0), rss)
                self.names[pid] = "jvm" if "java" in cmd.split(" ")[0] else "python"

    def stop(self):
        self._stop.set()
        self._thread.join()
        jvm = max([v for p, v in self.peak.items() if self.names[p] == "jvm"] or [0])
        py = max([v for p, v in self.peak.items() if self.names[p] == "python"] or [0])
        return jvm, py, sum(self.cpu.values())


def spark_row(con, n, k, partition_rows, tmp):
    """Spark local[2] Mondrian on the synthetic table vs the single-machine run."""
    import os

    from pyspark.sql import SparkSession

    from kanon_duckdb.spark import k_anonymize as spark_k_anonymize
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    src, dst = f"{tmp}/synth.parquet", f"{tmp}/spark_out.parquet"
    con.execute(f"COPY synth TO '{src}' (FORMAT parquet)")
    base_secs, base_gcp, _ = run_algo(con, "mondrian", k)
    run_id = con.execute("SELECT max(kanon_run) FROM out").fetchall()[0][0]
    sampler = RssSampler()
    spark = (SparkSession.builder.master("local[2]").appName("bench_scale")
             .config("spark.driver.memory", "6g").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "8").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        df = spark.read.parquet(src)
        info = {}
        cpu0 = sum(os.times()[:2])
        t0 = time.perf_counter()
        out = spark_k_anonymize(df, k, SYNTH_QI, partition_rows=partition_rows, info=info)
        out.write.mode("overwrite").parquet(dst)
        secs = time.perf_counter() - t0
    finally:
        spark.stop()
        jvm, py, cpu = sampler.stop()
        cpu += sum(os.times()[:2]) - cpu0
    log = info["partition_log"].value
    print(f"{'':>10} {'':>9} partitions in the workers: {sum(r['seconds'] for r in log):.1f} s "
          f"in total, largest {max(r['rows'] for r in log):,} rows, {len({r['pid'] for r in log})} "
          f"worker processes, numba compiles {sum(r['compiles'] for r in log)} "
          f"({sum(r['compile_s'] for r in log):.1f} s)", flush=True)
    con.execute(f"CREATE OR REPLACE TABLE spark_out AS SELECT * REPLACE ({run_id}::BIGINT AS "
                f"kanon_run) FROM read_parquet('{dst}/*.parquet')")
    rows, ok = con.execute("SELECT count(*), min(ec_size) >= {k} FROM spark_out".format(k=k)).fetchall()[0]
    gcp = con.execute("SELECT gcp('spark_out')").fetchall()[0][0]
    print(f"{n:>10} {'spark':>9} {secs:8.2f} {100 * gcp:7.2f} GCP {100 * (gcp - base_gcp):+.2f} points "
          f"vs one machine ({100 * base_gcp:.2f} %, {base_secs:.2f} s); {info['partitions']} "
          f"partitions, {info['levels']} levels in Spark, rows {rows:,}, k held: {ok}; "
          f"peak RSS JVM {jvm:.0f} MB, largest Python worker {py:.0f} MB; CPU {cpu:.0f} s "
          f"(driver + JVM + workers)", flush=True)


def spark_lattice_child(src, dst, k):
    """The driver of one Spark lattice run (a child process, so its peak RSS is its own)."""
    import os

    from pyspark.sql import SparkSession

    from kanon_duckdb.spark import k_anonymize as spark_k_anonymize
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    spark = (SparkSession.builder.master("local[2]").appName("bench_scale")
             .config("spark.driver.memory", "8g").config("spark.ui.enabled", "false")
             .config("spark.sql.shuffle.partitions", "8").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    try:
        info = {}
        t0 = time.perf_counter()
        out = spark_k_anonymize(spark.read.parquet(src), k, SYNTH_QI, algo="optimal",
                                max_suppression=0.01, info=info)
        out.write.mode("overwrite").parquet(dst)
        secs = time.perf_counter() - t0
        jvm = spark.sparkContext._gateway.proc.pid  # spark-submit execs the JVM
        with open(f"/proc/{jvm}/status") as f:  # VmHWM: the JVM's peak RSS
            jvm_mb = int(f.read().split("VmHWM:")[1].split()[0]) / 1024
    finally:
        spark.stop()
    print(json.dumps({"secs": secs, "histogram_rows": info["histogram_rows"], "jvm_mb": jvm_mb,
                      "node": info["details"].get("levels"), "driver_mb": peak_rss_mb()}))


def spark_lattice_row(con, n, k, tmp):
    """Spark local[2] optimal on the synthetic table: driver (child process) and JVM peak RSS."""
    import subprocess
    src, dst = f"{tmp}/synth.parquet", f"{tmp}/spark_lat.parquet"
    con.execute(f"COPY synth TO '{src}' (FORMAT parquet)")
    sampler = RssSampler()
    try:
        res = subprocess.run([sys.executable, __file__, "--spark-lattice-child", src, dst,
                              "--k", str(k)], capture_output=True, text=True, check=True)
    finally:
        _jvm, _py, cpu = sampler.stop()
    r = json.loads(res.stdout.strip().splitlines()[-1])
    rows, smallest = con.execute(f"SELECT count(*), min(ec_size) FROM read_parquet('{dst}/*.parquet') "
                                 "WHERE NOT suppressed").fetchall()[0]
    print(f"{n:>10} {'spark opt':>9} {r['secs']:8.2f} s; {r['histogram_rows']:,} distinct tuples, "
          f"node {r['node']}; driver peak RSS {r['driver_mb']:.0f} MB, JVM {r['jvm_mb']:.0f} MB; CPU "
          f"{cpu:.0f} s (driver + JVM + "
          f"workers); rows kept {rows:,}, smallest class {smallest}", flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e6")
    ap.add_argument("--algos", default="mondrian,kmember,kab")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--lattice", action="store_true", help="also time optimal vs GROUP BY")
    ap.add_argument("--adult", action="store_true", help="optimal on Adult vs GROUP BY")
    ap.add_argument("--spark", action="store_true", help="Spark local[2] Mondrian vs one machine")
    ap.add_argument("--partition-rows", type=int, default=1_000_000,
                    help="Spark: largest partition per kernel call")
    ap.add_argument("--spark-lattice", action="store_true",
                    help="Spark local[2] optimal: driver and JVM peak RSS")
    ap.add_argument("--spark-lattice-child", nargs=2, metavar=("SRC", "DST"), help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.spark_lattice_child:
        spark_lattice_child(*a.spark_lattice_child, a.k)
        return
    con = kanon_duckdb.connect()
    con.execute(SYNTH_SQL.format(n=2000))
    algos = [x for x in a.algos.split(",") if x]
    for algo in algos + (["optimal"] if a.lattice or a.adult else []):
        run_algo(con, algo, a.k)  # warm-up (compiles excluded from the figures)
    if a.lattice or a.adult:  # and the kernels only large tables reach (kanon-duckdb warmup)
        from kanon_duckdb.warmup import warmup
        warmup(["optimal"])
    print("machine: 2 cores, shared with other jobs (times are noisy)")
    if a.adult:
        kanon_duckdb.load_example(con, "adult")
        lattice_row(con, "adult", ["age", "education", "workclass", "marital_status", "occupation",
                                   "race", "sex", "native_country"], a.k, "adult")
    print(f"{'rows':>10} {'algo':>9} {'seconds':>8} {'GCP %':>7} {'vs mondrian':>11} {'blocks':>7}")
    for n in (int(float(s)) for s in a.sizes.split(",")):
        con.execute(SYNTH_SQL.format(n=n))
        base = None
        for algo in algos:
            secs, gcp, det = run_algo(con, algo, a.k)
            if algo == "mondrian":
                base = gcp
            rel = f"{100 * (gcp / base - 1):+.1f} %" if base else "-"
            print(f"{n:>10} {algo:>9} {secs:>8.2f} {100 * gcp:>7.2f} {rel:>11} "
                  f"{det.get('blocks', '-')!s:>7}", flush=True)
        if a.lattice:
            lattice_row(con, "synth", SYNTH_QI, a.k, str(n))
        if a.spark:
            import tempfile
            with tempfile.TemporaryDirectory() as tmp:
                spark_row(con, n, a.k, a.partition_rows, tmp)
        if a.spark_lattice:
            import tempfile
            with tempfile.TemporaryDirectory() as tmp:
                spark_lattice_row(con, n, a.k, tmp)
    print(f"peak RSS {peak_rss_mb():.0f} MB")
    con.close()


if __name__ == "__main__":
    main()
