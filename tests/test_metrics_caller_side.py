"""The metric and check macros on relations only the caller's connection sees (a TEMP table, a
TEMP view, a table created in the caller's open transaction) give the base table's value, with
the base table's type (kanon_duckdb/caller_macros.py); the relation is not changed; bad input
gets the same clear errors."""
import contextlib

import duckdb
import pytest

import kanon_duckdb

METRICS = ["gcp('{t}')", "discernibility('{t}')", "cavg('{t}', 5)", "cavg('{t}')",
           "total_il('{t}')", "gen_total_il('{t}')", "suppression('{t}')", "info_loss('{t}')",
           "info_loss('{t}', weights := MAP {{'age': 0.25, 'sex': 0.75}})",
           "cm('{t}', 'dis')", "log_level('{t}')", "kanon_run_weights('{t}')",
           "(SELECT list(r ORDER BY qi) FROM kanon_qi_loss('{t}') r)",
           "(SELECT list(r ORDER BY ec) FROM kanon_classes('{t}') r)"]
CHECKS = ["k_anonymity('{t}', ['age', 'sex'])",
          "l_diversity('{t}', ['age', 'sex'], 'dis', c := 2)",
          "t_closeness('{t}', ['age', 'sex'], 'dis')",
          "t_closeness('{t}', ['age', 'sex'], 'dis', distance := 'equal')",
          "reidentification_risk('{t}', ['age', 'sex'], threshold := 0.1)"]
KINDS = ["temp_table", "temp_view", "in_transaction"]


@pytest.fixture(scope="module")
def con(metrics_con):
    return metrics_con  # t and its k = 5 output a (tests/conftest.py)


@contextlib.contextmanager
def _caller(con, kind, base, name):
    """A cursor of ``con`` that alone sees ``name``, a copy of ``base`` of the given kind."""
    cur = con.cursor()
    try:
        if kind == "temp_table":
            cur.execute(f"CREATE TEMP TABLE {name} AS FROM {base}")
        elif kind == "temp_view":
            cur.execute(f"CREATE TEMP VIEW {name} AS FROM {base}")
        else:
            cur.execute("BEGIN")
            cur.execute(f"CREATE TABLE {name} AS FROM {base}")
        yield cur
        if kind == "in_transaction":
            cur.execute("ROLLBACK")
    finally:
        cur.close()


def _rel(con, expr, t):
    return con.sql(f"SELECT {expr.format(t=t)} AS v")


def _same(x, base):
    """Equal, floats to summation order."""
    if isinstance(base, dict):
        return x.keys() == base.keys() and all(_same(x[k], base[k]) for k in base)
    if isinstance(base, list):
        return len(x) == len(base) and all(_same(a, b) for a, b in zip(x, base))
    if isinstance(base, float):
        return x == pytest.approx(base, rel=1e-12)
    return x == base


@pytest.mark.parametrize("kind", KINDS)
def test_metrics_on_caller_side_output_equal_base_table(con, kind):
    with _caller(con, kind, "a", "a_side") as cur:
        for expr in METRICS + CHECKS:
            base, side = _rel(con, expr, "a"), _rel(cur, expr, "a_side")
            assert side.types == base.types, expr
            b = base.fetchall()[0][0]
            assert _same(side.fetchall()[0][0], b), expr
        # the relation itself is unchanged
        assert cur.sql("SELECT count(*), sum(hash(COLUMNS(*))) FROM a_side").fetchall() == \
            con.sql("SELECT count(*), sum(hash(COLUMNS(*))) FROM a").fetchall()


@pytest.mark.parametrize("kind", KINDS)
def test_checks_on_caller_side_raw_table_equal_base_table(con, kind):
    with _caller(con, kind, "t", "t_side") as cur:
        for expr in CHECKS:
            assert _same(_rel(cur, expr, "t_side").fetchall()[0][0],
                         _rel(con, expr, "t").fetchall()[0][0]), expr
        # a caller-side population beside a base table, and the other way round
        cur.execute("CREATE TEMP TABLE t_half AS FROM t WHERE dis < '3'")
        risk = "reidentification_risk('{a}', ['age', 'sex'], population := '{p}')"
        con.execute("CREATE TABLE t_half_base AS FROM t WHERE dis < '3'")
        try:
            base = con.sql("SELECT " + risk.format(a="t_half_base", p="t")).fetchall()[0][0]
        finally:
            con.execute("DROP TABLE t_half_base")
        assert base["marketer_risk"] < base["avg_risk"]  # the population counts
        assert cur.sql("SELECT " + risk.format(a="t_half", p="t_side")).fetchall()[0][0] == base
        assert cur.sql("SELECT " + risk.format(a="t_half", p="t")).fetchall()[0][0] == base


def test_output_of_k_anonymize_on_a_temp_table_scores_as_the_base_output(con):
    cur = con.cursor()
    try:
        cur.execute("CREATE TEMP TABLE t_tmp AS FROM t")
        cur.execute("CREATE TEMP TABLE a_tmp AS FROM k_anonymize('t_tmp', k := 5, qi := ['age', 'sex'])")
        for expr in ["gcp('{t}')", "discernibility('{t}')", "k_anonymity('{t}', ['age', 'sex'])"]:
            assert _same(_rel(cur, expr, "a_tmp").fetchall()[0][0],
                         _rel(con, expr, "a").fetchall()[0][0]), expr
    finally:
        cur.close()


def test_base_table_path_hands_nothing_over(con):
    """A base table binds the macro's own body (the INTEGER overload): no copy of its rows."""
    plan = "".join(r[1] for r in con.sql("EXPLAIN SELECT gcp('a')").fetchall())
    assert "__kanon_caller_eval" not in plan
    with _caller(con, "temp_table", "a", "a_plan") as cur:
        plan = "".join(r[1] for r in cur.sql("EXPLAIN SELECT gcp('a_plan')").fetchall())
        assert "__kanon_caller_eval" in plan


def test_temp_name_qualified_past_a_shadowed_table(con):
    """'temp.main.x' names the TEMP table even when a regular x exists (plain 'x' is refused:
    tests/test_temp_shadowing.py)."""
    cur = con.cursor()
    try:
        cur.execute("CREATE TEMP TABLE a AS FROM memory.main.a WHERE ec % 2 = 0")
        want = cur.sql("SELECT count(*) FROM temp.main.a").fetchall()[0][0]
        assert 0 < want < 300
        assert cur.sql("SELECT discernibility('temp.main.a')").fetchall()[0][0] == \
            cur.sql("SELECT sum(n * n) FROM (SELECT count(*) AS n FROM temp.main.a GROUP BY ec)"
                    ).fetchall()[0][0]
        with pytest.raises(duckdb.Error, match="shadows the table"):
            cur.sql("SELECT discernibility('a')").fetchall()
    finally:
        cur.close()


@pytest.mark.parametrize("expr, base, message", [
    ("gcp('{t}')", "t", "is not an output of k_anonymize"),
    ("k_anonymity('{t}', ['nope'])", "t", "quasi-identifier 'nope' is not a column"),
    ("l_diversity('{t}', ['age'], 'nope')", "a", "column 'nope' is not a column"),
    ("gcp('{t}')", "(FROM a LIMIT 0)", "is empty"),
])
def test_bad_input_on_a_temp_table_is_a_clear_error(con, expr, base, message):
    with _caller(con, "temp_table", base, "bad_side") as cur:
        with pytest.raises(duckdb.Error, match=message) as err:
            _rel(cur, expr, "bad_side").fetchall()
        assert "Python exception occurred while executing the UDF: InvalidInputException" \
            not in str(err.value)  # one message, not DuckDB's nesting of it
        assert cur.sql("SELECT count(*) FROM bad_side").fetchall()[0][0] == \
            con.sql(f"SELECT count(*) FROM {base}").fetchall()[0][0]


def test_unknown_name_is_duckdbs_catalog_error(con):
    with pytest.raises(duckdb.Error, match="nope_tbl does not exist"):
        con.sql("SELECT gcp('nope_tbl')").fetchall()


@pytest.mark.parametrize("kind", KINDS)
def test_table_macros_on_caller_side_relations_equal_base_tables(con, kind):
    """kanon_compare, kanon_mapping, kanon_rewrite and the workload macros: the caller-side
    relation gives the base table's rows (names in the output replaced back)."""
    con.execute("CREATE OR REPLACE TABLE w AS FROM query_workload('t', n := 15, qi := ['age', 'sex'])")
    with _caller(con, kind, "a", "a_side") as cur:
        cur.execute(f"CREATE TEMP {'VIEW' if kind == 'temp_view' else 'TABLE'} t_side AS FROM t")
        cur.execute("CREATE TEMP TABLE w_side AS FROM w")
        pairs = [
            ("SELECT * EXCLUDE (\"table\") FROM kanon_compare([{a}])", {}),
            ("FROM kanon_mapping({a}) ORDER BY ALL", {}),
            ("SELECT kanon_rewrite('SELECT count(*) FROM t WHERE age < 30', {a})", {}),
            ("SELECT qid, replace(replace(sql, '\"temp\".\"main\".', ''), 't_side', 't') FROM query_workload({t}, n := 15, "
             "qi := ['age', 'sex']) ORDER BY qid", {}),
            ("FROM workload_query_errors({w}, {t}, {a}) ORDER BY qid", {}),
            ("FROM workload_error({w}, {t}, {a})", {}),
        ]
        for sql, _ in pairs:
            base = con.sql(sql.format(a="'a'", t="'t'", w="'w'"))
            side = cur.sql(sql.format(a="'a_side'", t="'t_side'", w="'w_side'"))
            assert side.types == base.types, sql
            b, s = base.fetchall(), side.fetchall()
            if "kanon_rewrite" in sql:
                # the estimate reads the TEMP table by its full name, as DuckDB resolves it
                assert '"temp"."main"."a_side"' in s[0][0]
                s = [(s[0][0].replace('"temp"."main"."a_side"', '"a"'),)]
            assert len(b) > 0 and _same([list(r) for r in s], [list(r) for r in b]), sql


def test_classification_utility_on_temp_tables_equals_base_tables(con):
    pytest.importorskip("sklearn")
    with _caller(con, "temp_table", "a", "a_side") as cur:
        cur.execute("CREATE TEMP TABLE t_side AS FROM t")
        sql = "FROM classification_utility({t}, {a}, 'dis', models := ['nb', 'dt'])"
        assert cur.sql(sql.format(t="'t_side'", a="'a_side'")).fetchall() == \
            con.sql(sql.format(t="'t'", a="'a'")).fetchall()


QUERIES = ["SELECT count(*) FROM t WHERE age BETWEEN 30 AND 45",
           "SELECT sex, count(*) FROM t WHERE age < 40 GROUP BY sex",
           "SELECT age, count(*) AS n FROM t GROUP BY age ORDER BY n",
           "SELECT dis, count(*), avg(age) FROM t GROUP BY dis",
           "SELECT sum(age) FROM t"]


@pytest.mark.parametrize("kind", KINDS)
def test_query_error_on_caller_side_relations_equals_base_table(con, kind):
    """Raw, anonymized or both seen by the caller only: the base tables' columns, types and
    rows (the estimate runs on a cursor they are handed to, the raw answer in the caller's
    query); neither relation changes."""
    with _caller(con, kind, "a", "a_side") as cur:
        cur.execute(f"CREATE TEMP {'VIEW' if kind == 'temp_view' else 'TABLE'} t_side AS FROM t")
        for sql in QUERIES:
            base = con.sql("FROM query_error($1, 't', 'a')", params=[sql])
            b = base.fetchall()
            assert b and all(r[-3] is not None for r in b), sql
            for raw, anon in (("t_side", "a_side"), ("t", "a_side"), ("t_side", "a")):
                side = cur.sql("FROM query_error($1, $2, $3)", params=[sql, raw, anon])
                assert (side.columns, side.types) == (base.columns, base.types), (sql, raw, anon)
                assert _same([list(r) for r in side.fetchall()], [list(r) for r in b]), (sql, raw)
        for side, base in (("a_side", "a"), ("t_side", "t")):
            assert cur.sql(f"SELECT count(*), sum(hash(COLUMNS(*))) FROM {side}").fetchall() == \
                con.sql(f"SELECT count(*), sum(hash(COLUMNS(*))) FROM {base}").fetchall()


def test_query_error_on_a_registered_object_and_a_temp_table(con):
    """A DataFrame registered on the caller beside a TEMP anonymized table."""
    cur = con.cursor()
    try:
        cur.register("t_df", con.sql("FROM t").df())
        cur.execute("CREATE TEMP TABLE a_side AS FROM a")
        for sql in QUERIES[:2]:
            side = cur.sql("FROM query_error($1, 't_df', 'a_side')", params=[sql]).fetchall()
            base = con.sql("FROM query_error($1, 't', 'a')", params=[sql]).fetchall()
            assert _same([list(r) for r in side], [list(r) for r in base]), sql
    finally:
        cur.close()


@pytest.mark.parametrize("sql, message", [
    ("SELECT age + 1 AS g, count(*) FROM t GROUP BY g", "quasi-identifier .age. outside an aggregate"),
    ("SELECT count(*) FROM t WHERE nextval('s') > 0", r"function nextval\(\) is not allowed"),
    ("SELECT count(*) FROM t WHERE kanon_build_flat('t', 'dis') IS NULL",
     r"function kanon_build_flat\(\) is not allowed"),
    ("SELECT count(*) FROM t; DROP TABLE t", "exactly one SQL statement"),
])
def test_query_error_bad_query_on_a_temp_table_is_the_base_tables_error(con, sql, message):
    """The same clear error as on the base tables; nothing the query names runs (the checks
    needing no run come before the raw answer is bound, the rest on the cursor)."""
    with pytest.raises(duckdb.Error, match=message):
        con.sql("FROM query_error($1, 't', 'a')", params=[sql]).fetchall()
    runs = con.sql("SELECT count(*) FROM kanon_taxonomy").fetchall()
    with _caller(con, "temp_table", "a", "a_side") as cur:
        with pytest.raises(duckdb.Error, match=message) as err:
            cur.sql("FROM query_error($1, 't', 'a_side')", params=[sql]).fetchall()
        assert "Python exception occurred while executing the UDF: InvalidInputException" \
            not in str(err.value)
        assert cur.sql("SELECT count(*) FROM a_side").fetchall() == [(300,)]
    assert con.sql("SELECT count(*) FROM kanon_taxonomy").fetchall() == runs
    assert con.sql("SELECT count(*) FROM t").fetchall() == [(300,)]


def test_dispatchers_keep_each_macros_parameters():
    """caller_macros.ROUTED repeats each routed macro's parameters (the dispatcher has them):
    they equal the first overload's as written in sql/, defaults included, and every overload's
    names as DuckDB registered them, publicly and (side first, once per side) inside."""
    import re

    from kanon_duckdb import registration
    from kanon_duckdb.caller_macros import INNER, ROUTED
    text = " ".join(t for _, t in registration.sql_scripts())
    con = kanon_duckdb.connect()
    try:
        for name, r in ROUTED.items():
            m = re.search(rf"CREATE OR REPLACE MACRO {name}\((.*?)\) AS", text, re.S)
            assert m, name
            assert " ".join(m.group(1).split()) == ", ".join(r.overloads[0]), name
            def registered(fn):
                return sorted(tuple(p) for (p,) in con.execute(
                    "SELECT parameters FROM duckdb_functions() WHERE function_name = ?",
                    [fn]).fetchall())
            want = sorted(tuple(p.split(":=")[0].strip() for p in o) for o in r.overloads)
            assert registered(name) == want, name
            assert registered(INNER + name) == sorted(2 * [("__kanon_s",) + o for o in want]), name
    finally:
        con.close()


def test_mapping_of_a_full_domain_run_on_a_temp_source(con):
    """kanon_mapping lists a full-domain run's raw values from its source: a TEMP source is
    found from the run record at bind time and handed over; when the output is a TEMP table too,
    source := names it (without it: the clear error naming source :=)."""
    con.execute("CREATE OR REPLACE TABLE a_opt AS FROM k_anonymize('t', k := 5, qi := ['age', 'sex'], "
                "algo := 'optimal')")
    want = con.sql("FROM kanon_mapping('a_opt') ORDER BY ALL").fetchall()
    assert any(r[1] is not None and r[4] is not None for r in want)  # raw values with ranges
    cur = con.cursor()
    try:
        cur.execute("CREATE TEMP TABLE t_src AS FROM t")
        cur.execute("CREATE TEMP TABLE ta_opt AS FROM k_anonymize('t_src', k := 5, "
                    "qi := ['age', 'sex'], algo := 'optimal')")
        cur.execute("CREATE OR REPLACE TABLE a_opt_copy AS FROM ta_opt")
        assert cur.sql("FROM kanon_mapping('a_opt_copy') ORDER BY ALL").fetchall() == want
        assert cur.sql("FROM kanon_mapping('ta_opt', source := 't_src') ORDER BY ALL").fetchall() == want
        assert cur.sql("FROM kanon_mapping('a_opt', source := 't_src') ORDER BY ALL").fetchall() == want
        with pytest.raises(duckdb.Error, match=r"source 't_src' is not readable.*source := 't_src'"):
            cur.sql("FROM kanon_mapping('ta_opt')").fetchall()
    finally:
        cur.execute("DROP TABLE IF EXISTS a_opt_copy")
        cur.close()


def test_kanon_metrics_from_a_column_on_a_temp_table_names_the_constant_forms(con):
    """A name from a column reaches kanon_metrics at run time, on a cursor, which cannot see a
    TEMP table; nothing can read it in the caller's query then (relation.py). The error says so
    and names kanon_compare with those names, which works; base tables from a column work."""
    with _caller(con, "temp_table", "a", "a_side") as cur:
        sql = "SELECT t, kanon_metrics(t).gcp FROM (VALUES ('a'), ('a_side')) v(t) ORDER BY t"
        with pytest.raises(duckdb.Error, match=r"a_side does not exist.*TEMP table.*"
                                               r"kanon_compare\(\['a', 'a_side'\]\)"):
            cur.sql(sql).fetchall()
        gcp = con.sql("SELECT gcp('a')").fetchall()[0][0]
        assert cur.sql("SELECT \"table\", gcp FROM kanon_compare(['a', 'a_side']) ORDER BY 1"
                       ).fetchall() == [("a", pytest.approx(gcp)), ("a_side", pytest.approx(gcp))]
        assert cur.sql("SELECT t, kanon_metrics(t).gcp FROM (VALUES ('a')) v(t)").fetchall() == \
            [("a", pytest.approx(gcp))]
        with pytest.raises(duckdb.Error, match="nope_tbl does not exist"):
            cur.sql("SELECT kanon_metrics(t) FROM (VALUES ('nope_tbl')) v(t)").fetchall()
