"""The algorithm parameter registry: typed declarations, one validation, the generated SQL list."""
from __future__ import annotations

import duckdb
import pytest

import kanon_duckdb
from kanon_duckdb import algorithms
from kanon_duckdb.algorithms import get_algorithm, registry
from kanon_duckdb.algorithms.base import Algorithm
from kanon_duckdb.errors import InvalidParameterError
from kanon_duckdb.params import Param, all_params, coerce_params


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    c.execute("CREATE TABLE t AS SELECT i % 7 AS a, (i % 3)::VARCHAR AS b, i AS x, "
              "[i, i] AS lst, {'p': i} AS st FROM range(60) r(i)")
    yield c
    c.close()


def _err(con, sql):
    with pytest.raises(duckdb.Error) as exc:
        con.execute(sql).fetchall()
    msg = str(exc.value)
    assert "__kanon_run" not in msg and "Binder Error" not in msg, msg
    return msg


@pytest.mark.parametrize("arg, needle", [
    ("algo := 'kab', iterations := -5", "'iterations' of algo 'kab' must be an integer >= 1, got -5"),
    ("algo := 'kab', stars := 0", "'stars' of algo 'kab' must be an integer >= 1, got 0"),
    ("algo := 'kgen', mutation_rate := 7", "'mutation_rate' of algo 'kgen' must be a number in [0, 1], got 7"),
    ("algo := 'kgen', population := 0", "'population' of algo 'kgen' must be an integer >= 2, got 0"),
    ("algo := 'optimal', max_suppression := 1.5", "must be a number in [0, 1], got 1.5"),
    ("algo := 'optimal', loss := 'nope'", "'loss' of algo 'optimal' must be one of 'log', 'gcp', 'dm'"),
    ("algo := 'kab', iterations := 2.5", "must be an integer >= 1, got 2.5"),
    ("algo := 'cof_mondrian', cof_threshold := 0", "must be a number > 0, got 0"),
    ("algo := 'mondrian', iterations := 3", "parameter 'iterations' does not apply to algo 'mondrian'"),
    ("k := 'abc'", "k must be an integer >= 1, got 'abc'"),
    ("k := 2.5", "k must be an integer >= 1, got 2.5"),
    ("k := [2]", "k must be an integer >= 1, got [2]"),
    ("k := 0", "k=0 is invalid"),
    ("algo := 'kab', params := {'iterations': 3}, iterations := 4", "'iterations' is given twice"),
    ("params := 5", "params must be a STRUCT or MAP"),
])
def test_out_of_range_parameters_are_refused_with_value_and_range(con, arg, needle):
    msg = _err(con, f"FROM k_anonymize('t', qi := ['a', 'b'], {arg})")
    assert needle in msg, msg


def test_params_struct_equals_named_arguments(con):
    q = "SELECT ec, a_min, a_max, b FROM k_anonymize('t', k := 4, qi := ['a', 'b'], algo := 'kab', seed := 3, {}) ORDER BY x"
    named = con.execute(q.format("iterations := 2, stars := 2")).fetchall()
    packed = con.execute(q.format("params := {'iterations': 2, 'stars': 2}")).fetchall()
    as_map = con.execute(q.format("params := map(['iterations', 'stars'], [2, 2])")).fetchall()
    assert named == packed == as_map
    rec = con.execute("SELECT params FROM kanon_runs ORDER BY run_id DESC LIMIT 1").fetchall()[0][0]
    assert '"iterations": 2' in rec.replace(":2", ": 2") and '"stars": 2' in rec.replace(":2", ": 2")


def test_string_values_from_the_cli_are_typed():
    kab = get_algorithm("kab")
    assert coerce_params(kab, {"iterations": "7"})["iterations"] == 7
    assert coerce_params(get_algorithm("optimal"), {"loss": "GCP"})["loss"] == "gcp"
    with pytest.raises(InvalidParameterError, match="got '7.5'"):
        coerce_params(kab, {"iterations": "7.5"})


def test_macro_signature_is_generated_from_the_registry(con):
    params = con.execute(
        "SELECT parameters FROM duckdb_functions() WHERE function_name = 'k_anonymize'").fetchall()[0][0]
    for name in all_params():
        assert name in params
    for name in ("tbl", "k", "algo", "qi", "seed", "numeric", "categorical", "params"):
        assert name in params


def test_a_new_parameter_touches_one_declaration(monkeypatch):
    """An algorithm declared with a new Param is callable with it from SQL after register()."""
    base = get_algorithm("mondrian")
    seen = {}

    def run(data, k, seed, params, progress):
        seen.update(params)
        return base.run(data, k, seed, {}, progress)

    knob = Algorithm("knob_test", run, "local",
                     [Param("test_knob", "int", 1, lo=0, hi=9, doc="a test knob")], "test only")
    monkeypatch.setattr(algorithms, "_registry", {**registry(), "knob_test": knob})
    from kanon_duckdb import registration
    registration.sql_scripts.cache_clear()
    c = kanon_duckdb.connect()
    try:
        c.execute("CREATE TABLE t AS SELECT i % 5 AS a FROM range(20) r(i)")
        n = c.execute("SELECT count(*) FROM k_anonymize('t', k := 2, qi := ['a'], algo := 'knob_test', "
                      "test_knob := 4)").fetchall()[0][0]
        assert n == 20 and seen["test_knob"] == 4
        msg = _err(c, "FROM k_anonymize('t', k := 2, qi := ['a'], algo := 'knob_test', test_knob := 12)")
        assert "'test_knob' of algo 'knob_test' must be an integer in [0, 9], got 12" in msg
    finally:
        c.close()
        registration.sql_scripts.cache_clear()


def test_legacy_dict_declarations_still_work():
    a = Algorithm("legacy_test", lambda *a: None, "local", {"max_suppression": 0.1, "n": 3}, "x")
    assert a.params == {"max_suppression": 0.1, "n": 3}
    assert a.specs["max_suppression"].hi == 1.0 and a.specs["n"].kind == "int"


def test_every_registered_parameter_has_a_doc_and_a_valid_default():
    for algo in registry().values():
        for name, p in algo.specs.items():
            if p.default is not None:
                assert p.coerce(p.default, algo.name) == p.default, (algo.name, name)


def test_sensitive_nested_column_is_a_clear_error(con):
    for col in ("lst", "st"):
        msg = _err(con, f"FROM k_anonymize('t', k := 2, qi := ['a', 'b'], algo := 'info2means', "
                        f"sensitive := '{col}')")
        assert f"sensitive := '{col}' is a" in msg and "plain values" in msg, msg


def test_output_names_clash_case_insensitively(con):
    con.execute("CREATE TABLE clash1 AS SELECT i % 4 AS a, i AS \"EC\" FROM range(20) r(i)")
    con.execute("CREATE TABLE clash2 AS SELECT i % 4 AS a, i AS \"A_MIN\" FROM range(20) r(i)")
    for t in ("clash1", "clash2"):
        msg = _err(con, f"FROM k_anonymize('{t}', k := 2, qi := ['a'])")
        assert "clash with the columns k_anonymize adds" in msg, msg


def test_qi_names_resolve_case_insensitively_with_did_you_mean(con):
    con.execute("CREATE TABLE ci AS SELECT i % 4 AS \"Age\", (i % 3)::VARCHAR AS \"Sex\" FROM range(20) r(i)")
    cols = [d[0] for d in con.execute("FROM k_anonymize('ci', k := 2, qi := ['age', 'SEX'])").description]
    assert cols[:3] == ["Age_min", "Age_max", "Sex"] or {"Age_min", "Age_max", "Sex"} <= set(cols)
    msg = _err(con, "FROM k_anonymize('ci', k := 2, qi := ['agee'])")
    assert "Did you mean 'Age'?" in msg, msg


def test_registry_and_declarations_agree():
    from kanon_duckdb.algorithms.lattice.checker import LOSSES
    from kanon_duckdb.params import ALGORITHM_PARAMS, SHARED, declared
    assert set(ALGORITHM_PARAMS) <= set(registry())
    for name, algo in registry().items():  # an algorithm with parameters declares them there
        assert list(algo.specs) == [p.name for p in declared(name)], name
    assert SHARED["loss"].choices == LOSSES


def test_generating_the_macro_does_not_import_the_algorithms():
    import subprocess
    import sys
    code = ("import sys; from kanon_duckdb.params import render_sql; "
            "assert 'iterations' in render_sql('x/*KANON_PARAMS*/'); print('numba' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stdout + out.stderr
