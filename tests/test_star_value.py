"""A literal value '*' in a column without a taxonomy: one rule for every flat tree
(``taxonomy.tree.flat_index`` on ``builders.flat_edges``). The value is refused with the message
that names the fix (in a published table '*' would mean both that value and "any value"), never
an error about a cycle in a tree the user never created, never silently read as the root -- for
every algorithm family, the rewrite context, ML utility, and kanon_build_flat."""
import pytest

import kanon_duckdb
from kanon_duckdb.errors import TaxonomyError
from kanon_duckdb.taxonomy.tree import flat_index

STAR_FIX = ("holds the value '*'", "give 'c' a taxonomy")


def _assert_star_message(msg: str):
    assert all(part in msg for part in STAR_FIX), msg
    assert "cycle" not in msg.lower()


@pytest.fixture
def star_con():
    con = kanon_duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT ['a', '*', 'b'][1 + i % 3] AS c, i AS x, "
                "['y', 'n'][1 + i % 2] AS label FROM range(12) r(i)")
    yield con
    con.close()


@pytest.mark.parametrize("algo", ["mondrian", "bottomup", "kmember", "optimal", "datafly"])
def test_star_value_without_taxonomy_names_the_fix(star_con, algo):
    con = star_con
    with pytest.raises(Exception) as exc:
        con.execute(f"FROM k_anonymize('t', k := 2, qi := ['c'], algo := '{algo}')").fetchall()
    _assert_star_message(str(exc.value))
    assert con.execute("SELECT count(*) FROM kanon_runs").fetchone()[0] == 0
    # with a tree of its own, '*' is an ordinary leaf
    con.execute("INSERT INTO kanon_taxonomy VALUES ('c', 'a', 'any'), ('c', '*', 'any'), "
                "('c', 'b', 'any'), ('c', 'any', NULL)")
    rows = con.execute(f"FROM k_anonymize('t', k := 2, qi := ['c'], algo := '{algo}')").fetchall()
    assert len(rows) == 12


def test_flat_index_refuses_star_and_keeps_the_given_leaf_order():
    with pytest.raises(TaxonomyError) as exc:
        flat_index("c", ["a", "*"])
    _assert_star_message(str(exc.value))
    tree = flat_index("c", ["b", None, "a", "b"])
    assert tree.leaf_labels() == ["b", "a"] and tree.labels[0] == "*" and tree.height == 1
    root_only = flat_index("c", [])
    assert root_only.leaf_labels() == ["*"] and root_only.n_nodes == 1


def test_readers_of_a_published_table_apply_the_same_rule(star_con):
    """The run used the implicit flat tree (no '*' then), and the raw table holds '*' since:
    the rewrite context (query_error) and ML utility build the flat tree over the raw values,
    so they refuse '*' like the algorithms. (A tree the run used and deleted since is refused
    by name: tests/test_taxonomy_resolution.py.)"""
    con = star_con
    con.execute("UPDATE t SET c = 'c' WHERE c = '*'")
    con.execute("CREATE TABLE t_k AS FROM k_anonymize('t', k := 2, qi := ['c'])")
    con.execute("UPDATE t SET c = '*' WHERE c = 'c'")
    with pytest.raises(Exception) as exc:
        con.execute("FROM query_error('SELECT count(*) FROM t WHERE c = ''a''', 't', 't_k')").fetchall()
    _assert_star_message(str(exc.value))
    pytest.importorskip("sklearn")
    with pytest.raises(Exception) as exc:
        con.execute("FROM classification_utility('t', 't_k', 'label', models := ['nb'])").fetchall()
    _assert_star_message(str(exc.value))


def test_kanon_build_flat_refuses_star(star_con):
    with pytest.raises(Exception) as exc:
        star_con.execute("SELECT kanon_build_flat('t', 'c')").fetchall()
    _assert_star_message(str(exc.value))
    assert star_con.execute("SELECT count(*) FROM kanon_taxonomy WHERE attr = 'c'").fetchone()[0] == 0
