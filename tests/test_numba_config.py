"""kanon_duckdb._numba_config's fast loading of cached kernels (``_LoadCache``) falls back to
numba's own cache loading, with a logged warning, when numba's internals differ (an upgrade)."""
import os
import subprocess
import sys
import textwrap

from numba.core.caching import FunctionCache
from numba.core.runtime import rtsys

from kanon_duckdb import _numba_config as nc


def test_this_numba_has_the_internals_the_fast_load_uses():
    assert nc._fast_load_supported()
    assert nc._FAST_LOAD["on"]


def test_internals_missing_or_changed_are_detected():
    class NoLoad(FunctionCache):
        _load_overload = None

    class OtherSignature(FunctionCache):
        def _load_overload(self, sig, target_context, extra):
            return None

    class NoRuntimeInit:
        pass

    assert not nc._fast_load_supported(NoLoad, rtsys)
    assert not nc._fast_load_supported(OtherSignature, rtsys)
    assert not nc._fast_load_supported(FunctionCache, NoRuntimeInit())


def kernel_source(x):
    return x + 1


def test_a_numba_without_the_internals_keeps_its_own_cache_class(monkeypatch):
    monkeypatch.setitem(nc._FAST_LOAD, "on", False)
    assert type(nc.njit(kernel_source)._cache) is FunctionCache
    monkeypatch.setitem(nc._FAST_LOAD, "on", True)
    assert type(nc.njit(kernel_source)._cache) is nc._LoadCache


FALLBACK = r"""
import importlib, logging, sys
sys.path.insert(0, sys.argv[1])
logging.basicConfig(stream=sys.stdout, level=logging.WARNING, format="LOG %(message)s")
import kanon_duckdb._numba_config as nc
import kern
assert kern.plus_one(41) == 42 and not kern.plus_one.stats.cache_hits  # compiled and saved

class ChangedRuntime:  # a numba whose runtime moved: the fast load's first step fails
    def initialize(self, ctx):
        raise AttributeError("initialize moved")

nc.rtsys = ChangedRuntime()
kern = importlib.reload(kern)  # a fresh dispatcher: its first call loads from the cache
assert type(kern.plus_one._cache) is nc._LoadCache
print("RESULT", kern.plus_one(41), sum(kern.plus_one.stats.cache_hits.values()),
      sum(kern.plus_one.stats.cache_misses.values()), nc._FAST_LOAD["on"])
"""


def test_a_failing_fast_load_falls_back_to_numbas_cache_loading_with_a_warning(tmp_path):
    (tmp_path / "kern.py").write_text(textwrap.dedent("""
        from kanon_duckdb._numba_config import njit

        @njit
        def plus_one(x):
            return x + 1
        """))
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache"),
           "KANON_DUCKDB_PRELOAD": "0"}
    out = subprocess.run([sys.executable, "-c", FALLBACK, str(tmp_path)], capture_output=True,
                         text=True, env=env, timeout=300)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    # the cached kernel was loaded by numba's own path (a hit, no compile), the fast path is off
    assert lines[-1] == "RESULT 42 1 0 False", out.stdout
    warned = [ln for ln in lines if ln.startswith("LOG ")]
    assert len(warned) == 1 and "fast loading of cached numba kernels failed" in warned[0] \
        and "initialize moved" in warned[0] and "normal cache loading" in warned[0], out.stdout
