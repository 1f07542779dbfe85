"""Algorithm parameters: one typed declaration per parameter, validated once.

Every ``algo :=`` parameter is a :class:`Param` (name, kind, default, allowed range or choices,
one line of help), declared in :data:`ALGORITHM_PARAMS` below under the algorithms that take it
(:data:`SHARED` holds the ones several take); an algorithm's registry entry picks its list up
with ``declared("name")`` and its ``run`` reads ``params["name"]``, already validated. This
module imports no algorithm code, so registration stays light. :func:`coerce_params` checks every value a caller gives against the
declaration and names the value and the allowed range when it refuses one
(``iterations := -5`` -> "parameter 'iterations' of algo 'kab' must be an integer >= 1, got -5").

The SQL macro ``k_anonymize`` takes every declared parameter by name: its parameter list is
generated from this registry at registration (:func:`render_sql` fills ``/*KANON_PARAMS*/`` and
``/*KANON_PARAM_STRUCT*/`` in ``sql/k_anonymize.sql``), and the values travel to the UDF as one
JSON object, so they keep their SQL types (a LIST stays a list). A call may also pass them
together as ``params := {'iterations': 5}``.

Adding a parameter touches this file only (besides the code that uses it): append it to the
algorithm's entry in ALGORITHM_PARAMS, e.g. for ``kab``::

    Param("patience", "int", 5, lo=1, doc="generations without improvement before stopping")

After ``kanon_duckdb.register(con)`` the new name is accepted by ``k_anonymize``, the Python
API (``kanon_duckdb.anonymize(..., iterations=5)``) and the CLI (``--param iterations=5``).
Kinds: ``int``, ``float``, ``bool``, ``str`` (``choices`` compares case-insensitively),
``column`` (a column of the input, read for the algorithm into ``QIData.extra``) and ``columns``
(a list of such columns; one name is accepted as a list of one).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from .errors import InvalidParameterError
from .objectives import CLUSTER_COSTS, LATTICE_LOSSES

KINDS = ("int", "float", "bool", "str", "column", "columns", "weights")
_TRUE = ("1", "true", "t", "yes", "on")
_FALSE = ("0", "false", "f", "no", "off")

# Names the k_anonymize macro takes itself; no algorithm parameter may reuse them.
RESERVED = ("tbl", "k", "algo", "qi", "seed", "numeric", "categorical", "taxonomies", "params", "named")


@dataclass(frozen=True)
class Param:
    """One algorithm parameter: ``kind`` (see KINDS), ``default``, inclusive bounds ``lo``/``hi``
    (``lo_open``/``hi_open`` make them strict), ``choices`` for ``str``, and a one-line ``doc``."""
    name: str
    kind: str
    default: Any = None
    lo: float | None = None
    hi: float | None = None
    choices: tuple | None = None
    doc: str = ""
    lo_open: bool = False
    hi_open: bool = False

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"Param {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if not self.name.isidentifier() or self.name in RESERVED or self.name.startswith("__"):
            raise ValueError(f"Param name {self.name!r} is not usable as a k_anonymize argument")

    def with_default(self, default) -> Param:
        from dataclasses import replace
        return replace(self, default=default)

    def allowed(self) -> str:
        """The allowed values, in words (used by error messages and kanon_help)."""
        if self.choices:
            return "one of " + ", ".join(repr(c) for c in self.choices)
        word = {"int": "an integer", "float": "a number", "bool": "a boolean", "str": "a string",
                "column": "a column name", "columns": "a list of column names",
                "weights": "a MAP or STRUCT of QI -> weight > 0"}[self.kind]
        if self.lo is not None and self.hi is not None:
            lo_b, hi_b = ("(" if self.lo_open else "["), (")" if self.hi_open else "]")
            return f"{word} in {lo_b}{_num(self.lo)}, {_num(self.hi)}{hi_b}"
        if self.lo is not None:
            return f"{word} {'>' if self.lo_open else '>='} {_num(self.lo)}"
        if self.hi is not None:
            return f"{word} {'<' if self.hi_open else '<='} {_num(self.hi)}"
        return word

    def coerce(self, value, algo: str):
        """The validated value (Python type of the kind); raises InvalidParameterError."""
        def bad():
            return InvalidParameterError(
                f"parameter '{self.name}' of algo '{algo}' must be {self.allowed()}, got {value!r}")
        kind = self.kind
        if isinstance(value, bytes):
            value = value.decode()
        if kind == "bool":
            if isinstance(value, bool):
                return value
            if isinstance(value, (int, float)) and value in (0, 1):
                return bool(value)
            if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
                return value.strip().lower() in _TRUE
            raise bad()
        if kind in ("int", "float"):
            if isinstance(value, bool):
                raise bad()
            num = value
            if isinstance(value, str):
                try:
                    num = float(value.strip())
                except ValueError:
                    raise bad() from None
            if not isinstance(num, (int, float)) or isinstance(num, float) and math.isnan(num):
                raise bad()
            if kind == "int":
                if isinstance(num, float) and (not math.isfinite(num) or num != int(num)):
                    raise bad()
                num = int(num)
            else:
                num = float(num)
            if self.lo is not None and (num < self.lo or (self.lo_open and num == self.lo)):
                raise bad()
            if self.hi is not None and (num > self.hi or (self.hi_open and num == self.hi)):
                raise bad()
            return num
        if kind == "str" or kind == "column":
            if not isinstance(value, str):
                raise bad()
            if self.choices:
                low = value.strip().lower()
                for c in self.choices:
                    if c.lower() == low:
                        return c
                raise bad()
            return value
        if kind == "weights":  # names are checked against the QIs by the orchestrator
            from .objectives import check_weights
            return check_weights(value)
        # columns
        if isinstance(value, str):
            return [value]
        if isinstance(value, (list, tuple)) and value and all(isinstance(v, str) for v in value):
            return list(value)
        raise bad()


def _num(x) -> str:
    return str(int(x)) if float(x).is_integer() else repr(float(x))


# Parameters several algorithms take, declared once.
SHARED: dict[str, Param] = {p.name: p for p in (
    Param("max_suppression", "float", 0.0, lo=0.0, hi=1.0,
          doc="largest fraction of rows that may be suppressed (published fully generalized)"),
    Param("loss", "str", "log", choices=LATTICE_LOSSES,  # declared in kanon_duckdb.objectives
          doc="objective of the lattice search: log (levels), gcp, dm (discernibility)"),
    Param("max_evaluations", "int", 5000, lo=1, doc="lattice nodes the search may evaluate"),
)}
# partition-then-cluster (algorithms/blocks.py) for the quadratic clustering algorithms
_BLOCKS = (Param("partition_above", "int", 50_000, lo=0,
                 doc="above this many rows, cluster inside Mondrian blocks (0 = never)"),
           Param("block_rows", "int", 2_000, lo=2,
                 doc="rows per block of partition-then-cluster (blocks hold block_rows/2 .. "
                     "block_rows rows)"))
_BLACK_HOLE = (Param("stars", "int", 3, lo=1, doc="candidate solutions (stars) in the population"),
               Param("iterations", "int", 10, lo=1, doc="generations of the black-hole search"))

# The parameters of each algorithm (``algo :=`` name -> declarations or SHARED names). This is
# the one place a parameter is declared; the algorithm reads ``params[name]`` (validated).
ALGORITHM_PARAMS: dict[str, tuple] = {
    "mondrian": (),
    "kmember": (
        # default 'random': lowest GCP at every k on Adult and 2-4x faster (README, k-member)
        Param("seed_choice", "str", "random", choices=("furthest", "random"),
              doc="first record of each cluster: random (default), or furthest from the previous"),
        Param("cost", "str", "ncp", choices=CLUSTER_COSTS,
              doc="information loss: ncp, or height (Wang, Liu, Gao Table III)"), *_BLOCKS),
    "oka": _BLOCKS,
    "ika": _BLOCKS,
    "kab": (*_BLACK_HOLE,
            Param("init", "str", "kmember", choices=("kmember", "algorithm1"),
                  doc="initial stars: k-member in Mondrian blocks (default), or the paper's "
                      "Algorithm 1 (NCP clustering of the whole table)"), *_BLOCKS),
    "bha": _BLACK_HOLE + _BLOCKS,
    "info2means": (Param("sensitive", "column", "income",
                         doc="sensitive attribute whose logistic regression weighs the QIs"),
                   *_BLOCKS),
    "cof_mondrian": (
        Param("cof_threshold", "float", 1.5, lo=0.0, lo_open=True,
              doc="COF above which a row is an outlier"),
        Param("cof_neighbors", "int", 10, lo=1, doc="neighbours of the COF chaining distance")),
    "optimal": ("max_suppression", "loss"),
    "kgen": ("max_suppression", "loss",
             Param("population", "int", 100, lo=2, doc="individuals per generation"),
             "max_evaluations",
             Param("crossover_rate", "float", 0.9, lo=0.0, hi=1.0, doc="probability of crossover"),
             Param("mutation_rate", "float", 0.2, lo=0.0, hi=1.0, doc="probability of mutation"),
             Param("horizontal_rate", "float", 0.4, lo=0.0, hi=1.0,
                   doc="share of mutations that are horizontal")),
    "random": ("max_suppression", "loss", "max_evaluations"),
    "datafly": ("max_suppression", "loss"),
    "bottomup": (),
}


# Privacy models beyond k (kanon_duckdb/privacy, issue 13): every algorithm takes these. The
# orchestrator takes them out before the algorithm's own parameters are checked
# (privacy.hooks.split_params) and privacy.spec.parse_models validates them through these Params.
PRIVACY: tuple = (
    Param("sensitive", "columns", None,
          doc="sensitive attribute(s) the models protect: a column or a list of columns"),
    Param("l", "float", None, lo=1.0,
          doc="l-diversity: every class has l well-represented sensitive values"),
    Param("l_variant", "str", None, choices=("distinct", "entropy", "recursive"),
          doc="l-diversity variant (default distinct; recursive needs c)"),
    Param("c", "float", None, lo=0.0, lo_open=True, doc="c of recursive (c,l)-diversity"),
    Param("t", "float", None, lo=0.0, hi=1.0,
          doc="t-closeness: EMD of each class to the table's distribution is at most t"),
    Param("t_distance", "str", None, choices=("equal", "ordered", "hierarchical"),
          doc="ground distance of t-closeness (default ordered for numeric, hierarchical with a "
              "taxonomy, else equal)"),
    Param("max_risk", "float", None, lo=0.0, hi=1.0, lo_open=True,
          doc="highest prosecutor re-identification risk 1/|class| of any record"),
    Param("avg_risk", "float", None, lo=0.0, hi=1.0, lo_open=True,
          doc="highest average prosecutor risk (classes / records)"),
)


# Variants of l-diversity whose l counts sensitive values, so must be a whole number (ARX:
# DistinctLDiversity(String, int l), RecursiveCLDiversity(String, double c, int l)); entropy l
# is exp(entropy), a real number (ARX: EntropyLDiversity(String, double l)).
WHOLE_L_VARIANTS = {"distinct": "distinct l-diversity", "recursive": "recursive (c,l)-diversity"}


def check_l(l: float, variant: str) -> float:
    """``l`` (already a number >= 1, ``PRIVACY``'s declaration) for l-diversity ``variant``:
    an int for the variants in ``WHOLE_L_VARIANTS``, else the float; InvalidParameterError
    naming the value and the fix for a fraction there (l := 2.5 with distinct or recursive), and
    for an infinite l in any variant (no class holds infinitely many / equally frequent values)."""
    if not math.isfinite(l):
        raise InvalidParameterError(
            f"l-diversity needs a finite l (a number of well-represented sensitive values), got "
            f"{_num(l)}; use e.g. l := 2")
    if variant in WHOLE_L_VARIANTS:
        if l != int(l):
            raise InvalidParameterError(
                f"{WHOLE_L_VARIANTS[variant]} needs a whole number l (it counts distinct "
                f"sensitive values), got {_num(l)}; use l := {int(math.floor(l))} or "
                f"{int(math.ceil(l))}, or l_variant := 'entropy', whose l may be a real number")
        return int(l)
    return l


# Parameters of every algorithm's objective (kanon_duckdb.objectives): accepted by every algo.
OBJECTIVE: tuple = (
    Param("weights", "weights", None,
          doc="per-QI weights of the loss and of gcp/total_il/gen_total_il, e.g. "
              "{'age': 2.0, 'sex': 0.5} (default 1 each)"),
)


def declared(algo: str) -> list:
    """The Param declarations of ``algo`` from ALGORITHM_PARAMS (SHARED names resolved)."""
    return [SHARED[p] if isinstance(p, str) else p for p in ALGORITHM_PARAMS.get(algo, ())]


def declare(params) -> dict[str, Param]:
    """Normalize an algorithm's declaration (a list of Param, or {name: default} for SHARED
    names and, for older entries, names whose kind follows from the default) to {name: Param}."""
    out: dict[str, Param] = {}
    if isinstance(params, dict):
        for name, default in params.items():
            if isinstance(default, Param):
                out[name] = default
            elif name in SHARED:
                out[name] = SHARED[name].with_default(default)
            else:
                out[name] = Param(name, _kind_of(default), default)
    else:
        for p in params or ():
            if not isinstance(p, Param):
                raise TypeError(f"algorithm parameters must be Param declarations, got {p!r}")
            out[p.name] = p
    return out


def _kind_of(default) -> str:
    if isinstance(default, bool):
        return "bool"
    if isinstance(default, int):
        return "int"
    if isinstance(default, float):
        return "float"
    if isinstance(default, (list, tuple)):
        return "columns"
    return "str"


def coerce_params(algo, given: dict | None) -> dict:
    """The algorithm's defaults overlaid with the caller's values, each checked against its
    Param (None means "use the default"). Unknown names are refused, naming the valid ones."""
    specs = {**algo.specs, **{p.name: p for p in OBJECTIVE}}
    params = {name: p.default for name, p in specs.items()}
    for name, value in (given or {}).items():
        if value is None:
            continue
        p = specs.get(name)
        if p is None:
            applicable = ", ".join(sorted(specs)) or "none"
            known = all_params()
            where = "" if name in known else " (no algorithm takes it)"
            raise InvalidParameterError(
                f"parameter '{name}' does not apply to algo '{algo.name}'{where}; its parameters: "
                f"{applicable}")
        params[name] = p.coerce(value, algo.name)
    return params


def user_params(algo, given: dict | None) -> dict:
    """The parameters the caller set explicitly (not None), after validation."""
    return {n: v for n, v in coerce_params(algo, {n: v for n, v in (given or {}).items()
                                                  if v is not None}).items()
            if (given or {}).get(n) is not None}


def all_params() -> dict[str, Param]:
    """Every parameter some algorithm takes (first declaration wins). Reads ALGORITHM_PARAMS,
    plus the algorithm registry when it is already loaded (importing it would load numba)."""
    out: dict[str, Param] = {}
    for algo in ALGORITHM_PARAMS:
        for p in declared(algo):
            out.setdefault(p.name, p)
    for p in PRIVACY + OBJECTIVE:
        out.setdefault(p.name, p)
    from . import algorithms
    for a in (algorithms._registry or {}).values():
        for name, p in a.specs.items():
            out.setdefault(name, p)
    return out


def parse_json_params(text) -> dict:
    """The JSON object the k_anonymize macro passes (named arguments and ``params :=``)."""
    if text is None or text == "":
        return {}
    try:
        obj = json.loads(text)
    except ValueError:
        raise InvalidParameterError(f"params must be a STRUCT or MAP of parameter values, got {text!r}") from None
    return as_param_dict(obj)


def mapping_of(obj):
    """A DuckDB MAP serialized as key/value pairs as a dict; any other value unchanged."""
    if isinstance(obj, list) and all(isinstance(e, dict) and set(e) == {"key", "value"} for e in obj):
        return {e["key"]: e["value"] for e in obj}
    return obj


def as_param_dict(obj) -> dict:
    """``params :=`` as a dict: a STRUCT/MAP (JSON object, or MAP key/value pairs), NULL = {}."""
    if obj is None:
        return {}
    obj = mapping_of(obj)
    if not isinstance(obj, dict):
        raise InvalidParameterError(
            f"params must be a STRUCT or MAP such as {{'iterations': 5}}, got {obj!r}")
    return obj


def merge_params(named: dict, together: dict) -> dict:
    """Named arguments (NULL = not given) merged with ``params := {...}``; a name given both
    ways with different values is refused."""
    out = {n: v for n, v in (together or {}).items() if v is not None}
    for n, v in (named or {}).items():
        if v is None:
            continue
        if n in out and out[n] != v:
            raise InvalidParameterError(
                f"parameter '{n}' is given twice ({n} := {v!r} and params := {{'{n}': {out[n]!r}}}); "
                f"give it once")
        out[n] = v
    return out


def render_sql(text: str) -> str:
    """Fill the generated parts of a SQL file: ``/*KANON_PARAMS*/`` becomes ``, "p" := NULL``
    for every declared parameter, ``/*KANON_PARAM_STRUCT*/`` the STRUCT of their values."""
    if "/*KANON_PARAMS*/" not in text:
        return text
    names = list(all_params())
    decl = "".join(f', "{n}" := NULL' for n in names)
    struct = "{" + ", ".join(f"'{n}': \"{n}\"" for n in names) + "}" if names else "NULL"
    return text.replace("/*KANON_PARAMS*/", decl).replace("/*KANON_PARAM_STRUCT*/", struct)
