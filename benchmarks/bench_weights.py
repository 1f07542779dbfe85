"""Benchmark of per-QI weights (``weights :=``, issue 13 section 2).

Table measured: Adult (30,162 rows, the packaged example with its ARX taxonomies), QIs age,
workclass, education, marital_status, race, sex, native_country, k = 10. For each algorithm
family (mondrian, kmember, optimal with loss 'gcp' and max_suppression 0.02) and each weight of
the weighted QI (``--qi``, default age; 1 = the unweighted baseline, measured in the same run):
the weighted QI's mean NCP (kanon_runs.qi_loss), the run's gcp() (weighted when a weight is
given), the unweighted GCP (mean of qi_loss), the weighted GCP the weight-1 run's partition has
under the same weights (what the weighted run should beat) and the end-to-end seconds of ``CREATE TABLE ...
AS FROM k_anonymize(...)`` (median of ``--repeat`` runs, numba warm) with the ratio to weight 1.

    python benchmarks/bench_weights.py
    python benchmarks/bench_weights.py --qi education --weights 1,2,4,8 --algos mondrian
"""
from __future__ import annotations

import argparse

import kanon_duckdb
from _adult_runs import timed_run

QI = ["age", "workclass", "education", "marital_status", "race", "sex", "native_country"]


def run_one(con, algo, k, qi_w, weight, repeat):
    extra = "" if weight == 1 else f", weights := {{'{qi_w}': {weight}}}"
    median_s = timed_run(con, algo, k, QI, extra, repeat)
    names, loss = con.sql("SELECT qi, qi_loss FROM kanon_runs WHERE run_id = "
                          "(SELECT any_value(kanon_run) FROM bench_out)").fetchall()[0]
    gcp = con.sql("SELECT gcp('bench_out')").fetchall()[0][0]
    return median_s, dict(zip(names, loss)), gcp


def weighted_gcp(loss: dict, qi_w: str, weight: float) -> float:
    """sum_q w_q NCP_q / sum_q w_q of a run's per-QI NCP, with weight ``weight`` on ``qi_w``."""
    w = {q: (weight if q == qi_w else 1.0) for q in loss}
    return sum(w[q] * v for q, v in loss.items()) / sum(w.values())


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--algos", default="mondrian,kmember,optimal")
    ap.add_argument("--k", type=int, default=10)
    ap.add_argument("--qi", default="age", help="the weighted QI")
    ap.add_argument("--weights", default="1,4")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    con = kanon_duckdb.connect()
    kanon_duckdb.load_example(con, "adult")
    n = con.sql("SELECT count(*) FROM adult").fetchall()[0][0]
    print(f"table: adult ({n} rows), QIs {', '.join(QI)}, k = {a.k}, weighted QI {a.qi}")
    print(f"{'algo':<10} {'weight':>6} {'NCP(' + a.qi + ')':>12} {'gcp()':>8} "
          f"{'GCP unw.':>9} {'base gcp_w':>10} {'seconds':>8} {'ratio':>6}")
    print("(gcp() is the run's own, weighted by its weights; 'base gcp_w' the weighted GCP of the "
          "weight-1 run's partition under this row's weights)")
    for algo in a.algos.split(","):
        base = None
        for w in [float(x) for x in a.weights.split(",")]:
            run_one(con, algo, a.k, a.qi, w, 1)  # warm (numba compile, caches)
            sec, loss, gcp = run_one(con, algo, a.k, a.qi, w, a.repeat)
            base = (sec, loss) if base is None else base
            print(f"{algo:<10} {w:>6g} {loss[a.qi]:>12.4f} {gcp:>8.4f} "
                  f"{sum(loss.values()) / len(loss):>9.4f} {weighted_gcp(base[1], a.qi, w):>10.4f} "
                  f"{sec:>8.3f} {sec / base[0]:>6.2f}")


if __name__ == "__main__":
    main()
