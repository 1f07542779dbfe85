"""Node evaluation shortcuts of the lattice family (issue 15): roll-up from a cached class table,
the early stop past n // k + limit classes, and the O(n) kernels of ``build_space``.

Each shortcut must give exactly what the plain computation gives: the same classes and row
counts, the same feasibility and loss for every node, the same sorted values and leaf extremes.
"""
import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_lattice import tables
from test_lattice_histogram import as_histogram

from kanon_duckdb.algorithms.lattice import NodeChecker, build_space
from kanon_duckdb.algorithms.lattice import _kernels as K


def class_counts(space, levels, rep, cnt):
    """{generalized code tuple: rows} of a class table (rep, cnt) at ``levels``."""
    cols = space.cols(levels)
    return {tuple(int(space.codes[c, r]) for c in cols): int(w) for r, w in zip(rep, cnt)}


def naive_counts(space, levels):
    """{generalized code tuple: rows} counted row by row from the encoded rows."""
    cols = space.cols(levels)
    counts = np.ones(space.t, dtype=np.int64) if space.counts is None else space.counts
    out = {}
    for t in range(space.t):
        key = tuple(int(space.codes[c, t]) for c in cols)
        out[key] = out.get(key, 0) + int(counts[t])
    return out


def all_nodes(space):
    return list(itertools.product(*[range(int(h) + 1) for h in space.heights]))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.data())
def test_rollup_from_a_snapshot_equals_grouping_the_rows(data, draw):
    """Classes of a node grouped from any node below it (each snapshot class one input with its
    row count) are the classes grouped from the rows: same keys, same row counts."""
    repeat = draw.draw(st.lists(st.integers(1, 3), min_size=data.n, max_size=data.n))
    _, hist, _ = as_histogram(data, repeat)
    space = build_space(hist)
    ch = NodeChecker(space, 2)
    nodes = all_nodes(space)
    low = draw.draw(st.sampled_from(nodes))
    high = tuple(draw.draw(st.integers(a, int(h))) for a, h in zip(low, space.heights))
    snap_rep, snap_cnt, _, snap_kc = ch._run_kernels(low)
    assert class_counts(space, low, snap_rep, snap_cnt) == naive_counts(space, low)
    # the table's own codes are its classes' codes at its node
    assert (snap_kc == space.codes[space.cols(low)[:, None], snap_rep[None, :]]).all()
    rep, cnt, _, kc = ch._run_kernels(high, (snap_rep, snap_cnt, snap_kc, low))
    assert class_counts(space, high, rep, cnt) == naive_counts(space, high)
    assert (kc == space.codes[space.cols(high)[:, None], rep[None, :]]).all()
    assert int(cnt.sum()) == space.n


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(1, 5), st.sampled_from([0.0, 0.1, 0.3]),
       st.sampled_from(["log", "gcp"]), st.randoms(use_true_random=False))
def test_early_stop_and_cache_keep_every_node_result(data, k, ms, loss, rnd):
    """A checker that stops grouping past n // k + limit classes and rolls nodes up from its
    cache, visiting the nodes in any order, reports every node as one grouping each from the
    rows: same feasibility, same loss; the suppressed rows agree when counted."""
    k = min(k, data.n)
    space = build_space(data)
    nodes = all_nodes(space)
    rnd.shuffle(nodes)
    fast = NodeChecker(space, k, ms, loss, stop_early=True, cache_entries=4, cache_rows=data.n)
    for node in nodes:
        plain = NodeChecker(space, k, ms, loss).check(node)
        got = fast.check(node)
        assert got.feasible == plain.feasible, node
        assert got.loss == plain.loss or (math.isinf(got.loss) and math.isinf(plain.loss))
        assert got.lower_bound == plain.lower_bound
        if got.n_suppressed >= 0:
            assert got.n_suppressed == plain.n_suppressed
        else:  # not counted: rejected by the bounds or stopped early, so surely infeasible
            assert not plain.feasible


def test_early_stop_reads_a_prefix_and_reports_infeasible():
    """100 rows, two QIs of 10 values x 10 rows each (each alone is 10-anonymous), all pairs
    distinct; k = 10, no suppression: the bottom has 100 > 100 // 10 classes, so it is infeasible
    as soon as 11 classes are seen; a stopping checker says so without counting (-1)."""
    from test_lattice import make_data
    data = make_data([[float(i // 10) for i in range(100)], [float(i % 10) for i in range(100)]],
                     [])
    space = build_space(data)
    ch = NodeChecker(space, 10, 0.0, "log", stop_early=True)
    assert ch.cap == 10 and ch.bounds == (0, 0)
    rep, cnt = ch._run_kernels((0, 0), cap=ch.cap)[:2]
    assert rep.shape[0] == 11 and cnt.tolist() == [1] * 11  # stopped at the 11th class
    assert ch._run_kernels((0, 0))[0].shape[0] == 100
    res = ch.check((0, 0))
    assert not res.feasible and res.n_suppressed == -1
    assert NodeChecker(space, 10, 0.0, "log").check((0, 0)).n_suppressed == 100
    # dm prunes with the node's sum of squared class sizes: it never stops early
    assert NodeChecker(space, 10, 0.0, "dm", stop_early=True).cap > space.n


def test_cache_keeps_within_its_row_budget():
    from test_lattice import make_data
    rng = np.random.default_rng(0)
    data = make_data([list(rng.integers(0, 60, 400).astype(float)),
                      list(rng.integers(0, 30, 400).astype(float))], [])
    space = build_space(data)
    ch = NodeChecker(space, 3, 0.05, "log", cache_entries=8, cache_rows=300)
    for node in all_nodes(space):
        ch.check(node)
        assert ch._cached_rows <= 300 or ch._n_cached == 1
        assert ch._n_cached <= 8
        assert ch._cached_rows == sum(t[0].shape[0] for t in ch._ctab if t is not None)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.integers(-50, 50).map(float), st.sampled_from([0.0, -0.0, 1.5, 1e300]),
                          st.floats(allow_nan=False, allow_infinity=False)), min_size=0,
                max_size=200),
       st.data())
def test_distinct_sorted_equals_unique_and_searchsorted(values, draw):
    col = np.array(values, dtype=np.float64)
    null = np.array(draw.draw(st.lists(st.booleans(), min_size=col.size, max_size=col.size)),
                    dtype=bool)
    # a strided column, as build_space passes it (a column of the row-major (n, d) array)
    wide = np.zeros((col.size, 2))
    wide[:, 1] = col
    view = wide[:, 1]
    vals, pos = K.distinct_sorted(view, view.view(np.int64), null)
    expect = np.unique(col[~null])
    assert vals.tolist() == expect.tolist()
    assert (pos[null] == -1).all()
    assert (pos[~null] == np.searchsorted(expect, col[~null])).all()


def test_distinct_sorted_grows_past_its_first_table():
    rng = np.random.default_rng(5)
    col = rng.integers(0, 5000, 20000).astype(np.float64) / 7
    vals, pos = K.distinct_sorted(col, col.view(np.int64), np.zeros(col.size, bool))
    expect = np.unique(col)
    assert vals.tolist() == expect.tolist() and (vals[pos] == col).all()


def test_leaf_extremes_equal_ufunc_at():
    rng = np.random.default_rng(2)
    leaf = rng.integers(0, 30, 500).astype(np.int32)
    values = rng.normal(size=500)
    null = rng.random(500) < 0.1
    vmin, vmax, has_null = K.leaf_extremes(leaf, values, null, 32)
    emin, emax = np.full(32, np.inf), np.full(32, -np.inf)
    np.minimum.at(emin, leaf[~null], values[~null])
    np.maximum.at(emax, leaf[~null], values[~null])
    assert (vmin == emin).all() and (vmax == emax).all()
    assert has_null.tolist() == [bool(null[leaf == f].any()) for f in range(32)]


def test_roll_up_extremes_equal_the_subtree_min_max():
    """Each node's (min, max, any NULL) after the roll-up is that of the nodes in its subtree
    (a random pre-order tree: every parent id below its children's)."""
    rng = np.random.default_rng(5)
    n = 300
    parent = np.array([-1] + [int(rng.integers(0, u)) for u in range(1, n)], dtype=np.int32)
    lo0, hi0 = rng.normal(size=n), rng.normal(size=n)
    null0 = rng.random(n) < 0.05
    lo, hi, nn = lo0.copy(), hi0.copy(), null0.copy()
    K.roll_up_extremes(parent, lo, hi, nn)
    for u in range(n):
        sub, todo = [], [u]
        while todo:
            v = todo.pop()
            sub.append(v)
            todo.extend(np.flatnonzero(parent == v).tolist())
        assert lo[u] == lo0[sub].min() and hi[u] == hi0[sub].max()
        assert nn[u] == null0[sub].any()


@pytest.mark.parametrize("loss", ["log", "gcp", "dm"])
def test_stopping_searches_equal_counting_ones(loss):
    """optimal, datafly and random with the early stop (their default) choose the node that the
    same search chooses when every node is counted in full."""
    from kanon_duckdb.algorithms.lattice import datafly, optimal, random_search
    from test_lattice import two_numeric_one_tree_data
    data = two_numeric_one_tree_data(11)
    space = build_space(data)
    for k, ms in ((5, 0.0), (10, 0.02), (25, 0.1)):
        a = NodeChecker(space, k, ms, loss, stop_early=True)
        b = NodeChecker(space, k, ms, loss)
        assert optimal.search(a)[0] == optimal.search(b)[0]
        assert datafly.search(a, {}, 0)[0] == datafly.search(b, {}, 0)[0]
        params = {"max_evaluations": 60}
        assert random_search.search(a, params, 3)[0] == random_search.search(b, params, 3)[0]
        if loss != "dm":
            assert a.cap < space.n  # the stop is on


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.data(), st.integers(1, 4), st.booleans())
def test_chunked_grouping_equals_the_sequential_one(data, draw, threads, want_cls):
    """group_node_parallel (P chunks merged in order, dense arrays or hash tables) returns
    group_node's classes in the same order with the same representatives, counts, input classes
    and codes, with or without a cap (a stopped grouping reports cap + 1 classes in both)."""
    space = build_space(data)
    ch = NodeChecker(space, 2)
    levels = draw.draw(st.sampled_from(all_nodes(space)))
    cap = draw.draw(st.sampled_from([1, 2, 5, space.t, 1 << 62]))
    cols = space.cols(levels)
    strides, ks = space.keyspace(levels)
    args = (space.codes, cols, ch._nolut, ch._nolut, False)
    rows = (ch._norep[0], ch._norep[1], True, strides)
    hkey, hval = ch._tables(space.t)
    want = K.group_node(*args, *rows, ks, cap, ch._dense, hkey, hval, ch._keybuf,
                        want_cls)
    keys = min(-(-space.t // threads), min(cap, space.t) + 1)
    size = 1
    while size < 2 * keys + 2:
        size *= 2
    scr_key = np.full((threads, size), -1, dtype=np.int64)
    scr_dense = np.full((threads, draw.draw(st.sampled_from([1, 1 << 12]))), -1, np.int32)
    got = K.group_node_parallel(*args, *rows, ks, cap, scr_key,
                                np.empty((threads, size), np.int32), scr_dense, hkey, hval,
                                want_cls)
    assert got[0].shape[0] == want[0].shape[0]
    assert (scr_key == -1).all() and (hkey == -1).all()  # scratch left clean
    assert (scr_dense == -1).all()
    if want[0].shape[0] <= cap:  # complete: identical tables
        for a, b in zip(got, want):
            assert a.tolist() == b.tolist()


def test_checker_uses_chunks_above_the_threshold(monkeypatch):
    """With the threshold lowered, optimal's capped passes over the rows run in chunks and the
    search returns the node and loss of the sequential checker."""
    from kanon_duckdb.algorithms.lattice import checker, optimal
    from test_lattice import make_data
    rng = np.random.default_rng(4)
    n = 500
    data = make_data([list(rng.integers(0, 90, n).astype(float)),
                      list(rng.integers(0, 500, n).astype(float))],
                     [("deep", list(rng.choice(["x1", "x2", "y1", "y2", "z1"], n)))])
    space = build_space(data)
    seq = NodeChecker(space, 5, 0.02, "log", stop_early=True)
    monkeypatch.setattr(checker, "PARALLEL_MIN", 0)
    monkeypatch.setattr(checker, "_DENSE_MAX", 16)  # every key space 'large'
    calls = []
    real = K.group_node_parallel
    monkeypatch.setattr(K, "group_node_parallel", lambda *a: calls.append(1) or real(*a))
    par = NodeChecker(space, 5, 0.02, "log", stop_early=True)
    a, b = optimal.search(par), optimal.search(seq)
    assert calls and a[0] == b[0]
    assert par.check(a[0]) == seq.check(b[0])
