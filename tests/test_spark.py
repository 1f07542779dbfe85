"""kanon_duckdb.spark in Spark local[2] (issue 15, item 2), and once (slow) in
local-cluster[2,1,1024] in a subprocess (separate executor JVMs and Python workers).

Skipped with the reason when PySpark or Java is missing, unless CI requires the extra
(``KANON_REQUIRE_EXTRAS`` lists pyspark): then a missing piece fails. One SparkSession for the
module, tiny tables.
"""
import json
import os
import shutil
import subprocess
import sys
from collections import Counter

import pytest

import kanon_duckdb

REQUIRED = "pyspark" in os.environ.get("KANON_REQUIRE_EXTRAS", "").split(",")


if REQUIRED:
    try:
        import pyspark  # noqa: F401
    except ImportError:
        pytest.fail("KANON_REQUIRE_EXTRAS requires pyspark but it is not installed "
                    "(pip install 'kanon-duckdb[spark]')", pytrace=False)
else:
    pytest.importorskip("pyspark", reason="pyspark is not installed "
                        "(pip install 'kanon-duckdb[spark]'; the spark extra, not the test extra)")


def _java_missing() -> str | None:
    java = shutil.which("java")
    if java is None or subprocess.run([java, "-version"], capture_output=True).returncode != 0:
        return "Java is not available (PySpark needs Java 17+)"
    return None


MISSING = _java_missing()
if MISSING:
    if REQUIRED:
        pytest.fail(f"KANON_REQUIRE_EXTRAS requires pyspark but {MISSING}", pytrace=False)
    pytest.skip(MISSING, allow_module_level=True)

from kanon_duckdb.errors import InfeasibleError, InvalidParameterError  # noqa: E402
from kanon_duckdb.spark import k_anonymize  # noqa: E402

QI = ["age", "zip", "sex", "job"]
JOB_TREE = [("nurse", "health"), ("doctor", "health"), ("clerk", "office"), ("manager", "office"),
            ("health", "*"), ("office", "*"), ("*", None)]


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)  # workers: this interpreter
    s = (SparkSession.builder.master("local[2]").appName("kanon-test")
         .config("spark.sql.shuffle.partitions", "4").config("spark.ui.enabled", "false")
         .getOrCreate())
    yield s
    s.stop()


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    c.execute("""CREATE TABLE people AS SELECT i AS id,
        20 + (hash(i) % 50)::INTEGER AS age, (10000 + hash(i + 1) % 90)::BIGINT AS zip,
        ['F', 'M'][1 + (hash(i + 2) % 2)::INTEGER] AS sex,
        ['nurse', 'doctor', 'clerk', 'manager'][1 + (hash(i + 3) % 4)::INTEGER] AS job,
        (hash(i + 4) % 1000)::DOUBLE / 10 AS income
        FROM range(400) t(i)""")
    c.executemany("INSERT INTO kanon_taxonomy VALUES ('job', ?, ?)", JOB_TREE)
    yield c
    c.close()


@pytest.fixture(scope="module")
def df(spark, con):
    return spark.createDataFrame(con.sql("FROM people ORDER BY id").df())


@pytest.fixture(scope="module")
def taxonomy(spark):
    return spark.createDataFrame([("job", c, p) for c, p in JOB_TREE], "attr string, child string, parent string")


def rows_of(out):
    return [r.asDict() for r in out.collect()]


def duck_details(con, rel):
    run = rel.fetchall()[0][list(rel.columns).index("kanon_run")]
    return json.loads(con.execute("SELECT details FROM kanon_runs WHERE run_id = ?", [run])
                      .fetchall()[0][0])


def check_k_and_truth(rows, source, k):
    """Independent check: classes (equal published QI values) hold >= k rows; each row's
    published range / label covers its original value; one output row per input row."""
    assert len(rows) == len(source)
    parents = dict(JOB_TREE)
    ancestors = lambda v: {v, parents.get(v), parents.get(parents.get(v))} - {None}
    key = lambda r: (r["age_min"], r["age_max"], r["zip_min"], r["zip_max"], r["sex"], r["job"])
    sizes = Counter(key(r) for r in rows if not r["suppressed"])
    assert min(sizes.values()) >= k
    by_id = {s["id"]: s for s in source}
    for r in rows:
        s = by_id[r["id"]]
        assert r["age_min"] <= s["age"] <= r["age_max"] and r["zip_min"] <= s["zip"] <= r["zip_max"]
        assert r["sex"] in (s["sex"], "*") and r["job"] in ancestors(s["job"])
        assert r["income"] == s["income"]  # non-QI columns pass through
        assert r["ec_size"] == sum(1 for x in rows if x["ec"] == r["ec"])


def test_single_partition_equals_the_duckdb_path(df, con, taxonomy):
    info = {}
    out = k_anonymize(df, 5, QI, taxonomy=taxonomy, info=info)
    assert info["partitions"] == 1
    duck = con.sql("FROM k_anonymize('people', k := 5, qi := ['age', 'zip', 'sex', 'job'])")
    assert out.columns == [d[0] for d in duck.description]  # the same output shape
    spark_type = {"INTEGER": "int", "BIGINT": "bigint", "DOUBLE": "double", "VARCHAR": "string",
                  "BOOLEAN": "boolean"}  # and types: age_min/age_max keep age's INTEGER
    assert [t for _, t in out.dtypes] == [spark_type[str(t)] for t in duck.types]
    assert dict(out.dtypes)["age_min"] == "int" and dict(out.dtypes)["zip_min"] == "bigint"
    spark_rows = sorted(tuple(v for c, v in r.items() if c != "kanon_run") for r in rows_of(out))
    duck_rows = sorted(tuple(v for c, v in zip(out.columns, r) if c != "kanon_run")
                       for r in duck.fetchall())
    assert spark_rows == duck_rows


def test_multi_partition_is_k_anonymous_and_truthful(df, con, taxonomy):
    info = {}
    out = k_anonymize(df, 4, QI, taxonomy=taxonomy, partition_rows=60, info=info)
    assert info["partitions"] >= 4 and info["levels"] >= 2
    source = [dict(zip(["id", "age", "zip", "sex", "job", "income"], r))
              for r in con.sql("SELECT id, age, zip, sex, job, income FROM people").fetchall()]
    rows = rows_of(out)
    check_k_and_truth(rows, source, 4)
    assert {r["ec"] >> 32 for r in rows} and len({r["ec"] >> 32 for r in rows}) == info["partitions"]
    assert all(r["kanon_run"] is None for r in rows)


def test_partition_log_reports_every_partition_and_at_most_one_compile(df, taxonomy):
    """The worker reports each partition (rows, process, numba compiles); the kernels compile
    at most once on this machine (warm cache: never), not once per worker process or task."""
    info = {}
    out = k_anonymize(df, 4, QI, taxonomy=taxonomy, partition_rows=60, info=info)
    assert out.count() == 400
    log = info["partition_log"].value
    assert len(log) == info["partitions"] and sum(r["rows"] for r in log) == 400
    assert sorted(r["partition"] for r in log) == sorted({r["partition"] for r in log})
    assert sum(r["compile_s"] > 1.0 for r in log) <= 1


@pytest.mark.slow
def test_cold_numba_cache_compiles_in_one_worker_only(spark, df, taxonomy, tmp_path):
    """Workers on an empty numba cache (``NUMBA_CACHE_DIR`` for the executors): one worker
    process compiles under the machine-wide warm-up lock, every other process and task loads
    the kernels from the cache, so the cost is paid once. Measured (shared machine): one
    process 109 compiles / 96 s, the other (waiting on the lock) 1 compile (a float fill its
    slice needed) / 0.0 s, every later partition 0."""
    env = spark.sparkContext.environment
    env["NUMBA_CACHE_DIR"] = str(tmp_path)  # new worker processes (the env is part of their key)
    # several tasks at once (AQE would merge this small shuffle into one task, one process)
    spark.conf.set("spark.sql.adaptive.coalescePartitions.enabled", "false")
    try:
        info = {}
        k_anonymize(df, 4, QI, taxonomy=taxonomy, partition_rows=60, info=info).collect()
    finally:
        del env["NUMBA_CACHE_DIR"]
        spark.conf.unset("spark.sql.adaptive.coalescePartitions.enabled")
    log = info["partition_log"].value
    assert len({r["pid"] for r in log}) >= 2  # two worker processes (local[2])
    # one process compiles the kernels (tens of seconds); the others wait on the lock and load
    # them, compiling at most a specialization their own data needs (a new argument type)
    by_cost = sorted(log, key=lambda r: -r["compile_s"])
    assert by_cost[0]["compile_s"] > 5.0 and by_cost[0]["compiles"] > 20
    assert sum(r["compile_s"] for r in by_cost[1:]) < 0.1 * by_cost[0]["compile_s"]
    assert sum(r["compiles"] for r in by_cost[1:]) <= 3
    assert list(tmp_path.rglob("*.nbi"))  # the kernels went to the shared cache directory


@pytest.mark.slow
def test_clustering_algorithm_runs_per_partition(df, con, taxonomy):
    out = k_anonymize(df, 3, QI, algo="kmember", taxonomy=taxonomy, partition_rows=100)
    source = [dict(zip(["id", "age", "zip", "sex", "job", "income"], r))
              for r in con.sql("SELECT id, age, zip, sex, job, income FROM people").fetchall()]
    check_k_and_truth(rows_of(out), source, 3)


def test_partition_rows_below_two_k_is_refused(df):
    with pytest.raises(InvalidParameterError, match="partition_rows"):
        k_anonymize(df, 5, QI, partition_rows=6)


@pytest.mark.parametrize("algo,extra", [("optimal", {"max_suppression": 0.02}), ("kgen", {}),
                                        ("random", {"max_suppression": 0.05}), ("datafly", {})])
def test_lattice_on_the_spark_histogram_equals_the_duckdb_path(df, con, taxonomy, algo, extra):
    """Same node, same published values, same classes as the DuckDB path, row for row (class
    ids are labels numbered in histogram order: compared as the partition of rows they make)."""
    info = {}
    out = k_anonymize(df, 5, QI, algo=algo, taxonomy=taxonomy, info=info, **extra)
    args = "".join(f", {name} := {value}" for name, value in extra.items())
    duck = con.sql(f"FROM k_anonymize('people', k := 5, qi := ['age', 'zip', 'sex', 'job'], "
                   f"algo := '{algo}'{args})")
    assert out.columns == [d[0] for d in duck.description]
    assert info["histogram_rows"] == con.sql("SELECT count(*) FROM (SELECT DISTINCT age, zip, "
                                             "sex, job FROM people)").fetchall()[0][0]
    spark_rows = rows_of(out)
    duck_rows = [dict(zip(out.columns, r)) for r in duck.fetchall()]
    strip = lambda rows: sorted(tuple(v for c, v in r.items() if c not in ("ec", "kanon_run"))
                                for r in rows)
    assert strip(spark_rows) == strip(duck_rows)
    classes = lambda rows: sorted(sorted(r["id"] for r in rows if r["ec"] == e)
                                  for e in {r["ec"] for r in rows})
    assert classes(spark_rows) == classes(duck_rows)
    assert info["details"]["node"] == duck_details(con, duck)["node"]


@pytest.fixture(scope="module")
def patients(spark):
    """600 rows, a skewed sensitive column (flu 50 %, cold 30 %, hiv 10 %, cancer 10 %) whose
    share varies with age (young rows hold most of the flu), as pandas and Spark."""
    import pandas as pd
    c = kanon_duckdb.connect()
    pdf = c.sql("""SELECT i AS id, 20 + (hash(i) % 50)::INTEGER AS age,
        (10000 + hash(i + 1) % 90)::BIGINT AS zip, ['F', 'M'][1 + (hash(i + 2) % 2)::INTEGER] AS sex,
        ['nurse', 'doctor', 'clerk', 'manager'][1 + (hash(i + 3) % 4)::INTEGER] AS job,
        CASE WHEN (hash(i + 5) % 10) + (CASE WHEN 20 + (hash(i) % 50) < 40 THEN 0 ELSE 2 END) < 5
             THEN 'flu' WHEN hash(i + 5) % 10 < 8 THEN 'cold' WHEN hash(i + 5) % 10 = 8 THEN 'hiv'
             ELSE 'cancer' END AS disease
        FROM range(600) t(i)""").df()
    c.close()
    assert isinstance(pdf, pd.DataFrame)
    return pdf, spark.createDataFrame(pdf)


def published_classes(out):
    """pandas rows of a Spark output, non-suppressed, grouped by their published QI values
    (independent of ec)."""
    pdf = out.toPandas()
    key = ["age_min", "age_max", "zip_min", "zip_max", "sex", "job"]
    return pdf, pdf[~pdf["suppressed"]].groupby(key, dropna=False)


def test_l_diversity_holds_across_partitions(patients, taxonomy):
    source, sdf = patients
    info = {}
    out = k_anonymize(sdf, 4, QI, taxonomy=taxonomy, partition_rows=100, info=info,
                      sensitive="disease", l=3)
    assert info["partitions"] >= 3
    pdf, groups = published_classes(out)
    assert len(pdf) == 600 and sorted(pdf["id"]) == sorted(source["id"])
    assert groups.size().min() >= 4
    assert groups["disease"].nunique().min() >= 3  # distinct 3-diversity, every class
    merged = pdf.merge(source, on="id", suffixes=("", "_src"))
    assert (merged["disease"] == merged["disease_src"]).all()
    assert ((merged["age_min"] <= merged["age"]) & (merged["age"] <= merged["age_max"])).all()
    with pytest.raises(InfeasibleError, match="l=5 is impossible"):  # 4 values in the table
        k_anonymize(sdf, 4, QI, taxonomy=taxonomy, sensitive="disease", l=5)


def test_t_closeness_against_the_global_distribution_across_partitions(patients, taxonomy):
    source, sdf = patients
    info = {}
    t = 0.2
    out = k_anonymize(sdf, 4, QI, taxonomy=taxonomy, partition_rows=100, info=info,
                      sensitive="disease", t=t)
    assert info["partitions"] >= 2
    pdf, groups = published_classes(out)
    assert len(pdf) == 600 and groups.size().min() >= 4
    p_global = source["disease"].value_counts(normalize=True)
    # equal ground distance: EMD = half the L1 distance to the whole table's distribution
    emd = groups["disease"].apply(lambda s: 0.5 * (s.value_counts(normalize=True)
                                                   .reindex(p_global.index, fill_value=0)
                                                   - p_global).abs().sum())
    assert emd.max() <= t + 1e-9
    # the cuts really had to respect t: the young half alone is farther than t from the table
    young = source[source["age"] < 40]["disease"].value_counts(normalize=True)
    assert 0.5 * (young.reindex(p_global.index, fill_value=0) - p_global).abs().sum() > 0.1


def test_lattice_with_l_diversity_equals_the_duckdb_path(patients, taxonomy):
    """The histogram carries the sensitive column: the lattice search enforces l-diversity on
    it as DuckDB does (same node, same published rows)."""
    source, sdf = patients
    info = {}
    out = k_anonymize(sdf, 4, QI, algo="optimal", taxonomy=taxonomy, info=info,
                      sensitive="disease", l=3, max_suppression=0.05)
    c = kanon_duckdb.connect()
    try:
        c.executemany("INSERT INTO kanon_taxonomy VALUES ('job', ?, ?)", JOB_TREE)
        c.register("patients_df", source)
        c.execute("CREATE TABLE patients AS FROM patients_df")
        duck = c.sql("FROM k_anonymize('patients', k := 4, qi := ['age', 'zip', 'sex', 'job'], "
                      "algo := 'optimal', sensitive := 'disease', l := 3, max_suppression := 0.05)")
        duck_rows = [dict(zip(duck.columns, r)) for r in duck.fetchall()]
        assert info["details"]["node"] == duck_details(c, duck)["node"]
    finally:
        c.close()
    spark_rows = rows_of(out)
    strip = lambda rows: sorted(tuple(v for k, v in r.items() if k not in ("ec", "kanon_run"))
                                for r in rows)
    assert strip(spark_rows) == strip(duck_rows)
    pdf, groups = published_classes(out)
    assert groups["disease"].nunique().min() >= 3 and groups.size().min() >= 4


# --- the source changes between the run's reads (issue 15 section 2: "keep the guard that fails
# clearly when the relation changed between the two reads", as ConcurrentChangeError in DuckDB)

CHANGED = "changed between two of its reads"
CHANGES = {  # a file of the source rewritten in place (Spark re-reads it on every action)
    "rows added": lambda t: pa_concat([t, t.slice(0, 7)]),  # copies: tuples the run already saw
    "rows removed": lambda t: t.slice(0, 40),
    "a QI value changed": lambda t: t.set_column(t.column_names.index("age"), "age",
                                                 pa_array([99] + t.column("age").to_pylist()[1:])),
}


def pa_concat(tables):
    import pyarrow as pa
    return pa.concat_tables(tables)


def pa_array(values):
    import pyarrow as pa
    return pa.array(values, pa.int32())


@pytest.fixture
def people_parquet(con, tmp_path):
    """The people table as a Parquet directory of 4 files of 100 rows."""
    import pyarrow.parquet as pq
    table = con.sql("FROM people ORDER BY id").to_arrow_table()
    for i in range(4):
        pq.write_table(table.slice(100 * i, 100), tmp_path / f"part{i}.parquet")
    return tmp_path


@pytest.mark.parametrize("change", list(CHANGES))
@pytest.mark.parametrize("algo", ["mondrian", "optimal",
                                  pytest.param("kmember", marks=pytest.mark.slow)])
def test_a_source_that_changes_before_the_output_is_read_fails_clearly(
        spark, people_parquet, taxonomy, algo, change):
    """Rows added, removed or moved to a new QI tuple in a Parquet file after ``k_anonymize``
    returned: reading the output fails with the guard's error (problem and fix) instead of
    dropping rows (the lattice's inner join did) or publishing partitions that were not
    counted. The same output read while the source is unchanged passes."""
    import pyarrow.parquet as pq
    df = spark.read.parquet(str(people_parquet))
    out = k_anonymize(df, 4, QI, algo=algo, taxonomy=taxonomy, partition_rows=60,
                      **({"max_suppression": 0.05} if algo == "optimal" else {}))
    assert out.count() == 400  # an unchanged source passes the guard (a second read)
    path = people_parquet / "part1.parquet"
    pq.write_table(CHANGES[change](pq.read_table(path)), path)
    with pytest.raises(Exception, match=CHANGED) as err:
        out.collect()
    assert "ConcurrentChangeError" in str(err.value) and "localCheckpoint()" in str(err.value)


def changing_source(spark, con, tmp_path, change_at):
    """A Spark DataFrame of the people table whose ``change_at``-th scan and later ones read
    it with 10 rows fewer (one partition; a counter file counts the scans)."""
    import pyarrow.parquet as pq
    rows = con.sql("FROM people ORDER BY id").to_arrow_table()
    pq.write_table(rows, tmp_path / "rows.parquet")
    pq.write_table(rows.slice(10), tmp_path / "fewer.parquet")
    counter = tmp_path / "scans"
    schema = spark.createDataFrame(con.sql("FROM people LIMIT 1").df()).schema

    def scan(_):
        import pyarrow.parquet as pq
        with open(counter, "a+") as f:
            f.write("x")
            f.seek(0)
            n = len(f.read())
        name = "fewer.parquet" if n >= change_at else "rows.parquet"
        return [tuple(r.values()) for r in pq.read_table(tmp_path / name).to_pylist()]

    return spark.createDataFrame(spark.sparkContext.parallelize([0], 1).flatMap(scan), schema)


@pytest.mark.parametrize("models", [{}, {"sensitive": "income", "l": 2}])
def test_a_source_that_changes_during_the_split_fails_on_the_driver(spark, con, tmp_path,
                                                                    taxonomy, models):
    """The statistics' read and the split's cached read disagree (second scan: 10 rows
    fewer): ``k_anonymize`` itself raises ConcurrentChangeError. With l-diversity the first two
    reads are the sensitive histogram and the statistics."""
    from kanon_duckdb.errors import ConcurrentChangeError
    df = changing_source(spark, con, tmp_path, change_at=2)
    with pytest.raises(ConcurrentChangeError, match=CHANGED + r".*390 rows where 400"):
        k_anonymize(df, 4, QI, taxonomy=taxonomy, partition_rows=60, **models)
    (tmp_path / "steady").mkdir()
    steady = changing_source(spark, con, tmp_path / "steady", change_at=10 ** 6)
    assert k_anonymize(steady, 4, QI, taxonomy=taxonomy, partition_rows=60, **models).count() == 400


def test_the_guard_checks_every_expected_group_and_only_those():
    """A group whose rows all vanished (the cogroup calls it with no rows) and rows of a group
    the run never counted both fail; a matching group passes without the hash columns."""
    import pyarrow as pa

    from kanon_duckdb.errors import ConcurrentChangeError
    from kanon_duckdb.spark._guard import H1, H2, check_group
    rows = pa.table({"g": [3, 3], "v": [1, 2], H1: [5, -7], H2: [1, 1]})
    expected = pa.table({"g": [3], "n": [2], "s1": [-2], "s2": [2]})
    assert check_group(rows, expected, "g", "group").column_names == ["g", "v"]
    with pytest.raises(ConcurrentChangeError, match="group 3: 0 rows where 2 were counted"):
        check_group(rows.slice(0, 0), expected, "g", "group")
    with pytest.raises(ConcurrentChangeError, match="group 3: 2 rows where 0 were counted"):
        check_group(rows, expected.slice(0, 0), "g", "group")
    with pytest.raises(ConcurrentChangeError, match="same 2 rows count but different"):
        check_group(rows.set_column(2, H1, pa.array([5, -6])), expected, "g", "group")


# --- local-cluster mode: separate executor JVMs and Python workers (closer to a real cluster)

CLUSTER_JOB = r'''
import json, os, sys
os.environ["PYSPARK_PYTHON"] = sys.executable
from pyspark.sql import SparkSession
import kanon_duckdb
from kanon_duckdb.spark import k_anonymize
cache, = sys.argv[1:]
spark = (SparkSession.builder.master("local-cluster[2,1,1024]").appName("kanon-cluster")
         .config("spark.executor.memory", "512m").config("spark.ui.enabled", "false")
         .config("spark.executorEnv.NUMBA_CACHE_DIR", cache)
         .config("spark.sql.shuffle.partitions", "4")
         .config("spark.sql.adaptive.coalescePartitions.enabled", "false").getOrCreate())
spark.sparkContext.setLogLevel("ERROR")
con = kanon_duckdb.connect()
source = con.sql("""SELECT i AS id, 20 + (hash(i) % 50)::INTEGER AS age,
    (10000 + hash(i + 1) % 90)::BIGINT AS zip, ['F', 'M'][1 + (hash(i + 2) % 2)::INTEGER] AS sex,
    ['nurse', 'doctor', 'clerk', 'manager'][1 + (hash(i + 3) % 4)::INTEGER] AS job,
    (hash(i + 4) % 1000)::DOUBLE / 10 AS income FROM range(400) t(i)""").df()
info = {}
out = k_anonymize(spark.createDataFrame(source), 4, ["age", "zip", "sex", "job"],
                  partition_rows=60, info=info)
rows = [r.asDict() for r in out.collect()]
log = info["partition_log"].value


def executor_of(pid):
    """The executor JVM (CoarseGrainedExecutorBackend) a Python worker process runs under."""
    while pid > 1:
        with open(f"/proc/{pid}/cmdline") as f:
            if "CoarseGrainedExecutorBackend" in f.read():
                return pid
        with open(f"/proc/{pid}/stat") as f:
            pid = int(f.read().rsplit(")", 1)[1].split()[1])
    return None


executors = {r["pid"]: executor_of(r["pid"]) for r in log}
spark.stop()
print(json.dumps({"rows": rows, "source": source.to_dict("records"), "log": log,
                  "partitions": info["partitions"], "executors": list(executors.values())}))
'''


def spark_home_of_links(tmp_path):
    """A SPARK_HOME of symlinks to pip's pyspark (jars, bin, ...): local-cluster's workers
    write their executors' directories under SPARK_HOME/work, which must not be the install."""
    import pyspark
    real = os.path.dirname(pyspark.__file__)
    if not os.path.exists(os.path.join(real, "bin", "spark-class")):
        pytest.skip("local-cluster mode launches executors through SPARK_HOME/bin/spark-class, "
                    f"which this pyspark install ({real}) lacks; set SPARK_HOME to a Spark "
                    "distribution")
    home = tmp_path / "spark_home"
    home.mkdir()
    for name in os.listdir(real):
        if name != "work":
            os.symlink(os.path.join(real, name), home / name)
    return home


@pytest.mark.slow
def test_local_cluster_executors_share_one_numba_compile(tmp_path):
    """``local-cluster[2,1,1024]``: two executor JVMs, each with its own Python workers, on an
    empty numba cache shared through ``spark.executorEnv.NUMBA_CACHE_DIR``. The output is
    k-anonymous and truthful (independent check), partitions ran under both executors, and
    the warm-up lock let one worker process compile while the other executor's loaded the
    kernels. Works with pip's pyspark (``bin/spark-class`` is in the wheel)."""
    home = spark_home_of_links(tmp_path)
    job = tmp_path / "job.py"
    job.write_text(CLUSTER_JOB)
    cache = tmp_path / "numba_cache"
    env = dict(os.environ, SPARK_HOME=str(home), PYTHONPATH=os.pathsep.join(
        [os.path.dirname(os.path.dirname(os.path.abspath(kanon_duckdb.__file__)))]
        + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]))
    res = subprocess.run([sys.executable, str(job), str(cache)], capture_output=True, text=True,
                         env=env, timeout=1800)
    assert res.returncode == 0, res.stderr[-3000:]
    got = json.loads(res.stdout.strip().splitlines()[-1])
    check_k_and_truth(got["rows"], got["source"], 4)
    log = got["log"]
    assert got["partitions"] >= 4 and len(log) == got["partitions"]
    assert None not in got["executors"] and len(set(got["executors"])) == 2  # both executors
    by_cost = sorted(log, key=lambda r: -r["compile_s"])
    assert by_cost[0]["compiles"] > 20  # one worker process compiled the kernels ...
    assert sum(r["compiles"] for r in by_cost[1:]) <= 3  # ... the rest loaded them
    assert list(cache.rglob("*.nbi"))


@pytest.mark.parametrize("algo, parts, width", [
    ("mondrian", 1, "12,3"), ("mondrian", 60, "12,3"), ("optimal", 1, "12,3"),
    ("mondrian", 1, "38,10"), ("mondrian", 60, "38,10")])
def test_a_decimal_qi_publishes_decimal_bounds_of_its_values(spark, con, algo, parts, width):
    """A DECIMAL(12,3) QI's bounds are DECIMAL(12,3) in Spark too (the schema of the output
    SQL), exactly data values, each row within them compared as Python Decimals; one partition
    equals the DuckDB path's rows. DECIMAL(38,10) near +-10^12: unscaled integers past BIGINT
    (published.split_unscaled's two halves)."""
    con.execute("CREATE OR REPLACE TABLE dec_people AS SELECT id, "
                "((hash(id + 9) % 2000000)::BIGINT - 1000000)::DECIMAL(12,0) / 1000 AS a, sex "
                "FROM people")
    wide = "* 1000000000 + (id % 7) / 10000000000" if width == "38,10" else ""
    con.execute(f"CREATE OR REPLACE TABLE dec_people AS SELECT id, "
                f"(a::DECIMAL({width}){wide})::DECIMAL({width}) AS a, sex FROM dec_people")
    rows = con.execute("SELECT id, a, sex FROM dec_people ORDER BY id").fetchall()
    ddf = spark.createDataFrame(rows, f"id long, a decimal({width}), sex string")
    extra = {} if algo == "mondrian" else {"algo": algo}
    kw = {"partition_rows": parts} if parts > 1 else {}
    out = k_anonymize(ddf, 4, ["a", "sex"], **kw, **extra)
    assert dict(out.dtypes)["a_min"] == f"decimal({width})" == dict(out.dtypes)["a_max"]
    got = rows_of(out)
    src = {r[0]: r[1] for r in rows}
    values = set(src.values())
    assert len(got) == len(rows)
    for r in got:
        if r["a_min"] is not None:
            assert r["a_min"] in values and r["a_max"] in values
            assert r["a_min"] <= src[r["id"]] <= r["a_max"]
    if parts == 1:
        duck = con.sql(f"FROM k_anonymize('dec_people', k := 4, qi := ['a', 'sex']"
                       f"{'' if algo == 'mondrian' else f', algo := {algo!r}'})")
        assert [str(t) for t in duck.types][1:3] == [f"DECIMAL({width})"] * 2
        want = sorted(tuple(v for c, v in zip(duck.columns, r) if c != "kanon_run")
                      for r in duck.fetchall())
        assert sorted(tuple(v for c, v in r.items() if c != "kanon_run") for r in got) == want
