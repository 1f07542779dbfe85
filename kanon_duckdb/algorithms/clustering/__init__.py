"""Clustering family: greedy and k-means-style k-anonymity clustering over NCP costs.

Each algorithm module exposes ``ENTRY`` (an :class:`~kanon_duckdb.algorithms.base.Algorithm`);
add a module to ``_MODULES`` to register it. Shared building blocks live in ``_ncp``.
"""
from __future__ import annotations

import dataclasses
import importlib

from ...params import declared
from ..blocks import partitioned

# algorithms that run block by block on large tables (partition-then-cluster, ``blocks.py``)
PARTITIONED = ("kmember", "oka", "ika", "kab", "bha", "info2means")

_MODULES = ("kmember", "oka", "ika", "kab", "bha", "cof_mondrian", "info2means")

ALGORITHMS = []
for _name in _MODULES:
    try:
        _mod = importlib.import_module(f"{__name__}.{_name}")
    except ModuleNotFoundError as _e:  # a module still being written: skip, never mask other errors
        if _e.name != f"{__name__}.{_name}":
            raise
        continue
    _entry = _mod.ENTRY
    if _entry.name in PARTITIONED:  # quadratic: blocks above partition_above rows (blocks.py)
        _entry = dataclasses.replace(_entry, run=partitioned(_entry.run, _entry.name),
                                     params=declared(_entry.name))
    ALGORITHMS.append(_entry)
