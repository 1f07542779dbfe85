"""Full-domain (lattice) algorithms on Spark: the search on Spark's histogram, the rows by a join.

1. Spark computes the histogram of distinct (QI, sensitive) tuples with their row counts
   (``groupBy(...).count()``) and a 64-bit key of each QI tuple (``tuple_key``), and the driver
   collects it as Arrow: its size is the distinct tuples, not the rows.
2. The driver runs the package's own path on it (``anonymize.anonymize(..., row_counts=)``: the
   same lattice search, node evaluation by row counts, privacy models and published classes as
   ``k_anonymize`` in DuckDB, which reads the same histogram through its own ``GROUP BY``).
3. Spark joins every row to its class by the tuple key (the driver sends back only (key,
   class): 16 bytes per distinct tuple, not the tuple's values) and to the class's published
   values (``output_sql.published_layout``, broadcast), giving the macro's output shape.
4. Guard (``_guard``): the rows reach the Python workers in buckets of their key, each with the
   count and key sums the histogram gave that bucket; a row whose tuple the histogram did not
   have, or a bucket whose rows differ from it, fails the caller's action with
   ConcurrentChangeError (the source changed between the histogram and the join).

Cost: one Spark aggregation and one join over the rows, the rows once through Arrow; driver
memory and search time grow with the distinct tuples (coarse QIs: small; all-distinct tuples:
as large as the table).
"""
from __future__ import annotations


CLASS = "__kanon_cec"     # class id column of the tuple map and the class table (CLASS_ITEMS)
KEY = "__kanon_tkey"      # 64-bit key of a row's QI tuple (tuple_key)
BUCKET = "__kanon_bucket"  # bucket of the key: the unit of the guard's check on the workers


def histogram_columns(df, plan, algorithm, params: dict) -> list:
    """The QIs and the columns the run also reads (sensitive, column parameters), in ``df``'s
    column order."""
    from ..privacy.spec import parse_sensitive
    wanted = set(plan.qi) | set(parse_sensitive(params.get("sensitive")))
    for name in algorithm.column_params():
        value = params.get(name)
        wanted |= {value} if isinstance(value, str) else set(value or ())
    return [c for c in df.columns if c in wanted]


def tuple_key(plan):
    """Spark column (long): xxhash64 of a row's QI values and their NULL flags (Spark's hash
    skips NULLs, so (NULL, 1) and (1, NULL) would otherwise share a key)."""
    from pyspark.sql import functions as F
    return F.xxhash64(*[x for c in plan.qi for x in (F.col(f"`{c}`"), F.col(f"`{c}`").isNull())])


def _key_halves():
    """The guard's two row hashes from the tuple key: its high (signed) and low 32 bits."""
    from pyspark.sql import functions as F

    from ._guard import H1, H2
    return [F.shiftright(F.col(KEY), 32).alias(H1),
            F.col(KEY).bitwiseAND(F.lit(0xFFFFFFFF)).alias(H2)]


def bucket_prints(keys, counts, buckets: int) -> dict:
    """{bucket: ``_guard.Fingerprint``} the rows of the histogram's tuples make, bucket =
    key mod ``buckets`` (Spark's ``pmod``); int64 exact."""
    import numpy as np

    from ._guard import Fingerprint
    keys = np.asarray(keys, np.int64)
    counts = np.asarray(counts, np.int64)
    b = np.mod(keys, buckets)
    out = []
    for part in (counts, counts * (keys >> 32), counts * (keys & 0xFFFFFFFF)):
        acc = np.zeros(buckets, np.int64)
        np.add.at(acc, b, part)
        out.append(acc)
    return {int(i): Fingerprint(int(out[0][i]), int(out[1][i]), int(out[2][i]))
            for i in np.flatnonzero(out[0])}


def anonymize_lattice(df, k, plan, edges, algorithm, seed, params, arrow_schema,
                      partition_rows, info=None):
    """The published rows of ``df`` (Spark DataFrame of ``arrow_schema``) under ``algorithm``
    (family 'lattice'), computed on the histogram of its QI tuples; the rows pass the guard in
    buckets of about ``partition_rows``. Fills ``info`` with ``partitions`` (1), ``levels``
    (0), ``histogram_rows`` and the run's ``details``."""
    import os

    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    from pyspark.sql import functions as F
    from pyspark.sql.pandas.types import from_arrow_schema

    import kanon_duckdb

    from ..anonymize import anonymize
    from ..encoding import row_key_sql
    from ..errors import DataError
    from ..output_sql import CLASS_ITEMS, published_layout
    from ..relation import resolve_source
    from ..udfs.anonymize import classes_arrow
    from . import _guard

    cols = histogram_columns(df, plan, algorithm, params)
    count = "row_count"  # a source column name the run can take (not reserved), not in cols
    while count.lower() in {c.lower() for c in cols}:
        count = "_" + count
    hist = (df.groupBy(*[F.col(f"`{c}`") for c in cols])
            .agg(F.count(F.lit(1)).alias(count)).withColumn(KEY, tuple_key(plan)).toArrow())
    n_hist = hist.num_rows
    con = kanon_duckdb.connect()
    try:
        if edges:
            con.executemany("INSERT INTO kanon_taxonomy VALUES (?, ?, ?)", [list(e) for e in edges])
        con.register("__kanon_hist", hist.drop_columns([KEY]))  # no reserved name in the run
        con.register("__kanon_histk", hist)
        res = anonymize(con, resolve_source(con, "__kanon_hist", allow_temp=True), k=k,
                        algo=algorithm.name, qi=plan.qi, seed=seed,
                        numeric=plan.numeric or None, categorical=plan.categorical or None,
                        params=dict(params), record=False, row_counts=count)
        # tuple key -> class: the run's row keys are those of the histogram's tuples
        con.register("__kanon_keys", pa.table({
            "__kanon_key": pa.array(res.row_key, pa.uint64()),
            CLASS: pa.array(res.generalized.ec, pa.int64())}))
        tuples = con.sql(f"SELECT {KEY}, min({CLASS}) AS {CLASS}, max({CLASS}) AS __kanon_c2, "
                         f"sum({count})::BIGINT AS __kanon_n FROM __kanon_histk JOIN __kanon_keys "
                         f"ON {row_key_sql(res.plan)} = __kanon_key GROUP BY {KEY}"
                         ).to_arrow_table()
        con.unregister("__kanon_hist")
        con.unregister("__kanon_histk")
        del hist
        cls_cols, layout = published_layout(plan)
        con.register("__kanon_classes", pa.table({"c": classes_arrow(res)}))
        classes = con.sql(f"SELECT {CLASS_ITEMS}{''.join(', ' + x for x in cls_cols)} "
                          f"FROM __kanon_classes").to_arrow_table()
        details = dict(res.partition.info)
        del res
    finally:
        con.close()
    if not np.array_equal(tuples.column(CLASS).to_numpy(), tuples.column("__kanon_c2").to_numpy()):
        raise DataError("kanon_duckdb.spark.k_anonymize: two QI tuples in different classes share "
                        "one 64-bit key (about 1 in 10^6 at 10^7 distinct tuples); add a column "
                        "to the QIs or run it on DuckDB")
    n = int(pc.sum(tuples.column("__kanon_n")).as_py() or 0)
    buckets = max(1, -(-n // int(partition_rows)))
    prints = bucket_prints(tuples.column(KEY).to_numpy(), tuples.column("__kanon_n").to_numpy(),
                           buckets)
    spark = df.sparkSession
    tmap = spark.createDataFrame(tuples.select([KEY, CLASS]))
    del tuples
    cmap = spark.createDataFrame(classes)
    keyed = df.select("*", tuple_key(plan).alias(KEY))
    rows = keyed.join(tmap, KEY, "left").join(F.broadcast(cmap), CLASS, "left")
    refs = dict(layout)
    added = {"ec": F.col(CLASS), "ec_size": F.col("__kanon_csize"),
             "suppressed": F.col("__kanon_csup"), "kanon_run": F.lit(None)}
    spark_schema = from_arrow_schema(arrow_schema)
    out = [(added[f.name] if f.name in added else
            F.col(refs[f.name]) if refs.get(f.name) else keyed[f"`{f.name}`"]).cast(f.dataType)
           .alias(f.name) for f in spark_schema.fields]
    out += [F.pmod(F.col(KEY), F.lit(buckets)).alias(BUCKET), *_key_halves()]
    if info is not None:
        info.update(partitions=1, levels=0, histogram_rows=n_hist, details=details)
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

    def checked(table, expected):
        import sys
        if root not in sys.path and os.path.isdir(root):
            sys.path.insert(0, root)  # local mode: the driver's copy of the package
        from kanon_duckdb.spark._lattice import checked_bucket
        return checked_bucket(table, expected, arrow_schema)

    expected = _guard.expected_frame(spark, BUCKET, prints)
    return (rows.select(*out).groupBy(BUCKET).cogroup(expected.groupBy(BUCKET))
            .applyInArrow(checked, spark_schema))


def checked_bucket(table, expected, arrow_schema):
    """On a worker: a bucket's published rows (``table``, with ``BUCKET`` and the key halves)
    after the guard's checks, as ``arrow_schema``: every row found its tuple in the histogram
    (its class is not NULL) and the bucket's rows make the fingerprint the histogram gave it."""
    from . import _guard
    missing = table.column("ec").null_count
    if missing:
        raise _guard.error(f"the output's read of bucket {table.column(BUCKET)[0].as_py()}",
                           f"{missing:,} rows with QI values the histogram did not have")
    table = _guard.check_group(table, expected, BUCKET, "the output's read of bucket")
    return table.drop_columns([BUCKET]).select(arrow_schema.names).cast(arrow_schema)
