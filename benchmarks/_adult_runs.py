"""Shared by the Adult benchmark scripts: one timed ``k_anonymize`` statement into ``bench_out``."""
import statistics
import time

LATTICE = ("optimal", "datafly", "kgen", "random")


def timed_run(con, algo: str, k: int, qi: list[str], extra: str, repeat: int) -> float:
    """Median seconds of ``CREATE OR REPLACE TABLE bench_out AS FROM k_anonymize('adult', ...)``
    over ``repeat`` runs; ``extra`` is appended to the arguments (``, name := value ...``); the
    lattice algorithms get the benchmarks' common 2 % suppression and GCP loss."""
    if algo in LATTICE:
        extra += ", max_suppression := 0.02, loss := 'gcp'"
    qi_sql = "[" + ", ".join(f"'{c}'" for c in qi) + "]"
    sql = (f"CREATE OR REPLACE TABLE bench_out AS FROM k_anonymize('adult', k := {k}, "
           f"algo := '{algo}', qi := {qi_sql}{extra})")
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        con.execute(sql)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)
