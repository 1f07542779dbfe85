"""``kanon_mapping(anon_tbl)``: how the published values of an anonymized table relate to raw ones.

One row per (QI, raw value) for a full-domain run (kanon_runs.details has the chosen ``node``:
optimal, kgen, random, datafly), the recoding ARX users export; one row per (class, QI) for a
local-recoding run (the class's box). Columns (MAPPING_FIELDS):

- ``qi``     the quasi-identifier
- ``raw``    full-domain: the raw value (VARCHAR); local recoding: NULL
- ``ec``     local recoding: the class id; full-domain: NULL
- ``label``  categorical QI: the published label (full-domain: the raw value's ancestor at the
             chosen level of the tree the run used, kanon_runs.qi_trees; every leaf of the tree is
             listed, also leaves absent from the data); numeric QI: NULL
- ``lo``/``hi`` numeric QI: the published range (full-domain: the range of the output holding the
             raw value; the raw values are the distinct values of the run's source, which must
             still be readable, or of ``source :=``); categorical: NULL

NULL raw values are left out (the NULL policy publishes NULL or the root for them). Suppressed
classes are listed with their published (root / NULL) values. Reads through the given cursor:
O(#distinct raw values + #classes).
"""
from __future__ import annotations

import bisect
import json

from .errors import InvalidParameterError, UnknownObjectError
from .sqlutil import quote_ident, resolve_table, table_columns
from .taxonomy.store import read_index, run_tree_attrs

MAPPING_FIELDS = (("qi", "VARCHAR"), ("raw", "VARCHAR"), ("ec", "BIGINT"), ("label", "VARCHAR"),
                  ("lo", "DOUBLE"), ("hi", "DOUBLE"))


def run_source(cur, tbl: str) -> str | None:
    """The recorded source of the one run of the anonymized table ``tbl`` when that run is
    full-domain (its mapping reads the raw values there); None when ``tbl`` is not such a table
    or its run is local recoding, whose mapping is the output's own class boxes (so a dropped or
    detached source does not stop it). kanon_mapping's default ``source``, bound as a relation."""
    try:
        run = _run_of(cur, tbl)
    except (InvalidParameterError, UnknownObjectError):
        return None
    return run[-1] if "node" in run[4] else None


def _run_of(cur, tbl):
    # allow_temp: a reader cursor's only TEMP objects are the caller's registered ones
    _, qualified = resolve_table(cur, tbl, include_views=True, allow_temp=True)
    cols = [c for c, _ in table_columns(cur, qualified)]
    if "kanon_run" not in cols or "ec" not in cols:
        raise InvalidParameterError(
            f"table '{tbl}' is not an output of k_anonymize (no kanon_run / ec column); "
            f"kanon_mapping reads the run that made it")
    runs = [r[0] for r in cur.execute(
        f"SELECT DISTINCT kanon_run FROM {qualified} WHERE kanon_run IS NOT NULL LIMIT 2").fetchall()]
    if len(runs) != 1:
        raise InvalidParameterError(
            f"table '{tbl}' holds {'no' if not runs else 'several'} runs (kanon_run); "
            f"kanon_mapping needs the rows of exactly one run")
    rec = cur.execute("SELECT numeric_qi, categorical_qi, details, source FROM kanon_runs "
                      "WHERE run_id = ?", [runs[0]]).fetchall()
    if not rec:
        raise UnknownObjectError(f"run {runs[0]} of table '{tbl}' is not recorded in kanon_runs")
    num, cat, details, source = rec[0]
    return qualified, int(runs[0]), list(num or []), list(cat or []), json.loads(details or "{}"), source


def mapping_rows(cur, tbl: str, source: str | None = None) -> list:
    """The rows of kanon_mapping(tbl) as dicts keyed by MAPPING_FIELDS (see the module docstring);
    ``source``: the relation holding the run's raw rows, else the run's recorded source."""
    qualified, run_id, num, cat, details, recorded = _run_of(cur, tbl)
    source = recorded if source is None else source
    if "node" in details:
        return _full_domain(cur, qualified, run_id, num, cat, details["node"], source)
    return _classes(cur, qualified, num, cat)


def _row(qi, raw=None, ec=None, label=None, lo=None, hi=None):
    return {"qi": qi, "raw": raw, "ec": ec, "label": label, "lo": lo, "hi": hi}


def _classes(cur, qualified, num, cat) -> list:
    sel = [f"any_value({quote_ident(c + '_min')}), any_value({quote_ident(c + '_max')})" for c in num]
    sel += [f"any_value({quote_ident(c)})" for c in cat]
    rows = cur.execute(f"SELECT ec{''.join(', ' + s for s in sel)} FROM {qualified} "
                       f"GROUP BY ec ORDER BY ec").fetchall()
    out = []
    for r in rows:
        ec, vals = int(r[0]), r[1:]
        for j, c in enumerate(num):
            lo, hi = vals[2 * j], vals[2 * j + 1]
            out.append(_row(c, ec=ec, lo=None if lo is None else float(lo),
                            hi=None if hi is None else float(hi)))
        for j, c in enumerate(cat):
            out.append(_row(c, ec=ec, label=vals[2 * len(num) + j]))
    return out


def _source_values(cur, source, column, run_id):
    from .relation import resolve_source  # tables, views, files and reader calls alike
    try:
        # allow_temp: a reader cursor's only TEMP objects are the caller's registered ones
        src = resolve_source(cur, source, allow_temp=True).sql
    except (UnknownObjectError, TypeError) as exc:
        raise UnknownObjectError(
            f"kanon_mapping: run {run_id}'s source '{source}' is not readable here "
            f"({str(exc).split('. ')[0]}), and numeric QIs need its raw values: pass the relation "
            f"holding them, kanon_mapping(anon, source := '{source}') (needed when the anonymized "
            f"table is itself a TEMP table: its run, hence its source, is known only after "
            f"the statement is bound)") from None
    q = quote_ident(column)
    return cur.execute(f"SELECT DISTINCT {q} FROM {src} WHERE {q} IS NOT NULL ORDER BY 1").fetchall()


def _full_domain(cur, qualified, run_id, num, cat, node, source) -> list:
    out = []
    trees = run_tree_attrs(cur, run_id) or {}
    for c in num:
        ranges = cur.execute(
            f"SELECT DISTINCT {quote_ident(c + '_min')}, {quote_ident(c + '_max')} FROM {qualified} "
            f"WHERE {quote_ident(c + '_min')} IS NOT NULL AND {quote_ident(c + '_max')} IS NOT NULL "
            f"ORDER BY 1").fetchall()
        los = [float(r[0]) for r in ranges]
        for (v,) in _source_values(cur, source, c, run_id):
            i = bisect.bisect_right(los, float(v)) - 1
            hit = i >= 0 and float(v) <= float(ranges[i][1])
            out.append(_row(c, raw=str(v), lo=float(ranges[i][0]) if hit else None,
                            hi=float(ranges[i][1]) if hit else None))
    for c in cat:
        level = int(node.get(c, 0))
        attr = trees.get(c)
        tree = read_index(cur, attr) if attr is not None else None
        if tree is None:  # implicit flat tree: level 0 keeps the value, level 1 is '*'
            for (v,) in _source_values(cur, source, c, run_id):
                out.append(_row(c, raw=str(v), label=str(v) if level == 0 else "*"))
            continue
        for leaf in range(tree.leaf_count):
            lab = tree.labels[tree.leaf_node[leaf]]
            top = tree.anc.shape[1] - 1
            out.append(_row(c, raw=lab, label=tree.labels[tree.anc[leaf, min(level, top)]]))
    return out
