"""Privacy models (kanon_duckdb/privacy): hand-computed model values, the EMD kernels against
the transport linear program, the SQL checks against the same definitions, and errors."""
import math

import naive_metrics as naive
import numpy as np
import pytest

import kanon_duckdb
from kanon_duckdb.errors import InvalidParameterError
from kanon_duckdb.privacy import (
    DistinctLDiversity,
    EntropyLDiversity,
    RecursiveCLDiversity,
    parse_models,
)
from kanon_duckdb.privacy import _kernels as K

# Li, Li, Venkatasubramanian 2007, Figure 2 (disease hierarchy; every leaf at depth 3)
DISEASE_TREE = [
    ("Respiratory system", "Respiratory&digestive"), ("Digestive system", "Respiratory&digestive"),
    ("Respiratory infection", "Respiratory system"), ("Vascular lung", "Respiratory system"),
    ("Stomach", "Digestive system"), ("Colon", "Digestive system"),
    ("flu", "Respiratory infection"), ("pneumonia", "Respiratory infection"),
    ("bronchitis", "Respiratory infection"), ("pulmonary edema", "Vascular lung"),
    ("pulmonary embolism", "Vascular lung"), ("gastric ulcer", "Stomach"),
    ("gastritis", "Stomach"), ("stomach cancer", "Stomach"), ("colitis", "Colon"),
    ("colon cancer", "Colon"),
]
LEAVES = ["flu", "pneumonia", "bronchitis", "pulmonary edema", "pulmonary embolism",
          "gastric ulcer", "gastritis", "stomach cancer", "colitis", "colon cancer"]
# Li et al.'s Table 3: (salary in K, disease) of 9 patients
PATIENTS = [(3, "gastric ulcer"), (4, "gastritis"), (5, "stomach cancer"), (6, "gastritis"),
            (11, "flu"), (8, "bronchitis"), (7, "bronchitis"), (9, "pneumonia"),
            (10, "stomach cancer")]


@pytest.fixture
def con():
    c = kanon_duckdb.connect()
    yield c
    c.close()


def test_entropy_l_hand_computed():
    # counts (1, 2, 1): H = -(2 * 1/4 ln 1/4 + 1/2 ln 1/2) = 1.5 ln 2, exp(H) = 2^1.5
    assert EntropyLDiversity(2).value([1, 2, 1]) == pytest.approx(2 ** 1.5)
    assert EntropyLDiversity(2).value([5, 0, 5]) == pytest.approx(2.0)
    assert EntropyLDiversity(2).value([7]) == pytest.approx(1.0)


def test_distinct_and_recursive_l_hand_computed():
    assert DistinctLDiversity(2).value([3, 0, 2, 1]) == 3
    # r = (3, 2, 1): c = 2: 3 < 2*6, 3 < 2*3, not 3 < 2*1 -> l = 2; c = 1: 3 < 6 only -> l = 1
    assert RecursiveCLDiversity(2, 2).value([1, 3, 2]) == 2
    assert RecursiveCLDiversity(1, 2).value([1, 3, 2]) == 1
    assert RecursiveCLDiversity(0.5, 2).value([1, 3, 2]) == 0
    for counts in ([4, 4, 1], [1], [2, 2, 2, 2], [9, 1, 1, 1]):
        for c in (0.5, 1, 2, 3.5):
            assert RecursiveCLDiversity(c, 1).value(counts) == naive.recursive_l(counts, c)


def _salary_spec():
    m = 9  # 3K .. 11K
    return np.full(m, 1 / m)


def test_emd_ordered_li_et_al_example():
    # Li et al. 2007 §4: salaries 3K..11K, the class {3K, 4K, 5K}: EMD 0.375; {6K, 8K, 11K}: 0.167
    p = _salary_spec()
    low = np.array([1, 1, 1, 0, 0, 0, 0, 0, 0], dtype=float)
    assert K.emd_ordered(low, 0, 9, 3.0, p) == pytest.approx(0.375)
    spread = np.array([0, 0, 0, 1, 0, 1, 0, 0, 1], dtype=float)
    assert K.emd_ordered(spread, 0, 9, 3.0, p) == pytest.approx(1 / 6)
    ground = [[abs(i - j) / 8 for j in range(9)] for i in range(9)]
    for q in (low, spread):
        assert K.emd_ordered(q, 0, 9, 3.0, p) == pytest.approx(
            naive.emd_transport(p, q / 3, ground), abs=1e-9)


def test_emd_equal_hand_computed():
    p = np.array([0.5, 0.25, 0.25])
    q = np.array([2.0, 0.0, 0.0])   # class of 2 rows, both value 0
    assert K.emd_equal(q, 0, 3, 2.0, p) == pytest.approx(0.5)
    ground = [[0 if i == j else 1 for j in range(3)] for i in range(3)]
    assert naive.emd_transport(p, q / 2, ground) == pytest.approx(0.5)


def _disease_arrays():
    from kanon_duckdb.taxonomy.tree import build_index
    tree = build_index("disease", DISEASE_TREE)
    h = tree.height
    return tree, (tree.parent.astype(np.int32), tree.leaf_node.astype(np.int32),
                  tree.sub_height / h, np.argsort(-tree.depth, kind="stable").astype(np.int32))


def _disease_p(tree):
    p = np.zeros(tree.leaf_count)
    for _, d in PATIENTS:
        p[tree.leaf_of_label[d]] += 1 / len(PATIENTS)
    return p


def test_emd_hierarchical_hand_computed():
    tree, (parent, leaf, weight, order) = _disease_arrays()
    assert tree.height == 3
    p = _disease_p(tree)
    scr = np.empty((3, tree.n_nodes))
    # class {gastric ulcer, gastritis, stomach cancer}: all 4/9 of excess mass sits under
    # 'Stomach' and must move to 'Respiratory infection' (LCA = root, distance 3/3): 4/9
    q = np.zeros(tree.leaf_count)
    for d in ("gastric ulcer", "gastritis", "stomach cancer"):
        q[tree.leaf_of_label[d]] += 1
    assert K.emd_hierarchical(q, 0, q.size, 3.0, p, parent, leaf, weight, order, scr) == \
        pytest.approx(4 / 9)
    # class {gastritis, flu, bronchitis}: p - q = gastric ulcer 1/9, gastritis -1/9, stomach
    # cancer 2/9, flu -2/9, bronchitis -1/9, pneumonia 1/9: 'Stomach' +2/9 (cost 1/3 * 1/9
    # inside it), 'Respiratory infection' -2/9 (1/3 * 1/9 inside), root moves 2/9 -> 1/27 * 2 + 2/9
    q = np.zeros(tree.leaf_count)
    for d in ("gastritis", "flu", "bronchitis"):
        q[tree.leaf_of_label[d]] += 1
    assert K.emd_hierarchical(q, 0, q.size, 3.0, p, parent, leaf, weight, order, scr) == \
        pytest.approx(2 / 27 + 2 / 9)


@pytest.mark.parametrize("members", [(0, 1, 2), (3, 4, 5), (6, 7, 8), (0, 4, 8), (1, 1, 5, 7)])
def test_emd_hierarchical_matches_transport_program(members):
    tree, (parent, leaf, weight, order) = _disease_arrays()
    p = _disease_p(tree)
    q = np.zeros(tree.leaf_count)
    for i in members:
        q[tree.leaf_of_label[PATIENTS[i][1]]] += 1
    labels = tree.leaf_labels()
    ground = naive.tree_ground(labels, dict(DISEASE_TREE))
    got = K.emd_hierarchical(q, 0, q.size, float(len(members)), p, parent, leaf, weight, order,
                             np.empty((3, tree.n_nodes)))
    assert got == pytest.approx(naive.emd_transport(p, q / len(members), ground), abs=1e-9)


def _patients_table(con):
    con.execute("CREATE TABLE pat (grp INTEGER, salary INTEGER, disease VARCHAR)")
    groups = [1, 1, 1, 2, 2, 2, 3, 3, 3]  # Li et al.'s Table 4 classes
    con.executemany("INSERT INTO pat VALUES (?, ?, ?)",
                    [(g, s, d) for g, (s, d) in zip(groups, PATIENTS)])


def test_sql_t_closeness_each_distance_hand_computed(con):
    _patients_table(con)
    # no tree yet: a categorical attribute defaults to the equal distance
    # class 1: q = 1/3 on 3 values, p has 1/9, 2/9, 2/9 there: 1/2 (2/9 + 1/9 + 1/9 + 4/9) = 4/9
    assert con.execute("SELECT t_closeness('pat', ['grp'], 'disease')").fetchall()[0][0] == \
        pytest.approx(4 / 9)
    con.executemany("INSERT INTO kanon_taxonomy VALUES ('disease', ?, ?)", DISEASE_TREE)
    tree, (parent, leaf, weight, order) = _disease_arrays()
    p = _disease_p(tree)
    want = 0.0
    for g in (1, 2, 3):
        q = np.zeros(tree.leaf_count)
        for i in range(3 * (g - 1), 3 * g):
            q[tree.leaf_of_label[PATIENTS[i][1]]] += 1
        want = max(want, K.emd_hierarchical(q, 0, q.size, 3.0, p, parent, leaf, weight, order,
                                            np.empty((3, tree.n_nodes))))
    got = con.execute("SELECT t_closeness('pat', ['grp'], 'disease')").fetchall()[0][0]
    assert got == pytest.approx(want) and want == pytest.approx(4 / 9)
    got_eq = con.execute("SELECT t_closeness('pat', ['grp'], 'disease', distance := 'equal')"
                         ).fetchall()[0][0]
    assert got_eq == pytest.approx(4 / 9)
    # salary is numeric: ordered distance over the 9 distinct salaries; class 1 = {3K, 4K, 5K}
    assert con.execute("SELECT t_closeness('pat', ['grp'], 'salary')").fetchall()[0][0] == \
        pytest.approx(0.375)
    with pytest.raises(Exception, match="distance must be"):
        con.execute("SELECT t_closeness('pat', ['grp'], 'disease', distance := 'manhattan')").fetchall()


def test_sql_recursive_l_diversity(con):
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES (1, 'a'), (1, 'a'), (1, 'a'), (1, 'b'), "
                "(1, 'b'), (1, 'c'), (2, 'a'), (2, 'b')) t(x, s)")
    # class 1: r = (3, 2, 1) -> c=2: l=2; class 2: r = (1, 1) -> c=2: l=2 (1 < 2*1)
    got = con.execute("SELECT l_diversity('r', ['x'], 's', c := 2)").fetchall()[0][0]
    assert got["recursive"] == 2 and got["distinct"] == 2
    got = con.execute("SELECT l_diversity('r', ['x'], 's', c := 1)").fetchall()[0][0]
    assert got["recursive"] == 1  # class 2: 1 < 1*2 (l=1) but not 1 < 1*1


@pytest.mark.parametrize("params, match", [
    ({"l": 2}, "sensitive"),
    ({"sensitive": "s", "l": 2, "l_variant": "nope"}, "'l_variant'.* must be one of"),
    ({"sensitive": "s", "l_variant": "entropy"}, "needs l :="),
    ({"sensitive": "s", "l": 2, "l_variant": "recursive"}, "needs c :="),
    ({"sensitive": "s", "l": 2, "c": 3}, "c := applies"),
    ({"sensitive": "s", "t": 1.5}, r"'t'.* must be a number in \[0, 1\], got 1.5"),
    ({"sensitive": "s", "t_distance": "equal"}, "needs t :="),
    ({"sensitive": "s", "t": 0.2, "t_distance": "cosine"}, "'t_distance'.* must be one of"),
    ({"max_risk": 0}, r"'max_risk'.* must be a number in \(0, 1\]"),
    ({"sensitive": "s", "l": 2.5}, "whole number"),
    ({"sensitive": "s", "l": 2.5, "l_variant": "distinct"}, "distinct l-diversity needs a whole"),
    ({"sensitive": "s", "l": 2.5, "l_variant": "recursive", "c": 3},
     r"recursive \(c,l\)-diversity needs a whole number l .*got 2.5"),
    ({"sensitive": "s", "l": "2.5", "l_variant": "recursive", "c": 3}, "whole number"),
    # verify7: an infinite l raised "OverflowError: cannot convert float infinity to integer"
    ({"sensitive": "s", "l": float("inf")}, "needs a finite l"),
    ({"sensitive": "s", "l": "inf", "l_variant": "recursive", "c": 3}, "needs a finite l"),
    ({"sensitive": "s", "l": float("inf"), "l_variant": "entropy"}, "needs a finite l"),
])
def test_bad_model_parameters_are_named(params, match):
    with pytest.raises(InvalidParameterError, match=match):
        parse_models(params, 2)


def test_entropy_l_and_recursive_c_may_be_real_numbers():
    """As in ARX (EntropyLDiversity(String, double l); RecursiveCLDiversity(String, double c,
    int l)): entropy l and recursive c are real numbers, distinct and recursive l whole."""
    models, _, _ = parse_models({"sensitive": "s", "l": 2.5, "l_variant": "entropy"}, 2)
    assert models[1].l == 2.5
    models, _, _ = parse_models({"sensitive": "s", "l": 3.0, "l_variant": "recursive",
                                 "c": 0.5}, 2)
    assert (models[1].c, models[1].l) == (0.5, 3)


def test_model_declarations():
    models, sens, _ = parse_models({"sensitive": "['a', 'b']", "l": "3", "l_variant": "entropy",
                                    "t": "0.2", "max_risk": "0.25", "avg_risk": "0.1"}, 2)
    assert sens == ["a", "b"]
    assert [type(m).__name__ for m in models] == ["KAnonymity", "EntropyLDiversity", "TCloseness",
                                                  "MaxRisk", "AvgRisk"]
    assert max(m.min_class_size for m in models) == 10  # avg_risk 0.1 -> classes of >= 10
    assert all(m.monotone_generalization and m.local_recoding for m in models)
    # size-based models and distinct l are monotone under suppression; entropy l and t are not
    assert [m.monotone_suppression for m in models] == [True, False, False, True, True]
    assert math.isclose(models[2].t, 0.2)


def test_journalist_and_marketer_risk_hand_computed(con):
    con.execute("CREATE TABLE r AS SELECT * FROM (VALUES (1), (2), (2), (3), (3), (3), (3), (3)) t(x)")
    con.execute("CREATE TABLE popu AS SELECT * FROM (VALUES (1), (1), (2), (2), (2), (2), (3), (3), "
                "(3), (3), (3), (3), (4)) t(x)")
    one = lambda e: con.execute(f"SELECT {e}").fetchall()[0][0]
    alone = one("reidentification_risk('r', ['x'])")
    # the table is its own population: journalist = prosecutor max, marketer = classes / records
    assert alone["journalist_risk"] == 1.0 and alone["marketer_risk"] == pytest.approx(3 / 8)
    got = one("reidentification_risk('r', ['x'], population := 'popu')")
    # f = (1, 2, 5), F = (2, 4, 6): journalist 1 / min F; marketer (1/2 + 2/4 + 5/6) / 8
    assert got["journalist_risk"] == pytest.approx(0.5)
    assert got["marketer_risk"] == pytest.approx((1 / 2 + 2 / 4 + 5 / 6) / 8)
    assert got["max_risk"] == 1.0 and got["avg_risk"] == pytest.approx(3 / 8)
