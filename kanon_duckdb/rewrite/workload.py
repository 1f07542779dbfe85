"""Random query workloads and their error, evaluated in one pass per table.

``generate_workload`` draws COUNT(*) queries in the style of LeFevre et al. 2006: each picks
``dims`` quasi-identifiers; a numeric one gets a random range ``BETWEEN lo AND hi`` (both ends
drawn from its distinct values), a categorical one an equality ``= v`` or a random ``IN`` subset.

``workload_errors`` answers every query of a workload table at once: the raw and the anonymized
tables are each read once, grouped by the columns the WHERE clauses use (the anonymized table
collapses to its classes), and each query is evaluated on those arrays (evaluate.py) with the
same algebra as the rewritten SQL. Running 1,000 rewritten statements instead would spend seconds
in DuckDB's binder alone.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
from sqlglot import exp

from ..errors import InvalidParameterError, UnknownObjectError, UnsupportedQueryError
from ..published import latest_run_on
from ..taxonomy.store import relation_name
from .context import describe, find_relation, is_numeric_type, resolve_context, table_sql
from .evaluate import aggregate, evaluate, exact_key, exact_parts, load_summary
from .sqlgen import number, parse_select, quote, string, to_sql
from .unqualify_columns import unqualify_columns
from .validate_query import check_query


# -------------------------------------------------------------------------- generation
def _workload_qis(cur, raw_table: str, raw_cols: dict, qi):
    """[(name, 'numeric'|'categorical')] from ``qi`` or from the latest run on ``raw_table``.

    Kinds come from that run record when it has them, else from the column type (numeric types
    get range predicates, the others equality / IN).
    """
    kinds = {}
    run = latest_run_on(cur, raw_table)
    if run is not None:
        qi = qi or list(run.get("qi") or [])
        kinds.update({c.lower(): "categorical" for c in run.get("categorical_qi") or []})
        kinds.update({c.lower(): "numeric" for c in run.get("numeric_qi") or []})
    if not qi:
        raise InvalidParameterError(
            f"no quasi-identifiers for '{raw_table}': pass qi := ['col', ...] or anonymize it first "
            f"so that kanon_runs records its QIs")
    out = []
    for name in qi:
        if name.lower() not in raw_cols:
            raise UnknownObjectError(f"quasi-identifier '{name}' is not a column of '{raw_table}'")
        real, sql_type = raw_cols[name.lower()]
        kind = kinds.get(name.lower()) or ("numeric" if is_numeric_type(sql_type) else "categorical")
        out.append((real, kind))
    return out


def _literal_sql(value) -> str:
    if isinstance(value, str):
        return to_sql(string(value))
    if isinstance(value, float):
        return repr(value)
    return to_sql(number(value))


def generate_workload(con, raw_table: str, n: int = 1000, seed: int = 0, dims: int = 2,
                      qi=None) -> list:
    """``[(qid, sql)]``: ``n`` random COUNT(*) queries over ``dims`` QIs each (deterministic in seed)."""
    n = 1000 if n is None else int(n)
    dims = 2 if dims is None else int(dims)
    seed = 0 if seed is None else int(seed)
    if n < 1:
        raise InvalidParameterError(f"n={n} queries: n must be >= 1")
    cur = con.cursor()
    try:
        raw = find_relation(cur, raw_table)
        raw_cols = describe(cur, raw)
        qis = _workload_qis(cur, raw_table, raw_cols, qi)
        if not 1 <= dims <= len(qis):
            raise InvalidParameterError(f"dims={dims} must be between 1 and the number of QIs ({len(qis)})")
        domains = []
        for name, kind in qis:
            vals = [r[0] for r in cur.execute(
                f"SELECT DISTINCT {quote(name)} AS v FROM {table_sql(raw)} WHERE v IS NOT NULL "
                f"ORDER BY v").fetchall()]
            if not vals:
                raise InvalidParameterError(f"quasi-identifier '{name}' has only NULL values")
            domains.append([_literal_sql(v) for v in vals])  # SQL literals, escaped by sqlglot
    finally:
        cur.close()
    rng = np.random.default_rng(seed)
    # a reader call is named by its file (the FROM of a workload query stands for raw_tbl)
    head = (f"SELECT COUNT(*) FROM {quote(relation_name(raw.name) or 'raw')} WHERE "
            if raw.kind == "function" else f"SELECT COUNT(*) FROM {table_sql(raw)} WHERE ")
    out = []
    for qid in range(1, n + 1):
        preds = []
        for a in sorted(rng.choice(len(qis), size=dims, replace=False)):
            (name, kind), vals = qis[a], domains[a]
            col = quote(name)
            if kind == "numeric":
                i, j = sorted(rng.integers(0, len(vals), size=2))
                preds.append(f"{col} BETWEEN {vals[i]} AND {vals[j]}")
            elif len(vals) <= 2 or rng.random() < 0.5:
                preds.append(f"{col} = {vals[rng.integers(len(vals))]}")
            else:
                size = int(rng.integers(2, max(3, len(vals) // 2 + 1)))
                pick = sorted(rng.choice(len(vals), size=size, replace=False))
                preds.append(f"{col} IN ({', '.join(vals[p] for p in pick)})")
        out.append((qid, head + " AND ".join(preds)))
    return out


# -------------------------------------------------------------------------- evaluation
_KINDS = {exp.Sum: "sum", exp.Avg: "avg"}


def _read_workload(con, workload_table: str):
    cur = con.cursor()
    try:
        wl = find_relation(cur, workload_table)
        cols = describe(cur, wl)
        if "qid" not in cols or "sql" not in cols:
            raise UnknownObjectError(f"workload table '{workload_table}' needs columns qid and sql "
                                     f"(as produced by query_workload)")
        return cur.execute(f"SELECT {quote(cols['qid'][0])}, {quote(cols['sql'][0])} "
                           f"FROM {table_sql(wl)} ORDER BY 1").fetchall()
    finally:
        cur.close()


def _single_aggregate(qid, tree):
    """(kind, argument SQL or None) of a workload query's one aggregate column."""
    proj = tree.expressions[0] if len(tree.expressions) == 1 else None
    proj = proj.this if isinstance(proj, exp.Alias) else proj
    if tree.args.get("group") or not isinstance(proj, (exp.Count, exp.Sum, exp.Avg)):
        raise UnsupportedQueryError(
            f"workload query qid={qid}: workloads need exactly one COUNT/SUM/AVG column and no "
            f"GROUP BY (use query_error for other queries)")
    if isinstance(proj, exp.Count):
        if proj.this is None or isinstance(proj.this, exp.Star):
            return "count_star", None
        return "count", to_sql(unqualify_columns(proj.this, None))
    return _KINDS[type(proj)], to_sql(unqualify_columns(proj.this, None))


def workload_errors(con, workload_table: str, raw_table: str, anon_table: str) -> list:
    """``[(qid, raw_value, anon_estimate)]`` for every query of a workload table.

    Each table is read once (grouped by the columns the predicates use) and every query is
    evaluated on those arrays (see evaluate.py); the estimates equal those of the rewritten SQL.
    Workload queries must be ungrouped with a single COUNT/SUM/AVG column.
    """
    rows = _read_workload(con, workload_table)
    if not rows:
        raise InvalidParameterError(f"workload table '{workload_table}' is empty")
    trees, used = [], set()
    for qid, sql in rows:
        tree = _parse(qid, sql)  # read-only below: parse results are cached
        trees.append(tree)
        used |= {c.name.lower() for c in tree.find_all(exp.Column)}
    ctx = resolve_context(con, anon_table, raw_table, used, raw_required=True)
    preds, aggs, attrs, exact, args = [], [], set(), {}, {}
    for (qid, _), tree in zip(rows, trees):
        try:
            pred = check_query(tree, ctx)
        except UnsupportedQueryError as e:
            raise UnsupportedQueryError(f"workload query qid={qid}: {e}") from None
        kind, arg = _single_aggregate(qid, tree)
        if arg is not None:
            args.setdefault(arg, len(args))
        aggs.append((kind, args.get(arg)))
        where = tree.args.get("where")
        preds.append(pred)
        if where is not None:
            attrs |= {c.name.lower() for c in where.find_all(exp.Column) if ctx.kind(c.name)}
            for e in exact_parts(pred):
                exact.setdefault(exact_key(e), e)
    attrs = sorted(attrs)
    raw = load_summary(con, ctx, True, attrs, exact, args)
    anon = load_summary(con, ctx, False, attrs, exact, args)
    out = []
    for (qid, _), pred, (kind, k) in zip(rows, preds, aggs):
        truth = evaluate(pred, ctx, raw, True) if pred is not None else np.ones(raw.size)
        frac = evaluate(pred, ctx, anon, False) if pred is not None else np.ones(anon.size)
        out.append((qid, aggregate(kind, k, truth, raw, True), aggregate(kind, k, frac, anon, False)))
    return out


@lru_cache(maxsize=8192)
def _parse_cached(sql: str):
    return parse_select(sql)


def _parse(qid, sql):
    """Parse a workload query (cached: one workload is usually scored against many tables)."""
    try:
        return _parse_cached(sql)
    except UnsupportedQueryError as e:
        raise UnsupportedQueryError(f"workload query qid={qid}: {e}") from None
