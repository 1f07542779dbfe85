"""Every file in examples/ runs (SQL scripts through the shell, Python scripts as __main__) and
what the new ones show holds. The Adult-based examples are slow (they anonymize all of Adult)."""
import io
import runpy
import sys
from pathlib import Path

import duckdb
import pytest

import kanon_duckdb
from kanon_duckdb.shell import Shell

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
FAST_SQL = ("two_tables_same_column.sql", "attached_database.sql", "custom_taxonomy.sql",
            "parquet_to_parquet.sql")
ADULT_SQL = ("adult_tour.sql", "query_error_adult.sql")
PY = {"embed_anonymize_csv.py": [], "pandas_app.py": [], "compare_algorithms_adult.py":
      ["--k", "5", "--algos", "mondrian", "--sample", "1000"]}
SLOW_PY = ("compare_algorithms_adult.py",)


def test_every_example_is_run_here():
    files = {p.name for p in EXAMPLES.iterdir() if p.suffix in (".sql", ".py")}
    assert files == set(FAST_SQL) | set(ADULT_SQL) | set(PY)


def _run_sql(con, name):
    out, err = io.StringIO(), io.StringIO()
    sh = Shell(con, out=out, err=err, bail=True)
    sh.run_script((EXAMPLES / name).read_text())
    assert sh.failed == 0, err.getvalue()
    return out.getvalue()


@pytest.fixture
def con(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that write files write them here
    c = kanon_duckdb.connect()
    yield c
    c.close()


@pytest.mark.parametrize("name", FAST_SQL)
def test_sql_example_runs(con, name):
    assert "│" in _run_sql(con, name)  # results were printed


def test_two_tables_same_column_keep_their_trees(con):
    _run_sql(con, "two_tables_same_column.sql")
    labels = {t: {r[0] for r in con.execute(f"SELECT DISTINCT sex FROM {t}").fetchall()}
              for t in ("staff_k6", "patients_k6", "patients_k6_flat")}
    assert labels["staff_k6"] <= {"Male", "Female", "*"}
    assert "F or M" in labels["patients_k6"] and labels["patients_k6"] <= {"F", "M", "X", "F or M", "*"}
    assert "*" in labels["patients_k6_flat"] and "F or M" not in labels["patients_k6_flat"]
    assert con.execute("SELECT source, qi_trees[2] FROM kanon_runs ORDER BY run_id").fetchall() == [
        ("staff", "sex"), ("patients", "patients.sex"), ("patients", "sex_flat")]
    for t in ("staff_k6", "patients_k6", "patients_k6_flat"):
        assert con.execute(f"SELECT min(ec_size) FROM {t}").fetchall()[0][0] >= 6


def test_attached_database_is_source_and_destination(con, tmp_path):
    _run_sql(con, "attached_database.sql")
    assert "clinic" not in {r[0] for r in con.execute("SELECT database_name FROM duckdb_databases()").fetchall()}
    f = duckdb.connect(str(tmp_path / "clinic.duckdb"), read_only=True)
    try:
        assert {r[0] for r in f.execute("SELECT table_name FROM duckdb_tables()").fetchall()} == {
            "visits", "visits_k5"}
        n, smallest, zips = f.execute(
            "SELECT count(*), min(ec_size), count(DISTINCT zip) FILTER (WHERE zip LIKE '%*') "
            "FROM visits_k5").fetchall()[0]
        assert n == 200 and smallest >= 5 and zips >= 1  # the masking tree 'visits.zip' was used
    finally:
        f.close()
    assert con.execute("SELECT qi_trees FROM kanon_runs").fetchall()[0][0] == [None, "visits.zip"]


@pytest.mark.slow
@pytest.mark.parametrize("name", ADULT_SQL)
def test_adult_sql_example_runs(con, name):
    kanon_duckdb.load_example(con, "adult")
    assert "│" in _run_sql(con, name)


@pytest.mark.parametrize("name", [n for n in PY if n not in SLOW_PY]
                         + [pytest.param(n, marks=pytest.mark.slow) for n in SLOW_PY])
def test_python_example_runs(name, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "argv", [name] + PY[name])
    runpy.run_path(str(EXAMPLES / name), run_name="__main__")
    assert capsys.readouterr().out.strip()


def test_parquet_to_parquet_writes_a_k_anonymous_file(con, tmp_path):
    _run_sql(con, "parquet_to_parquet.sql")
    out = tmp_path / "people_k5.parquet"
    rows, min_class, cols = con.execute(
        f"SELECT count(*), min(ec_size), list(DISTINCT 1) FROM '{out}'").fetchall()[0]
    assert rows == 10000 and min_class >= 5
    names = [d[0] for d in con.execute(f"FROM '{out}' LIMIT 0").description]
    assert names[:4] == ["person_id", "age_min", "age_max", "zip"]
