"""Full-domain algorithms on the histogram of distinct QI tuples (issue 15, item 1).

The lattice family reads ``SELECT qi.., count(*) GROUP BY qi..`` (``encoding.encode(histogram=
True)``), so its arrays hold one entry per distinct tuple with a row count; results must equal
the per-row computation exactly: same node, loss, suppressed rows (counted in rows), and the
privacy models hold on the rows of the published table.
"""
import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_lattice import brute_force, run, tables
from test_privacy_enforce import S_TREE, make_table, run_and_check

import kanon_duckdb
from kanon_duckdb.qidata import QIData
from kanon_duckdb.anonymize import anonymize
from kanon_duckdb.encoding import encode, plan_qis

LATTICE = ("optimal", "kgen", "random", "datafly")


def as_histogram(data: QIData, repeat) -> tuple[QIData, QIData, np.ndarray]:
    """(per-row data with row i repeated repeat[i] times, its histogram, row -> tuple index)."""
    rows = np.repeat(np.arange(data.n), repeat)
    per_row = QIData(rows.size, data.num[rows], data.num_null[rows], data.num_lo, data.num_hi,
                     data.num_is_int, data.cat[rows], data.trees, data.num_names, data.cat_names)
    packed = np.concatenate([per_row.num, per_row.num_null, per_row.cat], axis=1)
    uniq, first, inv, counts = np.unique(packed, axis=0, return_index=True, return_inverse=True,
                                         return_counts=True)
    hist = QIData(uniq.shape[0], per_row.num[first], per_row.num_null[first], data.num_lo,
                  data.num_hi, data.num_is_int, per_row.cat[first], data.trees, data.num_names,
                  data.cat_names, counts=counts.astype(np.int64))
    return per_row, hist, inv.reshape(-1)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.data(), st.integers(1, 5), st.sampled_from([0.0, 0.1, 0.3]),
       st.sampled_from(["log", "gcp", "dm"]))
def test_histogram_gives_the_per_row_result(data, draw, k, max_suppression, loss):
    repeat = draw.draw(st.lists(st.integers(1, 4), min_size=data.n, max_size=data.n))
    per_row, hist, inv = as_histogram(data, repeat)
    k = min(k, per_row.n)
    for algo in LATTICE:
        a = run(algo, per_row, k, max_suppression=max_suppression, loss=loss, population=10,
                max_evaluations=40)
        b = run(algo, hist, k, max_suppression=max_suppression, loss=loss, population=10,
                max_evaluations=40)
        assert a.info["levels"] == b.info["levels"], algo
        assert a.info["loss"] == pytest.approx(b.info["loss"], rel=1e-12, abs=1e-12)
        assert a.info["n_suppressed"] == b.info["n_suppressed"] == int(a.suppressed.sum())
        # the same classes: a row's class is its tuple's class
        assert (a.suppressed == b.suppressed[inv]).all()
        pairs = set(zip(a.ec.tolist(), b.ec[inv].tolist()))
        assert len(pairs) == len(set(a.ec.tolist())) == len(set(b.ec[inv].tolist()))
    best, _, _ = brute_force(per_row, k, max_suppression, loss)
    assert run("optimal", hist, k, max_suppression=max_suppression, loss=loss).info["loss"] \
        == pytest.approx(best, rel=1e-9, abs=1e-9)


def test_suppression_limit_counts_rows_not_tuples():
    """97 rows of one tuple and three singletons: 3 % suppression keeps level 0 (3 rows), 2 %
    does not; counted per tuple (3 of 4 tuples) neither would."""
    cat = np.array([[0], [1], [2], [3]], dtype=np.int32)
    from kanon_duckdb.taxonomy import build_index
    tree = build_index("c", [("a", "*"), ("b", "*"), ("c", "*"), ("d", "*"), ("*", None)])
    hist = QIData(4, np.zeros((4, 0)), np.zeros((4, 0), bool), np.zeros(0), np.zeros(0),
                  np.zeros(0, bool), cat, [tree], [], ["c"], counts=np.array([97, 1, 1, 1]))
    part = run("optimal", hist, 2, max_suppression=0.03)
    assert part.info["levels"] == [0] and part.info["n_suppressed"] == 3
    assert part.suppressed.tolist() == [False, True, True, True]
    part = run("optimal", hist, 2, max_suppression=0.02)
    assert part.info["levels"] == [1] and part.info["n_suppressed"] == 0


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    c.executemany("INSERT INTO kanon_taxonomy VALUES ('s', ?, ?)", S_TREE + [("*", None)])
    c.executemany("INSERT INTO kanon_taxonomy VALUES ('z', ?, ?)",
                  [(f"z{i}", f"g{i // 3}") for i in range(9)] + [(f"g{j}", "*") for j in range(3)])
    yield c
    c.close()


def test_encode_reads_one_entry_per_distinct_tuple(con):
    con.execute("CREATE OR REPLACE TABLE h AS SELECT i % 7 AS a, ['x', 'y', NULL][1 + i % 3] AS b, "
                "i AS id FROM range(420) r(i)")
    plan = plan_qis(con, "h", ["a", "b"])
    keys, data = encode(con, plan, histogram=True)
    assert data.n == 21 and data.n_rows == 420 and data.counts.sum() == 420
    assert sorted(data.counts.tolist()) == [20] * 21
    assert len(set(keys.tolist())) == 21
    row_keys, rows = encode(con, plan)
    assert rows.counts is None and rows.n == rows.n_rows == 420
    assert set(row_keys.tolist()) == set(keys.tolist())  # a tuple's key is its rows' key


@pytest.mark.parametrize("model", ["distinct", "t_equal", "risk"])
def test_sql_on_duplicated_rows_keeps_every_model(con, model):
    """Many rows per (QI, sensitive) tuple: the output holds every row, each class has k rows
    and the model holds on the rows (not on the distinct tuples)."""
    make_table(con, random.Random(5), 60)
    con.execute("CREATE OR REPLACE TABLE src AS SELECT s.* REPLACE (s.id * 10 + r.i AS id) "
                "FROM src s, range(1 + (s.id % 5)) r(i)")  # 1..5 copies of each row
    n = con.sql("SELECT count(*) FROM src").fetchall()[0][0]
    rows = run_and_check(con, "optimal", model, 4, 0, ", max_suppression := 0.1")
    assert len(rows) == n
    got = con.sql("SELECT n_rows, n_suppressed FROM kanon_runs ORDER BY run_id DESC LIMIT 1"
                  ).fetchall()[0]
    assert got == (n, sum(1 for r in rows if r["suppressed"]))
    assert got[1] <= math.floor(0.1 * n)
    res = anonymize(con, "src", k=4, algo="optimal", qi=["age", "z"], record=False,
                    params={"max_suppression": 0.1})
    distinct = con.sql("SELECT count(*) FROM (SELECT DISTINCT age, z FROM src)").fetchall()[0][0]
    assert res.data.n == distinct and res.data.n_rows == n  # the histogram, not the rows

