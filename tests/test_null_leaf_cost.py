"""The algorithms' internal NCP of a categorical node is gcp()'s: leaves counted as kanon_taxonomy
holds the tree, without the NULL leaf the NULL policy hangs under the root
(``TaxonomyIndex.table_leaves``, ``kanon_duckdb.ncp``).

Before, Mondrian's widths and cut costs (packed ``n_leaves``), the clustering costs
(``objectives`` 'ncp' / 'iq' node costs), bottom-up's level costs and the l-diversity repair
divided by leaves(root) + 1 whenever the column held a NULL, so their choices optimised another
loss than the published gcp() (kanon_runs.qi_loss and gcp() already left the leaf out, fb344a1).
"""
import numpy as np
import pytest

import kanon_duckdb
from kanon_duckdb.algorithms.clustering import _ncp
from kanon_duckdb.anonymize import anonymize as py_anonymize

TREE = [("*", None), ("G", "*"), ("H", "*"), ("a", "G"), ("b", "G"), ("c", "H"), ("d", "H"),
        ("e", "*")]


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    c.execute("DELETE FROM kanon_taxonomy WHERE attr = 'nlc.x'")
    c.executemany("INSERT INTO kanon_taxonomy VALUES ('nlc.x', ?, ?)", TREE)
    yield c
    c.close()


def _table(con, seed, n=40):
    rng = np.random.default_rng(seed)
    xs = rng.choice(["a", "b", "c", "d", "e", None], size=n, p=[.2, .2, .15, .15, .1, .2])
    ys = rng.integers(0, 50, size=n)
    yn = rng.random(n) < 0.1
    rows = ", ".join(f"({i}, {'NULL' if x is None else repr(str(x))}, {'NULL' if m else int(y)})"
                     for i, (x, y, m) in enumerate(zip(xs, ys, yn)))
    con.execute(f"CREATE OR REPLACE TABLE nlc AS SELECT * FROM (VALUES {rows}) v(id, x, y)")


def test_packed_trees_and_cluster_costs_use_the_table_leaves(con):
    _table(con, 0)
    res = py_anonymize(con, "nlc", k=3, qi=["x", "y"], algo="mondrian", record=False)
    data = res.data
    tree = data.trees[0]
    assert tree.has_null_leaf  # the data hold NULLs: the NULL policy's leaf is in the index
    want = {"*": 1.0, "G": 2 / 5, "H": 2 / 5, "a": 0.0, "e": 0.0, None: 0.0}  # 5 leaves in the table
    packed = data.cat_arrays()
    ratio = packed.n_leaves / packed.n_leaves[0]  # what Mondrian's kernels divide
    ds = _ncp.build_ncp_data(data)
    for label, ncp in want.items():
        u = tree.labels.index(label)
        assert tree.ncp(u) == pytest.approx(ncp)
        assert ds.node_cost[u] == pytest.approx(ncp)  # clustering's node cost
        if tree.n_leaves[u] > 1:
            assert ratio[u] == pytest.approx(ncp)


@pytest.mark.parametrize("algo", ["kmember", "oka", "kab", "bha", "ika"])
@pytest.mark.parametrize("seed", range(4))
def test_clustering_cost_of_the_output_is_its_gcp(con, algo, seed):
    # the clustering's own total information loss of the classes it published, sum |e| NCP(e)
    # over (n d), is gcp() of the output: one NCP rule, NULL leaf left out
    _table(con, seed)
    res = py_anonymize(con, "nlc", k=3, qi=["x", "y"], algo=algo, seed=seed)
    g = res.generalized
    ds = _ncp.build_ncp_data(res.data)
    st = _ncp.stats_from_labels(ds, g.ec.astype(np.int64), g.n_classes)
    total = sum(_ncp.cluster_il(ds, st, c) for c in range(g.n_classes))
    con.execute(f"CREATE OR REPLACE TABLE out_nlc AS FROM k_anonymize('nlc', k := 3, "
                f"algo := '{algo}', qi := ['x', 'y'], seed := {seed})")
    assert con.execute("SELECT count(*) FROM out_nlc WHERE suppressed").fetchone()[0] == 0
    gcp = con.execute("SELECT gcp('out_nlc')").fetchone()[0]
    assert total / (res.data.n * 2) == pytest.approx(gcp, rel=1e-12)


@pytest.mark.parametrize(("algo", "seed", "n", "gcp_now", "gcp_before"), [
    ("mondrian", 48, 24, 0.5390070921985816, 0.6026595744680852),
    ("kmember", 17, 12, 0.4979166666666666, 0.6182291666666667),
])
def test_choices_follow_the_published_gcp(con, algo, seed, n, gcp_now, gcp_before):
    # found by running both rules on 180 tables per algorithm of the shape above (k = 3):
    # counting the NULL leaf (6 leaves instead of 5) changed 5 Mondrian outputs, each to a worse
    # gcp(); k-member's greedy choices changed 22 outputs, 10 to a better and 12 to a worse
    # gcp() (its mean over the 180 is 0.48938 before, 0.48951 now). These two are the largest
    # gaps of each (gcp_before: gcp() of the output under the old rule).
    _table(con, seed, n=n)
    con.execute(f"CREATE OR REPLACE TABLE out_m AS FROM k_anonymize('nlc', k := 3, "
                f"algo := '{algo}', qi := ['x', 'y'])")
    gcp = con.execute("SELECT gcp('out_m')").fetchone()[0]
    assert gcp == pytest.approx(gcp_now, rel=1e-12)
    assert gcp < gcp_before - 0.05
