"""``kanon-duckdb demo``: anonymize the embedded Adult data set for several k, all in SQL.

Loads ``adult`` (30,162 rows) and its taxonomies, runs ``k_anonymize`` for each k and prints
k, classes, GCP (percent), DM (discernibility), C_avg and the seconds of the anonymizing
statement, each metric computed by the SQL macros ``gcp``, ``discernibility`` and ``cavg`` on
the anonymized table. The anonymized tables are named ``adult_<algo>_k<k>``; with ``--db`` they
stay in that database file for a later ``kanon-duckdb shell``.
"""
from __future__ import annotations

import os
import sys
import time

DEFAULT_QI = ["age", "education_num", "workclass", "marital_status", "occupation", "race", "sex",
              "native_country"]
DEFAULT_KS = [2, 5, 10, 25, 50, 100]


def sql_string(value: str) -> str:
    """A SQL string literal ('' doubles an embedded quote)."""
    return "'" + str(value).replace("'", "''") + "'"


def sql_list(values) -> str:
    return "[" + ", ".join(sql_string(v) for v in values) + "]"


def k_anonymize_sql(table: str, k: int, algo: str, qi, seed: int = 0, params=None,
                    numeric=None, categorical=None) -> str:
    """``FROM k_anonymize(...)`` with every argument as a SQL literal.

    The macro needs constant arguments (its plan is folded at bind time), so values are written
    as escaped literals; ``k``/``seed`` are checked to be integers first. ``numeric`` /
    ``categorical`` override the type-based choice of numeric and categorical QIs.
    """
    args = [sql_string(table), f"k := {int(k)}", f"algo := {sql_string(algo)}",
            f"qi := {sql_list(qi)}", f"seed := {int(seed)}"]
    if numeric:
        args.append(f'"numeric" := {sql_list(numeric)}')
    if categorical:
        args.append(f"categorical := {sql_list(categorical)}")
    for name, value in (params or {}).items():
        if not name.isidentifier():
            raise ValueError(f"invalid parameter name {name!r}")
        args.append(f"{name} := {sql_string(value)}")
    return "FROM k_anonymize(" + ", ".join(args) + ")"


def _warm_up(con, algo: str, qi) -> None:
    """Load (or compile) the kernels on a small sample so the timed runs measure anonymization."""
    con.execute("CREATE OR REPLACE TABLE __kanon_demo_warmup AS FROM adult LIMIT 500")
    try:
        con.execute(f"SELECT count(*) {k_anonymize_sql('__kanon_demo_warmup', 5, algo, qi)}").fetchall()
    finally:
        con.execute("DROP TABLE IF EXISTS __kanon_demo_warmup")
        con.execute("DELETE FROM kanon_runs WHERE source LIKE '%__kanon_demo_warmup%'")


class StreamTable:
    """A box table printed row by row (each row as soon as it is known), right-aligned cells."""

    def __init__(self, columns, widths, out):
        self.widths = [max(w, len(c)) for c, w in zip(columns, widths)]
        self.out = out
        self._line("┌", "┬", "┐")
        self._cells(columns)
        self._line("├", "┼", "┤")

    def _line(self, left, mid, right):
        print(left + mid.join("─" * (w + 2) for w in self.widths) + right, file=self.out, flush=True)

    def _cells(self, values):
        print("│" + "│".join(f" {v!s:>{w}} " for v, w in zip(values, self.widths)) + "│",
              file=self.out, flush=True)

    def row(self, values):
        self._cells(values)

    def close(self):
        self._line("└", "┴", "┘")


def measure(con, table: str):
    """(classes, GCP fraction, DM, C_avg) of an anonymized table, through the SQL metric macros."""
    lit = sql_string(table)
    from .sqlutil import quote_ident
    classes = con.execute(
        f"SELECT count(DISTINCT ec) FROM {quote_ident(table)}").fetchall()[0][0]
    gcp, dm, cavg = con.execute(
        f"SELECT gcp({lit}), discernibility({lit}), cavg({lit})").fetchall()[0]
    return int(classes), float(gcp), int(dm), float(cavg)


def _write_report(con, algo, ks, qi, seed, report_dir, out) -> None:
    """The issue-5 report (metrics, plots, HTML) for the same runs, via kanon_duckdb.report."""
    import importlib.util

    from .report import ReportOptions, build_report

    plots = importlib.util.find_spec("matplotlib") is not None
    res = build_report(con, "adult", [algo], ks, report_dir,
                       ReportOptions(qi=qi, seed=seed, warmup=False, plots=plots))
    where = os.path.abspath(res.get("html") or res.get("csv") or report_dir)
    print(f"report: {where}" + ("" if plots else " (no plots: pip install 'kanon-duckdb[plot]')"),
          file=out)


def run_demo(*, algo: str = "mondrian", ks=None, qi=None, db=None, out=None, params=None,
             seed: int = 0, report_dir=None) -> int:
    """Run the demo and print its table to ``out``; returns the exit status."""
    from . import load_example, progress
    from .shell import open_connection
    from .sqlutil import quote_ident

    out = out or sys.stdout
    ks = list(ks or DEFAULT_KS)
    qi = list(qi or DEFAULT_QI)
    t_start = time.perf_counter()
    reporter = progress.Reporter()
    con = open_connection(db, progress=reporter)
    try:
        n = load_example(con, "adult")
        n = n if isinstance(n, int) else con.execute("SELECT count(*) FROM adult").fetchall()[0][0]
        print(f"Adult: {n:,} rows; algo {algo}; QIs {', '.join(qi)}", file=out, flush=True)
        # load (or compile: the kanon_duckdb logger says so) the kernels on a small sample, so
        # the timed runs measure anonymization
        _warm_up(con, algo, qi)
        table = StreamTable(["k", "classes", "GCP %", "DM", "C_avg", "seconds"],
                            [5, 8, 7, 12, 7, 8], out)
        for k in ks:
            name = f"adult_{algo}_k{k}"
            t0 = time.perf_counter()
            with reporter.bar(f"k={k}", min_seconds=3.0):
                con.execute(f"CREATE OR REPLACE TABLE {quote_ident(name)} AS "
                            f"{k_anonymize_sql('adult', k, algo, qi, seed, params)}")
            seconds = time.perf_counter() - t0
            classes, gcp, dm, cavg = measure(con, name)
            table.row((k, classes, f"{100 * gcp:.2f}", dm, f"{cavg:.2f}", f"{seconds:.3f}"))
        table.close()
        if report_dir:
            print("writing the report (metrics, plots, HTML)...", file=out, flush=True)
            _write_report(con, algo, ks, qi, seed, report_dir, out)
        total = time.perf_counter() - t_start
        where = f"in {db}" if db else "in memory"
        print(f"anonymized tables adult_{algo}_k<k> {where}; total {total:.1f} s", file=out)
        if db:
            print(f"explore them: kanon-duckdb shell {db}", file=out)
        else:
            print("keep them with --db FILE, then explore: kanon-duckdb shell FILE", file=out)
        return 0
    finally:
        con.close()
        del con
