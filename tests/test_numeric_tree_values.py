"""encoding.attach_numeric_trees takes an integer QI's values and counts from the encoded
column (no GROUP BY of the relation): each row's leaf is the leaf labelled with its integer in
decimal, for plain and offset-coded columns, row by row and on a histogram; a value missing
from the tree is reported with its row count; a DOUBLE QI still matches DuckDB's labels."""
import numpy as np
import pytest

import kanon_duckdb
from kanon_duckdb.anonymize import anonymize
from kanon_duckdb.encoding import attach_numeric_trees, encode, plan_qis
from kanon_duckdb.errors import TaxonomyError

BIG = 2 ** 60  # beyond float64's exact integers: the column is offset-coded (codec.py)


@pytest.fixture
def con():
    c = kanon_duckdb.connect()
    yield c
    c.close()


def _tree(con, attr, labels):
    con.executemany("INSERT INTO kanon_taxonomy VALUES (?, ?, ?)",
                    [(attr, lab, "low" if i < len(labels) // 2 else "high")
                     for i, lab in enumerate(labels)]
                    + [(attr, "low", "*"), (attr, "high", "*"), (attr, "*", None)])


@pytest.mark.parametrize("base", [0, BIG])
@pytest.mark.parametrize("histogram", [False, True])
def test_integer_leaves_come_from_the_encoded_values(con, base, histogram):
    con.execute(f"CREATE TABLE t AS SELECT CASE WHEN i % 7 = 3 THEN NULL ELSE {base} + i % 5 "
                f"END::BIGINT AS a, ['x', 'y'][i % 2 + 1] AS b FROM range(40) r(i)")
    _tree(con, "a", [str(base + v) for v in range(5)])
    plan = plan_qis(con, "t", ["a", "b"])
    _keys, data = encode(con, plan, need_num_trees=True, histogram=histogram)
    assert data.num_codec[0] is None if base == 0 else data.num_codec[0].kind == "offset"
    tree = data.num_trees[0]
    values, nulls = con.execute("SELECT list(a ORDER BY a) FILTER (a IS NOT NULL), "
                                "count(*) - count(a) FROM t").fetchall()[0]
    ints = (data.codec(0).decode_int(data.num[:, 0])[0] if data.codec(0) is not None
            else data.num[:, 0].astype(np.int64))
    null = data.num_null[:, 0]
    expect = [tree.leaf_of_label[None] if z else tree.leaf_of_label[str(v)]
              for v, z in zip(ints, null)]
    assert data.num_leaf[:, 0].tolist() == expect
    rows = data.row_counts()
    assert int(rows[null].sum()) == nulls
    assert sorted(np.repeat(ints[~null], rows[~null]).tolist()) == values


def test_a_value_missing_from_an_integer_tree_is_named_with_its_rows(con):
    con.execute(f"CREATE TABLE t AS SELECT ({BIG} + i % 3)::BIGINT AS a, 'x' AS b "
                f"FROM range(9) r(i)")
    _tree(con, "a", [str(BIG), str(BIG + 1)])  # BIG + 2 (3 rows) is missing
    with pytest.raises(TaxonomyError, match=rf"'{BIG + 2}' \(3 rows\)"):
        anonymize(con, "t", k=2, algo="optimal", qi=["a", "b"], record=False)


def test_double_values_still_match_duckdbs_labels(con):
    con.execute("CREATE TABLE t AS SELECT (i % 4) / 2.0 AS a, 'x' AS b FROM range(8) r(i)")
    labels = [r[0] for r in con.execute("SELECT DISTINCT CAST(a AS VARCHAR) FROM t ORDER BY 1"
                                        ).fetchall()]
    _tree(con, "a", labels)
    plan = plan_qis(con, "t", ["a", "b"])
    _keys, data = encode(con, plan)
    data = attach_numeric_trees(con, plan, data)
    tree = data.num_trees[0]
    assert sorted(set(data.num_leaf[:, 0].tolist())) == sorted(tree.leaf_of_label[lab]
                                                               for lab in labels)
