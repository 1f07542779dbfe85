"""The SQL metrics on large anonymized tables (built directly in SQL, no algorithm run) equal
hand-written SQL and closed forms. Their speed is measured by benchmarks/bench_metrics.py."""
import pytest

import kanon_duckdb

EDGES = [("*", None), ("Tech", "*"), ("eng", "Tech"), ("dev", "Tech"), ("Art", "*"),
         ("painter", "Art"), ("singer", "Art"), ("actor", "Art")]


def build(con, n):
    con.execute(f"""CREATE TABLE big AS
    WITH base AS (SELECT i, i // 5 AS ec FROM range({n}) r(i))
    SELECT i AS id, 'payload' || i AS note,
      (ec % 80)::BIGINT AS age_min, (ec % 80 + ec % 7)::BIGINT AS age_max,
      (ec % 16)::BIGINT AS edu_min, (ec % 16 + 1)::BIGINT AS edu_max,
      (ec % 1000) / 7.0 AS x_min, (ec % 1000) / 7.0 + (ec % 3) AS x_max,
      ['eng', 'dev', 'Tech', 'Art', 'painter', '*'][ec % 6 + 1] AS job,
      ['f', 'm', '*'][ec % 3 + 1] AS sex,
      CASE WHEN i % 3 = 0 THEN '>50K' ELSE '<=50K' END AS income,
      ec, 5::BIGINT AS ec_size, ec % 1000 = 999 AS suppressed, 1::BIGINT AS kanon_run
    FROM base""")
    con.execute("INSERT INTO kanon_runs (run_id, source, k, algo, qi, numeric_qi, categorical_qi, "
                "params, seed, details) VALUES (1, 'raw', 5, 'hand', ['age', 'edu', 'x', 'job', 'sex'], "
                "['age', 'edu', 'x'], ['job', 'sex'], '{}', 0, '{}')")
    con.executemany("INSERT INTO kanon_taxonomy VALUES ('job', ?, ?)", EDGES)


def expected_gcp(con):
    """The same GCP from plain SQL written out for this fixed schema."""
    return con.sql("""
        WITH r AS (SELECT min(age_min) a0, max(age_max) a1, min(edu_min) e0, max(edu_max) e1,
                          min(x_min) x0, max(x_max) x1 FROM big)
        SELECT avg(CASE WHEN suppressed THEN 5.0 ELSE
            (age_max - age_min) / (a1 - a0) + (edu_max - edu_min) / (e1 - e0) + (x_max - x_min) / (x1 - x0)
            + CASE job WHEN '*' THEN 1.0 WHEN 'Tech' THEN 0.4 WHEN 'Art' THEN 0.6 ELSE 0 END
            + CASE sex WHEN '*' THEN 1.0 ELSE 0 END END) / 5
        FROM big, r""").fetchall()[0][0]


def value(con, sql):
    return con.sql("SELECT " + sql).fetchall()[0][0]


@pytest.mark.parametrize("n", [200_000, pytest.param(1_000_000, marks=pytest.mark.slow)])
def test_core_metrics_on_large_tables(n):
    con = kanon_duckdb.connect()
    try:
        build(con, n)
        assert value(con, "gcp('big')") == pytest.approx(expected_gcp(con))
        dm = value(con, "discernibility('big')")
        n_sup = n // 1000 if n % 5000 == 0 else None   # 5 rows in every 1000th class
        if n_sup is not None:
            assert dm == (n - n_sup) * 5 + n_sup * n
            assert value(con, "suppression('big')") == pytest.approx(n_sup / n)
            # cavg = (N / |E|) / k over the published classes (every class has 5 rows, k = 5)
            assert value(con, "cavg('big')") == pytest.approx(n / (n // 5 - n_sup // 5) / 5)
    finally:
        con.close()
