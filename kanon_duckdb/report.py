"""``kanon-duckdb report``: run algorithms over a range of k, measure, plot, publish an HTML page.

For every (algo, k) the report anonymizes the table through the SQL surface
(``CREATE TABLE ... AS FROM k_anonymize(...)``) and measures, with the SQL metric macros:

- ``seconds`` (wall time of the statement) and ``algo_seconds`` (``kanon_runs.elapsed_s``),
- ``classes`` (equivalence classes that are not suppressed) and ``suppressed`` (rows),
- ``gcp``, ``gen_total_il``, ``dm`` (``discernibility``), ``cavg`` (``cavg(tbl, k)``),
- ``cm`` (Iyengar's classification metric of the label column, the ``cm`` macro),
- ``query_error``: mean relative error of a random COUNT workload (``query_workload`` /
  ``workload_error``, generated once on the source table).

Outputs in ``out_dir``: ``kanon_report.csv``, one PNG per metric vs k (one line per algorithm,
``kanon_duckdb.plots``), ``overview.png``, and ``index.html`` (the plots and the table). The rows
also go to the DuckDB table ``kanon_report`` (replaced). A failing run (e.g. an infeasible k) is
kept as a row with its error message and no metrics; a metric that fails is left empty and named
in the row's ``error`` column, the other metrics are kept.

Python::

    con = kanon_duckdb.connect(); kanon_duckdb.load_example(con, "adult")
    paths = build_report(con, "adult", ["mondrian", "kmember"], [2, 5, 10], "report/")

Command line (through kanon_duckdb.cli or ``python -m kanon_duckdb.report``)::

    kanon-duckdb report --table adult --algos mondrian --k 2,5,10,25,50,100 --out report/
"""
from __future__ import annotations

import argparse
import html
import logging
import os
import sys
import time
from dataclasses import dataclass, field, replace
from typing import Callable

import duckdb

from .errors import InvalidParameterError, KanonError
from .demo import sql_string
from .sqlutil import quote_ident, resolve_table, table_columns

log = logging.getLogger(__name__)

# The eight QIs the papers use on Adult (cof-mondrian-outliers.txt §4.1 and others).
ADULT_QI = ["age", "workclass", "education", "marital_status", "occupation", "race", "sex",
            "native_country"]
REPORT_TABLE = "kanon_report"
SAMPLE_TABLE = "kanon_report_sample"
WORKLOAD_TABLE = "kanon_report_workload"
ANON_TABLE = "kanon_report_anon"
WARMUP_TABLE = "kanon_report_warmup"
COLUMNS = ("algo", "k", "seconds", "algo_seconds", "n_rows", "classes", "suppressed", "gcp",
           "gen_total_il", "dm", "cavg", "cm", "query_error", "query_error_median", "run_id",
           "error")
_SQL_TYPES = {"algo": "VARCHAR", "k": "BIGINT", "n_rows": "BIGINT", "classes": "BIGINT",
              "suppressed": "BIGINT", "dm": "BIGINT", "run_id": "BIGINT", "error": "VARCHAR"}


def _parse_list(text, cast=str):
    if text is None:
        return None
    if isinstance(text, (list, tuple)):
        return [cast(x) for x in text]
    return [cast(x.strip()) for x in str(text).split(",") if x.strip()]


ADULT_LABEL = "income"
AUTO = "auto"


def _validate(con, table, algos, ks, label, sample, qi):
    from .algorithms import get_algorithm

    if not algos:
        raise InvalidParameterError("no algorithms given; pass e.g. --algos mondrian,kmember")
    algos = [get_algorithm(a).name for a in algos]  # unknown algo -> error listing valid ones
    if not ks:
        raise InvalidParameterError("no k values given; pass e.g. --k 2,5,10")
    ks = sorted({int(k) for k in ks})
    if ks[0] < 1:
        raise InvalidParameterError(f"k={ks[0]} must be >= 1")
    if sample is not None and int(sample) < 1:
        raise InvalidParameterError(f"sample={sample} must be a positive number of rows")
    _, table_sql = resolve_table(con, table)
    cols = [c for c, _ in table_columns(con, table_sql)]
    is_adult = all(c in cols for c in ADULT_QI) and ADULT_LABEL in cols
    if label == AUTO:  # Adult's label on Adult only; other data: no CM unless a label is given
        label = ADULT_LABEL if is_adult else None
    if qi is None:
        qi = ADULT_QI if all(c in cols for c in ADULT_QI) else [c for c in cols if c != label]
    missing = [c for c in qi if c not in cols]
    if missing:
        raise InvalidParameterError(f"QI column(s) {missing} are not in table {table!r} "
                                    f"(columns: {', '.join(cols)})")
    if label is not None and label not in cols:
        raise InvalidParameterError(f"label column {label!r} is not in table {table!r} "
                                    f"(columns: {', '.join(cols)}); pass --label or --no-label")
    if label is not None and label in qi:
        raise InvalidParameterError(f"label column {label!r} is also a QI; CM needs a label that "
                                    "anonymization leaves unchanged")
    return algos, ks, table_sql, list(qi), label


def _make_source(con, table_sql, sample, seed):
    """The table to anonymize: the table itself or a deterministic sample of it."""
    if sample is None:
        return table_sql, None
    con.execute(
        f"CREATE OR REPLACE TABLE {quote_ident(SAMPLE_TABLE)} AS SELECT * FROM {table_sql} "
        f"WHERE rowid IN (SELECT rowid FROM {table_sql} ORDER BY hash(rowid, ?::BIGINT), rowid "
        f"LIMIT ?) ORDER BY rowid", [int(seed), int(sample)])
    return quote_ident(SAMPLE_TABLE), SAMPLE_TABLE


def _first_line(exc) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def _scalar(con, sql, params=()):
    return con.execute(sql, list(params)).fetchall()[0][0]


def _measure(con, anon_name, source_name, k, label, workload):
    """Metrics of one anonymized table (the SQL metric macros); a metric that fails is None and
    its error is returned."""
    anon_sql = quote_ident(anon_name)
    out, errors = {}, []

    def attempt(names, fn):
        try:
            vals = fn()
        except Exception as exc:  # one broken metric must not hide the others
            errors.append(f"{names[0]}: {_first_line(exc)}")
            vals = (None,) * len(names)
        out.update(zip(names, vals if len(names) > 1 else (vals,)))

    n, classes, sup = con.execute(
        f"SELECT count(*), count(DISTINCT ec) FILTER (WHERE NOT suppressed), "
        f"count(*) FILTER (WHERE suppressed) FROM {anon_sql}").fetchall()[0]
    out.update(n_rows=n, classes=classes, suppressed=sup)
    for col, macro in (("gcp", "gcp"), ("gen_total_il", "gen_total_il"), ("dm", "discernibility")):
        attempt([col], lambda m=macro: _scalar(con, f"SELECT {m}(?)", [anon_name]))
    if out.get("dm") is not None:
        out["dm"] = int(out["dm"])
    attempt(["cavg"], lambda: _scalar(con, "SELECT cavg(?, ?)", [anon_name, k]))
    out["cm"] = None
    if label is not None:
        attempt(["cm"], lambda: _scalar(con, "SELECT cm(?, ?)", [anon_name, label]))
    if workload:
        attempt(["query_error", "query_error_median"], lambda: con.execute(
            "SELECT mean_rel_error, median_rel_error FROM workload_error(?, ?, ?)",
            [WORKLOAD_TABLE, source_name, anon_name]).fetchall()[0])
    if errors:
        out["error"] = "; ".join(errors)
    return out


def _warm_up(con, source_sql, algos, qi, seed, on_progress, params):
    """Run each algorithm once on a 64-row table so JIT compilation is not timed."""
    warm = quote_ident(WARMUP_TABLE)
    con.execute(f"CREATE OR REPLACE TABLE {warm} AS SELECT * FROM {source_sql} "
                "ORDER BY rowid LIMIT 64")
    try:
        for algo in algos:
            if on_progress:
                on_progress(f"{algo}: warm-up (JIT compilation) ...")
            try:
                con.execute(f"SELECT count(*) {_anonymize_sql(params)}",
                            [WARMUP_TABLE, 2, algo, qi, int(seed)] + list(params.values())
                            ).fetchall()
            except Exception as exc:  # the timed run will report it
                log.info("report: warm-up of %s failed: %s", algo, exc)
    finally:
        con.execute(f"DROP TABLE IF EXISTS {warm}")


def _ml_label(column):
    metric, model = column.split("_", 1)
    return f"{'Accuracy' if metric == 'accuracy' else 'F-measure'} ({model}, trained on anonymized)"


def _classify(con, source_name, anon_name, label, models, seed, row, baseline):
    """Add accuracy_<m>/f1_<m> of classifiers trained on the anonymized table to ``row``."""
    from .ml_utility import classification_utility
    try:
        res = classification_utility(con, source_name, anon_name, label, models=models, seed=seed)
    except Exception as exc:
        row["error"] = "; ".join(filter(None, [row.get("error"), f"classifiers: {_first_line(exc)}"]))
        return
    for r in res:
        row[f"accuracy_{r['model']}"] = r["accuracy_anon"]
        row[f"f1_{r['model']}"] = r["f1_anon"]
        baseline[f"accuracy_{r['model']}"] = r["accuracy_raw"]
        baseline[f"f1_{r['model']}"] = r["f1_raw"]


def _write_table(con, rows, columns=COLUMNS):
    cols = ", ".join(f"{quote_ident(c)} {_SQL_TYPES.get(c, 'DOUBLE')}" for c in columns)
    con.execute(f"CREATE OR REPLACE TABLE {quote_ident(REPORT_TABLE)} ({cols})")
    if rows:
        marks = ", ".join("?" for _ in columns)
        con.executemany(f"INSERT INTO {quote_ident(REPORT_TABLE)} VALUES ({marks})",
                        [[r.get(c) for c in columns] for r in rows])


def _fmt(v):
    if v is None:
        return ""
    if isinstance(v, float):
        return f"{v:.4g}"
    return str(v)


def _write_html(path, rows, plots, meta, notes, columns=COLUMNS):
    out_dir = os.path.dirname(path)
    parts = ["<!DOCTYPE html>", "<html><head><meta charset='utf-8'>",
             f"<title>kanon-duckdb report: {html.escape(meta['table'])}</title>",
             "<style>body{font-family:sans-serif;margin:2em;max-width:1400px}"
             "table{border-collapse:collapse;font-size:13px}td,th{border:1px solid #ccc;"
             "padding:3px 7px;text-align:right}th{background:#eee}td.t{text-align:left}"
             "img{max-width:48%;margin:4px;border:1px solid #ddd}</style></head><body>",
             f"<h1>kanon-duckdb report: {html.escape(meta['table'])}</h1>",
             "<p>" + html.escape(
                 f"{meta['n_rows']} rows; QIs: {', '.join(meta['qi'])}; label: "
                 f"{meta['label'] or 'none (no CM)'}; algorithms: {', '.join(meta['algos'])}; "
                 f"k: {', '.join(map(str, meta['ks']))}; seed {meta['seed']}"
                 + "".join(f"; {n} = {v}" for n, v in (meta.get('params') or {}).items())
                 + ".") + "</p>"]
    if notes:
        parts.append("<ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in notes) + "</ul>")
    parts.append("<h2>Metrics vs k</h2>")
    if "overview" in plots:
        rel = html.escape(os.path.relpath(plots["overview"], out_dir))
        parts.append(f"<p>All plots in one figure: <a href='{rel}'>{rel}</a></p>")
    parts.append("<div>")
    for name, p in plots.items():
        if name != "overview":
            rel = html.escape(os.path.relpath(p, out_dir))
            parts.append(f"<img src='{rel}' alt='{html.escape(name)} vs k'>")
    parts.append("</div><h2>Results</h2><table><tr>"
                 + "".join(f"<th>{html.escape(c)}</th>" for c in columns) + "</tr>")
    for r in rows:
        parts.append("<tr>" + "".join(
            f"<td class='t'>{html.escape(_fmt(r.get(c)))}</td>" if c in ("algo", "error")
            else f"<td>{html.escape(_fmt(r.get(c)))}</td>" for c in columns) + "</tr>")
    parts.append("</table><p>Definitions: GCP and GenTotal-IL are fractions in [0, 1]; DM = sum of "
                 "class sizes squared (+N per suppressed row); C_avg = (N / classes) / k; CM = share "
                 "of rows suppressed or not carrying their class's majority label; query error = "
                 "mean (and median) relative error |A - a| / A of the COUNT workload. Results CSV: "
                 "<a href='kanon_report.csv'>kanon_report.csv</a>; DuckDB table "
                 f"<code>{REPORT_TABLE}</code>.</p></body></html>")
    with open(path, "w", encoding="utf-8") as f:
        f.write("\n".join(parts))


def _check_params(params) -> dict:
    """Algorithm parameters {name: value}; names must be identifiers (they become ``name :=``)."""
    params = dict(params or {})
    for name in params:
        if not isinstance(name, str) or not name.isidentifier():
            raise InvalidParameterError(f"invalid parameter name {name!r}; pass name=value")
    return params


def _anonymize_sql(params) -> str:
    """The k_anonymize call of a run, parameters bound as ``?`` after the fixed ones."""
    named = "".join(f", {name} := ?" for name in params)
    return f"FROM k_anonymize(?, k := ?, algo := ?, qi := ?, seed := ?{named})"


@dataclass(frozen=True)
class ReportOptions:
    """What a report runs and measures besides the table, algorithms and k values.

    qi : QI columns; default the papers' eight Adult QIs when present, else every column but
        ``label``.
    label : class column for CM (None: no CM; 'auto', the default: ``income`` when the table is
        Adult, else no CM).
    params : algorithm parameters {name: value} passed to every k_anonymize call (an algorithm
        that does not take one fails its runs with a row naming the parameter).
    sample : anonymize a deterministic sample of this many rows (table ``kanon_report_sample``).
    seed : passed to every algorithm and to the sample and the workload.
    queries : size of the query workload (0: no query error).
    keep_tables : keep each anonymized table as ``kanon_report_<algo>_k<k>``.
    plots : write the PNG plots (needs matplotlib, extra ``[plot]``).
    warmup : run each algorithm once on 64 rows first, so JIT compilation is not timed.
    ml_models : classifiers (e.g. ['knn', 'rf']) whose accuracy and F-measure, trained on each
        anonymized table and tested on held-out raw rows (``classification_utility``, extra
        ``[ml]``), are added as columns ``accuracy_<m>``, ``f1_<m>``; the raw-data baseline of the
        same split is in ``ml_baseline`` and drawn as a dashed line.
    on_progress : optional callable(str) told about each run.
    """
    qi: list | None = None
    label: str | None = AUTO
    sample: int | None = None
    seed: int = 0
    queries: int = 1000
    keep_tables: bool = False
    plots: bool = True
    warmup: bool = True
    ml_models: list | None = None
    on_progress: Callable[[str], None] | None = None
    params: dict | None = None


@dataclass
class _Plan:
    """A validated report: what runs on which source, and the notes collected so far."""
    table: str
    algos: list
    ks: list
    qi: list
    label: str | None
    params: dict
    source_sql: str
    source_name: str
    n_rows: int
    ml_models: list
    workload: bool = False
    notes: list = field(default_factory=list)

    @property
    def ml_columns(self) -> list:
        return [f"{m}_{model}" for model in self.ml_models for m in ("accuracy", "f1")]


def build_report(con, table, algos, ks, out_dir, options: ReportOptions | None = None,
                 **overrides) -> dict:
    """Run every (algo, k) on ``table``, measure, and write CSV, PNGs, HTML and ``kanon_report``.

    ``con``: a connection from ``kanon_duckdb.connect``; ``table``: source table (not TEMP);
    ``algos``/``ks``: algorithm names and k values (lists or comma-separated text); ``out_dir``:
    output folder (created). ``options``: a :class:`ReportOptions`; keyword ``overrides`` replace
    its fields (``build_report(con, 'adult', ['mondrian'], [5], 'out', sample=2000)``).

    Returns a dict with keys ``csv``, ``html``, ``plots`` ({metric: png path}), ``table``
    ('kanon_report'), ``rows`` (list of dicts, ``columns`` keys), ``columns`` (COLUMNS plus the
    classifier columns), ``ml_baseline`` ({column: raw-data value}) and ``notes`` (list of str).
    Cost: one k_anonymize statement and the metric macros per (algo, k).
    """
    opts = replace(options or ReportOptions(), **overrides)
    plan = _plan(con, table, algos, ks, opts)
    os.makedirs(out_dir, exist_ok=True)
    if opts.warmup:
        _warm_up(con, plan.source_sql, plan.algos, plan.qi, opts.seed, opts.on_progress,
                 plan.params)
        plan.notes.append("each algorithm ran once on 64 rows before timing, so numba "
                          "compilation is not in the runtimes")
    ml_baseline: dict = {}
    rows = [_run_one(con, plan, opts, algo, k, ml_baseline) for algo in plan.algos for k in plan.ks]
    if not opts.keep_tables:
        con.execute(f"DROP TABLE IF EXISTS {quote_ident(ANON_TABLE)}")
    return _write_outputs(con, plan, opts, rows, ml_baseline, out_dir)


def _plan(con, table, algos, ks, opts: ReportOptions) -> _Plan:
    """Validate the arguments, make the source (sample) and the query workload."""
    algos, ks, table_sql, qi, label = _validate(con, table, _parse_list(algos),
                                                _parse_list(ks, int), opts.label, opts.sample,
                                                opts.qi)
    params = _check_params(opts.params)
    ml_models = _parse_list(opts.ml_models) or []
    source_sql, source_name = _make_source(con, table_sql, opts.sample, opts.seed)
    n_rows = _scalar(con, f"SELECT count(*) FROM {source_sql}")
    plan = _Plan(table, algos, ks, qi, label, params, source_sql, source_name or table, n_rows,
                 ml_models)
    if opts.sample is not None:
        plan.notes.append(f"deterministic sample of {n_rows} rows of {table} (seed {opts.seed}), "
                          f"table {SAMPLE_TABLE}")
    if opts.queries:
        con.execute(f"CREATE OR REPLACE TABLE {quote_ident(WORKLOAD_TABLE)} AS "
                    "FROM query_workload(?, n := ?, seed := ?, qi := ?)",
                    [plan.source_name, int(opts.queries), int(opts.seed), qi])
        plan.workload = True
        plan.notes.append(f"query error: mean relative error of {int(opts.queries)} random COUNT "
                          f"queries (table {WORKLOAD_TABLE}); queries with a raw answer of 0 are "
                          f"skipped")
    if ml_models:
        _check_ml(ml_models, opts.seed, label)
        plan.notes.append("classifier accuracy / F-measure: trained on the anonymized rows, tested "
                          "on 30% held-out raw rows (classification_utility); dashed line = "
                          "trained on raw")
    return plan


def _check_ml(ml_models, seed, label) -> None:
    from .ml_utility import _validate as _ml_validate, require_sklearn
    require_sklearn()
    _ml_validate(ml_models, seed, 0.3, "ordinal")
    if label is None:
        raise InvalidParameterError("classifier columns need a label column; pass label")


def _run_one(con, plan: _Plan, opts: ReportOptions, algo: str, k: int, ml_baseline: dict) -> dict:
    """Anonymize with (algo, k), measure, classify; a failure is recorded in the row's error."""
    anon_name = f"kanon_report_{algo}_k{k}" if opts.keep_tables else ANON_TABLE
    row = {"algo": algo, "k": k}
    say = opts.on_progress or (lambda _msg: None)
    say(f"{algo} k={k} ...")
    t0 = time.perf_counter()
    try:
        con.execute(f"CREATE OR REPLACE TABLE {quote_ident(anon_name)} AS "
                    f"{_anonymize_sql(plan.params)}",
                    [plan.source_name, k, algo, plan.qi, int(opts.seed)]
                    + list(plan.params.values()))
        row["seconds"] = time.perf_counter() - t0
        run_id, algo_s = con.execute(
            f"SELECT r.run_id, r.elapsed_s FROM kanon_runs r WHERE r.run_id = "
            f"(SELECT max(kanon_run) FROM {quote_ident(anon_name)})").fetchall()[0]
        row.update(run_id=run_id, algo_seconds=algo_s)
        row.update(_measure(con, anon_name, plan.source_name, k, plan.label, plan.workload))
        if plan.ml_models:
            _classify(con, plan.source_name, anon_name, plan.label, plan.ml_models, opts.seed,
                      row, ml_baseline)
    except Exception as exc:  # keep going; the row records the error
        row["error"] = _first_line(exc)
        log.warning("report: %s k=%s failed: %s", algo, k, row["error"])
    done = (f"{row['seconds']:.2f} s, GCP {_fmt(row.get('gcp'))}"
            if row.get("seconds") is not None else "failed")
    say(f"{algo} k={k}: {done}" + (f" (error: {row['error']})" if row.get("error") else ""))
    return row


def _write_outputs(con, plan: _Plan, opts: ReportOptions, rows, ml_baseline, out_dir) -> dict:
    """The kanon_report table, its CSV (DuckDB COPY), the plots and index.html."""
    columns = list(COLUMNS) + plan.ml_columns
    _write_table(con, rows, columns)
    csv_path = os.path.join(out_dir, "kanon_report.csv")
    con.execute(f"COPY {quote_ident(REPORT_TABLE)} TO {sql_string(csv_path)} (HEADER)")
    plot_paths = {}
    if opts.plots:
        from .plots import plot_report
        ok = [r for r in rows if r.get("seconds") is not None]
        plot_paths = plot_report(ok, out_dir, title=f"{plan.table}, n={plan.n_rows}",
                                 extra=[(c, _ml_label(c), False) for c in plan.ml_columns],
                                 baselines=ml_baseline)
    html_path = os.path.join(out_dir, "index.html")
    meta = {"table": plan.table, "n_rows": plan.n_rows, "qi": plan.qi, "label": plan.label,
            "algos": plan.algos, "ks": plan.ks, "seed": opts.seed, "params": plan.params}
    notes = list(plan.notes)
    if ml_baseline:
        notes.append("raw-data baseline: " + ", ".join(
            f"{c} {v:.4f}" for c, v in ml_baseline.items()))
    _write_html(html_path, rows, plot_paths, meta, notes, columns)
    return {"csv": csv_path, "html": html_path, "plots": plot_paths, "table": REPORT_TABLE,
            "rows": rows, "columns": columns, "ml_baseline": ml_baseline, "notes": notes}


# --------------------------------------------------------------------------- command line


def _name_value(text: str):
    name, sep, value = text.partition("=")
    if not sep or not name.strip():
        raise argparse.ArgumentTypeError(f"expected name=value, got {text!r}")
    return name.strip(), value.strip()


def add_report_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add the ``report`` options to an argparse (sub)parser."""
    parser.add_argument("--db", default=None,
                        help="DuckDB database file (default: in memory; the Adult example is "
                             "loaded when --table adult does not exist)")
    parser.add_argument("--table", default="adult", help="table to anonymize (default: adult)")
    parser.add_argument("--algos", default="mondrian",
                        help="comma-separated algorithms (default: mondrian)")
    parser.add_argument("--k", default="2,5,10,25,50,100",
                        help="comma-separated k values (default: 2,5,10,25,50,100)")
    parser.add_argument("--qi", default=None,
                        help="comma-separated QI columns (default: the papers' 8 Adult QIs, or "
                             "every column but the label)")
    parser.add_argument("--label", default=AUTO,
                        help="class column for CM (default: income on the Adult table, else none)")
    parser.add_argument("--no-label", action="store_true", help="do not compute CM")
    parser.add_argument("--sample", type=int, default=None,
                        help="anonymize a deterministic sample of N rows (quick runs)")
    parser.add_argument("--seed", type=int, default=0, help="seed (default: 0)")
    parser.add_argument("--queries", type=int, default=1000,
                        help="query-workload size for the query error (0 = skip; default 1000)")
    parser.add_argument("--out", default="kanon_report", help="output folder (default: kanon_report)")
    parser.add_argument("--keep-tables", action="store_true",
                        help="keep every anonymized table as kanon_report_<algo>_k<k>")
    parser.add_argument("--no-plots", action="store_true", help="skip the PNG plots")
    parser.add_argument("--ml", default=None,
                        help="comma-separated classifiers (knn,svm,rf,nb,dt,lr) whose accuracy and "
                             "F-measure on each anonymized table are added (needs kanon-duckdb[ml])")
    parser.add_argument("--param", action="append", type=_name_value, metavar="NAME=VALUE",
                        help="algorithm parameter for every run (repeatable), e.g. "
                             "--param max_suppression=0.005")
    parser.add_argument("--hierarchy", action="append", type=_name_value, metavar="QI=FILE.csv",
                        help="ARX hierarchy CSV for a categorical QI (repeatable), loaded into "
                             "kanon_taxonomy before the runs")
    parser.add_argument("--hierarchy-delimiter", default=";",
                        help="delimiter of hierarchy files (default ;)")
    parser.add_argument("--no-warmup", action="store_true",
                        help="time the first run of each algorithm with its JIT compilation")
    return parser


def run_report(args) -> dict:
    """Run the report for parsed ``args`` (see add_report_arguments); prints where it is."""
    from . import connect, load_example

    con = connect(args.db)
    try:
        exists = con.execute("SELECT count(*) FROM duckdb_tables() WHERE table_name = ?",
                             [args.table]).fetchall()[0][0]
        if not exists and args.table == "adult":
            load_example(con, "adult")
        for attr, path in getattr(args, "hierarchy", None) or []:
            from .taxonomy import load_arx_taxonomy
            if not os.path.exists(path):
                raise InvalidParameterError(f"hierarchy file not found: {path}")
            load_arx_taxonomy(con, attr, path, delimiter=args.hierarchy_delimiter)
        say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
        opts = ReportOptions(qi=_parse_list(args.qi), label=None if args.no_label else args.label,
                             sample=args.sample, seed=args.seed, queries=args.queries,
                             keep_tables=args.keep_tables, plots=not args.no_plots,
                             warmup=not args.no_warmup, ml_models=_parse_list(args.ml),
                             on_progress=say, params=dict(getattr(args, "param", None) or []))
        res = build_report(con, args.table, _parse_list(args.algos), _parse_list(args.k, int),
                           args.out, opts)
    finally:
        con.close()
    print(f"report: {os.path.abspath(res['html'])}")
    where = (f"table {res['table']} in {args.db}" if args.db else
             f"table {res['table']} not kept: in-memory database, pass --db FILE")
    print(f"results: {os.path.abspath(res['csv'])} ({where})")
    return res


def main(argv=None) -> int:
    parser = add_report_arguments(argparse.ArgumentParser(
        prog="kanon-duckdb report", description="Anonymize a table for several algorithms and k, "
        "measure utility, and write CSV, PNG plots and an HTML page."))
    args = parser.parse_args(argv)
    try:
        run_report(args)
    except (KanonError, duckdb.Error) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
