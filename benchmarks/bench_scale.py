"""Big tables (issue 15): partition-then-cluster and the lattice on large synthetic tables.

Prints, per size (``--sizes``, default 1e6) on the 8-QI mixed synthetic table of
``bench_mondrian.py`` (4 numeric + 4 categorical QIs with flat trees, k = 10 unless ``--k``):

- for each algorithm in ``--algos`` (default mondrian,kmember,kab): seconds of
  ``CREATE TABLE .. AS FROM k_anonymize(..)`` (clustering algorithms partition-then-cluster
  with their defaults: blocks of about 1,000-2,000 rows above 50,000 rows), GCP through the SQL
  ``gcp()`` macro, GCP relative to Mondrian's in the same run, blocks used (kanon_runs.details);
- lattice ``optimal`` (1 % suppression) seconds next to DuckDB's own ``GROUP BY`` of the QIs
  (``--lattice``).

Each run happens in this process after one warm-up on 2,000 rows (compiles excluded). Run it
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


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e6")
    ap.add_argument("--algos", default="mondrian,kmember,kab")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--lattice", action="store_true", help="also time optimal vs GROUP BY")
    a = ap.parse_args(argv)
    con = kanon_duckdb.connect()
    con.execute(SYNTH_SQL.format(n=2000))
    for algo in a.algos.split(","):
        run_algo(con, algo, a.k)  # warm-up (compiles excluded from the figures)
    print("machine: 2 cores, shared with other jobs (times are noisy)")
    print(f"{'rows':>10} {'algo':>9} {'seconds':>8} {'GCP %':>7} {'vs mondrian':>11} {'blocks':>7}")
    for n in (int(float(s)) for s in a.sizes.split(",")):
        con.execute(SYNTH_SQL.format(n=n))
        base = None
        for algo in a.algos.split(","):
            secs, gcp, det = run_algo(con, algo, a.k)
            if algo == "mondrian":
                base = gcp
            rel = f"{100 * (gcp / base - 1):+.1f} %" if base else "-"
            print(f"{n:>10} {algo:>9} {secs:>8.2f} {100 * gcp:>7.2f} {rel:>11} "
                  f"{det.get('blocks', '-')!s:>7}", flush=True)
        if a.lattice:
            cols = ", ".join(SYNTH_QI)
            t0 = time.perf_counter()
            con.execute(f"CREATE OR REPLACE TABLE g AS SELECT {cols}, count(*) c FROM synth GROUP BY ALL")
            gb = time.perf_counter() - t0
            secs, gcp, _det = run_algo(con, "optimal", a.k, ", max_suppression := 0.01")
            print(f"{n:>10} {'optimal':>9} {secs:>8.2f} {100 * gcp:>7.2f}   GROUP BY {gb:.2f} s "
                  f"= {secs / gb:.1f}x", flush=True)
    print(f"peak RSS {peak_rss_mb():.0f} MB")
    con.close()


if __name__ == "__main__":
    main()
