"""Report: end to end on a 2,000-row Adult sample (CSV, DuckDB table, PNGs, HTML), CM, errors."""
import csv
import os

import pytest

import kanon_duckdb
from kanon_duckdb import report
from kanon_duckdb.algorithms import registry
from kanon_duckdb.errors import InvalidParameterError

pytest.importorskip("matplotlib")

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _algos():
    names = list(registry())
    second = next((a for a in ("kmember", "datafly", "optimal") if a in names and a != "mondrian"),
                  None)
    return ["mondrian"] + ([second] if second else [])


@pytest.fixture(scope="module")
def adult_con():
    from test_ml_utility import load_adult_sample  # same Adult loader (example or raw file)
    con = kanon_duckdb.connect()
    load_adult_sample(con, n=100)
    yield con
    con.close()


@pytest.fixture(scope="module")
def small_report(adult_con, tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    algos = _algos()
    res = report.build_report(adult_con, "adult", algos, [5, 10], str(out), sample=2000,
                              queries=100, seed=0)
    return res, algos, out


def test_report_writes_csv_with_one_row_per_algo_and_k(small_report):
    res, algos, out = small_report
    with open(res["csv"]) as f:
        rows = list(csv.DictReader(f))
    assert [(r["algo"], int(r["k"])) for r in rows] == [(a, k) for a in algos for k in (5, 10)]
    assert list(rows[0]) == list(report.COLUMNS)
    for r in rows:
        assert r["error"] == ""
        assert int(r["n_rows"]) == 2000
        assert 0 <= float(r["gcp"]) <= 1 and 0 <= float(r["gen_total_il"]) <= 1
        assert float(r["cavg"]) >= 1.0 - 1e-9  # every class has >= k rows
        assert int(r["dm"]) >= int(r["k"]) * 2000
        assert 0 <= float(r["cm"]) <= 1
        assert float(r["seconds"]) > 0
    # more privacy, more loss (per algorithm)
    for a in algos:
        g = {int(r["k"]): float(r["gcp"]) for r in rows if r["algo"] == a}
        assert g[10] >= g[5]


def test_report_table_matches_csv(adult_con, small_report):
    res, algos, _ = small_report
    got = adult_con.execute("SELECT algo, k, classes, dm FROM kanon_report ORDER BY rowid").fetchall()
    assert [(a, k) for a, k, _, _ in got] == [(a, k) for a in algos for k in (5, 10)]
    assert [(r["classes"], r["dm"]) for r in res["rows"]] == [(c, d) for _, _, c, d in got]


def test_report_writes_pngs_and_html_that_shows_them(small_report):
    res, _, out = small_report
    for metric in ("gcp", "gen_total_il", "dm", "cavg", "cm", "seconds", "overview"):
        path = res["plots"][metric]
        assert os.path.dirname(path) == str(out)
        with open(path, "rb") as f:
            assert f.read(8) == PNG_MAGIC
    page = open(res["html"], encoding="utf-8").read()
    for name, path in res["plots"].items():
        if name != "overview":  # every metric shown once; the overview grid is a link
            assert page.count(f"src='{os.path.basename(path)}'") == 1
    assert "src='overview.png'" not in page and "href='overview.png'" in page
    assert page.count("<img") == len(res["plots"]) - 1
    assert "<table>" in page and "kanon_report.csv" in page


def test_report_query_error_column_is_filled(small_report):
    res, _, _ = small_report
    assert all(r.get("query_error") is not None and r["query_error"] >= 0 for r in res["rows"])
    assert "query_error" in res["plots"] and "query_error_median" in res["plots"]
    assert all(r["query_error_median"] is not None for r in res["rows"])


def test_failed_run_is_a_row_not_an_abort(adult_con, tmp_path):
    # k = 500 on a 100-row table is infeasible; k = 5 still runs
    adult_con.execute("CREATE OR REPLACE TABLE tiny AS SELECT * FROM adult_s")
    res = report.build_report(adult_con, "tiny", ["mondrian"], [5, 500], str(tmp_path),
                              queries=0, plots=False, warmup=False)
    assert [r["k"] for r in res["rows"]] == [5, 500]
    assert res["rows"][0].get("error") is None and res["rows"][0]["gcp"] is not None
    assert "500" in res["rows"][1]["error"]
    assert os.path.exists(res["csv"]) and os.path.exists(res["html"])


@pytest.mark.parametrize("kwargs, match", [
    ({"algos": ["no_such_algo"]}, "unknown algo"),
    ({"ks": []}, "no k values"),
    ({"ks": [0]}, "k=0"),
    ({"label": "nope"}, "label column"),
    ({"qi": ["age", "zzz"]}, "zzz"),
    ({"sample": 0}, "sample"),
])
def test_bad_arguments_are_named(adult_con, tmp_path, kwargs, match):
    args = {"algos": ["mondrian"], "ks": [5]}
    args.update(kwargs)
    with pytest.raises(InvalidParameterError, match=match):
        report.build_report(adult_con, "adult_s", args.pop("algos"), args.pop("ks"), str(tmp_path),
                            **args)


def test_command_line_main(tmp_path, capsys, monkeypatch):
    db = str(tmp_path / "r.duckdb")
    con = kanon_duckdb.connect(db)
    con.execute("CREATE TABLE t AS SELECT (i % 37)::INTEGER AS a, (i % 11)::INTEGER AS b, "
                "CASE WHEN i % 3 = 0 THEN 'x' ELSE 'y' END AS lab FROM range(300) r(i)")
    con.close()
    out = tmp_path / "rep"
    rc = report.main(["--db", db, "--table", "t", "--algos", "mondrian", "--k", "2,4",
                      "--label", "lab", "--queries", "0", "--out", str(out)])
    assert rc == 0
    assert "index.html" in capsys.readouterr().out
    assert (out / "kanon_report.csv").exists() and (out / "gcp.png").exists()
    con = kanon_duckdb.connect(db)
    try:
        assert con.execute("SELECT count(*) FROM kanon_report").fetchall()[0][0] == 2
    finally:
        con.close()
    assert report.main(["--db", db, "--table", "missing", "--out", str(out)]) == 2


def test_command_line_param_hierarchy_and_no_adult_label(tmp_path, capsys):
    """Other data: no CM by default (no 'income' label assumed); --param reaches k_anonymize and
    is shown; --hierarchy loads an ARX tree that the run's published labels come from."""
    db = str(tmp_path / "h.duckdb")
    con = kanon_duckdb.connect(db)
    con.execute("CREATE TABLE t AS SELECT (i % 37)::INTEGER AS a, ['p', 'q', 'r', 's'][1 + i % 4] "
                "AS c FROM range(200) r(i)")
    con.close()
    hier = tmp_path / "c.csv"
    hier.write_text("p;pq;*\nq;pq;*\nr;rs;*\ns;rs;*\n")
    out = tmp_path / "rep"
    rc = report.main(["--db", db, "--table", "t", "--algos", "kmember", "--k", "4",
                      "--queries", "0", "--out", str(out), "--param", "seed_choice=random",
                      "--param", "cost=height", "--hierarchy", f"c={hier}", "--no-plots"])
    assert rc == 0, capsys.readouterr().err
    con = kanon_duckdb.connect(db)
    try:
        assert con.execute("SELECT cm, error FROM kanon_report").fetchall() == [(None, None)]
        params = con.execute("SELECT params FROM kanon_runs ORDER BY run_id DESC LIMIT 1"
                             ).fetchall()[0][0]
        assert '"seed_choice": "random"' in params and '"cost": "height"' in params
        assert con.execute("SELECT count(*) FROM kanon_taxonomy WHERE attr = 'c' AND child = 'pq'"
                           ).fetchall()[0][0] == 1
    finally:
        con.close()
    page = (out / "index.html").read_text()
    assert "label: none (no CM)" in page and "seed_choice = random" in page
    assert report.main(["--db", db, "--table", "t", "--out", str(out), "--hierarchy",
                        f"c={tmp_path / 'missing.csv'}"]) == 2


def test_plots_skip_missing_metrics_and_draw_one_line_per_algo(tmp_path):
    from kanon_duckdb.plots import plot_report
    rows = [{"algo": a, "k": k, "gcp": g, "seconds": 0.1 * k, "query_error": None}
            for a, base in (("x", 0.1), ("y", 0.2)) for k, g in ((2, base), (10, base * 2))]
    paths = plot_report(rows, str(tmp_path))
    assert set(paths) == {"gcp", "seconds", "overview"}
    import matplotlib.pyplot as plt
    img = plt.imread(paths["gcp"])
    assert img.shape[0] > 200 and img.shape[1] > 300


def test_classifier_columns_and_raw_baseline(adult_con, tmp_path):
    pytest.importorskip("sklearn")
    adult_con.execute("CREATE OR REPLACE TABLE ml_src AS SELECT * FROM adult LIMIT 1500")
    res = report.build_report(adult_con, "ml_src", ["mondrian"], [5, 20], str(tmp_path),
                              queries=0, warmup=False, ml_models=["nb", "dt"])
    assert res["columns"][-4:] == ["accuracy_nb", "f1_nb", "accuracy_dt", "f1_dt"]
    for r in res["rows"]:
        assert r.get("error") is None
        assert 0.5 < r["accuracy_dt"] <= 1 and 0 <= r["f1_nb"] <= 1
    assert set(res["ml_baseline"]) == {"accuracy_nb", "f1_nb", "accuracy_dt", "f1_dt"}
    assert "accuracy_dt" in res["plots"]
    with open(res["csv"]) as f:
        header = next(csv.reader(f))
    assert header == res["columns"]
    with pytest.raises(InvalidParameterError, match="unknown model"):
        report.build_report(adult_con, "ml_src", ["mondrian"], [5], str(tmp_path), queries=0,
                            ml_models=["xgboost"])


def test_options_object_and_keyword_overrides_give_the_same_report(adult_con, tmp_path):
    """build_report takes a typed ReportOptions; keywords override its fields. Same rows (but
    the timings and run ids), same notes in the same order, same HTML but the timing cells."""
    opts = report.ReportOptions(sample=60, queries=20, plots=False, warmup=False, seed=3)
    a = report.build_report(adult_con, "adult", ["mondrian"], [5, 10], str(tmp_path / "a"), opts)
    b = report.build_report(adult_con, "adult", "mondrian", "5,10", str(tmp_path / "b"),
                            sample=60, queries=20, plots=False, warmup=False, seed=3)
    timing = {"seconds", "algo_seconds", "run_id"}
    strip = lambda rows: [{c: v for c, v in r.items() if c not in timing} for r in rows]  # noqa: E731
    assert len(a["rows"]) == len(b["rows"]) == 2
    for ra, rb in zip(strip(a["rows"]), strip(b["rows"])):
        # floats up to DuckDB's parallel summation order (the last digit of gen_total_il moves)
        assert ra.keys() == rb.keys()
        assert {c: v for c, v in ra.items() if not isinstance(v, float)} == \
            {c: v for c, v in rb.items() if not isinstance(v, float)}
        assert {c: v for c, v in ra.items() if isinstance(v, float)} == pytest.approx(
            {c: v for c, v in rb.items() if isinstance(v, float)}, rel=1e-12)
    assert a["rows"][0]["n_rows"] == 60 and a["rows"][0].get("error") is None
    assert a["notes"] == b["notes"] and a["notes"][0].startswith("deterministic sample of 60 rows")
    assert "20 random COUNT queries" in a["notes"][1] and len(a["notes"]) == 2
    with pytest.raises(TypeError):
        report.build_report(adult_con, "adult", ["mondrian"], [5], str(tmp_path), no_such=1)
