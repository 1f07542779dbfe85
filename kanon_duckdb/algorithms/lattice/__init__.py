"""Full-domain generalization over the lattice of per-QI levels, with suppression.

Global recoding: one generalization level per QI, so a value maps to the same ancestor on every
row; rows left in classes smaller than k are suppressed (published fully generalized, flagged)
when at most ``max_suppression`` (a fraction of the rows) are. The data is the histogram of
distinct (QI, sensitive) tuples (``QIData.counts``, read by DuckDB's GROUP BY: the orchestrator
asks for it for this family), so the cost grows with the distinct tuples, not the rows; every
count (suppression, losses, models) is in rows. Searches share one evaluator
(``checker.NodeChecker``) and never touch DuckDB:

- ``optimal``  exact minimum-loss node (OLA / Flash-style pruning), ``optimal.py``; among
  equal-loss nodes the first by height, then levels in ``qi_order`` (independent of the search)
- ``kgen``     genetic search of De Pascale et al. 2023, ``kgen.py``
- ``random``   uniform random nodes with the same budget (KGEN's baseline), ``random_search.py``
- ``datafly``  Sweeney's heuristic, ``datafly.py``

``loss := 'log' | 'gcp' | 'dm'`` selects the objective for all four. ``kanon_runs.details``
records (see ``run_search``): ``node`` (QI -> level), ``levels``/``heights``/``qi_order``
(lists, QIs in the order numeric then categorical), ``node_height`` and ``lattice_height`` (sums
of levels, for KGEN's accuracy eq. 4), ``min_levels`` (pre-processing bounds), ``loss_metric``,
``loss``, ``log``, ``gcp``, ``dm``, ``n_suppressed``, ``suppression``, ``max_suppression``,
``n_evaluated`` (nodes grouped), ``n_passes`` (of them, groupings that read every encoded
tuple rather than a cached class table), ``rows_grouped`` (inputs fed to the grouping kernel in
all), ``n_checks``, ``auto_widths`` (numeric QIs whose interval tree was built automatically).
"""
from __future__ import annotations

import time

from ...errors import InfeasibleError
from ... import interrupt, objectives
from ...params import declared
from ..base import Algorithm, Partition, no_progress
from ...qidata import QIData
from . import datafly, kgen, optimal, random_search
from .checker import LOSSES, NodeChecker
from .levels import build_space
from ...privacy import spec_of


def _loss_name(params) -> str:
    name = str(params.get("loss") or "log").lower()
    return name


def _models_phrase(ch, lead: str) -> str:
    """' <lead> <model names>' when privacy models beyond k are enforced, else ''."""
    if ch.privacy is None:
        return ""
    names = [m.describe()["model"] for m in ch.privacy.models[1:]]
    return f" {lead} {', '.join(names)}"


def run_search(name: str, search, data: QIData, k: int, seed: int, params: dict,
               progress=no_progress, stop_early: bool = True) -> Partition:
    """Build the level maps and the checker, run ``search``, publish the chosen node.
    ``stop_early``: the search reads only feasibility and the loss of feasible nodes, so the
    checker may stop grouping a node as soon as it has too many classes to be feasible (kgen
    ranks infeasible nodes by their suppressed rows: False)."""
    t0 = time.perf_counter()
    space = build_space(data)
    ms = params.get("max_suppression")
    privacy = spec_of(data)
    weights = objectives.weight_vector(data)
    ch = NodeChecker(space, k, 0.0 if ms is None else ms, _loss_name(params), privacy=privacy,
                     weights=weights, stop_early=stop_early)
    ch.poll = lambda: interrupt.check(progress)  # every node grouped by a kernel polls Ctrl-C
    levels, stats = search(ch, params, seed, progress)
    if levels is None:
        raise InfeasibleError(
            f"no generalization is k-anonymous (k={k}){_models_phrase(ch, 'with every class satisfying')} within max_suppression="
            f"{ch.max_suppression} ({ch.limit} of {ch.n} rows); lower k or raise max_suppression")
    res = ch.check(levels)
    if not res.feasible:
        raise InfeasibleError(
            f"{name}: even the fully generalized node leaves {res.n_suppressed} rows in classes "
            f"smaller than k={k}{_models_phrase(ch, 'or violating')}, more than max_suppression allows ({ch.limit} rows); lower k "
            f"or raise max_suppression")
    gcp, dm = ch.loss_as("gcp", levels), ch.loss_as("dm", levels)
    info = {
        "lattice_algo": name,
        "qi_order": list(space.names),
        "levels": [int(x) for x in levels],
        "heights": [int(h) for h in space.heights],
        "node": {q: int(x) for q, x in zip(space.names, levels)},
        "height": {q: int(h) for q, h in zip(space.names, space.heights)},
        "node_height": int(sum(levels)),
        "lattice_height": int(sum(int(h) for h in space.heights)),
        "min_levels": [int(x) for x in ch.bounds],
        "loss_metric": ch.loss_name,
        "loss": float(res.loss),
        "log": float(ch.log_level(levels)),
        "gcp": float(gcp),
        "dm": float(dm),
        "max_suppression": ch.max_suppression,
        "n_evaluated": int(ch.n_evaluated),
        "n_passes": int(ch.n_passes),
        "rows_grouped": int(ch.n_rows_grouped),
        "n_checks": int(ch.n_checks),
        "search_s": time.perf_counter() - t0,
        "auto_widths": dict(space.auto_widths),
    }
    info.update({k_: v for k_, v in stats.items() if isinstance(v, (int, float, str))})
    part = ch.partition(levels, info)
    progress(1.0)
    return part


def _runner(name, search, stop_early=True):
    def run(data: QIData, k: int, seed: int, params: dict, progress=no_progress) -> Partition:
        return run_search(name, search, data, k, seed, params, progress, stop_early)
    run.__name__ = f"run_{name}"
    return run


def _optimal(ch, params, seed, progress):
    return optimal.search(ch, progress)



ALGORITHMS = [
    Algorithm("optimal", _runner("optimal", _optimal), "lattice", declared("optimal"),
              "exact minimum-loss full-domain generalization (OLA/Flash-style pruned search)",
              needs_num_trees=True),
    Algorithm("kgen", _runner("kgen", kgen.search, stop_early=False), "lattice", declared("kgen"),
              "KGEN genetic lattice search (De Pascale et al. 2023)", needs_num_trees=True),
    Algorithm("random", _runner("random", random_search.search), "lattice", declared("random"),
              "random lattice search baseline (uniform nodes, fixed budget)", needs_num_trees=True),
    Algorithm("datafly", _runner("datafly", datafly.search), "lattice", declared("datafly"),
              "Sweeney's Datafly heuristic", needs_num_trees=True),
]

__all__ = ["ALGORITHMS", "LOSSES", "NodeChecker", "build_space", "run_search"]
