"""Which tree a QI uses: taxonomies := > '<table>.<column>' > '<column>' (taxonomy.store), recorded
per run in kanon_runs.qi_trees and read back by the SQL metrics and the query rewrite."""
import threading

import duckdb
import pytest

import kanon_duckdb
from kanon_duckdb.anonymize import anonymize
from kanon_duckdb.errors import InvalidParameterError, TaxonomyError
from kanon_duckdb.taxonomy import store

PATIENT_TREE = [("F", "FM"), ("M", "FM"), ("FM", "*"), ("X", "*"), ("*", None)]
ADULT_TREE = [("Male", "*"), ("Female", "*"), ("*", None)]


@pytest.fixture
def con():
    c = kanon_duckdb.connect()
    c.execute("CREATE TABLE adult AS SELECT * FROM (VALUES (30, 'Male'), (31, 'Female'), "
              "(32, 'Male'), (33, 'Female')) t(age, sex)")
    c.execute("CREATE TABLE patients AS SELECT * FROM (VALUES (40, 'F'), (41, 'M'), (42, 'X'), "
              "(43, 'F')) t(age, sex)")
    store.insert_edges(c, "sex", ADULT_TREE)
    store.insert_edges(c, "patients.sex", PATIENT_TREE)
    yield c
    c.close()


def test_resolution_order(con):
    store.insert_edges(con, "sex_v2", [("F", "*"), ("M", "*"), ("X", "*"), ("*", None)])
    assert store.resolve_tree_attr(con, "sex", "adult") == "sex"
    assert store.resolve_tree_attr(con, "sex", "patients") == "patients.sex"
    assert store.resolve_tree_attr(con, "sex", "main.patients") == "patients.sex"
    assert store.resolve_tree_attr(con, "sex", "data/patients.parquet") == "patients.sex"
    assert store.resolve_tree_attr(con, "sex", "PATIENTS") == "patients.sex"  # like identifiers
    assert store.resolve_tree_attr(con, "sex", "patients", {"sex": "sex_v2"}) == "sex_v2"
    assert store.resolve_tree_attr(con, "age", "patients") is None
    with pytest.raises(TaxonomyError, match="no rows with attr = 'nope'"):
        store.resolve_tree_attr(con, "sex", "patients", {"sex": "nope"})


def test_taxonomies_param_checked():
    assert store.check_taxonomies_param({"SEX": "v2"}, ["age", "sex"]) == {"sex": "v2"}
    assert store.check_taxonomies_param([("sex", "v2")], ["sex"]) == {"sex": "v2"}
    with pytest.raises(InvalidParameterError, match="'zip', which is not a quasi-identifier"):
        store.check_taxonomies_param({"zip": "v2"}, ["age", "sex"])
    with pytest.raises(InvalidParameterError, match="must be a kanon_taxonomy attr"):
        store.check_taxonomies_param({"sex": 3}, ["sex"])


def _labels(con, tbl):
    return sorted(r[0] for r in con.execute(f"SELECT DISTINCT sex FROM {tbl}").fetchall())


def test_two_tables_same_column_own_trees(con):
    con.execute("CREATE TABLE a2 AS FROM k_anonymize('adult', k := 2, qi := ['age', 'sex'])")
    con.execute("CREATE TABLE p2 AS FROM k_anonymize('patients', k := 2, qi := ['age', 'sex'])")
    # patients: classes {40 F, 41 M} -> FM, {42 X, 43 F} -> '*'
    assert con.execute("SELECT age_min, age_max, sex, count(*) FROM p2 GROUP BY ALL ORDER BY 1"
                       ).fetchall() == [(40, 41, "FM", 2), (42, 43, "*", 2)]
    assert set(_labels(con, "a2")) <= {"Male", "Female", "*"}
    assert con.execute("SELECT run_id, qi_trees FROM kanon_runs ORDER BY run_id").fetchall() == [
        (1, [None, "sex"]), (2, [None, "patients.sex"])]
    # sex NCP of p2 by hand: 2 rows at FM (2 of 3 leaves) + 2 rows at '*' (1), over 4 rows
    loss = dict(con.execute("SELECT qi, ncp FROM kanon_qi_loss('p2')").fetchall())
    assert loss["sex"] == pytest.approx((2 * 2 / 3 + 2 * 1.0) / 4)
    # the run's own per-QI loss (Python) agrees with the SQL metric over its recorded tree
    assert con.execute("SELECT qi_loss[2] FROM kanon_runs WHERE run_id = 2").fetchall()[0][0] \
        == pytest.approx(loss["sex"])


def test_named_tree_wins_and_metrics_follow_the_run(con):
    store.insert_edges(con, "sex_v2", [("F", "*"), ("M", "*"), ("X", "*"), ("*", None)])
    res = anonymize(con, "patients", k=2, qi=["age", "sex"], taxonomies={"sex": "sex_v2"})
    assert res.data.tree_attrs == {"sex": "sex_v2"}
    assert con.execute("SELECT qi_trees FROM kanon_runs WHERE run_id = ?",
                       [res.run_id]).fetchall()[0][0] == [None, "sex_v2"]
    # the tree of patients.sex changes later: the run's metrics still read sex_v2
    store.insert_edges(con, "patients.sex", [("F", "*"), ("M", "*"), ("X", "*"), ("Z", "*"),
                                             ("*", None)])
    con.execute("CREATE TABLE out AS SELECT 0 AS age_min, 1 AS age_max, '*' AS sex, 0 AS ec, "
                "false AS suppressed, ? AS kanon_run", [res.run_id])
    assert con.execute("SELECT ncp FROM kanon_qi_loss('out') WHERE qi = 'sex'"
                       ).fetchall()[0][0] == pytest.approx(1.0)
    assert con.execute("SELECT label, ncp FROM kanon_label_ncp('out') ORDER BY label").fetchall() \
        == [("*", 1.0), ("F", 0.0), ("M", 0.0), ("X", 0.0)]


def test_run_recorded_before_qi_trees_resolves_for_its_source(con):
    con.execute("CREATE TABLE p2 AS FROM k_anonymize('patients', k := 2, qi := ['age', 'sex'])")
    con.execute("UPDATE kanon_runs SET qi_trees = NULL")
    assert con.execute("SELECT cat_trees FROM (SELECT __kanon_meta('p2') AS m), "
                       "LATERAL (SELECT m.cat_trees)").fetchall()[0][0] == ["patients.sex"]
    assert store.run_tree_attrs(con, 1) == {"sex": "patients.sex"}


def test_query_rewrite_uses_the_run_tree(con):
    con.execute("CREATE TABLE p2 AS FROM k_anonymize('patients', k := 2, qi := ['age', 'sex'])")
    est = con.execute("SELECT anon_estimate FROM query_error('SELECT count(*) FROM patients "
                      "WHERE sex = ''F''', 'patients', 'p2')").fetchall()[0][0]
    # class FM: 2 rows spread over F, M -> 1; class '*': 2 rows over F, M, X -> 2/3
    assert est == pytest.approx(1 + 2 / 3)


def test_builders_take_tree_names(con):
    assert con.execute("SELECT kanon_build_flat('patients', 'sex', attr := 'flat_sex')"
                       ).fetchall()[0][0] == 4
    assert store.read_edges(con, "flat_sex") == [("F", "*"), ("M", "*"), ("X", "*"), ("*", None)]
    con.execute("SELECT kanon_build_intervals('patients', 'age', [2], attr := 'patients.age')")
    assert store.resolve_tree_attr(con, "age", "patients") == "patients.age"
    assert con.execute("SELECT kanon_check_taxonomy('patients', 'sex')").fetchall()[0][0] == "ok"
    with pytest.raises(Exception, match="missing from its taxonomy"):
        con.execute("SELECT kanon_check_taxonomy('patients', 'sex', attr := 'sex')").fetchall()


def test_concurrent_cursors_keep_their_trees(con):
    out, errors = {}, []

    def run(tbl):
        cur = con.cursor()
        try:
            out[tbl] = cur.execute(f"SELECT DISTINCT sex FROM k_anonymize('{tbl}', k := 2, "
                                   f"qi := ['age', 'sex'])").fetchall()
        except Exception as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            cur.close()

    threads = [threading.Thread(target=run, args=(t,)) for t in ("adult", "patients") * 2]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert {r[0] for r in out["patients"]} == {"FM", "*"}
    assert {r[0] for r in out["adult"]} <= {"Male", "Female", "*"}
    trees = con.execute("SELECT source, qi_trees[2] FROM kanon_runs").fetchall()
    assert sorted(set(trees)) == [("adult", "sex"), ("patients", "patients.sex")]


def test_taxonomies_argument_in_sql(con):
    store.insert_edges(con, "sex_v2", [("F", "*"), ("M", "*"), ("X", "*"), ("*", None)])
    for arg in ("MAP {'sex': 'sex_v2'}", "{'sex': 'sex_v2'}"):  # MAP or STRUCT
        labels = {r[0] for r in con.execute(
            f"SELECT DISTINCT sex FROM k_anonymize('patients', k := 2, qi := ['age', 'sex'], "
            f"taxonomies := {arg})").fetchall()}
        assert labels == {"*"}  # flat sex_v2: every 2-class of mixed sexes goes to the root
    assert con.execute("SELECT DISTINCT qi_trees FROM kanon_runs").fetchall() == [([None, "sex_v2"],)]
    with pytest.raises(Exception, match="no rows with attr = 'sex_v3'"):
        con.execute("FROM k_anonymize('patients', k := 2, qi := ['age', 'sex'], "
                    "taxonomies := MAP {'sex': 'sex_v3'})").fetchall()
    with pytest.raises(Exception, match="'zip', which is not a quasi-identifier"):
        con.execute("FROM k_anonymize('patients', k := 2, qi := ['age', 'sex'], "
                    "taxonomies := MAP {'zip': 'sex_v2'})").fetchall()


def test_sql_macros_resolve_trees_like_k_anonymize(con):
    """t_closeness's hierarchical distance finds the sensitive attribute's tree through the same
    resolution (qualified names, outputs of k_anonymize resolving through their source)."""
    con.execute("ALTER TABLE patients ADD COLUMN diag VARCHAR")
    con.execute("UPDATE patients SET diag = CASE WHEN age < 42 THEN 'flu' ELSE 'cold' END")
    store.insert_edges(con, "patients.diag", [("flu", "resp"), ("cold", "resp"), ("resp", "*"),
                                             ("*", None)])
    con.execute("CREATE TABLE p2 AS FROM k_anonymize('patients', k := 2, qi := ['age', 'sex'])")
    assert con.execute("SELECT __kanon_tree_attr('main.patients', 'diag'), "
                       "__kanon_tree_attr('p2', 'diag'), __kanon_tree_attr('p2', 'sex'), "
                       "__kanon_tree_attr('adult', 'sex'), __kanon_tree_attr('adult', 'age')"
                       ).fetchall()[0] == ("patients.diag", "patients.diag", "patients.sex", "sex", None)
    default, hier, equal = con.execute(
        "SELECT t_closeness('main.patients', ['age'], 'diag'), "
        "t_closeness('main.patients', ['age'], 'diag', distance := 'hierarchical'), "
        "t_closeness('main.patients', ['age'], 'diag', distance := 'equal')").fetchall()[0]
    assert default == pytest.approx(hier) and hier != pytest.approx(equal)


def test_relation_names_of_files_and_reader_calls():
    assert store.relation_name("s3://bucket/dir/patients.parquet") == "patients"
    assert store.relation_name("data/*.csv") is None  # a glob names no table
    assert store.relation_name("read_csv('data/patients.csv', delim = ';')") == "patients"
    assert store.relation_name('"My Db".main."Pat.ients"') == "Pat.ients"


def test_file_source_uses_its_table_tree(con, tmp_path):
    path = tmp_path / "patients.parquet"
    con.execute(f"COPY patients TO '{path}'")
    got = {r[0] for r in con.execute(
        f"SELECT DISTINCT sex FROM k_anonymize('{path}', k := 2, qi := ['age', 'sex'])").fetchall()}
    assert got == {"FM", "*"}
    assert con.execute("SELECT qi_trees FROM kanon_runs").fetchall()[0][0] == [None, "patients.sex"]


@pytest.mark.parametrize("algo", ["mondrian", "optimal", "datafly"])
def test_root_only_tree_over_an_all_null_column(algo):
    """A tree of one root row ('*', NULL) for a column holding only NULLs: the NULL leaf goes
    under the root, rows are anonymized (was KeyError: '*'); a data value '*' next to NULLs
    under such a tree is refused by name (it can be neither the root nor a leaf)."""
    c = kanon_duckdb.connect()
    c.execute("CREATE TABLE nt (id INTEGER, q0 INTEGER, q1 VARCHAR)")
    c.execute("INSERT INTO nt VALUES (0, 1, NULL), (1, 1, NULL), (2, 5, NULL)")
    c.execute("INSERT INTO kanon_taxonomy VALUES ('q1', '*', NULL)")
    rows = c.execute(f"SELECT id, q1, suppressed FROM k_anonymize('nt', k := 3, algo := '{algo}', "
                     f"qi := ['q0', 'q1']) ORDER BY id").fetchall()
    assert [r[0] for r in rows] == [0, 1, 2] and all(r[1] in (None, "*") for r in rows)
    c.execute("INSERT INTO nt VALUES (3, 2, '*')")
    with pytest.raises(duckdb.Error, match="q1"):
        c.execute(f"FROM k_anonymize('nt', k := 2, algo := '{algo}', qi := ['q0', 'q1'])").fetchall()
    c.close()


def _per_qi(con, columns, table, taxonomies=None):
    """resolve_tree_attr per QI and read_index per picked tree: what resolve_trees replaces."""
    chosen = {c: store.resolve_tree_attr(con, c, table, taxonomies) for c in columns}
    return chosen, {a: store.read_index(con, a) for a in set(chosen.values()) if a is not None}


def _same_trees(a: dict, b: dict):
    assert sorted(a) == sorted(b)
    for attr in a:
        assert a[attr].labels == b[attr].labels
        assert a[attr].leaf_of_label == b[attr].leaf_of_label
        assert (a[attr].parent == b[attr].parent).all() and (a[attr].anc == b[attr].anc).all()


@pytest.mark.parametrize("table,columns,taxonomies", [
    ("adult", ["sex", "age"], None),
    ("patients", ["sex", "age"], None),
    ("PATIENTS", ["sex"], None),                  # the relation's name case-insensitively
    ("data/patients.parquet", ["sex"], None),
    ("patients", ["sex"], {"sex": "SEX_V2"}),     # a named tree case-insensitively
    ("patients", ["sex", "age"], {"age": "age_t"}),
    ("ünïcode", ["sex"], {"sex": "Séx"}),         # non-ASCII names: the two-query path
])
def test_resolve_trees_picks_and_reads_what_resolve_tree_attr_does(con, table, columns, taxonomies):
    store.insert_edges(con, "sex_v2", [("F", "*"), ("M", "*"), ("X", "*"), ("*", None)])
    store.insert_edges(con, "AGE_T", [("40", "*"), ("41", "*"), ("*", None)])
    store.insert_edges(con, "séx", [("F", "*"), ("M", "*"), ("*", None)])
    chosen, indexes = store.resolve_trees(con, columns, table, taxonomies)
    want_chosen, want_indexes = _per_qi(con, columns, table, taxonomies)
    assert chosen == want_chosen
    _same_trees(indexes, want_indexes)


def test_resolve_trees_ambiguous_case_and_missing_named_tree(con):
    # two attrs equal but for case: neither matches case-insensitively (resolve_tree_attr's rule)
    store.insert_edges(con, "Patients.SEX", PATIENT_TREE)
    store.insert_edges(con, "PATIENTS.sex", PATIENT_TREE)
    assert store.resolve_trees(con, ["SEX"], "patients")[0] == {
        "SEX": store.resolve_tree_attr(con, "SEX", "patients")}
    with pytest.raises(TaxonomyError, match="no rows with attr = 'nope'"):
        store.resolve_trees(con, ["sex"], "patients", {"sex": "nope"})
    empty = duckdb.connect()  # no kanon_taxonomy table at all
    assert store.resolve_trees(empty, ["sex"], "t") == ({"sex": None}, {})
    empty.close()


def test_a_tree_changed_between_statements_is_the_one_used(con):
    """The per-process index cache (store.cached_index) is keyed by the rows read: a tree edited
    between two statements is read, validated and used anew, never the cached one."""
    q = "SELECT DISTINCT sex FROM k_anonymize('patients', k := 2, qi := ['age', 'sex']) ORDER BY 1"
    assert con.execute(q).fetchall() == [("*",), ("FM",)]
    store.insert_edges(con, "patients.sex",
                       [("F", "FX"), ("X", "FX"), ("FX", "*"), ("M", "*"), ("*", None)])
    # patients: ages 40 F, 41 M, 42 X, 43 F -> classes {40 F, 41 M} -> '*', {42 X, 43 F} -> FX
    assert con.execute(q).fetchall() == [("*",), ("FX",)]
    con.execute("UPDATE kanon_taxonomy SET parent = 'FM' WHERE attr = 'patients.sex' "
                "AND child = 'M'")  # M under FM, a node that is nobody's child: two roots
    with pytest.raises(duckdb.Error, match="root"):
        con.execute(q).fetchall()
    store.insert_edges(con, "patients.sex", PATIENT_TREE)  # the first tree again: cached, same labels
    assert con.execute(q).fetchall() == [("*",), ("FM",)]


def test_readers_of_an_earlier_output_refuse_its_tree_edited_in_place(con):
    """kanon_runs.qi_tree_hashes fingerprints each tree a run used: a tree edited in place under
    the same attr would silently change the earlier output's metrics (here gcp 0.5833 ->
    0.6667), query answers and mapping, so every reader refuses it, naming the fix."""
    con.execute("CREATE TABLE p_out AS FROM k_anonymize('patients', k := 2, qi := ['age', 'sex'])")
    con.execute("CREATE TABLE p_full AS FROM k_anonymize('patients', k := 2, algo := 'optimal', "
                "qi := ['age', 'sex'])")
    run = con.execute("SELECT max(kanon_run) FROM p_out").fetchall()[0][0]
    # classes {40 F, 41 M} -> FM (2 of 3 leaves), {42 X, 43 F} -> *: gcp 0.5833
    assert con.execute("SELECT gcp('p_out')").fetchall()[0][0] == pytest.approx(7 / 12)
    mapping = con.execute("FROM kanon_mapping('p_full') ORDER BY ALL").fetchall()
    store.insert_edges(con, "patients.sex",  # same labels, FM now covers all three leaves
                       [("F", "FM"), ("M", "FM"), ("X", "FM"), ("FM", "*"), ("*", None)])
    want = (f"the tree 'patients.sex' \\(of QI 'sex'\\) changed in kanon_taxonomy since run "
            f"{run} recorded it; its metrics, query answers and mapping would change: restore "
            f"the tree, or build the revised tree under a new attr \\(e.g. 'patients.sex_v2'\\)")
    for q in ("SELECT gcp('p_out')", "SELECT total_il('p_out')",
              "FROM query_error('SELECT sex, count(*) FROM patients GROUP BY sex', 'patients', "
              "'p_out')"):
        with pytest.raises(duckdb.Error, match=want):
            con.execute(q).fetchall()
    with pytest.raises(duckdb.Error, match="changed in kanon_taxonomy since run"):
        con.execute("FROM kanon_mapping('p_full')").fetchall()
    # the tree restored (rows in another order: the fingerprint is over the rows as a set)
    store.insert_edges(con, "patients.sex", list(reversed(PATIENT_TREE)))
    assert con.execute("SELECT gcp('p_out')").fetchall()[0][0] == pytest.approx(7 / 12)
    assert con.execute("FROM kanon_mapping('p_full') ORDER BY ALL").fetchall() == mapping


def test_an_unchanged_tree_or_a_new_attr_keeps_an_earlier_outputs_metrics(con):
    con.execute("CREATE TABLE p_out AS FROM k_anonymize('patients', k := 2, qi := ['age', 'sex'])")
    q = "SELECT gcp('p_out'), total_il('p_out'), gen_total_il('p_out')"
    before = con.execute(q).fetchall()
    store.insert_edges(con, "patients.sex", PATIENT_TREE)  # rewritten, same rows
    store.insert_edges(con, "patients.sex_v2",  # the revised tree under a new attr
                       [("F", "FM"), ("M", "FM"), ("X", "FM"), ("FM", "*"), ("*", None)])
    assert con.execute(q).fetchall() == before
    con.execute("CREATE TABLE p_v2 AS FROM k_anonymize('patients', k := 2, qi := ['age', 'sex'], "
                "taxonomies := {'sex': 'patients.sex_v2'})")
    assert con.execute(q).fetchall() == before
    hashes = con.execute("SELECT qi_trees, qi_tree_hashes FROM kanon_runs ORDER BY run_id").fetchall()
    assert [h[0] for h in hashes] == [[None, "patients.sex"], [None, "patients.sex_v2"]]
    assert hashes[0][1][0] is None and hashes[0][1][1] != hashes[1][1][1]
    assert hashes[0][1][1] == store.tree_fingerprints(con, ["patients.sex"])["patients.sex"]


def test_a_run_recorded_without_fingerprints_keeps_reading_the_current_tree(con):
    con.execute("CREATE TABLE p_out AS FROM k_anonymize('patients', k := 2, qi := ['age', 'sex'])")
    con.execute("UPDATE kanon_runs SET qi_tree_hashes = NULL")  # as an earlier version recorded it
    store.insert_edges(con, "patients.sex",
                       [("F", "FM"), ("M", "FM"), ("X", "FM"), ("FM", "*"), ("*", None)])
    assert con.execute("SELECT gcp('p_out')").fetchall()[0][0] == pytest.approx(2 / 3)


class _NoQueries:
    """A connection stand-in that fails any statement: what a call made through it did not run."""

    def execute(self, *args, **kwargs):
        raise AssertionError(f"unexpected statement {args[0]!r}")


def test_a_runs_tree_fingerprints_are_of_the_rows_it_read_and_cost_no_query_when_seen(con):
    """A run records the fingerprint of each tree's rows as its encoding read them
    (TaxonomyIndex.rows, kept by with_null_leaf): looked up in a per-process memo filled by the
    fingerprint query together with the rows it hashed, so an unchanged tree costs no query and
    an edited one (other rows, or the same rows in another order) is fingerprinted anew."""
    con.execute("INSERT INTO patients VALUES (44, NULL), (45, 'M')")  # the NULL leaf: a copy
    q = "CREATE OR REPLACE TABLE p_out AS FROM k_anonymize('patients', k := 2, qi := ['age', 'sex'])"
    last = "SELECT qi_tree_hashes[2] FROM kanon_runs ORDER BY run_id DESC LIMIT 1"
    con.execute(q)
    first = con.execute(last).fetchall()[0][0]
    assert first == store.tree_fingerprints(con, ["patients.sex"])["patients.sex"]
    rows = tuple(PATIENT_TREE)
    # the rows read are the memo's key: no statement for them, whatever connection
    assert store.tree_fingerprints(_NoQueries(), ["patients.sex"], {"patients.sex": rows}) == \
        {"patients.sex": first}
    index = store.read_indexes(con, ["patients.sex"])["patients.sex"]
    assert index.rows == rows and index.with_null_leaf().rows == rows
    con.execute(q)
    assert con.execute(last).fetchall()[0][0] == first
    edited = [("F", "FM"), ("M", "FM"), ("X", "FM"), ("FM", "*"), ("*", None)]
    store.insert_edges(con, "patients.sex", edited)
    con.execute(q)
    second = con.execute(last).fetchall()[0][0]
    assert second != first
    assert second == store.tree_fingerprints(con, ["patients.sex"])["patients.sex"]
    # the first tree again, its rows in another order: not the memo's key, the same fingerprint
    store.insert_edges(con, "patients.sex", list(reversed(PATIENT_TREE)))
    with pytest.raises(AssertionError, match="unexpected statement"):
        store.tree_fingerprints(_NoQueries(), ["patients.sex"],
                                {"patients.sex": tuple(reversed(PATIENT_TREE))})
    con.execute(q)
    assert con.execute(last).fetchall()[0][0] == first
    # rows a run read that the table no longer holds: the fingerprint of the rows there now
    assert store.tree_fingerprints(con, ["patients.sex"], {"patients.sex": (("F", "*"),)}) == \
        {"patients.sex": first}


def test_the_tree_caches_stay_bounded_and_right_under_parallel_runs():
    """store.cached_index and the fingerprint memo are shared by runs of parallel statements:
    many threads adding more trees than are kept get each its own tree's index, and the caches
    never hold more than _INDEXES_KEPT entries."""
    errors, wrong = [], []

    def work(t):
        try:
            for i in range(200):
                edges = [(f"v{t}_{i}", "*"), ("*", None)]
                index = store.cached_index(f"a{t}_{i}", edges)
                if index.leaf_labels() != [f"v{t}_{i}"] or index.rows != tuple(edges):
                    wrong.append((t, i))
                store._keep(store._FINGERPRINTS, (f"a{t}_{i}", tuple(edges)), str(i))
        except Exception as exc:  # noqa: BLE001 - any error of a thread fails the test
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(t,)) for t in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert errors == [] and wrong == []
    assert len(store._INDEXES) <= store._INDEXES_KEPT
    assert len(store._FINGERPRINTS) <= store._INDEXES_KEPT


def test_readers_of_an_earlier_output_refuse_its_tree_deleted(con):
    """A tree a run used (kanon_runs.qi_trees) deleted since: the readers would measure the
    earlier output against the implicit flat tree (gcp 7/12 -> 5/12 here, silently),
    so every one refuses it, naming the tree, the QI, the run and the fix, also for a run
    recorded without fingerprints; the tree restored, they read it again."""
    con.execute("CREATE TABLE p_out AS FROM k_anonymize('patients', k := 2, qi := ['age', 'sex'])")
    con.execute("CREATE TABLE p_full AS FROM k_anonymize('patients', k := 2, algo := 'optimal', "
                "qi := ['age', 'sex'])")
    run = con.execute("SELECT max(kanon_run) FROM p_out").fetchall()[0][0]
    assert con.execute("SELECT gcp('p_out')").fetchall()[0][0] == pytest.approx(7 / 12)
    con.execute("DELETE FROM kanon_taxonomy WHERE attr = 'patients.sex'")
    want = (f"the tree 'patients.sex' \\(of QI 'sex'\\) that run {run} used is no longer in "
            f"kanon_taxonomy; its metrics, query answers and mapping need it: restore the tree "
            f"\\(the same rows under attr 'patients.sex'\\), or anonymize again")
    for q in ("SELECT gcp('p_out')", "SELECT total_il('p_out')",
              "FROM query_error('SELECT sex, count(*) FROM patients GROUP BY sex', 'patients', "
              "'p_out')"):
        with pytest.raises(duckdb.Error, match=want):
            con.execute(q).fetchall()
    with pytest.raises(duckdb.Error, match="is no longer in kanon_taxonomy"):
        con.execute("FROM kanon_mapping('p_full')").fetchall()
    con.execute("UPDATE kanon_runs SET qi_tree_hashes = NULL")  # as an earlier version recorded it
    with pytest.raises(duckdb.Error, match="is no longer in kanon_taxonomy"):
        con.execute("SELECT gcp('p_out')").fetchall()
    # metrics that read no tree still answer
    assert con.execute("SELECT discernibility('p_out')").fetchall()[0][0] == 8
    store.insert_edges(con, "patients.sex", PATIENT_TREE)
    assert con.execute("SELECT gcp('p_out')").fetchall()[0][0] == pytest.approx(7 / 12)
