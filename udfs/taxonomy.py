"""SQL-callable taxonomy builders and checks (native scalar UDFs with side effects).

Each builder reads the named table through ``con.cursor()`` (so TEMP tables and uncommitted rows
are invisible), replaces the rows of ``attr`` in ``kanon_taxonomy`` and returns the number of
edges inserted (BIGINT). ``attr`` defaults to the column's name (the tree of every column of that
name); ``attr := 'patients.sex'`` makes the tree of one table's column, ``attr := 'sex_v2'`` a
named tree a call picks with ``taxonomies := {'sex': 'sex_v2'}`` (taxonomy.store.resolve_tree_attr):

    SELECT kanon_load_arx('workclass', 'hierarchy_workclass.csv');
    SELECT kanon_build_intervals('t', 'age');                 -- default nested widths
    SELECT kanon_build_intervals('t', 'age', [5, 10, 20]);
    SELECT kanon_build_quantiles('t', 'income');              -- 16 equal-frequency bins
    SELECT kanon_build_quantiles('t', 'income', 8);
    SELECT kanon_build_masking('t', 'zip');
    SELECT kanon_build_dates('t', 'birth_date');
    SELECT kanon_build_flat('t', 'city');
    SELECT kanon_build_flat('patients', 'sex', attr := 'patients.sex');
    SELECT kanon_check_taxonomy('t', 'city');                 -- 'ok' or an error naming values

``__kanon_tree_attr(tbl, col)`` gives SQL macros the tree of a column
(taxonomy.store.column_tree_attr: the one resolution order). Overloads and named arguments are TEMP macros over internal UDFs (Python UDFs cannot be
overloaded), in ``sql/taxonomy.sql``.

Builders are all-or-nothing per statement: the macros pass the statement's identity
(``current_connection_id()``, ``current_query_id()``), and when a builder of a statement fails, the
trees written by the earlier builders of the same statement are put back as they were
(:class:`StatementUndo`). A failure elsewhere in the statement does not undo them.
"""
from __future__ import annotations

import threading
from collections import OrderedDict

import pyarrow as pa

from kanon_duckdb import registered
from kanon_duckdb.errors import InvalidParameterError
from kanon_duckdb.taxonomy import store
from kanon_duckdb.udf_spec import UDF, UdfContext

_V, _B, _DOUBLE_LIST = "VARCHAR", "BIGINT", "DOUBLE[]"


def _need(**kw):
    for k, v in kw.items():
        if v is None:
            raise InvalidParameterError(f"{k} must not be NULL")


class StatementUndo:
    """Builders all-or-nothing per SQL statement (key ``stmt``): before the first builder of a
    statement writes, ``kanon_taxonomy`` is snapshot; if a later builder of that statement fails
    after an earlier one wrote, the snapshot is restored in one transaction. The snapshots of the
    ``keep`` latest statements are held (the table is small: edges of the trees)."""

    def __init__(self, keep: int = 16):
        self.keep = keep
        self._snap: OrderedDict = OrderedDict()  # stmt -> [snapshot table, wrote?]
        self._lock = threading.Lock()

    def run(self, cur, stmt, fn):
        if stmt is None:
            return fn()
        with self._lock:
            entry = self._snap.get(stmt)
        if entry is None:
            snap = cur.execute(f"SELECT attr, child, parent FROM {store.TABLE} "
                               f"ORDER BY rowid").fetchall()
            entry = [snap, False]
            with self._lock:
                self._snap[stmt] = entry
                while len(self._snap) > self.keep:
                    self._snap.popitem(last=False)
        try:
            out = fn()
        except BaseException:
            with self._lock:
                self._snap.pop(stmt, None)
            if entry[1]:
                self._restore(cur, entry[0])
            raise
        entry[1] = True
        return out

    @staticmethod
    def _restore(cur, rows) -> None:
        data = pa.table({k: pa.array([r[i] for r in rows], pa.string())
                         for i, k in enumerate(("attr", "child", "parent"))})
        cur.register("__kanon_taxonomy_snapshot", data)
        try:
            with store.transaction(cur):
                cur.execute(f"DELETE FROM {store.TABLE}")
                cur.execute(f"INSERT INTO {store.TABLE} (attr, child, parent) "
                            f"SELECT attr, child, parent FROM __kanon_taxonomy_snapshot")
        finally:
            cur.unregister("__kanon_taxonomy_snapshot")


def declare(ctx: UdfContext) -> list[UDF]:
    """The builders and the check above on ``ctx.con`` (native, side effects)."""
    con = ctx.con
    undo = StatementUndo()
    conn_id = registered.connection_id(con)

    def run(fn, *args, **kwargs):
        cur = con.cursor()
        try:
            store.ensure_taxonomy_table(cur)
            return fn(cur, *args, **kwargs)
        finally:
            cur.close()

    def build(stmt, fn, *args, **kwargs):
        cur = con.cursor()
        try:  # a read-only database: refused before the builder reads anything
            store.require_writable_store(cur)
            store.ensure_taxonomy_table(cur)
            return undo.run(cur, stmt, lambda: fn(cur, *args, **kwargs))
        finally:
            cur.close()

    def load_arx(attr, path, stmt):
        _need(attr=attr, path=path)
        return build(stmt, store.load_arx_taxonomy, attr, path)

    def build_intervals(tbl, col, widths, attr, stmt):
        _need(tbl=tbl, col=col)
        return build(stmt, store.build_interval_taxonomy, tbl, col, attr=attr,
                     widths=widths or None)

    def build_quantiles(tbl, col, bins, attr, stmt):
        _need(tbl=tbl, col=col)
        return build(stmt, store.build_interval_taxonomy, tbl, col, attr=attr,
                     quantiles=True if bins is None else bins)

    def build_masking(tbl, col, attr, stmt):
        _need(tbl=tbl, col=col)
        return build(stmt, store.build_masking_taxonomy, tbl, col, attr=attr)

    def build_dates(tbl, col, attr, stmt):
        _need(tbl=tbl, col=col)
        return build(stmt, store.build_date_taxonomy, tbl, col, attr=attr)

    def build_flat(tbl, col, attr, stmt):
        _need(tbl=tbl, col=col)
        return build(stmt, store.build_flat_taxonomy, tbl, col, attr=attr)

    def tree_attr(tbl, col, caller):
        _need(tbl=tbl, col=col)
        cur = con.cursor()
        try:
            # an object registered on the caller (the connection or a cursor of it, named by the
            # __kanon_tree_attr macro) is handed to the cursor (as in udfs/metrics.py)
            registered.expose(cur, conn_id if caller is None else caller, tbl)
            return store.column_tree_attr(cur, tbl, col)
        finally:
            cur.close()

    def check(tbl, col, attr):
        _need(tbl=tbl, col=col)
        run(store.check_column, tbl, col, attr=attr)
        return "ok"

    specs = [
        ("__kanon_load_arx", load_arx, [_V, _V, _V], _B),
        ("__kanon_build_intervals", build_intervals, [_V, _V, _DOUBLE_LIST, _V, _V], _B),
        ("__kanon_build_quantiles", build_quantiles, [_V, _V, _B, _V, _V], _B),
        ("__kanon_build_masking", build_masking, [_V, _V, _V, _V], _B),
        ("__kanon_build_dates", build_dates, [_V, _V, _V, _V], _B),
        ("__kanon_build_flat", build_flat, [_V, _V, _V, _V], _B),
        ("__kanon_check_taxonomy", check, [_V, _V, _V], _V),
    ]
    return [UDF(name, fn, tuple(params), ret, arrow=False, side_effects=True)
            for name, fn, params, ret in specs] + [
        # deterministic: folded at bind time inside the macros that need a column's tree
        UDF("__kanon_tree_attr_in", tree_attr, (_V, _V, _B), _V, arrow=False)]
