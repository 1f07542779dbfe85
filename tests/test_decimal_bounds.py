"""DECIMAL numeric QIs publish their bounds in the column's own DECIMAL(p, s), any p
(published.bound_type), holding exactly data values, for every algorithm and on the TEMP-table
path too. Checked the way an independent reader would: the source as Python ``Decimal``, the
bounds as fetched, compared exactly; gcp(), kanon_qi_loss and the run's qi_loss against an exact
Fraction recomputation.

Before: every DECIMAL QI published DOUBLE bounds, the float64 nearest the class extreme, e.g.
c_min = 0.1000000000000000055 for a row holding Decimal('0.1'): "untruthful" compared exactly;
then (s24) DECIMAL(p <= 15) published exactly, a wider one still DOUBLE (``w`` and ``x`` below:
values of 18 and 24 digits, many sharing one DOUBLE) and every DECIMAL of a TEMP table DOUBLE.
"""
from decimal import Context, Decimal
from fractions import Fraction

import numpy as np
import pytest

import kanon_duckdb
import naive_metrics
from kanon_duckdb.algorithms import registry
from kanon_duckdb.rewrite import kanon_rewrite

N = 160
COLS = {  # column -> (SQL type, the bounds' SQL type)
    "a": ("DECIMAL(12,3)", "DECIMAL(12,3)"),
    "b": ("DECIMAL(5,2)", "DECIMAL(5,2)"),
    "w": ("DECIMAL(18,4)", "DECIMAL(18,4)"),
    "x": ("DECIMAL(38,10)", "DECIMAL(38,10)"),
}
EXACT = ("a", "b", "w", "x")  # the columns whose bounds are compared as exact decimals


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    rng = np.random.default_rng(11)
    rows = []
    for i in range(N):
        a = Decimal(int(rng.integers(-2_000_000, 2_000_000))).scaleb(-3)  # x.yyy, mostly inexact
        b = "NULL" if i % 17 == 5 else str(Decimal(int(rng.integers(-999, 1000))).scaleb(-2))
        # 18 digits near 9e13: neighbours 0.0001 apart share a DOUBLE (its step there: 0.0156)
        w = (Decimal(91234567890123) + Decimal(int(rng.integers(0, 3000))).scaleb(-4))
        # 19 digits, scale 10 (unscaled 8.1e18, within BIGINT): neighbours 1e-10 apart share one
        x = Decimal(int(rng.integers(-3000, 3000))).scaleb(-10) + Decimal(812345678)  # DOUBLE
        rows.append(f"({i}, '{a}', '{b}' , '{w}', '{x}', 'c{i % 3}')".replace("'NULL'", "NULL"))
    casts = ", ".join(f"{q}::{typ} AS {q}" for q, (typ, _) in COLS.items())
    c.execute(f"CREATE TABLE dec_src AS SELECT id, {casts}, c FROM (VALUES {', '.join(rows)}) "
              f"v(id, {', '.join(COLS)}, c)")
    c.execute("INSERT INTO dec_src VALUES (1000, 0.1, 0.1, 0.1, 0.1, 'c0'), "
              "(1001, 0.1, 0.1, 0.1, 0.1, 'c0'), (1002, 0.2, 0.3, 0.3, 0.3, 'c1')")  # not exact
    # in float64; and w / x values one unit of the scale apart that share one DOUBLE
    assert c.execute("SELECT count(DISTINCT w) > count(DISTINCT w::DOUBLE), "
                     "count(DISTINCT x) > count(DISTINCT x::DOUBLE) FROM dec_src").fetchall() \
        == [(True, True)]
    yield c
    c.close()


def _exact_check(con, qi):
    """(exact gcp, {qi: exact mean NCP}) of dec_out against dec_src, asserting on the way that
    every bound of an EXACT column is a value of the column and every row lies within its
    bounds, as Python Decimals; suppressed rows and NULL values publish a NULL range."""
    num = [q for q in qi if q in COLS]
    sel = ", ".join(f"t.{q}, o.{q}_min, o.{q}_max" for q in num)
    rows = con.execute(f"SELECT o.suppressed, o.c, {sel} FROM dec_out o JOIN dec_src t USING (id)"
                       ).fetchall()
    assert len(rows) == N + 3
    values = {q: {r[2 + 3 * i] for r in rows} - {None} for i, q in enumerate(num)}
    glo = {q: Fraction(min(v)) for q, v in values.items()}
    ghi = {q: Fraction(max(v)) for q, v in values.items()}
    for r in rows:
        sup = r[0]
        for i, q in enumerate(num):
            v, lo, hi = r[2 + 3 * i: 5 + 3 * i]
            if sup or v is None:
                assert lo is None and hi is None, (q, sup, v, lo, hi)
            elif lo is not None:
                if q in EXACT:
                    assert isinstance(lo, Decimal) and isinstance(hi, Decimal), (q, lo, hi)
                    assert lo in values[q] and hi in values[q], (q, lo, hi)  # data values
                    assert lo <= v <= hi, (q, v, lo, hi)  # truthful, exactly
    return naive_metrics.exact_losses(rows, num, qi, glo, ghi)


@pytest.mark.parametrize("algo", sorted(registry()))
def test_decimal_bounds_are_exact_data_values_and_gcp_exact(con, algo):
    qi = list(COLS) + ["c"]
    params = ", sensitive := 'c'" if algo == "info2means" else ""
    if algo == "info2means":
        qi = list(COLS)
    con.execute(f"CREATE OR REPLACE TABLE dec_out AS FROM k_anonymize('dec_src', k := 4, "
                f"algo := '{algo}', qi := {qi}{params})")
    rel = con.sql("FROM dec_out")
    types = dict(zip(rel.columns, map(str, rel.types)))
    for q, (_, want) in COLS.items():
        assert (types[f"{q}_min"], types[f"{q}_max"]) == (want, want), (algo, q)
    assert con.execute("SELECT min(ec_size) FROM dec_out").fetchone()[0] >= 4
    gcp, per_qi = _exact_check(con, qi)
    naive_metrics.assert_losses_equal(con, "dec_out", gcp, per_qi)


@pytest.mark.parametrize("algo", ["mondrian", "optimal", "kmember"])
def test_the_rewriter_reads_decimal_bounds_as_it_read_doubles(con, algo):
    """query_error and kanon_rewrite on a DECIMAL output give what they gave on the DOUBLE
    bounds published before (the same values, exact in float64)."""
    con.execute(f"CREATE OR REPLACE TABLE dec_out AS FROM k_anonymize('dec_src', k := 4, "
                f"algo := '{algo}', qi := ['a', 'b', 'c'])")
    con.execute("CREATE OR REPLACE TABLE dec_out_dbl AS SELECT * REPLACE (a_min::DOUBLE AS a_min, "
                "a_max::DOUBLE AS a_max, b_min::DOUBLE AS b_min, b_max::DOUBLE AS b_max) FROM dec_out")
    queries = ["SELECT count(*) FROM dec_src WHERE a BETWEEN -500.125 AND 700.5",
               "SELECT c, avg(b), count(*) FROM dec_src WHERE a > 0.1 GROUP BY c ORDER BY c",
               "SELECT avg(a), sum(b) FROM dec_src",
               "SELECT count(*) FROM dec_src WHERE b <= -1.25 OR a < 0.1"]
    for sql in queries:
        got = con.execute("FROM query_error(?, 'dec_src', 'dec_out')", [sql]).fetchall()
        old = con.execute("FROM query_error(?, 'dec_src', 'dec_out_dbl')", [sql]).fetchall()
        assert got and len(got) == len(old), sql
        for g, o in zip(got, old):
            assert [x if isinstance(x, str) else pytest.approx(float(x), rel=1e-12)
                    for x in g] == [x if isinstance(x, str) else float(x) for x in o], sql
        assert con.execute(kanon_rewrite(con, sql, "dec_out")).fetchall()


@pytest.mark.parametrize("algo", ["mondrian", "kmember", "optimal"])
def test_a_temp_tables_decimal_bounds_are_its_own_type_and_exact(con, algo):
    """The TEMP-table path (sql/caller_read.sql) publishes the same DECIMAL(p, s) bounds, the
    same values, as the base-table path."""
    con.execute("CREATE OR REPLACE TEMP TABLE dec_tmp AS FROM dec_src")
    args = f"k := 4, algo := '{algo}', qi := ['a', 'b', 'w', 'x', 'c']"
    base = con.sql(f"SELECT * EXCLUDE (kanon_run) FROM k_anonymize('dec_src', {args}) ORDER BY id")
    temp = con.sql(f"SELECT * EXCLUDE (kanon_run) FROM k_anonymize('dec_tmp', {args}) ORDER BY id")
    assert [str(t) for t in temp.types] == [str(t) for t in base.types]
    assert temp.fetchall() == base.fetchall()
    con.execute("DROP TABLE dec_tmp")


WIDE = {  # column -> SQL type: unscaled integers (value * 10^s) far outside BIGINT
    "h": "DECIMAL(38,0)",  # near +-10^30, and +-(10^38 - 1), DECIMAL(38,0)'s extremes
    "m": "DECIMAL(38,10)",  # money near +-10^12 to the 1e-10 (unscaled ~10^22)
}
WIDE_N = 120


@pytest.fixture(scope="module")
def wide():
    """wide_src: h and m (WIDE) with negatives and NULLs, beside a narrow DECIMAL (a), a
    BIGINT (n: another user of the integer lists) and a categorical c."""
    c = kanon_duckdb.connect()
    rng = np.random.default_rng(5)
    rows = []
    for i in range(WIDE_N):
        sign = -1 if i % 2 else 1
        h = "NULL" if i % 13 == 4 else str(sign * (10 ** 30 + int(rng.integers(0, 5000))))
        if i in (7, 8):
            h = str(sign * (10 ** 38 - 1))
        m = ("NULL" if i % 11 == 3 else
             str(sign * (Decimal(10 ** 12 + int(rng.integers(0, 40)))
                         + Decimal(int(rng.integers(0, 3000))).scaleb(-10))))  # many per DOUBLE
        a = Decimal(int(rng.integers(-99999, 99999))).scaleb(-3)
        n = int(rng.integers(-(2 ** 62), 2 ** 62))
        rows.append(f"({i}, {h}, {m}, {a}, {n}, 'c{i % 3}')")
    c.execute(f"CREATE TABLE wide_src AS SELECT id, h::{WIDE['h']} AS h, m::{WIDE['m']} AS m, "
              f"a::DECIMAL(12,3) AS a, n::BIGINT AS n, c "
              f"FROM (VALUES {', '.join(rows)}) v(id, h, m, a, n, c)")
    assert c.execute("SELECT count(DISTINCT h) > count(DISTINCT h::DOUBLE), "
                     "count(DISTINCT m) > count(DISTINCT m::DOUBLE), count(*) - count(h), "
                     "count(*) - count(m), min(m) < 0 FROM wide_src").fetchall() \
        == [(True, True, 9, 11, True)]
    yield c
    c.close()


def _wide_check(con, out, qi):
    """Every non-NULL bound of ``out`` (an output of wide_src) is a Decimal of the column's
    values and holds its row exactly, a NULL value or suppressed row publishes a NULL range, the
    bounds have the column's DECIMAL type; gcp, kanon_qi_loss and qi_loss are the exact ones."""
    rel = con.sql(f"FROM {out}")
    types = dict(zip(rel.columns, map(str, rel.types)))
    for q, typ in WIDE.items():
        assert (types[f"{q}_min"], types[f"{q}_max"]) == (typ, typ), (out, q, types)
    num = [q for q in qi if q != "c"]
    sel = ", ".join(f"t.{q}, o.{q}_min, o.{q}_max" for q in num)
    rows = con.execute(f"SELECT o.suppressed, o.c, {sel} FROM {out} o JOIN wide_src t USING (id)"
                       ).fetchall()
    assert len(rows) == WIDE_N
    assert con.execute(f"SELECT min(ec_size) FROM {out}").fetchone()[0] >= 4
    values = {q: {r[2 + 3 * i] for r in rows} - {None} for i, q in enumerate(num)}
    for r in rows:
        for i, q in enumerate(num):
            v, lo, hi = r[2 + 3 * i: 5 + 3 * i]
            if r[0] or v is None:
                assert lo is None and hi is None, (q, r[0], v, lo, hi)
            elif lo is not None:
                assert lo in values[q] and hi in values[q], (q, lo, hi)  # data values
                assert lo <= v <= hi, (q, v, lo, hi)  # truthful, exactly
    glo = {q: Fraction(min(v)) for q, v in values.items()}
    ghi = {q: Fraction(max(v)) for q, v in values.items()}
    gcp, per_qi = naive_metrics.exact_losses(rows, num, qi, glo, ghi)
    naive_metrics.assert_losses_equal(con, out, gcp, per_qi)


WIDE_QI = ["h", "m", "a", "n", "c"]
WIDE_ARGS = f"k := 4, qi := {WIDE_QI}, seed := 3"


@pytest.mark.parametrize("algo", ["mondrian", "kmember", "optimal", "datafly"])
def test_a_decimal_beyond_bigint_unscaled_publishes_exact_bounds(wide, algo):
    """DECIMAL(38,0) near +-10^30 and DECIMAL(38,10) near +-10^12 (unscaled integers past
    BIGINT, carried as two halves: published.split_unscaled) publish exact DECIMAL(38, s)
    bounds on every path: the base table read in order (output_sql.positional_sql), a view
    (output_sql.output_sql, row by row), a TEMP table (sql/caller_read.sql) and the Python API,
    all the same rows. Before: refused ("outside the BIGINT range")."""
    con = wide
    args = f"{WIDE_ARGS}, algo := '{algo}'"
    con.execute("CREATE OR REPLACE VIEW wide_view AS FROM wide_src")
    con.execute("CREATE OR REPLACE TEMP TABLE wide_tmp AS FROM wide_src")
    outs = {}
    for path, src in (("base", "wide_src"), ("view", "wide_view"), ("temp", "wide_tmp")):
        con.execute(f"CREATE OR REPLACE TABLE wide_out_{path} AS FROM k_anonymize('{src}', {args})")
        outs[path] = f"wide_out_{path}"
    rel = kanon_duckdb.anonymize("wide_src", k=4, qi=WIDE_QI, seed=3, algo=algo, con=con)
    rel.create("wide_out_api")
    outs["api"] = "wide_out_api"
    published = {}
    for path, out in outs.items():
        _wide_check(con, out, WIDE_QI)
        published[path] = con.execute(f"SELECT * EXCLUDE (kanon_run) FROM {out} ORDER BY id"
                                      ).fetchall()
    assert all(p == published["base"] for p in published.values()), algo
    for out in outs.values():
        con.execute(f"DROP TABLE {out}")


def test_a_scale_past_18_is_exact_on_both_paths():
    """DECIMAL(38, 20): the unscaled bounds go back through their text (published.unscaled_sql)."""
    c = kanon_duckdb.connect()
    try:
        c.execute("CREATE TABLE s20 AS SELECT i AS id, (i * 0.00000000000000000013 "
                  "- 0.0000000001)::DECIMAL(38,20) AS v FROM range(40) r(i)")
        c.execute("CREATE TEMP TABLE t20 AS FROM s20")
        outs = [c.sql(f"SELECT * FROM k_anonymize('{t}', k := 4, qi := ['v']) ORDER BY id")
                for t in ("s20", "t20")]
        assert [str(t) for t in outs[0].types][1:3] == ["DECIMAL(38,20)"] * 2
        rows = [o.fetchall() for o in outs]
        assert [r[:3] for r in rows[0]] == [r[:3] for r in rows[1]]
        values = {r[0] for r in c.execute("SELECT v FROM s20").fetchall()}
        for (i, lo, hi, *_), (v,) in zip(rows[0], c.execute("SELECT v FROM s20 ORDER BY id").fetchall()):
            assert lo in values and hi in values and lo <= v <= hi, (i, lo, v, hi)
    finally:
        c.close()


def test_the_rewriter_reads_bounds_at_decimal38s_extremes(wide):
    """kanon_rewrite / query_error on wide_src's output (h reaches +-(10^38 - 1)): midpoints and
    sums of DECIMAL(38,0) bounds there overflow DECIMAL(38) in DuckDB, so the rewriter reads
    them as DOUBLE (published.wide_bound_type). Before: 'Overflow in addition of DECIMAL(38)'."""
    con = wide
    con.execute(f"CREATE OR REPLACE TABLE wide_rw AS FROM k_anonymize('wide_src', {WIDE_ARGS})")
    assert con.execute("SELECT max(h_max) FROM wide_rw").fetchone()[0] == Decimal(10 ** 38 - 1)
    for sql in ["SELECT avg(h), sum(m) FROM wide_src", "SELECT c, avg(h) FROM wide_src GROUP BY c"]:
        got = con.execute("FROM query_error(?, 'wide_src', 'wide_rw')", [sql]).fetchall()
        assert got and all(np.isfinite(float(x)) for r in got for x in r
                           if not isinstance(x, str) and x is not None), (sql, got)
        assert con.execute(kanon_rewrite(con, sql, "wide_rw")).fetchall()
    con.execute("DROP TABLE wide_rw")


def test_a_wide_decimal_of_a_relation_or_column_named_v():
    """The look-up of a DECIMAL(p > 15)'s values (decimals._looked_up) groups by position: its
    old alias v bound to a column v, or to the row of a relation named v (a binder error)."""
    c = kanon_duckdb.connect()
    try:
        c.execute("CREATE TABLE t AS SELECT i AS id, (812345678 + i / 10000000000)::DECIMAL(38,10) "
                  "AS x, i % 3 AS v FROM range(40) r(i)")
        c.execute("CREATE VIEW v AS FROM t")
        values = {r[0] for r in c.execute("SELECT x FROM t").fetchall()}
        for src in ("t", "v"):
            got = c.execute(f"SELECT x, x_min, x_max FROM t JOIN k_anonymize('{src}', k := 4, "
                            f"qi := ['x']) USING (id)").fetchall()
            assert len(got) == 40
            for x, lo, hi in got:
                assert lo in values and hi in values and lo <= x <= hi, (src, x, lo, hi)
    finally:
        c.close()


@pytest.mark.parametrize("scale", [0, 4, 10, 18, 20])
def test_wide_unscaled_halves_turn_back_into_the_exact_decimal(scale):
    """published.split_unscaled then unscaled_sql give back every DECIMAL(38, s) value exactly:
    both sides of the BIGINT fast path (high = low's sign), the int64 edges, DECIMAL(38)'s
    extremes, negatives."""
    from kanon_duckdb.published import split_unscaled, unscaled_sql
    c = kanon_duckdb.connect()
    try:
        us = [0, 1, -1, 12345, -12345, 2 ** 63 - 1, -2 ** 63, 2 ** 63, -2 ** 63 - 1, 2 ** 64,
              -2 ** 64, 10 ** 30 + 7, -(10 ** 30) - 7, 10 ** 38 - 1, -(10 ** 38 - 1),
              10 ** 38 - 2 ** 63, -(10 ** 38) + 2 ** 63 + 1]
        high, low = split_unscaled(us)
        c.execute("CREATE TABLE halves AS SELECT unnest(?::BIGINT[]) AS h, unnest(?::BIGINT[]) AS l",
                  [high.tolist(), low.tolist()])
        got = [r[0] for r in c.execute(
            f"SELECT {unscaled_sql('h', f'DECIMAL(38,{scale})', 'l')} FROM halves").fetchall()]
        wide = Context(prec=80)  # the default 28 digits would round the reference
        assert got == [Decimal(u).scaleb(-scale, context=wide) for u in us]
        assert c.execute(f"SELECT {unscaled_sql('NULL::BIGINT', 'DECIMAL(38,2)', 'NULL::BIGINT')}"
                         ).fetchall() == [(None,)]
    finally:
        c.close()
