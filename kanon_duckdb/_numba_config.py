"""The one place numba flags come from (CI greps for hard-coded flags elsewhere)."""
import os

# numba's OpenMP workers busy-wait after every parallel region (libgomp's default ACTIVE policy):
# inside DuckDB they spin on the cores DuckDB's own threads and the rest of the statement need
# (Adult, mondrian k = 10 on the 2-core machine: statement CPU 0.27 s -> 0.12 s, anonymize()
# 0.50 s -> 0.15 s wall). Read by libgomp when numba first starts it; a value the user set wins.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import importlib.machinery  # noqa: E402
import importlib.util  # noqa: E402
import sys  # noqa: E402


def _blas_check_without_scipy_linalg() -> None:
    """Let numba find scipy's BLAS without importing all of ``scipy.linalg``.

    numba's first compile imports ``numba.np.arraymath`` (its context refresh), which checks for
    BLAS by importing ``scipy.linalg.cython_blas``: the whole ``scipy.linalg`` package (0.1-0.4 s,
    for kernels that use no BLAS). Here the two Cython modules are loaded on their own while
    arraymath runs that check (same answer: BLAS available when scipy is), then taken out of
    ``sys.modules`` so a later ``import scipy.linalg`` is exactly the usual one (numba re-imports
    them that way when it compiles a BLAS call). Nothing is done when scipy is absent or
    ``scipy.linalg`` or arraymath is already imported. Run by :class:`_BeforeCompile` when numba
    first compiles: loading cached kernels needs neither arraymath nor the check (about 0.05 s of
    CPU of every first call and of the background preload)."""
    if "numba.np.arraymath" in sys.modules or "scipy.linalg" in sys.modules:
        return
    try:
        import scipy
    except ImportError:
        import numba.np.arraymath  # noqa: F401 - its check finds no BLAS, as it would anyway
        return
    names = ("scipy.linalg.cython_blas", "scipy.linalg.cython_lapack")
    seeded = []
    try:
        try:
            for name in names:
                spec = importlib.machinery.PathFinder.find_spec(
                    name, [f"{scipy.__path__[0]}/linalg"])
                if spec is None:
                    break
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                seeded.append(name)
                spec.loader.exec_module(module)
        except Exception:  # noqa: BLE001 - another scipy layout: numba's check imports it all
            for name in seeded:
                sys.modules.pop(name, None)
            seeded = []
        import numba.np.arraymath  # noqa: F401 - runs numba's BLAS check now
    finally:
        for name in seeded:
            sys.modules.pop(name, None)


import numba  # noqa: E402 - after the OpenMP setting
import inspect  # noqa: E402 - numba imported both already
import logging  # noqa: E402

from numba.core import event  # noqa: E402
from numba.core.caching import FunctionCache  # noqa: E402
from numba.core.runtime import rtsys  # noqa: E402

# no_cfunc_wrapper: numba builds, optimizes and machine-compiles a C-callable wrapper per kernel
# (and again inside every kernel that links it) for first-class function use, which no kernel
# here needs: about 1.5 s less of the demo path's cold compile (21-25 s CPU, shared machine)
NJIT = dict(cache=True, nogil=True, no_cfunc_wrapper=True)
# Literal arguments: a kernel called from another with a constant (f(x, 1)), or with a variable
# that starts as a constant (a = -1; loop: a = t; f(a)), is compiled for Literal[int](1) /
# Literal[int](-1) as well as for int64 (numba's typing passes see the constant first and
# compile eagerly). Write np.int64(1) / a = np.int64(-1) where the kernel is large or also
# called with a variable: one compile instead of two (cold compile and the test run).
NJIT_PARALLEL = dict(cache=True, nogil=True, parallel=True, no_cfunc_wrapper=True)


class _BeforeCompile(event.Listener):
    """Runs :func:`_blas_check_without_scipy_linalg` when numba starts a compile (any
    dispatcher, any thread; before the compile's context refresh imports arraymath)."""

    def on_start(self, _event):
        if "numba.np.arraymath" not in sys.modules:
            _blas_check_without_scipy_linalg()

    def on_end(self, _event):
        return None


event.register("numba:compile", _BeforeCompile())


_log = logging.getLogger("kanon_duckdb")


def _fast_load_supported(cache_cls=FunctionCache, runtime=rtsys) -> bool:
    """True when numba has the internals ``_LoadCache`` calls: ``FunctionCache._load_overload(
    self, sig, target_context)``, ``FunctionCache._guard_against_spurious_io_errors`` and
    ``rtsys.initialize`` (numba 0.68 has them). A numba that moved them gets its normal
    cache loading instead (``_cached``). O(1)."""
    needed = (getattr(cache_cls, "_load_overload", None),
              getattr(cache_cls, "_guard_against_spurious_io_errors", None),
              getattr(runtime, "initialize", None))
    if not all(callable(f) for f in needed):
        return False
    try:
        params = list(inspect.signature(cache_cls._load_overload).parameters)
    except (TypeError, ValueError):
        return False
    return params == ["self", "sig", "target_context"]


_FAST_LOAD = {"on": _fast_load_supported()}
if not _FAST_LOAD["on"]:
    _log.warning("numba %s lacks the cache internals kanon_duckdb's fast kernel loading uses: "
                 "using numba's normal cache loading (about 0.1 s more on a first call)",
                 numba.__version__)


class _LoadCache(FunctionCache):
    """numba's on-disk cache of one of our kernels, minus the context refresh on a cache hit.

    ``FunctionCache.load_overload`` first refreshes the target context: it imports and installs
    every typing and lowering registry of numba (random generators, typed containers,
    polynomials, ...), about 0.1 s of a first call, which a cached kernel does not use: loading
    it needs only the runtime's (NRT) symbols, the JIT and the kernel's own object code.
    Anything that compiles still refreshes (``compiler.compile_extra`` does it first).

    Depends on numba internals (``_fast_load_supported``). If the fast load fails anyway (a
    numba that changed what loading needs), a warning is logged once, this and every later load
    use numba's own ``load_overload``, and its result (or its error) is the answer."""

    def load_overload(self, sig, target_context):
        if _FAST_LOAD["on"]:
            try:
                rtsys.initialize(target_context)  # the NRT symbols the kernels' code links to
                with self._guard_against_spurious_io_errors():
                    return self._load_overload(sig, target_context)
            except Exception as exc:  # noqa: BLE001 - numba's own path decides below
                _FAST_LOAD["on"] = False
                _log.warning("kanon_duckdb's fast loading of cached numba kernels failed "
                             "(%s: %s) with numba %s: using numba's normal cache loading",
                             type(exc).__name__, exc, numba.__version__)
        return FunctionCache.load_overload(self, sig, target_context)


def _cached(dispatcher):
    # cache=True made a FunctionCache; same state, new load (only where numba has the internals)
    if _FAST_LOAD["on"] and type(dispatcher._cache) is FunctionCache:
        dispatcher._cache.__class__ = _LoadCache
    return dispatcher


def njit(fn=None, **extra):
    """``numba.njit`` with the project's flags (cache on, nopython, nogil)."""
    opts = {**NJIT, **extra}
    if fn is None:
        return lambda f: _cached(numba.njit(**opts)(f))
    return _cached(numba.njit(**opts)(fn))


def njit_parallel(fn):
    return _cached(numba.njit(**NJIT_PARALLEL)(fn))
