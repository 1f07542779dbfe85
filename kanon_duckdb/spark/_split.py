"""Top levels of the Mondrian partition tree, computed in Spark (exact counts, approximate medians).

Every row gets a coordinate per QI (numeric: its value, NULL below the global minimum;
categorical: its leaf ordinal in the shared tree, NULL -1) and a partition id (``PART``, 0 at
the start). A level handles every partition holding more than ``max_rows`` rows with two
aggregations: (1) count, min, max and ``percentile_approx`` median of each coordinate; (2) for
each coordinate, the exact rows ``<= median`` and ``< median``. The partition is cut on the
widest coordinate (normalized: numeric span / global range; categorical leaf span / leaves of
the tree, as Mondrian's choice) whose cut leaves at least ``k`` rows on both sides (the
more balanced of ``<=`` and ``<``); a partition without such a cut stays whole (the kernel
finishes it). The approximate median only moves the cut: the guarantee rests on the exact
counts. Cost per level: two scans of the coordinates (cached), O(partitions x d) driver work.
"""
from __future__ import annotations

from ._worker import PART

ACCURACY = 10_000  # percentile_approx accuracy: relative rank error about 1 / ACCURACY


def coordinate(j: int) -> str:
    return f"__kanon_x{j}"


def split(sdf, n_rows: int, scales, k: int, max_rows: int, max_levels: int = 40):
    """(DataFrame with the final ``PART`` column, number of partitions, levels run).

    ``sdf`` holds ``coordinate(j)`` for j < len(scales) and ``PART`` = 0; ``scales[j]`` is the
    normalizing width of coordinate j (> 0)."""
    from pyspark import StorageLevel
    from pyspark.sql import functions as F
    d = len(scales)
    xs = [coordinate(j) for j in range(d)]
    counts = {0: n_rows}
    final = set()  # partitions without an allowable cut
    next_id = 1
    cur = sdf.persist(StorageLevel.MEMORY_AND_DISK)
    levels = 0
    for _ in range(max_levels):
        todo = [p for p, c in counts.items() if c > max_rows and c >= 2 * k and p not in final]
        if not todo:
            break
        levels += 1
        sub = cur.where(F.col(PART).isin(todo))
        aggs = [F.count(F.lit(1)).alias("n")]
        for x in xs:
            aggs += [F.min(x).alias(x + "_lo"), F.max(x).alias(x + "_hi"),
                     F.percentile_approx(x, 0.5, ACCURACY).alias(x + "_med")]
        stats = {r[PART]: r for r in sub.groupBy(PART).agg(*aggs).collect()}
        med = {p: [stats[p][x + "_med"] for x in xs] for p in todo}
        side_aggs = []
        for j, x in enumerate(xs):
            m = F.col(PART)
            le = F.lit(None)
            lt = F.lit(None)
            for p in todo:
                le = F.when(m == p, F.col(x) <= F.lit(med[p][j])).otherwise(le)
                lt = F.when(m == p, F.col(x) < F.lit(med[p][j])).otherwise(lt)
            side_aggs += [F.sum(le.cast("long")).alias(f"le{j}"), F.sum(lt.cast("long")).alias(f"lt{j}")]
        sides = {r[PART]: r for r in sub.groupBy(PART).agg(*side_aggs).collect()}
        cuts = {}
        for p in todo:
            n = stats[p]["n"]
            order = sorted(range(d), key=lambda j: -(stats[p][xs[j] + "_hi"] - stats[p][xs[j] + "_lo"])
                           / scales[j])
            for j in order:
                if stats[p][xs[j] + "_hi"] <= stats[p][xs[j] + "_lo"]:
                    break  # this and every narrower coordinate is constant here
                options = [(abs(2 * left - n), strict, left) for strict, left in
                           ((False, sides[p][f"le{j}"] or 0), (True, sides[p][f"lt{j}"] or 0))
                           if left >= k and n - left >= k]
                if options:
                    _, strict, left = min(options)
                    cuts[p] = (j, med[p][j], strict, next_id, next_id + 1, left, n - left)
                    next_id += 2
                    break
        final.update(p for p in todo if p not in cuts)
        if not cuts:
            break
        expr = F.col(PART)
        for p, (j, m_val, strict, a, b, _l, _r) in cuts.items():
            x = F.col(xs[j])
            go_left = x < F.lit(m_val) if strict else x <= F.lit(m_val)
            expr = F.when((F.col(PART) == p) & go_left, F.lit(a)).when(F.col(PART) == p, F.lit(b)) \
                .otherwise(expr)
        nxt = cur.withColumn(PART, expr).persist(StorageLevel.MEMORY_AND_DISK)
        for p, (_j, _m, _s, a, b, left, right) in cuts.items():
            del counts[p]
            counts[a], counts[b] = left, right
        nxt.count()  # materialize before dropping the parent
        cur.unpersist()
        cur = nxt
    return cur, len(counts), levels
