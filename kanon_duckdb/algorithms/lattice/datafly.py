"""``datafly``: Sweeney's Datafly heuristic (Sweeney 1997; 2002).

Start from the original data (every level 0); while more than ``limit`` rows sit in classes
smaller than k, generalize by one level the QI with the most distinct values at its current
level (ties: the first QI). The remaining small classes are suppressed. Not optimal; each step
is one node evaluation.
"""
from __future__ import annotations

from .checker import NodeChecker


def search(ch: NodeChecker, params: dict, seed: int, progress=None):
    sp = ch.space
    levels = [0] * sp.d
    steps = 0
    total = int(sum(ch.heights)) or 1
    while True:
        if ch.check(tuple(levels)).feasible:
            break
        cand = [(sp.distinct_at(j, levels[j]), -j) for j in range(sp.d) if levels[j] < ch.heights[j]]
        if not cand:
            break
        _, neg_j = max(cand)
        levels[-neg_j] += 1
        steps += 1
        if progress is not None:
            progress(min(0.99, steps / total))
    return tuple(levels), {"steps": steps}
