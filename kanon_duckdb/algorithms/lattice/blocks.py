"""Blocked tuple order: the encoded tuples sorted once by the leaves of a few QIs, so that a
node's classes lie in blocks of runs of positions and a grouping can stop early.

``build_space`` sorts the encoded tuples (from ``SORT_MIN`` of them) lexicographically by the
leaf ordinals of the *sort QIs* S (``sort_qis``: the QIs of fewest leaves first, as many as keep
the leaf combinations to at most t / ``MIN_RUN``); ``LatticeSpace.perm`` maps positions back to
the data's tuples. For a node, walk S in order:

- a QI at level 0 splits the tuples by its leaf (its leaves' runs are contiguous within the
  runs of the QIs before it);
- a QI at its top (one code) splits nothing; while the leaves of such QIs number at most
  ``SKIP_MAX`` in all, a block gathers one run from each of their leaf combinations ("skipped"),
  otherwise the walk ends before it;
- a QI at a level in between splits by *intervals* of its leaves and ends the walk: cut points
  between leaf x and x + 1 where no level-L code of a leaf <= x is the code of a leaf > x (all
  of them for an interval tree, whose nodes cover contiguous leaves; fewer for a tree whose
  nodes do not: the blocks are then coarser, never wrong).

Every class of the node has one leaf of each splitting QI and one interval, so it lies in one
block: the tuples of equal (leaves, interval) over the sort QIs walked. ``TupleBlocks.plan``
gives the runs of each block (memoized per shape of the walk); ``_block_kernels.group_runs``
groups block by block, adds up the rows of each completed block's classes smaller than k, and
stops as soon as they pass the suppression limit: most infeasible nodes near the feasibility
border suppress 5-40 times the limit, spread over the blocks, so they stop after a few percent
of the tuples. A node whose walk splits nothing (its first sort QI at the top and too many
skipped leaves) has no plan: the checker groups it as before.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from . import _block_kernels as BK

SORT_MIN = 1 << 15  # encoded tuples from which build_space sorts them into blocks
MIN_RUN = 8  # the sort QIs' leaf combinations are at most t / MIN_RUN
SKIP_MAX = 64  # a block gathers its runs over at most this many leaf combinations of top QIs


def sort_qis(leaf_counts, t: int) -> tuple:
    """The sort QIs: QIs of at least 2 leaves by increasing leaf count (then QI order), as long
    as their leaf combinations number at most t // MIN_RUN."""
    out, prod = [], 1
    for j in sorted(range(len(leaf_counts)), key=lambda j: (int(leaf_counts[j]), j)):
        m = int(leaf_counts[j])
        if m < 2:
            continue
        if prod * m > t // MIN_RUN:
            break
        out.append(j)
        prod *= m
    return tuple(out)


def sort_tuples(leaves: list, leaf_counts, t: int):
    """(perm int64 (t,) position -> tuple, sort QIs) for the leaf ordinals ``leaves`` (int32
    (t,) per QI, ``leaf_counts`` leaves per QI), or (None, ()) when no QI can sort them."""
    qis = sort_qis(leaf_counts, t)
    if not qis:
        return None, qis
    nleaf = np.array([int(leaf_counts[j]) for j in qis], dtype=np.int64)
    return BK.lex_order(np.stack([leaves[j] for j in qis]), nleaf), qis


def gather(col: np.ndarray, perm: np.ndarray) -> np.ndarray:
    """col[perm] (contiguous; ``col`` of any stride, read in place), on numba's threads."""
    return BK.gather_rows(col, perm)


def interval_ids(anc_level: np.ndarray) -> np.ndarray:
    """int64 (leaves,): the interval of each leaf at one level (anc_level: each leaf's ancestor
    node there): intervals are cut between leaf x and x + 1 iff no ancestor of a leaf <= x is
    the ancestor of a leaf > x, so each ancestor's leaves lie in one interval."""
    nl = anc_level.shape[0]
    last = np.zeros(int(anc_level.max()) + 1 if nl else 1, dtype=np.int64)
    np.maximum.at(last, anc_level, np.arange(nl, dtype=np.int64))
    reach = np.maximum.accumulate(last[anc_level])
    cut = reach == np.arange(nl)  # a cut after leaf x
    ids = np.zeros(nl, dtype=np.int64)
    ids[1:] = np.cumsum(cut[:-1])
    return ids


@dataclass
class TupleBlocks:
    """The segments of the sorted tuples: for each prefix S[:p] of the sort QIs, the positions
    where one of their leaves changes (``seg[p - 1]``, int64, t appended) and the leaves of
    S[:p] of each segment (``segleaf[p - 1]``, int64 (p, segments))."""
    qis: tuple
    nleaf: np.ndarray
    seg: list
    segleaf: list
    _plans: dict = field(default_factory=dict, repr=False)

    @classmethod
    def build(cls, sorted_leaves: np.ndarray, qis: tuple, leaf_counts) -> "TupleBlocks":
        """From the sort QIs' leaves in sorted order (int32 (m, t)) and every QI's leaves."""
        nleaf = np.array([int(leaf_counts[j]) for j in qis], dtype=np.int64)
        flat, off = BK.segment_starts(sorted_leaves)
        t = sorted_leaves.shape[1]
        seg, segleaf = [], []
        for p in range(1, len(qis) + 1):
            starts = flat[off[p - 1]:off[p]]
            seg.append(np.append(starts, t))
            segleaf.append(sorted_leaves[:p, starts].astype(np.int64))
        return cls(qis, nleaf, seg, segleaf)

    def walk(self, levels, heights):
        """The walk of a node over the sort QIs: (p, shape): p the sort QIs it uses (0: no
        split, no plan), shape per used QI 0 (split by leaf), -1 (skipped top) or its level."""
        shape, p, g = [], 0, 1
        for i, j in enumerate(self.qis):
            L = int(levels[j])
            if L >= int(heights[j]):
                if g * int(self.nleaf[i]) > SKIP_MAX:
                    break
                g *= int(self.nleaf[i])
                shape.append(-1)
                continue
            shape.append(L)
            p = i + 1
            if L > 0:
                break
        return p, tuple(shape[:p])

    def plan(self, levels, heights, trees):
        """(run_start, run_end, block_ptr int64, split QIs (tuple of QI indices), most tuples in
        a block) of a node, or None when its walk splits nothing. Memoized per walk."""
        p, shape = self.walk(levels, heights)
        if p == 0:
            return None
        got = self._plans.get(shape)
        if got is None:
            got = self._plan(p, shape, trees)
            self._plans[shape] = got
        return got

    def _plan(self, p, shape, trees):
        seg, leaves = self.seg[p - 1], self.segleaf[p - 1]
        key = np.zeros(leaves.shape[1], dtype=np.int64)
        split = []
        for i in range(p):  # mixed radix, the first sort QI most significant
            if shape[i] < 0:
                continue
            j = self.qis[i]
            if shape[i] == 0:
                key = key * int(self.nleaf[i]) + leaves[i]
                split.append(j)
            else:
                ids = interval_ids(np.asarray(trees[j].anc[:, shape[i]]))
                key = key * (int(ids[-1]) + 1) + ids[leaves[i]]
        order = np.argsort(key, kind="stable") if -1 in shape else np.arange(key.shape[0])
        ks, st, en = key[order], seg[:-1][order], seg[1:][order]
        newblock = np.ones(ks.shape[0], dtype=bool)
        newblock[1:] = ks[1:] != ks[:-1]
        newrun = newblock.copy()
        newrun[1:] |= st[1:] != en[:-1]
        r0 = np.flatnonzero(newrun)
        r1 = np.append(r0[1:], ks.shape[0]) - 1
        run_start, run_end = st[r0], en[r1]
        block_ptr = np.append(np.flatnonzero(newblock[r0]), r0.shape[0]).astype(np.int64)
        sizes = np.add.reduceat(run_end - run_start, block_ptr[:-1]) if r0.shape[0] else [0]
        return (np.ascontiguousarray(run_start), np.ascontiguousarray(run_end), block_ptr,
                tuple(split), int(np.max(sizes)))
