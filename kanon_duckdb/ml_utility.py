"""Classifier utility of an anonymized table (optional extra ``kanon-duckdb[ml]``, scikit-learn).

``classification_utility(con, raw_table, anon_table, label)`` trains classifiers on the
anonymized table and tests them on held-out raw rows, next to the same classifiers trained on
the raw rows (the baseline of cof-mondrian-outliers.txt §4.2.5–4.2.6, Figs. 8–11). SQL surface:
``FROM classification_utility('adult', 'adult_k10', 'income')`` (sql/ml_utility.sql).

Train/test split without a row mapping
--------------------------------------
``k_anonymize`` keeps every non-QI column unchanged but does not carry the source row id, so an
anonymized row cannot be matched to its raw row one to one. Instead the split is done on the
*pass-through key*: the tuple of all non-QI columns (label included), which is identical in a raw
row and in its anonymized row. Each distinct key is assigned to the test side when a seeded hash
of its values falls below ``test_fraction``. Rows sharing a key always land on the same side, so

- test set  = raw rows whose key is on the test side,
- train set = anonymized rows (resp. raw rows for the baseline) whose key is on the train side,

and no test record is ever seen in training, in generalized form or otherwise. The hash uses the
sorted rank of each value, so the split depends only on the data and the seed, not on row order.
On Adult (fnlwgt among the non-QI columns) nearly every key is unique and the split is row-level.
When the non-QI columns hold too few distinct keys for a meaningful split (fewer than
``MIN_GROUPS``, e.g. every column but the label is a QI), the function falls back to ``split =
'overlap'``: train on the whole anonymized table and test on a seeded random sample of raw rows,
which leaks the test records' generalized versions into training (reported in the ``split``
column, so the result is never silently optimistic).

Feature encoding (``encoding := 'ordinal'``, the default)
--------------------------------------------------------
One numeric axis per QI, shared by generalized values and raw values:

- numeric QI ``c``: anonymized ``(c_min + c_max) / 2``; raw value as is (a point range). A NULL
  range or NULL value becomes the midpoint of the raw column's range.
- categorical QI ``c``: the leaves of its taxonomy (``kanon_taxonomy``, or the flat tree the
  anonymizer uses when there is none) are numbered depth-first, so every node covers a
  contiguous range of leaf ordinals ``[lo, hi]``; a generalized label is encoded as ``(lo + hi)
  / 2`` and a raw leaf as its ordinal. NULL is encoded as the root's midpoint.
- non-QI, non-label columns (only with ``features := 'all'``): numeric as is, categorical as the
  leaf ordinal of their taxonomy if they have one, else the rank of the value among the sorted
  distinct values.

Features (``features := 'qi'``, the default): the classifiers see only the published QIs, so the
scores measure what anonymization did to them. ``features := 'all'`` adds every other non-label
column, which anonymization leaves untouched: on Adult (fnlwgt, capital gain, hours per week, ...)
they carry much of the signal and hide the effect of anonymization (the README shows both).

``encoding := 'onehot'`` instead spreads each categorical column over one indicator per leaf: a
raw leaf is a one-hot vector, a generalized label puts ``1 / leaves(node)`` on each leaf under it
(the uniform assumption the query-error estimate also makes).

Models (``models``): ``knn`` (5 neighbours, standardized features), ``svm`` (linear SVM,
standardized; Weka's SMO default kernel is linear too), ``rf`` (100 trees), ``nb`` (Gaussian naive
Bayes), ``dt`` (decision tree), ``lr`` (logistic regression). Accuracy is the fraction of test rows
classified correctly; F-measure is the F1 score of the positive class for a binary label (the
class that is rarer in the raw table, e.g. ``>50K`` on Adult), else the macro-averaged F1.
Deterministic for a seed. Suppressed rows of the anonymized table are kept in training (they
are part of the published table, with every QI fully generalized).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .taxonomy.store import read_index, resolve_tree_attr, run_tree_attrs, taxonomy_attrs
from .errors import InvalidParameterError, UnknownObjectError
from .published import bound_columns, qi_layout
from .sqlutil import quote_ident, table_columns
from .taxonomy.tree import flat_index

DEFAULT_MODELS = ("knn", "svm", "rf", "nb")
MODEL_NAMES = ("knn", "svm", "rf", "nb", "dt", "lr")
ENCODINGS = ("ordinal", "onehot")
FEATURES = ("qi", "all")
MIN_GROUPS = 20
# Columns k_anonymize adds; never features.
_ANON_EXTRA = ("ec", "ec_size", "suppressed", "kanon_run")
_NUMERIC_BASES = {"TINYINT", "SMALLINT", "INTEGER", "BIGINT", "HUGEINT", "UTINYINT", "USMALLINT",
                  "UINTEGER", "UBIGINT", "UHUGEINT", "FLOAT", "DOUBLE", "REAL", "DECIMAL"}

RESULT_FIELDS = ("model", "accuracy_anon", "f1_anon", "accuracy_raw", "f1_raw", "n_train",
                 "n_test", "split")


def require_sklearn():
    """Import scikit-learn or raise a clear error naming the extra to install."""
    try:
        import sklearn  # noqa: F401
    except ImportError as exc:  # pragma: no cover - scikit-learn is installed in CI
        raise InvalidParameterError(
            "classification_utility needs scikit-learn; install kanon-duckdb[ml] "
            "(pip install 'kanon-duckdb[ml]')") from exc


def make_model(name: str, seed: int):
    """A fresh, seeded scikit-learn estimator for ``name`` (one of MODEL_NAMES)."""
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import LinearSVC
    from sklearn.tree import DecisionTreeClassifier

    if name == "knn":
        return make_pipeline(StandardScaler(), KNeighborsClassifier(n_neighbors=5, algorithm="brute"))
    if name == "svm":
        return make_pipeline(StandardScaler(), LinearSVC(C=1.0, random_state=seed, max_iter=5000))
    if name == "rf":
        return RandomForestClassifier(n_estimators=100, random_state=seed, n_jobs=-1)
    if name == "nb":
        return GaussianNB()
    if name == "dt":
        return DecisionTreeClassifier(random_state=seed)
    if name == "lr":
        return make_pipeline(StandardScaler(), LogisticRegression(max_iter=2000))
    raise InvalidParameterError(f"unknown model {name!r}; choose from {', '.join(MODEL_NAMES)}")


# --------------------------------------------------------------------------- table layout


@dataclass(frozen=True)
class UtilityPlan:
    raw_sql: str
    anon_sql: str
    label: str
    numeric_qi: list
    categorical_qi: list
    passthrough: list      # non-QI columns, label included, in raw column order
    numeric_pass: set      # pass-through columns with a numeric SQL type
    tree_attrs: dict = None  # column -> kanon_taxonomy attr of its tree (absent: flat tree)


def _columns(con, table_sql):
    cols = table_columns(con, table_sql)
    return [c for c, _ in cols], [t for _, t in cols]


def _qis_from_runs(con, anon_table, anon_cols):
    """(numeric, categorical) QIs of an anonymized table from its run (published.qi_layout),
    or None when the table has no kanon_run column."""
    if "kanon_run" not in anon_cols:
        return None
    layout = qi_layout(con, anon_table)
    return list(layout.num_qi), list(layout.cat_qi)


def plan_utility(con, raw_table, anon_table, label, qi=None) -> UtilityPlan:
    """Resolve the tables, the QIs (``qi`` or the ``kanon_runs`` row of the anonymized table),
    and the pass-through columns. Errors name the missing piece."""
    # tables, views, files; allow_temp: ``con`` is the caller's own connection (Python API) or
    # a reader cursor whose only TEMP objects are the caller's registered ones (the SQL macro)
    from .relation import resolve_source
    raw = resolve_source(con, raw_table, allow_temp=True)
    anon = resolve_source(con, anon_table, allow_temp=True)
    raw_sql, anon_sql = raw.sql, anon.sql
    raw_cols, raw_types = _columns(con, raw_sql)
    anon_cols, _ = _columns(con, anon_sql)
    types = dict(zip(raw_cols, raw_types))
    if qi is not None:
        qi = [qi] if isinstance(qi, str) else list(qi)
        num, cat = [], []
        for c in qi:
            if c not in raw_cols:
                raise UnknownObjectError(f"QI column '{c}' does not exist in table {raw_table!r}")
            if all(b in anon_cols for b in bound_columns(c)):
                num.append(c)
            elif c in anon_cols:
                cat.append(c)
            else:
                raise UnknownObjectError(
                    f"QI '{c}' has neither '{c}_min'/'{c}_max' nor '{c}' in table {anon_table!r}")
    else:
        found = _qis_from_runs(con, anon, anon_cols)
        if found is None:
            raise InvalidParameterError(
                f"cannot tell the quasi-identifiers of {anon_table!r} (no kanon_run column); "
                "pass qi := ['col', ...]")
        num, cat = found
    qis = set(num) | set(cat)
    if label not in raw_cols:
        low = [c for c in raw_cols if c.lower() == str(label).lower()]
        if len(low) != 1:
            raise UnknownObjectError(
                f"label column '{label}' does not exist in table {raw_table!r} "
                f"(columns: {', '.join(raw_cols)})")
        label = low[0]
    if label in qis:
        raise InvalidParameterError(
            f"label '{label}' is a quasi-identifier of {anon_table!r}; the class label must be a "
            "column that anonymization leaves unchanged")
    passthrough = [c for c in raw_cols if c not in qis]
    missing = [c for c in passthrough if c not in anon_cols]
    if missing:
        raise UnknownObjectError(
            f"column(s) {missing} of {raw_table!r} are missing from {anon_table!r}; is it an "
            f"anonymized version of {raw_table!r}?")
    numeric_pass = {c for c in passthrough if types[c].split("(")[0].upper() in _NUMERIC_BASES}
    return UtilityPlan(raw_sql, anon_sql, label, list(num), list(cat), passthrough, numeric_pass,
                       _tree_attrs(con, raw_table, anon_sql, anon_cols, passthrough, list(cat)))


def _tree_attrs(con, raw_table, anon_sql, anon_cols, passthrough, qis) -> dict:
    """Column -> tree attr: for the QIs the run's record (kanon_runs.qi_trees), for the other
    columns (and QIs of a table without a run) the resolution order for the raw table
    (taxonomy.store.resolve_tree_attr)."""
    recorded = None
    if "kanon_run" in anon_cols:
        run = con.sql(f"SELECT max(kanon_run) FROM {anon_sql}").fetchall()[0][0]
        recorded = run_tree_attrs(con, run) if run is not None else None
    attrs, out = taxonomy_attrs(con), {}
    for c in list(passthrough) + list(qis):
        if recorded is not None and c in qis:
            attr = recorded.get(c)
        else:
            attr = resolve_tree_attr(con, c, raw_table, None, attrs)
        if attr is not None:
            out[c] = attr
    return out


def _tree(con, plan, column):
    """The tree of ``column`` per plan.tree_attrs, or None (flat)."""
    attr = (plan.tree_attrs or {}).get(column)
    return read_index(con, attr) if attr is not None else None


def _read(con, plan: UtilityPlan, anon: bool) -> pa.Table:
    sel = []
    for c in plan.passthrough:
        cast = "DOUBLE" if c in plan.numeric_pass else "VARCHAR"
        sel.append(f"CAST({quote_ident(c)} AS {cast}) AS {quote_ident(c)}")
    for c in plan.numeric_qi:
        if anon:
            sel.append(f"CAST({quote_ident(c + '_min')} AS DOUBLE) AS {quote_ident(c + '_min')}")
            sel.append(f"CAST({quote_ident(c + '_max')} AS DOUBLE) AS {quote_ident(c + '_max')}")
        else:
            sel.append(f"TRY_CAST({quote_ident(c)} AS DOUBLE) AS {quote_ident(c)}")
    for c in plan.categorical_qi:
        sel.append(f"CAST({quote_ident(c)} AS VARCHAR) AS {quote_ident(c)}")
    return con.sql(f"SELECT {', '.join(sel)} FROM {plan.anon_sql if anon else plan.raw_sql}"
                   ).to_arrow_table()


# --------------------------------------------------------------------------- split


def _ranks(raw_col: pa.ChunkedArray, anon_col: pa.ChunkedArray):
    """Rank of each value among the sorted distinct values of both columns (NULL -> -1)."""
    both = pa.chunked_array(raw_col.chunks + anon_col.chunks, type=raw_col.type)
    uniq = pc.unique(both).drop_null()
    uniq = uniq.take(pc.array_sort_indices(uniq))
    out = []
    for col in (raw_col, anon_col):
        idx = pc.index_in(col, value_set=uniq)
        out.append(idx.to_numpy(zero_copy_only=False).astype(np.float64))
    return [np.nan_to_num(a, nan=-1.0).astype(np.int64).view(np.uint64) for a in out]


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64 finalizer on uint64 arrays (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        h = h + np.uint64(0x9E3779B97F4A7C15)
        h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return h ^ (h >> np.uint64(31))


def key_hashes(raw: pa.Table, anon: pa.Table, columns, seed: int):
    """Seeded 64-bit hash of each row's pass-through key, for the raw and the anonymized rows."""
    h_raw = np.full(raw.num_rows, np.uint64(seed & 0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
    h_anon = np.full(anon.num_rows, np.uint64(seed & 0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
    h_raw, h_anon = _mix(h_raw), _mix(h_anon)
    for c in columns:
        r_raw, r_anon = _ranks(raw.column(c), anon.column(c))
        h_raw = _mix(h_raw ^ r_raw)
        h_anon = _mix(h_anon ^ r_anon)
    return h_raw, h_anon


def _unit(h: np.ndarray) -> np.ndarray:
    return (h >> np.uint64(11)).astype(np.float64) / float(1 << 53)


# --------------------------------------------------------------------------- encoding




def _label_values(col: pa.ChunkedArray):
    """(distinct values list, index per row into it with -1 for NULL)."""
    enc = pc.dictionary_encode(col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col)
    idx = enc.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
    return enc.dictionary.to_pylist(), idx


def _encode_tree_column(col, tree, attr, onehot: bool, leaves_only: bool):
    """Encode labels of ``tree`` nodes: ordinal midpoint (n, 1) or fractional one-hot (n, L)."""
    values, idx = _label_values(col)
    L = tree.leaf_count
    lo = np.empty(len(values) + 1)
    hi = np.empty(len(values) + 1)
    for i, v in enumerate(values):
        node = tree.node_of_label.get(v)
        if node is None or (leaves_only and v not in tree.leaf_of_label):
            kind = "a leaf" if leaves_only else "a node"
            raise InvalidParameterError(
                f"value '{v}' of column '{attr}' is not {kind} of its taxonomy; the raw and the "
                "anonymized table must use the same kanon_taxonomy tree")
        lo[i], hi[i] = tree.leaf_lo[node], tree.leaf_hi[node]
    lo[-1], hi[-1] = 0, L - 1  # NULL: the root
    lo_r, hi_r = lo[idx], hi[idx]
    if not onehot:
        return ((lo_r + hi_r) / 2.0)[:, None]
    out = np.zeros((len(idx), L))
    leaf = np.arange(L)
    for i in range(len(values) + 1):
        rows = np.nonzero(idx == (i if i < len(values) else -1))[0]
        if rows.size:
            a, b = int(lo[i]), int(hi[i])
            out[np.ix_(rows, leaf[a:b + 1])] = 1.0 / (b - a + 1)
    return out


def _encode_values(col, vocab: list, onehot: bool):
    """Encode a pass-through column by its value's position in ``vocab`` (sorted distinct values):
    ordinal (n, 1) or one-hot (n, len(vocab)); NULL: the middle / 1/len(vocab) everywhere (as the
    root of a one-level tree)."""
    values, idx = _label_values(col)
    L = len(vocab)
    pos = {v: i for i, v in enumerate(vocab)}
    code = np.array([pos[v] for v in values] + [-1], dtype=np.int64)[idx]
    if not onehot:
        return np.where(code >= 0, code, max(L - 1, 0) / 2.0).astype(np.float64)[:, None]
    out = np.zeros((len(idx), L))
    hit = code >= 0
    out[np.nonzero(hit)[0], code[hit]] = 1.0
    out[~hit] = 1.0 / L if L else 0.0
    return out


def _numeric(arr) -> np.ndarray:
    a = arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr
    return a.to_numpy(zero_copy_only=False).astype(np.float64)


def encode_features(con, plan: UtilityPlan, raw: pa.Table, anon: pa.Table, encoding: str,
                    features: str = "qi"):
    """Feature matrices (X_raw, X_anon) on shared axes and their column names; ``features`` 'qi'
    (the QIs only) or 'all' (the QIs and every non-label pass-through column)."""
    onehot = encoding == "onehot"
    xr, xa, names = [], [], []
    features = [c for c in plan.passthrough if c != plan.label] if features == "all" else []
    for c in features:
        if c in plan.numeric_pass:
            r, a = _numeric(raw.column(c)), _numeric(anon.column(c))
            fill = np.nanmean(r) if np.isfinite(r).any() else 0.0
            xr.append(np.where(np.isnan(r), fill, r)[:, None])
            xa.append(np.where(np.isnan(a), fill, a)[:, None])
            names.append(c)
            continue
        tree = None if onehot else _tree(con, plan, c)
        if tree is None:  # never generalized: its values, no tree (a '*' is just a value here)
            vocab = sorted((set(raw.column(c).to_pylist()) | set(anon.column(c).to_pylist())) - {None})
            xr.append(_encode_values(raw.column(c), vocab, onehot))
            xa.append(_encode_values(anon.column(c), vocab, onehot))
            names.extend([c] if not onehot else [f"{c}={v}" for v in vocab])
            continue
        xr.append(_encode_tree_column(raw.column(c), tree, c, onehot, leaves_only=False))
        xa.append(_encode_tree_column(anon.column(c), tree, c, onehot, leaves_only=False))
        names.extend([c] if not onehot else [f"{c}={lab}" for lab in tree.leaf_labels()])
    for c in plan.numeric_qi:
        r = _numeric(raw.column(c))
        lo, hi = _numeric(anon.column(c + "_min")), _numeric(anon.column(c + "_max"))
        finite = r[np.isfinite(r)]
        mid = (finite.min() + finite.max()) / 2.0 if finite.size else 0.0
        a = (lo + hi) / 2.0
        xr.append(np.where(np.isnan(r), mid, r)[:, None])
        xa.append(np.where(np.isnan(a), mid, a)[:, None])
        names.append(c)
    for c in plan.categorical_qi:
        tree = _tree(con, plan, c)
        if tree is None:
            tree = flat_index(c, sorted(set(raw.column(c).to_pylist()) - {None}))
        xr.append(_encode_tree_column(raw.column(c), tree, c, onehot, leaves_only=True))
        xa.append(_encode_tree_column(anon.column(c), tree, c, onehot, leaves_only=False))
        names.extend([c] if not onehot else [f"{c}={lab}" for lab in tree.leaf_labels()])
    if not xr:
        raise InvalidParameterError("no feature columns: the tables hold only the label"
                                    + (" (and features := 'qi' found no QI)" if features == [] else ""))
    return np.hstack(xr), np.hstack(xa), names


# --------------------------------------------------------------------------- evaluation


def _fit_predict(name, seed, X_train, y_train, X_test):
    classes = np.unique(y_train)
    if classes.size == 1:  # a constant training label: every classifier predicts it
        return np.full(X_test.shape[0], classes[0], dtype=object)
    model = make_model(name, seed)
    model.fit(X_train, y_train)
    return model.predict(X_test)


def _scores(y_true, y_pred, positive):
    from sklearn.metrics import accuracy_score, f1_score

    acc = float(accuracy_score(y_true, y_pred))
    if positive is not None:
        f1 = float(f1_score(y_true, y_pred, pos_label=positive, average="binary", zero_division=0))
    else:
        f1 = float(f1_score(y_true, y_pred, average="macro", zero_division=0))
    return acc, f1


def _validate(models, seed, test_fraction, encoding, features="qi"):
    if models is None:
        models = list(DEFAULT_MODELS)
    models = [models] if isinstance(models, str) else list(models)
    if not models:
        raise InvalidParameterError("models is empty; pass e.g. models := ['knn', 'svm', 'rf', 'nb']")
    bad = [m for m in models if m not in MODEL_NAMES]
    if bad:
        raise InvalidParameterError(
            f"unknown model(s) {bad}; choose from {', '.join(MODEL_NAMES)}")
    if test_fraction is None or not (0.0 < float(test_fraction) < 1.0):
        raise InvalidParameterError(f"test_fraction={test_fraction} must be strictly between 0 and 1")
    if encoding not in ENCODINGS:
        raise InvalidParameterError(f"encoding={encoding!r}; choose 'ordinal' or 'onehot'")
    if features not in FEATURES:
        raise InvalidParameterError(f"features={features!r}; choose 'qi' (the published QIs) or "
                                    "'all' (QIs and the other non-label columns)")
    return models, int(seed or 0), float(test_fraction)


def classification_utility(con, raw_table, anon_table, label, models=DEFAULT_MODELS, seed=0,
                           test_fraction=0.3, qi=None, encoding="ordinal", features="qi") -> list:
    """Accuracy and F-measure of classifiers trained on ``anon_table`` vs on ``raw_table``.

    Parameters
    ----------
    con : DuckDB connection (a cursor is fine; TEMP tables are not visible to it).
    raw_table, anon_table : table names; ``anon_table`` is an output of ``k_anonymize`` on
        ``raw_table`` (any subset of its rows, e.g. without suppressed rows, works too).
    label : class column (not a QI).
    models : subset of ('knn', 'svm', 'rf', 'nb', 'dt', 'lr').
    seed : int, drives the split and the seeded models.
    test_fraction : share of pass-through keys (about the share of rows) held out for testing.
    qi : the QIs, when ``anon_table`` has no ``kanon_run`` column to look them up.
    encoding : 'ordinal' (one axis per column, generalized = leaf-range midpoint) or 'onehot'.
    features : 'qi' (default: the published QIs) or 'all' (also the unchanged non-QI columns).

    Returns
    -------
    list of dict, one per model, with keys RESULT_FIELDS: model, accuracy_anon, f1_anon (trained
    on the anonymized rows of the train side), accuracy_raw, f1_raw (trained on the raw rows of
    the train side), n_train, n_test (raw test rows), split ('disjoint' or 'overlap').
    """
    require_sklearn()
    models, seed, test_fraction = _validate(models, seed, test_fraction, encoding, features)
    plan = plan_utility(con, raw_table, anon_table, label, qi)
    raw, anon = _read(con, plan, False), _read(con, plan, True)
    # rows without a label cannot be scored
    raw = raw.filter(pc.is_valid(raw.column(plan.label)))
    anon = anon.filter(pc.is_valid(anon.column(plan.label)))
    if raw.num_rows < 4 or anon.num_rows < 2:
        raise InvalidParameterError(
            f"too few labelled rows to train and test (raw {raw.num_rows}, anonymized {anon.num_rows})")
    X_raw, X_anon, _names = encode_features(con, plan, raw, anon, encoding, features)
    y_raw = np.asarray(raw.column(plan.label).to_pylist(), dtype=object)
    y_anon = np.asarray(anon.column(plan.label).to_pylist(), dtype=object)

    h_raw, h_anon = key_hashes(raw, anon, plan.passthrough, seed)
    test = _unit(h_raw) < test_fraction
    train_anon = _unit(h_anon) >= test_fraction
    n_groups = np.unique(h_raw).size
    split = "disjoint"
    if n_groups < MIN_GROUPS or test.all() or not test.any() or not train_anon.any():
        split = "overlap"
        rng = np.random.default_rng(seed)
        n_test = max(1, min(raw.num_rows - 1, int(round(test_fraction * raw.num_rows))))
        test = np.zeros(raw.num_rows, dtype=bool)
        test[rng.choice(raw.num_rows, size=n_test, replace=False)] = True
        train_anon = np.ones(anon.num_rows, dtype=bool)
    train_raw = ~test

    labels, counts = np.unique(y_raw, return_counts=True)
    positive = None
    if labels.size == 2:
        order = np.lexsort((labels.astype(str), counts))  # rarest; ties -> lexicographically first
        positive = labels[order[0]]
    y_test = y_raw[test]
    out = []
    for name in models:
        pa_ = _fit_predict(name, seed, X_anon[train_anon], y_anon[train_anon], X_raw[test])
        pr_ = _fit_predict(name, seed, X_raw[train_raw], y_raw[train_raw], X_raw[test])
        acc_a, f1_a = _scores(y_test, pa_, positive)
        acc_r, f1_r = _scores(y_test, pr_, positive)
        out.append({"model": name, "accuracy_anon": acc_a, "f1_anon": f1_a, "accuracy_raw": acc_r,
                    "f1_raw": f1_r, "n_train": int(train_anon.sum()), "n_test": int(test.sum()),
                    "split": split})
    return out
