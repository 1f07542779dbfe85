"""Properties of the rewriter on random tables and random queries of the supported grammar.

1. On a non-generalized table (every class one row, c_min = c_max = the raw value, labels = raw
   leaves) the estimate equals the raw answer exactly, group by group.
2. The workload evaluator (arrays, evaluate.py) gives the same raw answers as SQL (three-valued
   logic with NULLs included) and the same estimates as the rewritten SQL, on generalized tables.
"""
from __future__ import annotations

import math
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kanon_duckdb.rewrite import query_error_sql, workload_errors
import kanon_duckdb

EDU_TREE = [("*", None), ("H", "*"), ("S", "*"), ("BSc", "H"), ("MSc", "H"), ("HS", "S"),
            ("11th", "S"), ("PhD", "*")]
EDU_PARENT = {c: p for c, p in EDU_TREE}
EDU_LEAVES = ["BSc", "MSc", "HS", "11th", "PhD"]
RACES = ["a", "b", "c", "d"]
HOURS = [0.5, 1.0, 2.25, 3.0, 4.5]

# each example builds a DuckDB database (~0.35 s CPU): the default run draws 25 fresh examples
# per property, the slow step 200 (the *_many tests run the same bodies)
SETTINGS = settings(max_examples=int(os.environ.get("KANON_HYPOTHESIS_EXAMPLES", "25")), deadline=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
MANY = settings(SETTINGS, max_examples=200)


def rows_strategy(nulls: bool):
    def maybe(s):
        return st.one_of(st.none(), s) if nulls else s
    row = st.tuples(maybe(st.integers(0, 15)), maybe(st.sampled_from(HOURS)), maybe(st.sampled_from(RACES)),
                    maybe(st.sampled_from(EDU_LEAVES)), st.sampled_from(["x", "y"]),
                    maybe(st.integers(0, 100)))
    rows = st.lists(row, min_size=1, max_size=25)
    # One complete row: an attribute that is NULL everywhere has no global range (a DataError).
    return rows.map(lambda rs: [(5, 1.0, "a", "BSc", "x", 10)] + rs) if nulls else rows


# ------------------------------------------------------------------- query grammar
OPS = st.sampled_from(["=", "<>", "<", "<=", ">", ">="])
INTS = st.integers(-1, 16)
NUMS = st.sampled_from(["0", "0.5", "1.0", "1.7", "2.25", "3", "4.5", "5"])
RACE_LIT = st.sampled_from(["'a'", "'b'", "'c'", "'d'", "'e'"])
EDU_LIT = st.sampled_from(["'BSc'", "'MSc'", "'HS'", "'11th'", "'PhD'", "'H'", "'*'", "'M'"])


def _in(col, lits):
    return st.lists(lits, min_size=1, max_size=4).map(lambda vs: f"{col} IN ({', '.join(map(str, vs))})")


def _cmp(col, lits):
    return st.one_of(st.builds(lambda o, v: f"{col} {o} {v}", OPS, lits),
                     st.builds(lambda o, v: f"{v} {o} {col}", OPS, lits))


ATOMS = st.one_of(
    _cmp("age", INTS), st.builds(lambda a, b: f"age BETWEEN {a} AND {b}", INTS, INTS), _in("age", INTS),
    _cmp("hours", NUMS), st.builds(lambda a, b: f"hours BETWEEN {a} AND {b}", NUMS, NUMS), _in("hours", NUMS),
    _cmp("race", RACE_LIT), _in("race", RACE_LIT),
    _cmp("edu", EDU_LIT), _in("edu", EDU_LIT),
    st.sampled_from(["income = 'x'", "salary > 50", "salary BETWEEN 10 AND 60", "TRUE", "FALSE"]),
)
PREDICATES = st.recursive(
    ATOMS,
    lambda kids: st.one_of(st.builds(lambda a, b: f"({a}) AND ({b})", kids, kids),
                           st.builds(lambda a, b: f"({a}) OR ({b})", kids, kids),
                           kids.map(lambda a: f"NOT ({a})")),
    max_leaves=6)
AGGREGATES = st.sampled_from(["COUNT(*)", "SUM(salary)", "AVG(salary)", "COUNT(salary)"])


# ------------------------------------------------------------------------ databases
def make_db(rows, anon_sql: str):
    """Raw table ``raw``, anonymized ``anon`` (from ``anon_sql`` over raw), run record, edu tree."""
    con = kanon_duckdb.connect()
    con.execute("CREATE TABLE raw (rid INTEGER, age INTEGER, hours DOUBLE, race VARCHAR, edu VARCHAR, "
                "income VARCHAR, salary INTEGER)")
    con.executemany("INSERT INTO raw VALUES (?, ?, ?, ?, ?, ?, ?)", [(i, *r) for i, r in enumerate(rows)])
    con.executemany("INSERT INTO kanon_taxonomy VALUES ('edu', ?, ?)", EDU_TREE)
    con.execute("INSERT INTO kanon_runs (run_id, source, qi, numeric_qi, categorical_qi) VALUES "
                "(1, 'raw', ['age', 'hours', 'race', 'edu'], ['age', 'hours'], ['race', 'edu'])")
    con.execute("CREATE TABLE anon AS " + anon_sql)
    return con


EXACT_SQL = ("SELECT age AS age_min, age AS age_max, hours AS hours_min, hours AS hours_max, race, edu, "
             "income, salary, rid::BIGINT AS ec, 1::BIGINT AS ec_size, 1::BIGINT AS kanon_run FROM raw")


def _lca(labels):
    labels = [x for x in labels if x is not None]
    if not labels:
        return "*"
    paths = []
    for x in labels:
        path = [x]
        while EDU_PARENT[path[-1]] is not None:
            path.append(EDU_PARENT[path[-1]])
        paths.append(path[::-1])
    common = "*"
    for level in zip(*paths):
        if len(set(level)) == 1:
            common = level[0]
        else:
            break
    return common


def generalized_sql(rows, class_size: int, suppress: int | None) -> str:
    """Classes of ``class_size`` consecutive rows by age; one row optionally suppressed."""
    order = sorted(range(len(rows)), key=lambda i: (rows[i][0] is None, rows[i][0] or 0, i))
    values = []
    for start in range(0, len(order), class_size):
        members = order[start:start + class_size]
        ages = [rows[i][0] for i in members if rows[i][0] is not None]
        hours = [rows[i][1] for i in members if rows[i][1] is not None]
        races = {rows[i][2] for i in members}
        race = next(iter(races)) if len(races) == 1 and None not in races else "*"
        edu = _lca([rows[i][3] for i in members])
        for i in members:
            if i == suppress:
                values.append(f"({i}, NULL, NULL, NULL, NULL, '*', '*', true)")
            else:
                values.append(f"({i}, {min(ages) if ages else 'NULL'}, {max(ages) if ages else 'NULL'}, "
                              f"{min(hours) if hours else 'NULL'}, {max(hours) if hours else 'NULL'}, "
                              f"'{race}', '{edu}', false)")
    return ("SELECT g.*, raw.income, raw.salary, 1::BIGINT AS kanon_run FROM (VALUES "
            + ", ".join(values) + ") g(rid, age_min, age_max, hours_min, hours_max, race, edu, suppressed) "
            "JOIN raw USING (rid)")


def _close(a, b):
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)


# -------------------------------------------------------------------------- properties
EXACT_CASES = dict(rows=rows_strategy(nulls=False), pred=PREDICATES, agg=AGGREGATES,
                   grouped=st.booleans(), two=st.booleans())
EVALUATOR_CASES = dict(rows=rows_strategy(nulls=True), preds=st.lists(PREDICATES, min_size=1, max_size=4),
                       aggs=st.lists(AGGREGATES, min_size=4, max_size=4), class_size=st.integers(1, 4),
                       suppress=st.one_of(st.none(), st.integers(0, 24)))


def estimate_is_exact_on_non_generalized_table(rows, pred, agg, grouped, two):
    aggs = f"{agg}, COUNT(*)" if two else agg
    sql = (f"SELECT {'income, ' if grouped else ''}{aggs} FROM raw WHERE {pred}"
           + (" GROUP BY income" if grouped else ""))
    con = make_db(rows, EXACT_SQL)
    try:
        cur = con.execute(query_error_sql(con, sql, "raw", "anon"))
        cols = [d[0] for d in cur.description]
        ia, ie = cols.index("raw_value"), cols.index("anon_estimate")
        for row in cur.fetchall():
            assert _close(row[ia], row[ie]), (sql, row)
    finally:
        con.close()


def workload_evaluator_matches_sql(rows, preds, aggs, class_size, suppress):
    con = make_db(rows, generalized_sql(rows, class_size, suppress))
    try:
        queries = [(i + 1, f"SELECT {aggs[i]} FROM raw WHERE {p}") for i, p in enumerate(preds)]
        con.execute("CREATE TABLE wl (qid BIGINT, sql VARCHAR)")
        con.executemany("INSERT INTO wl VALUES (?, ?)", queries)
        fast = {q: (a, e) for q, a, e in workload_errors(con, "wl", "raw", "anon")}
        for qid, sql in queries:
            raw_value, estimate, _ = con.execute(query_error_sql(con, sql, "raw", "anon")).fetchall()[0]
            a, e = fast[qid]
            assert _close(a, raw_value), (sql, a, raw_value)
            assert _close(e, estimate), (sql, e, estimate)
    finally:
        con.close()


@SETTINGS
@given(**EXACT_CASES)
def test_rewrite_estimate_is_exact_on_non_generalized_table(**case):
    estimate_is_exact_on_non_generalized_table(**case)


@pytest.mark.slow
@MANY
@given(**EXACT_CASES)
def test_rewrite_estimate_is_exact_on_non_generalized_table_many(**case):
    estimate_is_exact_on_non_generalized_table(**case)


@SETTINGS
@given(**EVALUATOR_CASES)
def test_workload_evaluator_matches_sql(**case):
    workload_evaluator_matches_sql(**case)


@pytest.mark.slow
@MANY
@given(**EVALUATOR_CASES)
def test_workload_evaluator_matches_sql_many(**case):
    workload_evaluator_matches_sql(**case)


def test_generalized_helper_builds_valid_classes():
    rows = [(1, 0.5, "a", "BSc", "x", 1), (2, 1.0, "a", "MSc", "y", 2), (9, 3.0, "b", "PhD", "x", 3)]
    con = make_db(rows, generalized_sql(rows, 2, None))
    try:
        got = con.execute("SELECT rid, age_min, age_max, race, edu FROM anon ORDER BY rid").fetchall()
        assert got == [(0, 1, 2, "a", "H"), (1, 1, 2, "a", "H"), (2, 9, 9, "b", "PhD")]
    finally:
        con.close()
