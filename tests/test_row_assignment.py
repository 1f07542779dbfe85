"""The row->class lookup behind k_anonymize (``__kanon_ec``): identity and gapped rowids, rows
that were not anonymized, dropped runs; and the SQL guard against rows that vanished."""
import duckdb
import numpy as np
import pytest

import kanon_duckdb
from kanon_duckdb.errors import ConcurrentChangeError
from kanon_duckdb.udfs.anonymize import Assignments


def test_identity_rowids_map_by_position():
    a = Assignments()
    token = a.add(np.arange(5), np.array([2, 2, 0, 1, 1]))
    assert a.classes_of(token, np.array([4, 0, 2])).tolist() == [1, 2, 0]


def test_gapped_and_unsorted_rowids_map_by_value():
    a = Assignments()
    token = a.add(np.array([10, 3, 7, 12]), np.array([0, 1, 2, 3]))
    assert a.classes_of(token, np.array([3, 7, 10, 12])).tolist() == [1, 2, 0, 3]


@pytest.mark.parametrize("rowid", [np.arange(4), np.array([1, 5, 9, 11])])
def test_a_row_that_was_not_anonymized_is_an_error(rowid):
    a = Assignments()
    token = a.add(rowid, np.zeros(4, dtype=np.int64))
    with pytest.raises(ConcurrentChangeError, match="the table changed during the call"):
        a.classes_of(token, np.array([int(rowid[0]), 99]))


def test_only_the_newest_runs_are_kept():
    a = Assignments(keep=2)
    tokens = [a.add(np.arange(3), np.zeros(3, dtype=np.int64)) for _ in range(3)]
    assert a.classes_of(tokens[2], np.array([0])).tolist() == [0]
    with pytest.raises(ConcurrentChangeError, match="assignment is gone"):
        a.classes_of(tokens[0], np.array([0]))


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


def test_unknown_token_through_sql_is_a_named_error():
    con = kanon_duckdb.connect()
    with pytest.raises(duckdb.Error, match="assignment is gone"):
        con.execute("SELECT __kanon_ec(123456, 0)").fetchall()
