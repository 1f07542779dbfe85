"""The metric and check macros read a DataFrame / Arrow table registered on the connection the
same as the table it was made from (kanon_duckdb/registered.py, udfs/metrics.py)."""
import pytest

METRICS = ["gcp('{t}')", "discernibility('{t}')", "cavg('{t}', 5)", "total_il('{t}')",
           "gen_total_il('{t}')", "suppression('{t}')", "info_loss('{t}')",
           "cm('{t}', 'dis')", "(SELECT sum(n) FROM kanon_qi_loss('{t}'))"]
CHECKS = ["k_anonymity('{t}', ['age', 'sex'])",
          "l_diversity('{t}', ['age', 'sex'], 'dis')",
          "t_closeness('{t}', ['age', 'sex'], 'dis')",
          "reidentification_risk('{t}', ['age', 'sex'])"]


@pytest.fixture(scope="module")
def con(metrics_con):
    """t and its k = 5 output a (tests/conftest.py), registered as a DataFrame / Arrow table."""
    con = metrics_con
    con.register("a_df", con.sql("FROM a").df())
    con.register("a_arrow", con.sql("FROM a").to_arrow_table())
    con.register("t_df", con.sql("FROM t").df())
    yield con
    for name in ("a_df", "a_arrow", "t_df"):
        con.unregister(name)


def _value(con, expr, t):
    return con.sql(f"SELECT {expr.format(t=t)}").fetchall()[0][0]


def _outcome(con, expr, t):
    """The value, or the error message without its 'LINE' context, rounded for comparison."""
    try:
        v = _value(con, expr, t)
    except Exception as exc:  # noqa: BLE001 - the outcome compared is the error itself
        return str(exc).split("\n\nLINE")[0].replace(f"'{t}'", "'T'")
    return round(v, 9) if isinstance(v, float) else v


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


def test_object_registered_before_import_equals_base_table(con):
    """DuckDB's own register (``_original_register``, as before the import) is not recorded, so
    no cursor can be handed it: the metric macros read it in the caller's query
    (kanon_duckdb/caller_macros.py), as a TEMP table."""
    from kanon_duckdb import registered
    tbl = con.sql("FROM a").to_arrow_table()
    registered._original_register(con, "a_early", tbl)
    try:
        for expr in METRICS + CHECKS:
            assert _same(_value(con, expr, "a_early"), _value(con, expr, "a")), expr
        sql = "SELECT sex, count(*) FROM t WHERE age < 40 GROUP BY sex"
        rows = [con.sql("FROM query_error($1, 't', $2)", params=[sql, name]).fetchall()
                for name in ("a_early", "a")]
        assert rows[0] and [[_same(x, y) for x, y in zip(r, b)] for r, b in zip(*rows)] == \
            [[True] * len(b) for b in rows[1]] and len(rows[0]) == len(rows[1])
    finally:
        con.unregister("a_early")


@pytest.mark.parametrize("expr", METRICS + CHECKS)
def test_metric_on_object_registered_on_a_cursor_equals_base_table(con, expr):
    """Registered on a cursor of the connection, read by the cursor's own query: the look-ups
    find the cursor's object through getvariable('__kanon_conn_id') (registered.py)."""
    cur = con.cursor()
    try:
        cur.register("a_cur", con.sql("FROM a").to_arrow_table())
        assert _same(_value(cur, expr, "a_cur"), _value(con, expr, "a"))
        cur.register("a_cur", con.sql("FROM t").to_arrow_table())  # another object, same name
        assert _outcome(cur, expr, "a_cur") == _outcome(con, expr, "t")  # no stale look-up
    finally:
        cur.close()


def test_cursor_registration_stays_private_to_the_cursor(con):
    cur = con.cursor()
    try:
        cur.register("only_cur", con.sql("FROM a").to_arrow_table())
        with pytest.raises(Exception, match="does not exist"):
            _value(con, "gcp('{t}')", "only_cur")
    finally:
        cur.close()


@pytest.mark.parametrize("through", ["connection", "cursor"])
def test_kanon_compare_reads_registered_objects(con, through):
    """kanon_compare / kanon_metrics take names from a list or a column, objects registered on
    the calling connection or cursor included (registered.CallerConnection)."""
    caller = con if through == "connection" else con.cursor()
    caller.register("cmp_arrow", con.sql("FROM a").to_arrow_table())
    try:
        got = caller.execute("SELECT \"table\", gcp FROM kanon_compare(['cmp_arrow', 'a'])").fetchall()
        assert dict(got)["cmp_arrow"] == pytest.approx(_value(con, "gcp('{t}')", "a"))
        assert caller.execute("SELECT kanon_metrics(t).gcp FROM (VALUES ('cmp_arrow')) v(t)"
                              ).fetchall()[0][0] == pytest.approx(_value(con, "gcp('{t}')", "a"))
    finally:
        caller.unregister("cmp_arrow")
        if caller is not con:
            caller.close()
