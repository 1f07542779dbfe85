"""Partition-then-cluster (algorithms/blocks.py): k-anonymous, classes inside blocks, recorded in
kanon_runs, identical to the plain run below the threshold, parameters validated."""
import json

import numpy as np
import pytest

import kanon_duckdb
from kanon_duckdb.algorithms.blocks import split_blocks
from kanon_duckdb.anonymize import anonymize
from kanon_duckdb.errors import InvalidParameterError

QI = ["a", "b", "c"]


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    c.execute("CREATE TABLE t AS SELECT (i * 37 % 101)::INTEGER AS a, (i * 13 % 7)::DOUBLE AS b, "
              "['x', 'y', 'z', 'w'][i % 4 + 1] AS c FROM range(600) r(i)")
    yield c
    c.close()


@pytest.mark.parametrize("algo", ["kmember", "oka"])
def test_blocked_run_is_k_anonymous_and_classes_stay_in_their_block(con, algo):
    res = anonymize(con, "t", k=5, algo=algo, qi=QI,
                    params={"partition_above": 100, "block_rows": 80})
    ec = res.generalized.ec
    sizes = np.bincount(ec)
    assert sizes[sizes > 0].min() >= 5 and ec.size == 600
    blocks = split_blocks(res.data, 5, 80)
    assert len(blocks) == res.partition.info["blocks"] > 1
    assert all(40 <= b.size for b in blocks)
    block_of = np.empty(600, dtype=np.int64)
    for i, rows in enumerate(blocks):
        block_of[rows] = i
    for c in np.unique(ec):  # no class spans two blocks
        assert np.unique(block_of[ec == c]).size == 1
    details, params = con.execute("SELECT details, params FROM kanon_runs WHERE run_id = ?",
                                  [res.run_id]).fetchall()[0]
    details, params = json.loads(details), json.loads(params)
    assert details["partitioned"] is True and details["blocks"] == len(blocks)
    assert params["partition_above"] == 100 and params["block_rows"] == 80


def test_below_the_threshold_the_run_is_the_plain_algorithm(con):
    a = anonymize(con, "t", k=5, algo="kmember", qi=QI, record=False)
    b = anonymize(con, "t", k=5, algo="kmember", qi=QI, params={"partition_above": 0},
                  record=False)
    assert a.partition.info["partitioned"] is False
    np.testing.assert_array_equal(a.generalized.ec, b.generalized.ec)


def test_bad_block_parameters_are_refused(con):
    with pytest.raises(InvalidParameterError, match="block_rows"):
        anonymize(con, "t", k=5, algo="kmember", qi=QI, params={"block_rows": 1})
    with pytest.raises(InvalidParameterError, match="partition_above"):
        anonymize(con, "t", k=5, algo="kmember", qi=QI, params={"partition_above": -1})


def test_sql_macro_takes_the_block_parameters(con):
    n, smallest = con.execute(
        "SELECT count(*), min(ec_size) FROM k_anonymize('t', k := 4, algo := 'kmember', "
        "qi := ['a', 'b', 'c'], partition_above := 100, block_rows := 100)").fetchall()[0]
    assert n == 600 and smallest >= 4


def test_blocked_info2means_learns_from_its_blocks_sensitive_rows(con):
    """A sensitive column travels in QIData.extra as an Arrow array: each block gets its own rows
    of it (was IndexError 'boolean index did not match' for every blocked info2means run with
    `sensitive`, found by the scale checker)."""
    con.execute("CREATE OR REPLACE TABLE ts AS SELECT *, ['no', 'yes'][(a + i) % 2 + 1] AS s "
                "FROM (SELECT row_number() OVER () AS i, * FROM t)")
    res = anonymize(con, "ts", k=5, algo="info2means", qi=QI,
                    params={"partition_above": 100, "block_rows": 80, "sensitive": "s"})
    sizes = np.bincount(res.generalized.ec)
    assert res.partition.info["partitioned"] is True and res.partition.info["blocks"] > 1
    assert sizes[sizes > 0].min() >= 5 and res.generalized.ec.size == 600
