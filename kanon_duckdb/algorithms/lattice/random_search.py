"""``random``: the random-search baseline of the KGEN paper (sec. 4.3, Table 6).

``max_evaluations`` nodes drawn uniformly from the whole lattice (no pre-processing: this is the
baseline), each checked; the answer is the feasible node of least loss, the lattice top when no
draw was feasible. Nodes below the per-QI minimum levels are rejected without counting rows but
still use up the budget. Deterministic for a given seed.
"""
from __future__ import annotations

import math

import numpy as np

from .checker import NodeChecker


def search(ch: NodeChecker, params: dict, seed: int, progress=None):
    rng = np.random.default_rng(int(seed))
    hi = np.asarray(ch.heights, dtype=np.int64)
    budget = max(1, int(params.get("max_evaluations", 5000)))
    best, best_loss = None, math.inf
    draws = rng.integers(0, hi + 1, size=(budget, hi.size))
    for i, row in enumerate(draws):
        levels = tuple(int(x) for x in row)
        res = ch.check(levels)
        if res.feasible and (res.loss < best_loss or (res.loss == best_loss and levels < best)):
            best, best_loss = levels, res.loss
        if progress is not None and i % 512 == 0:
            progress(i / budget)
    if best is None:
        best = ch.top
    return best, {"budget_used": budget}
