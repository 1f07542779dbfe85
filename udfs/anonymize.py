"""Arrow UDFs behind the ``k_anonymize`` table macro (``FROM query(__kanon_sql(...))``).

``__kanon_sql(tbl, spec_json)`` is deterministic and folded at bind time, once per statement:
it resolves the relation (``relation.resolve_source``), plans the QIs, validates every argument
(errors come before anything runs, so an open transaction stays usable) and returns the
statement that publishes the run, with the checked arguments as JSON inside the run's call:
``output_sql.positional_sql`` over ``__kanon_publish('<json>')`` for a base table up to
``POSITIONAL_ROWS`` rows (``read_in_order``), else
``output_sql.output_sql`` over ``__kanon_run('<json>')``.
``__kanon_publish(json)`` runs the algorithm once and returns every row's published values in
first-read order, which the statement pairs with its own scan by position.
``__kanon_run(json)`` runs the algorithm once and returns the token of its row→class
assignment, whose pass carries the classes' published values (``row_values.ClassValues``),
and the labels the rows' label positions index (``row_values.RUN_REF_TYPE``);
``__kanon_pass(token)`` does the same for a run the Python API made before (pinned).
``__kanon_row(token, row key, row count)`` gives each row of the second, parallel scan its
class and published values (``row_values.ROW_TYPE``), chunk by chunk. ``__kanon_ec(token, row
key)`` gives the class id alone (the caller-read path's class join, ``caller_read``).
"""
from __future__ import annotations

import dataclasses
import json

import numpy as np
import pyarrow as pa

from kanon_duckdb import interrupt
from kanon_duckdb.arrowconv import from_numpy, repeat_string, strings, to_numpy
from kanon_duckdb.row_values import ROW_TYPE, RUN_REF_TYPE
from kanon_duckdb.udf_spec import UDF, UdfContext, first_value

_PUBLISHED = ("ec BIGINT[], size BIGINT[], suppressed BOOLEAN[], lo_i BIGINT[][], hi_i BIGINT[][], "
              "lo_f DOUBLE[][], hi_f DOUBLE[][], labels VARCHAR[][]")
RUN_TYPE = f"STRUCT(run_id BIGINT, token BIGINT, n_rows BIGINT, classes STRUCT({_PUBLISHED}))"
ROWS_TYPE = f"STRUCT(run_id BIGINT, key UBIGINT[], {_PUBLISHED})"


def _one_list(values: pa.Array) -> pa.Array:
    """A ListArray of one row holding ``values``."""
    return pa.ListArray.from_arrays(from_numpy(np.array([0, len(values)], dtype=np.int32), pa.int32()),
                                    values)


def _columns_list(values: pa.Array, n_classes: int, width: int) -> pa.Array:
    """One row of ``width`` lists of ``n_classes`` values each (``values`` column-major)."""
    offsets = from_numpy(np.arange(0, (width + 1) * n_classes, n_classes, dtype=np.int32)
                         if n_classes else np.zeros(width + 1, np.int32), pa.int32())
    return _one_list(pa.ListArray.from_arrays(offsets, values))


def classes_arrow(res) -> pa.StructArray:
    """The per-class published values of an AnonymizationResult (RUN_TYPE's ``classes``): one
    row, column-major: ``ec``/``size``/``suppressed`` list every class, ``lo_i[j]`` the lower
    bounds of the j-th integer QI over the classes (``hi_i``, ``lo_f``/``hi_f`` for the other
    numeric QIs, ``labels`` the categorical ones), so SQL reads the class table with one unnest
    per column instead of a struct per class. O(classes x QIs)."""
    return _published(res, None)


def rows_arrow(res, ec=None, keys=None) -> pa.StructArray:
    """ROWS_TYPE's value (one row) of a run: ``classes_arrow``'s fields with one entry per row,
    in first-read order, instead of per class (the row's class id, its size, ...), plus the run
    id and ``key``, the first read's row keys. A per-row run gives both itself; a histogram run
    (``data.counts``) takes them as ``ec`` and ``keys`` (``rows_in_order``). O(rows x QIs)."""
    if ec is None:
        ec, keys = np.asarray(res.generalized.ec), res.row_key
    per_row = _published(res, ec)
    return pa.StructArray.from_arrays(
        [from_numpy(np.array([res.run_id]), pa.int64()),
         _one_list(from_numpy(np.ascontiguousarray(keys).view(np.uint64), pa.uint64())),
         *per_row.flatten()],
        names=["run_id", "key"] + [f.name for f in per_row.type])


def rows_in_order(cur, res) -> tuple:
    """(class id per row, row key per row) of a histogram run (``data.counts``: the full-domain
    family reads distinct tuples, in no row order), in the order a scan of the relation returns
    its rows: one more read of the row keys through ``cur``, each handed its tuple's class
    (``assignment.classes_in_order``: refused when this read differs from the histogram's),
    unless the run grouped the rows it read in order itself (``AnonymizationResult.rows``)."""
    if res.rows is not None:
        keys, tuple_of = res.rows
        return np.asarray(res.generalized.ec)[tuple_of], keys
    from kanon_duckdb.assignment import Assignment, classes_in_order
    from kanon_duckdb.encoding import read_row_keys
    keys = read_row_keys(cur, res.plan)
    return classes_in_order(Assignment(res.row_key, res.generalized.ec, res.data), keys), keys


def _published(res, rows) -> pa.StructArray:
    """``classes_arrow`` (``rows`` None), or its fields taken at each class id of ``rows``:
    the per-class values (``row_values.class_columns``) as (fields x classes) blocks, each
    taken at ``rows`` in one gather per block (O(classes x QIs + rows x QIs))."""
    from kanon_duckdb.row_values import class_columns
    cols = class_columns(res)
    C = cols.size.size
    n_out = C if rows is None else len(rows)
    n_int, n_flt, n_cat = cols.lo_i.shape[0], cols.lo_f.shape[0], cols.label.shape[0]

    def at(block):
        # a (fields x classes) block -> (fields x n_out), each field contiguous
        return block if rows is None else np.take(block, rows, axis=1)

    lo_i, hi_i = [from_numpy(at(v).reshape(-1), pa.int64(), mask=at(m).reshape(-1))
                  for v, m in ((cols.lo_i, cols.null_lo_i), (cols.hi_i, cols.null_hi_i))]
    lo_f, hi_f = [from_numpy(v, pa.float64(), mask=np.isnan(v))
                  for v in (at(cols.lo_f).reshape(-1), at(cols.hi_f).reshape(-1))]
    # node ids per tree, tree after tree, as indices into one dictionary of every tree's labels
    # (DuckDB decodes it, cheaper than materializing the strings here); a NULL label (the NULL
    # leaf) is a NULL index
    labels = strings([])
    if n_cat:
        index = at(cols.label).reshape(-1)
        null = np.fromiter((v is None for v in cols.names), dtype=bool, count=len(cols.names))
        labels = pa.DictionaryArray.from_arrays(
            from_numpy(index, pa.int32(), mask=null[index] if null.any() else None),
            strings(cols.names))
    ec = np.arange(C) if rows is None else rows.astype(np.int64)
    size, sup = cols.size, cols.sup
    return pa.StructArray.from_arrays(
        [_one_list(from_numpy(ec, pa.int64())),
         _one_list(from_numpy(size if rows is None else size[rows], pa.int64())),
         _one_list(from_numpy(sup if rows is None else sup[rows], pa.bool_())),
         _columns_list(lo_i, n_out, n_int), _columns_list(hi_i, n_out, n_int),
         _columns_list(lo_f, n_out, n_flt), _columns_list(hi_f, n_out, n_flt),
         _columns_list(labels, n_out, n_cat)],
        names=["ec", "size", "suppressed", "lo_i", "hi_i", "lo_f", "hi_f", "labels"])


def run_value(run_id: int, token: int, n_rows: int, classes: pa.StructArray) -> pa.StructArray:
    """The RUN_TYPE value (one row) of ``classes`` (``classes_arrow``)."""
    return pa.StructArray.from_arrays(
        [from_numpy(np.array([run_id]), pa.int64()), from_numpy(np.array([token]), pa.int64()),
         from_numpy(np.array([n_rows]), pa.int64()), classes],
        names=["run_id", "token", "n_rows", "classes"])


def checked_options(tbl, spec: dict, qi) -> dict:
    """The run arguments as a dict (``qi`` the QI names to record) after validating what does
    not need the relation's columns: k, algo, the algorithm and privacy parameters."""
    from kanon_duckdb.algorithms import get_algorithm
    from kanon_duckdb.anonymize import check_k
    from kanon_duckdb.params import as_param_dict, coerce_params, merge_params
    k = check_k(spec.get("k"))
    algo = get_algorithm(spec.get("algo") if spec.get("algo") is not None else "mondrian")
    params = merge_params(as_param_dict(spec.get("named")), as_param_dict(spec.get("params")))
    from kanon_duckdb.privacy.hooks import split_params
    from kanon_duckdb.privacy.spec import parse_models
    algo_params, privacy_params, _local = split_params(algo, params)
    coerce_params(algo, algo_params)
    sensitive = parse_models(privacy_params, k, algo.name)[1]
    return {"tbl": getattr(tbl, "name", tbl), "conn": spec.get("conn"), "k": k, "algo": algo.name,
            "sensitive": list(sensitive),
            "qi": qi, "seed": spec.get("seed"), "numeric": spec.get("numeric"),
            "categorical": spec.get("categorical"), "params": params,
            "taxonomies": spec.get("taxonomies")}


def checked_spec(cur, tbl, spec: dict) -> tuple:
    """(plan, run arguments as a dict) after validating everything that can be checked before
    the run: k, algo, parameters, the relation (a name or a relation.Source), the QIs."""
    from kanon_duckdb.encoding import plan_qis
    args = checked_options(tbl, spec, None)  # k, algo, parameters first, as the user reads them
    plan = plan_qis(cur, tbl, spec.get("qi"), spec.get("numeric"), spec.get("categorical"))
    args["qi"] = plan.qi
    # the catalog's row count of a DuckDB table (relation.Source.ordered_rows): how the run reads
    args["rows"] = getattr(tbl, "ordered_rows", None)
    from kanon_duckdb.encoding import with_key_columns
    from kanon_duckdb.privacy.hooks import sensitive_columns
    plan = with_key_columns(plan, sensitive_columns(plan, args["sensitive"], (), []))
    from kanon_duckdb.objectives import check_weights
    check_weights(args["params"].get("weights"), plan.qi)  # its names are QIs: refused before the run
    # the run reuses it: planned once per statement (a shallow dict: it is dumped to JSON at
    # once, so no deep copy of its lists as dataclasses.asdict makes)
    args["plan"] = {f.name: getattr(plan, f.name) for f in dataclasses.fields(plan)}
    return plan, args


def reader_source(cur, connection_id, name):
    """What the reader cursor ``cur`` reads for ``name``: an object registered on the caller's
    connection (``registered.expose``, read through a TEMP view of the cursor, the same one the
    caller's own scan reads), else the name itself (``relation.resolve_source`` on use)."""
    from kanon_duckdb import registered
    from kanon_duckdb.relation import resolve_source
    from kanon_duckdb.sqlutil import quote_ident
    if registered.expose(cur, connection_id, name):
        # the exposed view itself, also when a regular table has its name (DuckDB's caller
        # resolves the name to the registered object); the Source keeps the name as given
        view = registered.lookup(connection_id, name)[0]
        source = resolve_source(cur, f"temp.main.{quote_ident(view)}", allow_temp=True)
        return dataclasses.replace(source, name=name)
    return name


def caller_source(cur, name):
    """``name`` resolved on the reader cursor (a relation.Source), or None when the cursor
    cannot see a name that can only be a table or view (``caller_read.applies``: a TEMP table,
    a table of the caller's open transaction, an object registered before kanon_duckdb was
    imported), which the caller's own query then reads."""
    from kanon_duckdb.caller_read import applies
    from kanon_duckdb.errors import UnknownObjectError
    from kanon_duckdb.relation import resolve_source
    try:
        return resolve_source(cur, name)
    except UnknownObjectError as exc:
        if "ambiguous" in str(exc) or not applies(name):
            raise
        return None



def run_on(con, ctx: UdfContext, cur, source, args: dict, in_row_order: bool = False,
           record=True):
    """Run the algorithm of ``args`` (the options ``__kanon_sql`` packed) on ``source`` through
    the reader cursor ``cur`` (the UDF's own, in autocommit mode: ``runs.own_cursor``),
    interruptible from ``con``: the AnonymizationResult (``in_row_order``, ``record``: see
    ``anonymize``)."""
    from kanon_duckdb.anonymize import anonymize
    from kanon_duckdb.runs import own_cursor
    with interrupt.watch(con, ctx.progress) as progress:
        return anonymize(own_cursor(cur), source, k=args["k"], algo=args["algo"], qi=args["qi"],
                         seed=args["seed"], numeric=args["numeric"],
                         categorical=args["categorical"], params=args["params"],
                         taxonomies=args.get("taxonomies"), progress=progress,
                         in_row_order=in_row_order, rows_estimate=args.get("rows"),
                         record=record, run_key=con)


def record_when_written(con, res):
    """``on_done`` for the output of a run made with ``record="deferred"`` (the statement of
    ``output_sql`` / ``positional_sql``): its kanon_runs row is written, through a cursor of
    its own, when the statement has taken the last output row (complete), and its reserved id
    released when the output is dropped part-way: a statement that fails while it writes the
    output (an error, a constraint, memory) leaves no run record behind."""
    from kanon_duckdb.runs import own_cursor, record_run, release_run_id
    run_id, rec = res.run_id, res.pending

    def on_done(complete: bool) -> None:
        if not complete:
            release_run_id(run_id, con)
            return
        cur = con.cursor()
        try:
            record_run(own_cursor(cur), rec, run_id=run_id, key=con)
        finally:
            cur.close()
    return on_done


def run_and_store(con, ctx: UdfContext, cur, source, args: dict, values: bool = False):
    """``run_on``, keeping the run's row assignment for the second read: (AnonymizationResult,
    assignment token). The one home of that step for the statement of ``output_sql``
    (``__kanon_run``, ``values``: the pass carries the classes' published values,
    ``row_values.ClassValues``, for ``__kanon_row``) and the caller-read path
    (``__kanon_run_rows``)."""
    from kanon_duckdb.assignment import STORE, Assignment
    res = run_on(con, ctx, cur, source, args, record="deferred")
    payload = None
    if values:
        from kanon_duckdb.row_values import ClassValues
        payload = ClassValues(res)
    return res, STORE.start(Assignment(res.row_key, res.generalized.ec, res.data), payload,
                            record_when_written(con, res))


# Above this many rows (the catalog's estimate) a statement joins the class table to a parallel
# second scan instead (``output_sql``): the per-row published values of ``positional_sql`` cost
# memory per row and QI, and its positional pairing runs on one thread.
POSITIONAL_ROWS = 250_000


def read_in_order(source) -> bool:
    """True when the statement may pair the run's rows with a second read of ``source`` by
    position (``output_sql.positional_sql``): ``source`` is a base table of a DuckDB database (a
    scan returns its rows in one order: not a view, a file, a registered object or a table of
    an attached SQLite/Postgres/... database) of at most
    ``POSITIONAL_ROWS`` rows and insertion order is preserved (the default). Any algorithm:
    the full-domain family's runs group the rows they read in order themselves, or, with
    sensitive or extra columns, are put in row order by one more read of the row keys
    (``rows_in_order``). Reads what the relation's catalog look-up found
    (``Source.ordered_rows``): no statement of its own."""
    if source.kind != "table" or source.parts is None or len(source.parts) != 3:
        return False
    return source.ordered_rows is not None and source.ordered_rows <= POSITIONAL_ROWS


def declare(ctx: UdfContext) -> list[UDF]:
    """``__kanon_sql``, ``__kanon_run``, ``__kanon_publish``, ``__kanon_pass``, ``__kanon_row``
    and ``__kanon_ec`` on ``ctx.con``."""
    con = ctx.con

    def kanon_sql(tbl, spec_json):
        from kanon_duckdb.output_sql import output_sql, positional_sql, sql_string
        from kanon_duckdb.params import parse_json_params
        spec = parse_json_params(first_value(spec_json))
        cur = con.cursor()
        try:
            name = first_value(tbl)
            source = caller_source(cur, reader_source(cur, spec.get("conn"), name))
            if source is None:  # seen by the caller's connection only: read in its query
                from kanon_duckdb.caller_read import caller_sql, checked_qi
                text = caller_sql(name, checked_options(name, spec, checked_qi(spec)))
                return repeat_string(text, len(tbl))
            plan, args = checked_spec(cur, source, spec)
            positional = read_in_order(source)
        finally:
            cur.close()
        run_arg = sql_string(json.dumps(args))
        from kanon_duckdb.relation import shadow_check
        check = shadow_check(source)  # a TEMP object of the caller's named alike: an error first
        if check is not None:
            fields = ", ".join(f"{sql_string(f)}: {sql_string(v)}" for f, v in zip(("s", "n", "msg"), check))
            run_arg = f"CASE WHEN __kanon_temp_check({{{fields}}}) THEN {run_arg} END"
        if positional:
            text = positional_sql(plan, f"__kanon_publish({run_arg})")
        else:
            text = output_sql(plan, f"__kanon_run({run_arg})")
        return repeat_string(text, len(tbl))

    def kanon_run(args_json):
        # numba and the kernels load on first use
        from kanon_duckdb.encoding import QIPlan
        args = json.loads(first_value(args_json))
        cur = con.cursor()
        try:
            from kanon_duckdb import registered
            registered.expose(cur, args.get("conn"), args["tbl"])  # a registered object: on cur
            res, token = run_and_store(con, ctx, cur, QIPlan(**args["plan"]), args, values=True)
        finally:
            cur.close()
        n_rows = res.data.n_rows
        del res
        from kanon_duckdb.assignment import STORE
        out = STORE.payload_of(token).ref(token)
        from kanon_duckdb.heap import release_freed
        release_freed(n_rows)  # before DuckDB writes the output on top of the run's freed memory
        return pa.concat_arrays([out] * len(args_json)) if len(args_json) != 1 else out

    def kanon_publish(args_json):
        from kanon_duckdb.encoding import QIPlan
        args = json.loads(first_value(args_json))
        cur = con.cursor()
        try:
            res = run_on(con, ctx, cur, QIPlan(**args["plan"]), args, in_row_order=True,
                         record="deferred")
            ec, keys = rows_in_order(cur, res) if res.data.counts is not None else (None, None)
        finally:
            cur.close()
        n_rows = res.data.n_rows
        out = rows_arrow(res, ec, keys)
        from kanon_duckdb.assignment import STORE
        STORE.expect_rows(res.run_id, n_rows, record_when_written(con, res))
        del res
        from kanon_duckdb.heap import release_freed
        release_freed(n_rows)
        return pa.concat_arrays([out] * len(args_json)) if len(args_json) != 1 else out

    def kanon_pass(pinned):
        from kanon_duckdb.assignment import STORE
        token, values = STORE.start_pinned(first_value(pinned))
        out = values.ref(token)
        return pa.concat_arrays([out] * len(pinned)) if len(pinned) != 1 else out

    def kanon_row(token, key, n_rows):
        from kanon_duckdb.assignment import STORE
        ec, values = STORE.published_of(first_value(token), to_numpy(key), first_value(n_rows))
        return values.at(ec)

    def kanon_seen(run_id):
        from kanon_duckdb.assignment import STORE
        STORE.rows_seen(first_value(run_id), len(run_id))
        return from_numpy(np.ones(len(run_id), dtype=bool))

    def kanon_ec(token, key):
        from kanon_duckdb.assignment import STORE
        return from_numpy(STORE.classes_of(first_value(token), to_numpy(key)), pa.int64())

    return [
        UDF("__kanon_ec", kanon_ec, ("BIGINT", "UBIGINT"), "BIGINT", side_effects=True),
        UDF("__kanon_sql", kanon_sql, ("VARCHAR", "VARCHAR"), "VARCHAR"),
        UDF("__kanon_row", kanon_row, ("BIGINT", "UBIGINT", "BIGINT"), ROW_TYPE, side_effects=True),
        UDF("__kanon_run", kanon_run, ("VARCHAR",), RUN_REF_TYPE, side_effects=True),
        UDF("__kanon_publish", kanon_publish, ("VARCHAR",), ROWS_TYPE, side_effects=True),
        UDF("__kanon_pass", kanon_pass, ("BIGINT",), RUN_REF_TYPE, side_effects=True),
        UDF("__kanon_seen", kanon_seen, ("BIGINT",), "BOOLEAN", side_effects=True),
    ]
