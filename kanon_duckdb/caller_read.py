"""``k_anonymize`` on a relation only the caller's connection sees, read in the caller's query.

Which relations: TEMP tables and views, a table created in the caller's still-open transaction,
an object registered with ``con.register`` before ``kanon_duckdb`` was imported. The UDFs read
through a cursor, a separate connection that sees none of them (relation.py says why nothing
else can). When the cursor cannot resolve a name that has the shape of a table name
(:func:`applies`), ``__kanon_sql`` returns :func:`caller_sql` instead of ``output_sql``: a
statement bound in the caller's connection (``query()`` binds its text there) that reads the
relation with ``query_table('<name>')`` and never needs its columns at bind time:

- the first read hands the whole relation to ``__kanon_run_rows`` in one call: its column names
  and types (``alias()``/``typeof()`` of every column, constants) and its rows as one
  ``VARCHAR[][]`` (every value cast to text, which DuckDB casts back exactly). The UDF rebuilds
  the relation on its cursor (:func:`rebuild`: the text columns registered as Arrow, cast back to
  the caller's types in a TEMP view of the same name) and runs the algorithm on it as on any
  relation, so the same data and seed give the base-table path's classes and values;
- the second read joins each row to its class by (QI tuple, ordinal), as ``output_sql`` does;
- the output shape is built by DuckDB's binder from the types, not by Python: every column
  becomes a one-field STRUCT named after it (``struct_pack(COLUMNS(*))``), a QI's STRUCT is
  replaced by ``__kanon_cell(raw value, c_min, c_max, label)`` (sql/caller_read.sql), a macro
  overloaded on the raw value's type (DuckDB 2.0 picks a macro overload by argument type): a
  number gives STRUCT(c_min, c_max), anything else STRUCT(c); ``unnest`` of every STRUCT then
  lays the columns out in the source's order, numeric QI ``c`` as ``c_min, c_max`` in place.
  ``numeric :=`` / ``categorical :=`` pick the overload by name instead.

Cost: the relation is copied once into the UDF as text (its size as CSV, plus the Arrow copy):
meant for the TEMP tables people build by hand, not for 10M-row tables (make those regular
tables). A QI missing from the relation is DuckDB's bind error ("Referenced column ... not
found"); every other check (kinds, output names, parameters) runs in the UDF, before any row is
published.
"""
from __future__ import annotations

import itertools
import json
import re

from .errors import InvalidParameterError
from .published import bound_columns, int_carried, low_slots
from .relation import Source
from .sqlutil import quote_ident, split_qualified

# Name endings DuckDB reads as files: such a name failed as a file, not as a hidden table.
_FILE_ENDINGS = ("parquet", "csv", "tsv", "json", "jsonl", "ndjson", "txt", "xlsx", "arrow",
                 "avro", "gz", "zst", "db", "duckdb")
_views = itertools.count(1)
_PLAIN = re.compile(r"^[A-Za-z_][A-Za-z0-9_$]*$")


def table_name(name) -> str | None:
    """``name`` as a fully quoted catalog name ('t', 's.t', 'db.s.t'; parts may be
    double-quoted) when it can only be a table or view, else None (a path, a reader call, a
    file name, anything else)."""
    if not isinstance(name, str) or not name.strip() or any(ch in name for ch in "/\\*?()';"):
        return None
    parts = split_qualified(name.strip())
    if not 1 <= len(parts) <= 3 or any(not p for p in parts):
        return None
    unquoted = [p for p in parts if f'"{p}' not in name]
    if any(not _PLAIN.match(p) for p in unquoted):
        return None
    if len(parts) > 1 and parts[-1] in unquoted and parts[-1].lower() in _FILE_ENDINGS:
        return None
    return ".".join(quote_ident(p) for p in parts)


def applies(name) -> bool:
    """True when an unresolvable ``name`` is read in the caller's query (see the module doc)."""
    return table_name(name) is not None


def checked_qi(spec: dict) -> list:
    """The QI names of ``spec`` (as written) once they are a non-empty list of distinct names;
    whether they are columns is DuckDB's bind-time check (and ``plan_qis`` in the run)."""
    qi = spec.get("qi")
    qi = [qi] if isinstance(qi, str) else list(qi or [])
    if not qi or any(not isinstance(q, str) or not q for q in qi):
        raise InvalidParameterError(
            f"no quasi-identifiers given; pass qi := ['col', ...] with column names, got {qi!r}")
    if len({q.lower() for q in qi}) != len(qi):
        raise InvalidParameterError(f"qi lists a column twice: {qi}")
    return qi


def _string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def handover_sql(src: str) -> str:
    """A query of one row (names VARCHAR[], types VARCHAR[], rows VARCHAR[][]) handing the
    relation ``src`` (SQL after FROM, bound in the caller's query) to a UDF: its column names
    and DuckDB types as constants (``alias()``/``typeof()``, one row even for an empty
    relation) and every row as a VARCHAR list (NULL for no row). The one home of that step for
    ``k_anonymize`` (:func:`caller_sql`) and the metric and check macros
    (``caller_macros.py``). O(n·d) text."""
    def shape(fn):  # fn of every column of the relation, on one row of NULLs
        return (f"{fn}(COLUMNS(lambda x: x <> '__kanon_one')) FROM (SELECT 1 AS __kanon_one) "
                f"LEFT JOIN {src} ON false")
    return (f"SELECT (SELECT list_value(*COLUMNS(*)) FROM (SELECT {shape('alias')})) AS names, "
            f"(SELECT list_value(*COLUMNS(*)) FROM (SELECT {shape('typeof')})) AS types, "
            f"(SELECT list(list_value(*COLUMNS(*))) FROM (SELECT COLUMNS(*)::VARCHAR FROM {src})) AS rows")


def caller_sql(name: str, args: dict) -> str:
    """The statement publishing a run of ``args`` (checked arguments, ``args['qi']`` the QI
    names as the user wrote them) on the relation ``name``, read in the caller's query."""
    # here, not at import: output_sql imports encoding and numba, which connect() must not
    from .output_sql import CLASS_ITEMS

    qi = list(args["qi"])
    lows = [q.lower() for q in qi]
    for q in qi:  # a bound column of one QI named like another QI: two columns of one name
        clash = [b for b in bound_columns(q) if b.lower() in lows]
        if clash:
            raise InvalidParameterError(
                f"QI {clash[0]!r} has the name k_anonymize gives a bound of QI {q!r}; for a "
                f"relation read in the caller's query (a TEMP table) rename one of them in a copy")
    forced_num = {c.lower() for c in args.get("numeric") or []}
    forced_cat = {c.lower() for c in args.get("categorical") or []}
    src = f"query_table({_string(table_name(name))})"
    one = lambda q: f"COLUMNS(lambda x: lower(x) = lower({_string(q)}))"  # noqa: E731
    lo_pat, hi_pat = bound_columns("\\0")
    cls_cols, raw_cols, pub_cols, cells = [], [], [], []
    for j, q in enumerate(qi):
        s, w = f"r.slots[{j + 1}]", f"r.slots[{len(qi) + j + 1}]"
        cls_cols += [f"unnest(c.lo_i[{s}]) AS __kanon_q{j}_loi",
                     f"unnest(c.hi_i[{s}]) AS __kanon_q{j}_hii",
                     f"unnest(c.lo_i[{w}]) AS __kanon_q{j}_lol",
                     f"unnest(c.hi_i[{w}]) AS __kanon_q{j}_hil",
                     f"unnest(c.lo_f[{s}]) AS __kanon_q{j}_lof",
                     f"unnest(c.hi_f[{s}]) AS __kanon_q{j}_hif",
                     f"unnest(c.labels[{s}]) AS __kanon_q{j}_lab"]
        # the value again under a plain name: __kanon_bound's untyped w keeps a DECIMAL's
        # precision and scale (its typed v does not); one COLUMNS per expression
        raw_cols += [one(q), f"{one(q)} AS __kanon_w{j}"]
        pub_cols += [f"__kanon_bound({one(q)}, __kanon_w{j}, __kanon_q{j}_loi, __kanon_q{j}_lol, "
                     f"__kanon_q{j}_lof) AS '{lo_pat}'",
                     f"__kanon_bound({one(q)}, __kanon_w{j}, __kanon_q{j}_hii, __kanon_q{j}_hil, "
                     f"__kanon_q{j}_hif) "
                     f"AS '{hi_pat}'",
                     f"__kanon_label({one(q)}, __kanon_q{j}_lab) AS '\\0'",
                     f"{one(q)} AS __kanon_v{j}"]
        cell = ("__kanon_cell_num" if q.lower() in forced_num else
                "__kanon_cell_cat" if q.lower() in forced_cat else "__kanon_cell")
        lo, hi = bound_columns(q)
        cells.append(f"{cell}(__kanon_v{j}, {quote_ident(lo)}, {quote_ident(hi)}, {quote_ident(q)})"
                     f" AS {quote_ident('__kanon_s_' + q)}")
    # the run's row key (encoding.row_key_sql of encoding.with_key_columns): QIs, then sensitive
    key_cols = qi + [c for c in args.get("sensitive") or [] if c.lower() not in lows]
    key = "hash(" + ", ".join(f"__kanon_key({quote_ident(q)})" for q in key_cols) + ")"
    changed = _string("k_anonymize: the relation changed during the call (rows were deleted); "
                      "run it again")
    # a QI that is not a column: DuckDB's "Referenced column ... not found" (with candidates),
    # bound before any COLUMNS(...) could report an empty set; the optimizer drops the test
    check = " OR ".join(f"{quote_ident(q)} IS NULL" for q in qi)
    return f"""WITH __kanon_src AS (FROM {src} WHERE true OR {check}),
__kanon_res AS MATERIALIZED (
    SELECT __kanon_run_rows({_string(json.dumps(args))}, h.names, h.types, h.rows) AS r
    FROM ({handover_sql('__kanon_src')}) h
),
__kanon_cls AS (   -- a QI's lists not of its kind are out of range: NULL, padded
    SELECT {CLASS_ITEMS}, {', '.join(cls_cols)}
    FROM (SELECT r.classes AS c, r FROM __kanon_res)
),
__kanon_rows AS (
    SELECT struct_pack(COLUMNS(*)) AS '__kanon_s_\\0', {', '.join(raw_cols)},
           __kanon_ec((SELECT r.token FROM __kanon_res), {key}) AS __kanon_ec
    FROM __kanon_src
),
__kanon_pub AS (
    SELECT COLUMNS('^__kanon_s_'), {', '.join(pub_cols)},
        CASE WHEN (SELECT count(*) FROM __kanon_src) IS DISTINCT FROM (SELECT r.n_rows FROM __kanon_res)
             THEN error({changed}) ELSE __kanon_ec END AS __kanon_o_ec,
        __kanon_csize AS __kanon_o_size, __kanon_csup AS __kanon_o_sup,
        (SELECT r.run_id FROM __kanon_res) AS __kanon_o_run
    FROM __kanon_rows JOIN __kanon_cls ON __kanon_ec = __kanon_cec
),
__kanon_cells AS (SELECT * REPLACE ({', '.join(cells)}) FROM __kanon_pub)
SELECT unnest(COLUMNS('^__kanon_s_')), __kanon_o_ec AS ec, __kanon_o_size AS ec_size,
       __kanon_o_sup AS suppressed, __kanon_o_run AS kanon_run
FROM __kanon_cells"""


def rebuild(cur, name: str, names, types, rows) -> Source:
    """The relation the caller's query handed over (column ``names``, DuckDB ``types`` texts,
    ``rows`` a ListArray of VARCHAR lists, one per row) registered on the reader cursor
    ``cur``, cast back to its types; the Source keeps the relation's name (runs and taxonomies
    are recorded and looked up by it). O(n·d)."""
    view = f"__kanon_caller_{next(_views)}"  # not the relation's name: that may be taken
    # registered, not create_view: in a database file DuckDB refuses a view reading a Python
    # object (it could be stored); a registered one lives with the cursor
    cur.register(view, typed(cur, names, types, rows))
    return Source(name, quote_ident(view), list(zip(names, types)), "table")


def typed(cur, names, types, rows):
    """The relation handed over by :func:`handover_sql` (column ``names``, DuckDB ``types``
    texts, ``rows`` a ListArray of VARCHAR lists, one per row, or None for no row) as a
    DuckDBPyRelation of the cursor ``cur``, every column cast back to its type. O(n·d)."""
    import duckdb
    import numpy as np
    import pyarrow as pa
    if rows is None:
        rows = pa.array([], pa.list_(pa.string()))
    if hasattr(rows, "combine_chunks"):
        rows = rows.combine_chunks()
    d = len(names)
    flat = rows.flatten() if len(rows) else pa.array([], pa.string())
    if len(flat) != len(rows) * d:
        raise InvalidParameterError("the relation's rows do not match its columns")
    idx = np.arange(len(rows), dtype=np.int64) * d
    text = pa.table([flat.take(pa.array(idx + j)) for j in range(d)],
                    names=[f"c{j}" for j in range(d)])
    # the types go through DuckDB's type parser and expression API, never into SQL text
    cols = [duckdb.ColumnExpression(f"c{j}").cast(duckdb.sqltype(t)).alias(n)
            for j, (n, t) in enumerate(zip(names, types))]
    return cur.from_arrow(text).select(*cols)


def qi_slots(plan) -> list:
    """1-based position of each QI (``plan.qi`` order) in the run's lo_i/hi_i (integer and
    DECIMAL QIs, ``published.int_carried``), lo_f/hi_f (other numeric QIs) or labels (categorical
    QIs) lists; then, per QI again, the position of the low halves of a DECIMAL(p > 18)'s
    unscaled integers in lo_i/hi_i (``published.low_slots``), None for any other QI."""
    carried = int_carried(plan)
    wide = low_slots(plan)
    floats = [c for c in plan.numeric if c not in carried]
    return ([(carried.index(c) if c in carried else floats.index(c)) + 1
             if c in plan.numeric else plan.categorical.index(c) + 1 for c in plan.qi]
            + [wide[c] + 1 if c in wide else None for c in plan.qi])
