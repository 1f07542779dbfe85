"""A pandas application: anonymize a DataFrame, keep working in pandas.

    python examples/pandas_app.py

kanon_duckdb.anonymize takes the DataFrame as it is (no table to create) and returns a DuckDB
relation; ``.df()`` turns it back into a DataFrame (``.pl()``, ``.arrow()``, ``.write_parquet()``
work too). The run is recorded in kanon_runs of the connection used. In SQL, a DataFrame
registered on the connection (``con.register('people', df)``) is read by name.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

import kanon_duckdb


def make_people(n: int = 5000, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame({
        "person_id": np.arange(n),
        "age": rng.integers(18, 90, n),
        "zip": [f"8{z:04d}" for z in rng.integers(0, 60, n)],
        "sex": rng.choice(["F", "M"], n),
        "income": rng.normal(50_000, 15_000, n).round(2),
    })


def main() -> None:
    people = make_people()
    con = kanon_duckdb.connect()
    try:
        anon = kanon_duckdb.anonymize(people, k=10, qi=["age", "zip", "sex"], con=con)
        out = anon.df()
        print(out.head())
        print(f"rows {len(out)}, smallest class {out['ec_size'].min()}, "
              f"GCP {kanon_duckdb.gcp(anon, con=con):.3f}")
        # keep analysing in pandas: mean income per published age range
        print(out.groupby(["age_min", "age_max"])["income"].mean().head())
        # or in SQL: a DataFrame registered on the connection is a relation k_anonymize reads
        con.register("people", people)
        same = con.sql("FROM k_anonymize('people', k := 10, qi := ['age', 'zip', 'sex'])").df()
        assert same.sort_values("person_id")["ec_size"].tolist() == \
            out.sort_values("person_id")["ec_size"].tolist()  # same data and seed: same classes
        print(f"SQL on the registered DataFrame: {len(same)} rows, {same['ec'].nunique()} classes")
    finally:
        con.close()


if __name__ == "__main__":
    main()
