"""Property tests of k_anonymize through SQL: random tables, random taxonomies, random k.

Every output is checked from scratch, independently of the kernels: k-anonymity over the published
QI columns, truthfulness (raw value inside its range / under its label), non-QI columns unchanged,
rows preserved.
"""
import random

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import kanon_duckdb

import naive
from kanon_duckdb.algorithms import registry

ALGOS = sorted(registry())


def random_tree(rnd: random.Random, attr: str, n_leaves: int):
    """Random tree with n_leaves leaves named f'{attr}{i}'; returns (edges, leaves, parent_of)."""
    def shuffled(nodes):
        rnd.shuffle(nodes)
        return nodes

    edges = naive.grouped_tree_edges(attr, n_leaves, shuffled, lambda: rnd.randint(1, 3),
                                     rnd.random)
    parent_of = {c: p for c, p in edges}
    return edges, [f"{attr}{i}" for i in range(n_leaves)], parent_of


def ancestors(parent_of, leaf):
    out = {leaf}
    while parent_of.get(leaf) is not None:
        leaf = parent_of[leaf]
        out.add(leaf)
    return out


def check_output(con, src, out, k, num_qi, cat_qi, parents):
    n_src = con.sql(f"SELECT count(*) FROM {src}").fetchall()[0][0]
    assert con.sql(f"SELECT count(*) FROM {out}").fetchall()[0][0] == n_src
    cols = [f"{c}_min" for c in num_qi] + [f"{c}_max" for c in num_qi] + list(cat_qi)
    # k-anonymity recomputed on the published QI values (NULL-safe grouping)
    if cols:
        sizes = con.sql(f"SELECT count(*) FROM {out} GROUP BY ALL_COLS".replace(
            "ALL_COLS", ", ".join(cols))).fetchall()
        assert min(s[0] for s in sizes) >= k
    # class columns agree with the data
    bad = con.sql(f"SELECT count(*) FROM (SELECT ec, count(*) n, any_value(ec_size) s FROM {out} "
                  f"GROUP BY ec) WHERE n <> s OR n < {k}").fetchall()[0][0]
    assert bad == 0
    sel = ["r.payload AS raw_payload", "o.payload AS pub_payload"]
    sel += [f"r.{c} AS raw_{c}, o.{c}_min AS lo_{c}, o.{c}_max AS hi_{c}" for c in num_qi]
    sel += [f"r.{c} AS raw_{c}, o.{c} AS pub_{c}" for c in cat_qi]
    rel = con.sql(f"SELECT {', '.join(sel)} FROM {src} r JOIN {out} o USING (id)")
    names = [d[0] for d in rel.description]
    rows = rel.fetchall()
    assert len(rows) == n_src
    for row in rows:
        rec = dict(zip(names, row))
        for c in num_qi:
            v, lo, hi = rec[f"raw_{c}"], rec[f"lo_{c}"], rec[f"hi_{c}"]
            if lo is None or hi is None:
                assert lo is None and hi is None  # NULL policy: a NULL range means "any value"
                continue
            assert v is not None and lo <= v <= hi
        for c in cat_qi:
            raw, label = rec[f"raw_{c}"], rec[f"pub_{c}"]
            assert label in ancestors(parents[c], raw), (c, raw, label)
        assert rec["raw_payload"] == rec["pub_payload"]


@st.composite
def tables(draw):
    seed = draw(st.integers(0, 10**6))
    rnd = random.Random(seed)
    n = draw(st.integers(1, 120))
    n_num = draw(st.integers(0, 2))
    n_cat = draw(st.integers(0 if n_num else 1, 2))
    k = draw(st.integers(1, max(1, min(n, 12))))
    trees = {}
    for j in range(n_cat):
        trees[f"c{j}"] = random_tree(rnd, f"c{j}v", rnd.randint(1, 9))
    rows = []
    for i in range(n):
        r = [i, rnd.random()]
        for j in range(n_num):
            r.append(None if rnd.random() < 0.05 else rnd.randint(0, rnd.choice([3, 50, 1000])))
        for j in range(n_cat):
            leaves = trees[f"c{j}"][1]
            r.append(rnd.choice(leaves))
        rows.append(r)
    return n, n_num, n_cat, k, trees, rows, seed


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    yield c
    c.close()


@pytest.mark.parametrize("algo", ALGOS)
@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(t=tables())
def test_output_is_k_anonymous_truthful_and_complete(con, algo, t):
    n, n_num, n_cat, k, trees, rows, seed = t
    num_qi = [f"x{j}" for j in range(n_num)]
    cat_qi = [f"c{j}" for j in range(n_cat)]
    con.execute("DROP TABLE IF EXISTS src")
    cols = ["id INTEGER", "payload DOUBLE"] + [f"{c} INTEGER" for c in num_qi] + [f"{c} VARCHAR" for c in cat_qi]
    con.execute(f"CREATE TABLE src ({', '.join(cols)})")
    con.executemany(f"INSERT INTO src VALUES ({', '.join('?' * len(cols))})", rows)
    con.execute("DELETE FROM kanon_taxonomy")
    for c, (edges, _leaves, _p) in trees.items():
        con.executemany("INSERT INTO kanon_taxonomy VALUES (?, ?, ?)", [(c, a, b) for a, b in edges])
    qi = num_qi + cat_qi
    con.execute("DROP TABLE IF EXISTS out")
    con.execute(f"CREATE TABLE out AS FROM k_anonymize('src', k := {k}, algo := '{algo}', "
                f"qi := {qi!r}, seed := {seed})")
    # rename the published categorical columns so the join with the raw table keeps both
    check_output(con, "src", "out", k, num_qi, cat_qi, {c: trees[c][2] for c in cat_qi})


def test_same_seed_same_output(con):
    con.execute("CREATE OR REPLACE TABLE s AS SELECT i AS id, (i * 37) % 101 AS a, "
                "['x','y','z'][1 + i % 3] AS b FROM range(200) t(i)")
    q = "SELECT id, a_min, a_max, b, ec FROM k_anonymize('s', k := 7, qi := ['a','b'], seed := 3) ORDER BY id"
    assert con.sql(q).fetchall() == con.sql(q).fetchall()


def test_table_with_deleted_and_appended_rows_is_matched_row_by_row(con):
    con.execute("CREATE OR REPLACE TABLE d AS SELECT i AS id, i % 17 AS a, ['x','y','z'][1 + i % 3] AS b "
                "FROM range(5000) t(i)")
    con.execute("DELETE FROM d WHERE id % 7 = 0")
    con.execute("INSERT INTO d SELECT 100000 + i, i % 5, 'x' FROM range(500) t(i)")
    con.execute("CREATE OR REPLACE TABLE d_out AS FROM k_anonymize('d', k := 4, qi := ['a', 'b'])")
    n = con.sql("SELECT count(*) FROM d").fetchall()[0][0]
    assert con.sql("SELECT count(*) FROM d_out").fetchall()[0][0] == n
    wrong = con.sql("SELECT count(*) FROM d JOIN d_out o USING (id) WHERE d.a < o.a_min OR d.a > o.a_max "
                    "OR (o.b <> '*' AND o.b <> d.b)").fetchall()[0][0]
    assert wrong == 0
