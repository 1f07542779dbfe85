"""Compare the registered algorithms on Adult for a few k (GCP, DM, C_avg, seconds).

    python examples/compare_algorithms_adult.py --k 5,10 --algos mondrian,kmember

Uses a sample of Adult for the slower algorithms (``--sample`` rows, 0 = all).
"""
from __future__ import annotations

import argparse
import time

import pyarrow as pa

import kanon_duckdb
from kanon_duckdb.algorithms import registry
from kanon_duckdb.demo import DEFAULT_QI, k_anonymize_sql


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--k", default="5,10")
    p.add_argument("--algos", default="mondrian")
    p.add_argument("--sample", type=int, default=3000)
    a = p.parse_args()
    known = registry()
    algos = [x for x in a.algos.split(",") if x]
    for algo in algos:
        if algo not in known:
            raise SystemExit(f"unknown algo {algo!r}; available: {', '.join(sorted(known))}")
    con = kanon_duckdb.connect()
    try:
        con.execute("SET enable_progress_bar = false")
        kanon_duckdb.load_example(con, "adult")
        src = "adult"
        if a.sample:
            con.execute(f"CREATE TABLE adult_sample AS FROM adult "
                        f"USING SAMPLE reservoir({int(a.sample)} ROWS) REPEATABLE (1)")
            src = "adult_sample"
        rows = []
        for algo in algos:
            for k in [int(x) for x in a.k.split(",")]:
                t0 = time.perf_counter()
                con.execute(f"CREATE OR REPLACE TABLE anon AS {k_anonymize_sql(src, k, algo, DEFAULT_QI)}")
                secs = time.perf_counter() - t0
                gcp, dm, cavg = con.execute(
                    "SELECT gcp('anon'), discernibility('anon'), cavg('anon')").fetchall()[0]
                rows.append((algo, k, f"{100 * gcp:.2f}", dm, f"{cavg:.2f}", f"{secs:.2f}"))
        print(f"{src}: {con.execute(f'SELECT count(*) FROM {src}').fetchall()[0][0]} rows")
        result = pa.table({name: [r[i] for r in rows] for i, name in
                           enumerate(["algo", "k", "GCP %", "DM", "C_avg", "seconds"])})
        con.from_arrow(result).show(max_rows=len(rows) + 1)  # DuckDB's own table renderer
    finally:
        con.close()


if __name__ == "__main__":
    main()
