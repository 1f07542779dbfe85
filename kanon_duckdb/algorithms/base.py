"""The contract every algorithm implements.

An algorithm is a function ``run(data: QIData, k: int, seed: int, params: dict, progress) ->
Partition``. It sees only encoded arrays (``QIData``), never DuckDB; the orchestrator
(``kanon_duckdb.anonymize``) validates input, encodes, calls it, and generalizes the result.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from ..progress import ProgressFn, no_progress  # noqa: F401 - the algorithms import them from here


@dataclass
class Partition:
    """What an algorithm returns.

    ec          int64 (n,)  class id per row, 0..n_classes-1 (suppressed rows: their own class ids
                            are allowed but they are flagged)
    suppressed  bool (n,) or None
    cat_nodes   int32 (n_classes, dc) or None: node id per class and categorical QI, when the
                algorithm fixes the generalization (full-domain); default = LCA of the class's leaves
    num_lo/num_hi float64 (n_classes, dn) or None: range per class when the algorithm fixes it
                (full-domain intervals); default = min/max of the class's values
    info        dict recorded in kanon_runs.params/details (chosen node, weights, counters)
    """
    ec: np.ndarray
    suppressed: np.ndarray | None = None
    cat_nodes: np.ndarray | None = None
    num_lo: np.ndarray | None = None
    num_hi: np.ndarray | None = None
    info: dict = field(default_factory=dict)




@dataclass(frozen=True)
class Algorithm:
    """Registry entry: name, run function, family ('local' or 'lattice'), parameters, summary.

    ``params`` is given as ``kanon_duckdb.params.declared(name)`` (the Param declarations of
    ``params.ALGORITHM_PARAMS``; a ``{name: default}`` dict is still read, SHARED names typed);
    after construction ``specs`` maps each name to its Param and ``params`` to its default.
    """
    name: str
    run: Callable
    family: str
    params: dict
    summary: str
    needs_num_trees: bool = False
    specs: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        from ..params import declare
        specs = declare(self.params)
        object.__setattr__(self, "specs", specs)
        object.__setattr__(self, "params", {n: p.default for n, p in specs.items()})

    def column_params(self) -> list:
        """Names of the parameters that name input columns (read into ``QIData.extra``)."""
        return [n for n, p in self.specs.items() if p.kind in ("column", "columns")]
