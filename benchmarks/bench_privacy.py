"""Benchmark of privacy models enforced while anonymizing (issue 13).

Table measured: Adult (30,162 rows, the packaged example with its ARX taxonomies), QIs age,
workclass, education, marital_status, race, sex, native_country; sensitive attribute
``occupation`` (14 values; its taxonomy makes t-closeness use the hierarchical distance).
For each algorithm and k in {5, 10}: the k-only run (the baseline, measured in the same run),
distinct l = 2..5, entropy l = 3, recursive (c=3, l=3), t = 0.1, 0.2, 0.3, and l = 3 with t = 0.2.
Printed per run: end-to-end seconds of ``CREATE TABLE ... AS FROM k_anonymize(...)`` (median of
``--repeat`` runs, numba warm), the ratio to the k-only run, the run's own time (read, encode,
algorithm with enforcement, generalize: kanon_runs.elapsed_s), GCP, suppressed share, and the
achieved values measured by the SQL checks (distinct l, entropy l, t).

    python benchmarks/bench_privacy.py                       # mondrian, cof_mondrian, optimal, datafly
    python benchmarks/bench_privacy.py --algos mondrian,kmember --k 5
"""
from __future__ import annotations

import argparse

import kanon_duckdb
from _adult_runs import timed_run

QI = ["age", "workclass", "education", "marital_status", "race", "sex", "native_country"]
SENSITIVE = "occupation"
CONFIGS = [("k only", "")] + [(f"distinct l={l}", f"l := {l}") for l in (2, 3, 4, 5)] + [
    ("entropy l=3", "l := 3, l_variant := 'entropy'"),
    ("recursive c=3 l=3", "l := 3, l_variant := 'recursive', c := 3"),
] + [(f"t={t}", f"t := {t}") for t in (0.1, 0.2, 0.3)] + [("l=3, t=0.2", "l := 3, t := 0.2")]


def run_one(con, algo, k, args, repeat):
    qi = "[" + ", ".join(f"'{c}'" for c in QI) + "]"
    extra = f", sensitive := '{SENSITIVE}', {args}" if args else ""
    median_s = timed_run(con, algo, k, QI, extra, repeat)
    gcp, sup = con.sql("SELECT gcp('bench_out'), suppression('bench_out')").fetchall()[0]
    run_s = con.sql("SELECT elapsed_s FROM kanon_runs WHERE run_id = "
                    "(SELECT any_value(kanon_run) FROM bench_out)").fetchall()[0][0]
    ld = con.sql(f"SELECT l_diversity('bench_out', {qi}, '{SENSITIVE}')").fetchall()[0][0]
    t = con.sql(f"SELECT t_closeness('bench_out', {qi}, '{SENSITIVE}')").fetchall()[0][0]
    return median_s, run_s, gcp, sup, ld, t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algos", default="mondrian,cof_mondrian,optimal,datafly")
    ap.add_argument("--k", default="5,10")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    con = kanon_duckdb.connect()
    kanon_duckdb.load_example(con, "adult")
    n = con.sql("SELECT count(*) FROM adult").fetchall()[0][0]
    print(f"table: adult ({n} rows), QIs {QI}, sensitive {SENSITIVE!r}; median of {a.repeat}")
    for algo in a.algos.split(","):
        for k in [int(x) for x in a.k.split(",")]:
            run_one(con, algo, k, "", 1)  # warm-up (numba compile / cache load)
            base = None
            for name, args in CONFIGS:
                try:
                    sec, run_s, gcp, sup, ld, t = run_one(con, algo, k, args, a.repeat)
                except Exception as e:  # an infeasible combination is reported, not fatal
                    print(f"{algo:13s} k={k:<3d} {name:18s} error: {str(e).splitlines()[0][:90]}")
                    continue
                base = sec if base is None else base
                print(f"{algo:13s} k={k:<3d} {name:18s} {sec:7.3f} s  x{sec / base:5.2f}  run {run_s:6.3f} s  "
                      f"GCP {gcp:.4f}  supp {sup:.4f}  l {ld['distinct']:>2d} / "
                      f"{ld['entropy']:5.2f}  t {t:.3f}", flush=True)
    con.close()


if __name__ == "__main__":
    main()
