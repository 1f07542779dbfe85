"""Fixtures shared by several test modules."""
import pytest

import kanon_duckdb


@pytest.fixture(scope="session")
def metrics_con():
    """A connection holding ``t`` (300 rows: age 20..69 BIGINT, sex 'M'/'F', dis '0'..'6') and
    ``a``, its k = 5 Mondrian output over (age, sex): the base tables the metric tests compare
    every other relation kind with. Shared by the session: tests add objects of their own and
    never change ``t`` or ``a``."""
    con = kanon_duckdb.connect()
    con.sql("CREATE TABLE t AS SELECT (i % 50) + 20 AS age, "
            "CASE WHEN i % 3 = 0 THEN 'M' ELSE 'F' END AS sex, (i % 7)::VARCHAR AS dis "
            "FROM range(300) r(i)")
    con.sql("CREATE TABLE a AS FROM k_anonymize('t', k := 5, qi := ['age', 'sex'])")
    yield con
    con.close()
