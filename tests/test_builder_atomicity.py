"""A SELECT calling several taxonomy builders is all-or-nothing: when one fails, the trees the
earlier ones wrote in that statement are put back as they were."""
import pytest

import kanon_duckdb


def test_failing_builder_undoes_the_earlier_builders_of_its_statement(tmp_path):
    arx = tmp_path / "c.csv"
    arx.write_text("a;ab;*\nb;ab;*\n")
    con = kanon_duckdb.connect()
    try:
        con.execute("CREATE TABLE t AS SELECT ['a', 'b'][1 + i % 2] AS c, i AS x, "
                    "(10000 + i)::VARCHAR AS zip FROM range(20) r(i)")
        con.execute("SELECT kanon_build_flat('t', 'c')")
        before = con.execute("FROM kanon_taxonomy ORDER BY rowid").fetchall()
        with pytest.raises(Exception, match="no_such_column"):
            con.execute(f"""SELECT kanon_load_arx('c', '{arx}'), kanon_build_intervals('t', 'x'),
                                   kanon_build_masking('t', 'zip'),
                                   kanon_build_flat('t', 'no_such_column')""").fetchall()
        assert con.execute("FROM kanon_taxonomy ORDER BY rowid").fetchall() == before
        # the same builders in separate statements each stand
        con.execute("SELECT kanon_build_intervals('t', 'x')")
        with pytest.raises(Exception):
            con.execute("SELECT kanon_build_flat('t', 'no_such_column')")
        assert con.execute("SELECT count(DISTINCT attr) FROM kanon_taxonomy").fetchone()[0] == 2
        # a statement whose builders all succeed keeps them all
        con.execute(f"SELECT kanon_load_arx('c', '{arx}'), kanon_build_masking('t', 'zip')")
        assert con.execute("SELECT count(DISTINCT attr) FROM kanon_taxonomy").fetchone()[0] == 3
    finally:
        con.close()
