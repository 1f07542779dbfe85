"""The ``kanon_runs`` table: one row per anonymization run, written when a run succeeds."""
from __future__ import annotations

import json
import threading

# Runs of one statement (several k_anonymize calls) are recorded from parallel threads through
# separate cursors: reading max(run_id) and inserting must not interleave.
_RECORD_LOCK = threading.Lock()

RUNS_DDL = """
CREATE TABLE IF NOT EXISTS kanon_runs (
    run_id BIGINT PRIMARY KEY,
    created_at TIMESTAMP DEFAULT current_timestamp,
    source VARCHAR,
    k BIGINT,
    algo VARCHAR,
    qi VARCHAR[],
    numeric_qi VARCHAR[],
    categorical_qi VARCHAR[],
    params VARCHAR,
    seed BIGINT,
    n_rows BIGINT,
    n_classes BIGINT,
    n_suppressed BIGINT,
    elapsed_s DOUBLE,
    qi_loss DOUBLE[],
    weights DOUBLE[],
    details VARCHAR,
    qi_trees VARCHAR[]
)"""
# qi_trees[i]: the kanon_taxonomy attr of the tree qi[i] used (taxonomy.store.resolve_tree_attr),
# NULL for the implicit flat tree or no tree. The SQL metrics read the trees through it.


def ensure_runs_table(con) -> None:
    con.execute(RUNS_DDL)
    # a kanon_runs made by an earlier version lacks the later columns
    con.execute("ALTER TABLE kanon_runs ADD COLUMN IF NOT EXISTS qi_trees VARCHAR[]")


def next_run_id(con) -> int:
    return int(con.execute("SELECT coalesce(max(run_id), 0) + 1 FROM kanon_runs").fetchall()[0][0])


def record_run(con, *, source, k, algo, qi, numeric_qi, categorical_qi, params, seed,
               n_rows, n_classes, n_suppressed, elapsed_s, qi_loss, weights=None, details=None,
               qi_trees=None) -> int:
    """Insert one run row under the next run id (parameters bound, nothing spliced); returns the id.
    ``qi_trees``: QI -> tree attr (missing QIs are stored as NULL)."""
    with _RECORD_LOCK:
        ensure_runs_table(con)
        run_id = next_run_id(con)
        _insert_run(con, run_id, source, k, algo, qi, numeric_qi, categorical_qi, params, seed,
                    n_rows, n_classes, n_suppressed, elapsed_s, qi_loss, weights, details,
                    [(qi_trees or {}).get(c) for c in qi])
    return run_id


def _insert_run(con, run_id, source, k, algo, qi, numeric_qi, categorical_qi, params, seed,
                n_rows, n_classes, n_suppressed, elapsed_s, qi_loss, weights, details, qi_trees):
    con.execute(
        "INSERT INTO kanon_runs (run_id, source, k, algo, qi, numeric_qi, categorical_qi, params, "
        "seed, n_rows, n_classes, n_suppressed, elapsed_s, qi_loss, weights, details, qi_trees) "
        "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?::VARCHAR[])",
        [run_id, source, k, algo, list(qi), list(numeric_qi), list(categorical_qi),
         json.dumps(params, default=_jsonable), seed, n_rows, n_classes, n_suppressed, elapsed_s,
         [float(x) for x in qi_loss], None if weights is None else [float(w) for w in weights],
         json.dumps(details or {}, default=_jsonable), qi_trees])


def _jsonable(x):
    try:
        import numpy as np
        if isinstance(x, np.generic):
            return x.item()
        if isinstance(x, np.ndarray):
            return x.tolist()
    except ImportError:  # pragma: no cover
        pass
    return str(x)
