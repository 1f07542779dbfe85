"""connect/register: everything registered, idempotently, on new or existing connections."""
import duckdb
import pytest

import kanon_duckdb

EXPECTED = {"k_anonymize", "gcp", "discernibility", "cavg", "total_il", "gen_total_il",
            "k_anonymity", "query_error", "kanon_rewrite", "cm", "log_level", "suppression"}


def functions(con):
    return {r[0] for r in con.sql("SELECT function_name FROM duckdb_functions()").fetchall()}


def test_register_is_idempotent_on_an_existing_connection():
    con = duckdb.connect()
    try:
        kanon_duckdb.register(con)
        kanon_duckdb.register(con)
        assert EXPECTED <= functions(con)
        assert con.sql("SELECT count(*) FROM kanon_taxonomy").fetchall() == [(0,)]
        con.execute("CREATE TABLE t AS SELECT i AS id, i % 13 AS a FROM range(100) r(i)")
        assert con.sql("SELECT min(ec_size) >= 5 FROM k_anonymize('t', k := 5, qi := ['a'])").fetchall() == [(True,)]
    finally:
        con.close()


def test_register_keeps_existing_taxonomies_and_runs(tmp_path):
    path = str(tmp_path / "x.duckdb")
    con = kanon_duckdb.connect(path)
    con.execute("INSERT INTO kanon_taxonomy VALUES ('g', 'a', '*'), ('g', '*', NULL)")
    con.execute("CREATE TABLE t AS SELECT i AS id, 'a' AS g FROM range(10) r(i)")
    con.execute("CREATE TABLE o AS FROM k_anonymize('t', k := 2, qi := ['g'])")
    con.close()
    con = kanon_duckdb.connect(path)
    try:
        assert con.sql("SELECT count(*) FROM kanon_taxonomy").fetchall() == [(2,)]
        assert con.sql("SELECT count(*) FROM kanon_runs").fetchall() == [(1,)]
        assert con.sql("SELECT gcp('o')").fetchall() == [(0.0,)]
    finally:
        con.close()


def test_every_algorithm_is_listed_in_the_unknown_algo_error():
    from kanon_duckdb.algorithms import registry
    con = kanon_duckdb.connect()
    try:
        con.execute("CREATE TABLE t AS SELECT i AS a FROM range(10) r(i)")
        try:
            con.execute("FROM k_anonymize('t', k := 2, algo := 'zzz', qi := ['a'])").fetchall()
        except duckdb.Error as exc:
            for name in registry():
                assert name in str(exc)
        else:
            raise AssertionError("unknown algo accepted")
    finally:
        con.close()


@pytest.mark.parametrize("ddl, shown", [
    ("(attr VARCHAR, child INTEGER, parent INTEGER)", "child INTEGER, parent INTEGER"),
    ("(attr VARCHAR, child VARCHAR)", "parent missing"),
])
def test_a_kanon_taxonomy_of_another_shape_is_refused_by_name(ddl, shown):
    # a user-made kanon_taxonomy with INTEGER labels made k_anonymize report the tree's own
    # labels as "missing from its taxonomy" ('1' (10 rows), ...), and one without parent made
    # connect fail with DuckDB's 'Referenced column "parent" not found in FROM clause!'
    con = duckdb.connect()
    try:
        con.execute(f"CREATE TABLE kanon_taxonomy {ddl}")
        with pytest.raises(kanon_duckdb.errors.TaxonomyError,
                           match=r"kanon_taxonomy must have the columns attr VARCHAR, child "
                                 r"VARCHAR, parent VARCHAR; .*" + shown):
            kanon_duckdb.register(con)
    finally:
        con.close()


def test_a_second_connection_to_an_open_file_is_refused_with_the_fix(tmp_path):
    """DuckDB shares one database instance per file in a process, Python UDFs included: a
    second connect() to a file a registered connection holds cannot register its own UDFs.
    The error names the cause and the fix (the first connection's cursor) instead of DuckDB's
    'Scalar Function ... already exists'; the cursor runs and measures, and after the first
    connection is closed the file connects again."""
    path = str(tmp_path / "x.duckdb")
    con = kanon_duckdb.connect(path)
    try:
        con.execute("CREATE TABLE t AS SELECT i AS id, i % 13 AS a FROM range(100) r(i)")
        with pytest.raises(kanon_duckdb.errors.KanonError, match=r"already open in this process.*cursor\(\)"):
            kanon_duckdb.connect(path)
        plain = duckdb.connect(path)
        try:
            with pytest.raises(kanon_duckdb.errors.KanonError, match="already open in this process"):
                kanon_duckdb.register(plain)
        finally:
            plain.close()
        cur = con.cursor()
        cur.execute("CREATE TABLE o AS FROM k_anonymize('t', k := 5, qi := ['a'])")
        assert cur.sql("SELECT min(ec_size) >= 5, discernibility('o') FROM o").fetchall() == \
            con.sql("SELECT min(ec_size) >= 5, sum(ec_size) FROM o").fetchall()
        # the refused attempts left the first connection's functions working
        assert con.sql("SELECT k_anonymity('o', ['a_min', 'a_max'])").fetchall()[0][0] >= 5
    finally:
        con.close()
    con = kanon_duckdb.connect(path)
    try:
        assert con.sql("SELECT count(*) FROM o").fetchall() == [(100,)]
    finally:
        con.close()


def test_a_plain_connection_outliving_the_registered_one_does_not_crash(tmp_path):
    """DuckDB frees a Python UDF's callable when the connection that created it closes but keeps
    the function in the database instance another connection to the file still holds: calling
    it there segfaulted (rc -11). Now every call (k_anonymize's, a metric's) raises the error
    naming the fix, and the fix works (in a subprocess: the crash would take pytest with it)."""
    import subprocess
    import sys
    path = str(tmp_path / "x.duckdb")
    script = (
        "import duckdb, kanon_duckdb\n"
        f"a = kanon_duckdb.connect({path!r})\n"
        "a.execute(\"CREATE TABLE t AS SELECT i AS id, i % 13 AS x FROM range(100) r(i)\")\n"
        f"b = duckdb.connect({path!r})\n"
        "a.close()\n"
        "from kanon_duckdb import udf_spec\n"
        "kept = len(udf_spec._KEPT)\n"
        "calls = (\"SELECT count(*) FROM k_anonymize('t', k := 5, qi := ['x'])\",\n"
        "         \"SELECT k_anonymity('t', ['x'])\")\n"
        "def refused():\n"
        "    for sql in calls:\n"
        "        try:\n"
        "            b.sql(sql).fetchall()\n"
        "        except duckdb.Error as exc:\n"
        "            assert 'kanon-duckdb connection that registered these functions on this "
        "database was closed' in str(exc), exc\n"
        "            assert 'kanon_duckdb.connect(path)' in str(exc), exc\n"
        "        else:\n"
        "            raise AssertionError(sql)\n"
        "refused()\n"
        "# the second time after another registration, which released the closed one's functions\n"
        "# (the connection registered meanwhile keeps its own working)\n"
        "c = kanon_duckdb.connect()\n"
        "c.execute(\"CREATE TABLE t AS SELECT i AS id, i % 13 AS x FROM range(100) r(i)\")\n"
        "released = [o for o in udf_spec._KEPT[:kept] if o.fn is None]\n"
        "assert len(released) == kept > 30, (len(released), kept)\n"
        "assert c.sql(\"SELECT min(ec_size) FROM k_anonymize('t', k := 5, qi := ['x'])\""
        ").fetchall()[0][0] >= 5\n"
        "c.close()\n"
        "refused()\n"
        "b.close()\n"
        "# the fix the message names works: the file connects and anonymizes again\n"
        f"a = kanon_duckdb.connect({path!r})\n"
        "assert a.sql(\"SELECT min(ec_size) FROM k_anonymize('t', k := 5, qi := ['x'])\""
        ").fetchall()[0][0] >= 5\n"
        "a.close()\n"
        "print('ok')\n")
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=str(__import__("pathlib").Path(__file__).parents[1]))
    assert proc.returncode == 0, (proc.returncode, proc.stderr[-500:])
    assert proc.stdout.rstrip().endswith("\nok") or proc.stdout.strip() == "ok", proc.stdout
