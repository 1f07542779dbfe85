"""A categorical value '*' without a taxonomy gets the intended message (its own fix), not an
error about a cycle in a tree the user never created -- for every algorithm family."""
import pytest

import kanon_duckdb


@pytest.mark.parametrize("algo", ["mondrian", "kmember", "optimal", "datafly"])
def test_star_value_without_taxonomy_names_the_fix(algo):
    con = kanon_duckdb.connect()
    try:
        con.execute("CREATE TABLE t AS SELECT ['a', '*', 'b'][1 + i % 3] AS c, i AS x FROM range(12) r(i)")
        with pytest.raises(Exception) as exc:
            con.execute(f"FROM k_anonymize('t', k := 2, qi := ['c'], algo := '{algo}')").fetchall()
        msg = str(exc.value)
        assert "holds the value '*'" in msg and "give 'c' a taxonomy" in msg
        assert "cycle" not in msg.lower()
        assert con.execute("SELECT count(*) FROM kanon_runs").fetchone()[0] == 0
        # with a tree of its own, '*' is an ordinary leaf
        con.execute("INSERT INTO kanon_taxonomy VALUES ('c', 'a', 'any'), ('c', '*', 'any'), "
                    "('c', 'b', 'any'), ('c', 'any', NULL)")
        rows = con.execute(f"FROM k_anonymize('t', k := 2, qi := ['c'], algo := '{algo}')").fetchall()
        assert len(rows) == 12
    finally:
        con.close()
