"""The first k_anonymize of a process loads only what it runs (issue 14 item 3): its own
algorithm family, no pandas (pyarrow's conversions would import it), not all of scipy.linalg
(numba's BLAS check would import it); numba still finds BLAS. Plus the buffer conversions
(kanon_duckdb.arrowconv) that make this possible, checked against pyarrow's own."""
import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kanon_duckdb import arrowconv
from kanon_duckdb.algorithms import FAMILY_OF, registry

FIRST_CALL = r"""
import json, sys
import kanon_duckdb
from kanon_duckdb.demo import DEFAULT_QI, k_anonymize_sql
con = kanon_duckdb.connect()
kanon_duckdb.load_example(con)
table = "adult"
if sys.argv[2:] == ["float"]:  # a DOUBLE QI: Mondrian codes it by rank
    table = "adult_f"
    con.execute("CREATE TABLE adult_f AS SELECT * REPLACE (age + 0.25 * (hours_per_week % 4) "
                "AS age) FROM adult")
n = con.execute("SELECT count(*), count(DISTINCT ec) FROM ("
                + k_anonymize_sql(table, 10, sys.argv[1], DEFAULT_QI) + ")").fetchall()[0]
watched = ["pandas", "scipy.linalg", "pyarrow.compute", "numba.np.arraymath"] + [
    f"kanon_duckdb.algorithms.{f}" for f in ("mondrian", "clustering", "lattice", "bottomup")]
loaded = [m for m in watched if m in sys.modules]
from numba.core.dispatcher import Dispatcher
compiled = any(sum(v._cache_misses.values()) for name, mod in list(sys.modules.items())
               if name.startswith("kanon_duckdb") for v in list(vars(mod).values())
               if isinstance(v, Dispatcher))
print(json.dumps({"rows": n[0], "classes": n[1], "loaded": loaded, "compiled": compiled}))
con.close()
"""

# a compile after the numba import: numba's BLAS check runs (through _numba_config's) then
COMPILE = r"""
import sys, kanon_duckdb._numba_config
from kanon_duckdb._numba_config import njit
assert "numba.np.arraymath" not in sys.modules
@njit(cache=False)
def twice(x):
    return 2 * x
assert twice(2) == 4
import numba.np.arraymath as am
print(am._HAVE_BLAS, "scipy.linalg" in sys.modules)
"""


def _first_call(algo: str, *extra: str) -> dict:
    env = {**os.environ, "KANON_DUCKDB_PRELOAD": "0"}
    out = subprocess.run([sys.executable, "-c", FIRST_CALL, algo, *extra], capture_output=True,
                         text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("algo, family", [("mondrian", "mondrian"), ("optimal", "lattice")])
def test_first_call_loads_its_family_only_and_neither_pandas_nor_scipy_linalg(algo, family):
    # nor pyarrow.compute (0.05-0.08 s to import): arrowconv calls its kernels directly; nor
    # numba's arraymath (cached kernels do not need it; its BLAS check waits for a compile)
    r = _first_call(algo)
    assert r["rows"] == 30162 and r["classes"] > 1
    # a compile (an empty numba cache, as in CI) imports arraymath: numba's refresh needs it
    compiled = ["numba.np.arraymath"] if r["compiled"] else []
    assert r["loaded"] == compiled + [f"kanon_duckdb.algorithms.{family}"]


def test_numbas_blas_check_runs_at_the_first_compile_without_all_of_scipy_linalg():
    out = subprocess.run([sys.executable, "-c", COMPILE], capture_output=True, text=True,
                         check=True)
    assert out.stdout.split() == ["True", "False"]  # scipy is installed here: BLAS found


def test_a_float_qi_ranked_by_mondrian_imports_neither_pandas_nor_pyarrow_compute():
    # _rank_codes went through pa.array(numpy), which imports pandas, and pyarrow.compute:
    # about 1 s of CPU in the first call (or in the background preload, whose warm-up table
    # has a DOUBLE QI, taking the GIL from the caller's first call)
    r = _first_call("mondrian", "float")
    assert r["rows"] == 30162 and r["classes"] > 1
    compiled = ["numba.np.arraymath"] if r["compiled"] else []
    assert r["loaded"] == compiled + ["kanon_duckdb.algorithms.mondrian"]


def test_scipy_linalg_imports_as_usual_after_the_blas_check():
    code = (COMPILE + "assert 'scipy.linalg' not in sys.modules\n"
            "import scipy.linalg, numpy as np\n"
            "print(scipy.linalg.cython_blas is sys.modules['scipy.linalg.cython_blas'], "
            "float(scipy.linalg.solve(np.eye(2) * 2, np.ones(2))[0]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False", "True", "0.5"]


def test_family_of_names_every_algorithm_of_each_family():
    import importlib
    for fam in set(FAMILY_OF.values()):
        declared = {a.name for a in importlib.import_module(
            f"kanon_duckdb.algorithms.{fam}").ALGORITHMS}
        assert declared == {n for n, f in FAMILY_OF.items() if f == fam}, fam
    assert set(FAMILY_OF) == set(registry())


INT_TYPES = [pa.int8(), pa.int32(), pa.int64(), pa.uint64(), pa.float64(), pa.float32()]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(0, 100)), max_size=40),
       st.sampled_from(INT_TYPES), st.integers(0, 5), st.integers(0, 5))
def test_to_numpy_equals_pyarrow_on_sliced_arrays_with_nulls(values, typ, start, stop):
    arr = pa.array(values, typ)
    part = arr.slice(min(start, len(arr)), max(0, len(arr) - start - stop))
    ours = arrowconv.to_numpy(part)
    theirs = part.to_numpy(zero_copy_only=False)
    valid = np.array([v is not None for v in part.to_pylist()], dtype=bool)
    assert ours.dtype == np.dtype(typ.to_pandas_dtype())
    np.testing.assert_array_equal(ours[valid], theirs[valid])
    np.testing.assert_array_equal(arrowconv.validity(part), valid)
    if typ in (pa.float64(), pa.float32()):
        assert np.isnan(ours[~valid]).all()
    else:
        assert (ours[~valid] == 0).all()
    assert ours.flags.writeable == (part.null_count > 0)  # as pyarrow hands them to numba
    np.testing.assert_array_equal(arrowconv.filled(part, 7)[~valid], 7)
    assert not arrowconv.filled(part, 7).flags.writeable


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.integers(-2**40, 2**40)), max_size=40),
       st.sampled_from([pa.int64(), pa.float64(), pa.bool_()]))
def test_from_numpy_equals_pa_array(values, typ):
    mask = np.array([v is None for v in values], dtype=bool)
    if typ == pa.bool_():
        raw = np.array([bool(v and v % 2) for v in values], dtype=bool)
    else:
        raw = np.array([0 if v is None else v for v in values],
                       dtype=np.int64 if typ == pa.int64() else np.float64)
    ours = arrowconv.from_numpy(raw, typ, mask=mask)
    assert ours.equals(pa.array(raw, typ, mask=mask))
    assert arrowconv.from_numpy(raw, typ).equals(pa.array(raw, typ))
    if typ == pa.bool_():
        sl = ours.slice(min(3, len(ours)))
        assert arrowconv.to_numpy(sl).tolist() == [bool(x) for x in raw[min(3, len(raw)):]]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.text(max_size=6)), max_size=30), st.text(max_size=8),
       st.integers(0, 5))
def test_strings_equal_pa_array(values, text, n):
    assert arrowconv.strings(values).equals(pa.array(values, pa.string()))
    assert arrowconv.repeat_string(text, n).equals(pa.array([text] * n, pa.string()))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.none(), st.sampled_from(["a", "b", "", "é"])), max_size=30),
       st.integers(0, 5))
def test_dictionary_encode_cast_and_take_equal_pyarrow_compute(values, start):
    import pyarrow.compute as pc
    arr = pa.array(values, pa.string()).slice(min(start, len(values)))
    assert arrowconv.dictionary_encode(arr).equals(pc.dictionary_encode(arr))
    enc = pc.dictionary_encode(arr)
    assert arrowconv.cast(enc, pa.string()).equals(enc.cast(pa.string()))
    idx = pa.array(list(range(len(arr)))[::-1], pa.int64())
    assert arrowconv.take(arr, idx).equals(arr.take(idx))


def test_to_numpy_refuses_a_type_it_cannot_view():
    with pytest.raises(TypeError, match="unsupported Arrow type string"):
        arrowconv.to_numpy(pa.array(["a"]))


def test_the_preload_never_compiles_in_the_background(tmp_path):
    # an empty numba cache: the background preload of connect() stops at its first kernel
    # instead of compiling (the user's own first call says it compiles, and does)
    code = ("import time, kanon_duckdb, numba\n"
            "from kanon_duckdb import warmup\n"
            "con = kanon_duckdb.connect()\n"
            "t = time.perf_counter(); warmup._preload_thread.join(); t = time.perf_counter() - t\n"
            "from kanon_duckdb.algorithms.mondrian import _kernels\n"
            "from numba.core.dispatcher import Dispatcher\n"
            "n = sum(len(d.overloads) for d in vars(_kernels).values() "
            "if isinstance(d, Dispatcher))\n"
            "print(n, t < 60)\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "KANON_DUCKDB_PRELOAD": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=env, timeout=300)
    assert out.stdout.split() == ["0", "True"]
    assert "compiling" not in out.stderr
    assert not list(tmp_path.rglob("*.nbc"))  # nothing compiled, nothing cached


def test_an_unexpected_scipy_layout_falls_back_to_numbas_own_check():
    code = ("import importlib.util, sys\n"
            "def broken(spec):\n"
            "    raise OSError('layout')\n"
            "importlib.util.module_from_spec = broken  # the import system uses its own copy\n"
            + COMPILE)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "True"]


@pytest.mark.slow
def test_first_run_on_an_empty_cache_compiles_beside_the_preload(tmp_path):
    # an empty numba cache and no wait for the preload: the caller's first k_anonymize compiles
    # while the background preload runs. Without the compiler lock around the preload, the
    # race corrupted numba's typing context ("Unknown attribute 'shape' of type readonly
    # array", CI at cb15b65: every early test failed on a fresh clone).
    code = ("import kanon_duckdb\n"
            "con = kanon_duckdb.connect()\n"
            "con.execute(\"CREATE TABLE t AS SELECT i AS id, i % 7 AS a, ['x','y'][1 + i % 2] AS b "
            "FROM range(20) r(i)\")\n"
            "con.execute(\"CREATE TABLE o AS FROM k_anonymize('t', k := 4, qi := ['a', 'b'])\")\n"
            "print(con.sql('SELECT count(*) FROM o').fetchall()[0][0])\n")
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "KANON_DUCKDB_PRELOAD": "1"}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split()[-1] == "20"


CACHED_LOAD = r"""
import sys, numpy as np
from numba.core import event
from kanon_duckdb.encoding import _remap_codes
compiled = []
class Count(event.Listener):
    def on_start(self, ev):
        compiled.append(ev.data["dispatcher"].py_func.__name__)
    def on_end(self, ev):
        pass
event.register("numba:compile", Count())
out = np.array([[0], [1], [-1]], dtype=np.int32)
_remap_codes(np.array([5, 6, 7], dtype=np.int32), out, 0)
refreshed = "numba.cpython.setobj" in sys.modules  # installed only by numba's context refresh
import numba
@numba.njit
def uses_registries(n):  # sets and np.random: registries the cached load did not install
    np.random.seed(1)
    s = set()
    for _ in range(n):
        s.add(np.random.randint(0, 3))
    return len(s)
n = uses_registries(50)
print(out.ravel().tolist(), [c for c in compiled if c in ("_remap_codes", "uses_registries")],
      refreshed, n)
"""


def test_a_cached_kernel_loads_without_numbas_context_refresh_and_compiles_after(tmp_path):
    # a cache hit skips numba's refresh of its typing and lowering registries (about 0.1 s of a
    # first call, _numba_config._LoadCache); anything compiled after that still gets them
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path), "KANON_DUCKDB_PRELOAD": "0"}
    runs = [subprocess.run([sys.executable, "-c", CACHED_LOAD], capture_output=True, text=True,
                           check=True, env=env, timeout=300).stdout.split(maxsplit=5)
            for _ in range(2)]
    first, second = (" ".join(r) for r in runs)
    assert first.startswith("[5, 6, 7] ['_remap_codes', 'uses_registries'] True 3"), first
    assert second.startswith("[5, 6, 7] ['uses_registries'] False 3"), second


def test_has_class_models_reads_the_spec_as_the_kernel_does():
    # the property no longer calls the kernel (one cached kernel fewer on every first call)
    import dataclasses
    import itertools

    from kanon_duckdb.privacy import _kernels as K
    from kanon_duckdb.privacy.spec import no_models
    base = no_models(4, k=3)
    seen = set()
    for a, b, t in itertools.product([0, 1, 3], [0, 1, 2], [-1.0, 0.0, 0.25]):
        spec = dataclasses.replace(base, ip=np.array([a, b], dtype=np.int64),
                                   fp=np.array([3.0, 0.0, 0.0, t]))
        assert spec.has_class_models == bool(K.has_class_models(spec.packed())), (a, b, t)
        seen.add(spec.has_class_models)
    assert seen == {True, False}
