"""Start-up split (issue 14 item 3), each in a fresh process with numba's cache warm.

Prints median seconds over ``--repeat`` processes of: ``import kanon_duckdb``, ``connect()``,
``load_example(con, 'adult')``, the first ``k_anonymize`` (Adult, k = 10, mondrian, 8 QIs,
``SELECT count(*)``) and a second one; once with the background preload of ``connect()``
(default) and once with ``KANON_DUCKDB_PRELOAD=0``. Run ``kanon-duckdb warmup --algos mondrian``
first so nothing compiles. On a shared machine run it under ``flock /tmp/kanon-bench.lock``.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHILD = r"""
import json, time
t0 = time.perf_counter()
import kanon_duckdb
t1 = time.perf_counter()
con = kanon_duckdb.connect()
t2 = time.perf_counter()
kanon_duckdb.load_example(con)
t3 = time.perf_counter()
q = ("SELECT count(*) FROM k_anonymize('adult', k := 10, qi := ['age', 'workclass', 'education', "
     "'marital_status', 'occupation', 'race', 'sex', 'native_country'])")
con.execute(q).fetchall()
t4 = time.perf_counter()
con.execute(q).fetchall()
t5 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "connect": t2 - t1, "load_example": t3 - t2,
                  "first call": t4 - t3, "second call": t5 - t4}))
con.close()
"""


def measure(preload: bool, repeat: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "KANON_DUCKDB_PRELOAD": "1" if preload else "0"}
    runs = []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True,
                             text=True, check=True)
        runs.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return {key: statistics.median(r[key] for r in runs) for key in runs[0]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args(argv)
    print("seconds, median of", a.repeat, "fresh processes (machine: 2 cores, shared)")
    rows = {"preload on": measure(True, a.repeat), "preload off": measure(False, a.repeat)}
    keys = list(next(iter(rows.values())))
    print(f"{'':12}" + "".join(f"{k:>14}" for k in keys))
    for name, r in rows.items():
        print(f"{name:12}" + "".join(f"{r[k]:>14.3f}" for k in keys))


if __name__ == "__main__":
    main()
