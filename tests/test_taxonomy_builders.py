"""Taxonomy builders, the kanon_taxonomy store, SQL wrappers and the Adult example."""
import re
from decimal import Decimal
from fractions import Fraction

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kanon_duckdb.errors import InvalidParameterError, TaxonomyError, UnknownObjectError
from kanon_duckdb.sqlutil import quote_ident, resolve_table
from kanon_duckdb.taxonomy import (arx_hierarchy_edges, build_index, date_edges, flat_edges,
                                   interval_edges, masking_edges, store)


# --------------------------------------------------------------------------- pure builders

def test_arx_edges_in_file_order():
    text = "Private;Non-Gov;*\nFederal;Gov;*\nSelf-emp;Non-Gov;*\n"
    assert arx_hierarchy_edges(text) == [
        ("Private", "Non-Gov"), ("Non-Gov", "*"), ("Federal", "Gov"), ("Gov", "*"),
        ("Self-emp", "Non-Gov"), ("*", None)]
    assert build_index("w", arx_hierarchy_edges(text)).leaf_labels() == [
        "Private", "Self-emp", "Federal"]


def test_arx_no_final_newline_and_repeated_level_kept():
    # the repeat keeps its level (ARX level scoping), as the self-edge (A, A)
    assert arx_hierarchy_edges("A;A;*\nB;G;*") == [("A", "A"), ("A", "*"), ("B", "G"), ("G", "*"),
                                                   ("*", None)]


def test_arx_label_under_two_parents():
    with pytest.raises(TaxonomyError, match="'X' appears under two different parents"):
        arx_hierarchy_edges("a;X;P;*\nb;X;Q;*\n", attr="t")


def test_arx_same_node_twice_is_fine():
    assert arx_hierarchy_edges("a;X;P;*\nb;X;P;*\n") == [
        ("a", "X"), ("X", "P"), ("P", "*"), ("b", "X"), ("*", None)]


def test_arx_leaf_that_is_also_internal():
    with pytest.raises(TaxonomyError, match="'Other' is a leaf"):
        arx_hierarchy_edges("Other;Misc;*\nFoo;Other;Misc;*\n")


def test_arx_several_roots():
    with pytest.raises(TaxonomyError, match="several roots"):
        arx_hierarchy_edges("a;*\nb;ANY\n")


def test_arx_real_files():
    from kanon_duckdb.examples_data import ADULT_ARX, data_dir
    for attr, fname in ADULT_ARX.items():
        edges = arx_hierarchy_edges(str(data_dir() / "hierarchies" / fname), attr=attr)
        idx = build_index(attr, edges)
        assert idx.labels[0] == "*"
    edu = arx_hierarchy_edges(str(data_dir() / "hierarchies" / "adult_hierarchy_education.csv"))
    assert build_index("education", edu).height == 3
    age = build_index("age", arx_hierarchy_edges(
        str(data_dir() / "hierarchies" / "adult_hierarchy_age.csv")))
    assert age.leaf_count == 100 and age.height == 4


def test_interval_edges_exact():
    assert interval_edges([3, 7, 12], [5, 10]) == [
        ("3", "[0, 5)"), ("7", "[5, 10)"), ("12", "[10, 15)"),
        ("[0, 5)", "[0, 10)"), ("[5, 10)", "[0, 10)"), ("[10, 15)", "[10, 20)"),
        ("[0, 10)", "*"), ("[10, 20)", "*"), ("*", None)]


def test_interval_single_interval_levels_dropped():
    # width 40 puts 3, 7, 12 in one interval: that level is the root's job
    assert interval_edges([3, 7, 12], [5, 10, 40])[-3:] == [
        ("[0, 10)", "*"), ("[10, 20)", "*"), ("*", None)]


def test_interval_decimal_widths_and_labels():
    edges = interval_edges([0.3, 0.25, 0.45], [0.1, 0.2], labels=["0.3", "0.25", "0.45"])
    assert ("0.3", "[0.3, 0.4)") in edges and ("0.25", "[0.2, 0.3)") in edges
    assert ("[0.3, 0.4)", "[0.2, 0.4)") in edges and ("[0.4, 0.5)", "[0.4, 0.6)") in edges


def test_interval_decimal_values():
    edges = interval_edges([Decimal("1.50"), Decimal("2.25")], [1], labels=["1.50", "2.25"])
    assert edges == [("1.50", "[1, 2)"), ("2.25", "[2, 3)"), ("[1, 2)", "*"), ("[2, 3)", "*"),
                     ("*", None)]


def test_interval_negative_values():
    edges = interval_edges([-7, 2], [5])
    assert edges == [("-7", "[-10, -5)"), ("2", "[0, 5)"), ("[-10, -5)", "*"), ("[0, 5)", "*"),
                     ("*", None)]


def test_interval_widths_must_nest():
    with pytest.raises(InvalidParameterError, match="multiple of the previous"):
        interval_edges([1, 50], [5, 12])
    with pytest.raises(InvalidParameterError, match="positive"):
        interval_edges([1, 50], [0])


def test_interval_default_widths_are_nice_doublings():
    edges = interval_edges(list(range(17, 91)))
    idx = build_index("age", edges)
    assert idx.labels[idx.parent[idx.node_of_label["17"]]] == "[15, 20)"
    assert "[10, 20)" in idx.node_of_label and "[0, 40)" in idx.node_of_label
    assert "[0, 80)" in idx.node_of_label and "[80, 160)" in idx.node_of_label


def test_interval_single_value():
    assert interval_edges([5]) == [("5", "*"), ("*", None)]


def test_quantile_edges_equal_frequency():
    edges = interval_edges(list(range(8)), quantiles=4)
    assert edges == [
        ("0", "[0, 2)"), ("1", "[0, 2)"), ("2", "[2, 4)"), ("3", "[2, 4)"),
        ("4", "[4, 6)"), ("5", "[4, 6)"), ("6", "[6, 7]"), ("7", "[6, 7]"),
        ("[0, 2)", "[0, 4)"), ("[2, 4)", "[0, 4)"), ("[4, 6)", "[4, 7]"), ("[6, 7]", "[4, 7]"),
        ("[0, 4)", "*"), ("[4, 7]", "*"), ("*", None)]


def test_quantiles_weighted_by_counts():
    # value 0 holds most rows: the median cut falls right after it
    edges = interval_edges([0, 1, 2, 3], quantiles=2, counts=[10, 1, 1, 1])
    assert edges[:4] == [("0", "[0, 1)"), ("1", "[1, 3]"), ("2", "[1, 3]"), ("3", "[1, 3]")]


def _bounds(label):
    m = re.fullmatch(r"\[(\S+), (\S+)([)\]])", label)
    assert m, label
    return Fraction(m.group(1)), Fraction(m.group(2)), m.group(3) == "]"


def _contains(label, q):
    lo, hi, closed = _bounds(label)
    return lo <= q and (q <= hi if closed else q < hi)


def _check_nesting(values, edges, labels):
    idx = build_index("x", edges)
    assert idx.leaf_count == len(set(labels))
    for v, lab in zip(values, labels):
        q = Fraction(repr(float(v))) if isinstance(v, float) else Fraction(v)
        assert lab in idx.leaf_of_label
        u = int(idx.parent[idx.node_of_label[lab]])
        while u > 0:  # every interval ancestor contains the value
            assert _contains(idx.labels[u], q), (idx.labels[u], v)
            p = int(idx.parent[u])
            if p > 0:  # and lies inside its parent interval
                lo, hi, _ = _bounds(idx.labels[u])
                plo, phi, _ = _bounds(idx.labels[p])
                assert plo <= lo and hi <= phi
            u = p
    return idx


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(-10_000, 10_000), min_size=1, max_size=60),
       st.sampled_from([1, 2, 3, 5, 10, 25]),
       st.lists(st.integers(2, 4), max_size=5))
def test_interval_nesting_property_int(values, base, ratios):
    widths = [base]
    for r in ratios:
        widths.append(widths[-1] * r)
    vals = sorted(set(values))
    _check_nesting(vals, interval_edges(vals, widths), [str(v) for v in vals])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-1e5, 1e5, allow_nan=False), min_size=1, max_size=40),
       st.sampled_from([0.1, 0.25, 0.5, 2.5, 1000.0]))
def test_interval_nesting_property_float_default_and_given(values, base):
    vals = sorted(set(values))
    _check_nesting(vals, interval_edges(vals), [repr(v) for v in vals])
    _check_nesting(vals, interval_edges(vals, [base, round(base * 2, 9), round(base * 6, 9)]), [repr(v) for v in vals])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 100), min_size=1, max_size=80), st.integers(2, 40))
def test_quantile_nesting_property(values, bins):
    distinct = sorted(set(values))
    counts = [values.count(v) for v in distinct]
    edges = interval_edges(distinct, quantiles=bins, counts=counts)
    _check_nesting(distinct, edges, [str(v) for v in distinct])


def test_masking_edges_zip():
    assert masking_edges(["80016", "80015", "81000"]) == [
        ("80015", "8001*"), ("8001*", "800**"), ("800**", "80***"), ("80***", "8****"),
        ("8****", "*****"), ("80016", "8001*"), ("81000", "8100*"), ("8100*", "810**"),
        ("810**", "81***"), ("81***", "8****"), ("*****", None)]


def test_masking_mixed_lengths_and_step():
    assert masking_edges(["12", "5"]) == [("12", "1*"), ("1*", "**"), ("**", "*"), ("5", "*"),
                                          ("*", None)]
    assert masking_edges(["1234"], step=2) == [("1234", "12**"), ("12**", "****"), ("****", None)]


def test_masking_collision():
    with pytest.raises(TaxonomyError, match="masked form"):
        masking_edges(["8001*", "80015"])


def test_date_edges():
    assert date_edges(["2020-01-05", "2019-12-31", "2020-01-01"]) == [
        ("2019-12-31", "2019-12"), ("2019-12", "2019"), ("2019", "*"),
        ("2020-01-01", "2020-01"), ("2020-01", "2020"), ("2020", "*"),
        ("2020-01-05", "2020-01"), ("*", None)]
    assert date_edges(["2020-01-05 10:00:00"])[:2] == [
        ("2020-01-05 10:00:00", "2020-01-05"), ("2020-01-05", "2020-01")]
    with pytest.raises(TaxonomyError, match="not a date"):
        date_edges(["yesterday"])


def test_flat_edges():
    assert flat_edges(["b", "a", None, "b"]) == [("b", "*"), ("a", "*"), ("*", None)]
    with pytest.raises(TaxonomyError, match="holds the value '\\*'"):
        flat_edges(["*"])


# --------------------------------------------------------------------------- store + SQL

@pytest.fixture
def con():
    c = duckdb.connect()
    store.ensure_taxonomy_table(c)
    yield c
    c.close()


def test_quote_ident_and_resolve_table(con):
    assert quote_ident('a"b') == '"a""b"'
    con.execute('CREATE SCHEMA s; CREATE TABLE s."we.ird""t" (x INT); CREATE TABLE plain (x INT)')
    assert resolve_table(con, "plain") == (("memory", "main", "plain"), '"memory"."main"."plain"')
    assert resolve_table(con, "PLAIN")[1] == '"memory"."main"."plain"'
    assert resolve_table(con, 's."we.ird""t"')[1] == '"memory"."s"."we.ird""t"'
    assert resolve_table(con, "memory.main.plain")[0] == ("memory", "main", "plain")
    with pytest.raises(UnknownObjectError, match="table 'x\"; DROP TABLE plain; --' does not exist"):
        resolve_table(con, 'x"; DROP TABLE plain; --')
    con.execute("CREATE TEMP TABLE tmp (x INT)")
    with pytest.raises(UnknownObjectError, match="TEMP"):
        resolve_table(con, "tmp")
    assert con.execute("SELECT count(*) FROM plain").fetchall() == [(0,)]


def test_insert_read_replace_keeps_order(con):
    edges = [("b", "*"), ("a", "*"), ("c", "*"), ("*", None)]
    assert store.insert_edges(con, "x", edges) == 4
    assert store.read_edges(con, "x") == edges
    assert store.read_index(con, "x").leaf_labels() == ["b", "a", "c"]
    store.insert_edges(con, "x", [("z", "*"), ("*", None)])
    assert store.read_edges(con, "x") == [("z", "*"), ("*", None)]
    assert store.read_index(con, "nothing") is None


def test_insert_inside_caller_transaction(con):
    con.execute("BEGIN")
    store.insert_edges(con, "x", [("a", "*")])
    con.execute("ROLLBACK")
    assert store.read_edges(con, "x") == []


def test_builders_from_table(con):
    con.execute("""CREATE TABLE t AS SELECT * FROM (VALUES
        (17, 1.5, '80015', DATE '2020-01-05', 'red'),
        (22, 2.0, '80016', DATE '2020-02-01', 'blue'),
        (39, NULL, '81000', DATE '2021-03-01', NULL)) v(age, score, zip, d, colour)""")
    assert store.build_interval_taxonomy(con, "t", "age", widths=[5, 10]) == 10
    assert store.read_edges(con, "age")[0] == ("17", "[15, 20)")
    assert store.build_interval_taxonomy(con, "t", "score") > 0
    assert [e[0] for e in store.read_edges(con, "score")[:2]] == ["1.5", "2.0"]  # DuckDB's casts
    store.build_masking_taxonomy(con, "t", "zip")
    store.build_date_taxonomy(con, "t", "d")
    store.build_flat_taxonomy(con, "t", "colour", attr="c2")
    assert store.read_edges(con, "c2") == [("blue", "*"), ("red", "*"), ("*", None)]
    for col in ("age", "score", "zip", "d"):
        store.check_column(con, "t", col)
    with pytest.raises(InvalidParameterError, match="numeric column"):
        store.build_interval_taxonomy(con, "t", "colour")
    with pytest.raises(UnknownObjectError, match="column 'nope' does not exist"):
        store.build_flat_taxonomy(con, "t", "nope")
    with pytest.raises(TaxonomyError, match="no taxonomy for 'colour'"):
        store.check_column(con, "t", "colour")


def test_sql_wrappers(con, tmp_path):
    import kanon_duckdb
    kanon_duckdb.register(con)
    kanon_duckdb.register(con)  # idempotent
    con.execute("""CREATE TABLE t AS SELECT range::INT AS age, (80000 + range)::VARCHAR AS zip,
                   DATE '2024-01-30' + range::INT AS d, ['a', 'b'][range % 2 + 1] AS c
                   FROM range(40)""")
    assert con.sql("SELECT kanon_build_intervals('t', 'age', [5, 10, 20])").fetchall() == [(55,)]
    assert store.read_edges(con, "age")[:2] == [("0", "[0, 5)"), ("1", "[0, 5)")]
    assert con.sql("SELECT kanon_build_intervals('t', 'age')").fetchall()[0][0] > 40
    assert con.sql("SELECT kanon_build_quantiles('t', 'age', 4)").fetchall() == [(47,)]
    assert con.sql("SELECT kanon_build_masking('t', 'zip')").fetchall()[0][0] > 40
    assert con.sql("SELECT kanon_build_dates('t', 'd')").fetchall()[0][0] > 40
    assert con.sql("SELECT kanon_build_flat('t', 'c')").fetchall() == [(3,)]
    for col in ("age", "zip", "d", "c"):
        assert con.sql(f"SELECT kanon_check_taxonomy('t', '{col}')").fetchall() == [("ok",)]
    f = tmp_path / "h.csv"
    f.write_text("a;AB;*\nb;AB;*\n")
    assert con.execute("SELECT kanon_load_arx('c', ?)", [str(f)]).fetchall() == [(4,)]
    assert con.sql("SELECT kanon_check_taxonomy('t', 'c')").fetchall() == [("ok",)]
    con.execute("DELETE FROM kanon_taxonomy WHERE attr = 'c' AND child = 'b'")
    with pytest.raises(duckdb.Error, match=r"'b' \(20 rows\).*INSERT INTO kanon_taxonomy"):
        con.sql("SELECT kanon_check_taxonomy('t', 'c')").fetchall()
    with pytest.raises(duckdb.Error, match="does not exist"):
        con.sql("""SELECT kanon_build_flat('t"; DROP TABLE t; --', 'c')""").fetchall()
    assert con.sql("SELECT count(*) FROM t").fetchall() == [(40,)]


# --------------------------------------------------------------------------- Adult

@pytest.fixture(scope="module")
def adult():
    from kanon_duckdb.examples_data import load_example
    c = duckdb.connect()
    assert load_example(c, "adult") == 30162
    yield c
    c.close()


def test_adult_table(adult):
    from kanon_duckdb.examples_data import ADULT_COLUMNS
    assert adult.sql("SELECT count(*) FROM adult").fetchall() == [(30162,)]
    cols = adult.sql("DESCRIBE adult").fetchall()
    assert [c[0] for c in cols] == ADULT_COLUMNS
    types = {c[0]: c[1] for c in cols}
    assert types["age"] == "INTEGER" and types["fnlwgt"] == "INTEGER" and types["sex"] == "VARCHAR"
    assert adult.sql("SELECT age, workclass, income FROM adult LIMIT 1").fetchall() == [
        (39, "State-gov", "<=50K")]
    assert adult.sql("SELECT count(*) FROM adult WHERE workclass LIKE '% %' OR occupation = '?'"
                     ).fetchall() == [(0,)]
    assert adult.sql("SELECT min(age), max(age), count(DISTINCT age) FROM adult").fetchall() == [
        (17, 90, 72)]


def test_adult_every_value_is_a_leaf(adult):
    from kanon_duckdb.examples_data import ADULT_COLUMNS
    for col in ADULT_COLUMNS:
        idx = store.read_index(adult, col)
        assert idx is not None, col
        for value, _n in store.column_value_counts(adult, "adult", col):
            assert value in idx.leaf_of_label, (col, value)
    work = store.read_index(adult, "workclass")
    assert "Never-worked" in work.leaf_of_label and work.leaf_count == 8  # tree leaf absent in data
    assert store.read_index(adult, "age").labels[0] == "*"


def test_adult_reload_replaces(adult):
    from kanon_duckdb.examples_data import load_example
    before = adult.sql("SELECT count(*) FROM kanon_taxonomy").fetchall()
    assert load_example(adult) == 30162
    assert adult.sql("SELECT count(*) FROM kanon_taxonomy").fetchall() == before


def test_unknown_example():
    from kanon_duckdb.examples_data import load_example
    c = duckdb.connect()
    try:
        with pytest.raises(InvalidParameterError, match="valid names: adult"):
            load_example(c, "titanic")
    finally:
        c.close()
