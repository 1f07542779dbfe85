"""The metric and check macros on a base table vs a TEMP table (kanon_duckdb/caller_macros.py).

One k_anonymize output (mondrian, k=10) of Adult (30,162 rows, the demo's 8 QIs) or of the
synthetic table of bench_mondrian.py (--n rows, 8 QIs) is stored as a base table ``a`` and copied
into a TEMP table ``ta``. For each statement below, timed in turn (interleaved, --repeat rounds,
median CPU seconds user + system of this process and wall seconds; CPU is steadier on a shared
machine):

- inner: the macro's own body (``__kanon_here_<name>(NULL::INTEGER, ...)``), i.e. the
  base-table path without the dispatcher: the baseline;
- base:  the public macro on the base table (dispatcher: one folded UDF call and one query());
- temp:  the public macro on the TEMP table (its rows handed to a cursor as text);
- query_error: a COUNT grouped by a QI, raw = the source table, anonymized = ``a`` vs ``ta``
  (the raw answer runs in the caller's query, the estimate on the cursor).

Peak RSS (VmHWM) is printed after the base rounds and after the TEMP rounds.

    python benchmarks/bench_caller_metrics.py                 # Adult
    flock /tmp/kanon-bench.lock python benchmarks/bench_caller_metrics.py --n 1e6 --repeat 3
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_mondrian import ADULT_DEMO_QI, SYNTH_QI, SYNTH_SQL  # noqa: E402
from bench_relations import cpu_seconds, peak_rss_mb  # noqa: E402


def _stmts(qi):
    q = "[" + ", ".join(f"'{c}'" for c in qi[:3]) + "]"
    return {  # {p}: the inner name's prefix and its side argument, or nothing
        "gcp": "SELECT {p}gcp({s}'{t}')",
        "discernibility": "SELECT {p}discernibility({s}'{t}')",
        "cavg": "SELECT {p}cavg({s}'{t}', 10)",
        "suppression": "SELECT {p}suppression({s}'{t}')",
        "k_anonymity": f"SELECT {{p}}k_anonymity({{s}}'{{t}}', {q})",
    }


def _query_error(qi):
    """query_error of a COUNT grouped by a categorical QI under a range on a numeric one,
    raw = ``{src}`` (a base table), anonymized = ``{t}``."""
    num, cat = (("age", "workclass") if "age" in qi else ("n1", "c1"))
    return (f"SELECT count(*) FROM query_error('SELECT {cat}, count(*) FROM {{src}} WHERE "
            f"{num} > 40 GROUP BY {cat}', '{{src}}', '{{t}}')")


def _time(con, sql, repeat):
    con.sql(sql).fetchall()  # warm (memo, plan caches)
    cpu, wall = [], []
    for _ in range(repeat):
        c0, w0 = cpu_seconds(), time.perf_counter()
        con.sql(sql).fetchall()
        cpu.append(cpu_seconds() - c0)
        wall.append(time.perf_counter() - w0)
    return statistics.median(cpu), statistics.median(wall)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=float, default=0, help="synthetic rows (0: Adult)")
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args(argv)
    import kanon_duckdb
    con = kanon_duckdb.connect()
    if args.n:
        con.execute(SYNTH_SQL.format(n=int(args.n)))
        src, qi = "synth", SYNTH_QI
    else:
        kanon_duckdb.load_example(con, "adult")
        src, qi = "adult", ADULT_DEMO_QI
    qis = "[" + ", ".join(f"'{c}'" for c in qi) + "]"
    con.execute(f"CREATE TABLE a AS FROM k_anonymize('{src}', k := 10, qi := {qis})")
    con.execute("CREATE TEMP TABLE ta AS FROM a")
    n = con.sql("SELECT count(*) FROM a").fetchall()[0][0]
    print(f"table: k_anonymize('{src}', k := 10, mondrian) output, {n} rows x "
          f"{len(con.table('a').columns)} columns; median of {args.repeat} (CPU s / wall s); "
          f"shared machine")
    print(f"{'macro':16} {'inner (before)':>18} {'base (now)':>18} {'base/inner CPU':>15} "
          f"{'TEMP':>18} {'TEMP/base CPU':>14}")
    rows = []
    for name, sql in _stmts(qi).items():
        inner = _time(con, sql.format(p="__kanon_here_", s="NULL::INTEGER, ", t="a"), args.repeat)
        base = _time(con, sql.format(p="", s="", t="a"), args.repeat)
        rows.append((name, sql, inner, base))
    rss_base = peak_rss_mb()
    for name, sql, inner, base in rows:
        temp = _time(con, sql.format(p="", s="", t="ta"), args.repeat)
        print(f"{name:16} {inner[0]:8.4f} /{inner[1]:8.4f} {base[0]:8.4f} /{base[1]:8.4f} "
              f"{base[0] / inner[0]:15.2f} {temp[0]:8.4f} /{temp[1]:8.4f} {temp[0] / base[0]:14.1f}")
    qe = _query_error(qi)
    base, temp = (_time(con, qe.format(src=src, t=t), args.repeat) for t in ("a", "ta"))
    print(f"{'query_error':16} {'-':>18} {base[0]:8.4f} /{base[1]:8.4f} {'-':>15} "
          f"{temp[0]:8.4f} /{temp[1]:8.4f} {temp[0] / base[0]:14.1f}")
    print(f"peak RSS: {rss_base:.0f} MB after the base-table rounds, {peak_rss_mb():.0f} MB "
          f"after the TEMP rounds (query_error last)")
    con.close()


if __name__ == "__main__":
    main()
