"""Example data sets shipped inside the package (``kanon_duckdb/data``).

``load_example(con, "adult")`` creates (or replaces) table ``adult``: the UCI Adult training data
without the records that contain '?' (30,162 rows), columns in snake_case, numeric columns
INTEGER, strings trimmed, file order kept. It replaces the ``kanon_taxonomy`` rows of every
column: ARX hierarchies for the categorical ones (income from ARX's salary-class), hand-written
trees for relationship and education_num, nested intervals for the other numeric columns. Every
value of the table is checked to be a leaf of its tree. Returns the row count.

The table and its edges are built once from those sources (``_create_adult_table`` from
``adult.data.gz``, ``adult_taxonomy_edges``) and shipped as ``data/adult/adult.parquet`` and
``data/adult/taxonomy.parquet`` (regenerate with ``python -m kanon_duckdb.examples_data``; a test
checks both files equal a fresh build), so loading is three SQL statements and one SQL coverage
check instead of parsing the CSV and building and validating fifteen trees in Python each time.
"""
from __future__ import annotations

from importlib import resources

from .errors import InvalidParameterError
from .taxonomy import builders, store

ADULT_COLUMNS = ["age", "workclass", "fnlwgt", "education", "education_num", "marital_status",
                 "occupation", "relationship", "race", "sex", "capital_gain", "capital_loss",
                 "hours_per_week", "native_country", "income"]
ADULT_INTEGER = {"age", "fnlwgt", "education_num", "capital_gain", "capital_loss",
                 "hours_per_week"}
ADULT_ROWS = 30162

# attr -> ARX hierarchy file (kanon_duckdb/data/adult/hierarchies/)
ADULT_ARX = {
    "workclass": "adult_hierarchy_workclass.csv",
    "education": "adult_hierarchy_education.csv",
    "marital_status": "adult_hierarchy_marital-status.csv",
    "occupation": "adult_hierarchy_occupation.csv",
    "race": "adult_hierarchy_race.csv",
    "sex": "adult_hierarchy_sex.csv",
    "native_country": "adult_hierarchy_native-country.csv",
    "income": "adult_hierarchy_salary-class.csv",
}
# attr -> nested interval widths
ADULT_INTERVALS = {
    "age": [5, 10, 20, 40],
    "hours_per_week": [5, 10, 20, 40],
    "fnlwgt": [50000, 100000, 200000, 400000, 800000],
    "capital_gain": [1000, 5000, 10000, 50000],
    "capital_loss": [500, 1000, 2000, 4000],
}
RELATIONSHIP_EDGES = [
    ("Husband", "Spouse"), ("Wife", "Spouse"),
    ("Own-child", "Other relative"), ("Other-relative", "Other relative"),
    ("Not-in-family", "Not related"), ("Unmarried", "Not related"),
    ("Spouse", "*"), ("Other relative", "*"), ("Not related", "*"), ("*", None),
]
# education_num 1..16 is education in order (1 Preschool ... 9 HS-grad, 13 Bachelors, 16 Doctorate)
_EDU_L1 = [("1-4", range(1, 5)), ("5-8", range(5, 9)), ("9-10", range(9, 11)),
           ("11-12", range(11, 13)), ("13-14", range(13, 15)), ("15-16", range(15, 17))]
_EDU_L2 = {"1-4": "1-8", "5-8": "1-8", "9-10": "9-12", "11-12": "9-12", "13-14": "13-16",
           "15-16": "13-16"}
EDUCATION_NUM_EDGES = (
    [(str(v), g) for g, vals in _EDU_L1 for v in vals]
    + [(g, _EDU_L2[g]) for g, _ in _EDU_L1]
    + [(p, "*") for p in ("1-8", "9-12", "13-16")] + [("*", None)])

EXAMPLES = ("adult", "hospital")  # hospital: generated, see hospital_data


def data_dir(name: str = "adult"):
    """The packaged data folder of an example (an importlib.resources Traversable)."""
    return resources.files("kanon_duckdb") / "data" / name


def _create_adult_table(con, path: str) -> None:
    spec = "{" + ", ".join(f"'{c}': 'VARCHAR'" for c in ADULT_COLUMNS) + "}"
    select = ", ".join(
        f"CAST(trim({c}) AS INTEGER) AS {c}" if c in ADULT_INTEGER else f"trim({c}) AS {c}"
        for c in ADULT_COLUMNS)
    con.execute(
        f"CREATE OR REPLACE TABLE adult AS SELECT {select} "
        f"FROM read_csv(?, header = false, delim = ',', quote = '', escape = '', "
        f"auto_detect = false, columns = {spec}) "
        f"WHERE trim(COLUMNS(*)) <> '?'", [path])


TABLE_FILE = "adult.parquet"  # the adult table as _create_adult_table builds it
TAXONOMY_FILE = "taxonomy.parquet"  # (attr, child, parent) rows in tree insertion order


def adult_taxonomy_edges(con) -> list:
    """Build every Adult tree from its sources: [(attr, child, parent)] in insertion order.

    ``con`` must hold the ``adult`` table (interval trees are built from its values). O(rows).
    """
    hier = data_dir("adult") / "hierarchies"
    out = []
    for attr, fname in ADULT_ARX.items():
        out += [(attr, c, p) for c, p in builders.arx_hierarchy_edges(
            (hier / fname).read_text(encoding="utf-8"), attr=attr)]
    out += [("relationship", c, p) for c, p in RELATIONSHIP_EDGES]
    out += [("education_num", c, p) for c, p in EDUCATION_NUM_EDGES]
    for attr, widths in ADULT_INTERVALS.items():
        rows = con.execute(
            f"SELECT {attr}, CAST({attr} AS VARCHAR), count(*) FROM adult "
            f"GROUP BY {attr} ORDER BY {attr}").fetchall()
        out += [(attr, c, p) for c, p in builders.interval_edges(
            [r[0] for r in rows], widths, labels=[r[1] for r in rows],
            counts=[r[2] for r in rows], attr=attr)]
    return [(a, None if c is None else str(c), None if p is None else str(p)) for a, c, p in out]


def write_adult_files(folder) -> int:
    """Rebuild the shipped adult.parquet and taxonomy.parquet in ``folder`` from the sources (a
    maintainer step); returns the number of edges."""
    import duckdb
    con = duckdb.connect()
    try:
        with resources.as_file(data_dir("adult") / "adult.data.gz") as src:
            _create_adult_table(con, str(src))
        con.execute(f"COPY adult TO '{folder}/{TABLE_FILE}' (FORMAT parquet, COMPRESSION zstd)")
        edges = adult_taxonomy_edges(con)
        con.execute("CREATE TABLE e (pos INTEGER, attr VARCHAR, child VARCHAR, parent VARCHAR)")
        con.executemany("INSERT INTO e VALUES (?, ?, ?, ?)",
                        [(i, a, c, p) for i, (a, c, p) in enumerate(edges)])
        con.execute(f"COPY (SELECT attr, child, parent FROM e ORDER BY pos) TO '{folder}/{TAXONOMY_FILE}' "
                    f"(FORMAT parquet, COMPRESSION zstd)")
    finally:
        con.close()
    return len(edges)


def _adult_taxonomies(con) -> None:
    with resources.as_file(data_dir("adult") / TAXONOMY_FILE) as path:
        con.execute(f"DELETE FROM {store.TABLE} WHERE attr IN (SELECT DISTINCT attr FROM read_parquet(?))",
                    [str(path)])
        con.execute(f"INSERT INTO {store.TABLE} (attr, child, parent) "
                    f"SELECT attr, child, parent FROM read_parquet(?)", [str(path)])


def _check_adult_coverage(con, table: str = "adult", columns=ADULT_COLUMNS) -> None:
    """One SQL statement: every non-NULL value of every column of the example ``table`` is a
    leaf of its tree. Each column's distinct values are found in its own type and only they are
    cast to text (an UNPIVOT of every row cast to text cost 1.6x the CPU on Adult)."""
    distinct = " UNION ALL ".join(
        f"SELECT '{c}' AS attr, CAST({c} AS VARCHAR) AS value FROM "
        f"(SELECT DISTINCT {c} FROM {table} WHERE {c} IS NOT NULL)" for c in columns)
    bad = con.execute(
        f"WITH v AS ({distinct}), "
        f"leaves AS (SELECT attr, child FROM {store.TABLE} t WHERE NOT EXISTS ("
        f"SELECT 1 FROM {store.TABLE} u WHERE u.attr = t.attr AND u.parent = t.child)) "
        f"SELECT attr, value FROM v ANTI JOIN leaves ON v.attr = leaves.attr "
        f"AND v.value = leaves.child ORDER BY attr, value LIMIT 10").fetchall()
    if bad:
        from .errors import TaxonomyError
        shown = ", ".join(f"{a}='{v}'" for a, v in bad)
        raise TaxonomyError(f"example data values missing from their taxonomy leaves: {shown}; "
                            f"regenerate {TAXONOMY_FILE} (python -m kanon_duckdb.examples_data)")


def load_example(con, name: str = "adult") -> int:
    """Create the example table ``name`` with its taxonomies; return its row count.

    The shipped Adult files are not re-checked here (``_check_adult_coverage`` was ~40 % of
    this call): the test suite checks them, and a run with a tree checks the values it codes
    against that tree anyway (``encoding``). The generated ``hospital`` data is checked."""
    if name not in EXAMPLES:
        raise InvalidParameterError(
            f"unknown example data set {name!r}; valid names: {', '.join(EXAMPLES)}")
    store.ensure_taxonomy_table(con)
    if name == "hospital":
        return _load_hospital(con)
    with store.transaction(con):
        with resources.as_file(data_dir("adult") / TABLE_FILE) as path:
            con.execute("CREATE OR REPLACE TABLE adult AS SELECT * FROM read_parquet(?)", [str(path)])
        _adult_taxonomies(con)
        n = con.execute("SELECT count(*) FROM adult").fetchall()[0][0]
    return int(n)


def _load_hospital(con) -> int:
    """Table ``hospital`` and its trees (kanon_duckdb.hospital_data), generated in-process."""
    import pyarrow as pa

    from . import hospital_data
    table = hospital_data.rows()
    edges = hospital_data.taxonomy_edges(table)
    arrow = pa.table({c: table[c] for c in hospital_data.COLUMNS})
    attrs = sorted({a for a, _c, _p in edges})
    tax = pa.table({"attr": [e[0] for e in edges], "child": [e[1] for e in edges],
                    "parent": [e[2] for e in edges]})
    view, tview = "__kanon_hospital_src", "__kanon_hospital_tax"
    con.register(view, arrow)
    con.register(tview, tax)
    try:
        with store.transaction(con):
            con.execute(f"CREATE OR REPLACE TABLE hospital AS SELECT * FROM {view}")
            con.execute(f"DELETE FROM {store.TABLE} WHERE attr IN (SELECT unnest(?))", [attrs])
            con.execute(f"INSERT INTO {store.TABLE} (attr, child, parent) "
                        f"SELECT attr, child, parent FROM {tview}")
            _check_adult_coverage(con, "hospital", hospital_data.COLUMNS)
    finally:
        con.unregister(view)
        con.unregister(tview)
    return hospital_data.ROWS


if __name__ == "__main__":  # regenerate the shipped parquet files
    from pathlib import Path
    target = Path(__file__).resolve().parent / "data" / "adult"
    print(f"adult table and {write_adult_files(target)} edges written to {target}")
