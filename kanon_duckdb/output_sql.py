"""The SELECT that publishes a run: its classes joined back to a second read of the relation.

``output_sql(plan, run_expr)`` is the whole body of ``k_anonymize`` (the macro is
``FROM query(__kanon_sql(...))``, so the plan is computed once per statement, at bind time).
``run_expr`` yields the run's RUN_TYPE value: ``__kanon_run('<json>')`` (the SQL path: the
algorithm runs inside the statement) or ``__kanon_pass(<token>)`` (the Python API: the run was
done before, its assignment is pinned).

Output columns, in the relation's column order: a non-QI column unchanged, a numeric QI ``c``
replaced in place by ``c_min, c_max`` (of ``published.bound_type``), a categorical QI by its published label; then ``ec``,
``ec_size``, ``suppressed``, ``kanon_run``. The per-class table is built first (one row per
class), so the row-level join carries scalars; each row finds its class through
``__kanon_ec(token, row key)`` during a parallel scan (see ``assignment``), and a count of the
relation in its own scan guards against rows that vanished between the two reads.
``positional_sql`` publishes a run on a base table read in order without the look-up, the
class table or the count (see its docstring).
"""
from __future__ import annotations

from .encoding import QIPlan, row_key_sql
from .published import bound_columns, bound_type
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
    floats = [c for c in plan.numeric if c not in plan.integer]
    cls_cols, layout = [], []
    for i, c in enumerate(plan.columns):
        if c in plan.numeric:
            integer = c in plan.integer
            lo, hi = ("lo_i", "hi_i") if integer else ("lo_f", "hi_f")
            j = (plan.integer.index(c) if integer else floats.index(c)) + 1
            typ = bound_type(plan.types[c], integer)
            cls_cols += [f"{_as_type(f'unnest(c.{lo}[{j}])', typ, integer)} AS __kanon_q{i}_min",
                         f"{_as_type(f'unnest(c.{hi}[{j}])', typ, integer)} AS __kanon_q{i}_max"]
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
    cls_cols, layout = published_layout(plan)
    out_cols = _output_columns(layout)
    src = plan.table_sql
    changed = sql_string("k_anonymize: the relation changed during the call (rows were deleted); "
                         "run it again")
    # the run's constants (run id, row count) ride on each class row: every scalar subquery of
    # the materialized run costs about 2 ms of planning, the token's is the one left
    return f"""WITH __kanon_res AS MATERIALIZED (SELECT {run_expr} AS r),
__kanon_cls AS (
    SELECT {CLASS_ITEMS}, run_id AS __kanon_crun, n_rows AS __kanon_cn{''.join(', ' + x for x in cls_cols)}
    FROM (SELECT r.classes AS c, r.run_id AS run_id, r.n_rows AS n_rows FROM __kanon_res)
),
__kanon_rows AS (
    SELECT *, __kanon_ec((SELECT r.token FROM __kanon_res), {row_key_sql(plan)}) AS __kanon_ec
    FROM {src}
)
SELECT {', '.join(out_cols)},
    CASE WHEN (SELECT count(*) FROM {src}) IS DISTINCT FROM __kanon_cn
         THEN error({changed}) ELSE __kanon_rows.__kanon_ec END AS ec,
    __kanon_csize AS ec_size, __kanon_csup AS suppressed, __kanon_crun AS kanon_run
FROM __kanon_rows JOIN __kanon_cls ON __kanon_rows.__kanon_ec = __kanon_cls.__kanon_cec"""


def positional_sql(plan: QIPlan, rows_expr: str) -> str:
    """The statement publishing a run read in order (``udfs.anonymize.read_in_order``: a base
    table of at most ``udfs.anonymize.POSITIONAL_ROWS`` rows, any algorithm):
    ``rows_expr`` yields ROWS_TYPE's value, the published values of every row in first-read
    order, unnested beside a second scan of the relation by position (POSITIONAL JOIN: no
    row->class look-up, no join on class ids, no row count). A filter no projection drops
    refuses the output when the two reads differ: a row on one side only, or a row whose QI key
    (``row_key_sql``) is not the first read's at that position (rows with equal QI tuples are
    interchangeable for the guarantee and for truthfulness). Same columns, types and values as
    ``output_sql``."""
    cls_cols, layout = published_layout(plan)
    out_cols = _output_columns(layout)
    changed = sql_string("k_anonymize: the relation changed during the call (its rows differ "
                         "from the rows anonymized); run it again")
    return f"""SELECT {', '.join(out_cols)},
    __kanon_cec AS ec, __kanon_csize AS ec_size, __kanon_csup AS suppressed, __kanon_crun AS kanon_run
FROM (SELECT *, true AS __kanon_here FROM {plan.table_sql}) AS __kanon_rows
POSITIONAL JOIN (
    SELECT {CLASS_ITEMS}, unnest(c.key) AS __kanon_key, c.run_id AS __kanon_crun{''.join(', ' + x for x in cls_cols)}
    FROM (SELECT {rows_expr} AS c)
) AS __kanon_cls
WHERE CASE WHEN __kanon_here IS NULL OR __kanon_key IS DISTINCT FROM {row_key_sql(plan)}
           THEN error({changed}) ELSE true END"""
