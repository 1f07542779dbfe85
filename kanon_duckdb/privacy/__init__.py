"""Privacy models beyond k-anonymity, enforced while anonymizing and checked after.

- ``models``   the models as small frozen dataclasses declaring what search may assume
- ``spec``     parameters -> models -> encoded sensitive values packed for the kernels
- ``_kernels`` numba predicates over class histograms (l-diversity, t-closeness EMD, sizes)
- ``enforce``  the repair pass of local-recoding algorithms and the publication guard

Algorithms find the run's spec with :func:`spec_of` (``QIData.extra``), or None.
"""
from __future__ import annotations

from .models import (
    AvgRisk,
    DistinctLDiversity,
    EntropyLDiversity,
    KAnonymity,
    MaxRisk,
    RecursiveCLDiversity,
    TCloseness,
)
from .spec import (
    EXTRA_KEY,
    PRIVACY_PARAMS,
    PrivacySpec,
    build_spec,
    no_models,
    parse_models,
)


def spec_of(data):
    """The PrivacySpec of a run's QIData, or None (k-anonymity only)."""
    return data.extra.get(EXTRA_KEY) if data.extra else None


__all__ = [
    "EXTRA_KEY",
    "PRIVACY_PARAMS",
    "AvgRisk",
    "DistinctLDiversity",
    "EntropyLDiversity",
    "KAnonymity",
    "MaxRisk",
    "PrivacySpec",
    "RecursiveCLDiversity",
    "TCloseness",
    "build_spec",
    "no_models",
    "parse_models",
    "spec_of",
]
