"""The ``kanon_runs`` table: one row per anonymization run, written when a run succeeds (a
``k_anonymize`` statement's run: when the statement has taken its whole output, under an id
reserved before its first row, ``reserve_run_id``; so a statement failing while it writes its
output leaves no row).

Its columns are the declared fields of :class:`RunRecord` (``RUNS_COLUMNS`` gives their SQL
types); the SQL metrics read declared columns only (``numeric_qi``/``categorical_qi`` to find the
published QIs, ``num_lo``/``num_hi`` for the global range of numeric NCP, exactly
``int_lo``/``int_hi`` for an integer QI, ``k`` for C_avg).
``params`` and ``details`` are JSON text for what an algorithm reports beyond them.
"""
from __future__ import annotations

import json
import threading
import weakref

import duckdb
from dataclasses import dataclass, field, fields

from .errors import ConcurrentChangeError
from .readonly import read_only_error

# Runs of one statement (several k_anonymize calls) are recorded from parallel threads through
# separate cursors: reading max(run_id) and inserting must not interleave.
_RECORD_LOCK = threading.Lock()


@dataclass(frozen=True)
class RunRecord:
    """One row of kanon_runs (run_id and created_at are assigned when it is recorded).

    qi_loss is the mean NCP of each QI (``qi`` order) as ``kanon_duckdb.ncp`` defines it;
    num_lo/num_hi the finite min/max of each numeric QI's values (``numeric_qi`` order), the
    global range the metrics divide by (doubles: rounded beyond 2^53); int_lo/int_hi the same
    extremes exactly for an integer QI (BIGINT; NULL for a non-integer QI), which the metrics
    use instead (``kanon_duckdb.ncp``); qi_trees[i] the kanon_taxonomy attr of the tree qi[i]
    used (taxonomy.store.resolve_tree_attr), None for the implicit flat tree or no tree (the
    SQL metrics read the trees through it); qi_tree_hashes[i] that tree's fingerprint
    (taxonomy.store.tree_fingerprints), None where qi_trees[i] is: every reader of the run's
    trees refuses a tree whose rows changed since (taxonomy.store.recorded_tree_attrs). qi_weights[i] is the ``weights :=`` weight of qi[i]
    (1 for a QI not named), NULL when none were given: gcp/total_il/gen_total_il of the run's
    table weight each QI by it (``kanon_duckdb.objectives``). ``weights`` is info2means' learned
    weights (details.weight_names order), read by info_loss.
    """
    source: str
    k: int
    algo: str
    qi: list
    numeric_qi: list
    categorical_qi: list
    params: dict
    seed: int
    n_rows: int
    n_classes: int
    n_suppressed: int
    elapsed_s: float
    qi_loss: list
    weights: list | None = None
    details: dict = field(default_factory=dict)
    num_lo: list = field(default_factory=list)
    num_hi: list = field(default_factory=list)
    qi_trees: list = field(default_factory=list)
    qi_weights: list | None = None
    int_lo: list = field(default_factory=list)
    int_hi: list = field(default_factory=list)
    qi_tree_hashes: list = field(default_factory=list)


_SQL_TYPES = {"source": "VARCHAR", "k": "BIGINT", "algo": "VARCHAR", "qi": "VARCHAR[]",
              "numeric_qi": "VARCHAR[]", "categorical_qi": "VARCHAR[]", "params": "VARCHAR",
              "seed": "BIGINT", "n_rows": "BIGINT", "n_classes": "BIGINT",
              "n_suppressed": "BIGINT", "elapsed_s": "DOUBLE", "qi_loss": "DOUBLE[]",
              "weights": "DOUBLE[]", "details": "VARCHAR", "num_lo": "DOUBLE[]",
              "num_hi": "DOUBLE[]", "qi_trees": "VARCHAR[]", "qi_weights": "DOUBLE[]",
              "int_lo": "BIGINT[]", "int_hi": "BIGINT[]",
              "qi_tree_hashes": "VARCHAR[]"}
RUNS_COLUMNS = [(f.name, _SQL_TYPES[f.name]) for f in fields(RunRecord)]
_ADDED_LATER = ("qi_trees", "num_lo", "num_hi", "qi_weights", "int_lo", "int_hi",
                "qi_tree_hashes")  # absent from kanon_runs tables made by earlier versions

RUNS_DDL = ("CREATE TABLE IF NOT EXISTS kanon_runs (\n    run_id BIGINT PRIMARY KEY,\n"
            "    created_at TIMESTAMP DEFAULT current_timestamp,\n"
            + ",\n".join(f"    {name} {typ}" for name, typ in RUNS_COLUMNS) + "\n)")


_N_COLUMNS = len(RUNS_COLUMNS) + 2  # + run_id, created_at


def ensure_runs_table(con) -> None:
    """Create kanon_runs, or add the columns a table from an earlier version lacks. A complete
    table costs one bind of ``SELECT * FROM kanon_runs`` (every run records itself through
    here): no statement runs, so a missing table fails no open transaction."""
    try:
        if len(con.sql("SELECT * FROM kanon_runs LIMIT 0").columns) == _N_COLUMNS:
            return
    except duckdb.Error:  # no kanon_runs (or not a table): created below
        pass
    con.execute(RUNS_DDL)
    have = {r[0] for r in con.execute(
        "SELECT column_name FROM duckdb_columns() WHERE table_name = 'kanon_runs' "
        "AND schema_name = current_schema() AND database_name = current_database()").fetchall()}
    for name in _ADDED_LATER:
        if name not in have:
            con.execute(f"ALTER TABLE kanon_runs ADD COLUMN {name} {_SQL_TYPES[name]}")


# Cursors the UDFs opened for their run (udfs/anonymize.py run_on): used by kanon-duckdb only,
# never inside an explicit transaction (autocommit), so a failed statement there aborts nothing.
_OWN_CURSORS: weakref.WeakSet = weakref.WeakSet()


def own_cursor(cur):
    """Mark ``cur``, a cursor the UDFs opened and use in autocommit mode only (no BEGIN), as
    theirs: :func:`record_run` inserts there first and checks the table (``ensure_runs_table``)
    only when the insert cannot bind it, one statement less per run. Returns ``cur``."""
    _OWN_CURSORS.add(cur)
    return cur


_INSERT = (f"INSERT INTO kanon_runs (run_id, {', '.join(name for name, _ in RUNS_COLUMNS)}) "
           f"SELECT coalesce(?, greatest(coalesce(max(run_id), 0), ?) + 1), "
           f"{', '.join('?' for _ in RUNS_COLUMNS)} "
           f"FROM kanon_runs HAVING NOT coalesce(bool_or(run_id = ?), false) "
           f"RETURNING run_id")  # the next id (or the reserved one, if still free) and the row

# Ids handed to runs whose row is written once their output is (``reserve_run_id``), per
# database (``key``: the registered connection whose statements run them, held weakly): no other run of that
# database in this process takes them meanwhile. A reservation ends with ``record_run(...,
# run_id=)`` or ``release_run_id``; one abandoned part-way (an error while the output was
# written) ends when its pass is dropped idle (assignment.IDLE_S), so the next runs of that
# database skip its id meanwhile.
_RESERVED: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _reserved(key) -> set:
    """The ids reserved under ``key`` (a live set; an empty one for no key)."""
    if key is None:
        return set()
    taken = _RESERVED.get(key)
    if taken is None:
        taken = _RESERVED[key] = set()
    return taken


def reserve_run_id(con, key) -> int:
    """The id the next run recorded through ``con`` gets, reserved under ``key`` (the
    database's registered connection) for a run whose kanon_runs row is written later
    (``record_run(con, rec, run_id=..., key=key)``, when the statement has taken its whole
    output; ``release_run_id`` when it never does): one aggregate over kanon_runs."""
    with _RECORD_LOCK:
        try:
            top = con.execute("SELECT max(run_id) FROM kanon_runs").fetchall()[0][0] or 0
        except duckdb.CatalogException:
            top = 0
        taken = _reserved(key)
        run_id = max([top, *taken]) + 1
        taken.add(run_id)
    return run_id


def release_run_id(run_id: int, key) -> None:
    """End the reservation of ``run_id`` without a row (its output was never complete)."""
    with _RECORD_LOCK:
        _reserved(key).discard(run_id)


def record_run(con, rec: RunRecord, run_id: int | None = None, key=None) -> int:
    """Insert ``rec`` under the next run id (past the ids reserved under ``key``), or under
    ``run_id`` reserved by ``reserve_run_id`` (parameters bound, nothing spliced); returns the
    id. A reserved id another process's run took meanwhile: ConcurrentChangeError.
    The table is made complete first (``ensure_runs_table``: a bind, no statement, so an open
    transaction of the caller's stays usable); on a cursor of :func:`own_cursor` only when the
    insert fails to bind it (no table, or one of an earlier version). On a database opened
    read-only: ReadOnlyDatabaseError naming the fix (``readonly.read_only_error``)."""
    try:
        return _insert_run(con, rec, run_id, key)
    except duckdb.Error as e:
        err = read_only_error(con, "k_anonymize records each run", "kanon_runs")
        if err is None:
            raise
        raise err from e


def _insert_run(con, rec: RunRecord, run_id: int | None, key) -> int:
    with _RECORD_LOCK:
        taken = _reserved(key)
        taken.discard(run_id)
        values = [run_id, max(taken, default=0)]
        values += [_to_sql(name, getattr(rec, name)) for name, _ in RUNS_COLUMNS] + [run_id]
        rows = None
        if con in _OWN_CURSORS:
            try:
                rows = con.execute(_INSERT, values).fetchall()
            except (duckdb.CatalogException, duckdb.BinderException):
                pass  # made complete below, then inserted again
        if rows is None:
            ensure_runs_table(con)
            rows = con.execute(_INSERT, values).fetchall()
    if not rows:
        raise ConcurrentChangeError(
            f"k_anonymize: run id {run_id} was taken by another run meanwhile (a run recorded "
            f"through another connection of this database); run it again")
    return int(rows[0][0])


def _to_sql(name, value):
    if name in ("params", "details"):
        return json.dumps(value or {}, default=_jsonable)
    if name in ("qi", "numeric_qi", "categorical_qi"):
        return list(value)
    if name in ("int_lo", "int_hi"):
        return [None if v is None else int(v) for v in value] if value else None
    if name in ("qi_trees", "qi_tree_hashes"):
        return [None if v is None else str(v) for v in value] if value else None
    if name in ("qi_loss", "num_lo", "num_hi", "weights", "qi_weights"):
        return None if value is None else [float(x) for x in value]
    return value


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
