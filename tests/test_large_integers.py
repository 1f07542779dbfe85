"""Integer QIs beyond 2^53 (BIGINT, HUGEINT and UBIGINT within the BIGINT range): every algorithm
publishes truthful bounds (compared as exact integers), and gcp(), kanon_qi_loss and the run's
recorded qi_loss equal an exact recomputation (Python integers and fractions) to 1e-12 relative.

Before the fix the run recorded the global range as doubles (kanon_runs.num_lo / num_hi), whose
ulp near 2^62 is 1024: with a range of ~9e5 the NCP carried ~1e-3 relative error (verify3).
"""

import numpy as np
import pytest

import kanon_duckdb
import naive_metrics
from kanon_duckdb.algorithms import registry

BASE = 2 ** 62
N = 90
COLS = {  # column -> (SQL type, base value): offsets within ~9e5 of base
    "x": ("BIGINT", BASE),
    "h": ("HUGEINT", -(2 ** 61) - 7),
    "u": ("UBIGINT", 2 ** 63 - 1_000_000),
}


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    rng = np.random.default_rng(7)
    rows = []
    for i in range(N):
        vals = []
        for j, (_typ, base) in enumerate(COLS.values()):
            null = j == 1 and i % 11 == 3  # a few NULLs in h
            vals.append("NULL" if null else str(base + int(rng.integers(0, 900_001))))
        rows.append(f"({i}, {', '.join(vals)}, 'c{i % 3}')")
    casts = ", ".join(f"v{j}::{typ} AS {name}" for j, (name, (typ, _)) in enumerate(COLS.items()))
    c.execute(f"CREATE TABLE big AS SELECT id, {casts}, c FROM (VALUES {', '.join(rows)}) "
              f"v(id, {', '.join(f'v{j}' for j in range(len(COLS)))}, c)")
    yield c
    c.close()


def _exact_check(con, qi):
    """(truthful, exact gcp, {qi: exact mean NCP}) of out_t against big, with Python ints."""
    num = [q for q in qi if q in COLS]
    sel = ", ".join(f"t.{q}::HUGEINT, o.{q}_min::HUGEINT, o.{q}_max::HUGEINT" for q in num)
    rows = con.execute(f"SELECT o.suppressed, o.c, {sel} FROM out_t o JOIN big t USING (id)"
                       ).fetchall()
    glo = {q: min(r[2 + 3 * i] for r in rows if r[2 + 3 * i] is not None) for i, q in enumerate(num)}
    ghi = {q: max(r[2 + 3 * i] for r in rows if r[2 + 3 * i] is not None) for i, q in enumerate(num)}
    for r in rows:
        for i, q in enumerate(num):
            v, lo, hi = r[2 + 3 * i: 5 + 3 * i]
            if v is None or lo is None:
                assert lo is None and hi is None, (q, v, lo, hi)  # NULL value: NULL range
            else:
                assert lo <= v <= hi, (q, v, lo, hi)  # truthful, exactly
    return naive_metrics.exact_losses(rows, num, qi, glo, ghi)


@pytest.mark.parametrize("algo", sorted(registry()))
def test_bounds_are_truthful_and_gcp_exact_beyond_2_53(con, algo):
    qi = list(COLS) + ["c"]
    params = ", sensitive := 'c'" if algo == "info2means" else ""
    if algo == "info2means":
        qi = list(COLS)
    con.execute(f"CREATE OR REPLACE TABLE out_t AS FROM k_anonymize('big', k := 4, "
                f"algo := '{algo}', qi := {qi}{params})")
    gcp, per_qi = _exact_check(con, qi)
    naive_metrics.assert_losses_equal(con, "out_t", gcp, per_qi)
