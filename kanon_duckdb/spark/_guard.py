"""Fail clearly when the source DataFrame changes between the reads of one Spark run.

Spark re-reads a DataFrame's source on every action, and a run reads it more than once: the
statistics / histogram on the driver, the top-level split, and the rows themselves in the
caller's action on the returned DataFrame. A source that changes in between (files added,
rewritten or removed, a table written to) would make the last read disagree with what the run
decided (rows dropped by a join, partitions smaller than counted). As ``k_anonymize`` in DuckDB
(``assignment``: ConcurrentChangeError), the Spark path refuses instead.

Every read computes a fingerprint of the rows it sees inside its own scan: the row count and
two sums of 32-bit row hashes over every column (Spark's Murmur3 ``hash`` and the high half of
``xxhash64``), which do not depend on row order and cannot overflow below 2^32 rows. Later reads
compare theirs with the first; the caller's read compares per group (partition or bucket) in the
Python worker, whose group also carries the expected fingerprint (``cogroup``), so a group that
lost all its rows is caught as well. Cost: two hashes per row per read and two sums.
"""
from __future__ import annotations

from typing import NamedTuple

H1 = "__kanon_h1"  # row hash columns (long) added to the rows the workers receive
H2 = "__kanon_h2"
FIX = ("give it a source that stays fixed while the output is computed (no writer on its files "
       "or table, or a snapshot: df = df.localCheckpoint(), or df.checkpoint() with a checkpoint "
       "directory) and run it again")


class Fingerprint(NamedTuple):
    """Rows seen by a read and the two sums of their row hashes."""
    rows: int
    s1: int
    s2: int

    def __add__(self, other):  # noqa: D105 - element-wise, not tuple concatenation
        return Fingerprint(self.rows + other.rows, self.s1 + other.s1, self.s2 + other.s2)


ZERO = Fingerprint(0, 0, 0)


def row_hashes(df) -> list:
    """Spark columns (long) ``H1``, ``H2``: 32-bit hashes of each row of ``df`` over all its
    columns (maps and variants as JSON: Spark does not hash them)."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import MapType
    cols = []
    for f in df.schema.fields:
        c = F.col(f"`{f.name}`")
        unhashable = isinstance(f.dataType, MapType) or f.dataType.typeName() == "variant"
        cols.append(F.to_json(c) if unhashable else c)
    if not cols:
        cols = [F.lit(0)]
    return [F.hash(*cols).cast("long").alias(H1),
            F.shiftright(F.xxhash64(*cols), 32).alias(H2)]


def sums(h1=None, h2=None, prefix: str = "__kanon_fp") -> list:
    """Aggregate columns ``{prefix}_n``, ``{prefix}_1``, ``{prefix}_2``: the fingerprint of the
    rows aggregated, from the hash columns (default ``H1``/``H2``) or expressions."""
    from pyspark.sql import functions as F
    h1 = F.col(H1) if h1 is None else h1
    h2 = F.col(H2) if h2 is None else h2
    return [F.count(F.lit(1)).alias(f"{prefix}_n"), F.sum(h1).alias(f"{prefix}_1"),
            F.sum(h2).alias(f"{prefix}_2")]


def of_row(row, prefix: str = "__kanon_fp") -> Fingerprint:
    """The fingerprint in a collected row of ``sums`` (NULL sums of no rows are 0)."""
    return Fingerprint(int(row[f"{prefix}_n"] or 0), int(row[f"{prefix}_1"] or 0),
                       int(row[f"{prefix}_2"] or 0))


def of_table(table) -> Fingerprint:
    """The fingerprint of a pyarrow Table holding ``H1`` and ``H2`` (on a worker)."""
    import pyarrow.compute as pc
    return Fingerprint(table.num_rows, int(pc.sum(table.column(H1)).as_py() or 0),
                       int(pc.sum(table.column(H2)).as_py() or 0))


def error(where: str, what: str):
    """The ConcurrentChangeError of a read (``where``) that saw ``what``."""
    from ..errors import ConcurrentChangeError
    return ConcurrentChangeError(
        f"kanon_duckdb.spark.k_anonymize: the source DataFrame changed between two of its reads "
        f"({where}: {what}); its output would drop or misplace rows, so the run stops. To fix: "
        f"{FIX}")


def changed(where: str, seen: Fingerprint, expected: Fingerprint):
    """The ConcurrentChangeError of a read that saw ``seen`` where ``expected`` was counted."""
    return error(where, f"{seen.rows:,} rows where {expected.rows:,} were counted"
                 if seen.rows != expected.rows else
                 f"the same {seen.rows:,} rows count but different row contents")


def check(where: str, seen: Fingerprint, expected: Fingerprint) -> None:
    """Raise ``changed(...)`` unless ``seen == expected``."""
    if seen != expected:
        raise changed(where, seen, expected)


def check_group(table, expected, key: str, where: str):
    """On a worker: ``table`` (a group's rows with ``H1``/``H2``) against ``expected`` (the
    group's row of ``key``, ``n``, ``s1``, ``s2``; empty when the group was not expected);
    returns ``table`` without the hash columns. Raises ConcurrentChangeError on a mismatch."""
    if expected.num_rows:
        want = Fingerprint(*(int(expected.column(c)[0].as_py()) for c in ("n", "s1", "s2")))
        group = expected.column(key)[0].as_py()
    else:
        want, group = ZERO, table.column(key)[0].as_py()
    check(f"{where} {group}", of_table(table), want)
    return table.drop_columns([H1, H2])


def expected_frame(spark, key: str, fingerprints: dict):
    """Spark DataFrame of (``key``, n, s1, s2): the fingerprint each group must show."""
    rows = [(int(g), fp.rows, fp.s1, fp.s2) for g, fp in fingerprints.items()]
    return spark.createDataFrame(rows, f"`{key}` long, n long, s1 long, s2 long")
