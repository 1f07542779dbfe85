"""The SELECT that publishes a run: each row of a second read of the relation with its class's values.

``output_sql(plan, run_expr)`` is the whole body of ``k_anonymize`` (the macro is
``FROM query(__kanon_sql(...))``, so the plan is computed once per statement, at bind time).
``run_expr`` yields the run's ``row_values.RUN_REF_TYPE`` value (the token of its row
assignment, the labels): ``__kanon_run('<json>')`` (the SQL path: the algorithm runs inside
the statement) or ``__kanon_pass(<token>)`` (the Python API: the run was done before, its
assignment is pinned).

Output columns, in the relation's column order: a non-QI column unchanged, a numeric QI ``c``
replaced in place by ``c_min, c_max`` (of ``published.bound_type``), a categorical QI by its published label; then ``ec``,
``ec_size``, ``suppressed``, ``kanon_run``. Each row gets its class and the class's published
values from ``__kanon_row(token, row key, row count)`` during a parallel scan (see
``assignment`` and ``row_values``: one Python call per chunk, no join), which also refuses a
row count of the relation in its own scan that differs from the run's (rows that vanished
between the two reads). ``published_layout`` is the same output as a class table (one row per
class), which the positional statement and the Spark lattice path unnest.
``positional_sql`` publishes a run on a base table read in order without the look-up, the
class table or the count (see its docstring).
"""
from __future__ import annotations

from .encoding import QIPlan, row_key_sql
from .published import bound_columns, bound_type, int_carried, low_slots, unscaled_sql
from .row_values import row_layout
from .sqlutil import quote_ident


def sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


# SELECT items of the per-class table over RUN_TYPE's column-major ``classes`` value ``c``:
# class id, size and suppression (published_layout adds the published values)
CLASS_ITEMS = ("unnest(c.ec) AS __kanon_cec, unnest(c.size) AS __kanon_csize, "
               "unnest(c.suppressed) AS __kanon_csup")


def _as_type(bound: str, typ: str, integer: bool) -> str:
    """A bound of the run's lists (BIGINT for integer QIs, else DOUBLE) as SQL type ``typ``."""
    return bound if typ == ("BIGINT" if integer else "DOUBLE") else f"CAST({bound} AS {typ})"


def published_layout(plan: QIPlan) -> tuple[list, list]:
    """(SELECT items of the per-class table over RUN_TYPE's ``classes`` value ``c`` (one unnest
    per published column, beside ``CLASS_ITEMS``), the output columns before ``ec``: (name,
    per-class column publishing it, or None for the source column of that name unchanged)), in
    the relation's column order."""
    carried = int_carried(plan)
    wide = low_slots(plan)
    floats = [c for c in plan.numeric if c not in carried]
    cls_cols, layout = [], []
    for i, c in enumerate(plan.columns):
        if c in plan.numeric:
            integer = c in plan.integer
            lo, hi = ("lo_i", "hi_i") if c in carried else ("lo_f", "hi_f")
            j = (carried.index(c) if c in carried else floats.index(c)) + 1
            typ = bound_type(plan.types[c], integer)
            if c in wide:  # a DECIMAL(p > 18): its unscaled integers' (high, low) halves
                w = wide[c] + 1
                cast = lambda x, side: unscaled_sql(x, typ, f"unnest(c.{side}[{w}])")  # noqa: E731
            elif c in carried and not integer:  # a DECIMAL: its unscaled integers
                cast = lambda x, side: unscaled_sql(x, typ)  # noqa: E731
            else:
                cast = lambda x, side: _as_type(x, typ, integer)  # noqa: E731
            cls_cols += [f"{cast(f'unnest(c.{lo}[{j}])', lo)} AS __kanon_q{i}_min",
                         f"{cast(f'unnest(c.{hi}[{j}])', hi)} AS __kanon_q{i}_max"]
            lo_name, hi_name = bound_columns(c)
            layout += [(lo_name, f"__kanon_q{i}_min"), (hi_name, f"__kanon_q{i}_max")]
        elif c in plan.categorical:
            j = plan.categorical.index(c) + 1
            cls_cols.append(f"unnest(c.labels[{j}]) AS __kanon_q{i}")
            layout.append((c, f"__kanon_q{i}"))
        else:
            layout.append((c, None))
    return cls_cols, layout


def _output_columns(layout: list) -> list:
    """SELECT items of the output columns before ``ec`` (``published_layout``), the source's
    from ``__kanon_rows``."""
    return [f"__kanon_rows.{quote_ident(name)}" if ref is None
            else f"{ref} AS {quote_ident(name)}" for name, ref in layout]


def output_sql(plan: QIPlan, run_expr: str) -> str:
    layout = row_layout(plan, "__kanon_r", "__kanon_names")
    src = plan.table_sql
    cols = [f"__kanon_rows.{quote_ident(name)}" if expr is None else f"{expr} AS {quote_ident(name)}"
            for name, expr in layout]
    names = (",\n    (SELECT r.names AS __kanon_names FROM __kanon_res) AS __kanon_labels"
             if plan.categorical else "")
    # the filter keeps every row's __kanon_row call (and with it the run and the change guard)
    # when the caller reads none of its fields: DuckDB drops an unread projection, not a filter
    return f"""WITH __kanon_res AS MATERIALIZED (SELECT {run_expr} AS r)
SELECT {', '.join(cols)},
    __kanon_r.ec AS ec, __kanon_r.size AS ec_size, __kanon_r.sup AS suppressed, __kanon_r.run AS kanon_run
FROM (
    SELECT *, __kanon_row((SELECT r.token FROM __kanon_res), {row_key_sql(plan)},
                          (SELECT count(*) FROM {src})) AS __kanon_r
    FROM {src}
) AS __kanon_rows{names}
WHERE __kanon_r IS NOT NULL"""


def positional_sql(plan: QIPlan, rows_expr: str) -> str:
    """The statement publishing a run read in order (``udfs.anonymize.read_in_order``: a base
    table of at most ``udfs.anonymize.POSITIONAL_ROWS`` rows, any algorithm):
    ``rows_expr`` yields ROWS_TYPE's value, the published values of every row in first-read
    order, unnested beside a second scan of the relation by position (POSITIONAL JOIN: no
    row->class look-up, no join on class ids, no row count). A filter no projection drops
    refuses the output when the two reads differ: a row of the second read the first did not
    have (its key NULL), a second read of another row count (rows deleted: checked on the rows
    a POSITIONAL JOIN emits with no second-read side, which a LIMIT that stopped the scan also
    produces and which are then dropped), or a row whose QI key (``row_key_sql``) is not the
    first read's at that position (rows with equal QI tuples are interchangeable for the
    guarantee and for truthfulness); the same filter counts the rows
    produced (``__kanon_seen``: the run's kanon_runs row is written with the last one,
    ``assignment.Assignments.expect_rows``). Same columns, types and values as
    ``output_sql``."""
    cls_cols, layout = published_layout(plan)
    out_cols = _output_columns(layout)
    changed = sql_string("k_anonymize: the relation changed during the call (its rows differ "
                         "from the rows anonymized); run it again")
    return f"""SELECT {', '.join(out_cols)},
    __kanon_cec AS ec, __kanon_csize AS ec_size, __kanon_csup AS suppressed, __kanon_crun AS kanon_run
FROM (SELECT *, true AS __kanon_here FROM {plan.table_sql}) AS __kanon_rows
POSITIONAL JOIN (
    SELECT {CLASS_ITEMS}, unnest(c.key) AS __kanon_key, c.run_id AS __kanon_crun,
        len(c.key) <> n AS __kanon_recounted{''.join(', ' + x for x in cls_cols)}
    FROM (SELECT {rows_expr} AS c, (SELECT count(*) FROM {plan.table_sql}) AS n)
) AS __kanon_cls
WHERE CASE WHEN __kanon_here IS NULL
           THEN CASE WHEN __kanon_recounted THEN error({changed}) ELSE false END
           WHEN __kanon_key IS DISTINCT FROM {row_key_sql(plan)}
           THEN error({changed}) ELSE __kanon_seen(__kanon_crun) END"""
