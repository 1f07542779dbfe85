"""Sources that stand for more than themselves (the Spark path's inputs):

- ``anonymize(..., row_counts=)``: a source that is itself a histogram (each row standing for
  ``row_counts`` rows, as Spark's ``groupBy().count()`` gives it) runs the lattice search
  exactly as the rows do; other families refuse it;
- ``anonymize(..., sensitive_reference=)``: a part of a table measures t-closeness against the
  whole table's sensitive distribution and codes values over its domain."""
import pytest

import kanon_duckdb
from kanon_duckdb.anonymize import anonymize
from kanon_duckdb.errors import InvalidParameterError

QI = ["age", "zip", "sex"]


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    c.execute("""CREATE TABLE rows_t AS SELECT 20 + (hash(i) % 12)::INTEGER AS age,
        (100 + hash(i + 1) % 6)::BIGINT AS zip, ['F', 'M'][1 + (hash(i + 2) % 2)::INTEGER] AS sex
        FROM range(600) t(i)""")
    c.execute("CREATE TABLE hist_t AS SELECT age, zip, sex, count(*) AS n FROM rows_t GROUP BY ALL")
    yield c
    c.close()


@pytest.mark.parametrize("algo", ["optimal", "datafly"])
def test_histogram_source_gives_the_rows_node_and_classes(con, algo):
    rows = anonymize(con, "rows_t", k=7, algo=algo, qi=QI, params={"max_suppression": 0.02},
                     record=False)
    hist = anonymize(con, "hist_t", k=7, algo=algo, qi=QI, params={"max_suppression": 0.02},
                     record=False, row_counts="n")
    assert hist.data.n_rows == rows.data.n_rows == 600
    assert hist.data.n == con.sql("SELECT count(*) FROM hist_t").fetchall()[0][0]
    assert hist.partition.info["node"] == rows.partition.info["node"]
    assert sorted(hist.generalized.size.tolist()) == sorted(rows.generalized.size.tolist())
    assert int(hist.generalized.size.sum()) == 600


def test_row_counts_is_refused_outside_the_lattice(con):
    with pytest.raises(InvalidParameterError, match="row_counts"):
        anonymize(con, "hist_t", k=7, algo="mondrian", qi=QI, record=False, row_counts="n")


def test_sensitive_reference_is_the_distribution_t_closeness_uses(con):
    import numpy as np
    import pyarrow as pa

    from kanon_duckdb.privacy.spec import EXTRA_KEY
    con.execute("""CREATE OR REPLACE TABLE part_t AS SELECT age, zip, sex,
        CASE WHEN age < 26 THEN 'a' ELSE 'b' END AS s FROM rows_t""")
    # the whole table: 'a' 300 rows, 'b' 100, 'c' 200 (a value this part does not hold)
    whole = pa.table({"s": ["a", "b", "c"]})
    res = anonymize(con, "part_t", k=5, qi=QI, params={"sensitive": "s", "t": 0.9},
                    record=False, sensitive_reference=(whole, np.array([300, 100, 200])))
    spec = res.data.extra[EXTRA_KEY]
    assert spec.p_glob.tolist() == pytest.approx([0.5, 1 / 6, 1 / 3])
    labels = spec.value_labels[0]
    part = con.sql("SELECT s FROM part_t").fetchall()
    assert sorted(labels[c] for c in spec.codes[:, 0]) == sorted(r[0] for r in part)
    own = anonymize(con, "part_t", k=5, qi=QI, params={"sensitive": "s", "t": 0.9}, record=False)
    assert own.data.extra[EXTRA_KEY].p_glob.size == 2  # without it: the part's own values
