"""k-anonymization of a Spark DataFrame with the package's own kernels (extra ``[spark]``).

``k_anonymize(df, k, qi=[...], algo='mondrian', taxonomy=None, partition_rows=1_000_000,
**params)`` returns a Spark DataFrame with the rows and columns ``FROM k_anonymize(...)`` gives
in DuckDB (the output SQL is the package's ``output_sql``, run per partition): every non-QI
column unchanged, numeric QI ``c`` as ``c_min, c_max``, categorical QI ``c`` as its published
label, then ``ec``, ``ec_size``, ``suppressed``, ``kanon_run`` (NULL: Spark runs are not
recorded in ``kanon_runs``).

How (DESIGN.md, "Beyond one machine"):
1. Shared encodings, computed once in Spark: each numeric QI's global min/max (passed to every
   partition, ``anonymize.with_ranges``) and each categorical QI's tree: the user's
   (``taxonomy``: a Spark DataFrame, DuckDB relation, pyarrow Table or pandas DataFrame of
   ``(attr, child, parent)``, attr = the column name) or a flat tree over the column's distinct
   values. Every partition uses the same trees, so NCP and cut choices match one machine.
2. The top levels of the Mondrian tree in Spark (``_split``: exact counts, approximate medians)
   until every partition has at most ``partition_rows`` rows or no cut keeps ``k`` rows a side.
3. Each partition runs ``algo`` (Mondrian or a clustering algorithm) through
   ``groupBy(...).applyInArrow`` on the executor (``_worker``). numba compiles once per
   machine: a worker process's first partition warms the kernels under a machine-wide lock
   into numba's on-disk cache (``cache=True``; ``spark.executorEnv.NUMBA_CACHE_DIR`` moves it),
   which every other process loads; ``kanon-duckdb warmup`` fills it ahead of time.
   ``info['partition_log'].value`` (after the action) lists per partition its rows, worker
   process, seconds and numba compiles.

Each partition holds >= k rows and every class of its result holds >= k rows, so the union is
k-anonymous; ``max_risk`` raises the class size as in DuckDB. With one partition the output
equals the DuckDB path's. l-diversity and t-closeness (``sensitive=``, ``l=``, ``t=`` ...):
Spark first collects the whole table's histogram of sensitive tuples (the models are checked on
it); a top-level cut is taken only when both sides satisfy the models as wholes (exact counts
per partition and sensitive tuple), and every partition measures t-closeness against the whole
table's distribution (``anonymize(..., sensitive_reference=)``), so every class of the union
satisfies them as on one machine.

Full-domain (lattice) algorithms (``optimal``, ``kgen``, ``random``, ``datafly``) need one node
for the whole table: they run on Spark's histogram of distinct QI tuples collected to the driver
(``_lattice``), every privacy model included, and the rows get their classes by a join in Spark;
the output equals the DuckDB path's (same node, same published values and classes).

Executors need the package installed (``pip install 'kanon-duckdb[spark]'``); in local mode
the driver's copy is used.
"""
from __future__ import annotations

import os
import uuid

from ..errors import InvalidParameterError

__all__ = ["k_anonymize"]

PARTITION_ROWS = 1_000_000


def _pyspark():
    try:
        import pyspark  # noqa: F401
        from pyspark.sql import functions as F
    except ImportError:  # pragma: no cover - depends on the environment
        raise ImportError("kanon_duckdb.spark needs PySpark >= 4.0: pip install 'kanon-duckdb[spark]' "
                          "(and Java 17+)") from None
    return F


def _edges(taxonomy) -> list:
    """(attr, child, parent) tuples of a taxonomy given as a Spark/pandas DataFrame, a DuckDB
    relation or a pyarrow Table (columns attr, child, parent)."""
    if taxonomy is None:
        return []
    if hasattr(taxonomy, "rdd") and hasattr(taxonomy, "collect"):  # Spark DataFrame
        return [(r["attr"], r["child"], r["parent"]) for r in
                taxonomy.select("attr", "child", "parent").collect()]
    if hasattr(taxonomy, "fetchall"):  # DuckDB relation
        return [tuple(r) for r in taxonomy.select("attr, child, parent").fetchall()]
    import pyarrow as pa
    table = taxonomy if isinstance(taxonomy, pa.Table) else pa.Table.from_pandas(taxonomy)
    cols = [table.column(c).to_pylist() for c in ("attr", "child", "parent")]
    return list(zip(*cols))


def _plan(df, qi, numeric, categorical):
    """The QI plan of ``df``'s columns by the package's typing rules (``encoding.plan_qis``)."""
    import duckdb
    from pyspark.sql.pandas.types import to_arrow_schema

    from ..encoding import plan_qis
    from ..relation import resolve_source
    con = duckdb.connect()
    try:
        con.register("spark_df", to_arrow_schema(df.schema).empty_table())
        return plan_qis(con, resolve_source(con, "spark_df", allow_temp=True), qi, numeric,
                        categorical)
    finally:
        con.close()


def _output_schema(df, plan):
    """The Spark schema of the published rows: the package's output SQL over zero rows."""
    import duckdb
    import pyarrow as pa
    from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema

    from ..output_sql import output_sql
    from ..registration import register
    from ..row_values import RUN_REF_TYPE
    con = duckdb.connect()
    try:
        register(con)
        con.register("spark_df", to_arrow_schema(df.schema).empty_table())
        out = con.sql(output_sql(plan, f"CAST(NULL AS {RUN_REF_TYPE})")).limit(0).arrow()
        schema = out.schema if hasattr(out, "schema") else out.read_all().schema
    finally:
        con.close()
    fields = [pa.field(f.name, pa.string()) if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)
              or str(f.type) == "string_view" else f for f in schema]
    arrow = pa.schema(fields)
    return arrow, from_arrow_schema(arrow)


def _models(algorithm, k, params):
    """(class size the top-level cuts must keep: k or ceil(1/max_risk), models, sensitive
    columns as given, t_distance) of the run (``privacy.spec.parse_models``)."""
    from ..privacy.hooks import split_params
    from ..privacy.spec import parse_models
    _algo_params, privacy, _local = split_params(algorithm, params)
    models, sensitive, t_distance = parse_models(privacy, k, algorithm.name)
    return max(int(m.min_class_size) for m in models), models, sensitive, t_distance


def _side_check(df, plan, models, sensitive, t_distance, edges):
    """(``_split.SideCheck``, the whole table's sensitive histogram for the partitions'
    ``sensitive_reference``, the read's ``_guard.Fingerprint``) when a model looks at sensitive
    values (l-diversity, t-closeness), else (None, None, None). ``df`` holds the row hashes
    (``_guard``). One Spark aggregation by sensitive tuple, collected; the models are checked
    on the whole table (InfeasibleError when it already violates them)."""
    import numpy as np
    from pyspark.sql import functions as F

    import kanon_duckdb

    from ..privacy.hooks import sensitive_columns
    from ..privacy.models import TCloseness
    from ..privacy.spec import build_spec
    from . import _guard
    from ._split import SideCheck
    if not any(hasattr(m, "kind") or isinstance(m, TCloseness) for m in models):
        return None, None, None
    cols = sensitive_columns(plan, sensitive, models, [])
    hist = (df.groupBy(*[F.col(f"`{c}`") for c in cols]).agg(F.count(F.lit(1)).alias("__kanon_n"),
                                                             *_guard.sums()[1:]).toArrow())
    counts = hist.column("__kanon_n").to_numpy().astype(np.int64)
    seen = _guard.Fingerprint(int(counts.sum()), *(int(hist.column(f"__kanon_fp_{i}").cast("int64")
                                                       .to_numpy().sum()) for i in (1, 2)))
    values = hist.select(cols)
    con = kanon_duckdb.connect()
    try:
        if edges:
            con.executemany("INSERT INTO kanon_taxonomy VALUES (?, ?, ?)", [list(e) for e in edges])
        spec = build_spec(con, models, cols, t_distance, {c: values.column(c) for c in cols},
                          hist.num_rows, None, counts)
    finally:
        con.close()
    index = {tuple(r[c] for c in cols): i for i, r in enumerate(values.to_pylist())}
    return SideCheck(spec, cols, index), (values, counts), seen


def _partition_log(sc):
    """A Spark accumulator of a list (one dict per partition run, ``_worker``); its ``value``
    is complete after the action that computed the output."""
    from pyspark.accumulators import AccumulatorParam

    class ListParam(AccumulatorParam):  # local: pickled by value, nothing to import remotely
        def zero(self, value):
            return []

        def addInPlace(self, a, b):
            a.extend(b)
            return a

    return sc.accumulator([], ListParam())


def k_anonymize(df, k, qi, algo="mondrian", taxonomy=None, *, numeric=None, categorical=None,
                seed=0, partition_rows=PARTITION_ROWS, info=None, **params):
    """Anonymize the Spark DataFrame ``df`` (see the module docstring); returns a Spark DataFrame.

    ``partition_rows``: largest partition handed to one kernel call (rows); ``info``: a dict
    that receives ``partitions`` and ``levels`` (of the top-level split); ``params``: the
    algorithm's parameters as in SQL (``max_suppression=0.01``, ...). Cost: the split's
    aggregations (two scans per level) plus one shuffle into the partitions.
    """
    F = _pyspark()
    from ..algorithms import get_algorithm
    from ..anonymize import check_k
    from ..taxonomy.tree import build_index
    from . import _guard
    from ._split import coordinate, split
    from ._worker import PART, anonymize_partition
    k = check_k(k)
    if int(partition_rows) < 2 * k:
        raise InvalidParameterError(f"partition_rows={partition_rows} must be at least 2*k={2 * k}")
    algorithm = get_algorithm(algo)
    min_size, models, sensitive, t_distance = _models(algorithm, k, params)
    plan = _plan(df, qi, numeric, categorical)
    if algorithm.family == "lattice":
        from ._lattice import anonymize_lattice
        return anonymize_lattice(df, k, plan, _edges(taxonomy), algorithm, seed, params,
                                 _output_schema(df, plan)[0], int(partition_rows), info)
    all_edges = _edges(taxonomy)
    edges = [e for e in all_edges if e[0] in plan.categorical]
    hashed = df.select("*", *_guard.row_hashes(df))
    check, reference, first = _side_check(hashed, plan, models, sensitive, t_distance, all_edges)
    if check is not None:  # the sensitive columns' trees (hierarchical t-closeness) go along
        edges += [e for e in all_edges if e[0] in check.columns and e[0] not in plan.categorical]
    aggs = [F.count(F.lit(1)).alias("__n"), *_guard.sums()]
    for c in plan.numeric:
        x = F.col(f"`{c}`").cast("double")
        aggs += [F.min(x).alias(f"lo_{c}"), F.max(x).alias(f"hi_{c}")]
    flat = [c for c in plan.categorical if not any(e[0] == c for e in edges)]
    for c in flat:
        aggs.append(F.collect_set(F.col(f"`{c}`").cast("string")).alias(f"v_{c}"))
    g = hashed.agg(*aggs).collect()[0]
    n = int(g["__n"])
    total = _guard.of_row(g)
    if first is not None:
        _guard.check("the statistics' read", total, first)
    check_k(k, n)
    ranges = {c: (g[f"lo_{c}"] if g[f"lo_{c}"] is not None else 0.0,
                  g[f"hi_{c}"] if g[f"hi_{c}"] is not None else 0.0) for c in plan.numeric}
    for c in flat:
        edges += [(c, v, "*") for v in sorted(g[f"v_{c}"])] + [(c, "*", None)]
    # coordinates for the top-level cuts (numeric first, then categorical, as QIData)
    cols, scales = [], []
    for c in plan.numeric:
        lo, hi = ranges[c]
        cols.append(F.coalesce(F.col(f"`{c}`").cast("double"), F.lit(float(lo) - 1.0)))
        scales.append(max(float(hi) - float(lo), 1e-300))
    for c in plan.categorical:
        tree = build_index(c, [(ch, pa_) for a, ch, pa_ in edges if a == c])
        pairs = []
        for label, leaf in tree.leaf_of_label.items():
            if label is not None:
                pairs += [F.lit(label), F.lit(int(leaf))]
        lut = F.create_map(*pairs)
        cols.append(F.coalesce(lut[F.col(f"`{c}`").cast("string")], F.lit(-1)).cast("double"))
        scales.append(float(max(tree.leaf_count, 1)))
    coords = hashed.select("*", *[x.alias(coordinate(j)) for j, x in enumerate(cols)])
    narrow = coords.select(*[coordinate(j) for j in range(len(cols))], _guard.H1, _guard.H2,
                           *[F.col(f"`{c}`") for c in (check.columns if check else [])])
    part, n_parts, levels, prints = split(narrow, total, scales, min_size, int(partition_rows),
                                          check=check)
    parted = coords.withColumn(PART, part)
    arrow_schema, spark_schema = _output_schema(df, plan)
    spec = {"k": k, "algo": algo, "qi": plan.qi, "numeric": plan.numeric or None,
            "categorical": plan.categorical or None, "seed": seed, "params": params,
            "ranges": ranges, "edges": edges, "reference": reference, "token": uuid.uuid4().hex,
            "schema": arrow_schema}
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

    log = _partition_log(df.sparkSession.sparkContext) if info is not None else None

    def run_partition(table, expected):
        import sys
        if root not in sys.path and os.path.isdir(root):
            sys.path.insert(0, root)  # local mode: the driver's copy of the package
        from kanon_duckdb.spark._guard import check_group
        from kanon_duckdb.spark._worker import anonymize_partition as run
        return run(check_group(table, expected, PART, "the output's read of partition"), spec, log)

    del anonymize_partition  # imported above to fail early on the driver when it cannot load
    source_cols = [f"`{c}`" for c in df.columns] + [PART, _guard.H1, _guard.H2]
    if info is not None:
        info.update(partitions=n_parts, levels=levels, partition_log=log)
    expected = _guard.expected_frame(df.sparkSession, PART, prints)
    return (parted.select(*source_cols).groupBy(PART).cogroup(expected.groupBy(PART))
            .applyInArrow(run_partition, spark_schema))
