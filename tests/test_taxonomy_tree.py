"""Tree validation (tree.build_index) and data coverage (store.validate_coverage)."""
import pytest

from kanon_duckdb.errors import TaxonomyError
from kanon_duckdb.taxonomy import build_index, interval_edges, validate_coverage

WORK = [("Private", "Non-Gov"), ("Self-emp", "Non-Gov"), ("Federal", "Gov"), ("Local", "Gov"),
        ("Non-Gov", "*"), ("Gov", "*"), ("*", None)]


def test_index_shape_and_leaf_order():
    idx = build_index("w", WORK)
    assert idx.labels[0] == "*"
    assert idx.leaf_labels() == ["Private", "Self-emp", "Federal", "Local"]
    assert idx.height == 2 and idx.leaf_count == 4
    gov = idx.node_of_label["Gov"]
    assert (idx.leaf_lo[gov], idx.leaf_hi[gov]) == (2, 3)
    assert idx.labels[idx.lca(0, 1)] == "Non-Gov"
    assert idx.labels[idx.lca(1, 2)] == "*"
    assert idx.ncp(idx.node_of_label["Private"]) == 0.0
    assert idx.ncp(gov) == 0.5


def test_root_row_optional():
    without_root_row = [e for e in WORK if e[1] is not None]
    assert build_index("w", without_root_row).labels == build_index("w", WORK).labels


def test_two_roots_named():
    with pytest.raises(TaxonomyError, match=r"2 roots \('Gov', 'Non-Gov'\)|2 roots \('Non-Gov', 'Gov'\)"):
        build_index("w", [("a", "Gov"), ("b", "Non-Gov")])


def test_cycle_detected():
    with pytest.raises(TaxonomyError, match="cycle"):
        build_index("c", [("a", "b"), ("b", "a")])
    with pytest.raises(TaxonomyError, match="cycle"):
        build_index("c", [("x", "*"), ("a", "b"), ("b", "c"), ("c", "a")])
    # a self-edge is not a cycle: the label stays itself for one more level (ARX level scoping)
    chain = build_index("c", [("a", "a")])
    assert chain.labels == ["a", "a"] and chain.height == 1 and chain.leaf_count == 1


def test_node_at_two_places():
    with pytest.raises(TaxonomyError, match="'Local' appears at two places"):
        build_index("w", WORK[:-1] + [("Local", "Non-Gov")])


def test_root_marked_but_has_parent():
    with pytest.raises(TaxonomyError, match="marked as a root"):
        build_index("w", WORK + [("Gov", None)])


def test_empty_tree():
    with pytest.raises(TaxonomyError, match="empty"):
        build_index("e", [])


def test_coverage_ok_and_nulls_skipped():
    idx = build_index("w", WORK)
    validate_coverage(idx, [("Private", 10), ("Local", 1), (None, 4)])


def test_coverage_missing_values_listed_with_counts():
    idx = build_index("w", WORK)
    with pytest.raises(TaxonomyError) as ei:
        validate_coverage(idx, [("Private", 10), ("Never-worked", 3), ("Unknown", 7)])
    msg = str(ei.value)
    assert "2 value(s) of 'w' are missing" in msg
    assert "'Unknown' (7 rows), 'Never-worked' (3 rows)" in msg  # most frequent first
    assert "INSERT INTO kanon_taxonomy VALUES ('w', 'value', 'parent')" in msg


def test_coverage_lists_first_ten_and_counts_rest():
    idx = build_index("w", WORK)
    with pytest.raises(TaxonomyError) as ei:
        validate_coverage(idx, [(f"v{i:02d}", 100 - i) for i in range(25)])
    msg = str(ei.value)
    assert "25 value(s)" in msg and "'v09' (91 rows)" in msg and "'v10'" not in msg
    assert "and 15 more" in msg


def test_coverage_internal_node_is_an_error():
    idx = build_index("w", WORK)
    with pytest.raises(TaxonomyError, match=r"internal nodes .*'Gov' \(2 rows\)"):
        validate_coverage(idx, [("Gov", 2), ("Local", 1)])


def test_interval_tree_indexes():
    idx = build_index("age", interval_edges([17, 22, 39], [5, 10]))
    assert idx.leaf_labels() == ["17", "22", "39"]
    assert idx.labels[idx.lca(0, 1)] == "*"
    assert idx.labels[idx.anc[1, 1]] == "[20, 25)"
    assert idx.labels[idx.anc[1, 2]] == "[20, 30)"
