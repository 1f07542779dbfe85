"""Start-up: connect() imports nothing heavy; the shipped Adult files equal a fresh build."""
import subprocess
import sys
from importlib import resources

import duckdb

from kanon_duckdb import examples_data as ex


def test_connect_and_load_example_import_no_numba_sqlglot_pandas():
    code = ("import sys, kanon_duckdb\n"
            "con = kanon_duckdb.connect(); kanon_duckdb.load_example(con)\n"
            "print(sorted(m for m in ('numba', 'sqlglot', 'pandas', 'scipy', 'sklearn') "
            "if m in sys.modules)); con.close()\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip().splitlines()[0] == "[]"


def test_shipped_adult_files_equal_a_build_from_sources():
    con = duckdb.connect()
    with resources.as_file(ex.data_dir("adult") / "adult.data.gz") as src:
        ex._create_adult_table(con, str(src))
    built = con.sql("SELECT * FROM adult").fetchall()
    with resources.as_file(ex.data_dir("adult") / ex.TABLE_FILE) as path:
        shipped = con.execute("SELECT * FROM read_parquet(?)", [str(path)]).fetchall()
        types = con.execute("DESCRIBE SELECT * FROM read_parquet(?)", [str(path)]).fetchall()
    assert shipped == built and len(built) == ex.ADULT_ROWS
    assert [t[1] for t in types] == [t[1] for t in con.sql("DESCRIBE adult").fetchall()]
    with resources.as_file(ex.data_dir("adult") / ex.TAXONOMY_FILE) as path:
        edges = con.execute("SELECT attr, child, parent FROM read_parquet(?)", [str(path)]).fetchall()
    assert edges == ex.adult_taxonomy_edges(con)
    con.close()


def test_load_example_refuses_a_value_missing_from_its_tree():
    con = duckdb.connect()
    ex.load_example(con)
    con.execute("UPDATE adult SET workclass = 'Astronaut' WHERE rowid = 0")
    import pytest

    from kanon_duckdb.errors import TaxonomyError
    with pytest.raises(TaxonomyError, match="workclass='Astronaut'"):
        ex._check_adult_coverage(con)
    con.close()
