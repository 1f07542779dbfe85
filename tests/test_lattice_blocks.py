"""Blocks of the lattice family (issue 15): from ``levels.BLOCK_MIN_ROWS`` encoded rows the
space stores them sorted by the leaf of its tallest QI, so every level of that QI cuts the rows
into runs (blocks) that are unions of a node's classes; a capped pass from the rows stops as
soon as its complete blocks leave more than ``limit`` rows in classes smaller than k (the node
is infeasible: the suppressed rows only grow). Every answer and every published partition must
be what the unsorted space gives when it counts every node in full.
"""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_lattice import make_data, tables

from kanon_duckdb.algorithms.lattice import NodeChecker, build_space, levels, optimal
from kanon_duckdb.algorithms.lattice import _kernels as K
from test_lattice_rollup import all_nodes


def space_of(data, blocks: bool):
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(levels, "BLOCK_MIN_ROWS", 0 if blocks else 1 << 62)
        return build_space(data)


def same_partition(a, b):
    assert (a.ec == b.ec).all() and (a.suppressed == b.suppressed).all()
    assert (a.cat_nodes == b.cat_nodes).all()
    for x, y in ((a.num_lo, b.num_lo), (a.num_hi, b.num_hi)):
        assert np.array_equal(x, y, equal_nan=True)
    assert a.info["n_suppressed"] == b.info["n_suppressed"]


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(1, 5), st.sampled_from([0.0, 0.1, 0.3]),
       st.sampled_from(["log", "gcp"]), st.booleans(), st.randoms(use_true_random=False))
def test_blocks_keep_every_node_result_and_partition(data, k, ms, loss, chunks, rnd):
    """Every node checked on the sorted space by a stopping checker (blocks on, sequential or
    in thread chunks), in any order, has the feasibility, loss and bound of the full count on
    the data order; its published partition (classes numbered as in the data order) is the
    same partition."""
    k = min(k, data.n)
    fast_space, plain_space = space_of(data, True), space_of(data, False)
    assert plain_space.order is None
    nodes = all_nodes(plain_space)
    rnd.shuffle(nodes)
    fast = NodeChecker(fast_space, k, ms, loss, stop_early=True, cache_entries=4,
                       cache_rows=data.n)
    if chunks:
        fast.parallel_min = 0
    plain = NodeChecker(plain_space, k, ms, loss)
    for node in nodes:
        got, want = fast.check(node), plain.check(node)
        assert got.feasible == want.feasible, node
        assert got.loss == want.loss or (math.isinf(got.loss) and math.isinf(want.loss))
        assert got.lower_bound == want.lower_bound
        if got.n_suppressed >= 0:
            assert got.n_suppressed == want.n_suppressed
        else:
            assert not want.feasible
    for node in nodes[:4]:
        same_partition(fast.partition(node, {}), plain.partition(node, {}))


def blocky_table():
    """200 rows: a = row // 20 (10 values, a tall interval tree), b 4 values x 5 rows per
    a-value plus one row alone. k = 3, 2 % suppression (limit 4): node (0, 0) has 50 classes
    (cap 70: the class count cannot reject it) and 10 suppressed rows, one per a-block."""
    a = [float(i // 20) for i in range(200)]
    b = [float(4 if i % 20 == 19 else (i % 20) // 5) for i in range(200)]
    return make_data([a, b], [])


def test_blocks_stop_a_node_whose_closed_blocks_suppress_too_much():
    """The sorted space's pass over node (0, 0) stops once 5 closed a-blocks hold 5 > 4
    suppressed rows (cap + 1 classes reported), where the class count alone reads every row;
    the node is infeasible either way, and optimal picks the brute-force optimum."""
    data = blocky_table()
    sp = space_of(data, True)
    assert sp.names[sp.block_qi] == "n0" and sp.block_row((0, 0)) == sp.cstart[0]
    ch = NodeChecker(sp, 3, 0.02, "log", stop_early=True)
    assert ch.cap == 70 and ch.limit == 4
    full = ch._run_kernels((0, 0), cap=ch.cap)
    assert full[0].shape[0] == 50 and int(full[1][full[1] < 3].sum()) == 10
    stopped = ch._run_kernels((0, 0), cap=ch.cap, blocks=True)
    assert stopped[0].shape[0] == ch.cap + 1  # stopped by the blocks, not by the count
    res = ch.check((0, 0))
    assert not res.feasible and res.n_suppressed == -1
    plain = NodeChecker(space_of(data, False), 3, 0.02, "log")
    assert plain.check((0, 0)).n_suppressed == 10
    feasible = [(plain.check(v).loss, v) for v in all_nodes(sp) if plain.check(v).feasible]
    best = min(loss for loss, _ in feasible)
    got, _ = optimal.search(ch)
    assert ch.check(got).loss == best and got == optimal.search(plain)[0]


def test_the_chunked_pass_counts_only_blocks_inside_its_chunk():
    """group_node_parallel with blocks: a chunk counts only the blocks that begin and end in
    it (the first's first and the last's last included), and chunks do not add their counts up.
    One chunk sees all 10 suppressed rows; two chunks see 4 each (rows 0-99: blocks 0-3 closed,
    block 4 reaches the chunk's end; rows 100-199: block 5 began before): they stop with limit
    3, not with limit 4 (then the full table of 50 classes)."""
    sp = space_of(blocky_table(), True)
    for threads, limit, rows in ((1, 4, 71), (2, 3, 71), (2, 4, 50), (1, 9, 71), (1, 10, 50)):
        ch = NodeChecker(sp, 3, 0.02, "log", stop_early=True)
        ch.parallel_min, ch.limit = 0, limit
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr("numba.get_num_threads", lambda: threads)
            assert ch._run_kernels((0, 0), cap=ch.cap, blocks=True)[0].shape[0] == rows


def test_levels_that_are_not_runs_give_no_blocks():
    """An unbalanced tree's level can split one code into several runs of the sorted rows
    (leaves a1, b1, c; two steps up: *, A, *): that level gives no blocks, the others do."""
    import test_lattice
    edges = [("a1", "A"), ("B", "A"), ("b1", "B"), ("A", "*"), ("c", "*"), ("*", None)]
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(test_lattice.TREES, "uneven", edges)
        data = make_data([], [("uneven", ["c", "a1", "b1", "c", "b1", "a1"] * 5)])
    sp = space_of(data, True)
    assert sp.block_qi == 0 and sp.block_levels.tolist() == [True, True, False, True]
    assert [sp.block_row((lv,)) for lv in range(4)] == [sp.cstart[0], sp.cstart[0] + 1, -1, -1]
    ch = NodeChecker(sp, 20, 0.0, "log", stop_early=True)
    plain = NodeChecker(space_of(data, False), 20, 0.0, "log")
    for lv in range(4):
        assert ch.check((lv,)).feasible == plain.check((lv,)).feasible
    assert K.counting_order(np.array([2, 0, 1, 0], dtype=np.int32), 3).tolist() == [1, 3, 2, 0]
    assert K.first_seen_labels(np.array([2, 2, 0, 1, 0], dtype=np.int32), 3)[0].tolist() == \
        [0, 0, 1, 2, 1]
