"""SQL tree walks of any depth (kanon_taxonomy_nodes) and interval builders on 0.0 / -0.0
(issue 9, section 7)."""
import pytest

import kanon_duckdb


@pytest.fixture
def con():
    c = kanon_duckdb.connect()
    yield c
    c.close()


def test_taxonomy_nodes_walk_trees_deeper_than_1000_levels(con):
    depth = 1500  # '*' -> n1 -> ... -> n1500 -> {a, b}; and '*' -> c
    edges = [("*", None), ("n1", "*"), ("c", "*")]
    edges += [(f"n{i}", f"n{i - 1}") for i in range(2, depth + 1)]
    edges += [("a", f"n{depth}"), ("b", f"n{depth}")]
    con.executemany("INSERT INTO kanon_taxonomy VALUES ('deep', ?, ?)", edges)
    nodes = {r[0]: r[1:] for r in con.execute(
        "SELECT node, depth, n_leaves, sub_height, root_leaves, height "
        "FROM kanon_taxonomy_nodes() WHERE attr = 'deep'").fetchall()}
    assert nodes["*"] == (0, 3, depth + 1, 3, depth + 1)
    assert nodes["a"] == (depth + 1, 1, 0, 3, depth + 1)
    assert nodes["n1"] == (1, 2, depth, 3, depth + 1)
    assert nodes["c"] == (1, 1, 0, 3, depth + 1)
    # total_il (height ratio) of a hand-made table publishing n1 and c: height(n1) = depth
    con.execute("CREATE TABLE anon (deep VARCHAR, ec BIGINT, ec_size BIGINT, suppressed BOOLEAN, "
                "kanon_run BIGINT)")
    con.execute("INSERT INTO anon VALUES ('n1', 0, 2, false, 7), ('n1', 0, 2, false, 7), "
                "('c', 1, 1, false, 7)")
    con.execute("INSERT INTO kanon_runs (run_id, source, k, algo, qi, numeric_qi, categorical_qi, "
                "params, seed, details) VALUES (7, 'raw', 1, 'hand', ['deep'], [], ['deep'], '{}', 0, '{}')")
    assert con.execute("SELECT total_il('anon')").fetchone()[0] == pytest.approx(
        2 * depth / (depth + 1))
    assert con.execute("SELECT gcp('anon')").fetchone()[0] == pytest.approx(2 * (2 / 3) / 3)


def test_taxonomy_nodes_attrs_restricts_to_the_named_trees_unchanged(con):
    # attrs := [...] (what kanon_label_ncp passes: the run's trees) computes those trees only,
    # each exactly as in the full call; a NULL in the list (flat tree) matches nothing
    con.executemany("INSERT INTO kanon_taxonomy VALUES (?, ?, ?)", [
        ("t1", "*", None), ("t1", "A", "*"), ("t1", "a1", "A"), ("t1", "a2", "A"), ("t1", "b", "*"),
        ("t1", "b", "b"),
        ("t2", "*", None), ("t2", "x", "*"), ("t2", "y", "*"),
        ("t3", "*", None), ("t3", "p", "*")])
    cols = "attr, node, depth, n_leaves, sub_height, root_leaves, height"
    full = con.execute(f"SELECT {cols} FROM kanon_taxonomy_nodes() ORDER BY ALL").fetchall()
    some = con.execute(f"SELECT {cols} FROM kanon_taxonomy_nodes(attrs := ['t1', NULL, 't3']) "
                       "ORDER BY ALL").fetchall()
    assert {r[0] for r in full} == {"t1", "t2", "t3"}
    assert some == [r for r in full if r[0] in ("t1", "t3")]
    assert con.execute("SELECT count(*) FROM kanon_taxonomy_nodes(attrs := [])").fetchone()[0] == 0


@pytest.mark.parametrize("builder", ["kanon_build_intervals('z', 'x')",
                                     "kanon_build_quantiles('z', 'x', 4)"])
def test_interval_builders_keep_both_zero_labels(con, builder):
    con.execute("CREATE TABLE z AS SELECT i AS id, CASE WHEN i = 0 THEN -0.0::DOUBLE "
                "WHEN i = 1 THEN 0.0::DOUBLE ELSE i::DOUBLE END AS x FROM range(12) t(i)")
    con.execute(f"SELECT {builder}")
    labels = {r[0] for r in con.execute("SELECT child FROM kanon_taxonomy WHERE attr = 'x'").fetchall()}
    assert {"-0.0", "0.0"} <= labels
    # the lattice algorithms read the stored tree: every data value must be a leaf of it
    out = con.execute("SELECT x, x_min, x_max FROM k_anonymize('z', k := 3, algo := 'optimal', "
                      "qi := ['x']) JOIN z USING (id)").fetchall()
    assert len(out) == 12 and all(lo <= x <= hi for x, lo, hi in out)
