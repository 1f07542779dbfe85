"""``kgen``: the genetic lattice search of De Pascale et al. 2023 (KGEN, Information Systems 115).

Faithful to the paper's Algorithm 1 and section 3, with these readings made explicit:

- Lattice pre-processing (sec. 3.2): per-QI minimum levels. Under suppression the paper's own
  caveat (sec. 7) applies: a per-QI bound computed *without* suppression, or by chaining the
  per-QI suppressions, can cut off feasible nodes. Here QI j's bound is the lowest level at
  which QI j alone leaves at most ``limit`` rows (the whole-table suppression limit) in classes
  smaller than k. That is a necessary condition for every node with that level (a node's classes
  are subsets of the single-QI classes), so the reduced lattice keeps every feasible node.
- Initial population: ``population`` nodes drawn uniformly within the bounds.
- Selection (eq. 3, "tournament selection with penalty"): roulette over the population with
  weight ``w = (10 - penalty) / 10``; the paper's eq. 3 multiplies by the loss, which would favour
  worse solutions when minimizing, so the score is ``w * (1 - loss)`` for feasible nodes (loss in
  [0, 1]; DM is divided by n^2) and ``w * 0.1 * (1 - violation)`` for infeasible ones, where
  violation = rows that would need suppression / n. A survivor's penalty grows by 1 per
  generation, at most 9.
- Crossover (rate ``crossover_rate``): offspring start with the component-wise maximum of the
  parents; case 1 (both parents feasible): add the component-wise minimum if feasible, else a
  random node between the minimum and each parent; case 2 (neither feasible): nothing more;
  case 3 (one feasible): a random node between the minimum and the feasible parent.
- Standard mutation (rate ``mutation_rate``): one random QI gets a new level within its bounds.
  Horizontal mutation (rate ``horizontal_rate``): half of the QIs (at least 2), alternately raised
  (to a level between the current one and the maximum) and lowered (between the minimum and the
  current one), which moves the node to another strategy path.
- Budget: the evaluation counter grows by 2 per crossover pair (Algorithm 1), initial population
  included; survivors are the ``population`` best of parents and offspring (Deb's constraint
  rule: feasible first by loss, then infeasible by violation; ranking infeasible nodes by loss
  instead would drive the population away from the feasible region on wide tables). The answer is the best feasible node seen; the lattice top when none was found.

Deterministic for a given seed (numpy PCG64).
"""
from __future__ import annotations

import math

import numpy as np

from .checker import NodeChecker


def _score_loss(ch: NodeChecker, res, levels) -> float:
    if not res.feasible:
        return 0.1 * (1.0 - _violation(ch, res))
    loss = res.loss
    if ch.objective.to_fraction is not None:
        loss = ch.objective.to_fraction(loss, ch.n)
    return max(1.0 - loss, 0.0)


def _violation(ch: NodeChecker, res) -> float:
    """Fraction of rows in classes < k (1 when the node was rejected by the per-QI bounds)."""
    return 1.0 if res.n_suppressed < 0 else res.n_suppressed / ch.n


def search(ch: NodeChecker, params: dict, seed: int, progress=None):
    rng = np.random.default_rng(int(seed))
    lo = np.asarray(ch.bounds, dtype=np.int64)
    hi = np.asarray(ch.heights, dtype=np.int64)
    d = lo.size
    pop_size = max(2, int(params.get("population", 100)))
    max_eval = max(1, int(params.get("max_evaluations", 5000)))
    cx_rate = float(params.get("crossover_rate", 0.9))
    mu_rate = float(params.get("mutation_rate", 0.2))
    hz_rate = float(params.get("horizontal_rate", 0.4))
    n_horizontal = min(d, max(2, math.ceil(d / 2)))
    best = [None, math.inf]

    def between(a, b):
        return tuple(int(x) for x in rng.integers(a, np.asarray(b) + 1))

    def ev(levels):
        res = ch.check(levels)
        if res.feasible and (res.loss < best[1] or (res.loss == best[1] and levels < best[0])):
            best[0], best[1] = levels, res.loss
        return res

    def entry(levels, penalty=0):
        res = ev(levels)
        rank = res.loss if res.feasible else _violation(ch, res)
        return [levels, res.feasible, rank, penalty, _score_loss(ch, res, levels)]

    def selection_probabilities(pop):
        w = np.array([(10 - e[3]) / 10.0 * e[4] for e in pop]) + 1e-12
        return w / w.sum()

    def crossover(p1, p2):
        a, b = np.asarray(p1[0]), np.asarray(p2[0])
        mn, mx = np.minimum(a, b), np.maximum(a, b)
        kids = [tuple(int(x) for x in mx)]
        if p1[1] and p2[1]:
            mn_t = tuple(int(x) for x in mn)
            if ev(mn_t).feasible:
                kids.append(mn_t)
            else:
                kids.append(between(mn, a))
                kids.append(between(mn, b))
        elif p1[1] or p2[1]:
            kids.append(between(mn, a if p1[1] else b))
        return kids

    def mutate(x):
        x = list(x)
        j = int(rng.integers(d))
        if hi[j] > lo[j]:
            choices = [v for v in range(lo[j], hi[j] + 1) if v != x[j]]
            x[j] = int(choices[int(rng.integers(len(choices)))])
        return tuple(x)

    def horizontal(x):
        x = list(x)
        for t, j in enumerate(rng.choice(d, size=n_horizontal, replace=False)):
            j = int(j)
            if t % 2 == 0:
                x[j] = int(rng.integers(x[j], hi[j] + 1))
            else:
                x[j] = int(rng.integers(lo[j], x[j] + 1))
        return tuple(x)

    pop = [entry(between(lo, hi)) for _ in range(pop_size)]
    evaluations = pop_size
    generations = 0
    while evaluations < max_eval:
        kids = []
        n_pairs = (pop_size + 1) // 2
        parents = rng.choice(len(pop), size=(n_pairs, 2), p=selection_probabilities(pop))
        for i in range(n_pairs):
            p1, p2 = pop[int(parents[i, 0])], pop[int(parents[i, 1])]
            tmp = crossover(p1, p2) if rng.random() < cx_rate else [p1[0], p2[0]]
            tmp = [mutate(x) if rng.random() < mu_rate else x for x in tmp]
            if d >= 2:
                tmp = [horizontal(x) if rng.random() < hz_rate else x for x in tmp]
            kids.extend(tmp)
            evaluations += 2
            if evaluations >= max_eval:
                break
        seen = {e[0] for e in pop}
        for x in kids:
            if x not in seen:
                seen.add(x)
                pop.append(entry(x))
        pop.sort(key=lambda e: (not e[1], e[2], ch.log_level(e[0]), e[0]))
        pop = pop[:pop_size]
        for e in pop:
            e[3] = min(9, e[3] + 1)
        generations += 1
        if progress is not None:
            progress(min(0.99, evaluations / max_eval))
    if best[0] is None:
        best[0] = ch.top
    return best[0], {"generations": generations, "budget_used": evaluations}
