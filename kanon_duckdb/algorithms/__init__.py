"""Algorithm registry: every ``algo :=`` name maps to an :class:`Algorithm`.

Each family package exposes ``ALGORITHMS`` (a list of Algorithm entries); this module merges them.
"""
from __future__ import annotations

import importlib

from ..errors import InvalidParameterError
from .base import Algorithm, Partition
from ..qidata import QIData

_FAMILIES = ("mondrian", "clustering", "lattice", "bottomup")
_registry: dict[str, Algorithm] | None = None


def registry() -> dict[str, Algorithm]:
    global _registry
    if _registry is None:
        reg = {}
        for fam in _FAMILIES:
            mod = importlib.import_module(f"{__name__}.{fam}")
            for a in mod.ALGORITHMS:
                reg[a.name] = a
        _registry = reg
    return _registry


def get_algorithm(name: str) -> Algorithm:
    reg = registry()
    if not isinstance(name, str) or name.lower() not in reg:
        valid = ", ".join(sorted(reg))
        raise InvalidParameterError(f"unknown algo '{name}'; valid algorithms are: {valid}")
    return reg[name.lower()]


__all__ = ["Algorithm", "Partition", "QIData", "get_algorithm", "registry"]
