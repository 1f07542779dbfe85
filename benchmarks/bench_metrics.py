"""SQL metric macros on a 1M-row anonymized table (built directly in SQL, no algorithm run).

Prints, for ``gcp``, ``gen_total_il`` and ``kanon_qi_loss`` on the table ``big`` (n rows, 3
numeric QIs published as c_min/c_max, 2 categorical QIs, one with a tree, 1 class in 1000
suppressed; the shape of tests/test_metrics_large.py), the median and best of ``--repeat`` runs,
and the same for a baseline measured in the same process: the hand-written GCP of that fixed
schema in plain SQL (one scan, no macro), with the ratio metric / baseline. ``--inf`` puts
+-inf bounds in a few rows (the exact second pass of kanon_qi_loss runs).

    PYTHONPATH=. python benchmarks/bench_metrics.py            # 1M rows
    PYTHONPATH=. python benchmarks/bench_metrics.py --rows 200000 --inf
    PYTHONPATH=. python benchmarks/bench_metrics.py --all --repeat 3   # every metric macro
"""
from __future__ import annotations

import argparse
import statistics
import time

import kanon_duckdb

EDGES = [("*", None), ("Tech", "*"), ("eng", "Tech"), ("dev", "Tech"), ("Art", "*"),
         ("painter", "Art"), ("singer", "Art"), ("actor", "Art")]

BASELINE = """
WITH r AS (SELECT min(age_min) a0, max(age_max) a1, min(edu_min) e0, max(edu_max) e1,
                  min(x_min) x0, max(x_max) x1 FROM big)
SELECT avg(CASE WHEN suppressed THEN 5.0 ELSE
    (age_max - age_min) / (a1 - a0) + (edu_max - edu_min) / (e1 - e0) + (x_max - x_min) / (x1 - x0)
    + CASE job WHEN '*' THEN 1.0 WHEN 'Tech' THEN 0.4 WHEN 'Art' THEN 0.6 ELSE 0 END
    + CASE sex WHEN '*' THEN 1.0 ELSE 0 END END) / 5
FROM big, r"""


def build(con, n: int, inf: bool) -> None:
    x_min = "CASE WHEN i % 100000 = 7 THEN '-inf'::DOUBLE ELSE (ec % 1000) / 7.0 END" if inf \
        else "(ec % 1000) / 7.0"
    x_max = "CASE WHEN i % 100000 = 7 THEN 'inf'::DOUBLE ELSE (ec % 1000) / 7.0 + (ec % 3) END" \
        if inf else "(ec % 1000) / 7.0 + (ec % 3)"
    con.execute(f"""CREATE TABLE big AS
    WITH base AS (SELECT i, i // 5 AS ec FROM range({n}) r(i))
    SELECT i AS id, 'payload' || i AS note,
      (ec % 80)::BIGINT AS age_min, (ec % 80 + ec % 7)::BIGINT AS age_max,
      (ec % 16)::BIGINT AS edu_min, (ec % 16 + 1)::BIGINT AS edu_max,
      {x_min} AS x_min, {x_max} AS x_max,
      ['eng', 'dev', 'Tech', 'Art', 'painter', '*'][ec % 6 + 1] AS job,
      ['f', 'm', '*'][ec % 3 + 1] AS sex,
      CASE WHEN i % 3 = 0 THEN '>50K' ELSE '<=50K' END AS income,
      ec, 5::BIGINT AS ec_size, ec % 1000 = 999 AS suppressed, 1::BIGINT AS kanon_run
    FROM base""")
    con.execute("INSERT INTO kanon_runs (run_id, source, k, algo, qi, numeric_qi, categorical_qi, "
                "params, seed, details) VALUES (1, 'raw', 5, 'hand', ['age', 'edu', 'x', 'job', "
                "'sex'], ['age', 'edu', 'x'], ['job', 'sex'], '{}', 0, '{}')")
    con.executemany("INSERT INTO kanon_taxonomy VALUES ('job', ?, ?)", EDGES)


def timed(con, sql: str) -> float:
    t = time.perf_counter()
    con.execute(sql).fetchall()
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--repeat", type=int, default=9)
    ap.add_argument("--inf", action="store_true", help="a few +-inf bounds (exact second pass)")
    ap.add_argument("--all", action="store_true", help="also every other metric macro")
    args = ap.parse_args()
    con = kanon_duckdb.connect()
    build(con, args.rows, args.inf)
    queries = {"baseline (plain SQL GCP)": BASELINE, "gcp('big')": "SELECT gcp('big')",
               "gen_total_il('big')": "SELECT gen_total_il('big')",
               "kanon_qi_loss('big')": "FROM kanon_qi_loss('big')"}
    if args.all:
        qi = "['age', 'edu', 'x', 'job', 'sex']"
        for m in ["total_il('big')", "discernibility('big')", "cavg('big')", "suppression('big')",
                  "cm('big', 'income')", "info_loss('big')", "log_level('big')",
                  f"k_anonymity('big', {qi})", f"l_diversity('big', {qi}, 'income')",
                  f"t_closeness('big', {qi}, 'income')", f"reidentification_risk('big', {qi})"]:
            queries[m] = "SELECT " + m
    for sql in queries.values():  # warm-up: UDFs, catalog
        con.execute(sql).fetchall()
    times = {name: [] for name in queries}
    for _ in range(args.repeat):  # interleaved, so machine noise hits every query alike
        for name, sql in queries.items():
            times[name].append(timed(con, sql))
    base = statistics.median(times["baseline (plain SQL GCP)"])
    print(f"table big: {args.rows:,} rows, 3 numeric + 2 categorical QIs"
          + (", a few +-inf bounds" if args.inf else "") + f"; {args.repeat} interleaved runs")
    print(f"{'query':28s} {'median s':>9s} {'best s':>8s} {'ratio':>6s}")
    for name, ts in times.items():
        med = statistics.median(ts)
        print(f"{name:28s} {med:9.3f} {min(ts):8.3f} {med / base:6.2f}")
    print(f"gcp = {con.execute('SELECT gcp(?)', ['big']).fetchone()[0]!r}")
    con.close()


if __name__ == "__main__":
    main()
