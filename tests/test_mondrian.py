"""Mondrian kernel against from-scratch checks: k-anonymity, strictness (no final class has an
allowable cut left), the published values it reads off its class blocks equal the generic
scatter pass of ``generalize``, and a hand-computed partition."""
from dataclasses import replace

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings, strategies as st

import naive
from kanon_duckdb.algorithms.base import Partition
from kanon_duckdb.qidata import QIData
from kanon_duckdb.algorithms.mondrian import _kernels, _order_stats, partition_rows, run
from kanon_duckdb.generalize import generalize
from kanon_duckdb.taxonomy.tree import build_index


@st.composite
def cases(draw):
    _rng, data, k = naive.draw_qidata_k(draw, max_n=80)
    return data, k


def _median_cut_allowable(values, k):
    """Strict Mondrian's numeric test: '<= median' or '< median' leaves >= k rows on each side."""
    n = len(values)
    m = np.sort(values)[(n - 1) // 2]
    return any(k <= left <= n - k for left in (int((values <= m).sum()), int((values < m).sum())))


def _tree_cut_allowable(tree, leaves, k):
    """Some boundary between two children of the LCA leaves >= k rows on each side."""
    n = len(leaves)
    u = tree.lca(int(leaves.min()), int(leaves.max()))
    kids = [c for c in range(tree.n_nodes) if tree.parent[c] == u]
    return any(k <= int((leaves <= tree.leaf_hi[c]).sum()) <= n - k for c in kids)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_classes_are_k_anonymous_and_have_no_allowable_cut_left(case):
    data, k = case
    ec = partition_rows(data, k)
    assert ec.shape == (data.n,)
    sizes = np.bincount(ec)
    assert sizes.min() >= k and (sizes > 0).all()
    for c in range(sizes.size):
        rows = np.flatnonzero(ec == c)
        if rows.size < 2 * k:
            continue
        for j in range(data.dn):
            assert not _median_cut_allowable(data.num[rows, j], k)
        for j, tree in enumerate(data.trees):
            leaves = data.cat[rows, j]
            assert not _tree_cut_allowable(tree, leaves, k)
            assert not _median_cut_allowable(leaves.astype(np.float64), k)  # leaf-order fallback


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cases())
def test_published_values_equal_the_generic_class_statistics(case):
    data, k = case
    part = run(data, k, 0, {})
    fast = generalize(data, part)
    generic = generalize(data, Partition(ec=part.ec))
    assert np.array_equal(fast.ec, generic.ec)
    assert np.array_equal(fast.size, generic.size)
    assert np.array_equal(fast.lo, generic.lo, equal_nan=True)
    assert np.array_equal(fast.hi, generic.hi, equal_nan=True)
    assert np.array_equal(fast.nodes, generic.nodes)


def test_hand_computed_partition():
    # ages 1..8, k=2: median cuts halve the range until every class holds two rows
    # zip tree: * -> {A, B}, A -> {a1, a2}, B -> {b1, b2}; constant here, so never cut
    tree = build_index("zip", [("A", "*"), ("B", "*"), ("a1", "A"), ("a2", "A"), ("b1", "B"),
                               ("b2", "B")])
    n = 8
    num = np.arange(1, n + 1, dtype=np.float64).reshape(n, 1)
    cat = np.full((n, 1), tree.leaf_of_label["a1"], dtype=np.int32)
    data = QIData(n=n, num=num, num_null=np.zeros((n, 1), bool), num_lo=np.array([1.0]),
                  num_hi=np.array([8.0]), num_is_int=np.ones(1, bool), cat=cat, trees=[tree],
                  num_names=["age"], cat_names=["zip"])
    g = generalize(data, run(data, 2, 0, {}))
    ranges = sorted((g.lo[c, 0], g.hi[c, 0]) for c in range(g.n_classes))
    assert ranges == [(1, 2), (3, 4), (5, 6), (7, 8)]
    assert {tree.labels[u] for u in g.nodes[:, 0]} == {"a1"}
    # with k=3 the 8 rows split once ('<= 4'), then 4 rows cannot be cut into two sides of 3
    g = generalize(data, run(data, 3, 0, {}))
    assert sorted((g.lo[c, 0], g.hi[c, 0]) for c in range(g.n_classes)) == [(1, 4), (5, 8)]


def _naive_median_stats(x):
    x = np.sort(x)
    m = x[(len(x) - 1) // 2]
    lower, upper = x[x < m], x[x > m]
    return (m, lower.max() if lower.size else -np.inf, upper.min() if upper.size else np.inf,
            lower.size, upper.size)


@pytest.mark.parametrize("n", [1, 5, 1000, 16384, 3 * 16384 + 7])
@pytest.mark.parametrize("shape", ["uniform", "few_values", "sorted", "reversed", "periodic",
                                   "one_value", "two_values_skewed", "wide", "wide_clustered",
                                   "outliers", "negative"])
def test_median_statistics_equal_a_full_sort(n, shape):
    """The bucket count (one code per bucket, or wide buckets bracketing the median) agrees
    with sorting, on spans far wider than the rows, heavy duplicates, clusters and outliers."""
    rng = np.random.default_rng(n)
    x = {"uniform": rng.integers(0, 4 * n + 1, n),
         "few_values": rng.integers(0, 5, n),
         "sorted": np.sort(rng.integers(0, 10 * n + 1, n)),
         "reversed": np.sort(rng.integers(0, 10 * n + 1, n))[::-1],
         "periodic": np.arange(n) % 4096,
         "one_value": np.full(n, 3),
         "two_values_skewed": (rng.random(n) < 0.52).astype(np.int64),
         "wide": rng.integers(0, 2**31 - 1, n),
         # most rows in one wide bucket, a few far away on each side
         "wide_clustered": np.where(rng.random(n) < 0.9, rng.integers(10**6, 10**6 + 50, n),
                                    rng.integers(0, 2**31 - 1, n)),
         "outliers": np.where(np.arange(n) % 97 == 0, 2**31 - 1, rng.integers(0, 3, n)),
         "negative": rng.integers(-2**31, 2**31 - 1, n)}[shape].astype(np.int32)
    W = np.ascontiguousarray(np.column_stack([rng.integers(0, 9, n).astype(np.int32), x]))
    cnt = np.empty(_order_stats.count_scratch_size(n), np.int32)
    for s, e in ((0, n), (n // 4, n // 4 + max(1, n // 2))):
        seg = x[s:e]
        got = _order_stats.median_stats(W, s, e, 1, np.empty(n), seg.min(), seg.max(), cnt)
        assert tuple(float(v) for v in got) == tuple(float(v) for v in _naive_median_stats(seg))
    # wider bounds than the segment's extremes (a sample ranked with its segment's bounds)
    got = _order_stats.median_stats(W, 0, n, 1, np.empty(n), -2**31, 2**31 - 1, cnt)
    assert tuple(float(v) for v in got) == tuple(float(v) for v in _naive_median_stats(x))


@st.composite
def flat_segments(draw):
    n_leaves = draw(st.integers(2, 60))
    tree = build_index("f", [(f"v{i}", "*") for i in range(n_leaves)])
    n = draw(st.integers(2, 80))
    used = draw(st.lists(st.integers(0, n_leaves - 1), min_size=1, max_size=n_leaves, unique=True))
    rows = draw(st.lists(st.sampled_from(used), min_size=n, max_size=n))
    assume(len(set(rows)) >= 2)  # the kernel cuts only dimensions of positive width
    k = draw(st.integers(1, max(1, n // 2)))
    return tree, np.array(rows, dtype=np.float64), k


@settings(max_examples=300, deadline=None)
@given(flat_segments())
def test_leaf_children_cut_equals_the_general_tree_cut(case):
    """The O(rows) path for an LCA whose children are leaves picks the same side sets and cost
    as the general boundary walk (forced here by claiming every subtree is deeper)."""
    from kanon_duckdb.qidata import pack_trees
    tree, values, k = case
    trees = pack_trees([tree])
    W = values.astype(np.int32).reshape(-1, 1)  # the kernel's codes: leaf ordinals
    n = W.shape[0]
    lo, hi = np.array([values.min()]), np.array([values.max()])
    L = tree.leaf_count + 1
    scratch = lambda: _kernels.Scratch(np.empty((4, 1)), np.empty(1, np.bool_),
                                       np.empty((1, 1), np.int32), np.empty(n),
                                       np.empty(_order_stats.count_scratch_size(n), np.int32),
                                       np.empty(L), np.empty((5, L), np.int64),
                                       np.empty((2, 1)), np.empty((4, 1)))
    deep = np.full_like(trees.sub_height, 2)
    results = []
    for heights in (trees.sub_height, deep):
        cut, cost = _kernels._tree_cut(W, 0, n, 0, k, 0, trees._replace(sub_height=heights),
                                       lo, hi, scratch())
        left = int((values <= cut).sum()) if cut == cut else -1
        results.append((left, cost))
    assert results[0] == results[1]


@pytest.mark.parametrize("column", ["short_int", "wide_int", "float", "signed_zero"])
def test_kernel_codes_keep_order_and_give_back_each_coordinate(column):
    """code_dimensions: W's int32 codes order the rows as their coordinates do (ties stay ties)
    and vals[vals_off[j] + code] is the row's coordinate exactly, on the offset path (short
    integer span) and the rank path (floats, a 1e12-wide integer column, -0.0 next to 0.0)."""
    from kanon_duckdb.algorithms.mondrian import code_dimensions
    rng = np.random.default_rng(3)
    n = 500
    x = {"short_int": rng.integers(-40, 60, n).astype(np.float64),
         "wide_int": rng.integers(0, 7, n) * 1e12 - 5.0,
         "float": rng.normal(size=n).round(3),
         "signed_zero": rng.choice([-0.0, 0.0, -1.5, 2.25], n)}[column]
    tree = build_index("c", [("a", "*"), ("b", "*")])
    cat = rng.integers(0, 2, (n, 1)).astype(np.int32)
    data = QIData(n=n, num=x.reshape(n, 1), num_null=np.zeros((n, 1), bool),
                  num_lo=np.array([x.min()]), num_hi=np.array([x.max()]),
                  num_is_int=np.array([column in ("short_int", "wide_int")]), cat=cat,
                  trees=[tree], num_names=["x"], cat_names=["c"])
    W, vals, off = code_dimensions(data)
    assert W.dtype == np.int32 and W.shape == (n, 2)
    assert np.array_equal(vals[off[0] + W[:, 0]], x)
    assert np.array_equal(vals[off[1] + W[:, 1]], cat[:, 0])
    order = np.argsort(x, kind="stable")
    assert np.all(np.diff(W[order, 0]) >= 0)  # order kept
    assert np.array_equal(np.diff(x[order]) == 0, np.diff(W[order, 0]) == 0)  # ties kept


def _reference_codes(data):
    """code_dimensions' contract in numpy: every column's extremes from the data themselves
    (a NULL's coordinate included), offset codes for an integral column spanning fewer than
    SHORT_SPAN values, rank codes otherwise, leaf ordinals for the categorical QIs."""
    from kanon_duckdb.algorithms.mondrian import SHORT_SPAN
    cols = [data.num[:, j] for j in range(data.dn)] + [data.cat[:, j].astype(np.float64)
                                                       for j in range(data.dc)]
    W = np.empty((data.n, len(cols)), dtype=np.int32)
    vals = []
    for j, x in enumerate(cols):
        lo, hi = x.min(), x.max()
        if j >= data.dn:
            W[:, j], v = x.astype(np.int32), np.arange(int(hi) + 1, dtype=np.float64)
        elif data.num_is_int[j] and hi - lo < SHORT_SPAN:
            W[:, j], v = (x - lo).astype(np.int32), lo + np.arange(int(hi - lo) + 1, dtype=np.float64)
        else:
            v, W[:, j] = np.unique(x + 0.0, return_inverse=True)
        vals.append(v)
    return W, np.concatenate(vals), np.cumsum([0] + [v.size for v in vals])


@pytest.mark.parametrize("case", ["plain", "nulls", "wider_ranges", "all_null", "wide_span"])
def test_kernel_codes_equal_the_codes_of_the_data_s_own_extremes(case):
    """code_dimensions takes the extremes the encoding recorded and checks them in its one pass:
    whatever those say (a NULL's coordinate below them, ranges widened by with_ranges, a column
    of NULLs only), W, vals and vals_off are those of the data's own extremes."""
    from kanon_duckdb.anonymize import with_ranges
    from kanon_duckdb.algorithms.mondrian import code_dimensions
    rng = np.random.default_rng(11)
    data = naive.random_qidata(rng, 3000, 3, 2, null_frac=0.1 if case == "nulls" else 0.0,
                               max_value=40)
    if case == "wider_ranges":
        data = with_ranges(data, [(-5.0, 90.0)] * 3)
    elif case == "all_null":
        num_null = data.num_null.copy()
        num_null[:, 1] = True
        num = data.num.copy()
        num[:, 1] = -1.0
        data = replace(data, num=num, num_null=num_null)
    elif case == "wide_span":  # an integral column coded by rank
        num = data.num.copy()
        num[:, 2] *= 1e9
        data = replace(data, num=num, num_hi=np.array([*data.num_hi[:2], num[:, 2].max()]))
    W, vals, off = code_dimensions(data)
    W_ref, vals_ref, off_ref = _reference_codes(data)
    assert np.array_equal(W, W_ref)
    assert np.array_equal(vals, vals_ref)
    assert np.array_equal(off, off_ref)


def _reference_split(W, perm, j, s, e, cut):
    """The documented swap sequence, in plain Python."""
    W, perm = W.copy(), perm.copy()
    i, jj = s, e - 1
    while i <= jj:
        if W[i, j] <= cut:
            i += 1
        else:
            W[[i, jj]] = W[[jj, i]]
            perm[[i, jj]] = perm[[jj, i]]
            jj -= 1
    return W, perm, i


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 9), st.integers(1, 90), st.integers(0, 2**32 - 1))
def test_split_keeps_its_row_order_and_gathers_each_sides_extremes(d, n, seed):
    """_split_in_place moves rows exactly as the documented swap sequence (the tie ranking
    samples rows by position, so the order is part of the result) and its per-side extremes
    (gathered as each row is placed, into row r of the kids' arrays) equal numpy's."""
    rng = np.random.default_rng(seed)
    W = rng.integers(-2**31, 2**31 - 1, (n + 7, d), dtype=np.int64).astype(np.int32)
    W[:, 0] = rng.integers(0, 6, n + 7)
    perm = np.arange(n + 7, dtype=np.int64)
    s, e, cut = 3, 3 + n, float(rng.integers(0, 6))
    want_W, want_perm, want_i = _reference_split(W, perm, 0, s, e, cut)
    kid_lo = np.empty((3, 2, d), np.int32)  # the split writes row r = 1 only
    kid_hi = np.empty((3, 2, d), np.int32)
    kid_lo[[0, 2]] = kid_hi[[0, 2]] = 7
    got_i = _kernels._split_in_place(W, perm, 0, np.int64(s), np.int64(e), cut, kid_lo, kid_hi,
                                     np.int64(1))
    assert got_i == want_i
    assert np.array_equal(W, want_W) and np.array_equal(perm, want_perm)
    for side, (a, b) in enumerate(((s, got_i), (got_i, e))):
        if b > a:
            assert np.array_equal(kid_lo[1, side], W[a:b].min(axis=0))
            assert np.array_equal(kid_hi[1, side], W[a:b].max(axis=0))
    assert (kid_lo[[0, 2]] == 7).all() and (kid_hi[[0, 2]] == 7).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_threads_share_a_round_without_changing_the_partition(monkeypatch, seed):
    """Every round's segments cut into 1, 2 or 3 threads' shares (threshold lowered so small
    tables take the threaded path, and rounds kept breadth first) give the same classes,
    numbered alike, and published values."""
    rng = np.random.default_rng(seed)
    data = naive.random_qidata(rng, 3000, 2, 2, max_leaves=12)
    monkeypatch.setattr(_kernels, "PARALLEL_MIN_ROWS", 0)
    monkeypatch.setattr(_kernels, "DEPTH_FIRST_BYTES", 0)
    shares = []
    real_shares = _kernels._shares
    monkeypatch.setattr(_kernels, "_shares", lambda *a: shares.append(real_shares(*a)) or shares[-1])
    parts = []
    for n_threads in (1, 2, 3):
        monkeypatch.setattr(_kernels, "threads", lambda n_threads=n_threads: n_threads)
        parts.append(run(data, 5, 0, {}))
    assert max(b.size - 1 for b in shares) == 3  # some round did run in three threads
    for p in parts[1:]:
        assert np.array_equal(p.ec, parts[0].ec)
        assert np.array_equal(p.num_lo, parts[0].num_lo, equal_nan=True)
        assert np.array_equal(p.num_hi, parts[0].num_hi, equal_nan=True)
        assert np.array_equal(p.cat_nodes, parts[0].cat_nodes)
    assert np.bincount(parts[0].ec).min() >= 5


def _with_l_diversity(data, rng, l):
    """``data`` whose rows carry a sensitive column of 4 values, under distinct l-diversity."""
    from dataclasses import replace

    import pyarrow as pa

    from kanon_duckdb.privacy import EXTRA_KEY
    from kanon_duckdb.privacy.models import DistinctLDiversity, KAnonymity
    from kanon_duckdb.privacy.spec import build_spec
    values = pa.array([f"s{v}" for v in rng.integers(0, 4, data.n)])
    spec = build_spec(None, (KAnonymity(1), DistinctLDiversity(l)), ["s"], "equal", {"s": values},
                      data.n)
    return replace(data, extra={EXTRA_KEY: spec})


@pytest.mark.parametrize("seed", range(3))
def test_depth_first_subtrees_give_the_breadth_first_partition(monkeypatch, seed):
    """Segments finished depth first inside their round (below DEPTH_FIRST_BYTES) give the
    classes of breadth-first rounds over every segment (DEPTH_FIRST_BYTES = 0), numbered
    alike (by depth, then first row), with the same published values and the same final row
    order: whatever the threshold, the thread count, and with a privacy model's checks."""
    rng = np.random.default_rng(seed)
    data = naive.random_qidata(rng, 4000, 2, 2, max_leaves=12, null_frac=0.05)
    if seed == 2:
        data = _with_l_diversity(data, rng, 2)
    monkeypatch.setattr(_kernels, "PARALLEL_MIN_ROWS", 0)
    perms = []
    real_final = _kernels._final_classes
    monkeypatch.setattr(_kernels, "_final_classes",
                        lambda perm, *a: perms.append(perm.copy()) or real_final(perm, *a))
    parts = []
    for n_threads in (1, 2):
        monkeypatch.setattr(_kernels, "threads", lambda n_threads=n_threads: n_threads)
        for df_bytes in (0, 40 * 50, 40 * 700, 1 << 19):  # none, small, middle, all of it
            monkeypatch.setattr(_kernels, "DEPTH_FIRST_BYTES", df_bytes)
            parts.append(run(data, 4, 0, {}))
    assert np.bincount(parts[0].ec).size > 100  # a deep tree
    for p, perm in zip(parts[1:], perms[1:]):
        assert np.array_equal(perm, perms[0])
        assert np.array_equal(p.ec, parts[0].ec)
        assert np.array_equal(p.num_lo, parts[0].num_lo, equal_nan=True)
        assert np.array_equal(p.num_hi, parts[0].num_hi, equal_nan=True)
        assert np.array_equal(p.cat_nodes, parts[0].cat_nodes)
    # breadth-first numbering: classes final in an earlier round come first
    sizes = np.bincount(parts[0].ec)
    assert sizes.min() >= 4


def test_final_classes_are_numbered_by_depth_then_first_row():
    """Slots hold classes in first-row order; the numbering sorts them by depth, then first
    row, and every row of a class gets its number through perm."""
    k = 2
    perm = np.array([5, 4, 3, 2, 1, 0, 7, 6], dtype=np.int64)
    fin = np.full((3, 8 // k + 1), -1, dtype=np.int64)
    for s, e, dep in ((0, 2, 2), (2, 4, 1), (4, 8, 2)):  # slot s // k
        fin[:, s // k] = (s, e, dep)
    fin_lo = np.arange(5 * 2, dtype=np.int32).reshape(5, 2)
    fin_hi = fin_lo + 100
    ec, lo, hi = _kernels._final_classes(perm, fin, fin_lo, fin_hi)
    # depth 1: the class at rows 2:4 -> 0; depth 2: rows 0:2 -> 1, rows 4:8 -> 2
    want = np.empty(8, dtype=np.int64)
    want[perm[0:2]] = 1
    want[perm[2:4]] = 0
    want[perm[4:8]] = 2
    assert ec.tolist() == want.tolist()
    assert lo.tolist() == [[2, 3], [0, 1], [4, 5]]
    assert hi.tolist() == [[102, 103], [100, 101], [104, 105]]


def test_shares_cover_the_round_in_order_with_about_equal_rows():
    seg_s = np.array([0, 10, 12, 40, 41, 100], dtype=np.int64)
    seg_e = np.array([10, 12, 40, 41, 100, 200], dtype=np.int64)
    old = _kernels.PARALLEL_MIN_ROWS
    try:
        _kernels.PARALLEL_MIN_ROWS = 0
        assert _kernels._shares(seg_s, seg_e, 2).tolist() == [0, 5, 6]  # rows 100 / 100
        assert _kernels._shares(seg_s, seg_e, 3).tolist() == [0, 5, 6]  # no third share
        tens = np.arange(0, 60, 10, dtype=np.int64)
        assert _kernels._shares(tens, tens + 10, 3).tolist() == [0, 2, 4, 6]
        assert _kernels._shares(seg_s, seg_e, 1).tolist() == [0, 6]
        assert _kernels._shares(seg_s[:1], seg_e[:1], 4).tolist() == [0, 1]
    finally:
        _kernels.PARALLEL_MIN_ROWS = old
    assert _kernels._shares(seg_s, seg_e, 2).tolist() == [0, 6]  # 200 rows: one thread


def test_no_mondrian_kernel_is_a_parallel_numba_kernel():
    """The default path's compile budget (issue 14): a prange kernel compiles its whole call
    tree once more for its gufunc (about 4 s of a cold first run); threads share rounds instead."""
    from numba.core.registry import CPUDispatcher
    kernels = [f for m in (_kernels, _order_stats) for f in vars(m).values()
               if isinstance(f, CPUDispatcher)]
    assert len(kernels) > 10
    assert not [f for f in kernels if f.targetoptions.get("parallel")]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_median_cut_cost_is_the_coordinate_spans_of_its_two_sides(seed):
    """_median_cut reads coordinates as vals[vals_off[j] + code]: its cost equals the
    row-weighted spans of the two sides in coordinates (uneven ones, so a wrong offset or code
    shows), computed naively from the rows, and the cut leaves k rows on each side."""
    rng = np.random.default_rng(seed)
    n, k, d = 200, 7, 3
    sizes = [30, 50, 20]
    off = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    vals = np.concatenate([np.sort(rng.random(m) * 100) for m in sizes])
    W = np.stack([rng.integers(0, m, n) for m in sizes], axis=1).astype(np.int32)
    s, e = 20, 180
    seg_lo, seg_hi = W[s:e].min(axis=0).astype(np.float64), W[s:e].max(axis=0).astype(np.float64)
    for j in range(d):
        scale = 1.0 + j
        cut, cost = _kernels._median_cut(W, np.int64(s), np.int64(e), np.int64(j), np.int64(k),
                                         seg_lo, seg_hi, scale, np.empty(n),
                                         np.empty(_order_stats.count_scratch_size(n), np.int32),
                                         vals, off)
        col = W[s:e, j]
        left, right = col[col <= cut], col[col > cut]
        assert len(left) >= k and len(right) >= k
        c = vals[off[j]:off[j + 1]]
        naive_cost = (len(left) * (c[left.max()] - c[left.min()])
                      + len(right) * (c[right.max()] - c[right.min()])) / scale
        assert cost == pytest.approx(naive_cost, rel=1e-12)
