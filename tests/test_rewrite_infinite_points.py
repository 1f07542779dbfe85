"""A class whose published range is one infinite value ([-inf, -inf] or [inf, inf]) is known
exactly: the rewriter counts it by whether that value satisfies the predicate (SQL orders -inf
below and +inf above every number), in the SQL of query_error and in the array evaluator of
workload_error alike. Half-infinite ranges keep the finite-extreme reading
(test_rewrite.test_infinite_bounds_are_read_as_the_finite_global_extremes)."""
from fractions import Fraction

import pytest

import kanon_duckdb
from kanon_duckdb.rewrite.intervals import IntervalSet
from kanon_duckdb.rewrite.workload import workload_errors

# x: 20 rows of -inf, 70 finite values 0..19, 10 rows of +inf
RAW = ("CREATE TABLE t AS SELECT i, CASE WHEN i < 20 THEN '-inf'::DOUBLE WHEN i >= 90 "
       "THEN 'inf'::DOUBLE ELSE (i % 20)::DOUBLE END AS x FROM range(100) r(i)")
PREDICATES = ["x < 0", "x <= 3", "x > 5", "x > 100", "x < 1000", "x BETWEEN -1 AND 1",
              "x <> 7", "NOT (x >= 2)", "x = 4", "x > -1e300", "x < 1e300"]


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    c.execute(RAW)
    # hand-made published table: the -inf class, finite classes, a +inf class and a half-infinite one
    c.execute("""CREATE TABLE o AS SELECT i, x,
        CASE WHEN x = '-inf'::DOUBLE THEN x WHEN x = 'inf'::DOUBLE THEN x
             WHEN x < 10 THEN 0 ELSE 10 END AS x_min,
        CASE WHEN x = '-inf'::DOUBLE THEN x WHEN x = 'inf'::DOUBLE THEN x
             WHEN x < 10 THEN 9 ELSE 'inf'::DOUBLE END AS x_max FROM t""")
    c.execute("ALTER TABLE o DROP COLUMN x")
    yield c
    c.close()


@pytest.mark.parametrize("pred", PREDICATES)
def test_point_classes_at_infinity_are_exact(con, pred):
    true, est = con.execute(
        f"FROM query_error('SELECT count(*) FROM t WHERE {pred}', 't', 'o')").fetchall()[0][:2]
    assert true == con.execute(f"SELECT count(*) FROM t WHERE {pred}").fetchall()[0][0]
    assert est == pytest.approx(_reference(con, pred))
    if pred in ("x < 0", "x > 100", "x < 1000", "x > -1e300", "x < 1e300"):
        assert est == pytest.approx(true)  # every class decides these wholly


def _reference(con, pred):
    """By hand, per class: a point class counts whole when DuckDB says its value satisfies
    ``pred``; a range [lo, hi] (hi = inf read as the finite maximum 19) the uniform share of
    it that the predicate's interval set covers."""
    s = INTERVALS[pred] if pred in INTERVALS else INFINITE[pred]
    total = 0.0
    for lo, hi, n in con.execute("SELECT x_min, x_max, count(*) FROM o GROUP BY ALL").fetchall():
        if lo == hi:
            holds = con.execute(f"SELECT {pred} FROM (SELECT ?::DOUBLE AS x)", [lo]).fetchall()[0][0]
            total += n * float(holds)
            continue
        hi = min(hi, 19.0)
        inside = 0.0
        for iv in s.parts:
            a = lo if iv.lo is None else max(lo, float(iv.lo))
            b = hi if iv.hi is None else min(hi, float(iv.hi))
            inside += max(b - a, 0.0)
        total += n * inside / (hi - lo)
    return total


INTERVALS = {
    "x < 0": IntervalSet.compare("<", Fraction(0)),
    "x <= 3": IntervalSet.compare("<=", Fraction(3)),
    "x > 5": IntervalSet.compare(">", Fraction(5)),
    "x > 100": IntervalSet.compare(">", Fraction(100)),
    "x < 1000": IntervalSet.compare("<", Fraction(1000)),
    "x BETWEEN -1 AND 1": IntervalSet.between(Fraction(-1), Fraction(1)),
    "x <> 7": IntervalSet.compare("<>", Fraction(7)),
    "NOT (x >= 2)": IntervalSet.compare(">=", Fraction(2)).complement(),
    "x = 4": IntervalSet.compare("=", Fraction(4)),
    "x > -1e300": IntervalSet.compare(">", -Fraction(10) ** 300),
    "x < 1e300": IntervalSet.compare("<", Fraction(10) ** 300),
}


# infinite constants, as DuckDB reads them ('inf'::DOUBLE, '-Infinity', a literal beyond the
# DOUBLE range): the finite values each selects (for the ranges), the point classes by DuckDB
INFINITE = {
    "x < 'inf'::DOUBLE": IntervalSet.everything(),
    "x <= 'inf'::DOUBLE": IntervalSet.everything(),
    "x = 'inf'::DOUBLE": IntervalSet.nothing(),
    "x >= 'Infinity'::DOUBLE": IntervalSet.nothing(),
    "x > 'inf'::DOUBLE": IntervalSet.nothing(),
    "x <> 'inf'::DOUBLE": IntervalSet.everything(),
    "x > '-inf'::DOUBLE": IntervalSet.everything(),
    "x = CAST('-Infinity' AS DOUBLE)": IntervalSet.nothing(),
    "x > -'inf'::DOUBLE": IntervalSet.everything(),
    "x < 1e400": IntervalSet.everything(),
    "x > -1e400": IntervalSet.everything(),
    "x < 'inf'": IntervalSet.everything(),
    "x BETWEEN '-inf'::DOUBLE AND 1": IntervalSet.compare("<=", Fraction(1)),
    "x IN ('inf'::DOUBLE, 3)": IntervalSet.compare("=", Fraction(3)),
    "NOT (x < 'inf'::DOUBLE) OR x < 2": IntervalSet.compare("<", Fraction(2)),
    "x < 'inf'::DOUBLE AND x > '-inf'::DOUBLE": IntervalSet.everything(),
}
WHOLE = ("x < 'inf'::DOUBLE", "x = 'inf'::DOUBLE", "x > '-inf'::DOUBLE", "x < 1e400",
         "x = CAST('-Infinity' AS DOUBLE)", "x < 'inf'::DOUBLE AND x > '-inf'::DOUBLE")


@pytest.mark.parametrize("pred", list(INFINITE))
def test_infinite_constants_read_as_duckdb_reads_them(con, pred):
    """An infinite constant in the WHERE clause selects what it selects in raw SQL: 'inf' is
    above every number, equal to itself only. Before: 'inf'::DOUBLE was refused as text, and
    ``x < 1e400`` (the DOUBLE inf in DuckDB) counted the +inf class as below it."""
    true, est = con.execute("FROM query_error(?, 't', 'o')",
                            [f"SELECT count(*) FROM t WHERE {pred}"]).fetchall()[0][:2]
    assert true == con.execute(f"SELECT count(*) FROM t WHERE {pred}").fetchall()[0][0]
    assert est == pytest.approx(_reference(con, pred))
    if pred in WHOLE:
        assert est == pytest.approx(true)


def test_infinite_constants_in_the_workload_evaluator(con):
    preds = list(INFINITE)
    con.execute("CREATE OR REPLACE TABLE wi AS SELECT row_number() OVER () AS qid, "
                "'SELECT count(*) FROM t WHERE ' || p AS sql FROM unnest(?) u(p)", [preds])
    for (qid, true, est), pred in zip(workload_errors(con, "wi", "t", "o"), preds):
        assert true == con.execute(f"SELECT count(*) FROM t WHERE {pred}").fetchall()[0][0]
        assert est == pytest.approx(_reference(con, pred)), pred


def test_nan_constant_is_refused_by_name(con):
    with pytest.raises(Exception, match="with NaN .*publishes NaN values as NULL"):
        con.execute("FROM query_error('SELECT count(*) FROM t WHERE x < ''nan''::DOUBLE', "
                    "'t', 'o')").fetchall()


def test_workload_evaluator_agrees(con):
    con.execute("CREATE OR REPLACE TABLE w AS SELECT row_number() OVER () AS qid, "
                "'SELECT count(*) FROM t WHERE ' || p AS sql FROM unnest(?) u(p)", [PREDICATES])
    got = workload_errors(con, "w", "t", "o")
    for (qid, true, est), pred in zip(got, PREDICATES):
        assert true == con.execute(f"SELECT count(*) FROM t WHERE {pred}").fetchall()[0][0]
        assert est == pytest.approx(_reference(con, pred)), pred


def test_k_anonymize_output_with_a_minus_inf_class(con):
    """A real Mondrian output holding the class [-inf, -inf]: x < 0 was estimated 0 (100 % error)."""
    con.execute("CREATE OR REPLACE TABLE a AS FROM k_anonymize('t', k := 5, qi := ['x'])")
    assert con.execute("SELECT count(*) FROM a WHERE x_min = '-inf'::DOUBLE "
                       "AND x_max = '-inf'::DOUBLE").fetchall() == [(20,)]
    for pred, true in [("x < 0", 20), ("x < -5", 20), ("x > 25", 0)]:
        rows = con.execute(f"FROM query_error('SELECT count(*) FROM t WHERE {pred}', 't', 'a')").fetchall()
        if pred == "x > 25":  # [19, inf] class reads as [19, 19]: nothing above 19
            assert rows == [(10, 0.0, 1.0)]
        else:
            assert rows == [(true, pytest.approx(true), pytest.approx(0.0))]


def test_sets_of_infinite_constants():
    inf = float("inf")
    below = IntervalSet.compare("<", inf)  # every finite value and -inf
    assert below.holds_infinity(-1) and not below.holds_infinity(1)
    assert below.complement() == IntervalSet.compare("=", inf)
    assert IntervalSet.compare("<=", inf) == IntervalSet.everything()
    assert IntervalSet.compare(">", inf).is_empty()
    assert IntervalSet.compare(">", -inf).union(IntervalSet.compare("=", -inf)) \
        == IntervalSet.everything()
    assert IntervalSet.compare("<", inf).intersect(IntervalSet.compare(">", Fraction(0))) \
        == IntervalSet.of([IntervalSet.compare(">", Fraction(0)).parts[0]], False, (False, False))


def test_holds_infinity():
    assert IntervalSet.compare("<", Fraction(0)).holds_infinity(-1)
    assert not IntervalSet.compare("<", Fraction(0)).holds_infinity(1)
    assert IntervalSet.compare("<>", Fraction(0)).holds_infinity(1)
    assert not IntervalSet.between(Fraction(-1), Fraction(1)).holds_infinity(-1)
