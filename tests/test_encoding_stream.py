"""The encoding streams the relation in Arrow batches (encoding.STREAM_ROWS rows each): the
encoded arrays, codecs, trees and row keys are the same whatever the batch size."""
import numpy as np
import pytest

import kanon_duckdb
from kanon_duckdb import encoding

TABLE = """CREATE TABLE t AS SELECT i AS id,
  CASE WHEN i % 11 = 0 THEN NULL ELSE i % 37 END AS small_int,
  CASE WHEN i % 13 = 0 THEN NULL ELSE 9007199254740000 + i * 3 END AS offset_int,
  CASE WHEN i % 5 = 0 THEN -9223372036854775807 ELSE i * 1000003 END AS rank_int,
  CASE WHEN i % 17 = 0 THEN NULL WHEN i % 19 = 0 THEN 'NaN'::DOUBLE ELSE i / 7.0 END AS plain_float,
  CASE WHEN i % 23 = 0 THEN 'inf'::DOUBLE ELSE i * 0.5 END AS rank_float,
  CASE WHEN i % 7 = 0 THEN NULL ELSE 'v' || (i % 9) END AS cat_a,
  'w' || (i * i % 31) AS cat_b,
  (i % 3)::VARCHAR AS sens
FROM range(500) r(i)"""
QI = ["small_int", "offset_int", "rank_int", "plain_float", "rank_float", "cat_a", "cat_b"]


def _encode(con, histogram=False):
    plan = encoding.plan_qis(con, "t", QI)
    return encoding.encode(con, plan, extra_columns=["sens"], histogram=histogram)


@pytest.mark.parametrize("blocks", [False, True])
@pytest.mark.parametrize("histogram", [False, True])
def test_batches_of_any_size_encode_the_same(monkeypatch, histogram, blocks):
    """... and whatever the numeric columns' row blocks (``blocks``: FILL_ROWS rows, each
    batch's two halves in two threads)."""
    con = kanon_duckdb.connect()
    con.execute(TABLE)
    key1, one = _encode(con, histogram)
    if not histogram:
        assert one.n == 500 and int(one.num_null[:, 0].sum()) == 46  # i % 11 == 0 is NULL
    kinds = [c.kind if c is not None else "plain" for c in one.num_codec]
    assert kinds == ["plain", "offset", "rank", "plain", "rank"]  # every codec path is exercised
    monkeypatch.setattr(encoding, "STREAM_ROWS", 7 if not blocks else 40)
    if blocks:
        monkeypatch.setattr(encoding, "FILL_ROWS", 3)
        monkeypatch.setattr(encoding, "PARALLEL_ENCODE_ROWS", 0)
    key2, many = _encode(con, histogram)
    if histogram:  # the GROUP BY may list distinct tuples in another order: compare sorted by key
        o1, o2 = np.argsort(key1), np.argsort(key2)
    else:
        o1 = o2 = np.arange(one.n)
    np.testing.assert_array_equal(key1[o1], key2[o2])
    np.testing.assert_array_equal(one.num[o1], many.num[o2])
    np.testing.assert_array_equal(one.num_null[o1], many.num_null[o2])
    np.testing.assert_array_equal(one.cat[o1], many.cat[o2])
    np.testing.assert_array_equal(one.num_lo, many.num_lo)
    np.testing.assert_array_equal(one.num_hi, many.num_hi)
    assert [t.labels for t in one.trees] == [t.labels for t in many.trees]
    for a, b in zip(one.num_codec, many.num_codec):
        assert (a is None) == (b is None)
        if a is not None:
            assert (a.kind, a.value_lo, a.value_hi) == (b.kind, b.value_lo, b.value_hi)
    assert one.extra["sens"].take(o1).equals(many.extra["sens"].take(o2))
    if histogram:
        np.testing.assert_array_equal(one.counts[o1], many.counts[o2])
    assert None in one.trees[0].leaf_of_label  # cat_a's NULLs have their own leaf
    con.close()


def test_a_histogram_is_grouped_once_and_equals_the_encoded_tuples():
    # the histogram's GROUP BY ran twice (once more for its size and numeric extremes): now the
    # extremes come from the rows and the arrays are cut to the tuples after the scan
    con = kanon_duckdb.connect()
    con.execute(TABLE)
    con.execute("CREATE TABLE d AS SELECT * FROM t UNION ALL SELECT * FROM t WHERE id % 3 = 0 "
                "UNION ALL SELECT * FROM t WHERE id % 5 = 1")
    cols = ", ".join(QI + ["sens"])
    con.execute(f"CREATE TABLE h AS SELECT {cols}, count(*) AS c FROM d GROUP BY {cols}")
    sent = []

    class Spy:
        def __getattr__(self, name):
            return getattr(con, name)

        def execute(self, sql, *args):
            sent.append(sql)
            return con.execute(sql, *args)

        def sql(self, sql, *args):
            sent.append(sql)
            return con.sql(sql, *args)

    key_h, hist = encoding.encode(Spy(), encoding.plan_qis(con, "d", QI), extra_columns=["sens"],
                                  histogram=True)
    assert sum("GROUP BY" in s.upper() for s in sent) == 1
    key_t, tup = encoding.encode(con, encoding.plan_qis(con, "h", QI), extra_columns=["sens", "c"])
    assert hist.n == tup.n == 500 and hist.counts.sum() == 500 + 167 + 100
    o1, o2 = np.argsort(key_h, kind="stable"), np.argsort(key_t, kind="stable")
    np.testing.assert_array_equal(key_h[o1], key_t[o2])
    np.testing.assert_array_equal(hist.counts[o1], tup.extra["c"].to_numpy()[o2])
    np.testing.assert_array_equal(hist.num[o1], tup.num[o2])
    np.testing.assert_array_equal(hist.num_null[o1], tup.num_null[o2])
    np.testing.assert_array_equal(hist.cat[o1], tup.cat[o2])
    np.testing.assert_array_equal(hist.num_lo, tup.num_lo)
    np.testing.assert_array_equal(hist.num_hi, tup.num_hi)
    for a, b in zip(hist.num_codec, tup.num_codec):
        assert (a is None) == (b is None)
        if a is not None:
            assert (a.kind, a.value_lo, a.value_hi) == (b.kind, b.value_lo, b.value_hi)
            if a.kind == "rank":
                np.testing.assert_array_equal(a.values, b.values)
    assert hist.num.flags.c_contiguous and hist.cat.flags.c_contiguous
    con.close()


INT_QI = ["small_int", "offset_int", "rank_int", "cat_a", "cat_b"]


def _same_encoding(a, b):
    (key1, one), (key2, two) = a, b
    np.testing.assert_array_equal(key1, key2)
    for name in ("num", "num_null", "cat", "num_lo", "num_hi"):
        np.testing.assert_array_equal(getattr(one, name), getattr(two, name))
    assert [t.labels for t in one.trees] == [t.labels for t in two.trees]
    assert [(c.kind, c.base, c.value_lo, c.value_hi) if c is not None else None
            for c in one.num_codec] == [(c.kind, c.base, c.value_lo, c.value_hi)
                                        if c is not None else None for c in two.num_codec]


class _Counting:
    """A connection that counts the statements sent through it."""

    def __init__(self, con):
        self.con, self.sent = con, []

    def __getattr__(self, name):
        return getattr(self.con, name)

    def execute(self, sql, *args):
        self.sent.append(sql)
        return self.con.execute(sql, *args)

    def sql(self, sql, *args):
        self.sent.append(sql)
        return self.con.sql(sql, *args)


@pytest.mark.parametrize("extra", [[], ["sens"]])
def test_a_small_table_read_whole_encodes_as_the_counted_read(monkeypatch, extra):
    """rows_estimate up to SMALL_ROWS: the rows are read before the codecs are chosen (their
    extremes from the rows, no aggregate first); the same arrays and codecs as the counted read,
    also with batches of a few rows, an all-NULL integer column, and an estimate gone stale."""
    con = kanon_duckdb.connect()
    con.execute(TABLE)
    con.execute("ALTER TABLE t ADD COLUMN nulls INTEGER")  # all NULL: no extremes
    qi = INT_QI + ["nulls"]
    plan = encoding.plan_qis(con, "t", qi)
    counted = encoding.encode(con, plan, extra_columns=extra)
    assert [c.kind if c is not None else "plain" for c in counted[1].num_codec][:3] == [
        "plain", "offset", "rank"]
    spy = _Counting(con)
    small = encoding.encode(spy, plan, extra_columns=extra, rows_estimate=500)
    _same_encoding(counted, small)
    assert not any("count(*)" in q for q in spy.sent)  # no aggregate first
    monkeypatch.setattr(encoding, "STREAM_ROWS", 7)  # many batches
    _same_encoding(counted, encoding.encode(con, plan, extra_columns=extra, rows_estimate=500))
    monkeypatch.setattr(encoding, "SMALL_ROWS", 100)  # the estimate (100) was stale: 500 rows
    spy = _Counting(con)
    _same_encoding(counted, encoding.encode(spy, plan, extra_columns=extra, rows_estimate=100))
    assert any("count(*)" in q for q in spy.sent)  # counted first after all
    con.close()


def test_a_float_qi_or_no_estimate_counts_first():
    con = kanon_duckdb.connect()
    con.execute(TABLE)
    for qi, estimate in ((QI, 500), (INT_QI, None)):
        spy = _Counting(con)
        encoding.encode(spy, encoding.plan_qis(con, "t", qi), rows_estimate=estimate)
        assert any("count(*)" in q for q in spy.sent)
    con.close()


def test_anonymize_takes_the_estimate_from_the_catalog(monkeypatch):
    from kanon_duckdb.anonymize import anonymize
    con = kanon_duckdb.connect()
    con.execute(TABLE)
    seen = []
    real = encoding.encode
    monkeypatch.setattr("kanon_duckdb.anonymize.encode",
                        lambda *a, **kw: (seen.append(kw.get("rows_estimate")), real(*a, **kw))[1])
    a = anonymize(con, "t", k=5, qi=INT_QI)
    con.execute("CREATE VIEW v AS FROM t")
    b = anonymize(con, "v", k=5, qi=INT_QI)  # a view: no estimate, counted first
    assert seen == [500, None]
    np.testing.assert_array_equal(a.generalized.ec, b.generalized.ec)
    con.close()
