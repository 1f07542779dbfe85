"""Benchmark the local-recoding algorithms on Adult (and a synthetic table for scaling).

For every chosen algorithm (default: every 'local' algorithm in the registry, Mondrian included)
and k: seconds (algorithm + generalization, numba warm), GCP, GenTotal-IL, DM, C_avg, CM(income),
and the time ratio to Mondrian at the same k.

    python benchmarks/bench_clustering.py                       # Adult, k = 10, all local algorithms
    python benchmarks/bench_clustering.py --k 2,5,10,25,50,100 --algos mondrian,kmember,oka,ika
    python benchmarks/bench_clustering.py --synthetic 100000 --k 10 --algos mondrian,oka,ika
    python benchmarks/bench_clustering.py --hospital --no-adult --k 2,5,10,25,50,100 \
        --algos mondrian,cof_mondrian,kmember,bottomup    # the generated hospital table
    python benchmarks/bench_clustering.py --arx-qi --k 2,5,10,25,50,100 --algos bottomup
        # Adult on the QIs of the ARX comparison (age + 7 ARX trees, education a tree)

Metrics (DESIGN.md): GCP = sum_e |e| * mean_j NCP_j(e) / N (leaf-count NCP); GenTotal-IL =
sum_e |e| * (sum numeric span/range + sum categorical height(LCA)/height(tree)) / (N * d);
DM = sum_e |e|^2; C_avg = (N / |E|) / k; CM = share of rows whose income is not their class's
majority income. Adult QIs (the demo's numeric/categorical split): age, education_num numeric;
workclass, marital_status, occupation, race, sex, native_country categorical. ``--hospital``:
the generated ``hospital`` example (kanon_duckdb/hospital_data.py: 40,000 rows, age and
length_of_stay numeric, sex, zip (6-level masking tree), diagnosis (ICD-style 3 levels),
admission_type, insurance categorical; CM on ``outcome``).
"""
from __future__ import annotations

import argparse
import sys
import time

import numpy as np

ADULT_QI = ["age", "education_num", "workclass", "marital_status", "occupation", "race", "sex",
            "native_country"]
# the QIs of issue 14's ARX 3.9.2 local-recoding comparison: age numeric, 7 ARX trees
ADULT_ARX_QI = ["age", "workclass", "education", "marital_status", "occupation", "race", "sex",
                "native_country"]


def load_adult(name="adult", qi=ADULT_QI, label="income"):
    """(QIData with extra[label], the label column as an int array) of example ``name``."""
    import duckdb

    import kanon_duckdb
    from kanon_duckdb.encoding import encode, plan_qis

    con = duckdb.connect()
    try:
        kanon_duckdb.load_example(con, name)
        plan = plan_qis(con, name, qi)
        _rowid, data = encode(con, plan, extra_columns=[label])
    finally:
        con.close()
    income = data.extra[label]
    income = income.combine_chunks() if hasattr(income, "combine_chunks") else income
    labels = np.unique(np.asarray(income.to_pylist(), dtype=object).astype(str), return_inverse=True)[1]
    return data, labels


def synthetic(n: int, seed: int = 0):
    """n rows: 2 integer numeric QIs, 4 categorical QIs on random trees (8..40 leaves)."""
    sys.path.insert(0, __file__.rsplit("/benchmarks/", 1)[0] + "/tests")
    import naive  # the tests' random tree builder

    from kanon_duckdb.qidata import QIData
    from kanon_duckdb.taxonomy.tree import build_index

    rng = np.random.default_rng(seed)
    num = np.column_stack([rng.integers(17, 91, n), rng.integers(1, 17, n)]).astype(np.float64)
    trees, cat = [], np.empty((n, 4), dtype=np.int32)
    for j, L in enumerate((8, 16, 24, 40)):
        t = build_index(f"s{j}", naive.random_tree_edges(rng, f"s{j}_", L))
        trees.append(t)
        p = rng.dirichlet(np.ones(t.leaf_count))  # skewed frequencies, like real data
        cat[:, j] = rng.choice(t.leaf_count, size=n, p=p)
    data = QIData(n=n, num=num, num_null=np.zeros_like(num, dtype=bool), num_lo=num.min(0),
                  num_hi=num.max(0), num_is_int=np.ones(2, dtype=bool), cat=cat, trees=trees,
                  num_names=["n0", "n1"], cat_names=[f"s{j}" for j in range(4)])
    return data, rng.integers(0, 2, n)


def metrics(data, g, k, labels):
    from kanon_duckdb.generalize import per_qi_loss

    N, d = data.n, data.dn + data.dc
    gcp = float(np.mean(per_qi_loss(data, g)))
    w = g.size.astype(np.float64)
    til = 0.0
    rng = data.num_range
    for j in range(data.dn):
        span = np.where(np.isnan(g.lo[:, j]), rng[j], g.hi[:, j] - g.lo[:, j])
        til += float(np.dot(w, span / rng[j])) if data.num_hi[j] > data.num_lo[j] else 0.0
    for j, t in enumerate(data.trees):
        if t.height > 0:
            til += float(np.dot(w, t.sub_height[g.nodes[:, j]] / t.height))
    dm = float(np.sum(w ** 2))
    cavg = (N / g.n_classes) / k
    cm = float("nan")
    if labels is not None:
        nl = int(labels.max()) + 1
        counts = np.zeros((g.n_classes, nl), dtype=np.int64)
        np.add.at(counts, (g.ec, labels), 1)
        cm = 1.0 - counts.max(axis=1).sum() / N
    return dict(gcp=gcp, gen_total_il=til / (N * d), dm=dm, cavg=cavg, cm=cm, classes=g.n_classes)


def run_one(algo, data, k, seed):
    from kanon_duckdb.generalize import generalize

    params = dict(algo.params)
    if "sensitive" in params:
        params["sensitive"] = None
    t0 = time.perf_counter()
    part = algo.run(data, k, seed, params, lambda f: None)
    g = generalize(data, part)
    dt = time.perf_counter() - t0
    assert g.size.min() >= k or part.suppressed is not None, f"{algo.name}: class below k"
    return dt, g


def warm_up(algos, data):
    """Compile every kernel on a small sample so timings are warm."""
    import dataclasses

    m = min(data.n, 300)
    small = dataclasses.replace(data, n=m, num=data.num[:m], num_null=data.num_null[:m],
                                cat=data.cat[:m], extra={})
    for a in algos:
        run_one(a, small, 5, 0)


def main(argv=None):
    from kanon_duckdb.algorithms import registry

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--k", default="10", help="comma-separated k values (default 10)")
    ap.add_argument("--algos", default="", help="comma-separated algorithms (default: all local)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--synthetic", type=int, default=0, help="also run a synthetic table of N rows")
    ap.add_argument("--no-adult", action="store_true")
    ap.add_argument("--hospital", action="store_true", help="also run the generated hospital table")
    ap.add_argument("--arx-qi", action="store_true",
                    help="Adult on the ARX comparison's QIs (age + 7 ARX trees) instead of the demo's")
    args = ap.parse_args(argv)
    reg = registry()
    names = [a for a in args.algos.split(",") if a] or \
        ["mondrian"] + sorted(n for n, a in reg.items() if a.family == "local" and n != "mondrian")
    algos = [reg[n] for n in names]
    ks = [int(x) for x in args.k.split(",")]
    sets = []
    if not args.no_adult:
        sets.append(("adult-arx-qi",) + load_adult("adult", ADULT_ARX_QI) if args.arx_qi
                    else ("adult",) + load_adult())
    if args.hospital:
        from kanon_duckdb.hospital_data import QI as HOSPITAL_QI
        sets.append(("hospital",) + load_adult("hospital", HOSPITAL_QI, "outcome"))
    if args.synthetic:
        sets.append((f"synthetic{args.synthetic}",) + synthetic(args.synthetic, args.seed))
    hdr = f"{'data':<18}{'algo':<14}{'k':>4}{'seconds':>9}{'x mondr':>8}{'GCP':>8}{'GenTIL':>8}" \
          f"{'DM':>12}{'C_avg':>7}{'CM':>7}{'classes':>8}"
    print(hdr)
    print("-" * len(hdr))
    for name, data, labels in sets:
        warm_up(algos, data)
        for k in ks:
            base = None
            for a in algos:
                dt, g = run_one(a, data, k, args.seed)
                m = metrics(data, g, k, labels)
                if a.name == "mondrian":
                    base = dt
                ratio = f"{dt / base:8.1f}" if base else f"{'':>8}"
                print(f"{name:<18}{a.name:<14}{k:>4}{dt:>9.2f}{ratio}{m['gcp']:>8.4f}"
                      f"{m['gen_total_il']:>8.4f}{m['dm']:>12.4g}{m['cavg']:>7.2f}{m['cm']:>7.3f}"
                      f"{m['classes']:>8}", flush=True)


if __name__ == "__main__":
    main()
