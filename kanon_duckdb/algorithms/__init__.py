"""Algorithm registry: every ``algo :=`` name maps to an :class:`Algorithm`.

Each family package exposes ``ALGORITHMS`` (a list of Algorithm entries); this module merges them.
A family is imported only when one of its algorithms is asked for (:func:`get_algorithm`): each
family defines dozens of numba kernels, and a first call in a new process should load only the
ones it runs. :data:`FAMILY_OF` names each algorithm's family (tests hold it equal to what the
families declare); :func:`registry` imports every family.
"""
from __future__ import annotations

import importlib

from ..errors import InvalidParameterError
from .base import Algorithm, Partition
from ..qidata import QIData

# algo name -> the family package defining it (kanon_duckdb.algorithms.<family>)
FAMILY_OF = {
    "mondrian": "mondrian",
    "kmember": "clustering", "oka": "clustering", "ika": "clustering", "kab": "clustering",
    "bha": "clustering", "cof_mondrian": "clustering", "info2means": "clustering",
    "optimal": "lattice", "kgen": "lattice", "random": "lattice", "datafly": "lattice",
    "bottomup": "bottomup",
}
_FAMILIES = tuple(dict.fromkeys(FAMILY_OF.values()))
_families: dict[str, dict[str, Algorithm]] = {}
_registry: dict[str, Algorithm] | None = None


def _family(fam: str) -> dict[str, Algorithm]:
    """The algorithms of family ``fam`` by name (imports the family once)."""
    if fam not in _families:
        mod = importlib.import_module(f"{__name__}.{fam}")
        _families[fam] = {a.name: a for a in mod.ALGORITHMS}
    return _families[fam]


def registry() -> dict[str, Algorithm]:
    """Every algorithm by name (imports every family)."""
    global _registry
    if _registry is None:
        reg = {}
        for fam in _FAMILIES:
            reg.update(_family(fam))
        _registry = reg
    return _registry


def get_algorithm(name: str) -> Algorithm:
    """The algorithm called ``name`` (case-insensitive); imports only its family."""
    if _registry is not None:  # set in full (tests may add entries to it)
        reg = _registry
    elif isinstance(name, str) and name.lower() in FAMILY_OF:
        reg = _family(FAMILY_OF[name.lower()])
    else:
        reg = registry()
    if not isinstance(name, str) or name.lower() not in reg:
        valid = ", ".join(sorted(registry()))
        raise InvalidParameterError(f"unknown algo '{name}'; valid algorithms are: {valid}")
    return reg[name.lower()]


__all__ = ["Algorithm", "FAMILY_OF", "Partition", "QIData", "get_algorithm", "registry"]
