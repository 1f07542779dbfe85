"""Bad input: a DuckDB error that names the problem, no table left behind, source untouched."""
import duckdb
import pytest

import kanon_duckdb
import kanon_duckdb.algorithms


@pytest.fixture()
def con():
    c = kanon_duckdb.connect()
    c.execute("CREATE TABLE t AS SELECT i AS id, i % 7 AS a, ['x','y'][1 + i % 2] AS b, "
              "CASE WHEN i = 3 THEN 'abc' ELSE '1' END AS txt FROM range(20) r(i)")
    c.execute("CREATE TABLE empty_t (a INTEGER, b VARCHAR)")
    yield c
    c.close()


def fingerprint(con, table):
    return con.sql(f"SELECT count(*), sum(hash(COLUMNS(*))) FROM {table}").fetchall()


CASES = [
    ("FROM k_anonymize('t', k := 0, qi := ['a'])", "k=0 is invalid"),
    ("FROM k_anonymize('t', k := -3, qi := ['a'])", "k must be at least 1"),
    ("FROM k_anonymize('t', k := 21, qi := ['a'])", "exceeds the number of rows (20)"),
    ("FROM k_anonymize('t', k := 2, algo := 'nope', qi := ['a'])", "valid algorithms are: "),
    # a name no cursor sees is read in the caller's query (caller_read.py): DuckDB's own error
    ("FROM k_anonymize('nope', k := 2, qi := ['a'])", "Table with name nope does not exist"),
    ("FROM k_anonymize('t', k := 2, qi := ['zz'])", "column 'zz' does not exist"),
    ("FROM k_anonymize('empty_t', k := 2, qi := ['a'])", "is empty"),
    ("FROM k_anonymize('t', k := 2)", "no quasi-identifiers"),
    ("FROM k_anonymize('t', k := 2, qi := ['txt'], numeric := ['txt'])", "non-numeric text: 'abc'"),
    ("FROM k_anonymize('t', k := 2, qi := ['a'], stars := 3)", "does not apply to algo 'mondrian'"),
    ("FROM k_anonymize('t', k := 2, qi := ['a', 'a'])", "twice"),
]


@pytest.mark.parametrize("sql, message", CASES)
def test_bad_input_raises_named_error(con, sql, message):
    before = fingerprint(con, "t")
    with pytest.raises(duckdb.Error, match=message.replace("(", r"\(").replace(")", r"\)")):
        con.execute(sql).fetchall()
    assert fingerprint(con, "t") == before


def test_unknown_algo_lists_the_valid_ones(con):
    with pytest.raises(duckdb.Error) as err:
        con.execute("FROM k_anonymize('t', k := 2, algo := 'nope', qi := ['a'])").fetchall()
    assert "mondrian" in str(err.value)


def test_values_missing_from_tree_are_named_with_counts(con):
    con.execute("INSERT INTO kanon_taxonomy VALUES ('b', 'x', '*'), ('b', '*', NULL)")
    with pytest.raises(duckdb.Error, match=r"'y' \(10 rows\)"):
        con.execute("FROM k_anonymize('t', k := 2, qi := ['b'])").fetchall()


def test_hostile_table_name_is_an_error_and_nothing_is_dropped(con):
    before = fingerprint(con, "t")
    with pytest.raises(duckdb.Error, match="does not exist"):
        con.execute("""FROM k_anonymize('t"; DROP TABLE t; --', k := 2, qi := ['a'])""").fetchall()
    assert fingerprint(con, "t") == before


def test_hostile_column_name_is_quoted(con):
    con.execute('CREATE TABLE q ("we""ird; col" INTEGER, v INTEGER)')
    con.execute("INSERT INTO q SELECT i % 5, i FROM range(30) r(i)")
    rows = con.sql("""SELECT min(ec_size) FROM k_anonymize('q', k := 3, qi := ['we"ird; col'])""").fetchall()
    assert rows[0][0] >= 3


def test_failed_create_leaves_no_table(con):
    with pytest.raises(duckdb.Error):
        con.execute("CREATE TABLE out_t AS FROM k_anonymize('t', k := 99, qi := ['a'])")
    assert con.sql("SELECT count(*) FROM duckdb_tables() WHERE table_name = 'out_t'").fetchall()[0][0] == 0


def test_source_table_is_never_modified(con):
    before = fingerprint(con, "t")
    con.execute("CREATE TABLE out_t AS FROM k_anonymize('t', k := 4, qi := ['a', 'b'])")
    assert fingerprint(con, "t") == before


def test_null_values_form_their_own_category_and_stay_k_anonymous(con):
    con.execute("CREATE TABLE n AS SELECT i AS id, CASE WHEN i % 4 = 0 THEN NULL ELSE i % 9 END AS a, "
                "CASE WHEN i % 5 = 0 THEN NULL ELSE ['p','q','r'][1 + i % 3] END AS b FROM range(60) r(i)")
    con.execute("CREATE TABLE n_out AS FROM k_anonymize('n', k := 5, qi := ['a', 'b'])")
    assert con.sql("SELECT count(*) FROM n_out").fetchall()[0][0] == 60
    sizes = con.sql("SELECT count(*) FROM n_out GROUP BY a_min, a_max, b").fetchall()
    assert min(s[0] for s in sizes) >= 5
    # a class holding a NULL in a numeric QI publishes a NULL range
    bad = con.sql("SELECT count(*) FROM n r JOIN n_out o USING (id) WHERE r.a IS NULL AND o.a_min IS NOT NULL").fetchall()
    assert bad[0][0] == 0


@pytest.mark.parametrize("algo", sorted(kanon_duckdb.algorithms.registry()))
def test_all_null_qi_columns_are_published_as_null(con, algo):
    con.execute("CREATE TABLE nulls AS SELECT i AS id, NULL::INTEGER AS a, NULL::VARCHAR AS b, i % 3 AS x "
                "FROM range(40) r(i)")
    con.execute(f"CREATE TABLE nulls_out AS FROM k_anonymize('nulls', k := 4, algo := '{algo}', "
                f"qi := ['a', 'b', 'x'])")
    n, n_null_ranges, n_null_labels, smallest = con.sql(
        "SELECT count(*), count(*) FILTER (a_min IS NULL AND a_max IS NULL), count(*) FILTER (b IS NULL), "
        "min(ec_size) FROM nulls_out").fetchall()[0]
    assert (n, n_null_ranges, n_null_labels) == (40, 40, 40)
    assert smallest >= 4


@pytest.mark.parametrize("ddl, name", [
    ("SELECT i AS id, i % 5 AS a, i AS ec FROM range(20) r(i)", "'ec'"),
    ("SELECT i AS id, i % 5 AS a, i AS a_max FROM range(20) r(i)", "'a_max'"),
    ("SELECT i AS id, i % 5 AS a, i AS __kanon_x FROM range(20) r(i)", "'__kanon_x'"),
])
def test_a_column_that_would_be_shadowed_by_the_output_is_refused(con, ddl, name):
    con.execute(f"CREATE TABLE clash AS {ddl}")
    with pytest.raises(duckdb.Error, match=f"column\\(s\\) {name} clash with the columns k_anonymize adds"):
        con.execute("FROM k_anonymize('clash', k := 2, qi := ['a'])").fetchall()


def test_non_qi_columns_named_like_internal_words_pass_through(con):
    con.execute("CREATE TABLE rid_t AS SELECT i AS id, i % 5 AS a, i * 10 AS rid FROM range(20) r(i)")
    rows = con.sql("SELECT id, rid FROM k_anonymize('rid_t', k := 2, qi := ['a']) ORDER BY id").fetchall()
    assert rows == [(i, i * 10) for i in range(20)]


def test_a_date_column_cannot_be_forced_numeric(con):
    con.execute("CREATE TABLE dates AS SELECT DATE '2020-01-01' + i::INTEGER AS d FROM range(10) r(i)")
    with pytest.raises(duckdb.Error, match="column 'd' has type DATE, which cannot be a numeric QI"):
        con.execute("FROM k_anonymize('dates', k := 2, qi := ['d'], \"numeric\" := ['d'])").fetchall()


def test_nan_in_a_double_qi_follows_the_null_policy(con):
    con.execute("CREATE TABLE nan_t AS SELECT i AS id, CASE WHEN i % 7 = 0 THEN 'nan'::DOUBLE "
                "ELSE (i % 11) / 2 END AS x FROM range(50) r(i)")
    con.execute("CREATE TABLE nan_out AS FROM k_anonymize('nan_t', k := 4, qi := ['x'])")
    assert con.sql("SELECT count(*) FROM nan_out").fetchall()[0][0] == 50
    sizes = con.sql("SELECT count(*) FROM nan_out GROUP BY x_min, x_max").fetchall()
    assert min(s[0] for s in sizes) >= 4
    # NaN rows are inside a NULL range; every other row lies inside its published range
    bad = con.sql("SELECT count(*) FROM nan_t r JOIN nan_out o USING (id) WHERE "
                  "(isnan(r.x) AND o.x_min IS NOT NULL) OR "
                  "(NOT isnan(r.x) AND o.x_min IS NOT NULL AND NOT (r.x BETWEEN o.x_min AND o.x_max))").fetchall()
    assert bad[0][0] == 0
    # the non-NaN values' ranges are finite (NaN did not leak into a published bound)
    assert con.sql("SELECT count(*) FROM nan_out WHERE isnan(x_min) OR isnan(x_max)").fetchall()[0][0] == 0


@pytest.mark.parametrize("text", ["(SELECT * FROM t)", "SELECT * FROM t WHERE a > 1",
                                  "WITH x AS (FROM t) FROM x", "FROM t"])
def test_query_text_instead_of_a_relation_name_says_to_make_a_view(con, text):
    """k_anonymize reads relations by name; query text was reported as a missing table (or an
    unreadable file) with advice about TEMP tables and registering objects."""
    sql = "FROM k_anonymize('" + text.replace("'", "''") + "', k := 2, qi := ['a'])"
    with pytest.raises(duckdb.Error) as err:
        con.execute(sql).fetchall()
    message = str(err.value)
    assert "is a query, not the name of a relation" in message and "CREATE TEMP VIEW" in message
    assert "con.register" not in message
    con.execute("CREATE TEMP VIEW v AS " + text)  # the advice works
    assert con.execute("SELECT min(ec_size) >= 2 FROM k_anonymize('v', k := 2, qi := ['a'])").fetchall() == [(True,)]
