"""Top levels of the Mondrian partition tree, computed in Spark (exact counts, approximate medians).

Every row gets a coordinate per QI (numeric: its value, NULL below the global minimum;
categorical: its leaf ordinal in the shared tree, NULL -1). A level handles every partition
holding more than ``max_rows`` rows: (1) ``percentile_approx`` medians of each coordinate over a
sample (about ``SAMPLE_ROWS`` rows per partition); (2) one exact aggregation: count, min, max
and, per coordinate, the rows ``<= median`` and ``< median``. The partition is cut on the
widest coordinate (normalized: numeric span / global range; categorical leaf span / leaves of
the tree, as Mondrian's choice) whose cut leaves at least ``k`` rows on both sides (the
more balanced of ``<=`` and ``<``); a partition without such a cut stays whole (the kernel
finishes it). The approximate median only moves the cut: the guarantee rests on the exact
counts. A partition is the box of its cuts, so a row's partition is a flat CASE of its
coordinates (``part_of``): only the narrow coordinates are cached, once. Cost per level: one
sampled and one full scan of the cached coordinates, O(partitions x d) driver work.
"""
from __future__ import annotations

from ._worker import PART

ACCURACY = 10_000  # percentile_approx accuracy: relative rank error about 1 / ACCURACY
SAMPLE_ROWS = 50_000  # sampled rows per partition to cut for its medians (rank error ~0.5 %)


def coordinate(j: int) -> str:
    return f"__kanon_x{j}"


class SideCheck:
    """Whether a side of a cut satisfies the privacy models as a whole (l-diversity,
    t-closeness against the whole table), from its exact histogram of sensitive tuples.

    ``spec``: the run's PrivacySpec over the whole table's distinct sensitive tuples
    (``privacy.spec.build_spec``, its ``codes`` one row per tuple); ``columns``: the sensitive
    columns; ``index``: tuple of values -> row of ``spec.codes``."""

    def __init__(self, spec, columns, index):
        self.spec, self.columns, self.index = spec, list(columns), index

    def sides_ok(self, rows, total, left) -> bool:
        """Both sides of a cut satisfy every model: ``rows`` int (t,) tuples of the partition
        (rows of ``spec.codes``), ``total`` / ``left`` their row counts in the partition and on
        the left side. One kernel call over 2t weighted tuples."""
        import dataclasses

        import numpy as np
        t = len(rows)
        sub = dataclasses.replace(self.spec, codes=np.ascontiguousarray(self.spec.codes[np.concatenate([rows, rows])]),
                                  row_w=np.concatenate([left, total - left]).astype(np.float64))
        ec = np.repeat(np.arange(2, dtype=np.int64), t)
        return bool(sub.classes_ok(ec, 2).all())


def split(sdf, total, scales, k: int, max_rows: int, max_levels: int = 40, check=None):
    """(Column: each row's final partition id, number of partitions, levels run, {partition:
    ``_guard.Fingerprint`` of its rows}).

    ``total``: the fingerprint of the whole table from an earlier read (``_guard``); ``sdf``
    also holds the row hashes ``_guard.H1``/``H2``. When levels run, one pass over the cached
    coordinates by final partition gives each partition's fingerprint, and their sum must equal
    ``total`` (else ConcurrentChangeError: the source changed since that read).

    ``sdf`` holds ``coordinate(j)`` for j < len(scales) (and ``check``'s sensitive columns);
    ``scales[j]`` is the normalizing width of coordinate j (> 0). ``check``: a SideCheck when
    the run has l-diversity or t-closeness: a cut is taken only when both sides satisfy them as
    wholes (exact counts per sensitive tuple, one aggregation by partition and tuple).

    Each partition is a box (the cuts from the root), so a row's partition is one flat CASE over
    the boxes of its coordinates: only the narrow ``sdf`` is cached (once), nothing per level.
    A level: medians from a sample of at least about ``SAMPLE_ROWS`` rows per partition to cut,
    then one exact pass (count, min, max, rows ``<=`` / ``<`` the median per coordinate)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    d = len(scales)
    xs = [coordinate(j) for j in range(d)]
    from . import _guard
    counts = {0: total.rows}
    boxes = {0: []}  # partition -> its cuts from the root, as Spark conditions
    final = set()  # partitions without an allowable cut
    next_id = 1
    cached = sdf.persist(StorageLevel.MEMORY_AND_DISK)
    levels = 0
    try:
        for _ in range(max_levels):
            todo = [p for p, c in counts.items() if c > max_rows and c >= 2 * k and p not in final]
            if not todo:
                break
            levels += 1
            sub = cached.select("*", part_of({p: boxes[p] for p in todo}).alias(PART)) \
                .where(F.col(PART).isNotNull())
            fraction = min(1.0, SAMPLE_ROWS / min(counts[p] for p in todo))
            sample = sub.sample(fraction=fraction, seed=levels) if fraction < 1.0 else sub
            med_rows = sample.groupBy(PART).agg(*[
                F.percentile_approx(x, 0.5, ACCURACY).alias(x + "_med") for x in xs]).collect()
            med = {r[PART]: [r[x + "_med"] for x in xs] for r in med_rows}
            final.update(p for p in todo if p not in med)  # no sampled row: rare, left whole
            todo = [p for p in todo if p in med]
            if not todo:
                break
            aggs = [F.count(F.lit(1)).alias("n")]
            for x in xs:
                aggs += [F.min(x).alias(x + "_lo"), F.max(x).alias(x + "_hi")]
            for j, x in enumerate(xs):
                m = F.col(PART)
                le = F.lit(None)
                lt = F.lit(None)
                for p in todo:
                    if med[p][j] is None:
                        continue
                    le = F.when(m == p, F.col(x) <= F.lit(med[p][j])).otherwise(le)
                    lt = F.when(m == p, F.col(x) < F.lit(med[p][j])).otherwise(lt)
                aggs += [F.sum(le.cast("long")).alias(f"le{j}"), F.sum(lt.cast("long")).alias(f"lt{j}")]
            sub = sub.where(F.col(PART).isin(todo))
            if check is None:
                stats = {r[PART]: r for r in sub.groupBy(PART).agg(*aggs).collect()}
                sides, tuples = stats, None
            else:
                stats = {r[PART]: r for r in sub.groupBy(PART).agg(*aggs[:1 + 2 * d]).collect()}
                sides, tuples = _sides_by_tuple(sub, aggs[1 + 2 * d:], check, d)
            cuts = {}
            for p in todo:
                n = stats[p]["n"]
                order = sorted(range(d), key=lambda j: -(stats[p][xs[j] + "_hi"] - stats[p][xs[j] + "_lo"])
                               / scales[j])
                for j in order:
                    if stats[p][xs[j] + "_hi"] <= stats[p][xs[j] + "_lo"]:
                        break  # this and every narrower coordinate is constant here
                    if med[p][j] is None:
                        continue
                    options = [(abs(2 * left - n), strict, left) for strict, left in
                               ((False, sides[p][f"le{j}"] or 0), (True, sides[p][f"lt{j}"] or 0))
                               if left >= k and n - left >= k and (
                                   check is None or check.sides_ok(
                                       tuples[p][0], tuples[p][1],
                                       tuples[p][2][f"{'lt' if strict else 'le'}{j}"]))]
                    if options:
                        _, strict, left = min(options)
                        cuts[p] = (j, med[p][j], strict, next_id, next_id + 1, left, n - left)
                        next_id += 2
                        break
            final.update(p for p in todo if p not in cuts)
            if not cuts:
                break
            for p, (j, m_val, strict, a, b, left, right) in cuts.items():
                x = F.col(xs[j])
                go_left = x < F.lit(m_val) if strict else x <= F.lit(m_val)
                boxes[a], boxes[b] = boxes[p] + [go_left], boxes[p] + [~go_left]
                del counts[p], boxes[p]
                counts[a], counts[b] = left, right
        prints = {0: total}
        if levels:
            part = part_of(boxes)
            prints = {r[PART]: _guard.of_row(r) for r in
                      cached.groupBy(part.alias(PART)).agg(*_guard.sums()).collect()}
            _guard.check("the split's read", sum(prints.values(), _guard.ZERO), total)
            for p, c in counts.items():  # the cache was recomputed from a changed source
                seen = prints.get(p, _guard.ZERO)
                if seen.rows != c:
                    raise _guard.changed(f"the split's partition {p}", seen,
                                         _guard.Fingerprint(c, seen.s1, seen.s2))
    finally:
        cached.unpersist()
    return part_of(boxes), len(counts), levels, prints


def part_of(boxes: dict):
    """Spark column: the id of the box (partition -> list of conditions) holding the row, NULL
    when none does. Boxes are disjoint, so the CASE order does not matter."""
    from functools import reduce

    from pyspark.sql import functions as F
    expr = None
    for p, conds in boxes.items():
        cond = reduce(lambda a, b: a & b, conds) if conds else F.lit(True)
        expr = F.when(cond, F.lit(p)) if expr is None else expr.when(cond, F.lit(p))
    return expr.cast("long")


def _sides_by_tuple(sub, side_aggs, check, d):
    """Side counts per partition (as ``split``'s rows: ``le{j}``, ``lt{j}``) and, per partition,
    (tuple rows of ``check.spec``, row counts, {``le{j}``/``lt{j}``: left counts}) from one
    aggregation by partition and sensitive tuple."""
    import numpy as np
    from pyspark.sql import functions as F
    rows = sub.groupBy(PART, *[F.col(f"`{c}`") for c in check.columns]).agg(
        F.count(F.lit(1)).alias("__kanon_n"), *side_aggs).collect()
    names = [f"{s}{j}" for j in range(d) for s in ("le", "lt")]
    by_part: dict = {}
    for r in rows:
        by_part.setdefault(r[PART], []).append(r)
    sides, tuples = {}, {}
    for p, rs in by_part.items():
        idx = np.array([check.index[tuple(r[c] for c in check.columns)] for r in rs], np.int64)
        total = np.array([r["__kanon_n"] for r in rs], np.int64)
        left = {x: np.array([r[x] or 0 for r in rs], np.int64) for x in names}
        sides[p] = {x: int(v.sum()) for x, v in left.items()}
        tuples[p] = (idx, total, left)
    return sides, tuples
