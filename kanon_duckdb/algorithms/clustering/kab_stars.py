"""The stars of ``kab``: k-member clusterings inside Mondrian blocks, built in one numba call.

- ``StarMaker.fresh``: an initial star. k-member clustering with random seeds (Wang, Liu, Gao's
  Table III seeding; NCP cost) inside the blocks of strict Mondrian with k' = block_rows / 2,
  block_rows drawn per star from BLOCK_SIZES (a deviation from the paper's Algorithm 1, see
  ``kab``). Cost O(n · block_rows / k · d) plus, once per block size and run, the Mondrian split
  O(n log n).
- ``StarMaker.reborn``: the star that replaces a swallowed one (deviation, see ``_blackhole``):
  the black hole with a random share of its clusters re-clustered by k-member, i.e. a new star
  born near the black hole. The clusters are grouped into the Mondrian blocks of their first
  record; whole blocks are drawn until the share of rows is reached, and each block's clusters
  are re-clustered together. Cost O(n) plus k-member on the drawn rows.

Both draw every random number from the ``numpy.random.Generator`` they are given. Without
privacy models the result is k-anonymous with classes of k..2k-1 rows (blocks under 2k rows are
one class); with models, clusters close under them as in ``kmember``.
"""
from __future__ import annotations

import threading

import numpy as np

from ..._numba_config import njit
from ._closing import packed_of, place_cheapest
from ._ncp import assign_to_cheapest, new_stats
from .kmember import _kmember_clusters

# rows per Mondrian block of a star: one of these per star (random), so stars differ in blocks too
BLOCK_SIZES = (500, 625, 750, 875, 1000)
# lazy candidate buffer of k-member inside a block (results do not depend on it; speed does:
# kmember's 4k is tuned for whole tables, a block of <= 1000 rows rescans cheaply)
STAR_BUFFER = 16


@njit
def kmember_blocks(ds, order, bounds, k, B, P, scr_cols, M, ec):
    """k-member (random seeds) inside each block; returns the number of clusters C.

    order   int64 (m,)  the rows, grouped by block, in random order inside each block (the
                        seed order; leftovers are taken in this order too)
    bounds  int64 (nb+1,) block b is order[bounds[b]:bounds[b+1]]
    ec      int64 (n,)  OUT cluster ids 0..C-1 of the rows in ``order`` (other entries untouched)
    A block under 2k rows is one cluster. O(sum over blocks of m_b² / k · d).
    """
    n = ec.shape[0]
    pos = np.empty(n, dtype=np.int64)
    bc = np.empty(B)
    bi = np.empty(B, dtype=np.int64)
    h = np.zeros(M + 1)
    scr = np.empty((4, scr_cols))
    dv = np.zeros(M + 1)
    left = np.empty(max(2 * k, 1), dtype=np.int64)
    offset = 0
    for b in range(bounds.shape[0] - 1):
        rows = order[bounds[b]:bounds[b + 1]]
        m = rows.shape[0]
        if m == 0:
            continue
        if m < 2 * k:
            for i in range(m):
                ec[rows[i]] = offset
            offset += 1
            continue
        C = m // k
        st = new_stats(ds, C)
        U = rows.copy()
        for i in range(m):
            pos[U[i]] = i
            ec[U[i]] = -1
        state = np.array([m, U[0], 0, 0, 0], dtype=np.int64)
        # np.int64: kmember's own specialization, no extra Literal compile (_numba_config)
        _kmember_clusters(ds, st, U, pos, state, ec, k, C, np.int64(1), bc, bi, rows, P, h, scr,
                          dv)
        made = state[2]
        nl = np.int64(0)  # np.int64: no extra Literal compile (_numba_config)
        for i in range(m):  # leftovers, in the block's random order
            if ec[rows[i]] < 0:
                if nl == left.shape[0]:
                    grown = np.empty(2 * nl, dtype=np.int64)
                    grown[:nl] = left
                    left = grown
                left[nl] = rows[i]
                nl += 1
        if M > 0:
            place_cheapest(ds, st, left, nl, made, ec, rows, P, scr_cols)
        else:
            assign_to_cheapest(ds, st, left, nl, made, ec, False)
        for i in range(m):
            ec[rows[i]] += offset
        offset += made
    return offset


@njit
def _grouped(rows, key, rand_order):
    """``rows`` grouped by ``key[row]`` (ascending), in ``rand_order`` inside a group; returns
    (order, bounds) for ``kmember_blocks``. O(m log m)."""
    m = rows.shape[0]
    keyed = np.empty(m, dtype=np.int64)
    for i in range(m):
        keyed[i] = key[rows[rand_order[i]]]
    idx = np.argsort(keyed, kind="mergesort")
    order = np.empty(m, dtype=np.int64)
    for i in range(m):
        order[i] = rows[rand_order[idx[i]]]
    nb = 0
    for i in range(m):
        if i == 0 or keyed[idx[i]] != keyed[idx[i - 1]]:
            nb += 1
    bounds = np.empty(nb + 1, dtype=np.int64)
    b = 0
    for i in range(m):
        if i == 0 or keyed[idx[i]] != keyed[idx[i - 1]]:
            bounds[b] = i
            b += 1
    bounds[nb] = m
    return order, bounds


class StarMaker:
    """Builds kab's stars for one run (data, NCP bundle ``ds``, k); thread-safe."""

    def __init__(self, data, ds, k: int):
        self.data, self.ds, self.k = data, ds, int(k)
        self.models = packed_of(data)
        self._splits: dict[int, np.ndarray] = {}
        self._lock = threading.Lock()

    def blocks(self, block_rows: int) -> np.ndarray:
        """Block id per row (int64 (n,)) for ``block_rows`` (computed once per run and size)."""
        with self._lock:
            got = self._splits.get(block_rows)
        if got is None:
            from ..mondrian import partition_rows
            n = self.data.n
            got = (np.zeros(n, dtype=np.int64) if n <= 4 * BLOCK_SIZES[0]
                   else partition_rows(self.data, max(self.k, block_rows // 2)))
            with self._lock:
                self._splits[block_rows] = got
        return got

    def _cluster(self, rows, key, rng, out) -> int:
        P, scr_cols, M = self.models
        order, bounds = _grouped(rows, key, rng.permutation(rows.size).astype(np.int64))
        return int(kmember_blocks(self.ds, order, bounds, self.k, STAR_BUFFER, P, scr_cols, M,
                                  out))

    def fresh(self, rng: np.random.Generator) -> np.ndarray:
        """A new star: int64 labels (n,)."""
        n = self.data.n
        if self.k <= 1:
            return np.arange(n, dtype=np.int64)
        blk = self.blocks(int(BLOCK_SIZES[int(rng.integers(len(BLOCK_SIZES)))]))
        lab = np.empty(n, dtype=np.int64)
        self._cluster(np.arange(n, dtype=np.int64), blk, rng, lab)
        return lab

    def reborn(self, bh: np.ndarray, n_bh: int, share: float,
               rng: np.random.Generator) -> np.ndarray:
        """The black hole ``bh`` (labels 0..n_bh-1) with about ``share`` of its rows re-clustered
        (whole clusters, grouped by the block of their first record); int64 labels (n,)."""
        n = self.data.n
        if self.k <= 1 or share <= 0:
            return bh.copy()
        blk = self.blocks(int(BLOCK_SIZES[int(rng.integers(len(BLOCK_SIZES)))]))
        first = np.full(n_bh, n, dtype=np.int64)
        np.minimum.at(first, bh, np.arange(n, dtype=np.int64))
        home = blk[first]  # block of each black-hole cluster
        rows_per_block = np.bincount(home, weights=np.bincount(bh, minlength=n_bh),
                                     minlength=int(blk.max()) + 1)
        picked = np.zeros(rows_per_block.size, dtype=np.bool_)
        total = 0.0
        for b in rng.permutation(rows_per_block.size):
            if total >= share * n:
                break
            picked[b] = True
            total += rows_per_block[b]
        rows = np.flatnonzero(picked[home[bh]]).astype(np.int64)
        lab = bh.copy()
        if rows.size == 0:
            return lab
        tmp = np.empty(n, dtype=np.int64)
        self._cluster(rows, home[bh], rng, tmp)
        lab[rows] = tmp[rows] + n_bh
        return lab
