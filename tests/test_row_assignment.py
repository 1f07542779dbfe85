"""Row -> class assignment by (row key, ordinal among equal keys): kanon_duckdb/assignment.py."""
from __future__ import annotations

import threading
from types import SimpleNamespace

import duckdb
import numpy as np
import pytest

import kanon_duckdb
from kanon_duckdb.assignment import Assignment, Assignments
from kanon_duckdb.errors import ConcurrentChangeError, DataError


def _keys(*k):
    return np.array(k, dtype=np.uint64)


def test_equal_keys_hand_out_each_of_their_classes_once():
    store = Assignments()
    t = store.start(Assignment(_keys(5, 7, 5, 9), np.array([0, 2, 1, 3])))
    first = store.classes_of(t, _keys(7, 5)).tolist()
    second = store.classes_of(t, _keys(5, 9)).tolist()
    assert first[0] == 2 and second[1] == 3
    assert sorted([first[1], second[0]]) == [0, 1]  # key 5's two classes, one each
    assert len(store) == 0  # every row handed out: the pass is dropped


def _check_pass(keys, ec, chunks):
    """Hand out ``chunks`` (lists of first-read positions, the order of a second read) and
    check that each row gets the class of an unused first-read row with its key."""
    store = Assignments()
    t = store.start(Assignment(keys, ec))
    left = {}
    for k, c in zip(keys.tolist(), ec.tolist()):
        left.setdefault(k, []).append(c)
    for chunk in chunks:
        got = store.classes_of(t, keys[chunk]).tolist()
        for k, c in zip(keys[chunk].tolist(), got):
            left[k].remove(c)  # ValueError if not one of the key's remaining classes
    assert all(not v for v in left.values())
    assert len(store) == 0


@pytest.mark.parametrize("order", ["scan", "reversed", "shuffled", "interleaved"])
def test_any_read_order_gets_valid_classes(order):
    """The second read in first-read order (chunks of consecutive rows, as a scan), reversed,
    shuffled and two interleaved scans; keys with many rows (every 3rd row shares one key, the
    rest pairs and singletons)."""
    rng = np.random.default_rng(5)
    n = 5000
    keys = np.arange(n, dtype=np.uint64) // 2 * 1_000_003
    keys[::3] = 77
    ec = rng.integers(0, 400, n)
    pos = np.arange(n)
    if order == "reversed":
        pos = pos[::-1].copy()
    elif order == "shuffled":
        rng.shuffle(pos)
    elif order == "interleaved":
        pos = np.concatenate([pos[a:a + 256] for s in (0, 256) for a in range(s, n, 512)])
    _check_pass(keys, ec, [pos[a:a + 700] for a in range(0, n, 700)])


def test_alternating_keys_read_one_key_at_a_time():
    """Keys A, B, A, B, ... read all A rows, then all B rows: every next position holds the other
    key, so each row probes its key's chain and resumes after the last position used."""
    n = 20_000
    keys = (np.arange(n) % 2).astype(np.uint64) + 3
    ec = np.arange(n) // 5
    pos = np.concatenate([np.arange(0, n, 2), np.arange(1, n, 2)])
    _check_pass(keys, ec, [pos[a:a + 2048] for a in range(0, n, 2048)])


def test_a_row_that_was_not_anonymized_is_an_error():
    store = Assignments()
    t = store.start(Assignment(_keys(1, 2), np.array([0, 0])))
    with pytest.raises(ConcurrentChangeError, match="a row that was not there"):
        store.classes_of(t, _keys(3))


def test_more_rows_with_a_key_than_anonymized_is_an_error():
    store = Assignments()
    t = store.start(Assignment(_keys(1, 2), np.array([0, 0])))
    with pytest.raises(ConcurrentChangeError, match="more rows with some QI values"):
        store.classes_of(t, _keys(1, 1))


def test_passes_are_independent_and_pinned_runs_restart():
    store = Assignments()
    a = Assignment(_keys(4, 4), np.array([0, 1]))
    pinned = store.pin(a, "payload")
    t1, payload = store.start_pinned(pinned)
    t2, _ = store.start_pinned(pinned)
    assert payload == "payload"
    assert store.classes_of(t1, _keys(4, 4)).tolist() == [0, 1]
    assert store.classes_of(t2, _keys(4)).tolist() == [0]
    store.unpin(pinned)
    with pytest.raises(ConcurrentChangeError, match="released"):
        store.start_pinned(pinned)


def test_many_runs_never_evict_each_other():
    """No bound on live runs (issue 9 section 5): 50 runs started before any is read."""
    store = Assignments()
    tokens = [store.start(Assignment(_keys(i, i + 1), np.array([0, 1]))) for i in range(50)]
    for i, t in enumerate(tokens):
        assert store.classes_of(t, _keys(i + 1, i)).tolist() == [1, 0]


def test_two_tuples_sharing_a_key_are_detected():
    data = SimpleNamespace(num=np.array([[1.0], [2.0]]), num_null=np.zeros((2, 1), bool),
                           cat=np.zeros((2, 0), np.int32))
    with pytest.raises(DataError, match="share one 64-bit row key"):
        Assignment(_keys(8, 8), np.array([0, 1]), data)


def test_two_calls_in_one_statement_each_find_their_rows():
    con = kanon_duckdb.connect()
    con.execute("CREATE TABLE u AS SELECT i AS id, i % 11 AS a FROM range(300) r(i)")
    rows = con.sql("SELECT 'k3' AS run, id, a_min, a_max, ec_size FROM k_anonymize('u', k := 3, qi := ['a']) "
                   "UNION ALL SELECT 'k50', id, a_min, a_max, ec_size FROM k_anonymize('u', k := 50, qi := ['a'])"
                   ).fetchall()
    assert len(rows) == 600
    for run, k in (("k3", 3), ("k50", 50)):
        mine = [r for r in rows if r[0] == run]
        assert min(r[4] for r in mine) >= k
        assert all(r[2] <= r[1] % 11 <= r[3] for r in mine)
    con.close()


def test_unknown_token_through_sql_is_a_named_error():
    con = kanon_duckdb.connect()
    with pytest.raises(duckdb.Error, match="assignment is gone"):
        con.execute("SELECT __kanon_ec(123456, 0::UBIGINT)").fetchall()
    con.close()


def test_a_relation_that_changes_between_the_reads_is_a_clear_error():
    con = kanon_duckdb.connect()
    con.execute("CREATE TABLE w AS SELECT i AS id, i % 50 AS a, i % 7 AS b FROM range(5000) r(i)")
    con.execute("CREATE VIEW shaky AS SELECT * FROM w WHERE random() < 0.5")
    with pytest.raises(duckdb.Error, match="changed during the call"):
        con.execute("FROM k_anonymize('shaky', k := 3, qi := ['a', 'b'])").fetchall()
    con.close()


def test_concurrent_callers_never_fail_each_other():
    """Issue 9 section 5: more threads than any cache ever had (4), each on its own cursor with
    its own table large enough that the scans overlap, each anonymizing it twice."""
    con = kanon_duckdb.connect()
    n_threads, n_rows = 10, 60_000
    for t in range(n_threads):
        con.execute(f"CREATE TABLE c{t} AS SELECT i AS id, (i * {t + 3}) % 97 AS a, "
                    f"(i % {t + 5})::VARCHAR AS b FROM range({n_rows}) r(i)")
    errors, results = [], {}

    def work(t):
        cur = con.cursor()
        try:
            for rep in range(2):
                results[(t, rep)] = cur.execute(
                    f"SELECT count(*), min(ec_size), count(DISTINCT id) FROM "
                    f"k_anonymize('c{t}', k := 5, qi := ['a', 'b'])").fetchall()[0]
        except Exception as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(repr(exc))
        finally:
            cur.close()

    threads = [threading.Thread(target=work, args=(t,)) for t in range(n_threads)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    con.close()
    assert errors == []
    assert len(results) == 2 * n_threads
    assert all(r[0] == n_rows and r[1] >= 5 and r[2] == n_rows for r in results.values())


def _sensitive_table(con):
    """600 rows over 7 QI values, 3 sensitive values; ``v`` returns them in another order on
    every read (as a parallel scan, a multi-batch Arrow object or a Spark partition may)."""
    con.execute("CREATE TABLE t AS SELECT i AS id, (i % 7)::INTEGER AS q0, "
                "'s' || (hash(i) % 3)::VARCHAR AS s FROM range(600) r(i)")
    con.execute("CREATE VIEW v AS SELECT * FROM t ORDER BY hash(id + random())")
    con.execute("CREATE TEMP VIEW tv AS SELECT * FROM t ORDER BY hash(id + random())")


def _l_violations(rows, l):
    """Classes (by ec) of the published rows (id, s, ec, suppressed) with fewer than ``l``
    distinct sensitive values."""
    by_ec = {}
    for _id, s, ec, sup in rows:
        if not sup:
            by_ec.setdefault(ec, set()).add(s)
    return sum(len(v) < l for v in by_ec.values())


@pytest.mark.parametrize("algo", ["kmember", "oka"])
@pytest.mark.parametrize("relation", ["v", "tv"])
def test_rows_sharing_a_qi_tuple_keep_their_class_by_their_sensitive_value(algo, relation):
    # kmember puts rows of one QI tuple into different classes; under l-diversity the second
    # read must give each row the class of a row with its own sensitive value (the row key
    # hashes the sensitive columns, encoding.with_key_columns): 9 classes broke l = 2 before
    con = kanon_duckdb.connect()
    _sensitive_table(con)
    rows = con.sql(f"SELECT id, s, ec, suppressed FROM k_anonymize('{relation}', k := 4, "
                   f"algo := '{algo}', qi := ['q0'], sensitive := ['s'], l := 2)").fetchall()
    assert len(rows) == 600
    assert sorted((i, s) for i, s, _, _ in rows) == con.sql("SELECT id, s FROM t ORDER BY id").fetchall()
    assert _l_violations(rows, 2) == 0


def test_the_python_api_publishes_rows_by_their_sensitive_value_too():
    from kanon_duckdb.api import anonymize
    con = kanon_duckdb.connect()
    _sensitive_table(con)
    rel = anonymize("v", con=con, k=4, algo="kmember", qi=["q0"], sensitive=["s"], l=2)
    rows = rel.select("id, s, ec, suppressed").fetchall()
    assert len(rows) == 600 and _l_violations(rows, 2) == 0
