"""The metric and check macros read a DataFrame / Arrow table registered on the connection the
same as the table it was made from (kanon_duckdb/registered.py, udfs/metrics.py)."""
import pytest

import kanon_duckdb

METRICS = ["gcp('{t}')", "discernibility('{t}')", "cavg('{t}', 5)", "total_il('{t}')",
           "gen_total_il('{t}')", "suppression('{t}')", "info_loss('{t}')",
           "cm('{t}', 'dis')", "(SELECT sum(n) FROM kanon_qi_loss('{t}'))"]
CHECKS = ["k_anonymity('{t}', ['age', 'sex'])",
          "l_diversity('{t}', ['age', 'sex'], 'dis')",
          "t_closeness('{t}', ['age', 'sex'], 'dis')",
          "reidentification_risk('{t}', ['age', 'sex'])"]


@pytest.fixture(scope="module")
def con():
    con = kanon_duckdb.connect()
    con.sql("CREATE TABLE t AS SELECT (i % 50) + 20 AS age, "
            "CASE WHEN i % 3 = 0 THEN 'M' ELSE 'F' END AS sex, (i % 7)::VARCHAR AS dis "
            "FROM range(300) r(i)")
    con.sql("CREATE TABLE a AS FROM k_anonymize('t', k := 5, qi := ['age', 'sex'])")
    con.register("a_df", con.sql("FROM a").df())
    con.register("a_arrow", con.sql("FROM a").to_arrow_table())
    con.register("t_df", con.sql("FROM t").df())
    yield con
    con.close()


def _value(con, expr, t):
    return con.sql(f"SELECT {expr.format(t=t)}").fetchall()[0][0]


def _same(x, base):
    """Equal, floats to summation order (a scan of a DataFrame may add in another order)."""
    if isinstance(base, dict):
        return x.keys() == base.keys() and all(_same(x[key], base[key]) for key in base)
    if isinstance(base, float):
        return x == pytest.approx(base, rel=1e-12)
    return x == base


@pytest.mark.parametrize("expr", METRICS + CHECKS)
@pytest.mark.parametrize("name", ["a_df", "a_arrow"])
def test_metric_on_registered_output_equals_base_table(con, expr, name):
    base = _value(con, expr, "a")
    assert base is not None
    assert _same(_value(con, expr, name), base)


@pytest.mark.parametrize("expr", CHECKS)
def test_check_on_registered_raw_data_equals_base_table(con, expr):
    base = _value(con, expr, "t")
    assert base is not None
    assert _same(_value(con, expr, "t_df"), base)


def test_registered_output_not_a_table_before_register(con):
    with pytest.raises(Exception, match="does not exist"):
        _value(con, "gcp('{t}')", "b_df")


def test_temp_table_is_refused_with_the_workaround(con):
    con.sql("CREATE TEMP TABLE ta AS FROM a")
    with pytest.raises(Exception, match=r"TEMP tables.*con\.register\('x_arrow'"):
        _value(con, "gcp('{t}')", "ta")
    # the workaround the error names gives the base table's value
    con.register("ta_arrow", con.sql("FROM ta").to_arrow_table())
    assert _value(con, "gcp('{t}')", "ta_arrow") == pytest.approx(_value(con, "gcp('{t}')", "a"))
