"""``taxonomy.intervals.interval_index`` (the automatic numeric tree of the lattice family, built
as arrays) is exactly the tree of ``builders.interval_edges`` read by ``build_index``: same node
ids, labels, parents, leaf ranges, heights, ancestors and label dicts."""
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kanon_duckdb.algorithms.lattice.levels import _auto_numeric_tree
from kanon_duckdb.taxonomy import builders
from kanon_duckdb.taxonomy.intervals import interval_index
from kanon_duckdb.taxonomy.tree import build_index

ARRAYS = ("parent", "depth", "leaf_lo", "leaf_hi", "n_leaves", "sub_height", "leaf_node", "anc")


def assert_same_tree(got, want):
    assert got.labels == want.labels
    for name in ARRAYS:
        a, b = getattr(got, name), getattr(want, name)
        assert a.shape == b.shape and (a == b).all(), name
    assert got.leaf_of_label == want.leaf_of_label
    assert got.node_of_label == want.node_of_label
    assert got.has_null_leaf == want.has_null_leaf


def reference(vals, is_int, widths):
    whole = bool(np.all(vals == np.floor(vals)))
    py = [int(v) for v in vals] if is_int and whole else [float(v) for v in vals]
    labels = [str(v) if isinstance(v, int) else repr(v) for v in py]
    return build_index("x", builders.interval_edges(py, widths, labels=labels, attr="x")), labels


def check(vals, is_int, widths=None):
    vals = np.unique(np.asarray(vals, dtype=np.float64))
    if vals.size < 2:
        return
    whole = bool(np.all(vals == np.floor(vals)))
    if widths is None:
        lo, hi = (Fraction(repr(float(v))) for v in (vals[0], vals[-1]))
        widths = builders.default_widths(lo, hi, whole)
    want, labels = reference(vals, is_int, widths)
    assert_same_tree(interval_index("x", vals, labels, widths), want)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(-5000, 5000), min_size=2, max_size=300), st.booleans())
def test_integer_columns_give_the_tree_of_interval_edges(values, is_int):
    check(values, is_int)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.integers(-3000, 3000), min_size=2, max_size=300), st.sampled_from([10, 100, 7, 4]))
def test_decimal_columns_give_the_tree_of_interval_edges(values, scale):
    """Values such as 0.3 = 3/10 sit exactly on interval boundaries that float division misses
    (0.3 / 0.1 = 2.9999999999999996): they must land where exact rationals put them."""
    check([v / scale for v in values], False)


@pytest.mark.parametrize("widths", [[Fraction(1, 10)], [Fraction(1, 10), Fraction(1, 5), Fraction(2, 5)],
                                    [Fraction(5), Fraction(10), Fraction(40)]])
def test_boundary_values_with_given_widths(widths):
    vals = [round(0.1 * i, 10) for i in range(-40, 60)] + [0.3, 0.7, 2.5, -0.1]
    check(vals, False, widths)


def test_a_large_column_builds_the_same_tree_as_the_edge_list():
    vals = np.arange(20_000, dtype=np.float64) * 3 - 7
    tree, leaf_of_value, widths = _auto_numeric_tree("x", vals, True)
    want, _ = reference(vals, True, [Fraction(w) for w in widths])
    assert_same_tree(tree, want)
    assert (leaf_of_value == np.arange(vals.size)).all()
    assert tree.height == len(widths) + 1
