"""Privacy models: small predicates over one equivalence class (ARX's criteria, STYLE.md §1).

Each model is a frozen dataclass that states, in one place, what search may assume of it:

- ``monotone_generalization``: if two classes satisfy it, so does their union (a coarser node /
  a merged cluster is safe); Mondrian's top-down cuts and the lattice's cone tagging rely on it.
- ``monotone_suppression``: when a class of a coarser node violates the model, so does every
  class it is the union of; then a coarser node never suppresses more rows and "feasible within
  the suppression limit" is monotone over the lattice (ARX: "monotonic with suppression"). True
  for size-based models and distinct l-diversity; false for entropy / recursive l-diversity and
  t-closeness (a union can violate while one of its parts satisfies: entropy is concave and EMD
  convex, so a union only lies between its parts). ``optimal`` then searches without cone tags
  when suppression is allowed (``compat``).
- ``local_recoding``: it can be judged class by class, so local-recoding algorithms (Mondrian,
  clustering) can enforce it.
- ``min_class_size``: the class size it implies on its own.

The predicate itself is evaluated by the numba kernels in ``_kernels`` over a class's histogram
of each sensitive attribute (``PrivacySpec.packed``); ``value`` gives the same number from a
plain count vector (tests, docs). The SQL checks in ``sql/privacy.sql`` compute the same
definitions (tests assert the agreement).

Sensitive-attribute models hold for each sensitive attribute. t-closeness compares a class with
the whole input table's distribution (suppressed rows included: they publish their sensitive
value). Suppressed rows form no class.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from . import _kernels as K


@dataclass(frozen=True)
class KAnonymity:
    """Every class has at least k rows (Sweeney 2002)."""
    k: int
    monotone_generalization = True
    monotone_suppression = True
    local_recoding = True
    citation = "Sweeney 2002"

    @property
    def min_class_size(self) -> int:
        return int(self.k)

    def describe(self) -> dict:
        return {"model": "k-anonymity", "k": int(self.k)}


@dataclass(frozen=True)
class DistinctLDiversity:
    """At least l distinct sensitive values per class (Machanavajjhala et al. 2007)."""
    l: float
    monotone_generalization = True
    monotone_suppression = True
    local_recoding = True
    citation = "Machanavajjhala et al. 2007"
    kind = 1

    @property
    def min_class_size(self) -> int:
        return int(math.ceil(self.l))

    def value(self, counts) -> float:
        c = np.asarray(counts, dtype=np.float64)
        return float(K.distinct_l(c, 0, c.size))

    def describe(self) -> dict:
        return {"model": "distinct l-diversity", "l": self.l}


@dataclass(frozen=True)
class EntropyLDiversity:
    """exp(entropy) of the class's sensitive values is at least l, i.e. -sum p ln p >= ln l
    (Machanavajjhala et al. 2007). Monotone under generalization (entropy is concave), not under
    suppression (a,a,b,b plus a,a,a,a: the first part is 2-diverse, the union is not)."""
    l: float
    monotone_generalization = True
    monotone_suppression = False
    local_recoding = True
    citation = "Machanavajjhala et al. 2007"
    kind = 2

    @property
    def min_class_size(self) -> int:
        return int(math.ceil(self.l - 1e-9))

    def value(self, counts) -> float:
        c = np.asarray(counts, dtype=np.float64)
        return float(K.entropy_l(c, 0, c.size))

    def describe(self) -> dict:
        return {"model": "entropy l-diversity", "l": self.l}


@dataclass(frozen=True)
class RecursiveCLDiversity:
    """r_1 < c (r_l + ... + r_m) for the class's value counts in descending order
    (Machanavajjhala et al. 2007): the most frequent value is not too frequent. Monotone under
    generalization, not under suppression (as entropy l-diversity)."""
    c: float
    l: float
    monotone_generalization = True
    monotone_suppression = False
    local_recoding = True
    citation = "Machanavajjhala et al. 2007"
    kind = 3

    @property
    def min_class_size(self) -> int:
        return int(math.ceil(self.l))

    def value(self, counts) -> float:
        """Largest l for which the class is recursive (c, l)-diverse (0 if none)."""
        cnt = np.asarray(counts, dtype=np.float64)
        return float(K.recursive_l(cnt, 0, cnt.size, float(self.c), np.empty(cnt.size)))

    def describe(self) -> dict:
        return {"model": "recursive (c,l)-diversity", "c": self.c, "l": self.l}


T_DISTANCES = ("equal", "ordered", "hierarchical")


@dataclass(frozen=True)
class TCloseness:
    """The Earth Mover's Distance between a class's distribution of the sensitive attribute and
    the whole table's is at most t (Li et al. 2007). Ground distance: 'equal' (any two values
    1 apart: EMD = half the L1 distance), 'ordered' (values i, j of m ordered values are
    |i - j| / (m - 1) apart), 'hierarchical' (height of their lowest common ancestor / height of
    the sensitive attribute's taxonomy). Monotone under generalization: EMD against a fixed
    distribution is convex, so a union is no farther than its farthest part; not monotone under
    suppression (a union of a close and a far part can be too far)."""
    t: float
    distance: str = "equal"  # per attribute in PrivacySpec.t_kind
    monotone_generalization = True
    monotone_suppression = False
    local_recoding = True
    citation = "Li, Li, Venkatasubramanian 2007"
    min_class_size = 1

    def describe(self) -> dict:
        return {"model": "t-closeness", "t": self.t, "distance": self.distance}


@dataclass(frozen=True)
class MaxRisk:
    """Prosecutor model (El Emam): no record's re-identification risk 1/|class| exceeds
    ``threshold``, i.e. every class has at least ceil(1/threshold) rows."""
    threshold: float
    monotone_generalization = True
    monotone_suppression = True
    local_recoding = True
    citation = "El Emam & Dankar 2008 (prosecutor risk)"

    @property
    def min_class_size(self) -> int:
        return int(math.ceil(1.0 / self.threshold - 1e-9))

    def describe(self) -> dict:
        return {"model": "max prosecutor risk", "threshold": self.threshold}


@dataclass(frozen=True)
class AvgRisk:
    """Prosecutor model: the average re-identification risk over published records,
    classes / records, is at most ``threshold``. Not a per-class predicate: every algorithm
    enforces the sufficient class size ceil(1/threshold) (conservative: the average of risks
    that are each at most ``threshold``), which is a size limit like k and so monotone under
    generalization and suppression."""
    threshold: float
    monotone_generalization = True
    monotone_suppression = True  # enforced through min_class_size
    local_recoding = True  # through min_class_size (sufficient)
    citation = "El Emam & Dankar 2008 (prosecutor risk)"

    @property
    def min_class_size(self) -> int:
        return int(math.ceil(1.0 / self.threshold - 1e-9))

    def describe(self) -> dict:
        return {"model": "average prosecutor risk", "threshold": self.threshold}


L_VARIANTS = {"distinct": DistinctLDiversity, "entropy": EntropyLDiversity,
              "recursive": RecursiveCLDiversity}
