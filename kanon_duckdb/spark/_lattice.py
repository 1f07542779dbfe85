"""Full-domain (lattice) algorithms on Spark: the search on Spark's histogram, the rows by a join.

1. Spark computes the histogram of distinct (QI, sensitive) tuples with their row counts
   (``groupBy(...).count()``) and the driver collects it (Arrow): its size is the distinct
   tuples, not the rows.
2. The driver runs the package's own path on it (``anonymize.anonymize(..., row_counts=)``: the
   same lattice search, node evaluation by row counts, privacy models and published classes as
   ``k_anonymize`` in DuckDB, which reads the same histogram through its own ``GROUP BY``).
3. Spark joins every row to its tuple's class (null-safe on the QIs) and the class's published
   values (``output_sql.published_layout``, broadcast), giving the macro's output shape.

Cost: one Spark aggregation and one join over the rows; driver memory and search time grow with
the distinct tuples (coarse QIs: small; all-distinct tuples: as large as the table).
"""
from __future__ import annotations

from functools import reduce

CLASS = "__kanon_cec"     # class id column of the tuple map and the class table


def histogram_columns(df, plan, algorithm, params: dict) -> list:
    """The QIs and the columns the run also reads (sensitive, column parameters), in ``df``'s
    column order."""
    from ..privacy.spec import parse_sensitive
    wanted = set(plan.qi) | set(parse_sensitive(params.get("sensitive")))
    for name in algorithm.column_params():
        value = params.get(name)
        wanted |= {value} if isinstance(value, str) else set(value or ())
    return [c for c in df.columns if c in wanted]


def anonymize_lattice(df, k, plan, edges, algorithm, seed, params, spark_schema, info=None):
    """The published rows of ``df`` (Spark DataFrame, ``spark_schema``) under ``algorithm``
    (family 'lattice'), computed on the histogram of its QI tuples; fills ``info`` with
    ``partitions`` (1), ``levels`` (0), ``histogram_rows`` and the run's ``details``."""
    from pyspark.sql import functions as F

    import kanon_duckdb

    from ..anonymize import anonymize
    from ..encoding import row_key_sql
    from ..output_sql import published_layout
    from ..relation import resolve_source
    from ..sqlutil import quote_ident
    from ..udfs.anonymize import classes_arrow
    import pyarrow as pa

    cols = histogram_columns(df, plan, algorithm, params)
    count = "row_count"  # a source column name the run can take (not reserved), not in cols
    while count.lower() in {c.lower() for c in cols}:
        count = "_" + count
    hist = (df.groupBy(*[F.col(f"`{c}`") for c in cols]).agg(F.count(F.lit(1)).alias(count))
            .toArrow())
    con = kanon_duckdb.connect()
    try:
        if edges:
            con.executemany("INSERT INTO kanon_taxonomy VALUES (?, ?, ?)", [list(e) for e in edges])
        con.register("__kanon_hist", hist)
        res = anonymize(con, resolve_source(con, "__kanon_hist", allow_temp=True), k=k,
                        algo=algorithm.name, qi=plan.qi, seed=seed,
                        numeric=plan.numeric or None, categorical=plan.categorical or None,
                        params=dict(params), record=False, row_counts=count)
        # tuple -> class: the run's row keys are those of the histogram's tuples
        con.register("__kanon_keys", pa.table({
            "__kanon_key": pa.array(res.row_key, pa.uint64()),
            CLASS: pa.array(res.generalized.ec, pa.int64())}))
        keys = [f"__kanon_k{i}" for i in range(len(plan.qi))]
        qsel = ", ".join(f"{quote_ident(c)} AS {key}" for c, key in zip(plan.qi, keys))
        tuples = con.sql(f"SELECT DISTINCT {qsel}, {CLASS} FROM __kanon_hist JOIN __kanon_keys "
                         f"ON {row_key_sql(res.plan)} = __kanon_key").to_arrow_table()
        cls_cols, layout = published_layout(plan)
        con.register("__kanon_classes", pa.table({"c": classes_arrow(res)}))
        classes = con.sql(f"SELECT c.ec AS {CLASS}, c.size AS __kanon_csize, "
                          f"c.suppressed AS __kanon_csup{''.join(', ' + x for x in cls_cols)} "
                          f"FROM __kanon_classes").to_arrow_table()
    finally:
        con.close()
    spark = df.sparkSession
    tmap = spark.createDataFrame(tuples)
    cmap = spark.createDataFrame(classes)
    on = reduce(lambda a, b: a & b, [df[f"`{c}`"].eqNullSafe(tmap[key])
                                     for c, key in zip(plan.qi, keys)])
    rows = df.join(tmap, on, "inner").join(F.broadcast(cmap), CLASS)
    refs = dict(layout)
    added = {"ec": F.col(CLASS), "ec_size": F.col("__kanon_csize"),
             "suppressed": F.col("__kanon_csup"), "kanon_run": F.lit(None)}
    out = [(added[f.name] if f.name in added else
            F.col(refs[f.name]) if refs.get(f.name) else df[f"`{f.name}`"]).cast(f.dataType)
           .alias(f.name) for f in spark_schema.fields]
    if info is not None:
        info.update(partitions=1, levels=0, histogram_rows=hist.num_rows,
                    details=dict(res.partition.info))
    return rows.select(*out)
