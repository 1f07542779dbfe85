"""verify7: a LIMIT over k_anonymize's output on a base table of 2,049 .. 250,000 rows (the
positional statement, output_sql.positional_sql) fails with "the relation changed during the
call": DuckDB's POSITIONAL JOIN, stopped early by the LIMIT, still emits the right side's
remaining rows with a NULL left side through the filter, whose `__kanon_here IS NULL` branch
raises. Plain DuckDB 2.0.1 shows the same: (SELECT *, true h FROM s) POSITIONAL JOIN (unnest of
a list as long) WHERE CASE WHEN h IS NULL THEN error(..) .. END LIMIT 5 raises for s of 10,000
rows. A view, a TEMP table and a base table of <= 2,048 rows give the rows. Present before the
s25 merges (b7821f6 too; Adult's `FROM k_anonymize(...) LIMIT 3` failed). Found by verify7's
statement matrix. Now those rows are dropped when the relation still has the first read's row
count (rows deleted since are still refused: test_positional_statement)."""
import pytest

import kanon_duckdb


@pytest.mark.parametrize("limit", [5, 2048, 3000, 9999])
def test_limit_over_the_output_of_a_mid_sized_base_table(limit):
    con = kanon_duckdb.connect()
    try:
        con.execute("CREATE TABLE s AS SELECT i AS id, i % 50 AS age FROM range(10000) r(i)")
        rows = con.execute(f"SELECT id, age_min, age_max FROM k_anonymize('s', k := 5, "
                           f"qi := ['age']) LIMIT {limit}").fetchall()
        assert len(rows) == limit
        assert all(lo <= i % 50 <= hi for i, lo, hi in rows)
    finally:
        con.close()
