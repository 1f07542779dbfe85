"""Blocked tuple order of the lattice family (``lattice/blocks.py``, ``_block_kernels.py``).

The encoded tuples are sorted by a few QIs' leaves so that a node's classes lie in blocks, and a
grouping can stop once the blocks done show the node infeasible. Checked against plain counting
of the level codes: a stop only for a node that really has more than ``cap`` classes or more
suppressed rows than the limit (and, with every block in the stopping phase, always for such a
node); otherwise exactly the node's classes, the same for any number of threads; interval cuts
never split an ancestor's leaves (trees whose nodes cover interleaved leaves included); the
published node of ``optimal`` and its classes are those of the brute force.
"""
import dataclasses
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from test_lattice import TREES, brute_force_node, make_data, naive_eval, naive_qis, run
from test_lattice_rollup import all_nodes, naive_counts
from test_privacy_enforce import MODELS, make_table, run_and_check
from test_privacy_enforce import con as models_con  # noqa: F401 (the fixture)

from kanon_duckdb.algorithms.lattice import NodeChecker, blocks, build_space
from kanon_duckdb.algorithms.lattice import _block_kernels as BK


def interleaved_tree(draw, name):
    """A categorical tree whose internal nodes cover interleaved (not contiguous) leaf ordinals,
    unbalanced: leaves listed in a drawn order under drawn parents, some one level deeper."""
    n_leaves = draw(st.integers(2, 7))
    n_par = draw(st.integers(1, 3))
    edges, parents = [], set()
    for i in range(n_leaves):
        p = f"P{draw(st.integers(0, n_par - 1))}"
        if draw(st.booleans()):  # one more level under this leaf's parent
            edges.append((f"{name}{i}", f"{p}x"))
            parents.add((f"{p}x", p))
        else:
            edges.append((f"{name}{i}", p))
        parents.add((p, "*"))
    edges += sorted(parents) + [("*", None)]
    return edges


def _make_data(num_cols, cat_cols):
    """``make_data`` with each categorical column's tree given as its edges."""
    saved = dict(TREES)
    try:
        for j, (edges, _) in enumerate(cat_cols):
            TREES[f"_blocks{j}"] = edges
        return make_data(num_cols, [(f"_blocks{j}", vals) for j, (_, vals) in enumerate(cat_cols)])
    finally:
        TREES.clear()
        TREES.update(saved)


@st.composite
def block_tables(draw):
    """Tables of 1-3 QIs: numeric columns (interval trees) and categorical ones with the test
    trees or an interleaved, unbalanced tree; 4-60 rows."""
    n = draw(st.integers(4, 60))
    n_num = draw(st.integers(0, 2))
    n_cat = draw(st.integers(0 if n_num else 1, 2))
    num_cols = [[float(v) for v in draw(st.lists(st.integers(0, 30), min_size=n, max_size=n))]
                for _ in range(n_num)]
    cat_cols = []
    for c in range(n_cat):
        if draw(st.booleans()):
            edges = interleaved_tree(draw, f"l{c}")
        else:
            edges = TREES[draw(st.sampled_from(["work", "flat", "deep"]))]
        leaves = [lab for lab, _ in edges if lab not in {p for _, p in edges}]
        cat_cols.append((edges, draw(st.lists(st.sampled_from(leaves), min_size=n, max_size=n))))
    return _make_data(num_cols, cat_cols)


# ---------------------------------------------------------------------------- sort, intervals

@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(1, 6), min_size=1, max_size=3), st.integers(0, 80), st.randoms())
def test_lex_order_is_the_stable_lexicographic_sort(nleaf, t, rnd):
    leaves = np.array([[rnd.randrange(m) for _ in range(t)] for m in nleaf],
                      dtype=np.int32).reshape(len(nleaf), t)
    perm = BK.lex_order(leaves, np.array(nleaf, dtype=np.int64))
    want = np.lexsort(leaves[::-1]) if t else np.zeros(0, dtype=np.int64)  # stable
    assert perm.tolist() == want.tolist()
    assert BK.gather_rows(leaves[0].copy(), perm).tolist() == leaves[0][want].tolist()


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 5), min_size=1, max_size=12))
def test_interval_cuts_are_exactly_the_leaf_cuts_no_ancestor_spans(anc):
    """Leaves x and x + 1 are in different intervals iff no ancestor has leaves on both sides."""
    anc = np.array(anc, dtype=np.int64)
    ids = blocks.interval_ids(anc)
    for x in range(anc.size - 1):
        separable = not (set(anc[:x + 1].tolist()) & set(anc[x + 1:].tolist()))
        assert (ids[x + 1] != ids[x]) == separable
        assert ids[x + 1] in (ids[x], ids[x] + 1)
    for a in set(anc.tolist()):  # each ancestor's leaves in one interval
        assert len(set(ids[anc == a].tolist())) == 1


# ---------------------------------------------------------------------------- block grouping

def _run_group_runs(ch, levels, probe, threads):
    """group_runs on the node's blocks with ``threads`` rows of slots (the checker's
    arguments; class buffers filled with junk first), or None when the node has no plan."""
    sp = ch.space
    got = ch.block_args(levels)
    if got is None:
        return None
    args, (ks, maxblock) = got
    slots = np.zeros((threads, max(ks, 1)), dtype=np.int64)
    size = min(ch.cap + 1, sp.t) + maxblock
    bufs = (np.full((threads, size), -7, dtype=np.int64), np.full((threads, size), -7),
            np.zeros(0, dtype=sp.code_dtype))
    out = BK.group_runs(*args, ch.k, ch.limit, probe, ch.cap, slots, maxblock, *bufs)
    assert not slots.any()  # left all 0
    run_start, run_end = args[6], args[7]  # the plan's blocks cover every position once
    cover = np.zeros(sp.t, dtype=np.int64)
    for a, b in zip(run_start.tolist(), run_end.tolist()):
        cover[a:b] += 1
    assert cover.tolist() == [1] * sp.t
    return out


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(block_tables(), st.data(), st.integers(1, 6), st.sampled_from([0.0, 0.05, 0.2, 0.5]),
       st.sampled_from([1, 2, 8, 64]), st.booleans())
def test_block_grouping_equals_plain_counting(monkeypatch, data, draw, k, ms, skip_max, weighted):
    """Stopped only when the node is infeasible (more than cap classes or limit suppressed
    rows), always when so with every block in the stopping phase (probe 1); otherwise exactly
    the node's classes (codes at each class's first position, rows), whatever the threads.
    ``weighted``: each encoded tuple stands for 1-4 rows (a histogram: rows counted per tuple)."""
    monkeypatch.setattr(blocks, "SORT_MIN", 0)
    monkeypatch.setattr(blocks, "MIN_RUN", 1)
    monkeypatch.setattr(blocks, "SKIP_MAX", skip_max)
    if weighted:
        data = dataclasses.replace(data, counts=np.array(
            draw.draw(st.lists(st.integers(1, 4), min_size=data.n, max_size=data.n)),
            dtype=np.int64))
    space = build_space(data)
    if space.blocks is None:
        return
    ch = NodeChecker(space, min(k, data.n), ms, stop_early=True)
    levels = draw.draw(st.sampled_from(all_nodes(space)))
    ref = naive_counts(space, levels)
    sup = sum(c for c in ref.values() if c < ch.k)
    infeasible = sup > ch.limit or len(ref) > ch.cap
    for probe in (1.0, 0.25, 0.0):
        outs = [_run_group_runs(ch, levels, probe, T) for T in (1, 2, 3)]
        if outs[0] is None:
            return
        for o in outs[1:]:  # the same for any number of threads
            assert o[0] == outs[0][0]
            assert o[1].tolist() == outs[0][1].tolist() and o[2].tolist() == outs[0][2].tolist()
            assert o[3].tolist() == outs[0][3].tolist()
        stopped, first, cnt, kc, read = outs[0]
        event(f"probe {probe}: {'stopped' if stopped else 'complete'}")
        assert 0 <= read <= space.t
        if stopped:
            assert infeasible
            continue
        assert probe < 1.0 or not infeasible
        assert read == space.t
        cols = space.cols(levels)
        got = {}
        for i, f in enumerate(first.tolist()):
            key = tuple(int(space.codes[c, f]) for c in cols)
            assert tuple(int(x) for x in kc[:, i]) == key
            assert key not in got
            got[key] = int(cnt[i])
        assert got == ref


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(block_tables(), st.data(), st.integers(1, 6), st.sampled_from([0.0, 0.1, 0.3]))
def test_checker_with_blocks_decides_as_the_plain_checker(monkeypatch, data, draw, k, ms):
    """A checker over sorted tuples gives every node the plain checker's feasibility, and the
    same loss and class statistics whenever it groups the node completely."""
    k = min(k, data.n)
    plain = NodeChecker(build_space(data), k, ms, stop_early=True)
    monkeypatch.setattr(blocks, "SORT_MIN", 0)
    monkeypatch.setattr(blocks, "MIN_RUN", 1)
    space = build_space(data)
    ch = NodeChecker(space, k, ms, stop_early=True)
    nodes = draw.draw(st.lists(st.sampled_from(all_nodes(space)), min_size=1, max_size=6))
    for levels in nodes:
        keep = draw.draw(st.booleans())
        a, b = ch.check(levels, keep), plain.check(levels)
        assert a.feasible == b.feasible
        if a.feasible:
            assert a.loss == pytest.approx(b.loss, rel=1e-12, abs=1e-12)
        if a.n_suppressed >= 0 and b.n_suppressed >= 0:
            assert (a.n_suppressed, a.min_class, a.n_classes) == \
                (b.n_suppressed, b.min_class, b.n_classes)


# ---------------------------------------------------------------------------- optimal

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(block_tables(), st.integers(1, 4), st.sampled_from([0.0, 0.1, 0.3]),
       st.sampled_from(["log", "gcp", "dm"]))
def test_optimal_over_blocks_publishes_the_brute_force_node(monkeypatch, data, k, ms, loss):
    """Sorted tuples change neither the published node nor its classes: the brute force's
    canonical node, every published class one generalized tuple of at least k rows (the
    classes mapped back to the data's rows), the suppressed rows those of its small classes."""
    monkeypatch.setattr(blocks, "SORT_MIN", 0)
    monkeypatch.setattr(blocks, "MIN_RUN", 1)
    k = min(k, data.n)
    space = build_space(data)  # sorted when a QI has 2 to t leaves (MIN_RUN 1)
    assert (space.perm is not None) == any(2 <= t.leaf_count <= data.n for t in space.trees)
    part = run("optimal", data, k, max_suppression=ms, loss=loss)
    best, node = brute_force_node(data, k, ms, loss)
    assert tuple(part.info["levels"]) == node
    assert part.info["loss"] == pytest.approx(best, rel=1e-9, abs=1e-9)
    qis = naive_qis(data)
    trees, leaves, _ = qis
    keys = [tuple(int(t.anc[lf[i], L]) for t, lf, L in zip(trees, leaves, node))
            for i in range(data.n)]
    size = {}
    for key in keys:
        size[key] = size.get(key, 0) + 1
    for i in range(data.n):
        assert bool(part.suppressed[i]) == (size[keys[i]] < k)
    by_class = {}
    for i in range(data.n):
        if not part.suppressed[i]:
            by_class.setdefault(int(part.ec[i]), set()).add(keys[i])
    assert all(len(v) == 1 for v in by_class.values())
    assert len(by_class) == len({keys[i] for i in range(data.n) if not part.suppressed[i]})
    assert naive_eval(qis, node, k, ms, loss, data.n)[0]


def test_a_large_table_is_sorted_by_its_fewest_leaf_qis():
    """From SORT_MIN tuples build_space sorts them by the QIs of fewest leaves, as many as keep
    the leaf combinations at most t / MIN_RUN; ``perm`` maps positions to the data's tuples."""
    rng = np.random.default_rng(5)
    n = blocks.SORT_MIN
    data = make_data([list(rng.integers(0, 1000, n).astype(float))],
                     [("flat", list(rng.choice(["a", "b", "c"], n))),
                      ("work", list(rng.choice(["Private", "SelfEmp", "Federal", "Local"], n)))])
    space = build_space(data)
    assert space.blocks.qis == (1, 2)  # 3 leaves, then 5 (x 1000 > n / 8: not the numeric)
    assert sorted(space.perm.tolist()) == list(range(n))
    keys = list(zip(data.cat[space.perm, 0].tolist(), data.cat[space.perm, 1].tolist()))
    assert keys == sorted(keys)
    for j in range(2):  # each position holds its data tuple's codes
        c = int(space.cstart[1 + j])
        assert space.codes[c].tolist() == space.leaf_codes[c][data.cat[space.perm, j]].tolist()
    ident = np.arange(n)
    assert space.data_order(ident)[space.perm].tolist() == ident.tolist()


@pytest.mark.parametrize("algo", ["optimal", "datafly", "kgen", "random"])
@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), model=st.sampled_from(sorted(MODELS)), k=st.integers(1, 4))
def test_models_hold_over_sorted_tuples(monkeypatch, models_con, algo, seed, model, k):  # noqa: F811
    """With the tuples sorted into blocks, every lattice search still publishes k-anonymous
    classes satisfying each privacy model (their per-class histograms read the sensitive
    values of the data's rows: the classes are mapped back from the sorted positions)."""
    monkeypatch.setattr(blocks, "SORT_MIN", 0)
    monkeypatch.setattr(blocks, "MIN_RUN", 1)
    rnd = random.Random(seed)
    make_table(models_con, rnd, rnd.randint(24, 90))
    run_and_check(models_con, algo, model, k, seed, ", max_suppression := 0.1")
