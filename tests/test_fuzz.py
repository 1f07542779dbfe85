"""Standing fuzz test of ``k_anonymize`` (issue 9, section 8).

Hypothesis draws small tables of every DuckDB type the product accepts as a QI or carries through
(integers of every width, DECIMAL, DOUBLE/REAL, VARCHAR with quotes and unicode, DATE, TIMESTAMP,
BOOLEAN, NULLs), random taxonomies for the text QIs, a random k and (for the algorithms that take
one) a random suppression limit, and runs every algorithm. Each output is checked from scratch:

- one output row per input row;
- k-anonymity over the published QI values of the rows that are not suppressed, and suppressed
  rows publish nothing (root label, NULL range);
- truthfulness of every cell: a numeric raw value lies in its published ``[c_min, c_max]``
  (integers compared exactly; a DECIMAL against its DOUBLE bounds as SQL compares), a NULL range only where the NULL policy allows
  it, a categorical label is the raw value or one of its ancestors;
- suppression within ``max_suppression``;
- every pass-through column unchanged (value and type);
- ``gcp()`` and ``discernibility()`` equal to the naive recomputations of tests/naive_metrics.py.

Value groups: ``ordinary`` (moderate magnitudes: must pass for every algorithm), ``extreme_int``
(type minima/maxima, values past 2^53), ``float_specials`` (NaN, +-inf, +-1e308, -0.0). Known
open bugs of other work are ``xfail(strict=True)`` with the bug named, so a fix shows up as an
XPASS failure and the mark is removed.

The default run uses a fixed, small profile (derandomized, no shrinking: ~1 minute); the ``slow``
test draws many more random examples and shrinks failures.
"""
from __future__ import annotations

import datetime as dt
import math
import random
import re
from decimal import Decimal

import duckdb
import pytest
from hypothesis import HealthCheck, Phase, example, given, settings, strategies as st

import kanon_duckdb
import naive_metrics
from kanon_duckdb.algorithms import registry

ALGOS = sorted(registry())

INT_RANGES = {
    "TINYINT": (-2**7, 2**7 - 1), "SMALLINT": (-2**15, 2**15 - 1), "INTEGER": (-2**31, 2**31 - 1),
    "BIGINT": (-2**63, 2**63 - 1), "HUGEINT": (-2**127, 2**127 - 1),
    "UTINYINT": (0, 2**8 - 1), "USMALLINT": (0, 2**16 - 1), "UINTEGER": (0, 2**32 - 1),
    "UBIGINT": (0, 2**64 - 1),
}
NUMERIC_TYPES = list(INT_RANGES) + ["DECIMAL(9,2)", "DECIMAL(18,4)", "DECIMAL(38,0)", "DOUBLE", "REAL"]
CATEGORICAL_TYPES = ["VARCHAR", "DATE", "TIMESTAMP", "BOOLEAN"]
TEXT_CHARS = st.characters(codec="utf-8", exclude_categories=("Cs", "Cc"))
TEXT = st.one_of(
    st.sampled_from(["a", "O'Brien", 'say "hi"', "naïve", "東京", "🙂", "a;b", "--x", "NULL",
                     "", " ", "x\\y", "Ω≈ç√"]),
    st.text(TEXT_CHARS, max_size=6)).filter(lambda s: s != "*")
GROUPS = ("ordinary", "extreme_int", "float_specials")
FOCUS = {"extreme_int": ["BIGINT", "BIGINT", "HUGEINT", "UBIGINT", "INTEGER", "UINTEGER", "TINYINT",
                         "DECIMAL(38,0)"],
         "float_specials": ["DOUBLE", "DOUBLE", "REAL"]}


# ------------------------------------------------------------------------------- values
def _int_values(draw, typ, group):
    lo, hi = INT_RANGES[typ]
    if group == "extreme_int":
        # the type's ends and clusters of nearby values past 2^53 (epoch nanoseconds, ids)
        bases = [b for b in (lo, hi - 40, 2**53, 2**62, -(2**62), 2**63 - 41, -(2**63), 0)
                 if lo <= b and b + 40 <= hi]
        return st.one_of(st.sampled_from([lo, hi]),
                         st.builds(lambda b, d: b + d, st.sampled_from(bases), st.integers(0, 40)))
    return st.integers(max(lo, -1000), min(hi, 1000))


def _decimal_values(typ, group):
    p, s = map(int, re.match(r"DECIMAL\((\d+),(\d+)\)", typ).groups())
    # the type's ends, built from their digits: Decimal arithmetic rounds to the context's 28
    # digits (10**38 - 1 became 1E+38, out of DECIMAL(38,0)'s range)
    top, bottom = Decimal(f"{10 ** p - 1}E-{s}"), Decimal(f"-{10 ** p - 1}E-{s}")
    small = st.decimals(-1000, 1000, places=s, allow_nan=False, allow_infinity=False)
    if group == "extreme_int":
        return st.one_of(st.sampled_from([top, bottom, Decimal(0)]), small)
    return small


def _float_values(typ, group):
    if group == "float_specials":
        specials = [math.nan, math.inf, -math.inf, 0.0, -0.0]
        specials += [1e308, -1e308, 5e-324] if typ == "DOUBLE" else [3.0e38, -3.0e38]
        return st.one_of(st.sampled_from(specials), st.floats(-1e6, 1e6, width=32))
    return st.floats(-1e6, 1e6, width=32)  # exactly representable in REAL and DOUBLE


def value_strategy(draw, typ, group):
    if typ in INT_RANGES:
        return _int_values(draw, typ, group)
    if typ.startswith("DECIMAL"):
        return _decimal_values(typ, group)
    if typ in ("DOUBLE", "REAL"):
        return _float_values(typ, group)
    if typ == "VARCHAR":
        return TEXT
    if typ == "DATE":
        return st.dates(dt.date(1, 1, 1), dt.date(9999, 12, 31))
    if typ == "TIMESTAMP":
        return st.datetimes(dt.datetime(1900, 1, 1), dt.datetime(2200, 1, 1))
    if typ == "BOOLEAN":
        return st.booleans()
    raise AssertionError(typ)


def sql_literal(v, typ):
    """A SQL literal of ``v`` cast to ``typ`` (exact for every type drawn here)."""
    if v is None:
        return f"NULL::{typ}"
    if typ in ("DOUBLE", "REAL"):
        text = "nan" if math.isnan(v) else ("inf" if v == math.inf else "-inf" if v == -math.inf
                                            else repr(v))
        return f"'{text}'::{typ}"
    if typ == "VARCHAR":
        return "'" + v.replace("'", "''") + "'"
    if typ == "BOOLEAN":
        return "TRUE" if v else "FALSE"
    if typ in ("DATE", "TIMESTAMP"):
        return f"'{v.isoformat(sep=' ') if typ == 'TIMESTAMP' else v.isoformat()}'::{typ}"
    return f"'{v}'::{typ}"


# ------------------------------------------------------------------------------- tables
@st.composite
def tables(draw, group):
    """(n, columns [(name, type, is_qi)], rows, trees {qi: [(child, parent)]}, k, max_sup, seed)."""
    n = draw(st.integers(1, 30))
    n_qi = draw(st.integers(1, 3))
    cols = []
    for j in range(n_qi):
        kind = draw(st.sampled_from(["num", "num", "cat"]))
        typ = draw(st.sampled_from(NUMERIC_TYPES if kind == "num" else CATEGORICAL_TYPES))
        if j == 0 and group in FOCUS:  # the first QI carries the group's values
            typ = draw(st.sampled_from(FOCUS[group]))
        cols.append((f"q{j}", typ, True))
    for j in range(draw(st.integers(1, 2))):
        cols.append((f"p{j}", draw(st.sampled_from(NUMERIC_TYPES + CATEGORICAL_TYPES)), False))
    values = {}
    for name, typ, _ in cols:
        # a small pool per column, so classes have repeated values to share
        pool = draw(st.lists(value_strategy(draw, typ, group), min_size=1, max_size=6))
        null_rate = draw(st.sampled_from([0.0, 0.0, 0.2, 1.0]))
        values[name] = (pool, null_rate)
    rnd = random.Random(draw(st.integers(0, 2**32)))
    rows = []
    for i in range(n):
        row = [i]
        for name, _typ, _ in cols:
            pool, rate = values[name]
            row.append(None if rnd.random() < rate else rnd.choice(pool))
        rows.append(row)
    trees = {}
    for name, typ, is_qi in cols:
        if is_qi and typ == "VARCHAR" and draw(st.booleans()):
            trees[name] = random_tree(rnd, name, sorted({r[1 + [c[0] for c in cols].index(name)]
                                                         for r in rows} - {None}))
    k = draw(st.integers(1, max(1, min(n, 6))))
    max_sup = draw(st.sampled_from([0.0, 0.1, 0.5]))
    seed = draw(st.integers(0, 1000))
    return n, cols, rows, trees, k, max_sup, seed


def random_tree(rnd, name, leaves):
    """Edges (child, parent) of a random tree over ``leaves``: root '*', 0-2 levels of groups."""
    edges = [("*", None)]
    level = list(leaves)
    depth = rnd.randint(0, 2)
    parents_of_level = []
    for d in range(depth):
        groups = [f"{name}·g{d}.{i} '\"" for i in range(max(1, len(level) // 2))]
        parents_of_level.append([(c, rnd.choice(groups)) for c in level])
        level = groups
    for c in level:
        edges.append((c, "*"))
    for pairs in reversed(parents_of_level):
        edges += pairs
    return edges


# ------------------------------------------------------------------------------- checks
def ancestors(edges, value):
    parent = {c: p for c, p in edges}
    out = {value}
    while parent.get(value) is not None:
        value = parent[value]
        out.add(value)
    return out


def check(con, n, cols, trees, k, max_sup, algo, lattice):
    qi_num = [c for c, t, q in cols if q and (t in NUMERIC_TYPES)]
    qi_cat = [c for c, t, q in cols if q and t in CATEGORICAL_TYPES]
    passthrough = [c for c, _, q in cols if not q]
    out_types = dict(con.execute("SELECT column_name, data_type FROM duckdb_columns() "
                                 "WHERE table_name = 'fz_out'").fetchall())
    src_types = dict(con.execute("SELECT column_name, data_type FROM duckdb_columns() "
                                 "WHERE table_name = 'fz_src'").fetchall())
    assert con.execute("SELECT count(*) FROM fz_out").fetchall()[0][0] == n
    for c in passthrough:
        assert out_types[c] == src_types[c], c
        changed = con.execute(f"SELECT count(*) FROM fz_src s JOIN fz_out o USING (id) "
                              f"WHERE s.{c} IS DISTINCT FROM o.{c}").fetchall()[0][0]
        assert changed == 0, f"pass-through column {c} changed"
    sel = ["o.suppressed"]
    sel += [f"s.{c}, o.{c}_min, o.{c}_max" for c in qi_num]
    sel += [f"s.{c}::VARCHAR, o.{c}" for c in qi_cat]
    rows = con.execute(f"SELECT {', '.join(sel)} FROM fz_src s JOIN fz_out o USING (id)").fetchall()
    assert len(rows) == n
    n_sup = 0
    for r in rows:
        sup, rest = r[0], list(r[1:])
        n_sup += bool(sup)
        for c in qi_num:
            v, lo, hi = rest.pop(0), rest.pop(0), rest.pop(0)
            if lo is None or hi is None:
                assert lo is None and hi is None, (c, v, lo, hi)
                continue
            assert not sup, f"suppressed row publishes a range for {c}: [{lo}, {hi}]"
            assert v is not None and not (isinstance(v, float) and math.isnan(v)), \
                f"{c}: NULL/NaN raw value under the concrete range [{lo}, {hi}]"
            if isinstance(v, Decimal) and isinstance(lo, float):
                v = float(v)  # a DECIMAL QI publishes DOUBLE bounds: compare as SQL does
            assert lo <= v <= hi, f"{c}: raw {v!r} outside its published range [{lo!r}, {hi!r}]"
        for c in qi_cat:
            v, label = rest.pop(0), rest.pop(0)
            if sup:
                assert label == "*", f"suppressed row publishes {label!r} for {c}"
            elif v is None:
                assert label in (None, "*"), (c, label)
            else:
                assert label in ancestors(trees.get(c, [("*", None), (v, "*")]), v), (c, v, label)
    if lattice:
        assert n_sup <= math.floor(max_sup * n + 1e-9), f"{n_sup} suppressed > {max_sup} of {n}"
    published = [f"{c}_min, {c}_max" for c in qi_num] + qi_cat
    small = con.execute(f"SELECT count(*) FROM (SELECT count(*) AS m FROM fz_out WHERE NOT suppressed "
                        f"GROUP BY {', '.join(published)}) WHERE m < {k}").fetchall()[0][0]
    assert small == 0, "a class of the published values holds fewer than k rows"
    gcp = con.execute("SELECT gcp('fz_out')").fetchall()[0][0]
    assert gcp == pytest.approx(naive_metrics.gcp(con, "fz_out"), rel=1e-9, abs=1e-12)
    dm = con.execute("SELECT discernibility('fz_out')").fetchall()[0][0]
    assert dm == naive_metrics.discernibility(con, "fz_out")


def refusal_is_named(exc, cols):
    """A clear refusal of a value the kernels cannot carry: it names the column."""
    msg = str(exc)
    return any(f"'{c}'" in msg or f'"{c}"' in msg for c, _, q in cols if q)


def run_case(con, algo, case, group):
    n, cols, rows, trees, k, max_sup, seed = case
    con.execute("DROP TABLE IF EXISTS fz_src")
    con.execute("DROP TABLE IF EXISTS fz_out")
    con.execute(f"CREATE TABLE fz_src (id INTEGER, {', '.join(f'{c} {t}' for c, t, _ in cols)})")
    values = ", ".join("(" + ", ".join([str(r[0])] + [sql_literal(v, t) for v, (_, t, _) in
                                                      zip(r[1:], cols)]) + ")" for r in rows)
    con.execute(f"INSERT INTO fz_src VALUES {values}")
    con.execute("DELETE FROM kanon_taxonomy")
    for c, edges in trees.items():
        con.executemany("INSERT INTO kanon_taxonomy VALUES (?, ?, ?)", [(c, a, b) for a, b in edges])
    info = registry()[algo]
    qi = [c for c, _, q in cols if q]
    args = [f"k := {k}", f"algo := '{algo}'", f"qi := {qi!r}", f"seed := {seed}"]
    lattice = "max_suppression" in info.params
    if lattice:
        args.append(f"max_suppression := {max_sup}")
    if "sensitive" in info.params:
        args.append("sensitive := 'p0'")
    try:
        con.execute(f"CREATE TABLE fz_out AS FROM k_anonymize('fz_src', {', '.join(args)})")
    except duckdb.Error as exc:
        if group == "extreme_int" and refusal_is_named(exc, cols):
            return  # refusing a value it cannot publish exactly, naming the column, is allowed
        raise
    check(con, n, cols, trees, k, max_sup, algo, lattice)


# ------------------------------------------------------------------------------- tests
# Known open bugs (other helpers' work, issue 9 section 2 / issue 10): strict, so a fix turns
# them into XPASS failures and the mark is removed.
KNOWN: dict = {}  # (algo or "*", group) -> reason; issue 9 s.2 extreme_int / float_specials fixed by core

FAST = settings(max_examples=3, deadline=None, derandomize=True, database=None,
                phases=[Phase.explicit, Phase.generate],
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large])


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    yield c
    c.close()


def _cases():
    out = []
    for group in GROUPS:
        for algo in ALGOS:
            reason = KNOWN.get((algo, group))
            marks = [pytest.mark.xfail(strict=True, reason=reason)] if reason else []
            out.append(pytest.param(algo, group, marks=marks, id=f"{algo}-{group}"))
    return out


def _explicit(group):
    """A hand-made case per group that every run tries first (the draws may miss the edge)."""
    cols = [("q0", {"ordinary": "INTEGER", "extreme_int": "BIGINT",
                    "float_specials": "DOUBLE"}[group], True), ("q1", "VARCHAR", True),
            ("p0", "VARCHAR", False)]
    special = {"ordinary": [-5, 0, 7, None],
               "extreme_int": [2**62, 2**62 + 3, 2**62 + 5, 2**63 - 1],
               "float_specials": [math.inf, -math.inf, 1.5, math.nan]}[group]
    rows = [[i, special[i % 4], ["a", "O'Brien", "東京"][i % 3], f"p{i % 2}"] for i in range(12)]
    return (12, cols, rows, {}, 2, 0.1, 0)


@pytest.mark.parametrize("algo, group", _cases())
def test_fuzz_fast(con, algo, group):
    @FAST
    @given(case=tables(group))
    @example(case=_explicit(group))
    def run(case):
        run_case(con, algo, case, group)
    run()


@pytest.mark.slow
@pytest.mark.parametrize("algo, group", _cases())
def test_fuzz_long(con, algo, group):
    @settings(max_examples=60, deadline=None,
              suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                     HealthCheck.data_too_large])
    @given(case=tables(group))
    def run(case):
        run_case(con, algo, case, group)
    run()
