"""Example data sets shipped inside the package (``kanon_duckdb/data``).

``load_example(con, "adult")`` creates (or replaces) table ``adult``: the UCI Adult training data
without the records that contain '?' (30,162 rows), columns in snake_case, numeric columns
INTEGER, strings trimmed, file order kept. It replaces the ``kanon_taxonomy`` rows of every
column: ARX hierarchies for the categorical ones (income from ARX's salary-class), hand-written
trees for relationship and education_num, nested intervals for the other numeric columns. Every
value of the table is checked to be a leaf of its tree. Returns the row count.
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

EXAMPLES = ("adult",)


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


def _adult_taxonomies(con) -> None:
    hier = data_dir("adult") / "hierarchies"
    for attr, fname in ADULT_ARX.items():
        store.insert_edges(con, attr, builders.arx_hierarchy_edges(
            (hier / fname).read_text(encoding="utf-8"), attr=attr))
    store.insert_edges(con, "relationship", RELATIONSHIP_EDGES)
    store.insert_edges(con, "education_num", EDUCATION_NUM_EDGES)
    for attr, widths in ADULT_INTERVALS.items():
        store.build_interval_taxonomy(con, "adult", attr, widths=widths)


def load_example(con, name: str = "adult") -> int:
    """Create the example table ``name`` with its taxonomies; return its row count."""
    if name not in EXAMPLES:
        raise InvalidParameterError(
            f"unknown example data set {name!r}; valid names: {', '.join(EXAMPLES)}")
    store.ensure_taxonomy_table(con)
    with store.transaction(con):
        with resources.as_file(data_dir("adult") / "adult.data.gz") as path:
            _create_adult_table(con, str(path))
        _adult_taxonomies(con)
        for attr in ADULT_COLUMNS:
            store.check_column(con, "adult", attr)
        n = con.execute("SELECT count(*) FROM adult").fetchall()[0][0]
    return int(n)
