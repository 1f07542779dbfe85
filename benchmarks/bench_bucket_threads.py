"""Threaded vs one-thread bucketed grouping of the lattice checker (issue 15).

Runs ``optimal`` (k = 10, 1 % suppression) on the synthetic ``mixed`` table of
``bench_scale.py`` with every ``_kernels.group_buckets`` call made twice, on one thread and on
numba's threads (alternating which goes first), asserting identical results (stop decision,
representatives, counts, codes), and prints the wall and CPU seconds summed over the calls.
Run on an idle machine (under ``flock /tmp/kanon-bench.lock`` when shared):

    python benchmarks/bench_bucket_threads.py --rows 1e7
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import duckdb  # noqa: E402
import numba  # noqa: E402
import numpy as np  # noqa: E402
from bench_mondrian import SYNTH_QI, SYNTH_SQL  # noqa: E402

import kanon_duckdb  # noqa: E402
from kanon_duckdb.algorithms.lattice import _kernels as K  # noqa: E402


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", default="1e7")
    n = int(float(ap.parse_args(argv).rows))
    threads = max(1, numba.get_num_threads())
    real = K.group_buckets
    wall = {1: 0.0, threads: 0.0}
    cpu = {1: 0.0, threads: 0.0}
    calls = [0, 0]

    def paired(*a):
        res = {}
        for t in ((1, threads) if calls[0] % 2 else (threads, 1)):
            t0, c0 = time.perf_counter(), time.process_time()
            res[t] = real(*a[:-1], t)
            wall[t] += time.perf_counter() - t0
            cpu[t] += time.process_time() - c0
        one, many = res[1], res[threads]
        assert one[0] == many[0] and all(np.array_equal(x, y) for x, y in zip(one[1:], many[1:]))
        calls[0] += 1
        calls[1] += bool(one[0])
        return many

    K.group_buckets = paired
    con = duckdb.connect()
    kanon_duckdb.register(con)
    con.execute(SYNTH_SQL.format(n=n))
    q = "[" + ", ".join(f"'{c}'" for c in SYNTH_QI) + "]"
    con.execute(f"CREATE OR REPLACE TABLE out AS FROM k_anonymize('synth', k := 10, "
                f"algo := 'optimal', qi := {q}, max_suppression := 0.01)")
    print(f"{n:,} rows: {calls[0]} group_buckets calls ({calls[1]} stopped), identical results; "
          f"1 thread wall {wall[1]:.2f} s CPU {cpu[1]:.2f} s, {threads} threads wall "
          f"{wall[threads]:.2f} s CPU {cpu[threads]:.2f} s", flush=True)


if __name__ == "__main__":
    main()
