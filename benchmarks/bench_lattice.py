"""Benchmark of the full-domain lattice algorithms (optimal, kgen, random, datafly).

1. Adult (30,162 rows) with the ARX hierarchies (age: ARX's interval hierarchy by default,
   ``--age interval`` for the package's nested [5, 10, 20, 40] tree), QI counts 3..8,
   k in {2, 5, 10, 50}, max_suppression in {0, 0.01}: seconds, nodes evaluated, LOG, GCP,
   suppression, and KGEN's / random's accuracy against optimal (KGEN paper eq. 4:
   acc = 1 - |H(S) - H(opt)| / (H(top) - H(opt)), H = sum of levels).
2. Node-evaluation throughput on Adult (8 QIs): every node of the lattice grouped from the raw
   rows (no roll-up, no memo), rows per second on one core.
3. A synthetic wide table shaped like Cargo-2000 (3,942 rows x 97 numeric attributes, fixed seed,
   mixed correlations) with 5, 10, 15, 20, 25 QIs: kgen vs random (and optimal while its reduced
   lattice is small enough to finish within ``--optimal-limit`` seconds).

Timings are of the algorithm (``Algorithm.run`` on encoded data: level maps + search + output
partition), warm (numba compiled by a first run). Run:

    python benchmarks/bench_lattice.py            # everything
    python benchmarks/bench_lattice.py --quick    # a small subset (about a minute)
"""
from __future__ import annotations

import argparse
import itertools
import sys
import time
from importlib import resources

import numpy as np

import kanon_duckdb
from kanon_duckdb.algorithms import get_algorithm
from kanon_duckdb.algorithms.lattice import NodeChecker, build_space
from kanon_duckdb.encoding import encode, plan_qis
from kanon_duckdb.taxonomy import store

ADULT_QI = ["age", "workclass", "education", "marital_status", "occupation", "race", "sex",
            "native_country"]
ALGOS = ["optimal", "kgen", "random", "datafly"]


def accuracy(h, h_opt, h_top):
    if h_top == h_opt:
        return 1.0 if h == h_opt else 0.0
    return 1.0 - abs(h - h_opt) / (h_top - h_opt)


def run_algo(algo, data, k, ms, seed=0, **extra):
    a = get_algorithm(algo)
    p = dict(a.params, max_suppression=ms, **extra)
    t0 = time.perf_counter()
    part = a.run(data, k, seed, p)
    return time.perf_counter() - t0, part.info


def adult_connection(age: str):
    con = kanon_duckdb.connect()
    kanon_duckdb.load_example(con, "adult")
    if age == "arx":
        path = resources.files("kanon_duckdb") / "data" / "adult" / "hierarchies" / "adult_hierarchy_age.csv"
        store.load_arx_taxonomy(con, "age", path.read_text(encoding="utf-8"))
    return con


def bench_adult(con, qi_counts, ks, sups, algos, seed):
    print("\n== Adult: seconds / nodes evaluated / LOG / GCP / suppression / accuracy vs optimal ==")
    print(f"{'QIs':>3} {'k':>3} {'sup':>5} {'algo':>8} {'sec':>8} {'evals':>6} {'LOG':>6} {'GCP':>6} "
          f"{'supp%':>6} {'acc':>5}  node")
    rows = []
    for q in qi_counts:
        plan = plan_qis(con, "adult", ADULT_QI[:q])
        _rowid, data = encode(con, plan, need_num_trees=True)
        run_algo("datafly", data, 2, 0.0)  # warm-up (numba cache load)
        for k, ms in itertools.product(ks, sups):
            opt_h = None
            for algo in algos:
                sec, info = run_algo(algo, data, k, ms, seed)
                if algo == "optimal":
                    opt_h = info["node_height"]
                acc = (accuracy(info["node_height"], opt_h, info["lattice_height"])
                       if opt_h is not None else float("nan"))
                rows.append((q, k, ms, algo, sec, info))
                print(f"{q:>3} {k:>3} {ms:>5.2f} {algo:>8} {sec:>8.3f} {info['n_evaluated']:>6} "
                      f"{info['log']:>6.3f} {info['gcp']:>6.3f} {100 * info['suppression']:>6.2f} "
                      f"{acc:>5.2f}  {info['levels']}", flush=True)
    return rows


def bench_throughput(con, seed):
    plan = plan_qis(con, "adult", ADULT_QI)
    _rowid, data = encode(con, plan, need_num_trees=True)
    space = build_space(data)
    ch = NodeChecker(space, 10)
    nodes = list(itertools.product(*[range(int(h) + 1) for h in space.heights]))
    for nd in nodes[:50]:
        ch.evaluate_raw(nd)  # warm-up
    ts = np.array([ch.evaluate_raw(nd) for nd in nodes])
    total = ts.sum()
    print("\n== Node evaluation on Adult, 8 QIs, from the raw rows (one core) ==")
    print(f"nodes {len(nodes)}, rows {space.n}, total {total:.3f} s, "
          f"mean {1e3 * ts.mean():.3f} ms/node, median {1e3 * np.median(ts):.3f} ms/node")
    print(f"throughput: {space.n * len(nodes) / total / 1e6:.1f} M rows/s (all nodes), "
          f"{space.n / np.median(ts) / 1e6:.1f} M rows/s (median node)")
    return space.n * len(nodes) / total


def wide_table(con, n=3942, m=97, seed=7):
    """Cargo-2000-like numeric table: latent factors with mixed loadings, mixed cardinalities."""
    rng = np.random.default_rng(seed)
    z = rng.normal(size=(n, 3))
    cols = {}
    for j in range(m):
        f = j % 3
        strength = (0.1, 0.4, 1.5)[(j // 3) % 3]           # strongly, mildly, weakly correlated
        v = z[:, f] * (1 if j % 2 else -1) + strength * rng.normal(size=n)
        v = (v - v.min()) / (v.max() - v.min() + 1e-12)
        card = (6, 12, 40, 400)[(j // 9) % 4]               # mixed cardinalities
        cols[f"a{j:02d}"] = np.round(v * (card - 1)).astype(np.int64)
    import pyarrow as pa
    con.register("__wide", pa.table(cols))
    con.execute("CREATE OR REPLACE TABLE wide AS SELECT * FROM __wide")
    con.unregister("__wide")
    return list(cols)


def bench_wide(con, qi_counts, k, ms, seed, optimal_limit):
    names = wide_table(con)
    print(f"\n== Wide synthetic table 3942 x {len(names)} (k={k}, max_suppression={ms}) ==")
    print(f"{'QIs':>3} {'algo':>8} {'sec':>8} {'evals':>6} {'LOG':>6} {'GCP':>6} {'supp%':>6} "
          f"{'acc':>5} lattice")
    opt_ok = True
    for q in qi_counts:
        plan = plan_qis(con, "wide", names[:q])
        _rowid, data = encode(con, plan, need_num_trees=True)
        space = build_space(data)
        ch = NodeChecker(space, k, ms)
        size = int(np.prod([int(h) - b + 1 for h, b in zip(space.heights, ch.bounds)], dtype=float))
        opt_h = None
        algos = ["kgen", "random"]
        if opt_ok and size <= 2_000_000:
            algos = ["optimal"] + algos
        for algo in algos:
            sec, info = run_algo(algo, data, k, ms, seed)
            if algo == "optimal":
                opt_h = info["node_height"]
                opt_ok = sec < optimal_limit
            acc = (accuracy(info["node_height"], opt_h, info["lattice_height"])
                   if opt_h is not None else float("nan"))
            print(f"{q:>3} {algo:>8} {sec:>8.3f} {info['n_evaluated']:>6} {info['log']:>6.3f} "
                  f"{info['gcp']:>6.3f} {100 * info['suppression']:>6.2f} {acc:>5.2f} {size:.3g}",
                  flush=True)
        if "optimal" not in algos:
            print(f"{q:>3} {'optimal':>8} skipped (reduced lattice {size:.3g} nodes)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="8 QIs, k=10, both suppression limits; wide 5..15 QIs")
    ap.add_argument("--part", choices=["adult", "throughput", "wide", "all"], default="all")
    ap.add_argument("--age", choices=["arx", "interval"], default="arx")
    ap.add_argument("--algos", default=",".join(ALGOS))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--wide-k", type=int, default=5)
    ap.add_argument("--wide-sup", type=float, default=0.005)
    ap.add_argument("--optimal-limit", type=float, default=600.0)
    args = ap.parse_args(argv)
    algos = [a for a in args.algos.split(",") if a]
    if args.quick:
        qi_counts, ks, sups, wide_qis = [8], [10], [0.0, 0.01], [5, 10, 15]
    else:
        qi_counts, ks, sups, wide_qis = [3, 4, 5, 6, 7, 8], [2, 5, 10, 50], [0.0, 0.01], [5, 10, 15, 20, 25]
    con = adult_connection(args.age)
    try:
        if args.part in ("adult", "all"):
            bench_adult(con, qi_counts, ks, sups, algos, args.seed)
        if args.part in ("throughput", "all"):
            bench_throughput(con, args.seed)
        if args.part in ("wide", "all"):
            bench_wide(con, wide_qis, args.wide_k, args.wide_sup, args.seed, args.optimal_limit)
    finally:
        con.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
