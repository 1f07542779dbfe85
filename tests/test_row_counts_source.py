"""``anonymize(..., row_counts=)``: a source that is itself a histogram (each row standing for
``row_counts`` rows, as Spark's ``groupBy().count()`` gives it) runs the lattice search exactly
as the rows do; other families refuse it."""
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
