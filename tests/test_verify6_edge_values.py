"""Regressions found by the independent checker of verify6 (a from-scratch recomputation of
k-anonymity, truthfulness and the metrics over data shapes not tried before).

Each test reads the raw and the published rows with plain DuckDB and checks them in Python:
one output row per input row (paired by a unique ``rid``), every class of at least k rows,
every raw value inside its published range.
"""
from collections import defaultdict

import pytest

import kanon_duckdb
from kanon_duckdb.algorithms import registry

ALGOS = sorted(registry())


def _extra(algo):
    return {"sensitive": "'s'"} if algo == "info2means" else {}


def _anonymize(con, src, qi, k, algo, **params):
    args = "".join(f", {a} := {v}" for a, v in {**_extra(algo), **params}.items())
    qis = ", ".join(f"'{q}'" for q in qi)
    con.execute(f"CREATE OR REPLACE TABLE out AS FROM k_anonymize('{src}', k := {k}, "
                f"algo := '{algo}', qi := [{qis}]{args})")


def _check_numeric(con, src, q, k):
    raw = dict(con.execute(f"SELECT rid, {q} FROM {src}").fetchall())
    out = con.execute(f"SELECT rid, {q}_min, {q}_max, ec, suppressed FROM out").fetchall()
    assert sorted(r[0] for r in out) == sorted(raw)
    sizes = defaultdict(int)
    for rid, lo, hi, ec, sup in out:
        sizes[ec, sup] += 1
        if not sup:
            assert lo is not None and lo <= raw[rid] <= hi, (rid, raw[rid], lo, hi)
    assert all(n >= k for (ec, sup), n in sizes.items() if not sup)


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    # widths below 2^-1022: the reciprocal of the range overflows a double
    c.execute("CREATE TABLE den AS SELECT i AS rid, (i % 13) * 1e-310 AS x, "
              "CASE WHEN i % 3 = 2 THEN 5e-324 * (i % 7) ELSE 0.0 END AS z, "
              "['a', 'b'][1 + i % 2] AS s FROM range(120) r(i)")
    yield c
    c.close()


@pytest.mark.parametrize("algo", ALGOS)
def test_subnormal_range(con, algo):
    """A DOUBLE QI whose values lie within a subnormal range (1e-310 apart): oka crashed with
    "'list' argument must have no negative elements" (1/range overflowed to inf, its costs were
    NaN) and every clustering kernel warned of an overflow; the column now travels as ranks."""
    _anonymize(con, "den", ["x", "z"], 4, algo)
    _check_numeric(con, "den", "x", 4)
    _check_numeric(con, "den", "z", 4)


@pytest.fixture(scope="module")
def flag_con():
    c = kanon_duckdb.connect()
    # a flag column: one value or NULL (6 NULLs, so k = 8 mixes them with 'Y' rows)
    c.execute("CREATE TABLE flag AS SELECT i AS rid, CASE WHEN i % 10 = 0 THEN NULL ELSE 'Y' END "
              "AS f, (i % 4)::VARCHAR AS g, ['a', 'b'][1 + i % 2] AS s FROM range(57) r(i)")
    c.execute("CREATE TABLE flag2 AS SELECT rid, f AS f2, g, s FROM flag")
    c.execute("INSERT INTO kanon_taxonomy VALUES ('f2', 'ANY', NULL), ('f2', 'Y', 'ANY')")
    yield c
    c.close()


@pytest.mark.parametrize("algo", ["mondrian", "kmember", "bottomup", "optimal", "datafly"])
@pytest.mark.parametrize("col,root", [("f", "*"), ("f2", "ANY")])
def test_single_value_and_null_root_costs_one(flag_con, algo, col, root):
    """A categorical QI holding one value and NULLs (flat tree, or a tree of one leaf): a row
    publishing the root hides whether it was 'Y' or NULL, two leaves under the NULL policy, so
    its NCP is 1 (and 0 for 'Y' or NULL). Before, kanon_runs.qi_loss counted the root 0 (the NULL
    leaf left out: one leaf) while gcp() counted the flat tree's '*' 1 and the one-leaf tree's
    root 0: three answers for one definition."""
    con = flag_con
    con.execute(f"CREATE OR REPLACE TABLE out AS FROM k_anonymize('{'flag' if col == 'f' else 'flag2'}', "
                f"k := 8, algo := '{algo}', qi := ['{col}', 'g'])")
    rows = con.execute(f"SELECT {col}, g FROM out").fetchall()
    n = len(rows)
    assert any(r[0] == root for r in rows)
    expected = sum(1.0 for r in rows if r[0] == root) / n
    qi_loss, = con.execute("SELECT qi_loss FROM kanon_runs ORDER BY run_id DESC LIMIT 1").fetchall()[0]
    assert qi_loss[0] == pytest.approx(expected, abs=1e-12)
    sql_loss = dict(con.execute("SELECT qi, ncp FROM kanon_qi_loss('out')").fetchall())
    assert sql_loss[col] == pytest.approx(expected, abs=1e-12)
    g_expected = expected / 2 + qi_loss[1] / 2
    assert con.execute("SELECT gcp('out')").fetchall()[0][0] == pytest.approx(g_expected, abs=1e-12)


def test_wide_decimal_bounds_contain_raw_values_exactly():
    """DECIMAL(18,4) values whose neighbours share one DOUBLE: the bounds were DOUBLEs rounded to
    nearest, so a class's extreme lay half an ulp outside its range compared exactly. They are
    now DECIMAL(18,4) data values (kanon_duckdb.decimals), containing every raw value exactly."""
    from decimal import Decimal
    con = kanon_duckdb.connect()
    con.execute("CREATE TABLE d AS SELECT i AS rid, "
                "(12345678901234.5678 - (i * 37 % 101) * 0.0001)::DECIMAL(18,4) AS x "
                "FROM range(200) r(i)")
    con.execute("CREATE TABLE out AS FROM k_anonymize('d', k := 4, qi := ['x'])")
    rows = con.execute("SELECT d.x, o.x_min, o.x_max FROM d JOIN out o USING (rid)").fetchall()
    types = con.execute("SELECT data_type FROM information_schema.columns WHERE table_name = 'out' "
                        "AND column_name IN ('x_min', 'x_max')").fetchall()
    con.close()
    assert types == [("DECIMAL(18,4)",)] * 2
    assert len(rows) == 200
    assert all(isinstance(lo, Decimal) and Decimal(lo) <= v <= Decimal(hi) for v, lo, hi in rows)


@pytest.mark.parametrize("algo", ["datafly", "optimal"])
def test_query_error_when_every_range_is_null_and_raw_holds_infinities(algo):
    """Every published range NULL (the lattice's top level) and the raw column holding +-inf and
    NaN: query_error took the global range from the raw min/max (-inf / NaN) and failed with
    "OverflowError: cannot convert Infinity to integer ratio". The range is now the finite one
    (-1e308..1e308, also the run's record), so each row counts half for x > 0."""
    con = kanon_duckdb.connect()
    con.execute("CREATE TABLE f AS SELECT i AS rid, ['inf', '-inf', '1e308', '-1e308', '0.0', 'nan', "
                "'0.5', '5e-324', '0.1'][1 + i % 9]::DOUBLE AS x, i % 3 AS y FROM range(42) r(i)")
    con.execute(f"CREATE TABLE o AS FROM k_anonymize('f', k := 12, algo := '{algo}', qi := ['x', 'y'])")
    assert con.execute("SELECT count(*) FROM o WHERE x_min IS NOT NULL").fetchall()[0][0] == 0
    (raw, est), = con.execute("SELECT raw_value, anon_estimate FROM query_error("
                              "'SELECT count(*) FROM f WHERE x > 0.0', 'f', 'o')").fetchall()
    con.close()
    assert raw == sum(1 for i in range(42) if i % 9 in (0, 2, 5, 6, 7, 8))  # inf, 1e308, NaN (DuckDB: NaN > 0), 0.5, 5e-324, 0.1
    assert est == pytest.approx(42 * 0.5)


def test_query_error_on_a_class_wider_than_the_largest_double():
    """One class [-1e308, 1e308]: its width overflows a double, so the share of x > 0.25 read
    inf in the divisor and the estimate 0 (raw 21); it is now taken on halves: 42 / 2."""
    con = kanon_duckdb.connect()
    con.execute("CREATE TABLE f2 AS SELECT i AS rid, ['1e308', '-1e308', '0.0', '0.5'][1 + i % 4]::DOUBLE "
                "AS x FROM range(42) r(i)")
    con.execute("CREATE TABLE o2 AS FROM k_anonymize('f2', k := 42, qi := ['x'])")
    assert con.execute("SELECT DISTINCT x_min, x_max FROM o2").fetchall() == [(-1e308, 1e308)]
    (raw, est), = con.execute("SELECT raw_value, anon_estimate FROM query_error("
                              "'SELECT count(*) FROM f2 WHERE x > 0.25', 'f2', 'o2')").fetchall()
    con.close()
    assert raw == 21 and est == pytest.approx(21.0)


def _read_by_key(col, extra, src):
    con = kanon_duckdb.connect()
    con.execute(f"CREATE TABLE f AS SELECT i AS rid, {col} AS v FROM range(150) r(i)")
    con.execute("CREATE VIEW fv AS FROM f")
    con.execute("CREATE TEMP TABLE ft AS FROM f")
    con.execute(f"CREATE TABLE o AS FROM k_anonymize('{src}', k := 2, qi := ['v']{extra})")
    rows = con.execute("SELECT f.v, o.v, o.ec_size FROM f JOIN o USING (rid)").fetchall()
    con.close()
    assert len(rows) == 150 and all(size >= 2 for _, _, size in rows)
    return rows


@pytest.mark.parametrize("src", ["fv", "ft"])
def test_interval_qi_read_by_row_key(src):
    """DuckDB's hash of INTERVAL collides on ordinary values (hash(0 days) = hash(31 days) = 0,
    hash(1 day) = hash(30 days)) and the row key was hash(QIs): every read by key (a view, a
    TEMP table, the Python API, a base table past the positional size) refused with 'two
    different QI tuples share one 64-bit row key'. INTERVALs are now hashed as text."""
    rows = _read_by_key("to_days(i % 50)", "", src)
    assert all(str(raw.days) in pub or pub == "*" for raw, pub, _ in rows)


@pytest.mark.xfail(strict=True, reason=(
    "a DOUBLE made categorical keeps '-0.0' and '0.0' apart (two leaves) while the row key "
    "(encoding.row_key_sql, caller_read.caller_sql) hashes them alike (hash(-0.0) = hash(0.0)): "
    "a read by key refuses with 'two different QI tuples share one 64-bit row key'. The key "
    "owners should hash a categorical DOUBLE as text (the caller-read macro cannot tell a "
    "categorical DOUBLE, and DuckDB's overloads cast DECIMAL to DOUBLE), or the encoding fold "
    "-0.0 into 0.0"))
def test_negative_zero_categorical_read_by_row_key():
    _read_by_key("['-0.0', '0.0', '1.5'][1 + i % 3]::DOUBLE", ", categorical := ['v']", "fv")


@pytest.mark.parametrize("typ", ["BIGINT", "UBIGINT"])
def test_query_error_on_integers_spanning_the_bigint_range(typ):
    """A BIGINT (or UBIGINT) QI whose values reach +-2^63: the rewritten query took
    x_max - x_min + 1 in BIGINT and DuckDB stopped with "Overflow in subtraction of INT64";
    the bounds are now widened to HUGEINT first. One class [lo, hi] of 40 rows: the estimate of
    x > 10 is 40 * (hi - 10) / (hi - lo + 1)."""
    lo, hi = (-(2 ** 63) + 1, 2 ** 63 - 1) if typ == "BIGINT" else (0, 2 ** 63 - 1)
    con = kanon_duckdb.connect()
    con.execute(f"CREATE TABLE w AS SELECT i AS rid, CASE i % 4 WHEN 0 THEN {lo} WHEN 1 THEN {hi} "
                f"ELSE i END::{typ} AS x FROM range(40) r(i)")
    con.execute("CREATE TABLE o AS FROM k_anonymize('w', k := 40, qi := ['x'])")
    assert con.execute("SELECT DISTINCT x_min, x_max FROM o").fetchall() == [(lo, hi)]
    (raw, est), = con.execute("SELECT raw_value, anon_estimate FROM query_error("
                              "'SELECT count(*) FROM w WHERE x > 10', 'w', 'o')").fetchall()
    con.close()
    assert raw == 10 + sum(1 for i in range(40) if i % 4 > 1 and i > 10)
    assert est == pytest.approx(40 * (hi - 10) / (hi - lo + 1), rel=1e-12)
