"""anonymize(..., ranges=...): a part of a table (a Spark partition) measured against the whole
table's numeric ranges (anonymize.with_ranges)."""
import numpy as np
import pytest

import kanon_duckdb
from kanon_duckdb.anonymize import anonymize
from kanon_duckdb.generalize import per_qi_loss


@pytest.fixture
def con():
    c = kanon_duckdb.connect()
    # plain (small ints) and offset-coded (values far from 0) integer columns
    c.execute("CREATE TABLE part AS SELECT 40 + i AS age, 5000000000 + i * 10 AS big, i AS id "
              "FROM range(10) t(i)")
    yield c
    c.close()


def test_one_class_ncp_uses_the_global_range(con):
    res = anonymize(con, "part", k=10, qi=["age", "big"], record=False,
                    ranges={"age": (0, 100), "big": (5000000000, 5000001000)})
    assert res.data.value_range(0) == (0, 100) and res.data.value_range(1) == (5000000000, 5000001000)
    assert res.generalized.n_classes == 1
    # one class spanning 40..49 and 5e9..5e9+90: NCP 9/100 and 90/1000 (not 1 and 1)
    assert np.allclose(per_qi_loss(res.data, res.generalized), [0.09, 0.09])
    local = anonymize(con, "part", k=10, qi=["age", "big"], record=False)
    assert np.allclose(per_qi_loss(local.data, local.generalized), [1.0, 1.0])


def test_global_ranges_change_the_widths_not_the_guarantee(con):
    res = anonymize(con, "part", k=2, qi=["age", "big"], record=False,
                    ranges={"age": (0, 100), "big": (5000000000, 5000000090)})
    assert (res.generalized.size >= 2).all() and res.generalized.size.sum() == 10
    assert np.allclose(res.data.num_range, [100.0, 90.0])
