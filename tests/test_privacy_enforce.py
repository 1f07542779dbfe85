"""Privacy models enforced while anonymizing (issue 13), through SQL, for every algorithm.

Every output must satisfy each requested model as measured by the SQL checks (sql/privacy.sql)
AND by the independent naive implementation in tests/naive_metrics.py (published classes =
rows with equal published QI values, suppressed rows excluded); row count, truthfulness and
the suppression limit hold (test_k_anonymize_properties.check_output). ``optimal`` with models
is compared with a brute force over its lattice.
"""
import itertools
import math
import random

import naive_metrics as naive
from test_lattice import canonical_node
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_k_anonymize_properties import check_output

import kanon_duckdb
from kanon_duckdb.algorithms import registry

ALGOS = sorted(registry())
S_TREE = [("resp", "*"), ("dig", "*"), ("flu", "resp"), ("cold", "resp"), ("ulcer", "dig"),
          ("colitis", "dig")]
S_VALUES = ["flu", "cold", "ulcer", "colitis"]
S_PARENT = dict(S_TREE)

# (SQL arguments, checker of the published rows)
MODELS = {
    "distinct": "l := 2",
    "entropy": "l := 1.6, l_variant := 'entropy'",
    "recursive": "l := 2, l_variant := 'recursive', c := 2",
    "t_equal": "t := 0.35, t_distance := 'equal'",
    "t_ordered": "t := 0.3",                      # the numeric sensitive column: ordered
    "t_hier": "t := 0.3, t_distance := 'hierarchical'",
    "risk": "max_risk := 0.25",
}


def _emd_hier(q, p):
    values = sorted(p)
    ground = naive.tree_ground(values, S_PARENT)
    return naive.emd_transport([p[v] for v in values], [q.get(v, 0.0) for v in values], ground)


def naive_check(rows, cols, model, k):
    """Assert the model on the published rows (dicts), independently of the kernels and SQL."""
    groups = naive.groups(rows, cols)
    assert min(len(g) for g in groups.values()) >= k
    if model == "distinct":
        assert naive.l_diversity(rows, cols, "s")[0] >= 2
    elif model == "entropy":
        assert naive.l_diversity(rows, cols, "s")[1] >= 1.6 - 1e-9
    elif model == "recursive":
        for g in groups.values():
            counts = {}
            for r in g:
                counts[r["s"]] = counts.get(r["s"], 0) + 1
            assert naive.recursive_l(list(counts.values()), 2) >= 2
    elif model == "t_equal":
        assert naive.t_closeness(rows, cols, "s", False) <= 0.35 + 1e-9
    elif model == "t_ordered":
        assert naive.t_closeness(rows, cols, "y", True) <= 0.3 + 1e-9
    elif model == "t_hier":
        n = len(rows)
        p = {v: sum(r["s"] == v for r in rows) / n for v in {r["s"] for r in rows}}
        for g in groups.values():
            q = {v: sum(r["s"] == v for r in g) / len(g) for v in {r["s"] for r in g}}
            assert _emd_hier(q, p) <= 0.3 + 1e-7
    elif model == "risk":
        assert naive.reidentification_risk(rows, cols)["max_risk"] <= 0.25 + 1e-12


def sql_check(con, out, qi, model, k):
    q = "[" + ", ".join(f"'{c}'" for c in qi) + "]"
    one = lambda e: con.sql(f"SELECT {e}").fetchall()[0][0]
    assert one(f"k_anonymity('{out}', {q})") >= k
    if model == "distinct":
        assert one(f"l_diversity('{out}', {q}, 's')")["distinct"] >= 2
    elif model == "entropy":
        assert one(f"l_diversity('{out}', {q}, 's')")["entropy"] >= 1.6 - 1e-9
    elif model == "recursive":
        assert one(f"l_diversity('{out}', {q}, 's', c := 2)")["recursive"] >= 2
    elif model == "t_equal":
        assert one(f"t_closeness('{out}', {q}, 's', distance := 'equal')") <= 0.35 + 1e-9
    elif model == "t_ordered":
        assert one(f"t_closeness('{out}', {q}, 'y')") <= 0.3 + 1e-9
    elif model == "t_hier":
        assert one(f"t_closeness('{out}', {q}, 's')") <= 0.3 + 1e-9
    elif model == "risk":
        assert one(f"reidentification_risk('{out}', {q})")["max_risk"] <= 0.25 + 1e-12


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    c.executemany("INSERT INTO kanon_taxonomy VALUES ('s', ?, ?)", S_TREE + [("*", None)])
    c.executemany("INSERT INTO kanon_taxonomy VALUES ('z', ?, ?)",
                  [(f"z{i}", f"g{i // 3}") for i in range(9)] + [(f"g{j}", "*") for j in range(3)])
    yield c
    c.close()


def make_table(con, rnd, n):
    rows = [(i, rnd.random(), rnd.randint(18, 80), f"z{rnd.randrange(9)}",
             rnd.choice(S_VALUES), rnd.choice([1, 2, 3, 5, 8])) for i in range(n)]
    con.execute("CREATE OR REPLACE TABLE src (id INTEGER, payload DOUBLE, age INTEGER, "
                "z VARCHAR, s VARCHAR, y INTEGER)")
    con.executemany("INSERT INTO src VALUES (?, ?, ?, ?, ?, ?)", rows)


def run_and_check(con, algo, model, k, seed, extra=""):
    sens = "'y'" if model == "t_ordered" else "'s'"
    con.execute("DROP TABLE IF EXISTS out")
    con.execute(f"CREATE TABLE out AS FROM k_anonymize('src', k := {k}, algo := '{algo}', "
                f"qi := ['age', 'z'], seed := {seed}, sensitive := {sens}, {MODELS[model]}{extra})")
    check_output(con, "src", "out", 1, ["age"], ["z"],
                 {"z": {**{f"z{i}": f"g{i // 3}" for i in range(9)},
                        **{f"g{j}": "*" for j in range(3)}}})
    sql_check(con, "out", ["age", "z"], model, k)
    rel = con.sql("SELECT age_min, age_max, z, s, y, suppressed, kanon_run FROM out")
    names = [d[0] for d in rel.description]
    rows = [dict(zip(names, r)) for r in rel.fetchall()]
    naive_check(rows, ["age_min", "age_max", "z"], model, k)
    return rows


@pytest.mark.parametrize("algo", ALGOS)
@settings(max_examples=3, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), model=st.sampled_from(sorted(MODELS)), k=st.integers(1, 4))
def test_every_algorithm_enforces_each_model(con, algo, seed, model, k):
    rnd = random.Random(seed)
    make_table(con, rnd, rnd.randint(24, 70))
    run_and_check(con, algo, model, k, seed)


@pytest.mark.slow
@pytest.mark.parametrize("algo", ALGOS)
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 10**6), model=st.sampled_from(sorted(MODELS)), k=st.integers(1, 8))
def test_every_algorithm_enforces_each_model_larger(con, algo, seed, model, k):
    rnd = random.Random(seed)
    make_table(con, rnd, rnd.randint(60, 300))
    run_and_check(con, algo, model, k, seed)


@pytest.mark.parametrize("algo", ["optimal", "datafly", "kgen", "mondrian", "kmember"])
def test_suppression_limit_holds_with_models(con, algo):
    make_table(con, random.Random(5), 80)
    extra = ", max_suppression := 0.1" if algo in ("optimal", "datafly", "kgen") else ""
    rows = run_and_check(con, algo, "entropy", 3, 1, extra)
    assert sum(1 for r in rows if r["suppressed"]) <= math.floor(0.1 * 80)


def test_optimal_with_models_equals_brute_force(con):
    """optimal's loss with l-diversity and t-closeness = the best feasible node by brute force."""
    from kanon_duckdb.algorithms.lattice.checker import NodeChecker
    from kanon_duckdb.algorithms.lattice.levels import build_space
    from kanon_duckdb.anonymize import anonymize
    from kanon_duckdb.privacy import spec_of
    make_table(con, random.Random(11), 90)
    params = {"sensitive": "s", "l": 2, "l_variant": "entropy", "t": 0.3,
              "max_suppression": 0.05, "loss": "gcp"}
    res = anonymize(con, "src", k=3, algo="optimal", qi=["age", "z"], params=params, record=False)
    spec = spec_of(res.data)
    ch = NodeChecker(build_space(res.data), 3, 0.05, "gcp", privacy=spec)
    best, node = checker_brute_force(ch)
    assert res.partition.info["loss"] == pytest.approx(best)
    assert tuple(res.partition.info["levels"]) == node
    # and a checker without the models finds a lower-or-equal optimum (models only remove nodes)
    ch_k = NodeChecker(build_space(res.data), 3, 0.05, "gcp")
    best_k = min(ch_k.check(lv).loss for lv in
                 itertools.product(*[range(int(h) + 1) for h in ch_k.heights]))
    assert best_k <= best


@pytest.mark.parametrize("algo", ["mondrian", "kmember", "optimal"])
@pytest.mark.parametrize("risk", ["max_risk := 0.04", "avg_risk := 0.04",
                                  "max_risk := 0.04, sensitive := 's'"])
def test_a_risk_limit_larger_than_the_table_is_a_clear_error(con, algo, risk):
    # 1 / 0.04 = 25 rows per class on a 20-row table: no class can exist. Without l or t the
    # whole-table check was skipped: the local algorithms raised "internal error: 1 classes
    # violate the requested privacy models ...; please report it", optimal "no generalization
    # is k-anonymous (k=25)" (the user asked k := 2)
    make_table(con, random.Random(3), 20)
    with pytest.raises(Exception, match="the models need classes of at least 25 rows but the "
                                        "table has 20; relax k / max_risk / avg_risk / l"):
        con.execute(f"FROM k_anonymize('src', k := 2, algo := '{algo}', qi := ['age', 'z'], "
                    f"{risk})").fetchall()


@pytest.mark.parametrize("algo", ["kmember", "oka", "ika", "kab", "bha", "info2means", "bottomup"])
def test_t_zero_with_suppression_publishes_the_whole_table_class(con, algo):
    # t := 0 holds for the whole table only. With max_suppression the repair suppressed a
    # violating class, the rows left (no longer the table's distribution) violated t with no
    # class to merge with, and the run failed: "internal error: 1 classes violate the requested
    # privacy models (['k-anonymity', 't-closeness']); please report it"
    con.execute("CREATE OR REPLACE TABLE tz AS SELECT i AS id, (i * 37) % 101 AS a, CASE WHEN "
                "i < 30 THEN 'x' WHEN i < 38 THEN 'y' ELSE 'z' END AS s FROM range(40) r(i)")
    con.execute(f"CREATE OR REPLACE TABLE tz_out AS FROM k_anonymize('tz', k := 2, algo := "
                f"'{algo}', qi := ['a'], sensitive := 's', t := 0, t_distance := 'equal', "
                f"max_suppression := 0.1)")
    rows = con.execute("SELECT a_min, a_max, s, suppressed FROM tz_out").fetchall()
    published = [r for r in rows if not r[3]]
    n = len(rows)
    glob = {v: sum(r[2] == v for r in rows) / n for v in ("x", "y", "z")}
    for cls in {(r[0], r[1]) for r in published}:
        members = [r for r in published if (r[0], r[1]) == cls]
        dist = {v: sum(r[2] == v for r in members) / len(members) for v in glob}
        assert 0.5 * sum(abs(dist[v] - glob[v]) for v in glob) == pytest.approx(0.0, abs=1e-12)
    assert len(rows) == 40 and len(published) >= 36


def test_infeasible_model_is_a_clear_error(con):
    make_table(con, random.Random(3), 40)
    with pytest.raises(Exception, match="distinct l-diversity with l=5 is impossible.*lower l"):
        con.execute("FROM k_anonymize('src', k := 2, qi := ['age', 'z'], sensitive := 's', l := 5)"
                    ).fetchall()
    with pytest.raises(Exception, match="sensitive := .*'nope'|'nope'"):
        con.execute("FROM k_anonymize('src', k := 2, qi := ['age', 'z'], sensitive := 'nope', "
                    "l := 2)").fetchall()
    with pytest.raises(Exception, match="both a quasi-identifier and sensitive"):
        con.execute("FROM k_anonymize('src', k := 2, qi := ['age', 'z'], sensitive := 'z', "
                    "l := 2)").fetchall()


def test_two_sensitive_attributes_each_hold(con):
    make_table(con, random.Random(8), 120)
    con.execute("CREATE OR REPLACE TABLE out AS FROM k_anonymize('src', k := 2, qi := ['age', 'z'], "
                "sensitive := ['s', 'y'], l := 2)")
    for col in ("s", "y"):
        assert con.sql(f"SELECT l_diversity('out', ['age', 'z'], '{col}')").fetchall()[0][0][
            "distinct"] >= 2


def test_runs_record_the_models(con):
    make_table(con, random.Random(9), 60)
    con.execute("CREATE OR REPLACE TABLE out AS FROM k_anonymize('src', k := 2, qi := ['age', 'z'], "
                "sensitive := 's', l := 2, l_variant := 'entropy', t := 0.4)")
    import json
    params = json.loads(con.sql("SELECT params FROM kanon_runs WHERE run_id = "
                                "(SELECT any_value(kanon_run) FROM out)").fetchall()[0][0])
    names = [m.get("model") for m in params["models"]]
    assert names[:3] == ["k-anonymity", "entropy l-diversity", "t-closeness"]
    assert params["models"][2]["distance"] == {"s": "hierarchical"}
    assert params["l"] == 2 and params["t"] == 0.4


@pytest.mark.parametrize("seed, model_at, params", [
    (1, 1, {"t": 0.2, "t_distance": "equal"}),
    (196, 0, {"l": 2, "l_variant": "entropy"}),
])
def test_optimal_exact_when_models_are_not_monotone_under_suppression(con, seed, model_at, params):
    """Entropy l-diversity and t-closeness are not monotone under suppression: a coarser node can
    suppress more rows. optimal then drops its cone tags (privacy.compat); with them it returned
    a worse node than brute force on these tables (GCP 0.758 vs 0.654, 0.491 vs 0.357)."""
    from kanon_duckdb.algorithms.lattice.checker import NodeChecker
    from kanon_duckdb.algorithms.lattice.levels import build_space
    from kanon_duckdb.anonymize import anonymize
    from kanon_duckdb.privacy import spec_of
    rnd = random.Random(seed)
    make_table(con, rnd, rnd.randint(30, 90))
    k = [rnd.randint(2, 4) for _ in range(model_at + 1)][-1]
    params = {"sensitive": "s", **params, "max_suppression": 0.1, "loss": "gcp"}
    res = anonymize(con, "src", k=k, algo="optimal", qi=["age", "z"], params=params, record=False)
    assert res.partition.info["cone_tags"] == 0
    ch = NodeChecker(build_space(res.data), k, 0.1, "gcp", privacy=spec_of(res.data))
    best, node = checker_brute_force(ch)
    assert res.partition.info["loss"] == pytest.approx(best)
    assert tuple(res.partition.info["levels"]) == node


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 10_000), st.sampled_from([
    {"l": 2}, {"l": 2, "l_variant": "entropy"}, {"t": 0.3}, {"t": 0.2, "t_distance": "equal"}]),
    st.sampled_from([0.0, 0.1]), st.sampled_from(["log", "gcp", "dm"]))
def test_optimal_publishes_the_canonical_node_under_models(con, seed, model, ms, loss):
    """With l-diversity / t-closeness, with and without suppression (cone tags on or off), the
    published node is the brute-force canonical one: least loss, then height, then levels."""
    from kanon_duckdb.algorithms.lattice.checker import NodeChecker
    from kanon_duckdb.algorithms.lattice.levels import build_space
    from kanon_duckdb.anonymize import anonymize
    from kanon_duckdb.errors import InfeasibleError
    from kanon_duckdb.privacy import spec_of
    rnd = random.Random(seed)
    make_table(con, rnd, rnd.randint(30, 90))
    k = rnd.randint(2, 4)
    params = {"sensitive": "s", **model, "max_suppression": ms, "loss": loss}
    try:
        res = anonymize(con, "src", k=k, algo="optimal", qi=["age", "z"], params=params,
                        record=False)
    except InfeasibleError:
        return  # no feasible node: checked below only when one exists
    ch = NodeChecker(build_space(res.data), k, ms, loss, privacy=spec_of(res.data))
    best, node = checker_brute_force(ch)
    assert res.partition.info["loss"] == pytest.approx(best)
    assert tuple(res.partition.info["levels"]) == node


def checker_brute_force(ch):
    """(least loss, canonical node) over every node, each checked on its own."""
    feasible = [(lv, r.loss) for lv in itertools.product(*[range(int(h) + 1) for h in ch.heights])
                for r in [ch.check(lv)] if r.feasible]
    return min(v for _, v in feasible), canonical_node(feasible, ch.loss_name)


def test_model_an_algorithm_cannot_enforce_is_an_error_naming_the_able(con, monkeypatch):
    """A model declared not local_recoding cannot run under a local-recoding algorithm; the error
    names the algorithms that can (privacy.compat, driven by the declarations)."""
    from kanon_duckdb.privacy.models import EntropyLDiversity
    make_table(con, random.Random(4), 40)
    monkeypatch.setattr(EntropyLDiversity, "local_recoding", False)
    with pytest.raises(Exception, match=r"algo := 'kmember' cannot enforce .*entropy l-diversity is "
                                        r"not local recoding.*one of datafly, kgen, optimal, random"):
        con.execute("FROM k_anonymize('src', k := 2, algo := 'kmember', qi := ['age', 'z'], "
                    "sensitive := 's', l := 1.5, l_variant := 'entropy')").fetchall()
    # the lattice algorithms still run it
    con.execute("FROM k_anonymize('src', k := 2, algo := 'datafly', qi := ['age', 'z'], "
                "sensitive := 's', l := 1.5, l_variant := 'entropy')").fetchall()
    monkeypatch.setattr(EntropyLDiversity, "monotone_generalization", False)
    with pytest.raises(Exception, match=r"'optimal' cannot enforce.*not monotone generalization"
                                        r".*one of datafly, kgen, random"):
        con.execute("FROM k_anonymize('src', k := 2, algo := 'optimal', qi := ['age', 'z'], "
                    "sensitive := 's', l := 1.5, l_variant := 'entropy')").fetchall()


@pytest.mark.parametrize("algo", ["optimal", "datafly", "kgen", "random"])
def test_suppressed_duplicate_tuples_fewer_than_k_rows_publish(con, algo):
    """A full-domain run with a sensitive column reads a histogram of (QI, sensitive) tuples;
    its suppressed rows (2 < k, both one tuple 'B'/'s0') are published, not refused as a
    class of fewer than k rows (the safety check counted suppressed tuples against rows)."""
    con.execute("CREATE OR REPLACE TABLE dup_sup AS SELECT i AS id, "
                "CASE WHEN i < 20 THEN 'A' ELSE 'B' END AS zip, "
                "CASE WHEN i < 20 THEN 's' || (i % 3) ELSE 's0' END AS dis FROM range(22) r(i)")
    rows = con.execute(f"SELECT id, zip, suppressed, ec_size FROM k_anonymize('dup_sup', k := 5, "
                       f"algo := '{algo}', qi := ['zip'], sensitive := 'dis', l := 2, "
                       f"max_suppression := 0.1, seed := 1) ORDER BY id").fetchall()
    assert len(rows) == 22
    assert [r[0] for r in rows] == list(range(22))
    assert all(not r[2] and r[1] == "A" and r[3] == 20 for r in rows[:20])
    assert all(r[2] and r[1] == "*" for r in rows[20:])
