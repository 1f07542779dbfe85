"""The CLI never destroys what it did not create, and every non-QI column comes out as it went in:
no table replaced without --replace, no duplicate tree rows, the input never overwritten, CSV text
preserved, --hierarchy honoured, Ctrl-C / SIGKILL leave no partial output."""
from __future__ import annotations

import csv
import os
import random
import signal
import subprocess
import sys
import time

import duckdb
import pytest

from kanon_duckdb import cli
from test_cli import cli_env


def _write_csv(path, n=60):
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "age", "zip", "smoker", "code", "note"])
        for i in range(n):
            w.writerow([i, 20 + (i * 7) % 50, 10000 + (i * 13) % 97, "Yes" if i % 3 else "No",
                        f"{i % 4:03d}", ["1.50", "2024-01-02", "x;y"][i % 3]])


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_loading_a_file_never_replaces_a_table_in_db(tmp_path, capsys):
    src, db = tmp_path / "people.csv", tmp_path / "mine.duckdb"
    _write_csv(src, 30)
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE people AS SELECT 42 AS mine")
    con.close()
    args = ["anonymize", str(src), "--k", "3", "--qi", "age", "--db", str(db), "--out", "people_k"]
    assert cli.main(args) == 1
    err = capsys.readouterr().err
    assert "already exists" in err and "--replace" in err and "--table" in err
    con = duckdb.connect(str(db))
    assert con.execute("FROM people").fetchall() == [(42,)]
    con.close()
    assert cli.main(args + ["--table", "people_src"]) == 0
    assert cli.main(args[:-1] + ["people_k2", "--replace"]) == 0
    con = duckdb.connect(str(db))
    assert con.execute("SELECT count(*) FROM people").fetchone()[0] == 30  # replaced, as asked
    con.close()


def test_duckdb_input_trees_do_not_accumulate_in_db(tmp_path, capsys):
    inp, work = tmp_path / "in.duckdb", tmp_path / "work.duckdb"
    con = duckdb.connect(str(inp))
    con.execute("CREATE TABLE t AS SELECT i AS id, ['a', 'b', 'c'][1 + i % 3] AS dept FROM range(30) r(i)")
    con.execute("CREATE TABLE kanon_taxonomy (attr VARCHAR, child VARCHAR, parent VARCHAR)")
    con.execute("INSERT INTO kanon_taxonomy VALUES ('dept', 'a', 'ab'), ('dept', 'b', 'ab'), "
                "('dept', 'ab', '*'), ('dept', 'c', '*'), ('dept', '*', NULL)")
    con.close()
    for i in range(3):
        args = ["anonymize", str(inp), "--table", "t", "--k", "3", "--qi", "dept", "--db",
                str(work), "--out", str(tmp_path / f"o{i}.parquet")]
        assert cli.main(args) == 0, capsys.readouterr().err
    con = duckdb.connect(str(work))
    assert con.execute("SELECT count(*) FROM kanon_taxonomy WHERE attr = 'dept'").fetchone()[0] == 5
    con.execute("UPDATE kanon_taxonomy SET parent = '*' WHERE child = 'a'")
    con.close()
    args[-1] = str(tmp_path / "o3.parquet")  # a new output: only the tree differs
    assert cli.main(args) == 1  # a different tree under the same name: refused
    assert "differs" in capsys.readouterr().err
    assert cli.main(args + ["--replace"]) == 0
    con = duckdb.connect(str(work))
    assert con.execute("SELECT parent FROM kanon_taxonomy WHERE child = 'a'").fetchall() == [("ab",)]
    con.close()


def test_output_equal_to_input_is_refused_without_replace(tmp_path, capsys):
    src = tmp_path / "p.csv"
    _write_csv(src, 30)
    before = src.read_bytes()
    os.symlink(src, tmp_path / "link.csv")
    for out in (src, tmp_path / "link.csv", tmp_path / "sub" / ".." / "p.csv"):
        (tmp_path / "sub").mkdir(exist_ok=True)
        rc = cli.main(["anonymize", str(src), "--k", "3", "--qi", "age", "--out", str(out)])
        assert rc == 1 and "is the INPUT file" in capsys.readouterr().err
        assert src.read_bytes() == before
    assert cli.main(["anonymize", str(src), "--k", "3", "--qi", "age", "--out", str(src),
                     "--replace"]) == 0
    rows = _rows(src)
    assert len(rows) == 30 and "age_min" in rows[0]  # replaced by the complete output


def test_an_existing_output_file_is_kept_without_replace(tmp_path, capsys):
    """--help: --replace "replace[s] an existing OUTPUT table or file"; without it an existing
    output file stays byte for byte (it was overwritten silently) and nothing runs."""
    src = tmp_path / "p.csv"
    _write_csv(src, 30)
    for name in ("out.parquet", "out.csv"):
        out = tmp_path / name
        out.write_bytes(b"precious")
        rc = cli.main(["anonymize", str(src), "--k", "3", "--qi", "age", "--out", str(out)])
        err = capsys.readouterr().err
        assert rc == 1 and "already exists" in err and "--replace" in err
        assert out.read_bytes() == b"precious"
        assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["p.csv", name] + (
            ["out.parquet"] if name == "out.csv" else []))
        assert cli.main(["anonymize", str(src), "--k", "3", "--qi", "age", "--out", str(out),
                         "--replace"]) == 0
        assert out.read_bytes() != b"precious"


def test_a_failed_run_leaves_the_db_as_it_was_and_can_be_rerun(tmp_path, capsys):
    """A run that fails (a QI typo) wrote the loaded input table, kanon_runs and kanon_taxonomy
    into --db FILE before failing, so the corrected command was refused ('table ... already
    exists'). Now FILE receives the loaded table, the run row and the output in one transaction
    on success only."""
    src, db = tmp_path / "p.csv", tmp_path / "w.duckdb"
    _write_csv(src, 30)
    duckdb.connect(str(db)).close()  # an existing, empty database
    for out in ("people_k3", str(tmp_path / "o.parquet")):
        rc = cli.main(["anonymize", str(src), "--k", "3", "--qi", "age,nope", "--out", out,
                       "--db", str(db)])
        assert rc == 1 and "nope" in capsys.readouterr().err
        con = duckdb.connect(str(db))
        assert con.execute("SELECT table_name FROM duckdb_tables()").fetchall() == []
        con.close()
    assert not (tmp_path / "o.parquet").exists()
    assert cli.main(["anonymize", str(src), "--k", "3", "--qi", "age,zip", "--out", "people_k3",
                     "--db", str(db)]) == 0, capsys.readouterr().err
    con = duckdb.connect(str(db))
    assert sorted(r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()) == \
        ["kanon_runs", "kanon_taxonomy", "p", "people_k3"]
    assert con.execute("SELECT count(*) FROM p").fetchone()[0] == 30
    assert con.execute("SELECT source FROM kanon_runs").fetchall() == [('"p"',)]
    con.close()
    reserved = tmp_path / "in.csv"  # a file named like a keyword loads as table "in"
    _write_csv(reserved, 12)
    for extra in ([], ["--db", str(db)]):
        assert cli.main(["anonymize", str(reserved), "--k", "3", "--qi", "age", "--out",
                         str(tmp_path / f"in{len(extra)}.parquet"), *extra]) == 0, capsys.readouterr().err
    # the loaded table as OUTPUT: refused without --replace, replaced by the output with it
    rc = cli.main(["anonymize", str(src), "--k", "3", "--qi", "age", "--out", "q", "--table", "q",
                   "--db", str(db)])
    assert rc == 1 and "--replace" in capsys.readouterr().err
    assert cli.main(["anonymize", str(src), "--k", "3", "--qi", "age", "--out", "q", "--table", "q",
                     "--db", str(db), "--replace"]) == 0, capsys.readouterr().err
    con = duckdb.connect(str(db))
    assert "age_min" in [r[0] for r in con.execute("DESCRIBE q").fetchall()]
    con.close()


def test_a_failed_or_interrupted_run_leaves_no_new_db_file(tmp_path, capsys, monkeypatch):
    """--db FILE naming a database that does not exist yet: a run that fails (a QI typo) or is
    interrupted left an empty FILE behind (ATTACH creates it at the start), although nothing is
    written to FILE unless the run succeeds. An existing FILE stays (checked above)."""
    src, db = tmp_path / "p.csv", tmp_path / "new db.duckdb"
    _write_csv(src, 30)
    for out in ("people_k3", str(tmp_path / "o.parquet")):
        rc = cli.main(["anonymize", str(src), "--k", "3", "--qi", "age,nope", "--out", out,
                       "--db", str(db)])
        assert rc == 1 and "nope" in capsys.readouterr().err
        assert sorted(p.name for p in tmp_path.iterdir()) == ["p.csv"]
    from kanon_duckdb import demo

    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(demo, "k_anonymize_sql", interrupted)
    assert cli.main(["anonymize", str(src), "--k", "3", "--qi", "age", "--out", "people_k3",
                     "--db", str(db)]) == cli.EXIT_INTERRUPTED
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.csv"]
    monkeypatch.undo()
    assert cli.main(["anonymize", str(src), "--k", "3", "--qi", "age", "--out", "people_k3",
                     "--db", str(db)]) == 0, capsys.readouterr().err
    assert db.exists()


def test_csv_pass_through_columns_keep_their_text(tmp_path, capsys):
    src, dst = tmp_path / "p.csv", tmp_path / "o.csv"
    _write_csv(src, 60)
    assert cli.main(["anonymize", str(src), "--k", "3", "--qi", "age,zip", "--out", str(dst)]) == 0
    by_id = {r["id"]: r for r in _rows(src)}
    out = _rows(dst)
    assert len(out) == 60
    for r in out:
        orig = by_id[r["id"]]
        assert (r["smoker"], r["code"], r["note"]) == (orig["smoker"], orig["code"], orig["note"])
        assert int(r["age_min"]) <= int(orig["age"]) <= int(r["age_max"])  # QIs stay numeric


def test_csv_option_is_passed_to_read_csv(tmp_path, capsys):
    src, dst = tmp_path / "p.txt", tmp_path / "o.csv"
    src.write_text("".join(f"{i}|{20 + i % 30}|{'Yes' if i % 2 else 'No'}\n" for i in range(30)))
    args = ["anonymize", str(src), "--k", "3", "--qi", "column1", "--out", str(dst),
            "--csv-option", "delim=|", "--csv-option", "header=false"]
    assert cli.main(args) == 0, capsys.readouterr().err
    out = _rows(dst)
    assert len(out) == 30 and {r["column2"] for r in out} == {"Yes", "No"}
    assert cli.main(args + ["--csv-option", "no_such_option=1"]) == 1


def test_hierarchy_on_a_numeric_column_makes_it_categorical(tmp_path, capsys):
    src, dst, h = tmp_path / "p.csv", tmp_path / "o.parquet", tmp_path / "zip.csv"
    _write_csv(src, 60)
    zips = sorted({10000 + (i * 13) % 97 for i in range(60)})
    h.write_text("".join(f"{z};{str(z)[:4]}*;*\n" for z in zips))
    assert cli.main(["anonymize", str(src), "--k", "3", "--qi", "age,zip", "--hierarchy",
                     f"zip={h}", "--out", str(dst)]) == 0, capsys.readouterr().err
    con = duckdb.connect()
    cols = [r[0] for r in con.execute("DESCRIBE FROM read_parquet(?)", [str(dst)]).fetchall()]
    labels = {r[0] for r in con.execute("SELECT DISTINCT zip FROM read_parquet(?)", [str(dst)]).fetchall()}
    con.close()
    assert "zip" in cols and "zip_min" not in cols
    allowed = {str(z) for z in zips} | {f"{str(z)[:4]}*" for z in zips} | {"*"}
    assert labels <= allowed
    rc = cli.main(["anonymize", str(src), "--k", "3", "--qi", "age,zip", "--hierarchy", f"zip={h}",
                   "--numeric", "zip", "--out", str(tmp_path / "o2.parquet")])
    assert rc == 1 and "--numeric" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------
# killed or interrupted while writing


def _spawn(*args, cwd):
    return subprocess.Popen([sys.executable, "-m", "kanon_duckdb.cli", *args], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**cli_env(), "KANON_DUCKDB_PRELOAD": "0"})


def _check_after_kill(tmp_path, db, out_table, out_file, allow_stale_tmp):
    """The database opens, the source is intact, no partial output, no run without output."""
    for p in tmp_path.iterdir():
        if p.name.endswith(".tmp"):
            assert allow_stale_tmp, f"temporary file {p.name} left after an interrupt"
            pid = int(p.name.rsplit(".", 2)[-2])
            with pytest.raises(ProcessLookupError):
                os.kill(pid, 0)  # only a killed process's temporary remains
    if out_file is not None and out_file.exists():
        con = duckdb.connect()
        assert con.execute("SELECT count(*) FROM read_parquet(?)", [str(out_file)]).fetchone()[0] == 400
        con.close()
    for path in (db, tmp_path / "scratch.duckdb"):
        if not path.exists():
            continue
        con = duckdb.connect(str(path))
        try:
            tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
            assert not any(t.startswith("__kanon") for t in tables), tables
            if path == db:
                assert con.execute("SELECT count(*) FROM src").fetchone()[0] == 400
            used = set()
            for t in tables - {"src", "kanon_runs", "kanon_taxonomy"}:
                assert con.execute(f'SELECT count(*) FROM "{t}"').fetchone()[0] == 400
                used |= {r[0] for r in con.execute(f'SELECT DISTINCT kanon_run FROM "{t}"').fetchall()}
            if "kanon_runs" in tables and path == db:
                runs = {r[0] for r in con.execute("SELECT run_id FROM kanon_runs").fetchall()}
                assert runs <= used, f"runs {runs - used} have no output"
        finally:
            con.close()


def _kill_at_random_points(tmp_path, n_kills, sig, seed=7):
    db = tmp_path / "w.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE OR REPLACE TABLE src AS SELECT i AS id, (i * 7) % 80 AS age, "
                "(i * 13) % 97 AS zip FROM range(400) r(i)")
    con.close()
    rng = random.Random(seed)
    run = ["anonymize", str(db), "--table", "src", "--k", "3", "--qi", "age,zip", "--algo", "kmember"]
    t0 = time.perf_counter()  # how long a whole run takes here (imports, cache load, write)
    p = _spawn(*run, "--out", f"probe{seed}", cwd=tmp_path)
    assert p.wait(timeout=600) == 0
    full = time.perf_counter() - t0
    outs = []
    for i in range(n_kills):
        name = f"{seed}_{i}"
        out_file = tmp_path / f"o{name}.parquet"
        target = [["--out", f"t{name}"], ["--out", str(out_file)],
                  ["--db", str(tmp_path / "scratch.duckdb"), "--out", str(out_file)]][i % 3]
        p = _spawn(*run, *target, cwd=tmp_path)
        time.sleep(rng.uniform(0.2 * full, 1.1 * full))
        p.send_signal(sig)
        p.communicate(timeout=120)
        _check_after_kill(tmp_path, db, f"t{name}", None if i % 3 == 0 else out_file,
                          sig == signal.SIGKILL)
        outs.append(out_file)
    # the next write of an output removes what a killed writer left behind
    for out_file in outs:
        if any(p.name.startswith(f".{out_file.name}.") for p in tmp_path.iterdir()):
            assert _spawn(*run, "--out", str(out_file), "--replace", cwd=tmp_path).wait(600) == 0
            assert not any(p.name.startswith(f".{out_file.name}.") for p in tmp_path.iterdir())


def test_killed_or_interrupted_while_writing_leaves_nothing_partial(tmp_path):
    _kill_at_random_points(tmp_path, 2, signal.SIGKILL)
    _kill_at_random_points(tmp_path, 1, signal.SIGINT, seed=8)


@pytest.mark.slow
def test_killed_at_many_random_points(tmp_path):
    _kill_at_random_points(tmp_path, 30, signal.SIGKILL)
    _kill_at_random_points(tmp_path, 15, signal.SIGINT, seed=9)


@pytest.mark.parametrize("path", ["positional", "class join"])
def test_a_run_failing_after_it_was_recorded_leaves_no_run_row(tmp_path, monkeypatch, capsys, path):
    """Deterministic version of a kill between recording the run and committing its output,
    on both ways of publishing (output_sql.positional_sql and output_sql.output_sql)."""
    from kanon_duckdb import assignment
    from kanon_duckdb.udfs import anonymize as udf_anonymize
    db = tmp_path / "w.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE src AS SELECT i AS id, (i * 7) % 80 AS age FROM range(100) r(i)")
    con.close()

    def boom(*_args):
        raise RuntimeError("killed while writing the output")

    if path == "positional":  # the run's rows are handed over after it was recorded
        monkeypatch.setattr(udf_anonymize, "rows_arrow", boom)
    else:
        monkeypatch.setattr(udf_anonymize, "POSITIONAL_ROWS", 0)
        monkeypatch.setattr(type(assignment.STORE), "published_of", boom)  # the row look-up
    for target in (["--out", "t"], ["--db", str(tmp_path / "s.duckdb"), "--out", str(tmp_path / "o.parquet")]):
        assert cli.main(["anonymize", str(db), "--table", "src", "--k", "3", "--qi", "age",
                         *target]) == 1
        assert "killed while writing" in capsys.readouterr().err
    for path in (db, tmp_path / "s.duckdb"):
        con = duckdb.connect(str(path))
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        assert "t" not in tables
        if "kanon_runs" in tables:
            assert con.execute("SELECT count(*) FROM kanon_runs").fetchone()[0] == 0
        con.close()
    assert not (tmp_path / "o.parquet").exists()


@pytest.mark.parametrize("command", ["anonymize", "shell"])
def test_ctrl_c_stops_a_long_run_within_about_a_second(tmp_path, command):
    db = tmp_path / "w.duckdb"
    con = duckdb.connect(str(db))
    con.execute("CREATE TABLE src AS SELECT i AS id, (i * 7) % 80 AS age, (i * 13) % 97 AS zip "
                "FROM range(300) r(i)")
    con.close()

    def start(iterations):
        if command == "anonymize":
            return _spawn("anonymize", str(db), "--table", "src", "--k", "3", "--qi", "age,zip",
                          "--algo", "kab", "--param", f"iterations={iterations}", "--out", "t",
                          cwd=tmp_path)
        return _spawn("shell", str(db), "-c",
                      f"CREATE TABLE t AS FROM k_anonymize('src', k := 3, qi := ['age', 'zip'], "
                      f"algo := 'kab', iterations := {iterations});", cwd=tmp_path)

    t0 = time.perf_counter()
    p = start(1)
    p.communicate(timeout=600)
    assert p.returncode == 0
    startup = time.perf_counter() - t0
    con = duckdb.connect(str(db))
    con.execute("DROP TABLE t")
    runs = con.execute("SELECT count(*) FROM kanon_runs").fetchone()[0]
    con.close()
    p = start(10_000_000)
    time.sleep(startup + 1.5)  # well inside the black-hole iterations
    assert p.poll() is None
    sent = time.perf_counter()
    p.send_signal(signal.SIGINT)
    _out, err = p.communicate(timeout=60)
    took = time.perf_counter() - sent
    assert p.returncode != 0 and "interrupt" in err.lower()
    assert took < 2.5, f"{command} took {took:.1f} s to stop after Ctrl-C"
    con = duckdb.connect(str(db))
    tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
    assert "t" not in tables
    assert con.execute("SELECT count(*) FROM kanon_runs").fetchone()[0] == runs
    con.close()
