"""Partition-then-cluster: quadratic clustering algorithms on large tables.

Above ``partition_above`` rows, a clustering algorithm does not see the whole table: Mondrian's
strict median cuts (the ``mondrian`` kernel with k' = max(k, block_rows // 2)) first split the
rows into blocks of about block_rows/2 .. block_rows rows (more where many rows are equal), then
the algorithm runs inside each block with the same k, seed and parameters, blocks in parallel
threads (numba kernels release the GIL; each worker uses one numba thread). Global numeric
ranges and taxonomies are shared by every block, so NCP means the same everywhere.

Guarantee: every block has >= k' >= k rows and the algorithm returns classes of >= k rows
inside its block, so the union is k-anonymous; classes never span two blocks (the price in
utility: a class cannot take rows from a neighbouring block). Cost: O(n log n) for the blocks,
then O(n · block_rows / k) for an O(n²/k) algorithm instead of O(n²/k).

``kanon_runs.details`` records ``partitioned`` (blocks used or not), ``blocks`` and
``block_rows``; the parameters ``partition_above`` and ``block_rows`` are recorded with the rest.
"""
from __future__ import annotations

import dataclasses
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from .base import Partition, no_progress
from ..qidata import QIData

DEFAULT_PARTITION_ABOVE = 50_000
DEFAULT_BLOCK_ROWS = 2_000


def split_blocks(data: QIData, k: int, block_rows: int) -> list:
    """Row indices (int64 arrays) of the blocks: the classes of strict Mondrian with
    k' = max(k, block_rows // 2)."""
    from .mondrian import partition_rows
    ec = partition_rows(data, max(int(k), int(block_rows) // 2))
    order = np.argsort(ec, kind="stable")
    bounds = np.flatnonzero(np.diff(ec[order])) + 1
    return np.split(order.astype(np.int64), bounds)


def subset(data: QIData, rows: np.ndarray) -> QIData:
    """The rows ``rows`` of ``data`` with the global ranges and trees kept. Per-row arrays of
    ``extra`` are cut too (numpy arrays, Arrow arrays such as a sensitive column, dataclasses of
    per-row ``codes``); other entries (the run's privacy spec: its models are enforced on the
    whole partition after the blocks) are passed unchanged."""
    def cut(v):
        if isinstance(v, np.ndarray) and v.shape[:1] == (data.n,):
            return v[rows]
        if isinstance(v, (pa.Array, pa.ChunkedArray)) and len(v) == data.n:
            return v.take(pa.array(rows))
        if dataclasses.is_dataclass(v) and isinstance(getattr(v, "codes", None), np.ndarray) \
                and v.codes.shape[:1] == (data.n,):
            return dataclasses.replace(v, codes=v.codes[rows])
        return v

    return dataclasses.replace(
        data, n=int(rows.size), num=data.num[rows], num_null=data.num_null[rows],
        cat=data.cat[rows], extra={name: cut(v) for name, v in data.extra.items()},
        num_leaf=None if data.num_leaf is None else data.num_leaf[rows])


def _run_block(run, sub, k, seed, params):
    import numba
    numba.set_num_threads(1)  # the blocks are the parallelism
    return run(sub, k, seed, params, no_progress)


def partitioned(run, name: str):
    """Wrap an ``Algorithm.run`` so that tables above ``params['partition_above']`` rows run
    block by block (see the module docstring); smaller tables run as before."""

    def run_blocks(data: QIData, k: int, seed: int, params: dict, progress=no_progress) -> Partition:
        above = int(params.get("partition_above", DEFAULT_PARTITION_ABOVE))
        block_rows = int(params.get("block_rows", DEFAULT_BLOCK_ROWS))
        if above <= 0 or data.n <= above or data.n < 4 * k:
            part = run(data, k, seed, params, progress)
            part.info = {**part.info, "partitioned": False}
            return part
        blocks = split_blocks(data, k, block_rows)
        ec = np.empty(data.n, dtype=np.int64)
        suppressed = None
        offset = 0
        workers = max(1, min(len(blocks), os.cpu_count() or 1))
        infos = []
        with ThreadPoolExecutor(max_workers=workers, thread_name_prefix=f"kanon-{name}") as pool:
            futures = [pool.submit(_run_block, run, subset(data, rows), k, seed + b, params)
                       for b, rows in enumerate(blocks)]
            for b, (rows, fut) in enumerate(zip(blocks, futures)):
                part = fut.result()
                local = np.asarray(part.ec, dtype=np.int64)
                ec[rows] = local + offset
                offset += int(local.max()) + 1 if local.size else 0
                if part.suppressed is not None:
                    if suppressed is None:
                        suppressed = np.zeros(data.n, dtype=bool)
                    suppressed[rows] = part.suppressed
                infos.append(part.info)
                progress((b + 1) / len(blocks))
        sizes = [int(r.size) for r in blocks]
        info = {"partitioned": True, "blocks": len(blocks), "block_rows": block_rows,
                "block_min_rows": min(sizes), "block_max_rows": max(sizes)}
        return Partition(ec=ec, suppressed=suppressed, info=info)

    run_blocks.__name__ = f"run_{name}_blocks"
    run_blocks.__doc__ = run.__doc__
    return run_blocks
