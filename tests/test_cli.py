"""Command line: demo, shell (piped stdin), anonymize (CSV -> Parquet), bench/report, formatting.

Subprocess tests run ``python -m kanon_duckdb.cli`` like the installed ``kanon-duckdb`` script;
the rest call the pieces in-process to stay fast.
"""
from __future__ import annotations

import contextlib
import csv
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import duckdb
import pytest

from kanon_duckdb import cli
from kanon_duckdb.shell import Shell, error_line, split_statements


CHECKOUT = str(Path(__file__).resolve().parent.parent)


def cli_env():
    """The environment of a CLI subprocess: this checkout first on the path, wherever it runs."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": CHECKOUT + (os.pathsep + path if path else "")}


def run_cli(*args, stdin=None, cwd=None, timeout=300):
    """Run the CLI in a subprocess; in a fresh temporary directory unless ``cwd`` is given, so
    nothing it writes lands in the checkout."""
    return subprocess.run([sys.executable, "-m", "kanon_duckdb.cli", *args], input=stdin,
                          capture_output=True, text=True, timeout=timeout, env=cli_env(),
                          cwd=cwd or tempfile.mkdtemp(prefix="kanon-cli-test-"))


# ------------------------------------------------------------------------------------------
# demo


def test_demo_small_k_prints_one_row_per_k(tmp_path):
    res = run_cli("demo", "--k", "5,50", cwd=tmp_path)
    assert not any(p.name != "__pycache__" for p in tmp_path.iterdir())  # nothing in the cwd
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    rows = {}
    for line in res.stdout.splitlines():
        cells = [c.strip() for c in line.strip("│").split("│")]
        if len(cells) == 6 and cells[0].isdigit():
            rows[int(cells[0])] = cells
    assert sorted(rows) == [5, 50]
    for k, (_, classes, gcp, dm, cavg, secs) in rows.items():
        classes = int(classes)
        assert 1 <= classes <= 30162 // k
        assert 0.0 < float(gcp) < 100.0
        assert int(dm) >= 30162 * k          # every class has at least k rows
        assert float(cavg) >= 1.0
        assert float(secs) >= 0.0
    assert float(rows[50][2]) > float(rows[5][2])   # more generalization for larger k
    assert "nanobind" not in res.stderr


@pytest.mark.slow
def test_demo_report_option_writes_html(tmp_path):
    res = run_cli("demo", "--k", "50", "--report", str(tmp_path / "rep"))
    assert res.returncode == 0, res.stderr
    assert "report:" in res.stdout
    assert (tmp_path / "rep" / "kanon_report.csv").exists()


# ------------------------------------------------------------------------------------------
# shell


def test_shell_piped_prints_results_and_exits_zero():
    sql = ("CREATE TABLE t AS SELECT range AS a, (range % 4)::VARCHAR AS b, range * 2 AS c\n"
           "  FROM range(40);\n"
           "SELECT 'x;y' AS s, 42 AS answer;\n"
           "SELECT count(*) AS n, min(ec_size) AS smallest\n"
           "FROM k_anonymize('t', k := 5, qi := ['a', 'b']);\n")
    res = run_cli("shell", stdin=sql)
    assert res.returncode == 0, res.stderr
    assert res.stderr == ""
    assert "x;y" in res.stdout and "42" in res.stdout
    # the k_anonymize result: 40 rows, smallest class >= 5
    m = re.search(r"│\s+(\d+) │\s+(\d+) │", res.stdout.split("smallest", 1)[1])
    assert m and int(m.group(1)) == 40 and int(m.group(2)) >= 5
    assert "│ varchar │ int32  │" in res.stdout  # DuckDB's renderer: the column types under the names


def test_shell_errors_are_one_line_and_exit_nonzero():
    sql = ("SELECT * FROM no_such_table;\n"
           "CREATE TABLE t AS SELECT range AS a, 'v' AS b FROM range(3);\n"
           "FROM k_anonymize('t', k := 10, qi := ['a']);\n"
           "SELECT 'still running' AS s;\n")
    res = run_cli("shell", stdin=sql)
    assert res.returncode == 1
    assert "Traceback" not in res.stderr
    errors = res.stderr.strip().splitlines()
    assert len(errors) == 2
    assert "no_such_table" in errors[0]
    assert "k=10" in errors[1]
    assert "still running" in res.stdout


def test_shell_command_option_and_bail(tmp_path):
    db = str(tmp_path / "x.duckdb")
    res = run_cli("shell", db, "-c", "CREATE TABLE keep AS SELECT 1 AS a; SELECT oops; "
                                     "CREATE TABLE never AS SELECT 1;", "--bail")
    assert res.returncode == 1
    con = duckdb.connect(db)
    try:
        names = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    finally:
        con.close()
    assert "keep" in names and "never" not in names, res.stderr


class _Out:
    def __init__(self):
        self.parts = []

    def write(self, s):
        self.parts.append(s)

    def flush(self):
        pass

    @property
    def text(self):
        return "".join(self.parts)


@pytest.fixture
def shell():
    con = duckdb.connect()
    out, err = _Out(), _Out()
    sh = Shell(con, out=out, err=err)
    yield sh, out, err
    con.close()


def test_shell_dot_commands(shell, tmp_path):
    sh, out, err = shell
    script = tmp_path / "s.sql"
    script.write_text("CREATE TABLE from_file AS SELECT 7 AS seven;\nSELECT seven FROM from_file;\n")
    sh.run_script(f".read {script}\n.tables\n.timer on\nSELECT 1 AS one;\n.timer off\n.help\n"
                  ".nonsense\n.quit\nSELECT 'after quit';\n")
    assert "from_file" in out.text and "7" in out.text
    assert "Run Time: real" in out.text
    assert ".read FILE" in out.text
    assert "after quit" not in out.text
    assert sh.quit
    assert err.text.strip() == "Error: unknown command .nonsense (try .help)"
    assert sh.failed == 1


def test_shell_long_result_is_elided_with_row_count(shell):
    sh, out, _ = shell
    assert sh.run_sql("SELECT range AS i FROM range(1000)")
    assert "1000 rows" in out.text and "(40 shown)" in out.text  # DuckDB's footer
    shown = {int(c) for c in re.findall(r"│\s+(\d+) │", out.text)}
    assert shown == set(range(20)) | set(range(980, 1000))


def test_split_statements_respects_quotes_and_comments():
    stmts, rest = split_statements(
        "SELECT 'a;b'; SELECT \"c;d\" FROM t; -- note; here\nSELECT 1 /* x; y */; SELECT $$p;q$$; SEL")
    assert stmts == ["SELECT 'a;b'", 'SELECT "c;d" FROM t', "-- note; here\nSELECT 1 /* x; y */",
                     "SELECT $$p;q$$"]
    assert rest == "SEL"
    assert split_statements("SELECT 1 AS x\n")[1] == "SELECT 1 AS x\n"   # line ends are kept
    assert split_statements("SELECT 'it''s;';")[0] == ["SELECT 'it''s;'"]
    assert split_statements(";;  ;")[0] == []


def test_error_line_strips_query_excerpt_and_udf_prefix():
    exc = duckdb.InvalidInputException(
        "Invalid Input Error: Python exception occurred while executing the UDF: "
        "InvalidParameterError: k=9 exceeds the number of rows (3)\n\nLINE 1: FROM k_anonymize(...)")
    assert error_line(exc) == "InvalidParameterError: k=9 exceeds the number of rows (3)"
    assert error_line(ValueError("bad\nthing")) == "Error: bad thing"


# ------------------------------------------------------------------------------------------
# anonymize


def _write_csv(path, n=120):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "age", "zip", "sex", "diagnosis"])
        for i in range(n):
            w.writerow([i, 20 + (i * 7) % 50, 10000 + (i * 13) % 97, "MF"[i % 2],
                        ["flu", "cold", "none"][i % 3]])


def test_anonymize_csv_to_parquet_is_k_anonymous(tmp_path):
    src, dst = tmp_path / "people.csv", tmp_path / "people_k4.parquet"
    _write_csv(src)
    res = run_cli("anonymize", str(src), "--k", "4", "--qi", "age,zip,sex", "--out", str(dst))
    assert res.returncode == 0, res.stderr
    assert "min class size" in res.stdout and "GCP" in res.stdout
    assert dst.exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    con = duckdb.connect()
    try:
        cols = [r[0] for r in con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(dst)]).fetchall()]
        assert {"id", "diagnosis", "age_min", "age_max", "zip_min", "zip_max", "sex", "ec",
                "ec_size"} <= set(cols)
        n, = con.execute("SELECT count(*) FROM read_parquet(?)", [str(dst)]).fetchall()[0]
        smallest, = con.execute(
            "SELECT min(c) FROM (SELECT count(*) AS c FROM read_parquet(?) "
            "GROUP BY age_min, age_max, zip_min, zip_max, sex)", [str(dst)]).fetchall()[0]
        # every original value lies in its published range; non-QI columns unchanged
        bad, = con.execute(
            "SELECT count(*) FROM read_parquet(?) o JOIN read_csv(?) s USING (id) "
            "WHERE s.age NOT BETWEEN o.age_min AND o.age_max OR s.zip NOT BETWEEN o.zip_min "
            "AND o.zip_max OR (o.sex <> s.sex AND o.sex <> '*') OR o.diagnosis <> s.diagnosis",
            [str(dst), str(src)]).fetchall()[0]
    finally:
        con.close()
    assert n == 120
    assert smallest >= 4
    assert bad == 0


@pytest.mark.parametrize("out_name", ["o.csv", "o.tsv", "o.parquet", "table"])
def test_anonymize_output_keeps_source_column_order_with_bounds_in_place(tmp_path, capsys, out_name):
    """CLI outputs (files and a --db table) keep the INPUT's column order, each numeric QI c
    replaced in place by c_min, c_max (published.bound_columns), whatever order --qi names them
    in; never a_min, b_min, a_max, b_max."""
    from kanon_duckdb.published import ADDED_COLUMNS, bound_columns
    src = tmp_path / "p.csv"
    with open(src, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "age", "sex", "zip", "weight", "diagnosis"])
        for i in range(60):
            w.writerow([i, 20 + (i * 7) % 50, "MF"[i % 2], 10000 + (i * 13) % 97,
                        50 + (i * 3) % 40 + 0.5, ["flu", "cold"][i % 2]])
    expected = ["id", *bound_columns("age"), "sex", *bound_columns("zip"),
                *bound_columns("weight"), "diagnosis"]
    args = ["anonymize", str(src), "--k", "4", "--qi", "weight,sex,zip,age"]
    if out_name == "table":
        db = tmp_path / "w.duckdb"
        assert cli.main([*args, "--out", "anon", "--db", str(db)]) == 0, capsys.readouterr().err
        con = duckdb.connect(str(db), read_only=True)
        rel = "anon"
    else:
        out = tmp_path / out_name
        assert cli.main([*args, "--out", str(out)]) == 0, capsys.readouterr().err
        con = duckdb.connect()
        rel = ("read_csv('%s', delim = '\t')" if out_name.endswith(".tsv") else "'%s'") % out
    try:
        cols = con.sql(f"SELECT * FROM {rel}").columns
        added = [c for c in ADDED_COLUMNS if c != "kanon_run" or out_name == "table"]
        assert cols == expected + added
        smallest, n = con.execute(f"SELECT min(ec_size), count(*) FROM {rel}").fetchall()[0]
        assert n == 60 and smallest >= 4
    finally:
        con.close()


def test_anonymize_categorical_override_keeps_a_numeric_looking_code_as_labels(tmp_path, capsys):
    src, dst = tmp_path / "p.csv", tmp_path / "o.parquet"
    _write_csv(src, 40)
    args = ["anonymize", str(src), "--k", "4", "--qi", "age,zip", "--categorical", "zip", "--out", str(dst)]
    assert cli.main(args) == 0, capsys.readouterr().err
    con = duckdb.connect()
    try:
        cols = [r[0] for r in con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(dst)]).fetchall()]
        assert "zip" in cols and "zip_min" not in cols
        smallest, = con.execute("SELECT min(c) FROM (SELECT count(*) c FROM read_parquet(?) "
                                "GROUP BY age_min, age_max, zip)", [str(dst)]).fetchall()[0]
        assert smallest >= 4
    finally:
        con.close()


def test_anonymize_bad_output_extension_is_one_line_error(tmp_path, capsys):
    src = tmp_path / "p.csv"
    _write_csv(src, 10)
    rc = cli.main(["anonymize", str(src), "--k", "2", "--qi", "age", "--out", str(tmp_path / "o.xyz")])
    err = capsys.readouterr().err
    assert rc == 1
    assert err.startswith("Error: OUTPUT") and err.count("\n") == 1


def test_anonymize_interrupt_leaves_no_output(tmp_path, capsys, monkeypatch):
    src, dst = tmp_path / "p.csv", tmp_path / "out.parquet"
    _write_csv(src, 20)

    @contextlib.contextmanager
    def interrupted_bar(*_a, **_k):
        raise KeyboardInterrupt
        yield  # pragma: no cover

    import kanon_duckdb.progress
    monkeypatch.setattr(kanon_duckdb.progress.Reporter, "bar", interrupted_bar)
    rc = cli.main(["anonymize", str(src), "--k", "2", "--qi", "age,sex", "--out", str(dst)])
    assert rc == 130
    assert "interrupted" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == [src]


def test_anonymize_writes_table_into_db(tmp_path, capsys):
    src, db = tmp_path / "p.csv", tmp_path / "w.duckdb"
    _write_csv(src, 30)
    args = ["anonymize", str(src), "--k", "3", "--qi", "age,sex", "--db", str(db), "--out", "p_k3"]
    assert cli.main(args) == 0
    assert cli.main(args) == 1                      # exists: refused without --replace
    assert "--replace" in capsys.readouterr().err
    assert cli.main(args + ["--replace"]) == 0
    con = duckdb.connect(str(db))
    try:
        smallest, n = con.execute("SELECT min(ec_size), count(*) FROM p_k3").fetchall()[0]
        assert n == 30 and smallest >= 3
        assert con.execute("SELECT count(*) FROM p").fetchall()[0][0] == 30   # the loaded input
    finally:
        con.close()


# ------------------------------------------------------------------------------------------
# bench / report / usage


def test_bench_unknown_name_lists_available(capsys):
    rc = cli.main(["bench", "no_such_benchmark"])
    assert rc == 1
    err = capsys.readouterr().err
    assert "no_such_benchmark" in err or "benchmark" in err


def test_no_command_prints_help(capsys):
    assert cli.main([]) == 2
    assert "demo" in capsys.readouterr().out


def test_bad_k_list_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["demo", "--k", "2,zero"])
    assert exc.value.code == 2
