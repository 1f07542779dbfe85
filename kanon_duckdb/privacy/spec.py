"""From user parameters to the models of one run and their encoded form for the kernels.

``parse_models(params, k)`` turns ``sensitive, l, l_variant, c, t, t_distance, max_risk,
avg_risk`` into model objects (validated, clear errors); ``build_spec(con, data, ...)`` encodes
the sensitive attribute(s) of the rows and packs everything into a :class:`PrivacySpec`, whose
``packed`` tuple every kernel takes (layout in ``_kernels``).

Value codes per sensitive attribute: 'ordered' sorts the distinct values (NULL first, as the SQL
check orders them); 'equal' uses the distinct values in any order; 'hierarchical' uses the leaf
ordinals of the attribute's taxonomy (``kanon_taxonomy``, attr '<table>.<column>', else the column
name, as for QIs; a NULL leaf under the root when the column holds NULLs).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from ..errors import InfeasibleError, InvalidParameterError, TaxonomyError
from ..params import check_l
from . import _kernels as K
from .models import (
    L_VARIANTS,
    T_DISTANCES,
    AvgRisk,
    KAnonymity,
    MaxRisk,
    RecursiveCLDiversity,
    TCloseness,
)

PRIVACY_PARAMS = ("sensitive", "l", "l_variant", "c", "t", "t_distance", "max_risk", "avg_risk")
EXTRA_KEY = "__kanon_privacy"  # QIData.extra key under which algorithms find the spec


def parse_sensitive(value) -> list:
    """A column name or a list of them (SQL passes lists as their VARCHAR text '[a, b]')."""
    if value is None:
        return []
    if isinstance(value, (list, tuple)):
        names = [str(v) for v in value]
    else:
        s = str(value).strip()
        if s.startswith("[") and s.endswith("]"):
            names = [v.strip().strip("'\"") for v in s[1:-1].split(",")]
        else:
            names = [s]
    names = [n for n in names if n]
    if len(set(names)) != len(names):
        raise InvalidParameterError(f"sensitive lists a column twice: {names}")
    return names


def parse_models(params: dict, k: int, algo: str = "k_anonymize"):
    """(models tuple, sensitive names, t_distance or None) from the privacy parameters, each
    checked against its declaration in ``kanon_duckdb.params.PRIVACY`` (kind, range, choices),
    then against each other, then (``algo`` a registered algorithm) against what that algorithm
    can enforce (``compat.check``)."""
    from ..params import PRIVACY
    decl = {p.name: p for p in PRIVACY}
    given = {n: v for n, v in (params or {}).items() if v is not None}
    sensitive = parse_sensitive(given.pop("sensitive", None))
    vals = {n: decl[n].coerce(v, algo) for n, v in given.items()}
    l, variant, c, t = vals.get("l"), vals.get("l_variant"), vals.get("c"), vals.get("t")
    tdist = vals.get("t_distance")
    models = [KAnonymity(int(k))]
    if variant is not None and l is None:
        raise InvalidParameterError(f"l_variant := '{variant}' needs l := (the diversity)")
    if tdist is not None and t is None:
        raise InvalidParameterError(f"t_distance := '{tdist}' needs t := (the closeness bound)")
    if c is not None and variant != "recursive":
        raise InvalidParameterError("c := applies to l_variant := 'recursive' only")
    if l is not None:
        variant = variant or "distinct"
        if variant == "recursive" and c is None:
            raise InvalidParameterError("l_variant := 'recursive' needs c := (e.g. c := 3)")
        l = check_l(l, variant)
        models.append(RecursiveCLDiversity(c, l) if variant == "recursive"
                      else L_VARIANTS[variant](l))
    if t is not None:
        models.append(TCloseness(t, tdist or "default"))
    if (l is not None or t is not None) and not sensitive:
        raise InvalidParameterError(
            "l := and t := need the sensitive attribute(s): add sensitive := 'column' "
            "(or a list of columns)")
    for name, cls in (("max_risk", MaxRisk), ("avg_risk", AvgRisk)):
        if vals.get(name) is not None:
            models.append(cls(vals[name]))
    _check_algorithm(algo, tuple(models))
    return tuple(models), sensitive, tdist


def _check_algorithm(algo: str, models: tuple) -> None:
    from ..algorithms import get_algorithm, registry
    from . import compat
    try:
        algorithm = get_algorithm(algo)  # imports its family only
    except InvalidParameterError:
        return
    if compat.unmet(algorithm, models):  # the error lists the able algorithms: every family
        compat.check(algorithm, models, registry())


@dataclass
class PrivacySpec:
    """The models of one run with the rows' encoded sensitive values (see ``_kernels``)."""
    models: tuple
    sensitive: list
    distances: list            # ground distance per sensitive attribute (t-closeness)
    codes: np.ndarray          # int32 (n, a)
    val_off: np.ndarray
    p_glob: np.ndarray
    h_parent: np.ndarray
    h_node_off: np.ndarray
    h_leaf: np.ndarray
    h_weight: np.ndarray
    h_order: np.ndarray
    fp: np.ndarray
    ip: np.ndarray
    value_labels: list = field(default_factory=list)  # per attribute: code -> value (messages)
    # float64 (n,): rows each encoded row stands for (a histogram of distinct tuples,
    # QIData.counts); empty = one each
    row_w: np.ndarray = field(default_factory=lambda: np.zeros(0))

    @property
    def min_class_size(self) -> int:
        return int(self.fp[0])

    @property
    def has_class_models(self) -> bool:
        """Some model looks at the sensitive values (l-diversity or t-closeness): the test of
        the kernels' ``has_class_models(P)``, read here without calling a kernel (a cached
        kernel costs ~10 ms to load on a process's first call, and compiling it 0.2 s)."""
        return bool(self.ip[1] > 0 and (self.ip[0] > 0 or self.fp[3] >= 0.0))

    @property
    def scr_cols(self) -> int:
        return int(max(self.p_glob.size, self.h_parent.size) + 1)

    def packed(self) -> tuple:
        return (self.fp, self.ip, self.codes, self.val_off, self.np_t_kind, self.p_glob,
                self.h_parent, self.h_node_off, self.h_leaf, self.h_weight, self.h_order)

    @property
    def np_t_kind(self) -> np.ndarray:
        return np.array([T_DISTANCES.index(d) for d in self.distances], dtype=np.int64)

    def model(self, cls):
        return next((m for m in self.models if isinstance(m, cls)), None)

    def classes_ok(self, ec: np.ndarray, n_classes: int) -> np.ndarray:
        """bool (C,): which classes of ``ec`` satisfy every model. O(n + C * M)."""
        if not self.has_class_models:  # class size alone (K.class_ok's first test), no kernel
            w = self.row_w if self.row_w.size else None  # rows per tuple (histogram runs)
            sizes = np.bincount(np.asarray(ec, dtype=np.int64), weights=w,
                                minlength=n_classes)[:n_classes]
            return (sizes == 0) | (sizes >= self.min_class_size)
        return K.classes_ok(np.ascontiguousarray(ec, dtype=np.int64), int(n_classes),
                            self.packed(), self.scr_cols, self.row_w)

    def subset(self, rows: np.ndarray) -> PrivacySpec:
        """The same models over rows ``rows`` (the table distribution p stays the input's)."""
        import dataclasses
        return dataclasses.replace(self, codes=np.ascontiguousarray(self.codes[rows]),
                                   row_w=self.row_w[rows] if self.row_w.size else self.row_w)

    def describe(self) -> list:
        out = []
        for m in self.models:
            d = m.describe()
            if isinstance(m, TCloseness):
                d["distance"] = dict(zip(self.sensitive, self.distances))
            out.append(d)
        if self.sensitive:
            out.append({"sensitive": list(self.sensitive)})
        return out


def no_models(n: int, k: int = 1) -> PrivacySpec:
    z32 = np.zeros(0, np.int32)
    return PrivacySpec((KAnonymity(k),), [], [], np.zeros((n, 0), np.int32),
                       np.zeros(1, np.int64), np.zeros(0), z32, np.zeros(1, np.int64), z32,
                       np.zeros(0), z32, np.array([float(k), 0.0, 0.0, -1.0]),
                       np.zeros(2, np.int64))


def _is_numeric(arr: pa.Array) -> bool:
    t = arr.type
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _codes_ordered(arr: pa.Array):
    """Codes of the sorted distinct values, NULL first (rank 0 when present)."""
    valid = np.asarray(arr.is_valid())
    vals = arr.to_numpy(zero_copy_only=False)
    if _is_numeric(arr):
        vals = np.where(valid, vals, 0).astype(np.float64)
    uniq, inv = np.unique(vals[valid], return_inverse=True)
    has_null = not valid.all()
    codes = np.zeros(len(arr), dtype=np.int32)
    codes[valid] = inv + (1 if has_null else 0)
    labels = ([None] if has_null else []) + list(uniq.tolist())
    return codes, len(labels), labels


def _codes_equal(arr: pa.Array):
    import pyarrow.compute as pc  # here: the k-only path never needs it (0.05-0.08 s import)
    enc = pc.dictionary_encode(arr)
    m = len(enc.dictionary)
    codes = enc.indices.fill_null(m).to_numpy().astype(np.int32)
    has_null = enc.indices.null_count > 0
    labels = enc.dictionary.to_pylist() + ([None] if has_null else [])
    return codes, m + (1 if has_null else 0), labels


def _codes_tree(arr: pa.Array, tree):
    import pyarrow.compute as pc

    from ..taxonomy.store import validate_coverage
    sarr = arr.cast(pa.string())
    enc = pc.dictionary_encode(sarr)
    values = enc.dictionary.to_pylist()
    idx = enc.indices.fill_null(len(values)).to_numpy()
    counts = np.bincount(idx, minlength=len(values) + 1)
    validate_coverage(tree, zip(values, counts[:-1]))
    if enc.indices.null_count > 0:
        tree = tree.with_null_leaf()
    lut = np.array([tree.leaf_of_label[v] for v in values] + [tree.leaf_of_label.get(None, -1)],
                   dtype=np.int32)
    return lut[idx], tree


def sensitive_tree(con, name: str, table=None):
    """The taxonomy of sensitive column ``name`` ('<table>.<column>', then '<column>'), or None."""
    from ..taxonomy.store import read_tree_of
    return read_tree_of(con, name, table)[1]


def resolve_distance(con, name: str, arr: pa.Array, requested: str | None, table=None) -> str:
    """The ground distance of attribute ``name``: the requested one, else 'ordered' for a
    numeric column, 'hierarchical' when it has a taxonomy, else 'equal'."""
    if requested and requested != "default":
        return requested
    if _is_numeric(arr):
        return "ordered"
    return "hierarchical" if sensitive_tree(con, name, table) is not None else "equal"


def build_spec(con, models: tuple, sensitive: list, t_distance, columns: dict, n: int,
               table=None, counts=None, reference=None) -> PrivacySpec:
    """Encode the sensitive columns (``columns``: name -> Arrow array of the n rows) for
    ``models``; ``counts`` int64 (n,): rows each stands for (QIData.counts), None = one each.
    ``reference``: (pyarrow Table of the whole table's distinct sensitive tuples, int64 row
    count of each) when these rows are one part of a larger table (a Spark partition): value
    codes cover the whole table's values and t-closeness measures against the whole table's
    distribution, as on one machine. Raises when a hierarchical distance has no taxonomy or the
    rows already violate a model (then nothing can satisfy it)."""
    row_w = np.zeros(0) if counts is None else np.asarray(counts, dtype=np.float64)
    n_rows = float(row_w.sum()) if counts is not None else float(n)
    k_min = max(m.min_class_size for m in models if hasattr(m, "min_class_size"))
    lmod = next((m for m in models if hasattr(m, "kind")), None)
    tmod = next((m for m in models if isinstance(m, TCloseness)), None)
    if lmod is None and tmod is None:
        spec = no_models(n, k_min)
        spec.models = models
        spec.sensitive = list(sensitive)
        spec.row_w = row_w
        _check_whole_table(spec, n)  # a risk limit can ask for classes larger than the table
        return spec
    codes = np.zeros((n, len(sensitive)), dtype=np.int32)
    val_off = [0]
    node_off = [0]
    p_parts, parents, leaves, weights, orders, distances, labels = [], [], [], [], [], [], []
    ref_w = None if reference is None else np.asarray(reference[1], dtype=np.float64)
    n_ref = 0 if reference is None else len(ref_w)
    for a, name in enumerate(sensitive):
        arr = columns[name]
        if hasattr(arr, "combine_chunks"):
            arr = arr.combine_chunks()
        if reference is not None:  # the whole table's values first: codes over its domain
            ref = reference[0].column(name).combine_chunks()
            arr = pa.concat_arrays([ref.cast(arr.type) if ref.type != arr.type else ref, arr])
        dist = resolve_distance(con, name, arr, t_distance, table) if tmod is not None else "equal"
        if dist == "hierarchical":
            tree = sensitive_tree(con, name, table)
            if tree is None:
                raise TaxonomyError(
                    f"t_distance := 'hierarchical' needs a taxonomy of the sensitive attribute "
                    f"'{name}' in kanon_taxonomy (attr = '{name}'); add one, or use "
                    f"t_distance := 'equal'")
            c, tree = _codes_tree(arr, tree)
            m = tree.leaf_count
            h = max(tree.height, 1)
            parents.append(tree.parent.astype(np.int32))
            leaves.append(tree.leaf_node.astype(np.int32))
            weights.append(tree.sub_height.astype(np.float64) / h)
            orders.append(np.argsort(-tree.depth, kind="stable").astype(np.int32))
            node_off.append(node_off[-1] + tree.n_nodes)
            labels.append(tree.leaf_labels())
        else:
            c, m, lab = (_codes_ordered if dist == "ordered" else _codes_equal)(arr)
            leaves.append(np.zeros(m, np.int32))
            node_off.append(node_off[-1])
            labels.append(lab)
        if reference is not None:
            p_parts.append(np.bincount(c[:n_ref], weights=ref_w, minlength=m) / ref_w.sum())
            c = c[n_ref:]
        else:
            p_parts.append(np.bincount(c, weights=row_w if row_w.size else None, minlength=m)
                           / n_rows)
        codes[:, a] = c
        val_off.append(val_off[-1] + m)
        distances.append(dist)
    cat = lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)
    fp = np.array([float(k_min), float(lmod.l) if lmod else 0.0,
                   float(getattr(lmod, "c", 0.0)) if lmod else 0.0,
                   float(tmod.t) if tmod else -1.0])
    ip = np.array([lmod.kind if lmod else 0, len(sensitive)], dtype=np.int64)
    spec = PrivacySpec(models, list(sensitive), distances, codes, np.array(val_off, np.int64),
                       cat(p_parts, np.float64), cat(parents, np.int32),
                       np.array(node_off, np.int64), cat(leaves, np.int32),
                       cat(weights, np.float64), cat(orders, np.int32), fp, ip, labels, row_w)
    _check_whole_table(spec, n)
    return spec


def table_values(spec: PrivacySpec, counts: np.ndarray, a: int) -> dict:
    """Model values of one class histogram on attribute a (messages and tests)."""
    P = spec.packed()
    lo, hi = int(spec.val_off[a]), int(spec.val_off[a + 1])
    n = float(counts[lo:hi].sum())
    scr = np.empty((4, spec.scr_cols))
    out = {"distinct": int(K.distinct_l(counts, lo, hi)), "entropy": float(K.entropy_l(counts, lo, hi))}
    rec = spec.model(RecursiveCLDiversity)
    if rec is not None:
        out["recursive"] = int(K.recursive_l(counts, lo, hi, float(rec.c), scr[3]))
    out["emd"] = float(K.emd_of(counts, a, n, P, scr)) if n > 0 else 0.0
    return out


def _check_whole_table(spec: PrivacySpec, n: int) -> None:
    """The table as one class must satisfy every model, else no generalization can."""
    ok = spec.classes_ok(np.zeros(n, dtype=np.int64), 1)
    if ok[0]:
        return
    lmod = next((m for m in spec.models if hasattr(m, "kind")), None)
    if lmod is not None:
        h = K.class_hist(np.zeros(n, dtype=np.int64), 1, spec.packed(), spec.row_w)[0]
        for a, name in enumerate(spec.sensitive):
            have = table_values(spec, h, a)[{1: "distinct", 2: "entropy", 3: "recursive"}[lmod.kind]]
            if have < lmod.l * (1 - K.EPS):
                raise InfeasibleError(
                    f"{lmod.describe()['model']} with l={lmod.l:g} is impossible: the whole table "
                    f"reaches only l={have:.4g} on sensitive attribute '{name}' (every class would "
                    f"be less diverse); lower l")
    n_rows = int(spec.row_w.sum()) if spec.row_w.size else n
    if n_rows < spec.min_class_size:
        raise InfeasibleError(
            f"the models need classes of at least {spec.min_class_size} rows but the table has "
            f"{n_rows}; relax k / max_risk / avg_risk / l")
    raise InfeasibleError("the whole table violates the requested privacy models; relax them")
