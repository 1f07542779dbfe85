"""The ``kanon-duckdb`` command line.

Subcommands:
  demo       anonymize the embedded Adult data set for several k and print the utility metrics
  shell      interactive SQL (or statements from stdin) with every kanon-duckdb function registered
  anonymize  CSV / Parquet / DuckDB table in, anonymized Parquet / CSV / table out
  report     metrics and plots for several algorithms and k (kanon_duckdb.report)
  bench      run the benchmark scripts in benchmarks/ (source checkout)

Errors are printed as one line on stderr (no traceback); the exit status is 1 on failure, 2 on a
usage error and 130 when interrupted with Ctrl-C.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import time
from pathlib import Path

from . import __version__

EXIT_INTERRUPTED = 130

_FILE_FORMATS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".tsv": "csv",
                 ".txt": "csv", ".json": "json", ".ndjson": "json", ".jsonl": "json"}
_DUCKDB_EXTS = {".duckdb", ".db", ".ddb"}


class CliError(Exception):
    """A user error: printed as one line, exit status 1."""


# --------------------------------------------------------------------------------------------
# argument helpers


def _csv_list(text: str) -> list:
    items = [x.strip() for x in text.split(",")]
    if not text.strip() or any(not x for x in items):
        raise argparse.ArgumentTypeError(f"expected a comma-separated list, got {text!r}")
    return items


def _k_list(text: str) -> list:
    out = []
    for x in _csv_list(text):
        try:
            k = int(x)
        except ValueError:
            raise argparse.ArgumentTypeError(f"k must be an integer, got {x!r}") from None
        if k < 1:
            raise argparse.ArgumentTypeError(f"k must be at least 1, got {k}")
        out.append(k)
    return out


def _positive_int(text: str) -> int:
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
    if k < 1:
        raise argparse.ArgumentTypeError(f"k must be at least 1, got {k}")
    return k


def _name_value(text: str):
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected name=value, got {text!r}")
    return name.strip(), value.strip()


def _suffix(path: str) -> str:
    p = path.lower()
    for comp in (".gz", ".zst"):
        if p.endswith(comp):
            p = p[: -len(comp)]
    return os.path.splitext(p)[1]


def _is_duckdb_file(path: str) -> bool:
    if _suffix(path) in _DUCKDB_EXTS:
        return True
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError:
        return False
    return head[8:12] == b"DUCK"


def _error_line(exc: BaseException) -> str:
    from .shell import error_line
    return error_line(exc)


# --------------------------------------------------------------------------------------------
# anonymize


def run_anonymize(args) -> int:
    """``kanon-duckdb anonymize``: load INPUT, run k_anonymize, write OUTPUT, print a summary."""
    from . import progress
    from .demo import k_anonymize_sql, sql_string
    from .shell import open_connection
    from .sqlutil import quote_ident

    inp, out = args.input, args.out
    if not os.path.exists(inp):
        raise CliError(f"input file not found: {inp}")
    in_is_db = _is_duckdb_file(inp)
    in_fmt = None if in_is_db else _FILE_FORMATS.get(_suffix(inp))
    if not in_is_db and in_fmt is None:
        raise CliError(f"cannot tell the format of {inp}: use a .csv, .tsv, .parquet, .json file "
                       f"or a DuckDB database (with --table)")
    if in_is_db and not args.table:
        raise CliError(f"{inp} is a DuckDB database: name the table to anonymize with --table")
    out_fmt = _FILE_FORMATS.get(_suffix(out))
    if out_fmt is not None and _same_file(inp, out) and not args.replace:
        raise CliError(f"OUTPUT {out} is the INPUT file: choose another output (or pass --replace "
                       f"to overwrite the input once the run has succeeded)")
    if out_fmt is not None and os.path.exists(out) and not args.replace:
        raise CliError(f"OUTPUT {out} already exists: choose another output, or pass --replace "
                       f"to replace it once the run has succeeded")
    if in_is_db and out_fmt is None:
        if args.db and os.path.abspath(args.db) != os.path.abspath(inp):
            raise CliError("a table OUTPUT of a DuckDB INPUT is written to INPUT: omit --db")
        work_db = inp
    else:
        work_db = args.db   # in memory unless given; a DuckDB INPUT is attached read-only
    if out_fmt is None and work_db is None:
        raise CliError(f"OUTPUT {out!r} has no .parquet/.csv/.tsv/.json extension; to write a "
                       f"table instead, give --db FILE (or a DuckDB database as INPUT)")
    params = dict(args.param or [])

    reporter = progress.Reporter()
    # The run happens in an in-memory database. A database written to (--db FILE, or a DuckDB
    # INPUT receiving a table OUTPUT) is attached as WORK and receives the output table together
    # with its kanon_runs row in ONE transaction: killed at any point, FILE holds both or neither.
    con = open_connection(None, progress=reporter)
    tmp_path = None
    # ATTACH creates a database file that does not exist yet: removed again unless the run succeeds
    new_db = work_db is not None and not os.path.exists(work_db)
    succeeded = False
    t0 = time.perf_counter()
    try:
        loaded = None  # (in-memory table, name in WORK) of a file INPUT loaded for --db
        if work_db is not None:  # nothing is written to it before the run succeeded
            con.execute(f"ATTACH {sql_string(work_db)} AS {WORK}")
        if in_is_db and work_db == inp:
            source = _qualified(WORK, args.table)
        elif in_is_db:
            con.execute(f"ATTACH {sql_string(inp)} AS __kanon_input (READ_ONLY)")
            source = _qualified("__kanon_input", args.table)
            # the input's taxonomy trees apply (k_anonymize reads kanon_taxonomy of this database)
            if con.execute("SELECT count(*) FROM duckdb_tables() WHERE database_name = "
                           "'__kanon_input' AND table_name = 'kanon_taxonomy'").fetchall()[0][0]:
                if work_db is not None:
                    _ensure_kanon_tables(con, WORK)
                _merge_input_taxonomy(con, f"{WORK}.main.kanon_taxonomy" if work_db else
                                      "kanon_taxonomy", work_db, args.replace)
        else:
            name = args.table or _table_name_from_path(inp)
            if work_db is not None and _table_exists(con, name, WORK) and not args.replace:
                raise CliError(f"table {name!r} already exists in {work_db}: name the table to "
                               f"load {inp} into with --table, or pass --replace to replace it")
            if work_db is not None and out_fmt is None and out.lower() == name.lower() \
                    and not args.replace:
                raise CliError(f"OUTPUT table {out!r} is the table {inp} is loaded into; choose "
                               f"another name (or --table), or pass --replace to keep only the "
                               f"output under that name")
            target = quote_ident(name)  # in memory; copied to WORK with the output (publish)
            _load_file(con, target, inp, in_fmt, args.qi, args.csv_option or [])
            source = target
            if work_db is not None:
                loaded = (target, name)
        if work_db is not None and _table_exists(con, "kanon_taxonomy", WORK):
            # the run sees the working database's trees
            con.execute(f"INSERT INTO kanon_taxonomy SELECT attr, child, parent "
                        f"FROM {WORK}.main.kanon_taxonomy")
        for attr, path in args.hierarchy or []:
            from .taxonomy import load_arx_taxonomy
            if not os.path.exists(path):
                raise CliError(f"hierarchy file not found: {path}")
            load_arx_taxonomy(con, attr, path, delimiter=args.hierarchy_delimiter)
        numeric, categorical = _kinds_with_hierarchies(args)
        select = k_anonymize_sql(source, args.k, args.algo, args.qi, args.seed, params,
                                 numeric=numeric, categorical=categorical)
        if out_fmt is None and _table_exists(con, out, WORK) and not args.replace:
            raise CliError(f"table {out!r} already exists in {work_db}; choose another name "
                           f"or pass --replace")
        result_name = "__kanon_cli_result"  # in memory: nothing of it reaches a file if killed
        result = quote_ident(result_name)
        with reporter.bar("anonymizing"):
            con.execute(f"CREATE TABLE {result} AS {select}")
        elapsed = time.perf_counter() - t0
        n_rows, n_classes, min_size, n_sup = con.execute(
            f"SELECT count(*), count(DISTINCT ec), min(ec_size) FILTER (WHERE NOT suppressed), "
            f"count(*) FILTER (WHERE suppressed) FROM {result}").fetchall()[0]
        try:
            gcp = con.execute(f"SELECT gcp({sql_string(result_name)})").fetchall()[0][0]
            gcp = f"{100 * gcp:.2f} %"
        except Exception as exc:  # noqa: BLE001 - the summary must not lose the output
            gcp = f"n/a ({_error_line(exc)})"
        trees = [attr for attr, _ in (args.hierarchy or [])]
        if out_fmt is None:
            _publish_table(con, result, out, args.replace, trees, loaded)
        else:
            out_dir = os.path.dirname(os.path.abspath(out))
            if not os.path.isdir(out_dir):
                raise CliError(f"output directory does not exist: {out_dir}")
            _remove_stale_temporaries(out)
            tmp_path = _temporary_path(out, os.getpid())
            opts = {"parquet": "FORMAT parquet", "json": "FORMAT json",
                    "csv": "FORMAT csv, HEADER true" + (", DELIMITER '\t'" if _suffix(out) == ".tsv"
                                                        else "")}[out_fmt]
            if out.lower().endswith(".gz") and out_fmt == "csv":
                opts += ", COMPRESSION gzip"
            con.execute(f"COPY (SELECT * EXCLUDE (kanon_run) FROM {result} ORDER BY ec) "
                        f"TO {sql_string(tmp_path)} ({opts})")
            os.replace(tmp_path, out)
            tmp_path = None
            if work_db is not None:  # the run is recorded in FILE once its output exists
                _publish_table(con, result, None, False, trees, loaded, args.replace)
        summary = [
            ("input", f"{inp}" + (f" (table {args.table})" if in_is_db else "")),
            ("output", out if out_fmt else f"table {out} in {work_db}"),
            ("algo", f"{args.algo}, k={args.k}, QIs {', '.join(args.qi)}"),
            ("rows", f"{n_rows:,}"),
            ("classes", f"{n_classes:,}"),
            ("min class size", f"{min_size}" if min_size is not None else "-"),
            ("suppressed rows", f"{n_sup:,}"),
        ]
        summary.append(("GCP", gcp))
        summary.append(("seconds", f"{elapsed:.2f}"))
        width = max(len(k) for k, _ in summary)
        for key, val in summary:
            print(f"{key:<{width}}  {val}")
        succeeded = True
        return 0
    except KeyboardInterrupt:
        _cleanup(tmp_path)
        print("interrupted: no output written", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BaseException as exc:
        _cleanup(tmp_path)
        if _is_interrupt(exc):
            print("interrupted: no output written", file=sys.stderr)
            return EXIT_INTERRUPTED
        raise
    finally:
        con.close()
        del con
        if new_db and not succeeded:
            _remove_database(work_db)


WORK = "__kanon_work"  # alias of the attached database the CLI writes to


def _qualified(db: str, table: str) -> str:
    """``db.main.table`` (``db.schema.table`` for a qualified --table), quoted."""
    from .sqlutil import quote_ident
    parts = [p for p in table.split(".")] if "." in table else ["main", table]
    return ".".join(quote_ident(p) for p in [db, *parts])


def _ensure_kanon_tables(con, db: str) -> None:
    from .runs import ensure_runs_table
    from .taxonomy.store import ensure_taxonomy_table
    con.execute(f"USE {db}")
    try:
        ensure_runs_table(con)
        ensure_taxonomy_table(con)
    finally:
        con.execute("USE memory")


def _publish_table(con, result: str, out: str | None, replace: bool, trees: list,
                   loaded: tuple | None = None, replace_loaded: bool | None = None) -> None:
    """In ONE transaction on WORK: kanon_runs and kanon_taxonomy (created if missing), the file
    INPUT loaded for the run (``loaded`` = (in-memory table, name); replaced when
    ``replace_loaded``, default ``replace``; skipped when ``out`` takes its name), the run's
    kanon_runs row (renumbered after WORK's runs), the trees loaded with --hierarchy, and (when
    ``out`` is given) the output table. Nothing reaches WORK before this, so a failed run leaves
    it as it was."""
    from .sqlutil import quote_ident
    (old_id,), = con.execute(f"SELECT any_value(kanon_run) FROM {result}").fetchall()
    replace_loaded = replace if replace_loaded is None else replace_loaded
    con.execute("BEGIN")
    try:
        _ensure_kanon_tables(con, WORK)
        if loaded is not None and not (out is not None and out.lower() == loaded[1].lower()):
            verb = "CREATE OR REPLACE TABLE" if replace_loaded else "CREATE TABLE"
            con.execute(f"{verb} {WORK}.main.{quote_ident(loaded[1])} AS FROM {loaded[0]}")
        (new_id,), = con.execute(
            f"SELECT coalesce(max(run_id), 0) + 1 FROM {WORK}.main.kanon_runs").fetchall()
        con.execute(f"INSERT INTO {WORK}.main.kanon_runs BY NAME SELECT * REPLACE "
                    f"(replace(replace(source, '{WORK}.main.', ''), '\"{WORK}\".\"main\".', '') AS source, "
                    f"{int(new_id)} AS run_id) "
                    f"FROM kanon_runs WHERE run_id = ?", [old_id])
        if trees:
            con.execute(f"DELETE FROM {WORK}.main.kanon_taxonomy WHERE attr IN (SELECT unnest(?))",
                        [trees])
            con.execute(f"INSERT INTO {WORK}.main.kanon_taxonomy SELECT attr, child, parent "
                        f"FROM kanon_taxonomy WHERE attr IN (SELECT unnest(?))", [trees])
        if out is not None:
            verb = "CREATE OR REPLACE TABLE" if replace else "CREATE TABLE"
            con.execute(f"{verb} {WORK}.main.{quote_ident(out)} AS SELECT * REPLACE "
                        f"({int(new_id)}::BIGINT AS kanon_run) FROM {result}")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _temporary_path(out: str, pid: int) -> str:
    return os.path.join(os.path.dirname(os.path.abspath(out)), f".{os.path.basename(out)}.{pid}.tmp")


def _remove_stale_temporaries(out: str) -> None:
    """Remove the temporary files of earlier writes of ``out`` whose process is gone (killed)."""
    d, base = os.path.dirname(os.path.abspath(out)), os.path.basename(out)
    prefix = f".{base}."
    for name in os.listdir(d):
        pid = name[len(prefix):-len(".tmp")] if name.startswith(prefix) and name.endswith(".tmp") else ""
        if not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            with contextlib.suppress(OSError):
                os.remove(os.path.join(d, name))
        except OSError:
            pass


def _demo_report_dir(given):
    """The demo's report directory: as given, none for --no-report, else a fresh temporary one."""
    if given is False:
        return None
    if given:
        return given
    import tempfile
    return tempfile.mkdtemp(prefix="kanon-demo-report-")


def _same_file(a: str, b: str) -> bool:
    """True when paths ``a`` and ``b`` name the same file (after resolving links)."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def _table_exists(con, name: str, db: str | None = None) -> bool:
    """Does table ``name`` exist in schema main of database ``db`` (the current one if None)?"""
    return bool(con.execute(
        "SELECT count(*) FROM duckdb_tables() WHERE table_name = ? AND schema_name = 'main' "
        "AND database_name = coalesce(?, current_database())", [name, db]).fetchall()[0][0])


def _load_file(con, table: str, path: str, fmt: str, qi: list, csv_options: list) -> None:
    """Load INPUT into ``table`` (SQL text, quoted). A CSV's non-QI columns are read as text, so they come out exactly
    as they went in (the sniffer would turn Yes/No into true/false); QIs keep their sniffed types.
    ``csv_options`` ((name, value) from --csv-option) are passed to read_csv."""
    from .demo import sql_string
    from .sqlutil import quote_ident
    if fmt != "csv":
        reader = {"parquet": "read_parquet", "json": "read_json"}[fmt]
        con.execute(f"CREATE OR REPLACE TABLE {table} AS FROM {reader}(?)", [path])
        return
    opts = "".join(f", {quote_ident(k)} = {_option_value(v)}" for k, v in csv_options)
    types = con.execute(f"SELECT column_name, column_type FROM (DESCRIBE SELECT * FROM read_csv("
                        f"{sql_string(path)}{opts}))").fetchall()
    qi_lower = {q.lower() for q in qi}
    keep = {c: t for c, t in types if c.lower() in qi_lower}
    text = "{" + ", ".join(f"{sql_string(c)}: {sql_string(t)}" for c, t in keep.items()) + "}"
    con.execute(f"CREATE OR REPLACE TABLE {table} AS FROM read_csv("
                f"{sql_string(path)}{opts}, all_varchar = true"
                + (f", types = {text}" if keep else "") + ")")


def _option_value(text: str) -> str:
    """A --csv-option value as SQL: numbers and true/false as they are, anything else as text."""
    from .demo import sql_string
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return sql_string(t[1:-1])
    if t.lower() in ("true", "false"):
        return t.lower()
    try:
        float(t)
        return t
    except ValueError:
        return sql_string(t)


def _kinds_with_hierarchies(args):
    """(numeric, categorical) QI lists: a QI given a --hierarchy is categorical (its tree is used,
    whatever the column's type); an explicit --numeric for it is a contradiction."""
    numeric = list(args.numeric) if args.numeric is not None else None
    categorical = list(args.categorical) if args.categorical is not None else None
    tree_qis = [attr for attr, _ in (args.hierarchy or [])]
    for q in tree_qis:
        if q not in args.qi:
            raise CliError(f"--hierarchy {q}=...: {q!r} is not one of the QIs ({', '.join(args.qi)})")
        if numeric is not None and q in numeric:
            raise CliError(f"--hierarchy {q}=... makes {q!r} categorical, but --numeric names it too; "
                           f"drop one of them")
    if tree_qis:
        categorical = (categorical or []) + [q for q in tree_qis if q not in (categorical or [])]
    return numeric, categorical


def _merge_input_taxonomy(con, target: str, work_db, replace: bool) -> None:
    """Make the DuckDB INPUT's trees available in the working database without duplicating rows:
    a tree the working database lacks is copied; an identical one is left alone; a different tree
    under the same name is an error unless --replace (then the input's tree replaces it)."""
    src = "__kanon_input.main.kanon_taxonomy"
    differing = [r[0] for r in con.execute(f"""
        WITH a AS (SELECT DISTINCT attr, child, parent FROM {src}),
             b AS (SELECT DISTINCT attr, child, parent FROM {target}
                   WHERE attr IN (SELECT attr FROM a))
        SELECT DISTINCT attr FROM ((FROM a EXCEPT FROM b) UNION ALL (FROM b EXCEPT FROM a))
        WHERE attr IN (SELECT attr FROM {target}) ORDER BY 1""").fetchall()]
    if differing and not replace:
        raise CliError(f"the input's tree for {differing[0]!r} differs from the one in "
                       f"{work_db or 'the working database'}'s kanon_taxonomy; pass --replace to "
                       f"use the input's trees there")
    con.execute("BEGIN")
    try:
        if differing:
            con.execute(f"DELETE FROM {target} WHERE attr IN (SELECT unnest(?))", [differing])
        con.execute(f"""INSERT INTO {target} SELECT attr, child, parent FROM {src}
                        WHERE attr NOT IN (SELECT DISTINCT attr FROM {target})""")
        con.execute("COMMIT")
    except BaseException:
        con.execute("ROLLBACK")
        raise


def _is_interrupt(exc) -> bool:
    try:
        import duckdb
        if isinstance(exc, getattr(duckdb, "InterruptException", ())):
            return True
    except ImportError:  # pragma: no cover
        pass
    msg = str(exc)
    return ("KeyboardInterrupt" in msg or "Query interrupted" in msg or "INTERRUPT Error" in msg
            or "RunInterrupted" in msg or "was interrupted" in msg)


def _remove_database(path: str) -> None:
    """Remove a DuckDB database file this run created (and its write-ahead log)."""
    for p in (path, path + ".wal"):
        with contextlib.suppress(OSError):
            os.remove(p)


def _cleanup(tmp_path) -> None:
    if tmp_path and os.path.exists(tmp_path):
        with contextlib.suppress(OSError):
            os.remove(tmp_path)


def _table_name_from_path(path: str) -> str:
    base = os.path.basename(path)
    for _ in range(2):
        base = os.path.splitext(base)[0] if "." in base else base
    name = "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in base) or "input"
    return name if not name[0].isdigit() else "t_" + name


# --------------------------------------------------------------------------------------------
# bench / report


def _benchmarks_dir():
    for cand in (Path(__file__).resolve().parent.parent / "benchmarks", Path.cwd() / "benchmarks"):
        if cand.is_dir():
            return cand
    return None


def run_bench(args) -> int:
    bdir = _benchmarks_dir()
    if bdir is None:
        raise CliError("benchmarks/ not found: the benchmark scripts ship with the source checkout, "
                       "not the wheel; run this command from a clone of the repository")
    scripts = sorted(bdir.glob("bench_*.py"))
    if not scripts:
        raise CliError(f"no benchmark scripts (bench_*.py) in {bdir}")
    if args.list:
        for s in scripts:
            print(s.stem[len("bench_"):])
        return 0
    passthrough = list(args.args or [])
    if passthrough and passthrough[0] == "--":
        passthrough = passthrough[1:]
    if args.name:
        wanted = args.name[:-3] if args.name.endswith(".py") else args.name
        wanted = wanted if wanted.startswith("bench_") else "bench_" + wanted
        chosen = [s for s in scripts if s.stem == wanted]
        if not chosen:
            names = ", ".join(s.stem[len("bench_"):] for s in scripts)
            raise CliError(f"unknown benchmark {args.name!r}; available: {names}")
    else:
        chosen = scripts
    status = 0
    for s in chosen:
        print(f"== {s.name} {' '.join(passthrough)}".rstrip(), flush=True)
        rc = subprocess.call([sys.executable, str(s), *passthrough])
        if rc:
            print(f"{s.name} failed with exit status {rc}", file=sys.stderr)
            status = rc
    return status


def run_report(argv) -> int:
    """``kanon-duckdb report``: kanon_duckdb.report's command line."""
    from . import report
    return int(report.main(list(argv)) or 0)


# --------------------------------------------------------------------------------------------
# parser and main


def build_parser() -> argparse.ArgumentParser:
    from .demo import DEFAULT_KS, DEFAULT_QI

    p = argparse.ArgumentParser(
        prog="kanon-duckdb",
        description="k-anonymization inside DuckDB: SQL macros and Python UDFs backed by numba kernels.")
    p.add_argument("--version", action="version", version=f"kanon-duckdb {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")

    d = sub.add_parser("demo", help="anonymize the embedded Adult data set for several k",
                       description="Load Adult (30,162 rows), run k_anonymize in SQL for each k and "
                                   "print classes, GCP, DM, C_avg and seconds.")
    d.add_argument("--algo", default="mondrian", help="algorithm (default: mondrian)")
    d.add_argument("--k", type=_k_list, default=DEFAULT_KS,
                   help=f"comma-separated k values (default: {','.join(map(str, DEFAULT_KS))})")
    d.add_argument("--qi", type=_csv_list, default=DEFAULT_QI,
                   help=f"comma-separated quasi-identifiers (default: {','.join(DEFAULT_QI)})")
    d.add_argument("--db", help="DuckDB database file to keep the tables in (default: in memory)")
    d.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    d.add_argument("--param", action="append", type=_name_value, metavar="NAME=VALUE",
                   help="algorithm parameter (repeatable), e.g. --param max_suppression=0.02")
    d.add_argument("--report", metavar="DIR", default=None,
                   help="where to write the report of these runs (metrics CSV, plots with the "
                        "[plot] extra, index.html; default: a new directory in the system's "
                        "temporary directory, never the current one)")
    d.add_argument("--no-report", dest="report", action="store_const", const=False,
                   help="do not write the report")

    s = sub.add_parser("shell", help="SQL shell with every kanon-duckdb function registered",
                       description="Interactive SQL on a terminal (line editing, history in "
                                   "~/.kanon_duckdb_history); otherwise runs the statements read "
                                   "from stdin and exits 1 if any failed.")
    s.add_argument("db", nargs="?", help="DuckDB database file (default: in memory)")
    s.add_argument("-c", "--command", dest="sql", metavar="SQL",
                   help="run these statements (and dot-commands) and exit")
    s.add_argument("--bail", action="store_true", help="stop at the first error")

    a = sub.add_parser("anonymize", help="anonymize a CSV / Parquet file or a DuckDB table",
                       description="Load INPUT into DuckDB, run k_anonymize and write OUTPUT "
                                   "(.parquet, .csv, .tsv, .json; or a table with --db / a DuckDB "
                                   "INPUT). The output file appears only when the run succeeded.")
    a.add_argument("input", metavar="INPUT", help="CSV/TSV/Parquet/JSON file, or a DuckDB database")
    a.add_argument("--k", type=_positive_int, required=True, help="k of k-anonymity")
    a.add_argument("--algo", default="mondrian", help="algorithm (default: mondrian)")
    a.add_argument("--qi", type=_csv_list, required=True, help="comma-separated quasi-identifiers")
    a.add_argument("--numeric", type=_csv_list, default=None,
                   help="QIs to treat as numeric ranges (default: the columns of numeric type)")
    a.add_argument("--categorical", type=_csv_list, default=None,
                   help="QIs to treat as categorical, e.g. codes read as numbers such as ZIP")
    a.add_argument("--out", required=True, metavar="OUTPUT",
                   help="output file (.parquet/.csv/.tsv/.json) or table name")
    a.add_argument("--table", help="table to anonymize (DuckDB INPUT) or to load a file into")
    a.add_argument("--db", help="DuckDB database to work in (and to write a table OUTPUT to)")
    a.add_argument("--replace", action="store_true",
                   help="replace an existing OUTPUT table or file (also the INPUT file itself, "
                        "after the run), the table a file is loaded into, or differing trees")
    a.add_argument("--seed", type=int, default=0, help="random seed (default: 0)")
    a.add_argument("--param", action="append", type=_name_value, metavar="NAME=VALUE",
                   help="algorithm parameter (repeatable), e.g. --param max_suppression=0.02")
    a.add_argument("--hierarchy", action="append", type=_name_value, metavar="QI=FILE.csv",
                   help="ARX hierarchy CSV for a categorical QI (repeatable); QIs without one "
                        "get a flat tree")
    a.add_argument("--hierarchy-delimiter", default=";", help="delimiter of hierarchy files (;)")
    a.add_argument("--csv-option", action="append", type=_name_value, metavar="NAME=VALUE",
                   help="option passed to DuckDB's read_csv for a CSV INPUT (repeatable), e.g. "
                        "--csv-option delim=; --csv-option header=false")

    w = sub.add_parser("warmup", help="compile the numba kernels ahead of time",
                       description="Compile (or load from numba's cache) the kernels of the given "
                                   "algorithms by running each once on a small synthetic table, "
                                   "so the first real run does not pay for compiling.")
    w.add_argument("--algos", type=_csv_list, default=None,
                   help="comma-separated algorithms (default: all)")

    r = sub.add_parser("report", help="metrics and plots (kanon_duckdb.report)", add_help=False)
    r.add_argument("args", nargs=argparse.REMAINDER)

    b = sub.add_parser("bench", help="run the benchmark scripts in benchmarks/",
                       description="Run benchmarks/bench_NAME.py (all of them without NAME); "
                                   "arguments after NAME are passed through.")
    b.add_argument("--list", action="store_true", help="list the benchmarks")
    b.add_argument("name", nargs="?", help="benchmark name, e.g. mondrian")
    b.add_argument("args", nargs=argparse.REMAINDER, help="arguments for the script")
    return p


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    if argv and argv[0] == "report":
        # everything after "report" belongs to kanon_duckdb.report (argparse's REMAINDER would
        # refuse a leading option such as --help)
        args = argparse.Namespace(command="report", args=argv[1:])
    else:
        args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 2
    try:
        if args.command == "demo":
            from .demo import run_demo
            return run_demo(algo=args.algo, ks=args.k, qi=args.qi, db=args.db, seed=args.seed,
                            params=dict(args.param or []), report_dir=_demo_report_dir(args.report))
        if args.command == "shell":
            from .shell import run_shell
            return run_shell(args.db, command=args.sql, bail=args.bail)
        if args.command == "anonymize":
            return run_anonymize(args)
        if args.command == "report":
            return run_report(args.args)
        if args.command == "warmup":
            from .warmup import warmup
            warmup(args.algos, out=sys.stdout)
            return 0
        if args.command == "bench":
            return run_bench(args)
    except CliError as exc:
        print(f"Error: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - one line, no traceback
        if _is_interrupt(exc):
            print("interrupted", file=sys.stderr)
            return EXIT_INTERRUPTED
        print(_error_line(exc), file=sys.stderr)
        if os.environ.get("KANON_DEBUG"):
            raise
        return 1
    parser.error(f"unknown command {args.command}")
    return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
