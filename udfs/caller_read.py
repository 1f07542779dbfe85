"""``__kanon_run_rows``: the run of ``k_anonymize`` on a relation read in the caller's query.

``__kanon_run_rows(args_json, names, types, rows)`` gets the whole relation in one call (column
names, DuckDB type texts, every row as a VARCHAR list; see ``kanon_duckdb/caller_read.py``),
rebuilds it on a reader cursor, runs the algorithm as ``__kanon_run`` does and returns its
RUN_TYPE value plus ``slots``: where each QI's published values sit in the class lists.

The metric and check macros on such relations (``kanon_duckdb/caller_macros.py``):

- ``__kanon_side(names, caller)`` (folded at bind time): ``'SELECT NULL::VARCHAR'`` when a
  relation of ``names`` is seen by the caller only (not by a reader cursor: ``reader_source``
  finds no registered object and ``caller_source`` none), else ``'SELECT NULL::INTEGER'``;
  memoized per catalog version, like the metric look-ups (udfs/metrics.py);
- ``__kanon_caller_sql(macro, overload, args_json, caller)`` (folded): the query answering the
  call from the caller's own query (``caller_macros.caller_query``);
- ``__kanon_query_error_sql(sql, raw, anon, caller)`` (folded): the query behind ``query_error``:
  ``rewrite.query_error_sql`` when the reader cursor sees both relations, else
  ``caller_macros.caller_query_error`` (the estimate computed on a cursor they are handed to);
- ``__kanon_caller_eval(sql, caller, relations)``: rebuilds the handed-over relations on a
  fresh cursor, registers them there with the caller's registered objects, runs ``sql`` and
  returns its one value (JSON text).
"""
from __future__ import annotations

import json
import re

import duckdb
import pyarrow as pa

from kanon_duckdb.errors import InvalidParameterError

from kanon_duckdb.udf_spec import UDF, UdfContext, first_value

from .anonymize import RUN_TYPE, caller_source, classes_arrow, reader_source, run_and_store, run_value
from .metrics import _Memo, _registered

CALLER_RUN_TYPE = RUN_TYPE[:-1] + ", slots BIGINT[])"
_WRAP = re.compile(r"^(?:[A-Za-z ]*Error: Python exception occurred while executing the UDF: "
                   r"[A-Za-z]*(?:Exception|Error): )+")


def _unwrapped(message: str) -> str:
    """``message`` without the prefixes DuckDB adds each time an error crosses a UDF."""
    return _WRAP.sub("", message)


def declare(ctx: UdfContext) -> list[UDF]:
    """``__kanon_run_rows`` on ``ctx.con``."""
    con = ctx.con

    def kanon_run_rows(args_json, names, types, rows):
        from kanon_duckdb.caller_read import qi_slots, rebuild
        args = json.loads(first_value(args_json))
        rows = rows.combine_chunks() if hasattr(rows, "combine_chunks") else rows
        cur = con.cursor()
        try:
            source = rebuild(cur, args["tbl"], first_value(names), first_value(types),
                             rows.flatten())
            res, token = run_and_store(con, ctx, cur, source, args)
        finally:
            cur.close()
        run = run_value(res.run_id, token, res.data.n_rows, classes_arrow(res))
        slots = pa.array([qi_slots(res.plan)], pa.list_(pa.int64()))
        out = pa.StructArray.from_arrays([*run.flatten(), slots],
                                         names=[f.name for f in run.type] + ["slots"])
        return pa.concat_arrays([out] * len(args_json)) if len(args_json) != 1 else out

    memo = _Memo(con)
    evaluating = set()  # registry keys of the cursors __kanon_caller_eval runs on: no caller behind


    def seen_by_caller_only(conn_id, name) -> bool:
        def compute():
            cur = con.cursor()
            try:
                if not isinstance(reader_source(cur, conn_id, name), str):
                    return False  # an object registered on the caller, handed to the cursor
                return caller_source(cur, name) is None
            except Exception:  # noqa: BLE001 - the cursor side reports it, as before
                return False
            finally:
                cur.close()
        return memo.get(("caller", conn_id, name, _registered(conn_id, name)), compute)

    def caller_side(conn_id, names) -> list:
        if conn_id in evaluating:  # what that cursor cannot see, nothing can hand it over
            return []
        seen = []
        for n in names or []:
            if isinstance(n, str) and n not in seen and seen_by_caller_only(conn_id, n):
                seen.append(n)
        return seen

    def side(names, caller):  # native: one call per row, cheaper than Arrow for one value
        return "SELECT NULL::VARCHAR" if caller_side(caller, names) else "SELECT NULL::INTEGER"

    def caller_sql(macro, overload, args_json, caller):
        from kanon_duckdb.caller_macros import ROUTED, caller_query, parse_args, relation_names
        r, i = ROUTED[first_value(macro)], first_value(overload)
        args, conn_id = parse_args(first_value(args_json)), first_value(caller)
        sql = caller_query(r, i, args, caller_side(conn_id, relation_names(r, args)), conn_id)
        return pa.array([sql] * len(macro), pa.string())

    def query_error_route(sql, raw, anon, caller):  # native, folded at bind time
        from kanon_duckdb.registered import CallerConnection
        seen = caller_side(caller, [raw, anon])
        if not seen:
            from kanon_duckdb.rewrite import query_error_sql
            return query_error_sql(CallerConnection(con, caller), sql, raw, anon)
        from kanon_duckdb.caller_macros import caller_table, caller_query_error
        return caller_query_error(sql, raw, anon, seen, caller_table(raw) if raw in seen
                                  else raw_from(caller, raw), caller)

    def raw_from(conn_id, name) -> str:
        """SQL after FROM reading ``name`` (seen by the reader cursor) in the caller's query."""
        from kanon_duckdb.relation import resolve_source
        cur = con.cursor()
        try:
            if not isinstance(reader_source(cur, conn_id, name), str):  # registered on the caller
                return "query_table(" + "'" + name.replace("'", "''") + "')"
            return resolve_source(cur, name).sql
        finally:
            cur.close()

    def caller_eval(sql, caller, relations):
        from kanon_duckdb.caller_read import typed
        from kanon_duckdb.registered import connection_id, lookup_all
        rels = relations.combine_chunks() if hasattr(relations, "combine_chunks") else relations
        rels = rels[0]
        cur = con.cursor()
        try:
            for view_name, obj in lookup_all(first_value(caller)):
                cur.register(view_name, obj)  # recorded for this cursor: its macros see them
            for rel in rels.values:
                rows = rel["rows"].values if rel["rows"].is_valid else None
                table = typed(cur, rel["names"].as_py(), rel["types"].as_py(), rows).to_arrow_table()
                cur.register(rel["name"].as_py(), table)
            key = connection_id(cur)
            evaluating.add(key)
            try:
                value = cur.sql(first_value(sql)).fetchall()[0][0]
            finally:
                evaluating.discard(key)
        except duckdb.Error as exc:  # the cursor's error, without DuckDB's UDF wrapping
            raise InvalidParameterError(_unwrapped(str(exc))) from None
        finally:
            cur.close()
        return pa.array([value] * len(sql), pa.string())

    return [UDF("__kanon_run_rows", kanon_run_rows,
                ("VARCHAR", "VARCHAR[]", "VARCHAR[]", "VARCHAR[][]"), CALLER_RUN_TYPE,
                side_effects=True),
            UDF("__kanon_side", side, ("VARCHAR[]", "UBIGINT"), "VARCHAR", arrow=False),
            UDF("__kanon_query_error_sql", query_error_route, ("VARCHAR",) * 3 + ("UBIGINT",),
                "VARCHAR", arrow=False, null_handling="default"),
            UDF("__kanon_caller_sql", caller_sql, ("VARCHAR", "INTEGER", "VARCHAR", "UBIGINT"),
                "VARCHAR"),
            UDF("__kanon_caller_eval", caller_eval,
                ("VARCHAR", "UBIGINT", "STRUCT(name VARCHAR, names VARCHAR[], types VARCHAR[], "
                                       "rows VARCHAR[][])[]"), "VARCHAR", side_effects=True)]
