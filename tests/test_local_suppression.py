"""max_suppression for the local-recoding algorithms (kanon_duckdb/privacy/suppress.py): rows
whose presence stretches a class are suppressed within the limit, GCP never rises, privacy
models still hold."""
import math
import random

import pytest

import kanon_duckdb
from kanon_duckdb.algorithms import registry

from test_privacy_enforce import make_table, sql_check
from test_k_anonymize_properties import check_output

LOCAL = sorted(a.name for a in registry().values() if a.family == "local")


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    c.executemany("INSERT INTO kanon_taxonomy VALUES ('z', ?, ?)",
                  [(f"z{i}", f"g{i // 3}") for i in range(9)] + [(f"g{j}", "*") for j in range(3)])
    c.executemany("INSERT INTO kanon_taxonomy VALUES ('s', ?, ?)",
                  [("resp", "*"), ("dig", "*"), ("flu", "resp"), ("cold", "resp"),
                   ("ulcer", "dig"), ("colitis", "dig")])
    yield c
    c.close()


def one(con, e):
    return con.sql(f"SELECT {e}").fetchall()[0][0]


def test_mondrian_suppresses_the_outlier_hand_case(con):
    # ages 20..25 and one 90: with k = 2 the 90 stretches its class; suppressing it (1 of 7
    # rows) lowers GCP: the class {24, 25, 90} (NCP 66/70 each) becomes {24, 25} (1/70) + 1 row at 1
    con.execute("CREATE OR REPLACE TABLE ages AS SELECT * FROM (VALUES (1, 20), (2, 21), (3, 22), "
                "(4, 23), (5, 24), (6, 25), (7, 90)) t(id, age)")
    con.execute("CREATE OR REPLACE TABLE a0 AS FROM k_anonymize('ages', k := 2, qi := ['age'])")
    con.execute("CREATE OR REPLACE TABLE a1 AS FROM k_anonymize('ages', k := 2, qi := ['age'], "
                "max_suppression := 0.15)")
    assert con.sql("SELECT id FROM a1 WHERE suppressed").fetchall() == [(7,)]
    assert con.sql("SELECT age_min, age_max FROM a1 WHERE suppressed").fetchall() == [(None, None)]
    assert one(con, "gcp('a1')") < one(con, "gcp('a0')")
    assert one(con, "k_anonymity('a1', ['age'])") >= 2
    # the limit holds: 0.1 of 7 rows is 0 rows
    con.execute("CREATE OR REPLACE TABLE a2 AS FROM k_anonymize('ages', k := 2, qi := ['age'], "
                "max_suppression := 0.1)")
    assert one(con, "count(*) FILTER (WHERE suppressed) FROM a2") == 0


@pytest.mark.parametrize("algo", LOCAL)
@pytest.mark.parametrize("seed", [1, 2])
def test_local_suppression_within_limit_and_gcp_not_worse(con, algo, seed):
    rnd = random.Random(seed)
    make_table(con, rnd, 90)
    con.execute("INSERT INTO src VALUES (1000, 0.5, 99, 'z8', 'flu', 8), (1001, 0.5, 1, 'z0', 'cold', 1)")
    base = f"FROM k_anonymize('src', k := 3, algo := '{algo}', qi := ['age', 'z'], seed := {seed}"
    con.execute(f"CREATE OR REPLACE TABLE o0 AS {base})")
    con.execute(f"CREATE OR REPLACE TABLE o1 AS {base}, max_suppression := 0.05)")
    n = one(con, "count(*) FROM src")
    assert one(con, "count(*) FILTER (WHERE suppressed) FROM o1") <= math.floor(0.05 * n)
    assert one(con, "gcp('o1')") <= one(con, "gcp('o0')") + 1e-12
    check_output(con, "src", "o1", 1, ["age"], ["z"],
                 {"z": {**{f"z{i}": f"g{i // 3}" for i in range(9)}, **{f"g{j}": "*" for j in range(3)}}})
    assert one(con, "k_anonymity('o1', ['age', 'z'])") >= 3


@pytest.mark.parametrize("algo", ["mondrian", "kmember", "oka"])
def test_local_suppression_keeps_privacy_models(con, algo):
    make_table(con, random.Random(4), 100)
    con.execute(f"CREATE OR REPLACE TABLE out AS FROM k_anonymize('src', k := 3, algo := '{algo}', "
                f"qi := ['age', 'z'], sensitive := 's', l := 1.6, l_variant := 'entropy', "
                f"max_suppression := 0.05)")
    sql_check(con, "out", ["age", "z"], "entropy", 3)
    assert one(con, "count(*) FILTER (WHERE suppressed) FROM out") <= 5


def test_local_max_suppression_out_of_range_is_named(con):
    make_table(con, random.Random(4), 30)
    with pytest.raises(Exception, match="max_suppression.*must be a number in \\[0, 1\\]"):
        con.execute("FROM k_anonymize('src', k := 3, qi := ['age'], max_suppression := 2)").fetchall()
