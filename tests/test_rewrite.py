"""Query rewriter: fixture files, hand-computed estimates, errors, and the SQL surface.

Fixture files (tests/fixtures/rewrite/<pass>.sql, in the style of sqlglot's optimizer fixtures):
``# title:`` / ``# execute: true`` / ``# expect: <rows>`` / ``# error: <text>`` lines, then the input
statement and (except in ``*__invalid.sql``) the expected output, each ending with ``;``. A pass's
file is checked with RULES up to and including that pass; ``rewrite.sql`` with all of them.
``execute: true`` runs the query on people_exact (nothing generalized), where the estimate must
equal the raw answer; ``expect`` runs the expected SQL on people_anon.
"""
from __future__ import annotations

import ast
import doctest
import importlib
import math
import re
from pathlib import Path

import duckdb
import pytest
import sqlglot

from kanon_duckdb.errors import UnknownObjectError, UnsupportedQueryError
from kanon_duckdb.rewrite import RULES, fraction, kanon_rewrite, query_error_sql, rewrite
from kanon_duckdb.rewrite.rewriter import context_for
from kanon_duckdb.rewrite.sqlgen import parse_select, to_sql
import kanon_duckdb

FIXTURES = Path(__file__).parent / "fixtures" / "rewrite"
META = re.compile(r"#\s*(title|execute|expect|error):\s*(.*)")


def people_db():
    con = duckdb.connect()
    kanon_duckdb.register(con)
    con.execute((FIXTURES / "_people_db.sql").read_text())
    return con


@pytest.fixture(scope="module")
def con():
    c = people_db()
    yield c
    c.close()


def load_statements(path: Path) -> list:
    """[(meta dict, sql)] in file order; meta comes from the '# key: value' lines before a statement."""
    out, meta, buf = [], {}, []
    for line in path.read_text().splitlines():
        text = line.strip()
        if not buf and (text.startswith("#") or not text):
            m = META.match(text)
            if m:
                meta[m[1]] = m[2].strip()
            continue
        buf.append(line)
        if text.endswith(";"):
            out.append((meta, "\n".join(buf).rstrip()[:-1]))
            meta, buf = {}, []
    return out


def fixture_pairs():
    for path in sorted(FIXTURES.glob("*.sql")):
        if path.name.startswith("_") or "__invalid" in path.name:
            continue
        stmts = load_statements(path)
        assert len(stmts) % 2 == 0, f"{path.name}: statements must come in pairs"
        for (meta, sql), (_, expected) in zip(stmts[::2], stmts[1::2]):
            yield pytest.param(path.stem, meta, sql, expected, id=f"{path.stem}: {meta.get('title', sql)}")


def invalid_cases():
    for path in sorted(FIXTURES.glob("*__invalid.sql")):
        for meta, sql in load_statements(path):
            yield pytest.param(meta["error"], sql, id=meta.get("title", sql))


def rules_for(stem: str):
    names = [r.__name__ for r in RULES]
    return RULES if stem == "rewrite" else RULES[:names.index(stem) + 1]


def normalized(sql: str) -> str:
    return to_sql(sqlglot.parse_one(sql, dialect="duckdb"))


def assert_rows_close(actual, expected):
    assert len(actual) == len(expected), (actual, expected)
    for ra, re_ in zip(actual, expected):
        for a, e in zip(ra, re_):
            if isinstance(e, float) or isinstance(a, float):
                assert a is not None and math.isclose(a, e, rel_tol=1e-9, abs_tol=1e-9), (actual, expected)
            else:
                assert a == e, (actual, expected)


def qe(con, sql, raw="people", anon="people_anon"):
    """The query_error macro's cursor for ``sql``."""
    return con.execute("FROM query_error(?, ?, ?)", [sql, raw, anon])


def estimate(con, sql, anon):
    return con.execute(kanon_rewrite(con, sql, anon)).fetchall()


def assert_exact(con, sql, raw="people", anon="people_exact"):
    """On a non-generalized table the estimate equals the raw answer, group by group."""
    cur = con.execute(query_error_sql(con, sql, raw, anon))
    cols = [d[0] for d in cur.description]
    rows = cur.fetchall()
    ia, ie = cols.index("raw_value"), cols.index("anon_estimate")
    for row in rows:
        a, e = row[ia], row[ie]
        if a is None or e is None:
            assert a is None and e is None, (sql, row)
        else:
            assert math.isclose(float(a), float(e), rel_tol=1e-9, abs_tol=1e-9), (sql, row)
    return rows


# ----------------------------------------------------------------------------- fixtures
@pytest.mark.parametrize("stem, meta, sql, expected", list(fixture_pairs()))
def test_rewrite_fixture(con, stem, meta, sql, expected):
    tree = parse_select(sql)
    ctx = context_for(con, tree, "people_anon")
    got = to_sql(rewrite(tree, ctx, rules_for(stem)))
    assert got == normalized(expected)
    if meta.get("execute") == "true":
        assert_exact(con, sql)
    if "expect" in meta:
        assert_rows_close(con.execute(expected).fetchall(), ast.literal_eval(meta["expect"]))


@pytest.mark.parametrize("message, sql", list(invalid_cases()))
def test_rewrite_refuses_unsupported_construct(con, message, sql):
    with pytest.raises(UnsupportedQueryError, match=re.escape(message)):
        kanon_rewrite(con, sql, "people_anon")


def test_rewrite_refuses_several_statements(con):
    with pytest.raises(UnsupportedQueryError, match="exactly one SQL statement"):
        kanon_rewrite(con, "SELECT COUNT(*) FROM people; SELECT 1", "people_anon")


def test_rewrite_refuses_unparsable_sql(con):
    with pytest.raises(UnsupportedQueryError, match="cannot parse"):
        kanon_rewrite(con, "SELECT COUNT(* FROM people", "people_anon")


def test_rewrite_pass_doctests():
    for mod in ("intervals", "fraction", "validate_query", "unqualify_columns", "weight_aggregates",
                "where_to_fraction", "replace_table", "context", "sqlgen", "qi_aggregates"):
        m = importlib.import_module(f"kanon_duckdb.rewrite.{mod}")
        result = doctest.testmod(m)
        assert result.failed == 0, mod


def test_rewrite_passes_do_not_modify_input(con):
    tree = parse_select("SELECT p.income, COUNT(*) FROM people AS p WHERE p.age > 30 GROUP BY 1")
    before = to_sql(tree)
    rewrite(tree, context_for(con, tree, "people_anon"))
    assert to_sql(tree) == before


# ------------------------------------------------------------------ hand-computed cases
def one_class_db():
    """Four rows in one class with age 20-29 (raw ages 20, 22, 26, 29)."""
    c = duckdb.connect()
    c.execute("""
        CREATE TABLE t AS SELECT * FROM (VALUES (20, 'a'), (22, 'b'), (26, 'a'), (29, 'b')) v(age, g);
        CREATE TABLE t_k AS SELECT 20 AS age_min, 29 AS age_max, g FROM t;""")
    return c


def test_rewrite_class_20_29_age_over_24_counts_half_per_row():
    c = one_class_db()
    try:
        assert estimate(c, "SELECT COUNT(*) FROM t WHERE age > 24", "t_k") == [(2.0,)]  # 4 * 5/10
        # the per-row fraction: 25..29 of 20..29
        tree = parse_select("SELECT COUNT(*) FROM t WHERE age > 24")
        per_row = to_sql(fraction(tree.args["where"].this, context_for(c, tree, "t_k")))
        assert c.execute(f"SELECT DISTINCT {per_row} FROM t_k").fetchall() == [(0.5,)]
    finally:
        c.close()


def test_rewrite_integer_bounds_of_non_integer_constants():
    c = one_class_db()
    try:
        # age > 24.5 is age >= 25 for an integer column: still 5 of 10 points
        assert estimate(c, "SELECT COUNT(*) FROM t WHERE age > 24.5", "t_k") == [(2.0,)]
        # age = 24.5 selects no integer
        assert estimate(c, "SELECT COUNT(*) FROM t WHERE age = 24.5", "t_k") == [(0,)]
    finally:
        c.close()


def test_rewrite_fallback_without_run_record():
    """Without kanon_runs: numeric QIs from _min/_max pairs; g is not a QI, so exact."""
    c = one_class_db()
    try:
        sql = "SELECT g, COUNT(*) FROM t WHERE age BETWEEN 20 AND 21 GROUP BY g ORDER BY g"
        assert estimate(c, sql, "t_k") == [("a", 0.4), ("b", 0.4)]
    finally:
        c.close()


def test_rewrite_categorical_leaf_label_is_zero_or_one(con):
    # rows 5-7 carry the leaf label 'White': a predicate on another leaf gives them 0
    sql = kanon_rewrite(con, "SELECT COUNT(*) FROM people WHERE race = 'Black' AND age BETWEEN 30 AND 39",
                        "people_anon")
    # ec2 (age 30-39, 'White') contributes 0; the suppressed row (20-59, '*'): 10/40 * 1/4
    assert_rows_close(con.execute(sql).fetchall(), [(0.0625,)])


def test_rewrite_suppressed_rows_count_with_full_range(con):
    sql = kanon_rewrite(con, "SELECT COUNT(*) FROM people WHERE age BETWEEN 20 AND 59 AND edu = 'Bachelors'",
                        "people_anon")
    # ec1 'Higher' 4 * 1/3, ec3 '*' 3 * 1/5, suppressed '*' and full age range: 1/5
    assert_rows_close(con.execute(sql).fetchall(), [(4 / 3 + 3 / 5 + 1 / 5,)])


# ------------------------------------------------------------------------ SQL surface
def test_query_error_macro_reports_raw_estimate_and_error(con):
    cur = qe(con, "SELECT COUNT(*) FROM people WHERE age > 24")
    assert [d[0] for d in cur.description] == ["raw_value", "anon_estimate", "rel_error"]
    assert cur.fetchall() == [(9, 8.875, pytest.approx(0.125 / 9))]


def test_query_error_group_by_compares_group_by_group(con):
    rows = con.execute("""FROM query_error('SELECT income, COUNT(*) AS n FROM people WHERE age > 24
                           GROUP BY income', 'people', 'people_anon')""").fetchall()
    assert [r[0] for r in rows] == ["<=50K", ">50K"]
    assert rows[0][1:3] == (4, 5.0) and rows[1][1:3] == (5, 3.875)


def test_query_error_reports_groups_missing_on_one_side(con):
    # raw: no row has salary > 300 and age 31; the estimate gives row 7 (ec2, ages 30-39) 1/10
    rows = qe(con, "SELECT income, COUNT(*) FROM people WHERE salary > 300 AND age = 31 GROUP BY income").fetchall()
    assert rows == [(">50K", None, pytest.approx(0.1), None)]


def test_query_error_several_aggregates_give_a_measure_column(con):
    cur = con.execute("FROM query_error('SELECT COUNT(*), AVG(salary) FROM people WHERE edu = ''Masters''', "
                      "'people', 'people_anon')")
    cols = [d[0] for d in cur.description]
    rows = cur.fetchall()
    assert cols == ["measure", "raw_value", "anon_estimate", "rel_error"]
    assert [r[0] for r in rows] == ["AVG(salary)", "COUNT(*)"]


def test_query_error_zero_raw_answer_policy(con):
    # A = 0 and a = 0: rel_error 0; A = 0 and a > 0: NULL (undefined)
    assert qe(con, "SELECT COUNT(*) FROM people WHERE age > 100").fetchall() == [(0, 0, 0.0)]
    undefined = qe(con, "SELECT COUNT(*) FROM people WHERE age = 21").fetchall()
    assert undefined[0][0] == 0 and undefined[0][1] > 0 and undefined[0][2] is None


def test_kanon_rewrite_udf_returns_readable_sql(con):
    sql = con.execute("SELECT kanon_rewrite('SELECT COUNT(*) FROM people WHERE race = ''White''', "
                      "'people_anon')").fetchall()[0][0]
    assert "CASE \"race\" WHEN '*' THEN 1 / 4 WHEN 'White' THEN 1 ELSE 0 END" in sql
    assert con.execute(sql).fetchall() == [(5.0,)]


def test_query_error_unsupported_construct_is_a_duckdb_error(con):
    with pytest.raises(duckdb.Error, match="GROUP BY on non-integer numeric quasi-identifier 'Hours'"):
        qe(con, "SELECT Hours, COUNT(*) FROM people GROUP BY Hours")


def test_avg_sum_of_numeric_qi_use_range_midpoints():
    """One class 20-29 (raw ages 20, 22, 26, 29): AVG(age) = 24.5 per row, SUM = 4 * 24.5."""
    c = one_class_db()
    try:
        assert estimate(c, "SELECT AVG(age), SUM(age) FROM t", "t_k") == [(24.5, 98.0)]
        # a WHERE on another column: only the rows with g = 'a' (2 of them)
        assert estimate(c, "SELECT SUM(age * 2) FROM t WHERE g = 'a'", "t_k") == [(98.0,)]
    finally:
        c.close()


def test_avg_of_qi_weighted_by_where_on_another_qi(con):
    """AVG(age) WHERE edu = 'Masters': ec1 (20-29, 'Higher') 4 rows * 1/3, midpoint 24.5;
    ec3 (40-59, '*') 3 rows * 1/5, midpoint 49.5; suppressed (NULL range -> 20-59, '*') 1/5, 39.5."""
    w = [4 / 3, 3 / 5, 1 / 5]
    m = [24.5, 49.5, 39.5]
    want = sum(a * b for a, b in zip(w, m)) / sum(w)
    rows = qe(con, "SELECT AVG(age) FROM people WHERE edu = 'Masters'").fetchall()
    assert rows[0][0] == pytest.approx(32.0)  # raw: ages 23 and 41
    assert rows[0][1] == pytest.approx(want)


def test_group_by_categorical_qi_spreads_over_leaves(con):
    """GROUP BY edu: ec1 'Higher' (4 rows) gives 4/3 to each of its 3 leaves, ec2 'School' (3 rows)
    3/2 to each of 2, ec3 and the suppressed row ('*', 4 rows) 4/5 to each of 5 leaves."""
    rows = dict((r[0], r[1:]) for r in qe(
        con, "SELECT edu, COUNT(*) AS n FROM people GROUP BY edu").fetchall())
    assert rows["Bachelors"][0] == 3 and rows["Bachelors"][1] == pytest.approx(4 / 3 + 4 / 5)
    assert rows["HS-grad"][0] == 2 and rows["HS-grad"][1] == pytest.approx(3 / 2 + 4 / 5)
    assert sum(r[1] for r in rows.values()) == pytest.approx(11)  # the spread keeps every row


def test_group_by_integer_qi_spreads_over_its_range():
    c = one_class_db()
    try:
        got = estimate(c, "SELECT age, COUNT(*) AS n FROM t GROUP BY age ORDER BY age", "t_k")
        assert [r[0] for r in got] == list(range(20, 30))
        assert all(r[1] == pytest.approx(0.4) for r in got)  # 4 rows over 10 ages
        got = estimate(c, "SELECT g, age, SUM(age) FROM t WHERE g = 'b' GROUP BY g, age "
                          "ORDER BY age LIMIT 1".replace(" LIMIT 1", ""), "t_k")
        assert got[0][:2] == ("b", 20) and got[0][2] == pytest.approx(0.2 * 24.5)
    finally:
        c.close()


def test_group_by_qi_with_where_on_the_same_qi_is_refused():
    c = one_class_db()
    try:
        with pytest.raises(UnsupportedQueryError, match="GROUP BY quasi-identifier 'Age' that the "
                                                        "WHERE clause also constrains"):
            estimate(c, "SELECT Age, COUNT(*) FROM t WHERE age >= 28 GROUP BY Age", "t_k")
    finally:
        c.close()


def test_group_by_qi_with_where_on_another_qi(con):
    """GROUP BY edu WHERE age <= 29: only ec1 (20-29, 'Higher', 4 rows, fraction 1) and the
    suppressed row (20-59 -> 10/40, '*' -> 1/5 per leaf) reach the estimate."""
    rows = dict((r[0], r[1:]) for r in qe(
        con, "SELECT edu, COUNT(*) FROM people WHERE age <= 29 GROUP BY edu").fetchall())
    assert rows["Masters"][1] == pytest.approx(4 / 3 + 0.25 / 5)
    assert rows["11th"][1] == pytest.approx(0.25 / 5)



def test_query_error_unknown_table(con):
    with pytest.raises(duckdb.Error, match="does not exist"):
        con.execute("FROM query_error('SELECT COUNT(*) FROM people', 'people', 'no_such_table')")
    with pytest.raises(UnknownObjectError):
        query_error_sql(con, "SELECT COUNT(*) FROM people", "nope", "people_anon")


def test_query_error_hostile_names_are_quoted():
    c = duckdb.connect()
    raw, anon = 'we"ird; t', 'we"ird; k'
    try:
        c.execute('CREATE TABLE "we""ird; t" AS SELECT * FROM (VALUES (1, 5), (2, 7)) v("a""ge", x)')
        c.execute('CREATE TABLE "we""ird; k" AS '
                  'SELECT 1 AS "a""ge_min", 2 AS "a""ge_max", x FROM "we""ird; t"')
        kanon_duckdb.register(c)
        sql = 'SELECT COUNT(*) FROM "we""ird; t" WHERE "a""ge" = 1'
        assert c.execute("FROM query_error(?, ?, ?)", [sql, raw, anon]).fetchall() == [(1, 1.0, 0.0)]
    finally:
        c.close()


def test_register_is_idempotent_and_lists_query_error_macros(con):
    kanon_duckdb.register(con)
    kanon_duckdb.register(con)
    kinds = dict(con.execute(
        "SELECT function_name, function_type FROM duckdb_functions() WHERE function_name IN "
        "('query_error', 'query_workload', 'workload_error', 'workload_query_errors', 'kanon_rewrite', "
        "'kanon_rel_error')").fetchall())
    assert kinds == {"query_error": "table_macro", "query_workload": "table_macro",
                     "workload_error": "table_macro", "workload_query_errors": "table_macro",
                     "kanon_rewrite": "macro", "kanon_rel_error": "macro"}


def test_kanon_rel_error_macro(con):
    got = con.execute("SELECT kanon_rel_error(10, 8), kanon_rel_error(0, 0), kanon_rel_error(0, 1), "
                      "kanon_rel_error(-4, -2), kanon_rel_error(NULL, 1)").fetchall()
    assert got == [(0.2, 0.0, None, 0.5, None)]


def test_rewriter_reads_the_run_through_published_layout():
    """The rewriter's QIs come from published.recorded_layout (the one reader of kanon_runs):
    a table mixing two runs is refused as the metrics refuse it (it took the latest run before)."""
    con = kanon_duckdb.connect()
    try:
        con.execute("CREATE TABLE t AS SELECT i % 50 AS age, ['a', 'b'][1 + i % 2] AS c FROM range(40) r(i)")
        con.execute("CREATE TABLE t1 AS FROM k_anonymize('t', k := 4, qi := ['age', 'c'])")
        con.execute("CREATE TABLE t2 AS FROM k_anonymize('t', k := 8, qi := ['age', 'c'])")
        q = "FROM query_error('SELECT count(*) FROM t WHERE age < 20', 't', '{}')"
        assert con.execute(q.format("t1")).fetchall()[0][0] == 20  # raw answer: ages 0..19
        con.execute("CREATE TABLE mixed AS FROM t1 UNION ALL FROM t2")
        with pytest.raises(Exception, match="mixes rows of several runs"):
            con.execute(q.format("mixed")).fetchall()
    finally:
        con.close()


def test_suppressed_row_spreads_over_the_datas_range_not_the_published_one():
    """A suppressed row (NULL range, "any value") is read as the run's recorded data range
    (kanon_runs.num_lo/num_hi, 30..99), not min(age_min)..max(age_max) of the published rows
    (30..40), which leaves out the suppressed outlier's own value (99)."""
    c = kanon_duckdb.connect()
    try:
        c.execute("CREATE TABLE p AS SELECT * FROM (VALUES " + ", ".join(["(30, 'M')"] * 5 + ["(40, 'M')"] * 5)
                  + ", (99, 'F')) v(age, sex)")
        for algo in ("optimal", "mondrian"):
            c.execute(f"CREATE OR REPLACE TABLE o AS FROM k_anonymize('p', k := 5, algo := '{algo}', "
                      "qi := ['age', 'sex'], max_suppression := 0.1)")
            assert c.execute("SELECT count(*) FROM o WHERE suppressed AND age_min IS NULL").fetchall() == [(1,)]
            # the suppressed row: ages 51..99 of 30..99 = 49/70; the published classes 0
            rows = c.execute("FROM query_error('SELECT count(*) FROM p WHERE age > 50', 'p', 'o')").fetchall()
            assert rows == [(1, pytest.approx(49 / 70), pytest.approx(21 / 70))]
            by_age = {r[0]: r[1:3] for r in c.execute(
                "FROM query_error('SELECT age, count(*) FROM p GROUP BY age', 'p', 'o')").fetchall()}
            assert by_age[99] == (1, pytest.approx(1 / 70))
            assert by_age[30] == (5, pytest.approx(5 + 1 / 70))
    finally:
        c.close()


def test_group_by_a_categorical_qi_keeps_the_rows_of_a_null_class():
    """NULL policy: a class of NULLs only keeps NULL, so a published NULL label covers the raw NULL
    value exactly. GROUP BY that QI gives the raw NULL group those rows (weight 1); they were
    dropped (NULL estimate, the estimate's total short of N by the NULL rows)."""
    c = kanon_duckdb.connect()
    try:
        c.execute("CREATE TABLE p AS SELECT i AS id, CASE WHEN i < 4 THEN NULL ELSE ['a', 'b'][1 + i % 2] END "
                  "AS cat FROM range(12) r(i)")
        c.execute("CREATE TABLE o AS FROM k_anonymize('p', k := 4, qi := ['cat'])")
        assert c.execute("SELECT cat, count(*) FROM o GROUP BY ALL ORDER BY ALL").fetchall() == \
            [("a", 4), ("b", 4), (None, 4)]
        rows = c.execute("FROM query_error('SELECT cat, count(*) FROM p GROUP BY cat', 'p', 'o') "
                         "ORDER BY cat").fetchall()
        assert rows == [("a", 4, 4.0, 0.0), ("b", 4, 4.0, 0.0), (None, 4, 4.0, 0.0)]
    finally:
        c.close()


@pytest.mark.parametrize("where, raw", [("cat IN ('a', 'b')", 8), ("cat <> 'zz'", 8),
                                        ("cat = 'a' OR cat <> 'a'", 8), ("cat IN ('a', 'b') AND id < 6", 2)])
def test_a_predicate_on_every_leaf_does_not_select_a_null_label(where, raw):
    """A predicate selecting every leaf of the tree folded to the constant 1, so rows of a NULL
    class (published label NULL, their raw values NULL, which no comparison selects) counted as
    matching: 12 instead of 8. Query-error SQL and the workload evaluator agree on it."""
    from kanon_duckdb.rewrite.workload import workload_errors
    c = kanon_duckdb.connect()
    try:
        c.execute("CREATE TABLE p AS SELECT i AS id, CASE WHEN i < 4 THEN NULL ELSE ['a', 'b'][1 + i % 2] END "
                  "AS cat FROM range(12) r(i)")
        c.execute("CREATE TABLE o AS FROM k_anonymize('p', k := 4, qi := ['cat'])")
        q = f"SELECT count(*) FROM p WHERE {where}"
        rows = c.execute("FROM query_error(?, 'p', 'o')", [q]).fetchall()
        assert rows == [(raw, float(raw), 0.0)]
        c.execute("CREATE TABLE w AS SELECT 1 AS qid, ? AS sql", [q])
        assert workload_errors(c, "w", "p", "o") == [(1, raw, float(raw))]
    finally:
        c.close()


def test_infinite_bounds_are_read_as_the_finite_global_extremes():
    """NULL policy: -inf/+inf are values; for NCP an infinite bound counts as the global finite
    minimum / maximum. The rewriter reads it the same way ([24, inf] as [24, 28.5]); it raised
    OverflowError ('cannot convert Infinity to integer ratio') on any query of such a table."""
    c = kanon_duckdb.connect()
    try:
        c.execute("CREATE TABLE p AS SELECT i AS id, CASE WHEN i = 0 THEN 'inf'::DOUBLE WHEN i = 1 "
                  "THEN NULL ELSE i * 1.5 END AS h, ['a', 'b'][1 + i % 2] AS g FROM range(20) r(i)")
        c.execute("CREATE TABLE o AS FROM k_anonymize('p', k := 3, qi := ['h'])")
        assert c.execute("SELECT h_min, h_max, count(*) FROM o GROUP BY ALL ORDER BY ALL").fetchall() == [
            (9.0, 15.0, 5), (16.5, 22.5, 5), (24.0, float("inf"), 5), (None, None, 5)]
        # [9, 15]: 5/6 of 5 rows; [16.5, 22.5] and [24, inf -> 28.5]: all; NULL: (28.5-10)/(28.5-3)
        want = 5 * 5 / 6 + 5 + 5 + 5 * 18.5 / 25.5
        rows = c.execute("FROM query_error('SELECT count(*) FROM p WHERE h > 10', 'p', 'o')").fetchall()
        assert rows == [(14, pytest.approx(want), pytest.approx(abs(14 - want) / 14))]
        rows = c.execute("FROM query_error('SELECT count(*) FROM p WHERE h > 25', 'p', 'o')").fetchall()
        assert rows[0][:2] == (4, pytest.approx(5 * 3.5 / 4.5 + 5 * 3.5 / 25.5))
        from kanon_duckdb.rewrite.workload import workload_errors  # the array evaluator agrees
        c.execute("CREATE TABLE w AS FROM (VALUES (1, 'SELECT count(*) FROM p WHERE h > 10'), "
                  "(2, 'SELECT count(*) FROM p WHERE h > 25')) v(qid, sql)")
        assert workload_errors(c, "w", "p", "o") == [
            (1, 14, pytest.approx(want)), (2, 4, pytest.approx(5 * 3.5 / 4.5 + 5 * 3.5 / 25.5))]
        # the midpoint of [24, inf] is that of [24, 28.5]
        rows = c.execute("FROM query_error('SELECT sum(h) FROM p WHERE g = ''a''', 'p', 'o')").fetchall()
        mids = {r[0]: r[1] for r in c.execute(
            "SELECT id, CASE WHEN h_min IS NULL THEN (3 + 28.5) / 2 ELSE (h_min + least(h_max, 28.5)) / 2 END "
            "FROM o WHERE g = 'a'").fetchall()}
        assert rows[0][1] == pytest.approx(sum(mids.values()))
    finally:
        c.close()
