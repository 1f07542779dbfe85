"""Raw answer next to the anonymized estimate, group by group: the SQL behind ``query_error``.

Output columns: the group keys (named as in the query), ``measure`` (only when the query has
several aggregate columns: one row per group and aggregate), ``raw_value`` (A), ``anon_estimate``
(a) and ``rel_error`` = |A - a| / |A| (cof-mondrian-outliers.txt eq. 8). Types: each key has
the raw query's type for it, ``raw_value`` the raw aggregate's, ``anon_estimate`` and
``rel_error`` are DOUBLE (so the types follow the query and the raw relation only, also when the
estimate is computed elsewhere: caller_macros.py).

Policy (the SQL macro ``kanon_rel_error`` in sql/query_error.sql): a group found on one side only
is reported with NULL on the other side and NULL ``rel_error``; when A = 0, ``rel_error`` is 0 if
a = 0 and NULL otherwise (undefined).
"""
from __future__ import annotations

from sqlglot import exp

from .context import RewriteContext
from .rewriter import context_for, rewrite
from .sqlgen import DIALECT, parse_select, quote, string, table_node, to_sql
from .unqualify_columns import unqualify_columns
from .validate_query import validate_query


def _label(tree: exp.Select):
    """Copy with projections aliased ``__k<i>`` (keys) / ``__m<j>`` (measures), ORDER BY dropped.

    GROUP BY references to projection aliases become positions, so renaming them is safe.
    Returns (copy, key names, measure names).
    """
    out = tree.copy()
    out.set("order", None)
    aliases = {}
    for pos, proj in enumerate(out.expressions, start=1):
        if isinstance(proj, exp.Alias):
            aliases[proj.alias.lower()] = (pos, proj.this)
    group = out.args.get("group")
    if group is not None:
        keys = []
        for g in group.expressions:
            hit = aliases.get(g.name.lower()) if isinstance(g, exp.Column) else None
            if hit and not (isinstance(hit[1], exp.Column) and hit[1].name.lower() == g.name.lower()):
                g = exp.Literal.number(str(hit[0]))
            keys.append(g)
        group.set("expressions", keys)
    key_names, measure_names, projections = [], [], []
    for proj in out.expressions:
        inner = proj.this if isinstance(proj, exp.Alias) else proj
        name = proj.alias if isinstance(proj, exp.Alias) else (proj.name if isinstance(proj, exp.Column)
                                                                 else proj.sql(DIALECT))
        if proj.find(exp.AggFunc):
            alias = f"__m{len(measure_names)}"
            measure_names.append(name)
        else:
            alias = f"__k{len(key_names)}"
            key_names.append(name)
        projections.append(exp.Alias(this=inner.copy(), alias=exp.Identifier(this=alias, quoted=True)))
    out.set("expressions", projections)
    return out, key_names, measure_names


def _with_table(tree: exp.Select, rel) -> exp.Select:
    def swap(node):
        if isinstance(node, exp.Table) and isinstance(node.this, exp.Identifier):
            return table_node(rel, node.args.get("alias"))
        return node
    return tree.transform(swap, copy=True)


def _split(tree: exp.Expression, ctx):
    """``tree`` checked against ``ctx`` and labelled: (labelled copy, key names, measure names)."""
    validate_query(tree, ctx)
    return _label(unqualify_columns(tree, ctx))


def query_error_sql(con, sql: str, raw_table: str, anon_table: str, pretty: bool = False) -> str:
    """The comparison query: ``sql`` on ``raw_table`` joined with its estimate on ``anon_table``.

    The single table named in ``sql``'s FROM stands for ``raw_table``.
    """
    tree = parse_select(sql)
    ctx = context_for(con, tree, anon_table, raw_table, raw_required=True)
    labelled, keys, measures = _split(tree, ctx)
    raw_sql = to_sql(_with_table(labelled, ctx.raw_table), pretty)
    est_sql = to_sql(rewrite(labelled, ctx), pretty)
    return comparison_sql(raw_sql, f"({est_sql}) AS __e", [f'__e."__k{i}"' for i in range(len(keys))],
                          [f'__e."__m{j}"' for j in range(len(measures))], keys, measures)


def estimate_sql(con, sql: str, raw_table: str, anon_table: str) -> str:
    """The estimate half of :func:`query_error_sql` alone: one row per group of the estimate on
    ``anon_table``, columns ``__k<i>`` (group keys) and ``__m<j>`` (measures). What the cursor
    runs when a relation is seen by the caller's connection only (caller_macros.py)."""
    tree = parse_select(sql)
    ctx = context_for(con, tree, anon_table, raw_table, raw_required=True)
    return to_sql(rewrite(_split(tree, ctx)[0], ctx))


def raw_half(sql: str, raw_from: str) -> tuple:
    """(raw query SQL, key names, measure names) of ``sql`` read from ``raw_from`` (SQL after
    FROM), without the anonymized table's run: the checks that need no run (one SELECT of one
    table, no subquery, pure functions only: ``validate_query``) run here, the rest where the
    run is known (:func:`estimate_sql`). For a relation seen by the caller's connection only."""
    from ..relation import Source
    labelled, keys, measures = _split(parse_select(sql), RewriteContext.manual(None))
    return to_sql(_with_table(labelled, Source(raw_from, raw_from, [], "table"))), keys, measures


def comparison_sql(raw_sql: str, est_from: str, est_keys: list, est_measures: list, keys: list,
                   measures: list) -> str:
    """The query joining the raw answer (``raw_sql``: columns ``__k<i>``, ``__m<j>``) with the
    estimate rows of ``est_from`` (SQL after FROM; ``est_keys``/``est_measures``: SQL of each
    value there). The estimate's keys take the raw answer's types and its measures are DOUBLE,
    so the output types follow the raw query alone, whatever computed the estimate."""
    k = [f'"__k{i}"' for i in range(len(keys))]
    witness = "(SELECT * FROM __raw LIMIT 0) AS __w"  # no row: only its column types are used
    est_cols = [f"cast_to_type({v}, __w.{c}) AS {c}" for v, c in zip(est_keys, k)]
    est_cols += [f'CAST({v} AS DOUBLE) AS "__m{j}"' for j, v in enumerate(est_measures)]
    est = f"SELECT {', '.join(est_cols)} FROM {est_from} LEFT JOIN {witness} ON false"
    key_cols = [f"COALESCE(r.{c}, e.{c}) AS {quote(name)}" for c, name in zip(k, keys)]
    if k:
        join = "FULL OUTER JOIN __est AS e ON " + " AND ".join(f"r.{c} IS NOT DISTINCT FROM e.{c}" for c in k)
    else:
        join = "CROSS JOIN __est AS e"
    parts = []
    for j, name in enumerate(measures):
        a, e = f'r."__m{j}"', f'e."__m{j}"'
        cols = key_cols + ([f"{to_sql(string(name))} AS measure"] if len(measures) > 1 else [])
        cols += [f"{a} AS raw_value", f"{e} AS anon_estimate", f"kanon_rel_error({a}, {e}) AS rel_error"]
        parts.append(f"SELECT {', '.join(cols)}\nFROM __raw AS r {join}")
    n_order = len(keys) + (1 if len(measures) > 1 else 0)
    order = f"\nORDER BY {', '.join(str(i) for i in range(1, n_order + 1))}" if n_order else ""
    body = "\nUNION ALL\n".join(parts)
    if len(parts) > 1 and order:
        body = f"SELECT * FROM (\n{body}\n)"
    return f"WITH __raw AS (\n{raw_sql}\n), __est AS (\n{est}\n)\n{body}{order}"
