"""The metric and check macros on relations only the caller's connection sees.

A TEMP table or view, a table created in the caller's still-open transaction, or an object
registered before ``kanon_duckdb`` was imported is invisible to the reader cursors the macros'
UDFs use (relation.py says why nothing else can read it), and the metric macros need, at bind
time, the run that produced the table (which columns publish which QI), which is data of the
table. So such a relation is handed over, as ``k_anonymize`` reads it (caller_read.py):

- every macro of :data:`ROUTED` is registered under an inner name (``__kanon_here_<name>``)
  taking a side parameter first (:func:`fold_sides`): each overload of ``sql/`` as written,
  body unchanged, with ``__kanon_s INTEGER`` (the cursor side; the other macros of ``sql/``
  call it so, with ``NULL::INTEGER``), and its twin with ``__kanon_s VARCHAR`` (the caller
  side). Its public name becomes a dispatcher (:func:`dispatch_sql`) that asks
  ``__kanon_side`` (a UDF folded at bind time, answer memoized per catalog version) whether
  the reader cursor can read every relation argument; DuckDB 2.0 picks a macro overload by
  the *type* of an argument, and ``(FROM query(__kanon_side(...)))`` is ``NULL::INTEGER`` or
  ``NULL::VARCHAR``. Only the chosen overload is bound, so the body of ``sql/`` never binds
  on a relation its UDFs cannot see. (DuckDB expands a macro's callees at each CREATE, so
  connect() pays for every layer: one layer besides the public name, not two.)
- caller side: ``__kanon_caller_sql`` (folded at bind time) returns a query
  (:func:`caller_query`) that reads each caller-side relation in the caller's own query with
  ``query_table`` (``caller_read.handover_sql``: names, types and rows as text) and passes them
  with the macro call to ``__kanon_caller_eval``, which rebuilds them with their types
  (``caller_read.typed``), registers them as Arrow tables on a fresh cursor under their
  unqualified names (the path of an object registered on a cursor: registered.py) and runs the
  same public macro there (:func:`cursor_call`); the value comes back as JSON and is cast to the
  macro's type (:attr:`Routed.returns`), a table macro's rows as a list of STRUCTs.

The other arguments reach the cursor as literals rendered from their JSON (``to_json``): they
must be constants (they already must: the macros fold them at bind time). The base-table path
pays one folded UDF call and a ``query()`` of ``SELECT NULL::INTEGER`` per macro call; the
caller side copies the relation once as text (its size as CSV, plus the Arrow copy), like
``k_anonymize`` on a TEMP table: meant for TEMP tables built by hand, not for 10M rows.
``kanon_metrics(tbl)`` takes names from a column, which a bind-time dispatch cannot see, so it
stays on the cursor side (``kanon_compare([...])`` with a constant list is routed).

``query_error`` is not a dispatcher: its output columns follow the query, so its folded UDF
(``__kanon_query_error_sql``) returns :func:`caller_query_error` instead of the base path's SQL:
the raw answer in the caller's query, the estimate from a cursor (the rows handed over as
above), joined by ``rewrite.compare.comparison_sql``, the base path's own join.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass

from .caller_read import handover_sql, table_name
from .errors import InvalidParameterError
from .sqlutil import split_qualified

CONN = "coalesce(getvariable('__kanon_conn_id'), 0)::UBIGINT"
REL_TYPE = "STRUCT(name VARCHAR, names VARCHAR[], types VARCHAR[], rows VARCHAR[][])[]"
INNER = "__kanon_here_"
_SIDE = "__kanon_s"


@dataclass(frozen=True)
class Routed:
    """A macro whose relation arguments may be caller-side. ``overloads``: each overload's
    parameters as written in its ``CREATE MACRO`` (``'c := NULL'`` for a named one);
    ``tables``: parameters holding one relation name, ``lists``: a list of names; ``returns``:
    the scalar type, or for a table macro (``table``) the STRUCT of one output row;
    ``defaults``: what the public macro passes on for a parameter instead of its value
    (kanon_mapping's ``source`` defaults to its run's recorded source, found at bind time, so a
    TEMP source is handed over too)."""
    name: str
    overloads: tuple
    returns: str
    tables: tuple = ("tbl",)
    lists: tuple = ()
    table: bool = False
    defaults: dict | None = None  # parameter -> what the dispatcher passes for it (SQL)


_RISK = ("STRUCT(max_risk DOUBLE, avg_risk DOUBLE, records_at_risk DOUBLE, unique_share DOUBLE, "
         "journalist_risk DOUBLE, marketer_risk DOUBLE, classes BIGINT, records BIGINT)")
_ERRORS = "STRUCT(qid BIGINT, raw_value DOUBLE, anon_estimate DOUBLE, rel_error DOUBLE)"
_METRICS = "STRUCT(gcp DOUBLE, discernibility DOUBLE, cavg DOUBLE, suppression DOUBLE, " \
           "total_il DOUBLE, gen_total_il DOUBLE)"

ROUTED = {r.name: r for r in (
    Routed("gcp", (("tbl",),), "DOUBLE"),
    Routed("total_il", (("tbl",),), "DOUBLE"),
    Routed("gen_total_il", (("tbl",),), "DOUBLE"),
    Routed("discernibility", (("tbl",),), "HUGEINT"),
    Routed("cavg", (("tbl", "k"), ("tbl",)), "DOUBLE"),
    Routed("suppression", (("tbl",),), "DOUBLE"),
    Routed("cm", (("tbl", "label"),), "DOUBLE"),
    Routed("info_loss", (("tbl", "weights := NULL"),), "DOUBLE"),
    Routed("kanon_run_weights", (("tbl",),), "MAP(VARCHAR, DOUBLE)"),
    Routed("log_level", (("tbl",),), "DOUBLE"),
    Routed("k_anonymity", (("tbl", "qi"),), "BIGINT"),
    Routed("l_diversity", (("tbl", "qi", "sensitive", "c := NULL"),),
           'STRUCT("distinct" BIGINT, entropy DOUBLE, recursive BIGINT)'),
    Routed("t_closeness", (("tbl", "qi", "sensitive", "distance := NULL"),), "DOUBLE"),
    Routed("reidentification_risk",
           (("tbl", "qi", "threshold := 0.2", "population := NULL"),), _RISK,
           tables=("tbl", "population")),
    Routed("kanon_qi_loss", (("tbl",),),
           "STRUCT(qi VARCHAR, kind VARCHAR, n HUGEINT, ncp_sum DOUBLE, ncp DOUBLE, "
           "il_sum DOUBLE, weight DOUBLE)", table=True),
    Routed("kanon_classes", (("tbl",),),
           "STRUCT(run_id BIGINT, ec BIGINT, size BIGINT, suppressed BOOLEAN, lo DOUBLE[], "
           "hi DOUBLE[], labels VARCHAR[])", table=True),
    Routed("kanon_compare", (("tables",),), "STRUCT(\"table\" VARCHAR, " + _METRICS[7:],
           tables=(), lists=("tables",), table=True),
    Routed("kanon_mapping", (("anon_tbl", "source := NULL"),), "STRUCT(qi VARCHAR, raw VARCHAR, "
           "ec BIGINT, label VARCHAR, lo DOUBLE, hi DOUBLE)", tables=("anon_tbl", "source"),
           table=True, defaults={"source": f"coalesce(source, __kanon_run_source(anon_tbl, {CONN}))"}),
    Routed("kanon_rewrite", (("sql", "anon_tbl"),), "VARCHAR", tables=("anon_tbl",)),
    Routed("query_workload", (("raw_tbl", "n := 1000", "seed := 0", "dims := 2", "qi := NULL"),),
           "STRUCT(qid BIGINT, sql VARCHAR)", tables=("raw_tbl",), table=True),
    Routed("workload_query_errors", (("workload_tbl", "raw_tbl", "anon_tbl"),), _ERRORS,
           tables=("workload_tbl", "raw_tbl", "anon_tbl"), table=True),
    Routed("workload_error", (("workload_tbl", "raw_tbl", "anon_tbl"),),
           "STRUCT(n_queries BIGINT, n_skipped BIGINT, mean_rel_error DOUBLE, "
           "median_rel_error DOUBLE, p95_rel_error DOUBLE, max_rel_error DOUBLE)",
           tables=("workload_tbl", "raw_tbl", "anon_tbl"), table=True),
    Routed("classification_utility",
           (("raw_tbl", "anon_tbl", "label", "models := ['knn', 'svm', 'rf', 'nb']", "seed := 0",
             "test_fraction := 0.3", "qi := NULL", "encoding := 'ordinal'", "features := 'qi'"),),
           "STRUCT(model VARCHAR, accuracy_anon DOUBLE, f1_anon DOUBLE, accuracy_raw DOUBLE, "
           "f1_raw DOUBLE, n_train BIGINT, n_test BIGINT, split VARCHAR)",
           tables=("raw_tbl", "anon_tbl"), table=True),
)}


def _pname(param: str) -> str:
    return param.split(":=")[0].strip()


def _named(param: str) -> bool:
    return ":=" in param


def _pass(params, given=None) -> str:
    """The arguments forwarding ``params`` (named ones by name; ``given``: parameter -> SQL)."""
    given = given or {}
    return ", ".join((f"{_pname(p)} := " if _named(p) else "") + given.get(_pname(p), _pname(p))
                     for p in params)


def dispatch_sql(r: Routed) -> str:
    """The public dispatcher of ``r`` (see the module doc): its inner macro, picked by the side."""
    given = r.defaults or {}
    rel = [f"[{given.get(t, t)}]::VARCHAR[]" for t in r.tables] + \
          [f"{_pname(t)}::VARCHAR[]" for t in r.lists]
    side = f"(FROM query(__kanon_side({' || '.join(rel)}, {CONN})))"
    kw = "TABLE " if r.table else ""
    pub = []
    for params in r.overloads:
        call = f"{INNER}{r.name}({side}, {_pass(params, r.defaults)})"
        pub.append(f"({', '.join(params)}) AS {kw}" + (f"(FROM {call})" if r.table else call))
    return f"CREATE OR REPLACE MACRO {r.name}" + ",\n    ".join(pub) + ";\n"


def _caller_overloads(r: Routed) -> str:
    """The inner macro's caller-side overloads (side VARCHAR), one per overload of ``r``."""
    kw = "TABLE " if r.table else ""
    out = []
    for i, params in enumerate(r.overloads):
        args = "to_json({" + ", ".join(f"'{_pname(p)}': {_pname(p)}" for p in params) + "})"
        out.append(f",\n    ({_SIDE} VARCHAR, {', '.join(params)}) AS {kw}"
                   f"(FROM query(__kanon_caller_sql('{r.name}', {i}, {args}, {CONN})))")
    return "".join(out)


# what fold_sides reads of a script: literals, quoted names and comments (skipped whole),
# parentheses, semicolons, and the other non-space text (runs; only their last character counts)
_TOKEN = re.compile(r"""'[^']*'?|"[^"]*"?|--[^\n]*|[();]|[^\s'"();-]+|-""")


def _overload_heads(text: str, at: int) -> tuple[list, int]:
    """Reading ``text`` from the ``(`` at ``at`` (a macro's first parameter list) to the ``;``
    ending its CREATE: the index of each ``(`` that follows a ``,`` at the top level (where an
    overload's parameter list may start; ``at`` first) and the index of that ``;`` (or the
    text's length). Literals, quoted names and comments are skipped whole. O(len(text))."""
    headers, depth, prev, j = [at], 0, None, len(text)
    for m in _TOKEN.finditer(text, at):
        tok = m.group()
        c = tok[0]
        if c in "'\"" or tok.startswith("--"):  # a literal, quoted name or comment: skipped
            prev = c if depth == 0 else prev
        elif c == "(":
            if depth == 0 and prev == ",":
                headers.append(m.start())
            depth += 1
        elif c == ")":
            depth -= 1
            prev = ")" if depth == 0 else prev
        elif c == ";" and depth == 0:
            j = m.start()
            break
        elif depth == 0:
            prev = tok[-1]
    return headers, j


def fold_sides(text: str, r: Routed) -> str:
    """``text`` (a script defining ``INNER + r.name``) with that macro taking the side first:
    each overload as written gets ``__kanon_s INTEGER`` (its body unchanged: the cursor side)
    and a twin with ``__kanon_s VARCHAR`` (the caller side). One CREATE per routed macro
    besides the public one: DuckDB expands a macro's callees at each CREATE, so a separate
    two-sided layer cost connect() a third more. O(len(text))."""
    head = f"MACRO {INNER}{r.name}("
    start = text.find(head)
    if start < 0:
        return text
    headers, j = _overload_heads(text, start + len(head) - 1)
    wanted = [", ".join(p) for p in r.overloads]
    found = [h for h in headers if " ".join(text[h + 1:text.index(")", h)].split()) in wanted
             and text[text.index(")", h) + 1:].lstrip().upper().startswith("AS")]
    if len(found) != len(wanted):
        raise RuntimeError(f"caller_macros: the overloads of {r.name} in sql/ are not {wanted}")
    end = j
    if r.table:  # a bare SELECT body would take the next overload's ", (" as a FROM item
        close = text.index(")", found[-1])
        m = re.compile(r"\s*AS\s+TABLE\s*", re.I).match(text, close + 1)
        if m and text[m.end()] != "(":
            text = text[:m.end()] + "(" + text[m.end():j] + "\n)" + text[j:]
            end = j + 3
    out = text[:end] + _caller_overloads(r) + text[end:]
    for h in reversed(found):
        out = out[:h + 1] + f"{_SIDE} INTEGER, " + out[h + 1:]
    return out


_CALL = re.compile(r"\b(MACRO )?(" + "|".join(sorted(ROUTED, key=len, reverse=True)) + r")\(")


def route_scripts(scripts) -> tuple:
    """The SQL scripts ((file name, text), in order) with every macro of :data:`ROUTED`
    defined under its inner name with the side parameter (:func:`fold_sides`) and called so
    on the cursor side (``NULL::INTEGER``), followed by the dispatchers (one more script)."""
    def rename(m):
        if m.group(1):
            return f"MACRO {INNER}{m.group(2)}("
        return f"{INNER}{m.group(2)}(NULL::INTEGER, "
    out = []
    for name, text in scripts:
        text = _CALL.sub(rename, text)
        for r in ROUTED.values():
            text = fold_sides(text, r)
        out.append((name, text))
    return tuple(out) + (("zz_caller_macros.sql", "".join(dispatch_sql(r) for r in ROUTED.values())),)


def _literal(v) -> str:
    """SQL literal of a JSON value of a macro argument (lists, MAPs given as objects, scalars)."""
    if v is None:
        return "NULL"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return repr(v) if math.isfinite(v) else f"'{v}'::DOUBLE"
    if isinstance(v, str):
        return "'" + v.replace("'", "''") + "'"
    if isinstance(v, list):
        return "[" + ", ".join(_literal(x) for x in v) + "]"
    if isinstance(v, dict):
        return "MAP {" + ", ".join(f"{_literal(k)}: {_literal(x)}" for k, x in v.items()) + "}"
    raise InvalidParameterError(f"cannot pass the argument {v!r} to a macro")


def _bare(name: str) -> str:
    """The unqualified name a caller-side relation is registered under on the cursor."""
    return split_qualified(name.strip())[-1]


def cursor_call(r: Routed, overload: int, args: dict, caller_side: set) -> str:
    """The statement running macro ``r`` on the cursor with ``args`` (JSON values), every
    caller-side relation named by its unqualified name; one JSON value out."""
    params = r.overloads[overload]
    parts = []
    for p in params:
        name, v = _pname(p), args.get(_pname(p))
        if name in r.tables and v in caller_side:
            v = _bare(v)
        elif name in r.lists and isinstance(v, list):
            v = [_bare(t) if t in caller_side else t for t in v]
        parts.append((f"{name} := " if _named(p) else "") + _literal(v))
    call = f"{r.name}({', '.join(parts)})"
    if r.table:
        return f"SELECT to_json(list(__kanon_r)) FROM (FROM {call}) AS __kanon_r"
    return f"SELECT to_json({call})"


def relation_names(r: Routed, args: dict) -> list:
    """The relation names among ``args`` (JSON values of the macro's arguments)."""
    names = [args.get(t) for t in r.tables]
    for t in r.lists:
        names += list(args.get(t) or [])
    return [n for n in names if isinstance(n, str)]


def _handed_over(caller_side: list, what: str) -> tuple:
    """(FROM items reading each caller-side relation in the caller's query, the SQL list of
    them as ``__kanon_caller_eval`` takes it); ``what`` names the macro in errors."""
    bare = [_bare(n) for n in caller_side]
    if len(set(b.lower() for b in bare)) != len(bare):
        raise InvalidParameterError(
            f"{what}: the relations {caller_side} are seen by your connection only and share "
            f"a name; copy one of them under another name")
    froms, rels = [], []
    for j, name in enumerate(caller_side):
        froms.append(f"({handover_sql(caller_table(name))}) AS __kanon_h{j}")
        rels.append(f"{{'name': {_literal(bare[j])}, 'names': __kanon_h{j}.names, "
                    f"'types': __kanon_h{j}.types, 'rows': __kanon_h{j}.rows}}")
    return froms, f"[{', '.join(rels)}]::{REL_TYPE}"


def caller_table(name: str) -> str:
    """The caller-side relation ``name`` read in the caller's query."""
    return f"query_table({_literal(table_name(name))})"


def _evaluated(sql: str, conn: int, rels: str) -> str:
    """SQL of the JSON value ``sql`` gives on a fresh cursor holding the relations ``rels``."""
    return f"CAST(__kanon_caller_eval({_literal(sql)}, {int(conn)}::UBIGINT, {rels}) AS JSON)"


def caller_query(r: Routed, overload: int, args: dict, caller_side: list, conn: int) -> str:
    """The query answering macro ``r`` when the relations ``caller_side`` (names as given) are
    seen by the caller only: each read in the caller's query and handed to
    ``__kanon_caller_eval``, whose JSON answer is cast to ``r.returns``."""
    froms, rels = _handed_over(caller_side, r.name)
    value = _evaluated(cursor_call(r, overload, args, set(caller_side)), conn, rels)
    if r.table:
        return (f"SELECT unnest(__kanon_r) FROM (SELECT unnest(CAST({value} AS {r.returns}[])) "
                f"AS __kanon_r FROM {', '.join(froms)})")
    out = f"json_extract_string({value}, '$')" if r.returns == "VARCHAR" else \
        f"CAST({value} AS {r.returns})"  # a JSON string cast to VARCHAR keeps its quotes
    return f"SELECT {out} FROM {', '.join(froms)}"


def caller_query_error(sql: str, raw: str, anon: str, caller_side: list, raw_from: str,
                       conn: int) -> str:
    """``query_error(sql, raw, anon)`` when ``caller_side`` (some of raw, anon) are seen by the
    caller only. The raw answer runs in the caller's query on ``raw_from`` (SQL after FROM:
    the raw relation as the caller reads it); the estimate needs the anonymized table's run,
    data the binder cannot reach, so it runs on a fresh cursor the caller-side relations are
    handed to (``rewrite.estimate_sql``, the base path's own estimate) and comes back as text
    rows. ``rewrite.comparison_sql`` joins both as on the base path, its output types following
    the raw query alone, so the columns are named and typed at bind time as there."""
    from .rewrite.compare import comparison_sql, raw_half
    raw_sql, keys, measures = raw_half(sql, raw_from)
    froms, rels = _handed_over(caller_side, "query_error")
    here = {n: _bare(n) if n in caller_side else n for n in (raw, anon)}
    cols = [f'"__k{i}"' for i in range(len(keys))] + [f'"__m{j}"' for j in range(len(measures))]
    rows = (f"SELECT to_json(coalesce(list([{', '.join(c + '::VARCHAR' for c in cols)}]), [])) "
            f"FROM query(__kanon_query_estimate_sql({_literal(sql)}, {_literal(here[raw])}, "
            f"{_literal(here[anon])}, {CONN}))")
    est_from = (f"(SELECT unnest(CAST({_evaluated(rows, conn, rels)} AS VARCHAR[][])) AS __v "
                f"FROM {', '.join(froms)}) AS __e")
    n = len(keys)
    return comparison_sql(raw_sql, est_from, [f"__e.__v[{i + 1}]" for i in range(n)],
                          [f"__e.__v[{n + j + 1}]" for j in range(len(measures))], keys, measures)


def parse_args(args_json: str) -> dict:
    """The macro's arguments as the dispatcher passed them (``to_json`` of a STRUCT)."""
    return json.loads(args_json) if args_json else {}


__all__ = ["ROUTED", "Routed", "route_scripts", "dispatch_sql", "caller_query", "cursor_call",
           "caller_query_error", "caller_table",
           "relation_names", "parse_args"]
