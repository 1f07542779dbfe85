"""``encoding.group_rows``: the histogram of rows read in order equals the histogram DuckDB's
GROUP BY gives ``encode(histogram=True)`` (the same tuples, counts, codecs and trees), so a
full-domain run on it publishes the same classes (issue 14 item 2: the positional statement of
the lattice family reads the rows once instead of a GROUP BY plus a second read of the keys)."""
from __future__ import annotations

import numpy as np
import pytest

import kanon_duckdb
from kanon_duckdb.anonymize import anonymize
from kanon_duckdb.encoding import encode, group_rows, plan_qis
from kanon_duckdb.errors import DataError

ADULT_ARX = ["age", "education", "workclass", "marital_status", "occupation", "race", "sex",
             "native_country"]


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    kanon_duckdb.load_example(c)
    # NULLs in every QI kind, a DOUBLE with -0.0 and 0.0, a numeric text QI, repeated tuples
    c.execute("""CREATE TABLE g AS SELECT i AS id,
        CASE WHEN i % 11 = 0 THEN NULL ELSE (i * 7) % 30 END::INTEGER AS a,
        CASE WHEN i % 13 = 0 THEN NULL WHEN i % 17 = 0 THEN -0.0 WHEN i % 19 = 0 THEN 0.0
             ELSE ((i * 3) % 20) / 4.0 END::DOUBLE AS f,
        CASE WHEN i % 7 = 0 THEN NULL ELSE 'z' || (i % 5) END AS z,
        CASE WHEN i % 3 = 0 THEN 'F' ELSE 'M' END AS s
        FROM range(2000) r(i)""")
    yield c
    c.close()


def _same(a, b) -> bool:
    """Deep equality of codecs and trees (dataclasses holding numpy arrays)."""
    import dataclasses
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b, equal_nan=np.asarray(a).dtype.kind == "f")
    if dataclasses.is_dataclass(a):
        return type(a) is type(b) and all(_same(getattr(a, f.name), getattr(b, f.name))
                                          for f in dataclasses.fields(a))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return a == b


def _by_key(keys, data):
    """The histogram as {key: (num, num_null, cat, num_leaf, count)}: order-free."""
    out = {}
    for t in range(data.n):
        leaf = None if data.num_leaf is None else tuple(data.num_leaf[t])
        out[int(keys[t])] = (tuple(np.where(data.num_null[t], 0.0, data.num[t])),
                             tuple(data.num_null[t]), tuple(data.cat[t]), leaf,
                             int(data.counts[t]))
    return out


@pytest.mark.parametrize("table, qi, num_trees", [
    ("adult", ADULT_ARX, True), ("adult", ["age", "education_num", "workclass", "sex"], True),
    ("g", ["a", "f", "z", "s"], False), ("g", ["f", "z"], False)])
def test_grouped_rows_equal_the_group_by_histogram(con, table, qi, num_trees):
    plan = plan_qis(con, table, qi)
    hkeys, hist = encode(con, plan, need_num_trees=num_trees, histogram=True)
    rkeys, rows = encode(con, plan, need_num_trees=num_trees)
    tkeys, grouped, tuple_of = group_rows(rkeys, rows)
    assert grouped.n == hist.n and int(grouped.counts.sum()) == rows.n
    assert _by_key(tkeys, grouped) == _by_key(hkeys, hist)
    assert _same(grouped.num_codec, hist.num_codec) and _same(grouped.trees, hist.trees)
    assert _same(grouped.num_trees, hist.num_trees) and grouped.tree_attrs == hist.tree_attrs
    assert np.array_equal(grouped.num_lo, hist.num_lo) and np.array_equal(grouped.num_hi, hist.num_hi)
    # every row points at the tuple holding its own encoded values and key
    assert np.array_equal(tkeys[tuple_of], rkeys)
    assert np.array_equal(grouped.cat[tuple_of], rows.cat)
    assert np.array_equal(grouped.num_null[tuple_of], rows.num_null)
    assert np.array_equal(np.where(rows.num_null, 0, grouped.num[tuple_of]),
                          np.where(rows.num_null, 0, rows.num))


@pytest.mark.parametrize("algo", ["optimal", "datafly", "kgen", "random"])
def test_a_run_in_row_order_publishes_the_histogram_runs_classes(con, algo):
    """The same node, classes and loss as the GROUP BY run; each row gets its tuple's class."""
    kw = dict(k=10, algo=algo, qi=ADULT_ARX, record=False)
    ref = anonymize(con, "adult", **kw)
    res = anonymize(con, "adult", in_row_order=True, **kw)
    assert ref.rows is None and res.rows is not None
    assert res.partition.info.get("node") == ref.partition.info.get("node")
    assert res.generalized.n_classes == ref.generalized.n_classes
    assert np.array_equal(np.sort(res.generalized.size), np.sort(ref.generalized.size))
    keys, tuple_of = res.rows
    assert keys.size == 30162
    ref_class = dict(zip(ref.row_key.tolist(), np.asarray(ref.generalized.ec).tolist()))
    got = np.asarray(res.generalized.ec)[tuple_of]
    assert got.tolist() == [ref_class[k] for k in keys.tolist()]


def test_a_collision_is_refused():
    data = kanon_duckdb.qidata.QIData(
        3, np.zeros((3, 1)), np.zeros((3, 1), dtype=bool), np.zeros(1), np.ones(1),
        np.ones(1, dtype=bool), np.array([[0], [1], [0]], dtype=np.int32), [], ["a"], ["c"])
    keys, grouped, tuple_of = group_rows(np.array([5, 9, 5], dtype=np.uint64), data)
    assert keys.tolist() == [5, 9] and grouped.counts.tolist() == [2, 1]
    assert tuple_of.tolist() == [0, 1, 0]
    with pytest.raises(DataError, match="share one 64-bit row key"):
        group_rows(np.array([5, 5, 9], dtype=np.uint64), data)  # rows 0 and 1 differ


@pytest.mark.parametrize("first, second, differ", [
    ((2.0, False, 1), (2.0, False, 1), False),   # the same tuple
    ((-9.0, True, 1), (-7.0, True, 1), False),   # NULL equals NULL by its flag, whatever lies under it
    ((2.0, False, 1), (3.0, False, 1), True),    # another number
    ((2.0, False, 1), (2.0, True, 1), True),     # a number and a NULL over the same coordinate
    ((2.0, False, 1), (2.0, False, 0), True),    # another category
])
def test_rows_sharing_a_key_are_one_tuple_by_one_rule(first, second, differ):
    """``encoding.rows_differ`` is the one rule for two rows with one row key: the grouping of
    rows read in order (``group_rows``) and the row -> class assignment (per-row and histogram
    runs) refuse the pair as a collision exactly when it says the tuples differ."""
    from types import SimpleNamespace
    from kanon_duckdb.assignment import Assignment
    from kanon_duckdb.encoding import rows_differ
    num = np.array([[first[0]], [second[0]]])
    num_null = np.array([[first[1]], [second[1]]])
    cat = np.array([[first[2]], [second[2]]], dtype=np.int32)
    assert rows_differ(num, num_null, cat, 0, 1) is differ
    data = kanon_duckdb.qidata.QIData(2, num, num_null, np.zeros(1), np.ones(1),
                                      np.ones(1, dtype=bool), cat, [], ["a"], ["c"])
    keys = np.array([5, 5], dtype=np.uint64)
    refusals = []
    for build in (lambda: group_rows(keys, data),
                  lambda: Assignment(keys, np.array([0, 0]), data),
                  lambda: Assignment(keys, np.array([0, 0]),
                                     SimpleNamespace(num=num, num_null=num_null, cat=cat,
                                                     counts=np.array([3, 4])))):
        try:
            build()
            refusals.append(False)
        except DataError as exc:
            assert "share one 64-bit row key" in str(exc)
            refusals.append(True)
    assert refusals == [differ] * 3
    if not differ:
        keys_out, grouped, tuple_of = group_rows(keys, data)
        assert keys_out.tolist() == [5] and grouped.counts.tolist() == [2]
        assert tuple_of.tolist() == [0, 0]
