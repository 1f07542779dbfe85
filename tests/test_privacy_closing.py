"""The clustering algorithms' in-loop closing step (algorithms/clustering/_closing.py, issue 13).

The shortfall that guides which record joins a cluster must agree with the one predicate of the
models (privacy._kernels.class_ok): zero exactly when the cluster satisfies them; and the
clustering algorithms must close their clusters themselves (the final repair pass untouched) on
a table where the nearest records share their sensitive value.
"""
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import kanon_duckdb
from kanon_duckdb.algorithms.clustering import _closing
from kanon_duckdb.privacy import _kernels as K
from kanon_duckdb.privacy.models import DistinctLDiversity, EntropyLDiversity, KAnonymity, \
    RecursiveCLDiversity, TCloseness
from kanon_duckdb.privacy.spec import build_spec

import pyarrow as pa

MODELS = {
    "distinct": (DistinctLDiversity(3),),
    "entropy": (EntropyLDiversity(2.2),),
    "recursive": (RecursiveCLDiversity(2.0, 3),),
    "t_equal": (TCloseness(0.25, "equal"),),
    "l_and_t": (DistinctLDiversity(2), TCloseness(0.3, "equal")),
}


def _spec(model, values):
    models = (KAnonymity(1),) + MODELS[model]
    return build_spec(None, models, ["s"], "equal", {"s": pa.array(values)}, len(values))


@settings(max_examples=60, deadline=None)
@given(model=st.sampled_from(sorted(MODELS)),
       counts=st.lists(st.integers(0, 6), min_size=5, max_size=5))
def test_shortfall_is_zero_exactly_when_the_models_hold(model, counts):
    values = [f"v{i}" for i in range(5)] * 4  # the table: every value 4 times (satisfies all)
    spec = _spec(model, values)
    P = spec.packed()
    cnt = np.zeros(spec.p_glob.size + 1)
    for code in range(5):  # counts per value code (codes follow the dictionary order v0..v4)
        cnt[code] = counts[code]
    n = float(sum(counts))
    scr = np.empty((4, spec.scr_cols))
    if n == 0:
        return
    ok = K.class_ok(cnt, n, P, scr)
    gap = _closing.shortfall(cnt, n, P, scr)
    assert (gap == 0.0) == bool(ok)
    # value_deltas is the change of the shortfall when one row of each value joins
    dv = np.zeros(spec.p_glob.size + 1)
    _closing.value_deltas(cnt, n, P, scr, dv)
    for code in range(5):
        cnt[code] += 1
        assert dv[code] == pytest.approx(_closing.shortfall(cnt, n + 1, P, scr) - gap, abs=1e-9)
        cnt[code] -= 1


@pytest.fixture(scope="module")
def con():
    c = kanon_duckdb.connect()
    # runs of 4 neighbouring ages share a diagnosis: the k = 4 nearest records of a seed are
    # one value, so a cluster closed at k rows violates l = 2 unless the closing step adds more
    rows = [(a, f"d{(a // 4) % 3}") for a in range(48)]
    c.execute("CREATE TABLE t (age INTEGER, s VARCHAR)")
    c.executemany("INSERT INTO t VALUES (?, ?)", rows)
    yield c
    c.close()


@pytest.mark.parametrize("algo", ["kmember", "ika", "oka", "kab"])
def test_clusters_are_closed_in_the_loop(con, algo, monkeypatch):
    """No final repair is needed: every class is l-diverse as the algorithm closed it."""
    from kanon_duckdb.privacy import hooks

    def no_repair(*a, **kw):
        raise AssertionError("the final repair pass was needed")

    monkeypatch.setattr(hooks, "repair", no_repair)
    con.execute(f"CREATE OR REPLACE TABLE o AS FROM k_anonymize('t', k := 4, algo := '{algo}', "
                "qi := ['age'], sensitive := 's', l := 2)")
    assert con.sql("SELECT l_diversity('o', ['age_min', 'age_max'], 's').distinct"
                   ).fetchall()[0][0] >= 2
    assert con.sql("SELECT count(*) FROM o").fetchall()[0][0] == 48
