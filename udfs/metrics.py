"""Column look-ups for the SQL metrics (sql/metrics_*.sql, sql/privacy.sql).

The metrics themselves are SQL macros. A macro cannot name columns that depend on data, and which
columns of an anonymized table are quasi-identifiers is data: it is recorded in ``kanon_runs`` for
the run in the table's ``kanon_run`` column. These two deterministic UDFs, folded at bind time
(constant arguments), give the macros the column names to use inside ``COLUMNS(lambda ...)``:

- ``__kanon_meta(tbl)`` (macro over ``__kanon_meta_in(tbl, caller)``) -> STRUCT(run_id, k, num_qi, cat_qi, lo_cols, hi_cols, cat_trees, num_lo,
  num_hi, num_w, cat_w, int_lo, int_hi) (``published.qi_layout``): the run of an anonymized table and its QIs as they appear in
  the table, in table order: numeric QI ``c`` published as ``c_min``/``c_max``
  (``lo_cols[i]``/``hi_cols[i]`` belong to ``num_qi[i]``, ``num_lo[i]``/``num_hi[i]`` is the
  data's global range recorded by the run, ``int_lo[i]``/``int_hi[i]`` the same exactly for an
  integer QI, else NULL), categorical QI ``c`` as ``c``; ``cat_trees[i]`` is
  the kanon_taxonomy attr of the tree ``cat_qi[i]`` used (kanon_runs.qi_trees; for a run recorded
  before that column, the tree ``taxonomy.store.resolve_tree_attr`` picks for the run's source),
  NULL for the implicit flat tree; ``num_w``/``cat_w`` the QIs' weights (``weights :=``, mean 1,
  all 1 without). Errors name the problem: not a k_anonymize output, a table mixing
  several runs, a QI column missing.
- ``__kanon_qi_cols(tbl, qi)`` (over ``__kanon_qi_cols_in``) -> STRUCT(cols, sup_col): the columns to group by for the privacy
  checks, for a raw or an anonymized table: ``c`` when the table has it, else ``c_min`` and
  ``c_max``; ``sup_col`` is ``'suppressed'`` for an anonymized table (suppressed rows are left out
  of the classes) and ``'__kanon_nosup'`` (a constant FALSE column the macros add) otherwise.
- ``__kanon_column(tbl, name)`` (over ``__kanon_column_in``) -> VARCHAR: the stored name of one column (a sensitive attribute,
  a class label), or an error listing the table's columns.
- ``__kanon_output_cols(tbl)`` (over ``__kanon_output_cols_in``) -> VARCHAR[]: every column of
  an anonymized table (``published.output_columns``), or the error "not an output of
  k_anonymize" for a table without ec / kanon_run / suppressed (read by ``__kanon_output``).

Like every kanon-duckdb UDF they read through a cursor, which does not see TEMP tables or
uncommitted changes of the caller's transaction (the error names the workaround: these macros
need the table's run, which is data, at bind time, so they cannot read it in the caller's query
as k_anonymize does; relation.py). An object registered with ``con.register`` on the caller's
connection or on a cursor of it is handed to the reader cursor by
``udfs.anonymize.reader_source`` (kanon_duckdb/registered.py), as ``k_anonymize`` does. The
caller is named by ``getvariable('__kanon_conn_id')``, which registering sets on that
connection or cursor: ``current_connection_id()`` cannot appear in the macros' COLUMNS lambdas,
``getvariable`` can. NULL (nothing registered there) means the connection the functions were
declared on.

A metric macro names these UDFs many times (each COLUMNS lambda), and DuckDB folds each occurrence
separately, so answers are memoized per (arguments, catalog version): any statement that can
change what a name binds to (CREATE/DROP/INSERT ...) starts afresh, and so does registering
another object under a name (the key holds the registered object's identity). Without the connection's
``_catalog_version`` (a DuckDB 2.0 Python API) nothing is memoized.
"""
from __future__ import annotations

import pyarrow as pa

from kanon_duckdb.errors import InvalidParameterError, UnknownObjectError
from kanon_duckdb.published import output_columns, qi_layout
from kanon_duckdb.sqlutil import quote_ident

from kanon_duckdb.udf_spec import UDF, UdfContext, first_value

META_TYPE = ("STRUCT(run_id BIGINT, k BIGINT, num_qi VARCHAR[], cat_qi VARCHAR[], "
             "lo_cols VARCHAR[], hi_cols VARCHAR[], cat_trees VARCHAR[], num_lo DOUBLE[], "
             "num_hi DOUBLE[], num_w DOUBLE[], cat_w DOUBLE[], int_lo BIGINT[], int_hi BIGINT[])")
QI_COLS_TYPE = "STRUCT(cols VARCHAR[], sup_col VARCHAR)"
def _columns(cur, tbl):
    """(FROM-clause SQL, column names) of a table, view or file (kanon_duckdb.relation)."""
    from kanon_duckdb.relation import resolve_source
    source = resolve_source(cur, tbl)
    return source.sql, [c for c, _ in source.columns]


def anonymized_meta(cur, tbl: str) -> dict:
    """The run and QI column names of an anonymized table (``published.qi_layout``)."""
    return qi_layout(cur, tbl).as_dict()


def qi_columns(cur, tbl: str, qi) -> dict:
    """Columns that publish the QIs ``qi`` in ``tbl`` (raw or anonymized), plus the suppressed flag."""
    if qi is None or isinstance(qi, str) or not list(qi):
        raise InvalidParameterError(
            "qi must be a non-empty list of column names, e.g. qi := ['age', 'sex']")
    _, cols = _columns(cur, tbl)
    lower = {c.lower(): c for c in cols}
    out = []
    for q in qi:
        if q is None:
            raise InvalidParameterError("qi contains NULL; pass column names")
        real = q if q in cols else lower.get(q.lower())
        if real is not None:
            out.append(real)
            continue
        lo, hi = lower.get(f"{q}_min".lower()), lower.get(f"{q}_max".lower())
        if lo is not None and hi is not None:
            out += [lo, hi]
            continue
        shown = ", ".join(cols[:30]) + (", ..." if len(cols) > 30 else "")
        raise UnknownObjectError(
            f"quasi-identifier '{q}' is not a column of table '{tbl}' (nor are '{q}_min' and "
            f"'{q}_max'); its columns are: {shown}")
    anonymized = "suppressed" in cols and "kanon_run" in cols
    return {"cols": out, "sup_col": "suppressed" if anonymized else "__kanon_nosup"}


class _Memo:
    """Answers keyed by (arguments, catalog version); a few entries only."""

    def __init__(self, con, size=16):
        self._con, self._size, self._store = con, size, {}

    def version(self):
        fn = getattr(self._con, "_catalog_version", None)
        try:
            return fn() if fn is not None else None
        except Exception:  # pragma: no cover - API absent or connection closed
            return None

    def get(self, key, compute):
        v = self.version()
        if v is None:
            return compute()
        full = (v,) + key
        if full not in self._store:
            if len(self._store) >= self._size:
                self._store.clear()
            self._store[full] = compute()
        return self._store[full]


def _with_cursor(con, fn, conn_id, tbl, *args):
    """``fn(cursor, source, *args)`` on a fresh cursor, ``source`` being what the cursor reads
    for ``tbl`` (``udfs.anonymize.reader_source``: an object registered on the caller's
    connection ``conn_id``, else the name itself)."""
    from kanon_duckdb.udfs.anonymize import reader_source
    cur = con.cursor()
    try:
        return fn(cur, reader_source(cur, conn_id, tbl), *args)
    finally:
        cur.close()


def _registered(conn_id, name) -> int | None:
    """Identity of the object registered as ``name`` on connection ``conn_id`` (a memo key)."""
    from kanon_duckdb.registered import lookup
    found = lookup(conn_id, name)
    return None if found is None else id(found[1])


def one_column(cur, tbl: str, name) -> str:
    """Stored name of column ``name`` of ``tbl`` (case-insensitive), else UnknownObjectError."""
    if not isinstance(name, str) or not name:
        raise InvalidParameterError(f"expected a column name, got {name!r}")
    _, cols = _columns(cur, tbl)
    if name in cols:
        return name
    low = [c for c in cols if c.lower() == name.lower()]
    if len(low) == 1:
        return low[0]
    shown = ", ".join(cols[:30]) + (", ..." if len(cols) > 30 else "")
    raise UnknownObjectError(f"column '{name}' is not a column of table '{tbl}'; its columns are: {shown}")


def shadow_key(cur, source) -> dict | None:
    """``__kanon_temp_check``'s argument for ``source`` (what the reader cursor reads:
    ``reader_source``'s answer): {s, n, msg} of a catalog table a TEMP object of the caller
    named alike would shadow (``relation.shadow_check``), else None (a registered object, a
    file, a name the cursor cannot resolve: the macro's other UDFs say why)."""
    from kanon_duckdb.relation import resolve_source, shadow_check
    if not isinstance(source, str):
        return None
    try:
        check = shadow_check(resolve_source(cur, source))
    except UnknownObjectError:
        return None
    return None if check is None else dict(zip(("s", "n", "msg"), check))


def declare(ctx: UdfContext) -> list[UDF]:
    """``__kanon_column``, ``__kanon_meta``, ``__kanon_qi_cols`` and ``__kanon_output_cols`` on
    ``ctx.con`` (deterministic)."""
    con = ctx.con
    memo = _Memo(con)
    # The macros name these UDFs inside COLUMNS lambdas, where DuckDB refuses
    # current_connection_id() ("Unsupported expression in COLUMNS"): they pass
    # getvariable('__kanon_conn_id') instead, which registering an object sets on the caller
    # (registered.py); NULL (nothing registered there) means the declaring connection.
    from kanon_duckdb.registered import connection_id
    declared_id = connection_id(con)

    def caller(conn):
        cid = first_value(conn)
        return declared_id if cid is None else cid

    def kanon_meta(tbl, conn):
        # one answer per distinct name: a list of tables (lattice_accuracy's eq. 5 form) reaches
        # this UDF as one vector of different names
        conn_id = caller(conn)
        names = (tbl.combine_chunks() if hasattr(tbl, "combine_chunks") else tbl).to_pylist()
        metas = {}
        for name in names:
            if name not in metas:
                metas[name] = memo.get(("meta", conn_id, name, _registered(conn_id, name)),
                                       lambda n=name: _with_cursor(con, anonymized_meta, conn_id, n))
        return pa.array([metas[n] for n in names], type=pa.struct([
            ("run_id", pa.int64()), ("k", pa.int64()), ("num_qi", pa.list_(pa.string())),
            ("cat_qi", pa.list_(pa.string())), ("lo_cols", pa.list_(pa.string())),
            ("hi_cols", pa.list_(pa.string())), ("cat_trees", pa.list_(pa.string())),
            ("num_lo", pa.list_(pa.float64())), ("num_hi", pa.list_(pa.float64())),
            ("num_w", pa.list_(pa.float64())), ("cat_w", pa.list_(pa.float64())),
            ("int_lo", pa.list_(pa.int64())), ("int_hi", pa.list_(pa.int64()))]))

    def kanon_qi_cols(tbl, qi, conn):
        name, cols, conn_id = first_value(tbl), first_value(qi), caller(conn)
        key = ("qi", conn_id, name, _registered(conn_id, name), None if cols is None else tuple(cols))
        res = memo.get(key, lambda: _with_cursor(con, qi_columns, conn_id, name, cols))
        return pa.array([res] * len(tbl), type=pa.struct([
            ("cols", pa.list_(pa.string())), ("sup_col", pa.string())]))

    def kanon_column(tbl, name, conn):
        t, c, conn_id = first_value(tbl), first_value(name), caller(conn)
        res = memo.get(("col", conn_id, t, _registered(conn_id, t), c), lambda: _with_cursor(con, one_column, conn_id, t, c))
        return pa.array([res] * len(tbl), type=pa.string())

    def kanon_output_cols(tbl, conn):
        t, conn_id = first_value(tbl), caller(conn)
        res = memo.get(("out", conn_id, t, _registered(conn_id, t)),
                       lambda: _with_cursor(con, output_columns, conn_id, t))
        return pa.array([res] * len(tbl), type=pa.list_(pa.string()))

    def kanon_shadow(tbl, conn):
        # one answer per distinct name: kanon_compare passes a column of names
        conn_id = caller(conn)
        names = (tbl.combine_chunks() if hasattr(tbl, "combine_chunks") else tbl).to_pylist()
        keys = {}
        for t in names:
            if t not in keys:
                keys[t] = None if t is None else memo.get(
                    ("shadow", conn_id, t, _registered(conn_id, t)),
                    lambda t=t: _with_cursor(con, shadow_key, conn_id, t))
        return pa.array([keys[t] for t in names], type=pa.struct([
            ("s", pa.string()), ("n", pa.string()), ("msg", pa.string())]))

    return [
        UDF("__kanon_shadow_in", kanon_shadow, ("VARCHAR", "BIGINT"),
            "STRUCT(s VARCHAR, n VARCHAR, msg VARCHAR)"),
        UDF("__kanon_column_in", kanon_column, ("VARCHAR", "VARCHAR", "BIGINT"), "VARCHAR"),
        UDF("__kanon_output_cols_in", kanon_output_cols, ("VARCHAR", "BIGINT"), "VARCHAR[]"),
        UDF("__kanon_meta_in", kanon_meta, ("VARCHAR", "BIGINT"), META_TYPE),
        UDF("__kanon_qi_cols_in", kanon_qi_cols, ("VARCHAR", "VARCHAR[]", "BIGINT"), QI_COLS_TYPE),
    ]


__all__ = ["declare", "anonymized_meta", "qi_columns", "quote_ident"]
