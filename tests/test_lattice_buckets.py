"""Cheaper node evaluation of the lattice family (issue 15): byte planes of the level codes and
grouping in hash buckets that stops once a node is known infeasible.

Each must give exactly what the plain grouping gives: the same keys; the same class table
(classes, order, representatives, counts, codes) whenever the bucketed grouping completes, and
a stop only when the node really has more than ``cap`` classes or more suppressed rows than the
limit; the same feasibility and loss for every node and the same published node.
"""
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_lattice import tables
from test_lattice_histogram import as_histogram
from test_lattice_rollup import all_nodes

from kanon_duckdb.algorithms.lattice import NodeChecker, build_space, checker, optimal
from kanon_duckdb.algorithms.lattice import _kernels as K
from kanon_duckdb.algorithms.lattice.levels import code_planes

_NO_CAP = 1 << 62


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 1 << 20), min_size=1, max_size=4), st.integers(1, 50),
       st.randoms(use_true_random=False))
def test_code_planes_hold_each_code_byte_by_byte(mcol, t, rnd):
    """A column of m codes takes as many bytes as m - 1 needs (none for one code: every code is
    0); the planes, low byte first, give back every code."""
    mcol = np.array(mcol, dtype=np.int64)
    codes = np.array([[rnd.randrange(int(m)) for _ in range(t)] for m in mcol], dtype=np.int32)
    codes[:, 0] = mcol - 1  # the largest code occurs
    planes, pstart, pbytes = code_planes(codes, mcol)
    assert planes.dtype == np.uint8
    for c, m in enumerate(mcol.tolist()):
        assert pbytes[c] == -(-(m - 1).bit_length() // 8)
        back = np.zeros(t, dtype=np.int64)
        for i in range(pbytes[c]):
            back |= planes[pstart[c] + i].astype(np.int64) << (8 * i)
        assert back.tolist() == codes[c].tolist()


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.data())
def test_plane_keys_equal_the_code_keys(data, draw):
    space = build_space(data)
    levels = draw.draw(st.sampled_from(all_nodes(space)))
    cols = space.cols(levels)
    strides, _ = space.keyspace(levels)
    rows, pst = space.key_planes(cols, strides)
    want = (space.codes[cols].astype(np.int64) * strides[:, None]).sum(axis=0)
    got = (space.planes[rows].astype(np.int64) * pst[:, None]).sum(axis=0)
    assert got.tolist() == want.tolist()


def _suppressed(cnt, k):
    return int(cnt[cnt < k].sum())


def _maybe_table_below(draw, ch, high):
    """None (group the tuples) or, drawn, the cached table (rep, cnt, codes, node) of a node
    below ``high`` to roll up from."""
    if not draw.draw(st.booleans()):
        return None
    low = tuple(draw.draw(st.integers(0, int(h))) for h in high)
    rep, cnt, _, kc = ch._run_kernels(low)
    return rep, cnt, kc, low


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.data())
def test_bucketed_grouping_equals_the_plain_one(data, draw):
    """group_buckets over the rows of a histogram or over a cached table below the node, any
    number of buckets and threads, cap and suppression stop: a complete result is group_node's
    table (same order, representatives, counts and codes); it stops exactly when the node has
    more than cap classes or more than stop_sup rows in classes smaller than k."""
    repeat = draw.draw(st.lists(st.integers(1, 3), min_size=data.n, max_size=data.n))
    _, hist, _ = as_histogram(data, repeat)
    space = build_space(hist)
    ch = NodeChecker(space, 2)
    nodes = all_nodes(space)
    high = draw.draw(st.sampled_from(nodes))
    k = draw.draw(st.integers(1, 4))
    cap = draw.draw(st.sampled_from([0, 1, 3, space.t, _NO_CAP]))
    stop_sup = draw.draw(st.sampled_from([0, 1, 4, _NO_CAP]))
    pbits = draw.draw(st.integers(1, 5))
    nthr = draw.draw(st.integers(1, 4))
    tab = _maybe_table_below(draw, ch, high)
    want_rep, want_cnt, _, want_kc = ch._run_kernels(high, tab)
    *args, ks, live = ch._kernel_args(high, tab)
    c = space.t if tab is None else tab[0].shape[0]
    keys, skey = np.empty(c, np.int64), np.empty(c, np.int64)
    sidx = np.empty(c, np.int32)
    stopped, rep, cnt, kc = K.group_buckets(*args, ks, k, stop_sup, cap, pbits, keys, skey, sidx,
                                            nthr)
    assert stopped == (want_rep.shape[0] > cap or _suppressed(want_cnt, k) > stop_sup)
    if not stopped:
        assert want_rep.shape[0] <= cap
        assert rep.tolist() == want_rep.tolist() and cnt.tolist() == want_cnt.tolist()
        full = ch._full_codes(high, tab, rep, kc, live)
        assert full.tolist() == want_kc.tolist()
        assert full.dtype == want_kc.dtype


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@pytest.fixture
def buckets_everywhere(monkeypatch):
    """Every stopping grouping of more than one input runs in buckets."""
    monkeypatch.setattr(checker, "BUCKET_MIN", 2)
    monkeypatch.setattr(checker, "BUCKET_ROWS", 2)
    monkeypatch.setattr(checker, "DENSE_STOP_MAX", 0)
    monkeypatch.setattr(checker, "KEEP_TABLE_MAX", 0)
    calls = []
    real = K.group_buckets
    monkeypatch.setattr(K, "group_buckets", lambda *a: calls.append(a[-7]) or real(*a))
    return calls


def _assert_stopping_checker_counts_in_full(data, k, ms, loss, rnd, keep):
    """A stopping checker with a small table cache, over every node in a random order (keeping
    a node's table when ``keep()`` says so), gives each node the feasibility, loss and suppressed
    count of a checker that counts the node in full."""
    k = min(k, data.n)
    space = build_space(data)
    nodes = all_nodes(space)
    rnd.shuffle(nodes)
    fast = NodeChecker(space, k, ms, loss, stop_early=True, cache_entries=4, cache_rows=data.n)
    for node in nodes:
        plain = NodeChecker(space, k, ms, loss).check(node)
        got = fast.check(node, keep_table=keep())
        assert got.feasible == plain.feasible, node
        assert got.loss == plain.loss or (math.isinf(got.loss) and math.isinf(plain.loss))
        if got.n_suppressed >= 0:
            assert got.n_suppressed == plain.n_suppressed
        else:
            assert not plain.feasible


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(1, 5), st.sampled_from([0.0, 0.1, 0.3]),
       st.sampled_from(["log", "gcp"]), st.randoms(use_true_random=False))
def test_bucketed_checker_keeps_every_node_result(data, k, ms, loss, rnd):
    """A stopping checker that groups in buckets, nodes in any order, with and without keeping
    tables: every node's feasibility and loss are those of a full count."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(checker, "BUCKET_MIN", 2)
        mp.setattr(checker, "BUCKET_ROWS", 2)
        mp.setattr(checker, "DENSE_STOP_MAX", 0)
        mp.setattr(checker, "KEEP_TABLE_MAX", 0)
        _assert_stopping_checker_counts_in_full(data, k, ms, loss, rnd, lambda: rnd.random() < 0.5)


def _assert_stopping_search_finds_the_full_counts_node(data, loss):
    """``optimal`` with a stopping checker publishes the node, with its loss, that it finds with
    a checker counting every node in full, for three (k, suppression) pairs."""
    space = build_space(data)
    for k, ms in ((5, 0.0), (10, 0.02), (25, 0.1)):
        a = NodeChecker(space, k, ms, loss, stop_early=True)
        b = NodeChecker(space, k, ms, loss)
        got, want = optimal.search(a)[0], optimal.search(b)[0]
        assert got == want
        assert a.check(got).loss == b.check(want).loss


@pytest.mark.parametrize("loss", ["log", "gcp"])
def test_bucketed_search_publishes_the_plain_searchs_node(buckets_everywhere, loss):
    """optimal with every grouping in buckets (stopping at the suppression limit) publishes the
    node and loss of a checker that counts every node in full; the buckets were used and some
    grouping stopped on the suppression limit."""
    from test_lattice import two_numeric_one_tree_data
    _assert_stopping_search_finds_the_full_counts_node(two_numeric_one_tree_data(7), loss)
    assert buckets_everywhere and min(buckets_everywhere) < _NO_CAP  # a limit stop was armed


def test_counts_of_an_all_distinct_histogram_are_not_read():
    """A histogram with one row per tuple (n == t) is grouped as plain rows: no counts."""
    from test_lattice import make_data
    data = make_data([[float(i) for i in range(50)]], [])
    _, hist, _ = as_histogram(data, [1] * 50)
    assert hist.counts is not None
    ch = NodeChecker(build_space(hist), 2)
    assert ch._norep[1].shape[0] == 0
    _, hist2, _ = as_histogram(data, [2] + [1] * 49)
    assert NodeChecker(build_space(hist2), 2)._norep[1].shape[0] == 50


def _reference_codes(data, space):
    """codes[c, t] = the level code of the leaf of the tuple at position t (the data's tuple
    ``space.perm[t]`` when build_space sorted them), from the leaves themselves."""
    from kanon_duckdb.algorithms.lattice.levels import numeric_tree
    leaves = [numeric_tree(data, j)[1] for j in range(data.dn)]
    leaves += [data.cat[:, j] for j in range(data.cat.shape[1])]
    out = np.zeros(space.codes.shape, dtype=np.int64)
    for j, leaf in enumerate(leaves):
        for lv in range(int(space.heights[j]) + 1):
            c = int(space.cstart[j] + lv)
            out[c] = space.leaf_codes[c][leaf]
    return out if space.perm is None else out[:, space.perm]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_build_space_writes_the_codes_and_their_planes(data):
    space = build_space(data)
    assert space.codes.tolist() == _reference_codes(data, space).tolist()
    assert space.planes.tolist() == code_planes(space.codes, space.mcol)[0].tolist()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables())
def test_build_space_planes_on_threads_equal_the_serial_ones(data):
    """Written on numba's threads (any table size once PARALLEL_ROWS is lowered), the byte
    planes are the serial ones and the reference's."""
    from kanon_duckdb.algorithms.lattice import levels
    serial = build_space(data)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(levels, "PARALLEL_ROWS", 0)
        calls = []
        real = K.level_codes_parallel
        mp.setattr(K, "level_codes_parallel", lambda *a: calls.append(1) or real(*a))
        threaded = build_space(data)
    assert calls or serial.d == 0
    assert threaded.planes.tolist() == serial.planes.tolist()
    assert threaded.planes.tolist() == code_planes(serial.codes, serial.mcol)[0].tolist()


def test_build_space_planes_of_wide_levels():
    """Levels of more than 256 and 65,536 codes take two and three bytes per row."""
    from test_lattice import make_data
    rng = np.random.default_rng(3)
    n = 70_000
    data = make_data([list(rng.permutation(n).astype(float)),
                      list(rng.integers(0, 1000, n).astype(float))], [])
    space = build_space(data)
    assert space.codes.dtype == np.int32 and int(space.mcol.max()) == n
    assert sorted(set(space.pbytes.tolist())) == [0, 1, 2, 3]
    assert space.codes.tolist() == _reference_codes(data, space).tolist()
    assert space.planes.tolist() == code_planes(space.codes, space.mcol)[0].tolist()


@settings(max_examples=80, deadline=None)
@given(st.lists(st.one_of(st.integers(-50, 50).map(float), st.sampled_from([0.0, -0.0, 1.5, 1e300]),
                          st.floats(allow_nan=True, allow_infinity=True)), min_size=0,
                max_size=200),
       st.data(), st.sampled_from([1, 7, 101, 1 << 24]))
def test_distinct_integral_equals_distinct_sorted(values, draw, max_range):
    """Counting the values of an integer column gives distinct_sorted's values (sign of zero
    included) and indexes; any other column (a fraction, NaN, infinity, a span past
    max_range, no value) is declined."""
    col = np.array(values, dtype=np.float64)
    null = np.array(draw.draw(st.lists(st.booleans(), min_size=col.size, max_size=col.size)),
                    dtype=bool)
    wide = np.zeros((col.size, 2))
    wide[:, 1] = col
    view = wide[:, 1]
    ok, vals, pos = K.distinct_integral(view, null, max_range)
    kept = col[~null]
    with np.errstate(over="ignore"):  # a span of two huge floats is inf: not < max_range
        integral = kept.size > 0 and bool(np.all(np.isfinite(kept))) and bool(
            np.all(kept == np.floor(kept))) and kept.max() - kept.min() < max_range
    assert ok == integral
    if ok:
        want_vals, want_pos = K.distinct_sorted(view, view.view(np.int64), null)
        assert vals.tolist() == want_vals.tolist()
        assert np.signbit(vals).tolist() == np.signbit(want_vals).tolist()
        assert pos.tolist() == want_pos.tolist()


def test_hash_tables_are_sized_on_first_need_and_grow():
    """The checker's open-addressing tables start empty and grow to 2 keys + 2 slots (a power
    of two, all -1): a stopping checker never allocates them for all t tuples up front."""
    from test_lattice import make_data
    ch = NodeChecker(build_space(make_data([[float(i // 2) for i in range(300)]], [])), 2,
                     stop_early=True)
    assert ch._hkey.shape[0] == 0
    hkey, hval = ch._tables(5)
    assert hkey.shape[0] == 16 and hval.shape[0] == 16 and hval.dtype == np.int32
    assert ch._tables(3)[0] is hkey  # big enough: kept
    hkey, _ = ch._tables(100)
    assert hkey.shape[0] == 256 and (hkey == -1).all()
    res = ch.check((0,))
    assert res.feasible and res.n_classes == 150 and (ch._hkey == -1).all()


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 4), st.integers(1, 6), st.sampled_from([2, 5]), st.data())
def test_threaded_buckets_equal_one_thread(nthr, pbits, k, draw):
    """On tens of thousands of rows (every thread has many buckets, several stop), each thread
    count gives one thread's answer: the same stop decision and, when complete, the same
    table; the limit between stop and no stop is exact (limit = suppressed rows does not stop,
    one row less does)."""
    from test_lattice import make_data
    seed = draw.draw(st.integers(0, 1000))
    rng = np.random.default_rng(seed)
    n = 20_000
    data = make_data([list(rng.integers(0, 3000, n).astype(float)),
                      list(rng.integers(0, 40, n).astype(float))], [])
    space = build_space(data)
    ch = NodeChecker(space, k)
    node = tuple(draw.draw(st.integers(0, int(h))) for h in space.heights)
    want_rep, want_cnt, _, _ = ch._run_kernels(node)
    sup = _suppressed(want_cnt, k)
    *args, ks, _ = ch._kernel_args(node, None)

    def run(threads, stop_sup):
        keys, skey = np.empty(n, np.int64), np.empty(n, np.int64)
        return K.group_buckets(*args, ks, k, stop_sup, _NO_CAP, pbits, keys, skey,
                               np.empty(n, np.int32), threads)

    for stop_sup in (sup, sup - 1, _NO_CAP):
        one, many = run(1, stop_sup), run(nthr, stop_sup)
        assert one[0] == many[0] == (sup > stop_sup)
        for a, b in zip(one[1:], many[1:]):
            assert a.tolist() == b.tolist()
    assert run(nthr, _NO_CAP)[2].tolist() == want_cnt.tolist()


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.data())
def test_dense_grouping_equals_the_plain_one(data, draw):
    """group_dense over the rows of a histogram or over a cached table below the node, any
    number of threads and any cap: a complete result is group_node's table (same order,
    representatives, counts and codes of every QI); it stops exactly when the node has more
    than cap classes; the counting slots are all 0 again either way."""
    repeat = draw.draw(st.lists(st.integers(1, 3), min_size=data.n, max_size=data.n))
    _, hist, _ = as_histogram(data, repeat)
    space = build_space(hist)
    ch = NodeChecker(space, 2)
    high = draw.draw(st.sampled_from(all_nodes(space)))
    cap = draw.draw(st.sampled_from([0, 1, 3, space.t, _NO_CAP]))
    nthr = draw.draw(st.integers(1, 4))
    tab = _maybe_table_below(draw, ch, high)
    want_rep, want_cnt, _, want_kc = ch._run_kernels(high, tab)
    *args, ks, _ = ch._kernel_args(high, tab)
    c = space.t if tab is None else tab[0].shape[0]
    slots = np.zeros((nthr, ks + draw.draw(st.integers(0, 3))), dtype=np.int32)
    lists = min(-(-c // nthr), cap + 1) + draw.draw(st.integers(0, 3))
    scratch = np.empty((nthr, 2, lists), dtype=np.int64)
    stopped, rep, cnt, kc = K.group_dense(*args, ks, cap, slots, scratch,
                                          space.keyspace(high)[0],
                                          np.zeros(0, space.code_dtype))
    assert not slots.any()
    assert stopped == (want_rep.shape[0] > cap)
    if not stopped:
        assert rep.tolist() == want_rep.tolist() and cnt.tolist() == want_cnt.tolist()
        assert kc.dtype == want_kc.dtype
        assert kc.tolist() == want_kc.tolist()


@settings(max_examples=200, deadline=None)
@given(st.lists(st.one_of(st.just(1), st.integers(1, 3000)), min_size=1, max_size=6), st.data())
def test_key_digits_are_exact(radix, draw):
    """_key_digits returns each mixed-radix digit of keys over the whole key space (the float
    step is corrected: exact at every digit boundary)."""
    strides = np.cumprod([1] + radix[:-1]).astype(np.int64)
    ks = int(strides[-1]) * radix[-1]
    if ks >= 1 << 52:
        return
    picks = draw.draw(st.lists(st.integers(0, ks - 1), max_size=30))
    edges = [0, ks - 1] + [int(s) * m - 1 for s, m in zip(strides, radix)] + [int(s) for s in strides]
    keys = [x for x in picks + edges if 0 <= x < ks]
    got = np.zeros((len(radix), len(keys)), dtype=np.int64)
    K._key_digits(np.array(keys, dtype=np.int64), strides, ks, got)
    want = [[x // int(s) % m for x in keys] for s, m in zip(strides, radix)]
    assert got.tolist() == want


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(1, 5), st.sampled_from([0.0, 0.1, 0.3]),
       st.sampled_from(["log", "gcp"]), st.randoms(use_true_random=False))
def test_dense_kept_tables_keep_every_node_result(data, k, ms, loss, rnd):
    """A stopping checker that counts every kept grouping directly (group_dense), nodes in any
    order, kept or not: every node's feasibility and loss are those of a full count, and the
    tables it caches serve later roll-ups."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(checker, "BUCKET_MIN", 2)
        calls = []
        real = K.group_dense
        mp.setattr(K, "group_dense", lambda *a: calls.append(1) or real(*a))
        _assert_stopping_checker_counts_in_full(data, k, ms, loss, rnd, lambda: True)
        assert calls or data.n < 2


@pytest.mark.parametrize("loss", ["log", "gcp"])
def test_dense_search_publishes_the_plain_searchs_node(monkeypatch, loss):
    """optimal with every kept grouping counted directly publishes the node and loss of a
    checker that counts every node in full."""
    from test_lattice import two_numeric_one_tree_data
    monkeypatch.setattr(checker, "BUCKET_MIN", 2)
    calls = []
    real = K.group_dense
    monkeypatch.setattr(K, "group_dense", lambda *a: calls.append(1) or real(*a))
    _assert_stopping_search_finds_the_full_counts_node(two_numeric_one_tree_data(7), loss)
    assert calls


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(1, 5), st.sampled_from([0.0, 0.1, 0.3]),
       st.sampled_from(["log", "gcp"]), st.randoms(use_true_random=False))
def test_dense_rollups_keep_every_node_result(data, k, ms, loss, rnd):
    """A stopping checker whose roll-ups from cached tables count their keys directly
    (``group_dense``, no stop on the suppression: complete tables, infeasible nodes included),
    nodes in any order: every node's feasibility, loss and suppressed rows are those of a full
    count."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(checker, "BUCKET_MIN", 2)
        mp.setattr(checker, "DENSE_STOP_MAX", 0)
        _assert_stopping_checker_counts_in_full(data, k, ms, loss, rnd, lambda: rnd.random() < 0.5)


@pytest.mark.parametrize("loss", ["log", "gcp"])
def test_dense_rollup_search_publishes_the_plain_searchs_node(monkeypatch, loss):
    """optimal with every roll-up counted directly publishes the node and loss of a checker that
    counts every node in full, and roll-ups did take group_dense."""
    from test_lattice import two_numeric_one_tree_data
    monkeypatch.setattr(checker, "BUCKET_MIN", 2)
    monkeypatch.setattr(checker, "DENSE_STOP_MAX", 0)
    rollups = []
    real = K.group_dense
    monkeypatch.setattr(K, "group_dense", lambda *a: rollups.append(a[7]) or real(*a))
    _assert_stopping_search_finds_the_full_counts_node(two_numeric_one_tree_data(7), loss)
    assert any(identity is False for identity in rollups)  # from a cached table, not the tuples
