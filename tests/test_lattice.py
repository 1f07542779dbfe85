"""Full-domain lattice algorithms: optimal vs brute force, pruning, KGEN, suppression, SQL."""
import itertools
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import kanon_duckdb
from kanon_duckdb import objectives
from kanon_duckdb.algorithms import get_algorithm
from kanon_duckdb.qidata import QIData
from kanon_duckdb.algorithms.lattice import NodeChecker, build_space, optimal
from kanon_duckdb.algorithms.lattice.levels import numeric_tree
from kanon_duckdb.errors import InvalidParameterError
from kanon_duckdb.taxonomy import build_index

# ---------------------------------------------------------------------------- helpers

TREES = {
    "work": [("Private", "NonGov"), ("SelfEmp", "NonGov"), ("Federal", "Gov"), ("Local", "Gov"),
             ("State", "Gov"), ("NonGov", "*"), ("Gov", "*"), ("*", None)],
    "flat": [("a", "*"), ("b", "*"), ("c", "*"), ("*", None)],
    "deep": [("x1", "x"), ("x2", "x"), ("y1", "y"), ("y2", "y"), ("x", "xy"), ("y", "xy"),
             ("z1", "z"), ("z", "top"), ("xy", "top"), ("top", None)],
}


def make_data(num_cols, cat_cols):
    """QIData from numeric columns (lists of floats, NaN = NULL) and categorical (tree, leaves)."""
    n = len(num_cols[0]) if num_cols else len(cat_cols[0][1])
    num = np.array(num_cols, dtype=np.float64).T.reshape(n, len(num_cols))
    null = np.isnan(num)
    lo = np.array([np.nanmin(c) if not np.all(np.isnan(c)) else 0.0 for c in num.T])
    hi = np.array([np.nanmax(c) if not np.all(np.isnan(c)) else 0.0 for c in num.T])
    num = np.where(null, lo - 1.0, num)
    trees = [build_index(f"c{j}", TREES[name]) for j, (name, _) in enumerate(cat_cols)]
    cat = np.array([[t.leaf_of_label[v] for v in vals] for t, (_, vals) in zip(trees, cat_cols)],
                   dtype=np.int32).T.reshape(n, len(cat_cols))
    return QIData(n, np.ascontiguousarray(num), null, lo, hi, np.ones(len(num_cols), bool),
                  np.ascontiguousarray(cat), trees, [f"n{j}" for j in range(len(num_cols))],
                  [f"c{j}" for j in range(len(cat_cols))])


def two_numeric_one_tree_data(seed: int, n: int = 600):
    """QIData of n random rows: two numeric QIs (90 and 1000 values) and a 5-leaf categorical."""
    rng = np.random.default_rng(seed)
    return make_data([list(rng.integers(0, 90, n).astype(float)),
                      list(rng.integers(0, 1000, n).astype(float))],
                     [("work", list(rng.choice(["Private", "SelfEmp", "Federal", "Local", "State"],
                                               n)))])


def naive_qis(data):
    """(trees, leaf ordinal columns, per-QI node NCP) computed without the lattice kernels."""
    trees, leaves, ncps = [], [], []
    for j in range(data.dn):
        tree, leaf, _ = numeric_tree(data, j)
        vals = data.num[:, j]
        null = data.num_null[:, j]
        rng = data.num_hi[j] - data.num_lo[j]
        ncp = {}
        for u in range(tree.n_nodes):
            under = (tree.leaf_lo[u] <= leaf) & (leaf <= tree.leaf_hi[u])
            if (under & null).any():
                ncp[u] = 1.0
            elif under.any():
                ncp[u] = (vals[under].max() - vals[under].min()) / rng if rng > 0 else 0.0
        trees.append(tree)
        leaves.append(leaf)
        ncps.append(ncp)
    for j, tree in enumerate(data.trees):
        trees.append(tree)
        leaves.append(data.cat[:, j])
        ncps.append({u: tree.ncp(u) for u in range(tree.n_nodes)})
    return trees, leaves, ncps


def naive_eval(qis, levels, k, max_suppression, loss, n):
    """(feasible, loss, suppressed rows) of one node by plain dictionaries."""
    trees, leaves, ncps = qis
    keys = [tuple(int(t.anc[lf[i], L]) for t, lf, L in zip(trees, leaves, levels)) for i in range(n)]
    size = {}
    for key in keys:
        size[key] = size.get(key, 0) + 1
    sup = sum(c for c in size.values() if c < k)
    feasible = sup <= math.floor(max_suppression * n + 1e-9)
    if loss == "log":
        value = float(np.mean([L / t.height if t.height else 0.0 for t, L in zip(trees, levels)]))
    elif loss == "gcp":
        tot = 0.0
        for key in keys:
            if size[key] < k:
                tot += 1.0
            else:
                tot += float(np.mean([ncp[u] for ncp, u in zip(ncps, key)]))
        value = tot / n
    else:
        value = float(sum(c * c for c in size.values() if c >= k) + n * sup)
    return feasible, value, sup


def brute_force(data, k, max_suppression, loss):
    qis = naive_qis(data)
    best = math.inf
    feasible_nodes = []
    for levels in itertools.product(*[range(t.height + 1) for t in qis[0]]):
        ok, value, _ = naive_eval(qis, levels, k, max_suppression, loss, data.n)
        if ok:
            feasible_nodes.append(levels)
            best = min(best, value)
    return best, feasible_nodes, qis


def canonical_node(candidates, loss):
    """The published node of ``optimal`` among (levels, loss) pairs of feasible nodes, by its
    documented order: the loss rounded to the objective's ``tie_step``, then the height (sum of
    levels), then the levels lexicographically (QIs numeric first, then categorical)."""
    step = objectives.get(loss).tie_step
    return min(candidates, key=lambda c: (round(c[1] / step), sum(c[0]), tuple(c[0])))[0]


def brute_force_node(data, k, max_suppression, loss):
    """(least loss, canonical node) over every node of the lattice, by plain dictionaries."""
    qis = naive_qis(data)
    feasible = []
    for levels in itertools.product(*[range(t.height + 1) for t in qis[0]]):
        ok, value, _ = naive_eval(qis, levels, k, max_suppression, loss, data.n)
        if ok:
            feasible.append((levels, value))
    return min(v for _, v in feasible), canonical_node(feasible, loss)


def run(algo, data, k, **params):
    a = get_algorithm(algo)
    p = dict(a.params)
    p.update(params)
    return a.run(data, k, 0, p)


@st.composite
def tables(draw):
    n = draw(st.integers(4, 30))
    n_num = draw(st.integers(0, 2))
    n_cat = draw(st.integers(0 if n_num else 1, 2))
    num_cols = []
    for _ in range(n_num):
        vals = draw(st.lists(st.integers(0, 40), min_size=n, max_size=n))
        col = [float(v) for v in vals]
        if draw(st.booleans()) and n > 5:
            col[draw(st.integers(0, n - 1))] = float("nan")
        num_cols.append(col)
    cat_cols = []
    for _ in range(n_cat):
        name = draw(st.sampled_from(sorted(TREES)))
        leaves = [lab for lab, _ in TREES[name] if lab not in {p for _, p in TREES[name]}]
        cat_cols.append((name, draw(st.lists(st.sampled_from(leaves), min_size=n, max_size=n))))
    return make_data(num_cols, cat_cols)


# ---------------------------------------------------------------------------- optimal

@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(1, 4), st.sampled_from([0.0, 0.1, 0.3]),
       st.sampled_from(["log", "gcp", "dm"]))
def test_optimal_equals_brute_force(data, k, max_suppression, loss):
    k = min(k, data.n)
    best, feasible_nodes, qis = brute_force(data, k, max_suppression, loss)
    part = run("optimal", data, k, max_suppression=max_suppression, loss=loss)
    assert part.info["loss"] == pytest.approx(best, rel=1e-9, abs=1e-9)
    chosen = tuple(part.info["levels"])
    # the published node is the canonical one: least loss, then height, then levels
    assert chosen == brute_force_node(data, k, max_suppression, loss)[1]
    ok, value, sup = naive_eval(qis, chosen, k, max_suppression, loss, data.n)
    assert ok and value == pytest.approx(best, rel=1e-9, abs=1e-9)
    assert part.info["n_suppressed"] == sup == int(part.suppressed.sum())
    # the per-QI pre-processing bounds never cut off a feasible node (paper sec. 7 caveat)
    bounds = part.info["min_levels"]
    assert all(all(a >= b for a, b in zip(node, bounds)) for node in feasible_nodes)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(1, 4), st.sampled_from([0.0, 0.2]))
def test_every_lattice_algorithm_respects_k_and_suppression_limit(data, k, max_suppression):
    k = min(k, data.n)
    limit = math.floor(max_suppression * data.n + 1e-9)
    for algo in ("optimal", "kgen", "random", "datafly"):
        part = run(algo, data, k, max_suppression=max_suppression, population=10,
                   max_evaluations=40)
        sup = part.suppressed
        assert int(sup.sum()) <= limit
        sizes = np.bincount(part.ec)
        assert (sizes[np.unique(part.ec[~sup])] >= k).all()
        assert np.unique(part.ec[sup]).size <= 1  # suppressed rows share one class


def test_pruned_search_decides_every_better_node():
    """With the default loss the search stops after few evaluations and still equals brute force."""
    rng = np.random.default_rng(3)
    n = 300
    cat_cols = [("work", list(rng.choice(["Private", "SelfEmp", "Federal", "Local", "State"], n))),
                ("deep", list(rng.choice(["x1", "x2", "y1", "y2", "z1"], n)))]
    data = make_data([list(rng.integers(0, 90, n).astype(float))], cat_cols)
    for ms in (0.0, 0.05):
        best, _, _ = brute_force(data, 5, ms, "log")
        ch = NodeChecker(build_space(data), 5, ms, "log")
        levels, _ = optimal.search(ch)
        assert ch.check(levels).loss == pytest.approx(best)
        assert levels == brute_force_node(data, 5, ms, "log")[1]
        lattice = np.prod([h + 1 for h in ch.heights])
        assert ch.n_evaluated < lattice


def test_equal_loss_optima_publish_the_first_by_height_then_levels():
    """(0, 1) and (1, 0) both group the rows into two pairs at LOG 0.5 and height 1: the
    canonical order publishes (0, 1), the lexicographically first, whichever feasible node the
    search happens to know first."""
    data = make_data([], [("flat", ["a", "a", "b", "b"]), ("flat", ["a", "b", "a", "b"])])
    for first in ((1, 0), (0, 1), (1, 1)):
        ch = NodeChecker(build_space(data), 2, 0.0, "log")
        assert ch.check(first).feasible  # a head start on another optimum changes nothing
        levels, _ = optimal.search(ch)
        assert levels == (0, 1)
    assert run("optimal", data, 2).info["levels"] == [0, 1]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.sampled_from(["log", "gcp", "dm"]), st.data())
def test_static_bounds_equal_the_scalar_bound_bit_for_bit(data, loss, draw):
    """optimal orders nodes by the vector of bounds and compares them with losses computed
    node by node: both must be the same floats (ties are exact for LOG)."""
    ch = NodeChecker(build_space(data), 1, 0.0, loss)
    nodes = draw.draw(st.lists(st.tuples(*[st.integers(0, int(h)) for h in ch.heights]),
                               min_size=1, max_size=20))
    vec = ch.static_bounds([np.array([u[j] for u in nodes]) for j in range(len(ch.heights))])
    assert [float(x) for x in vec] == [ch.static_bound(u) for u in nodes]
    if loss == "log":
        assert [float(x) for x in vec] == [ch.check(u).loss for u in nodes]


def test_dm_counts_suppressed_rows_as_n_each():
    data = make_data([[1, 1, 1, 2, 2, 2, 30]], [])
    ch = NodeChecker(build_space(data), 3, 0.2, "dm")
    res = ch.check((0,))
    assert res.feasible and res.n_suppressed == 1
    assert res.loss == 3 * 3 + 3 * 3 + 7 * 1


def test_gcp_counts_suppressed_rows_as_fully_generalized():
    data = make_data([], [("flat", ["a", "a", "b", "b", "c"])])
    ch = NodeChecker(build_space(data), 2, 0.2, "gcp")
    res = ch.check((0,))
    assert res.feasible and res.loss == pytest.approx(1 / 5)


# ---------------------------------------------------------------------------- kgen / random

def small_table(seed=0, n=120):
    rng = np.random.default_rng(seed)
    cat_cols = [("work", list(rng.choice(["Private", "SelfEmp", "Federal", "Local", "State"], n))),
                ("flat", list(rng.choice(["a", "b", "c"], n)))]
    return make_data([list(rng.integers(0, 60, n).astype(float))], cat_cols)


@pytest.mark.parametrize("ms,loss", [(0.0, "log"), (0.05, "log"), (0.05, "gcp")])
def test_kgen_finds_the_optimum_when_the_budget_covers_the_lattice(ms, loss):
    data = small_table()
    best, _, _ = brute_force(data, 4, ms, loss)
    part = run("kgen", data, 4, max_suppression=ms, loss=loss)
    assert part.info["loss"] == pytest.approx(best)


@pytest.mark.parametrize("algo", ["kgen", "random"])
def test_seeded_searches_are_deterministic(algo):
    data = small_table(1)
    a = get_algorithm(algo)
    p = dict(a.params, max_evaluations=60, population=10) if algo == "kgen" else dict(
        a.params, max_evaluations=60)
    r1, r2 = a.run(data, 3, 7, p), a.run(data, 3, 7, p)
    assert r1.info["levels"] == r2.info["levels"]
    assert np.array_equal(r1.ec, r2.ec)


def test_datafly_generalizes_the_most_distinct_qi_first():
    data = small_table(2)
    part = run("datafly", data, 4)
    assert part.info["levels"][0] >= 1  # the numeric QI has by far the most distinct values
    assert part.info["steps"] == sum(part.info["levels"])


def test_bad_parameters_are_named():
    data = small_table()
    with pytest.raises(InvalidParameterError, match="max_suppression"):
        run("optimal", data, 2, max_suppression=1.5)
    with pytest.raises(InvalidParameterError, match="loss must be one of"):
        run("optimal", data, 2, loss="entropy")


# ---------------------------------------------------------------------------- output shape

def test_numeric_ranges_come_from_leaf_values_not_labels():
    data = make_data([[21, 22, 23, 24, 25, 33, 34, 35, 36, 37]], [])
    part = run("optimal", data, 5)
    lo, hi = part.num_lo[:, 0], part.num_hi[:, 0]
    for c in np.unique(part.ec):
        vals = data.num[part.ec == c, 0]
        assert lo[c] <= vals.min() and vals.max() <= hi[c]
        assert lo[c] in set(data.num[:, 0]) and hi[c] in set(data.num[:, 0])


def test_suppressed_class_is_fully_generalized():
    data = make_data([[1, 1, 1, 2, 2, 2, 30]], [("flat", ["a", "a", "a", "b", "b", "b", "c"])])
    part = run("optimal", data, 3, max_suppression=0.2)
    sup = part.suppressed
    assert sup.sum() == 1
    c = part.ec[sup][0]
    assert np.isnan(part.num_lo[c, 0]) and part.cat_nodes[c, 0] == 0


# ---------------------------------------------------------------------------- SQL

@pytest.fixture
def con():
    c = kanon_duckdb.connect()
    yield c
    c.close()


def test_sql_end_to_end_with_suppression(con):
    con.execute("CREATE TABLE t AS SELECT (i * 7) % 23 AS age, ['A', 'B', 'C', 'D'][1 + i % 4] AS g, "
                "(i * 3) % 5 AS z, i AS id FROM range(400) r(i)")
    rows = con.sql("FROM k_anonymize('t', k := 3, algo := 'optimal', qi := ['age', 'g', 'z'], "
                   "max_suppression := 0.05)").fetchall()
    cols = [d[0] for d in con.sql("FROM k_anonymize('t', k := 3, algo := 'optimal', "
                                  "qi := ['age', 'g', 'z'], max_suppression := 0.05)").description]
    assert {"age_min", "age_max", "g", "z_min", "z_max", "suppressed", "ec", "ec_size"} <= set(cols)
    sup_i, size_i = cols.index("suppressed"), cols.index("ec_size")
    assert len(rows) == 400
    assert all(r[size_i] >= 3 for r in rows if not r[sup_i])
    assert sum(r[sup_i] for r in rows) <= 20
    import json
    details = json.loads(con.sql("SELECT details FROM kanon_runs ORDER BY run_id DESC LIMIT 1")
                         .fetchall()[0][0])
    assert set(details["node"]) == {"age", "g", "z"}
    assert details["loss_metric"] == "log" and "n_evaluated" in details
    assert details["lattice_height"] == sum(details["heights"])


def test_sql_uses_numeric_tree_from_kanon_taxonomy(con):
    con.execute("CREATE TABLE t AS SELECT 21 + (i % 10) AS age, i AS id FROM range(100) r(i)")
    con.execute("CREATE TABLE IF NOT EXISTS kanon_taxonomy (attr VARCHAR, child VARCHAR, parent VARCHAR)")
    edges = [(str(a), "20-24" if a <= 25 else "25-29") for a in range(21, 31)]
    edges += [("20-24", "*"), ("25-29", "*"), ("*", None)]
    con.executemany("INSERT INTO kanon_taxonomy VALUES ('age', ?, ?)", edges)
    rows = con.sql("SELECT DISTINCT age_min, age_max FROM k_anonymize('t', k := 50, "
                   "algo := 'optimal', qi := ['age']) ORDER BY 1").fetchall()
    assert rows == [(21, 25), (26, 30)]  # leaf values under '20-24' are 21..25


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tables(), st.integers(1, 4), st.sampled_from([0.0, 0.2]),
       st.sampled_from(["log", "gcp", "dm"]))
def test_reported_gcp_and_dm_are_those_of_the_published_node(data, k, max_suppression, loss):
    """info['gcp'] / info['dm'] of every lattice search are the chosen node's GCP and DM, whatever
    loss drove the search (the checker derives them from the node's class statistics)."""
    k = min(k, data.n)
    qis = naive_qis(data)
    for algo in ("optimal", "datafly"):
        part = run(algo, data, k, max_suppression=max_suppression, loss=loss)
        chosen = tuple(part.info["levels"])
        for name in ("gcp", "dm", "log"):
            ok, value, sup = naive_eval(qis, chosen, k, max_suppression, name, data.n)
            assert ok and sup == part.info["n_suppressed"]
            assert part.info[name] == pytest.approx(value, rel=1e-9, abs=1e-12), (algo, name)


def test_loss_as_equals_a_checker_built_for_that_loss():
    """With weights and suppression: NodeChecker.loss_as(name) is bit for bit the loss a checker
    built with loss=name returns, at every feasible node."""
    rng = np.random.default_rng(5)
    n = 200
    cat_cols = [("work", list(rng.choice(["Private", "SelfEmp", "Federal", "Local", "State"], n)))]
    data = make_data([list(rng.integers(0, 90, n).astype(float))], cat_cols)
    space = build_space(data)
    w = np.array([1.6, 0.4])
    ch = NodeChecker(space, 4, 0.05, "log", weights=w)
    n_feasible = 0
    for node in itertools.product(*[range(int(h) + 1) for h in space.heights]):
        if not ch.check(node).feasible:
            with pytest.raises(ValueError, match="feasible node"):
                ch.loss_as("gcp", node)
            continue
        n_feasible += 1
        for name in ("log", "gcp", "dm"):
            own = NodeChecker(space, 4, 0.05, name, weights=w if name != "dm" else None)
            assert ch.loss_as(name, node) == own.check(node).loss
    assert n_feasible > 1


def test_gcp_loss_with_nulls_is_the_gcp_of_the_output(con):
    """The lattice's GCP (details gcp/loss, and what loss := 'gcp' minimizes) counts a tree's
    leaves as kanon_taxonomy holds them, as gcp() does: the NULL leaf of the NULL policy is not
    one (scale checker: recorded loss 0.10135 vs 0.10162 by brute force on 200k rows with NULLs).
    Tree * -> {G -> {a, b}, c}; level 1 publishes G for a, b and '*' for c (one step up from
    depth 1) and NULL; G covers 2 of the tree's 3 leaves (2 of 4 with the NULL leaf)."""
    con.execute("INSERT INTO kanon_taxonomy VALUES ('tn.x', '*', NULL), ('tn.x', 'G', '*'), "
                "('tn.x', 'c', '*'), ('tn.x', 'a', 'G'), ('tn.x', 'b', 'G')")
    con.execute("CREATE TABLE tn AS SELECT i AS id, ['a', 'b', 'c', 'c', NULL, NULL][1 + i % 6] AS x "
                "FROM range(60) r(i)")
    con.execute("CREATE TABLE tn_out AS FROM k_anonymize('tn', k := 15, algo := 'optimal', "
                "qi := ['x'], loss := 'gcp')")
    import json
    details = json.loads(con.sql("SELECT details FROM kanon_runs ORDER BY run_id DESC LIMIT 1")
                         .fetchall()[0][0])
    assert details["levels"] == [1]
    # G: 20 rows at 2/3, '*': 40 rows at 1
    want = (20 * 2 / 3 + 40) / 60
    assert con.sql("SELECT gcp('tn_out')").fetchall()[0][0] == pytest.approx(want)
    assert details["gcp"] == pytest.approx(want) and details["loss"] == pytest.approx(want)
