"""Which algorithm can enforce which privacy model: the models' declarations (``models``) held
against what each algorithm relies on. The one home of that rule; ``hooks`` checks a run's
models before it starts, so a combination no algorithm run could honour is an error naming the
algorithms that can.

What the algorithms rely on:

- local recoding (``mondrian``, ``cof_mondrian``, the clustering algorithms, ``bottomup``) judge
  each class on its own (a cut, a closing cluster, a merge): the model must be ``local_recoding``.
- ``optimal`` tags whole cones of the lattice from one evaluation: that needs
  ``monotone_generalization``; with ``max_suppression > 0`` it also needs
  ``monotone_suppression``, else it drops the cone tags and evaluates every node whose loss bound
  can still win (exact, slower: ``feasibility_is_monotone``).
- ``kgen``, ``random``, ``datafly`` evaluate every node they visit with the exact checker: no
  declaration needed (datafly only stops at the first feasible node it meets).
"""
from __future__ import annotations

from ..errors import InvalidParameterError

BY_FAMILY = {"local": ("local_recoding",), "lattice": ()}
BY_ALGORITHM = {"optimal": ("monotone_generalization",)}


def requirements(algorithm) -> tuple:
    """Declarations a model needs for ``algorithm`` (an ``Algorithm``) to enforce it."""
    return BY_FAMILY.get(algorithm.family, ()) + BY_ALGORITHM.get(algorithm.name, ())


def unmet(algorithm, models) -> list:
    """(model, declaration) pairs ``algorithm`` cannot rely on, in model order."""
    return [(m, d) for m in models for d in requirements(algorithm)
            if not getattr(m, d, False)]


def able(models, registry) -> list:
    """Names of the registered algorithms that can enforce every model, sorted."""
    return sorted(name for name, a in registry.items() if not unmet(a, models))


def check(algorithm, models, registry) -> None:
    """Raise InvalidParameterError when ``algorithm`` cannot enforce one of ``models``."""
    bad = unmet(algorithm, models)
    if not bad:
        return
    what = "; ".join(f"{m.describe()['model']} is not {d.replace('_', ' ')}" for m, d in bad)
    others = able(models, registry)
    fix = (f"use algo := one of {', '.join(others)}" if others
           else "no algorithm can; drop that model")
    raise InvalidParameterError(
        f"algo := '{algorithm.name}' cannot enforce the requested privacy models ({what}); {fix}")


def feasibility_is_monotone(models, max_suppression: float) -> bool:
    """True when a generalization of a feasible lattice node is feasible (cone tags are sound):
    without suppression every model must be monotone under generalization, with suppression
    also under suppression."""
    need = ("monotone_generalization",) + (("monotone_suppression",) if max_suppression else ())
    return all(getattr(m, d, False) for m in models for d in need)
