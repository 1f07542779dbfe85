"""``kanon-duckdb shell``: a SQL shell on a connection with every kanon-duckdb function registered.

The stock DuckDB CLI cannot load Python UDFs, so this is the product's "DuckDB shell".

- On a terminal: line editing and history (readline; history in ``~/.kanon_duckdb_history``),
  statements end with ``;`` and may span lines; Ctrl-C clears the current input or interrupts a
  running query; Ctrl-D or ``.quit`` leaves.
- Otherwise (a pipe or a file on stdin): every statement is run in order; the exit status is 1 if
  any statement failed (``--bail`` stops at the first failure).
- Results are printed by DuckDB's own box renderer (``DuckDBPyRelation.show``: long results show
  their first and last rows, wide ones drop middle columns, NULL shown as NULL); errors are one
  line on stderr, without a Python traceback.
- Dot-commands: ``.help``, ``.tables``, ``.quit``, ``.timer on|off``, ``.read FILE``.
"""
from __future__ import annotations

import contextlib
import io
import os
import re
import shutil
import sys
import time

HISTORY_FILE = "~/.kanon_duckdb_history"
PROMPT = "kanon> "
CONTINUE = "   ...> "

HELP = """\
.help              show this message
.tables            list the tables and views of every attached database
.timer on|off      print the run time of each statement
.read FILE         run the SQL statements in FILE
.quit              leave the shell (also .exit, Ctrl-D)

Statements end with ';'. Everything kanon-duckdb defines is registered, e.g.:
  SELECT * FROM kanon_taxonomy LIMIT 5;
  CREATE TABLE t_k5 AS FROM k_anonymize('t', k := 5, qi := ['age', 'zip']);
  SELECT * FROM kanon_runs;"""

MAX_ROWS = 40          # rows shown before the renderer elides the middle


def terminal_width(default: int = 200) -> int:
    """Width of the terminal on stdout; ``$COLUMNS`` or ``default`` when stdout is not a terminal."""
    if sys.stdout.isatty():
        return max(40, shutil.get_terminal_size((default, 24)).columns)
    try:
        return max(40, int(os.environ["COLUMNS"]))
    except (KeyError, ValueError):
        return default


_SHOWN_TYPES = {"SELECT", "EXPLAIN", "PRAGMA", "CALL", "EXECUTE", "RELATION", "LOGICAL_PLAN"}
_UDF_PREFIX = "Python exception occurred while executing the UDF: "
_ERROR_HEAD = re.compile(r"^(\w+ )*\w*(Error|Exception|Interrupt)\b:?", re.IGNORECASE)


# --------------------------------------------------------------------------------------------
# statement splitting


def split_statements(text: str):
    """Split ``text`` at top-level ``;`` (outside quotes and comments).

    Returns ``(statements, rest)``: the complete statements (without their ``;``, stripped, empty
    ones dropped) and the unfinished text after the last ``;`` (leading blanks dropped, the
    rest kept as is so that more lines can be appended).

    >>> split_statements("SELECT ';'; SELECT 2 -- c;\\n; SELECT")
    (["SELECT ';'", 'SELECT 2 -- c;'], 'SELECT')
    """
    out, start, i, n = [], 0, 0, len(text)
    while i < n:
        ch = text[i]
        if ch in ("'", '"'):
            j = i + 1
            while j < n:
                if text[j] == ch:
                    if j + 1 < n and text[j + 1] == ch:
                        j += 2
                        continue
                    break
                j += 1
            i = j + 1
            continue
        if ch == "-" and text.startswith("--", i):
            j = text.find("\n", i)
            i = n if j < 0 else j + 1
            continue
        if ch == "/" and text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = n if j < 0 else j + 2
            continue
        if ch == "$":
            # dollar-quoted string: $$...$$ or $tag$...$tag$
            j = i + 1
            while j < n and (text[j].isalnum() or text[j] == "_"):
                j += 1
            if j < n and text[j] == "$" and not text[i + 1:j][:1].isdigit():
                tag = text[i:j + 1]
                k = text.find(tag, j + 1)
                i = n if k < 0 else k + len(tag)
                continue
        if ch == ";":
            stmt = text[start:i].strip()
            if stmt and not _only_comments(stmt):
                out.append(stmt)
            start = i + 1
        i += 1
    return out, text[start:].lstrip()


def _only_comments(stmt: str) -> bool:
    s = stmt
    while True:
        s = s.lstrip()
        if s.startswith("--"):
            j = s.find("\n")
            s = "" if j < 0 else s[j + 1:]
        elif s.startswith("/*"):
            j = s.find("*/")
            s = "" if j < 0 else s[j + 2:]
        else:
            return not s


def error_line(exc: BaseException) -> str:
    """One line for an error: DuckDB's message without the query excerpt, UDF noise removed."""
    msg = str(exc) or type(exc).__name__
    msg = msg.split("\n\nLINE ")[0]
    if _UDF_PREFIX in msg:
        msg = msg.split(_UDF_PREFIX, 1)[1]
    msg = " ".join(part.strip() for part in msg.splitlines() if part.strip())
    return msg if _ERROR_HEAD.match(msg) else f"Error: {msg}"


# --------------------------------------------------------------------------------------------
# the shell


class Shell:
    """Runs statements and dot-commands on ``con``, writing results to ``out`` and errors to ``err``."""

    def __init__(self, con, *, out=None, err=None, interactive=False, bail=False, progress=None):
        from .progress import Reporter

        self.con = con
        self.progress = progress or Reporter()  # the Reporter con was registered with
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.interactive = interactive
        self.bail = bail
        self.timer = False
        self.failed = 0
        self.quit = False

    # -- output -----------------------------------------------------------------------------
    def _print(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def _error(self, text: str) -> None:
        self.failed += 1
        print(text, file=self.err, flush=True)

    # -- SQL --------------------------------------------------------------------------------
    def run_sql(self, stmt: str) -> bool:
        """Run one statement and print its result; False if it failed.

        A query is a lazy relation that DuckDB's renderer runs once while printing it; other
        statements run at ``con.sql`` and print nothing but their result rows, if any."""
        import duckdb

        t0 = time.perf_counter()
        try:
            try:
                kind = self.con.extract_statements(stmt)[0].type.name
            except (duckdb.Error, IndexError):
                kind = None  # let sql() report the parse error
            with self.progress.bar("running") if self.interactive else contextlib.nullcontext():
                rel = self.con.sql(stmt)
                columns = rel.columns if rel is not None else []
                show = bool(columns) and (kind in _SHOWN_TYPES or kind is None or not (
                    len(columns) == 1 and columns[0] in ("Count", "Success")))
                if show and kind == "EXPLAIN" and len(columns) == 2:
                    for r in rel.fetchall():
                        self._print(str(r[1]))
                elif show:
                    self._render(rel)
        except KeyboardInterrupt:
            self._error("Interrupted")
            return False
        except Exception as exc:  # noqa: BLE001 - a shell reports every error and goes on
            self._error(error_line(exc))
            return False
        if self.timer:
            self._print(f"Run Time: real {time.perf_counter() - t0:.3f} s")
        return True

    def _render(self, rel) -> None:
        """Print ``rel`` with DuckDB's box renderer (it writes to sys.stdout; captured and copied
        to ``self.out``)."""
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            rel.show(max_width=terminal_width(), max_rows=MAX_ROWS)
        self.out.write(buf.getvalue())
        self.out.flush()

    # -- dot-commands -----------------------------------------------------------------------
    def dot(self, line: str) -> bool:
        """Run a dot-command; False if it failed."""
        parts = line.strip().split(None, 1)
        cmd, arg = parts[0].lower(), (parts[1].strip() if len(parts) > 1 else "")
        if cmd in (".quit", ".exit", ".q"):
            self.quit = True
            return True
        if cmd == ".help":
            self._print(HELP)
            return True
        if cmd == ".timer":
            if arg.lower() not in ("on", "off"):
                self._error("Error: usage: .timer on|off")
                return False
            self.timer = arg.lower() == "on"
            return True
        if cmd == ".tables":
            return self.run_sql(
                "SELECT CASE WHEN database_name = current_database() AND schema_name = 'main' "
                "THEN table_name ELSE database_name || '.' || schema_name || '.' || table_name END "
                "AS name, kind FROM ("
                "SELECT database_name, schema_name, table_name, "
                "CASE WHEN temporary THEN 'temp table' ELSE 'table' END AS kind FROM duckdb_tables() "
                "UNION ALL SELECT database_name, schema_name, view_name, 'view' FROM duckdb_views() "
                "WHERE NOT internal) ORDER BY ALL")
        if cmd == ".read":
            if not arg:
                self._error("Error: usage: .read FILE")
                return False
            path = os.path.expanduser(arg.strip("'\""))
            try:
                with open(path, encoding="utf-8") as f:
                    text = f.read()
            except OSError as exc:
                self._error(f"Error: cannot read {path}: {exc.strerror or exc}")
                return False
            before = self.failed
            self.run_script(text)
            return self.failed == before
        self._error(f"Error: unknown command {cmd} (try .help)")
        return False

    # -- scripts ----------------------------------------------------------------------------
    def run_script(self, text) -> None:
        """Run every statement and dot-command of ``text`` (a string or an iterable of lines,
        e.g. a file); dot-commands stand on their own line."""
        buf = ""
        lines = text.splitlines(keepends=True) if isinstance(text, str) else text
        for line in lines:
            if self.quit or (self.bail and self.failed):
                return
            if not buf.strip() and line.lstrip().startswith("."):
                self.dot(line)
                continue
            buf += line
            stmts, buf = split_statements(buf)
            for s in stmts:
                if self.bail and self.failed:
                    return
                self.run_sql(s)
        if buf.strip() and not _only_comments(buf) and not self.quit and not (self.bail and self.failed):
            self.run_sql(buf)  # a last statement without ';'

    # -- interactive loop -------------------------------------------------------------------
    def repl(self) -> None:
        """Read-eval-print loop on a terminal, with readline editing and history."""
        hist = os.path.expanduser(HISTORY_FILE)
        readline = _setup_readline(hist)
        self._print('kanon-duckdb shell: enter ".help" for usage hints; statements end with ";".')
        buf = ""
        try:
            while not self.quit:
                try:
                    line = input(CONTINUE if buf else PROMPT)
                except KeyboardInterrupt:
                    print("^C", file=self.out)
                    buf = ""
                    continue
                except EOFError:
                    print(file=self.out)
                    break
                if not buf and line.lstrip().startswith("."):
                    self.dot(line)
                    continue
                buf = (buf + "\n" + line) if buf else line
                stmts, buf = split_statements(buf)
                for s in stmts:
                    self.run_sql(s)
                if not buf.strip() or _only_comments(buf):
                    buf = ""
        finally:
            if readline is not None:
                try:
                    readline.write_history_file(hist)
                except OSError:
                    pass


def _setup_readline(hist: str):
    try:
        import readline
    except ImportError:  # e.g. Windows without pyreadline
        return None
    try:
        readline.read_history_file(hist)
    except (OSError, FileNotFoundError):
        pass
    readline.set_history_length(5000)
    return readline


def open_connection(db=None, progress=None):
    """``kanon_duckdb.connect(db, progress=progress)`` for the command line: the DuckDB progress
    bar off (kanon-duckdb shows its own through ``progress``, a ``progress.Reporter``), and the
    connection closed again if registration fails (no leak warnings)."""
    import duckdb

    from .registration import register

    con = duckdb.connect(db if db is not None else ":memory:")
    try:
        con.execute("SET enable_progress_bar = false")
        register(con, progress=progress)
    except BaseException:
        con.close()
        raise
    return con


def run_shell(db=None, *, command=None, bail=False, stdin=None) -> int:
    """Entry point of ``kanon-duckdb shell``; returns the exit status."""
    stdin = stdin or sys.stdin
    interactive = command is None and stdin.isatty()
    from .progress import Reporter

    reporter = Reporter()
    try:
        con = open_connection(db, progress=reporter)
    except Exception as exc:  # noqa: BLE001
        print(error_line(exc), file=sys.stderr)
        return 1
    try:
        shell = Shell(con, interactive=interactive, bail=bail, progress=reporter)
        if command is not None:
            shell.run_script(command)
        elif interactive:
            shell.repl()
        else:
            shell.run_script(stdin)
        return 0 if interactive or shell.failed == 0 else 1
    finally:
        con.close()
        del con
