"""The SQL/UDF boundary: declared UDFs, SQL run once per register(), explicit progress, a missing
module is an error, and a forgotten close() is silent at exit."""
import ast
import importlib
import re
import subprocess
import sys
from pathlib import Path

import duckdb
import pytest

import kanon_duckdb
from kanon_duckdb import registration
from kanon_duckdb.udf_spec import UDF, UdfContext

ROOT = Path(__file__).resolve().parent.parent


def _udf_modules():
    return [importlib.import_module(f"kanon_duckdb.udfs.{m}") for m in registration.UDF_MODULES]


def test_every_udfs_module_is_declared_and_its_udfs_are_registered():
    on_disk = {p.stem for p in (ROOT / "udfs").glob("*.py") if not p.stem.startswith("_")}
    assert on_disk == set(registration.UDF_MODULES)
    con = kanon_duckdb.connect()
    try:
        declared = registration.declared_udfs(UdfContext(con))
        assert all(isinstance(u, UDF) for u in declared)
        assert {m.__name__.rsplit(".", 1)[1] for m in _udf_modules()} == set(registration.UDF_MODULES)
        names = {r[0] for r in con.execute(
            "SELECT function_name FROM duckdb_functions() WHERE function_type = 'scalar'").fetchall()}
        assert {u.name for u in declared} <= names
    finally:
        con.close()


def test_udfs_modules_hold_no_sql_and_never_import_registration():
    for path in (ROOT / "udfs").glob("*.py"):
        tree = ast.parse(path.read_text())
        imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        imported |= {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        assert not any("registration" in m for m in imported), path.name
        strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
        assert not [t for t in strings if re.search(r"CREATE( OR REPLACE)?( TEMP)? MACRO", t.upper())], path.name
        assert "read_text" not in path.read_text(), path.name


def test_register_runs_each_sql_file_once(monkeypatch):
    executed = []
    con = duckdb.connect()
    real_execute = con.execute

    class Spy:
        def __getattr__(self, name):
            return getattr(con, name)

        def execute(self, sql, *args):
            executed.append(sql)
            return real_execute(sql, *args)

    try:
        kanon_duckdb.register(Spy())
        texts = [t for _, t in registration.rendered_scripts()]
        for text in texts:  # in one statement batch (registration.register)
            assert sum(sql.count(text) for sql in executed) == 1
        assert "query_error.sql" in [n for n, _ in registration.sql_scripts()]
    finally:
        con.close()


def test_a_missing_udf_module_is_an_error(monkeypatch):
    monkeypatch.setattr(registration, "UDF_MODULES", registration.UDF_MODULES + ("no_such_module",))
    con = duckdb.connect()
    try:
        with pytest.raises(ModuleNotFoundError, match="no_such_module"):
            kanon_duckdb.register(con)
    finally:
        con.close()


def test_progress_is_passed_to_the_connection_that_runs():
    seen = []
    con = kanon_duckdb.connect(progress=seen.append)
    other = kanon_duckdb.connect()
    try:
        for c in (con, other):
            c.execute("CREATE TABLE t AS SELECT i AS a, i % 7 AS b FROM range(2000) r(i)")
        other.execute("CREATE TABLE o AS FROM k_anonymize('t', k := 5, algo := 'kmember', qi := ['a', 'b'])")
        assert seen == []
        con.execute("CREATE TABLE o AS FROM k_anonymize('t', k := 5, algo := 'kmember', qi := ['a', 'b'])")
        assert seen and seen[-1] == pytest.approx(1.0)
    finally:
        con.close()
        other.close()


@pytest.mark.parametrize("body", [
    "con = kanon_duckdb.connect()\n"
    "con.execute(\"CREATE TABLE t AS SELECT i AS a FROM range(50) r(i)\")\n"
    "con.execute(\"CREATE TABLE o AS FROM k_anonymize('t', k := 5, qi := ['a'])\")\n",
    "import duckdb\ncon = duckdb.connect()\nkanon_duckdb.register(con)\ncur = con.cursor()\n",
])
def test_a_forgotten_close_is_silent_at_exit(body, tmp_path):
    proc = subprocess.run([sys.executable, "-c", "import kanon_duckdb\n" + body],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300,
                          env={**__import__("os").environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
