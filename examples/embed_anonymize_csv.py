"""Embed kanon-duckdb in an application: anonymize a CSV file and report utility.

    python examples/embed_anonymize_csv.py people.csv --k 5 --qi age,zip,sex --out people_k5.parquet

Without arguments it writes a small synthetic CSV first and anonymizes that.
"""
from __future__ import annotations

import argparse
import os
import tempfile

import kanon_duckdb
from kanon_duckdb.sqlutil import quote_ident


def anonymize_csv(path: str, k: int, qi: list, out: str, algo: str = "mondrian") -> dict:
    con = kanon_duckdb.connect()          # in-memory DuckDB with everything registered
    try:
        con.execute("CREATE TABLE src AS FROM read_csv(?)", [path])
        qi_sql = "[" + ", ".join("'" + q.replace("'", "''") + "'" for q in qi) + "]"
        algo_sql = "'" + algo.replace("'", "''") + "'"
        con.execute(f"CREATE TABLE anon AS FROM k_anonymize('src', k := {int(k)}, "
                    f"algo := {algo_sql}, qi := {qi_sql})")
        con.execute("COPY (SELECT * EXCLUDE (kanon_run) FROM anon ORDER BY ec) TO "
                    + "'" + out.replace("'", "''") + "'")
        gcp, dm, smallest, n = con.execute(
            "SELECT gcp('anon'), discernibility('anon'), min(ec_size), count(*) FROM anon").fetchall()[0]
        return {"rows": n, "smallest_class": smallest, "gcp": gcp, "dm": dm,
                "columns": [r[0] for r in con.execute(f"DESCRIBE {quote_ident('anon')}").fetchall()]}
    finally:
        con.close()


def _demo_csv(directory: str) -> str:
    path = os.path.join(directory, "people.csv")
    with open(path, "w") as f:
        f.write("id,age,zip,sex,diagnosis\n")
        for i in range(500):
            f.write(f"{i},{18 + (i * 7) % 60},{10000 + (i * 13) % 200},{'MF'[i % 2]},"
                    f"{['flu', 'cold', 'none'][i % 3]}\n")
    return path


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("csv", nargs="?")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--qi", default="age,zip,sex")
    p.add_argument("--algo", default="mondrian")
    p.add_argument("--out")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        src = a.csv or _demo_csv(tmp)
        out = a.out or os.path.join(tmp, "anonymized.parquet")
        res = anonymize_csv(src, a.k, a.qi.split(","), out, a.algo)
        print(f"{res['rows']} rows -> {out}: smallest class {res['smallest_class']} (k={a.k}), "
              f"GCP {100 * res['gcp']:.2f} %, DM {res['dm']}")
        print("columns:", ", ".join(res["columns"]))


if __name__ == "__main__":
    main()
