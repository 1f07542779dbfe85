"""Every kanon-duckdb macro documents itself in SQL (COMMENT ON from its doc comment) and
kanon_help() lists them (issue 12 §4)."""
import duckdb
import pytest

import kanon_duckdb
from kanon_duckdb.help import macro_docs


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    yield c
    c.close()


def test_every_kanon_function_has_a_description(con):
    bare = duckdb.connect()
    try:
        builtin = {r[0] for r in bare.execute("SELECT function_name FROM duckdb_functions()").fetchall()}
    finally:
        bare.close()
    ours = con.execute("SELECT function_name, function_type, comment FROM duckdb_functions()").fetchall()
    added = [r for r in ours if r[0] not in builtin]
    assert len({r[0] for r in added}) > 30
    internal = [r for r in added if r[0].startswith("__kanon_")]
    public = [r for r in added if not r[0].startswith("__kanon_")]
    # Python UDFs cannot carry a comment, so none is user-facing: each sits behind a macro
    assert {r[1] for r in public} <= {"macro", "table_macro"}, [r for r in public if "macro" not in r[1]]
    missing = sorted({r[0] for r in public if not (r[2] or "").strip()})
    assert missing == [], f"macros without a description (add a '-- name(...): ...' comment): {missing}"
    assert internal  # the UDFs are there, under internal names


def test_kanon_help_lists_every_public_macro(con):
    rows = con.execute("FROM kanon_help()").fetchall()
    names = {r[0] for r in rows}
    public = {r[0] for r in con.execute(
        "SELECT function_name FROM duckdb_functions() WHERE function_type IN ('macro', 'table_macro') "
        "AND comment IS NOT NULL").fetchall()}
    assert names == public
    assert {"k_anonymize", "gcp", "kanon_mapping", "kanon_help", "kanon_load_arx",
            "kanon_build_flat", "kanon_rewrite", "query_error"} <= names
    gcp = [r for r in rows if r[0] == "gcp"][0]
    assert gcp[1] == "scalar" and gcp[2] == ["tbl"] and gcp[3].startswith("gcp(tbl): Global Certainty")
    flat = [r for r in rows if r[0] == "kanon_build_flat"][0]
    assert flat[2] == ["tbl", "col", "attr"]
    assert [r[1] for r in rows if r[0] == "k_anonymize"] == ["table"]


def test_descriptions_readable_through_duckdb_functions(con):
    text = con.execute("SELECT comment FROM duckdb_functions() WHERE function_name = 'kanon_mapping'"
                       ).fetchall()[0][0]
    assert text.startswith("kanon_mapping(anon_tbl): how the published values")


def test_doc_sentence_extraction():
    sql = ("-- f(a, b): adds\n-- two numbers.\n-- More detail.\nCREATE MACRO f(a, b) AS a + b;\n"
           "-- g(x)\n--\n-- Squares x. Really.\nCREATE OR REPLACE TEMP MACRO g(x) AS x * x;\n"
           "CREATE MACRO h() AS 1;\n")
    assert macro_docs(sql) == [("f", "f(a, b): adds two numbers."),
                               ("g", "g(x) Squares x. Really."), ("h", None)]


def test_macro_kinds_read_from_the_scripts_equal_duckdbs():
    """apply_comments takes each macro's kind (COMMENT ON MACRO vs MACRO TABLE) from its CREATE
    in sql/ instead of listing duckdb_functions(): the same kinds DuckDB registered."""
    from kanon_duckdb import registration
    from kanon_duckdb.help import macro_kinds
    con = kanon_duckdb.connect()
    try:
        parsed = {n: k for _, t in registration.sql_scripts() for n, k in macro_kinds(t).items()}
        got = dict(con.execute("SELECT DISTINCT function_name, function_type FROM duckdb_functions() "
                               "WHERE function_type IN ('macro', 'table_macro')").fetchall())
        assert len(parsed) > 40 and "table_macro" in parsed.values()
        assert {n: got.get(n) for n in parsed} == parsed
    finally:
        con.close()
