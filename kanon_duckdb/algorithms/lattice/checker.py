"""Node evaluation for full-domain generalization: the only part of the lattice family that
touches data. Searches (optimal, kgen, random, datafly) call ``NodeChecker.check(levels)``.

A node is a tuple of levels, one per QI. ``check`` groups the rows by their generalized key
(numba, see ``_kernels``), then: rows in classes smaller than k are suppressed; the node is
*feasible* when at most ``limit = floor(max_suppression * n)`` rows are suppressed. Both facts are
monotone (Samarati 2001; LeFevre et al. 2005): a generalization of a feasible node is feasible,
because its classes are unions of the finer node's classes, so its suppressed rows are a subset.

Losses (``loss :=``) are declared in ``kanon_duckdb.objectives`` (the one registry of
objectives), all computed on what is published (suppressed rows fully generalized):
- ``log``: KGEN's level of generalization (eq. 1-2), mean over QIs of level / height;
- ``gcp``: mean over rows of the mean NCP over QIs; a suppressed row counts 1 per QI;
- ``dm``: discernibility, sum of |e|^2 over published classes plus n per suppressed row.
With per-QI ``weights`` (mean 1, ``objectives.weight_vector``) the means over QIs of log and gcp
are weighted means; equal weights leave every table untouched.

Privacy models (``privacy``, l-diversity / t-closeness / risk): a class is suppressed when it is
smaller than the models' class size or violates a model on its sensitive values. Without
suppression feasibility stays monotone (every model is monotone under generalization); with it,
only for models monotone under suppression (k, risks, distinct l): for entropy / recursive l and
t-closeness a coarser class can violate while a finer part satisfies, so ``optimal`` then drops
its cone tags (``privacy.compat.feasibility_is_monotone``). Such nodes are grouped from the
raw rows (their classes' histograms need the rows), not rolled up.

Speed: results are memoized; a node is grouped from the smallest cached class table of a node
below it (a roll-up: classes of a generalization are unions of classes, so each cached class is
one input "row" with a count), never from SQL. The cache is LRU, bounded by ``cache_entries``
tables and ``cache_rows`` classes in all (2 t by default). With ``stop_early`` (searches that
read only feasibility and feasible losses: optimal, datafly, random) grouping stops as soon as
a node has more than ``cap = n // k + limit`` classes: at most n // k classes can reach k rows,
so more leave over ``limit`` rows suppressed; such a node (n_suppressed -1) costs about cap
inputs instead of the whole table, the common case near an all-distinct bottom. Groupings of
at least ``BUCKET_MIN`` inputs over a key space past ``DENSE_STOP_MAX`` run in hash buckets
(``_kernels.group_buckets``, on every numba thread: the buckets are independent, and the
same table and stop decision as one thread): each bucket's hash table stays in cache, and the
grouping also stops once the buckets done hold more than ``limit`` rows in classes smaller than
k (most nodes near the feasibility border suppress 10-100 times the limit), unless
``check(..., keep_table=True)`` asks for the node's table to cache it: such a grouping, and a
roll-up from a cached table over more than ``DENSE_STOP_MAX`` keys, counts every key of its
key space directly when it is small (``_kernels.group_dense``, up to ``KEEP_TABLE_MAX`` keys
and 4 per input: one memory access per input, the classes' codes decoded from their keys; a
roll-up reads a few hundred thousand classes, which the buckets' partitioning costs about
twice what the direct count does, early stop or not). From ``blocks.SORT_MIN`` encoded tuples they are sorted into blocks of a few QIs'
leaves (``blocks.py``): a pass over them at a node that has blocks groups block by block
(``_block_kernels.group_runs``, small per-block counting arrays in cache) and stops as soon as
the blocks done show the node infeasible; a grouping asked to keep its table stops only if the
blocks of its first ``PROBE`` fraction of the tuples do (then the node is reported infeasible
with n_suppressed -1 and no table; ``optimal`` moves its kept grouping up the path), else it
completes, feasible or not. Passes over the encoded tuples read
the level codes byte by byte (``LatticeSpace.planes``: one byte per row for a level of at most
256 codes) and a histogram with one row per tuple is read without its counts. Such capped
passes over at least ``PARALLEL_MIN`` encoded rows run in one chunk per numba thread, merged in
chunk order (``_kernels.group_node_parallel``: the same table as one sequential pass). Cached
tables keep each class's codes (``kc``), which a roll-up maps level to level. Per-QI minimum
levels (``bounds``): if QI j alone at level L leaves more than ``limit`` rows in classes < k,
every node with that level is infeasible (its classes are subsets of the single-QI classes), so
nodes below the bounds are rejected without counting.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ... import objectives
from ...errors import InvalidParameterError
from ..base import Partition
from . import _block_kernels as BK
from . import _kernels as K
from .levels import LatticeSpace

LOSSES = objectives.LATTICE_LOSSES
_DENSE_MAX = 1 << 21
_NO_CAP = 1 << 62
_KEY_BLOCK = 4096  # inputs keyed per block by the grouping kernel
PARALLEL_MIN = 1 << 18  # encoded rows from which a capped pass over them runs in thread chunks
BUCKET_MIN = 1 << 15  # inputs from which a stopping grouping runs in hash buckets
DENSE_STOP_MAX = 1 << 16  # key spaces up to this size: a stopping grouping counts them densely
KEEP_TABLE_MAX = 1 << 22  # a grouping that keeps its table counts key spaces up to this directly
BUCKET_ROWS = 1 << 14  # about this many inputs per bucket (its hash table stays in cache)
PROBE = 0.25  # a kept grouping by blocks stops if its first quarter shows the node infeasible
LOCAL_MAX = 1 << 20  # a node's key within a block spans at most this: grouped by blocks


@dataclass(frozen=True)
class CheckResult:
    feasible: bool
    loss: float           # loss of the published table at this node (inf when infeasible)
    lower_bound: float    # a lower bound of the loss of this node and of every node above it
    n_suppressed: int     # rows in classes < k (-1 when rejected without counting them)
    min_class: int        # smallest class before suppression (0 when unknown)
    n_classes: int        # classes before suppression (0 when unknown)
    stats: objectives.NodeStats | None = None  # class statistics (None when not grouped)


class NodeChecker:
    """Memoized evaluation of lattice nodes for one data set, k, suppression limit and loss."""

    def __init__(self, space: LatticeSpace, k: int, max_suppression: float = 0.0, loss: str = "log",
                 cache_entries: int = 1024, privacy=None, weights=None, stop_early: bool = False,
                 cache_rows: int | None = None):
        self.objective = objectives.get(loss, "lattice")
        ms = float(max_suppression)
        if not (0.0 <= ms <= 1.0) or math.isnan(ms):
            raise InvalidParameterError(
                f"max_suppression must be a fraction of rows in [0, 1], got {max_suppression!r}")
        self.space, self.k, self.loss_name = space, int(k), loss
        self.n = space.n
        self.max_suppression = ms
        self.limit = int(math.floor(ms * self.n + 1e-9))
        self.heights = space.heights
        self.top = tuple(int(h) for h in space.heights)
        self.memo: dict = {}
        self.n_evaluated = 0      # nodes grouped by a kernel
        self.n_rows_grouped = 0   # input classes fed to the kernels
        self.n_passes = 0         # groupings that read the encoded tuples (not a cached table)
        self.n_checks = 0
        self.poll = lambda: None  # called before every kernel grouping (interruption check)
        self.parallel_min = PARALLEL_MIN  # encoded rows from which capped passes use threads
        self.bucket_min = BUCKET_MIN  # inputs from which stopping groupings run in buckets
        self.t = space.t  # encoded rows: the distinct tuples of a histogram
        # group_node counts densely only key spaces <= max(2^16, 4 inputs) (inputs <= t): a
        # larger array would never be read (Adult: 0.5 MB instead of 8 MB filled per checker)
        self._dense = np.full(min(_DENSE_MAX, max(1 << 16, 4 * self.t)), -1, dtype=np.int32)
        self._hkey = np.zeros(0, dtype=np.int64)  # sized by _tables on first use
        self._hval = np.zeros(0, dtype=np.int32)
        self._keybuf = np.empty(_KEY_BLOCK, dtype=np.int64)
        self._cache_entries = cache_entries
        self._ckeys = np.full((cache_entries, space.d), np.iinfo(np.int64).max, dtype=np.int64)
        self._csize = np.full(cache_entries, np.iinfo(np.int64).max, dtype=np.int64)
        self._cstamp = np.zeros(cache_entries, dtype=np.int64)
        self._ctab = [None] * cache_entries
        self._ctab_used = np.zeros(cache_entries, dtype=bool)
        self._cached_rows = 0
        self.cache_rows = 2 * self.t if cache_rows is None else int(cache_rows)
        self._clock = 0
        self._n_cached = 0
        self._hw = 0  # slots [0, _hw) may be used: a free slot is always the lowest one
        self.weights = None if weights is None else np.asarray(weights, dtype=np.float64)
        w = self.weights
        self._inv_h = [(1.0 if w is None else float(w[j])) / float(h) if h > 0 else 0.0
                       for j, h in enumerate(space.heights)]
        ncp_mean = space.ncp_mean if w is None else space.ncp_mean * w[:, None]
        self._ncp_rows = [list(map(float, ncp_mean[j])) for j in range(space.d)]
        self._cncp = space.cncp if w is None else self._weighted_cncp(space, w)
        # the encoded rows as an input class table: r = t, counts of a histogram (or 1 each)
        self._nolut = np.zeros(1, dtype=np.int64)
        self._scratch = None
        self._bscratch = None
        self._dslots = None
        self._dscratch = None
        self._bslots = None  # group_runs' slots (threads, local key space) int64, all 0
        self._bbuf = None  # group_runs' per-thread class buffers (first, rows)
        self._like = np.zeros(0, dtype=space.code_dtype)  # the dtype of the class tables' codes
        self._qi_rows = np.arange(space.d, dtype=np.int64)  # rows of a cached table's kc
        # (a histogram whose tuples each stand for one row, n == t, is read as plain rows: the
        # kernels then skip the counts, 8 bytes per tuple)
        self._norep = (np.zeros(0, dtype=np.int32),
                       np.zeros(0, dtype=np.int64) if space.counts is None or space.n == space.t
                       else np.ascontiguousarray(space.counts, dtype=np.int64))
        self.bounds = self._per_qi_bounds()
        # privacy models beyond k (privacy.PrivacySpec): classes violating one are suppressed
        self.privacy = privacy if privacy is not None and privacy.has_class_models else None
        # stop_early: a node with more than n // k + limit classes leaves more than limit rows
        # in classes < k (at most n // k classes reach k), so grouping stops there and the node
        # is reported infeasible with n_suppressed = -1 (its exact statistics are not computed)
        # (not with DM: the lower bound it prunes with is the node's sum of squared class sizes)
        self.cap = self.n // max(self.k, 1) + self.limit \
            if stop_early and self.privacy is None and not self.objective.bound_prunes else _NO_CAP

    # ------------------------------------------------------------------ static parts
    @staticmethod
    def _weighted_cncp(space, w) -> np.ndarray:
        """NCP per code times the weight of the code's QI (same flat layout as space.cncp)."""
        out = space.cncp.copy()
        for j in range(space.d):
            for lv in range(int(space.heights[j]) + 1):
                c = int(space.cstart[j] + lv)
                a = int(space.coff[c])
                out[a:a + int(space.mcol[c])] *= w[j]
        return out

    def _per_qi_bounds(self) -> tuple:
        sp = self.space
        out = []
        for j in range(sp.d):
            lv = int(sp.heights[j])
            for L in range(int(sp.heights[j]) + 1):
                c = int(sp.cstart[j] + L)
                if K.single_qi_suppression(sp.code_counts(c, self._norep[1]),
                                           self.k) <= self.limit:
                    lv = L
                    break
            out.append(lv)
        return tuple(out)

    def log_level(self, levels) -> float:
        """KGEN's LOG (eq. 1-2): mean over QIs of level / height (0 for a height-0 tree)."""
        d = len(self._inv_h)
        return sum(int(x) * w for x, w in zip(levels, self._inv_h)) / d if d else 0.0

    def gcp_nosup(self, levels) -> float:
        d = len(self._ncp_rows)
        return sum(r[int(x)] for r, x in zip(self._ncp_rows, levels)) / d if d else 0.0

    def level_weight(self, j: int) -> float:
        """QI j's term of LOG per level: weight / height (0 for a height-0 tree)."""
        return self._inv_h[j]

    def ncp_row(self, j: int) -> list:
        """QI j's (weighted) mean NCP over the rows at each level (GCP without suppression)."""
        return self._ncp_rows[j]

    def static_bound(self, levels) -> float:
        """Loss lower bound known without data, monotone in the levels."""
        return self.objective.static_bound(self, levels)

    def static_bounds(self, levels_by_qi) -> np.ndarray:
        """``static_bound`` of many nodes at once: ``levels_by_qi`` holds one int array per QI
        (QI j's level of each node). Bit-identical to ``static_bound`` node by node: a separable
        objective's per-QI terms are summed in QI order and divided by d as the scalar does."""
        m = len(levels_by_qi[0]) if len(levels_by_qi) else 1
        ob = self.objective
        if not ob.separable:
            return np.full(m, float(ob.static_bound(self, self.top)))
        acc = np.zeros(m)
        for j, lv in enumerate(levels_by_qi):
            acc = acc + ob.bound_terms(self, j)[lv]
        return acc / len(levels_by_qi) if len(levels_by_qi) else acc

    @property
    def loss_is_monotone(self) -> bool:
        """True when a generalization never has a lower loss (so feasible nodes prune upwards)."""
        return self.objective.is_monotone(self.limit)

    def below_bounds(self, levels) -> bool:
        return any(int(levels[j]) < self.bounds[j] for j in range(len(self.bounds)))

    # ------------------------------------------------------------------ grouping
    def _kernel_args(self, levels, tab):
        """Arguments of the grouping kernels for the node at ``levels`` read from the encoded
        rows (``tab`` None) or rolled up from a cached class table ``tab`` = (rep, cnt, kc, its
        levels): (src, cols, lut, lutoff, use_lut, rep, cnt, identity, strides, key space,
        live QIs or None when every QI is live). A QI with one code at this node (its top) adds
        0 to every key: its column is left out."""
        sp = self.space
        cols = sp.cols(levels)
        strides, ks = sp.keyspace(levels)
        live = np.flatnonzero(sp.mcol[cols] > 1)
        full = live.size == sp.d
        if tab is None:  # the byte planes of the node's columns (same keys, narrower reads)
            if not full:
                cols, strides = cols[live], strides[live]
            rows, pst = sp.key_planes(cols, strides)
            return (sp.planes, rows, self._nolut, self._nolut, False, self._norep[0],
                    self._norep[1], True, pst, ks, None if full else live)
        rep, cnt, kc, below = tab
        maps = [sp.level_map(j, below[j], levels[j]) for j in range(sp.d)]
        off = np.zeros(sp.d, dtype=np.int64)
        if sp.d > 1:
            off[1:] = np.cumsum([m.size for m in maps[:-1]])
        lut = np.concatenate(maps) if maps else self._nolut
        rows = self._qi_rows if full else self._qi_rows[live]
        return (kc, rows, lut, off if full else off[live], True, rep, cnt, False,
                strides if full else strides[live], ks, None if full else live)

    def _full_codes(self, levels, tab, rep, kc, live):
        """A class table's codes (d, C) at the node: the kernel's codes of its live QIs for a
        roll-up, the encoded codes of each class's representative row for a pass over the
        tuples (the kernel read byte planes there); constant QIs have code 0."""
        sp = self.space
        if tab is None:
            cols = sp.cols(levels)
            if live is not None:
                cols = cols[live]
            kc = sp.codes_at(cols, rep)
        if live is None:
            return kc
        out = np.zeros((sp.d, kc.shape[1]), dtype=kc.dtype)
        out[live] = kc
        return out

    def _run_kernels(self, levels, tab=None, want_cls=False, cap=_NO_CAP):
        """Group the node at ``levels`` from the encoded rows (``tab`` None) or from a cached
        class table ``tab`` = (rep, cnt, kc, its levels) of a node below it.
        Returns (rep, cnt, cls, kc): see ``_kernels.group_node``."""
        sp = self.space
        if sp.keyspace(levels)[1] >= (1 << 62):  # many QIs: compare code tuples (no level maps)
            cols = sp.cols(levels)
            rep, cnt = (self._norep[0], self._norep[1]) if tab is None else tab[:2]
            rep, cnt, cls = K.group_tuple(sp.codes, rep, cnt, tab is None, cols, cap, want_cls)
            cls = sp.data_order(cls) if tab is None and want_cls else cls
            return rep, cnt, cls, sp.codes_at(cols, rep)
        *args, ks, live = self._kernel_args(levels, tab)
        if tab is None and cap < _NO_CAP and self.t >= self.parallel_min:  # long: in chunks
            key_scr, val_scr, dense_scr = self._chunk_scratch()
            hkey, hval = self._tables(min(cap + 1, self.t))
            out = K.group_node_parallel(*args, ks, cap, key_scr, val_scr, dense_scr, hkey, hval,
                                        want_cls)
        else:
            c = self.t if tab is None else tab[0].shape[0]
            hkey, hval = self._tables(min(cap + 1, c, ks))
            out = K.group_node(*args, ks, cap, self._dense, hkey, hval,
                               self._keybuf, want_cls)
        cls = sp.data_order(out[2]) if tab is None and want_cls else out[2]
        return out[0], out[1], cls, self._full_codes(levels, tab, out[0], out[3], live)

    def _tables(self, keys: int):
        """The open-addressing tables of ``group_node`` (hkey int64 all -1, hval int32) for up to
        ``keys`` classes: allocated on first need and grown to the largest need so far (a
        stopping checker's groupings need about 2 cap slots, not 2 t: 0.4 s of page faults at
        10M tuples)."""
        size = 1
        while size < 2 * keys + 2:
            size *= 2
        if self._hkey.shape[0] < size:
            self._hkey = np.full(size, -1, dtype=np.int64)
            self._hval = np.empty(size, dtype=np.int32)
        return self._hkey, self._hval

    def _dense_fits(self, ks: int, c: int) -> bool:
        """``group_node`` counts this key space in its dense array (the mode it picks)."""
        return ks <= self._dense.shape[0] and (ks <= 65536 or ks <= 4 * c)

    def _run_stopping(self, levels, tab=None, keep_table=False):
        """Class table (rep, cnt, kc) of the node at ``levels``, or None when the grouping
        stopped because the node is infeasible: more than ``cap`` classes, or (bucketed
        grouping, ``_kernels.group_buckets``, unless ``keep_table``) more than ``limit`` rows
        found in classes smaller than k. Only with ``stop_early``; same tables as
        ``_run_kernels`` when complete. A grouping that keeps its table anyway, or a roll-up
        over more than ``DENSE_STOP_MAX`` keys, of at least ``bucket_min`` inputs over at most
        ``KEEP_TABLE_MAX`` keys (and 4 per input), counts each key directly
        (``_kernels.group_dense``: no early stop on the suppression; the table is complete,
        feasible or not). Otherwise key spaces that are small (counted densely: up to
        ``DENSE_STOP_MAX``) or far larger than ``cap`` (the plain grouping meets cap + 1
        classes after about cap inputs) and short inputs take ``group_node``; the rest run in
        hash buckets."""
        sp = self.space
        if tab is None and sp.blocks is not None:
            out = self._run_blocks(levels, keep_table)
            if out is not NotImplemented:
                return out
        c = self.t if tab is None else tab[0].shape[0]
        ks = sp.keyspace(levels)[1]
        if ((keep_table or (tab is not None and ks > DENSE_STOP_MAX))
                and ks <= min(KEEP_TABLE_MAX, 4 * c) and c >= self.bucket_min
                and self.n < (1 << 31)):
            *args, ks, live = self._kernel_args(levels, tab)
            slots = self._slots(ks)
            scratch = self._dense_scratch(min(-(-c // slots.shape[0]), self.cap + 1))
            stopped, rep, cnt, kc = K.group_dense(*args, ks, self.cap, slots, scratch,
                                                  sp.keyspace(levels)[0], self._like)
            return None if stopped else (rep, cnt, kc)
        if (ks <= DENSE_STOP_MAX or c < self.bucket_min
                or min(ks, c) > 2 * self.cap):
            rep, cnt, _, kc = self._run_kernels(levels, tab, cap=self.cap)
            return None if rep.shape[0] > self.cap else (rep, cnt, kc)
        *args, ks, live = self._kernel_args(levels, tab)
        keys, skey, sidx = self._bucket_scratch()
        pbits = 1
        while pbits < 12 and (c >> pbits) > BUCKET_ROWS:
            pbits += 1
        stopped, rep, cnt, kc = K.group_buckets(*args, ks, self.k,
                                                _NO_CAP if keep_table else self.limit,
                                                self.cap, pbits, keys, skey, sidx,
                                                self._threads())
        return None if stopped else (rep, cnt, self._full_codes(levels, tab, rep, kc, live))

    def block_args(self, levels):
        """The node-specific arguments of ``_block_kernels.group_runs`` (planes, rows, strides,
        crow, cnb, cnt, run_start, run_end, block_ptr) and (local key space, most tuples of a
        block), or None when the node has no blocks (``blocks.TupleBlocks.plan``): the key
        within a block leaves out the QIs split there (constant in a block) and the constant
        ones."""
        sp = self.space
        plan = sp.blocks.plan(levels, sp.heights, sp.trees)
        if plan is None:
            return None
        run_start, run_end, block_ptr, split, maxblock = plan
        cols = sp.cols(levels)
        local = [j for j in range(sp.d) if sp.mcol[cols[j]] > 1 and j not in split]
        strides = np.empty(len(local), dtype=np.int64)
        ks = 1
        for i, j in enumerate(local):
            strides[i] = ks
            ks *= int(sp.mcol[cols[j]])
        rows, pst = sp.key_planes(cols[local], strides)
        crow = np.zeros((sp.d, 3), dtype=np.int64)
        for j, c in enumerate(cols.tolist()):
            crow[j, :int(sp.pbytes[c])] = int(sp.pstart[c]) + np.arange(int(sp.pbytes[c]))
        return ((sp.planes, rows, pst, crow, sp.pbytes[cols], self._norep[1], run_start, run_end,
                 block_ptr), (ks, maxblock))

    def _run_blocks(self, levels, keep_table=False):
        """``_run_stopping`` over the encoded tuples block by block (``blocks.py``,
        ``_block_kernels.group_runs``): None for a node shown infeasible (more than ``cap``
        classes, or more than ``limit`` rows in classes smaller than k: in the blocks of the
        first ``PROBE`` fraction of the tuples when ``keep_table``, in all otherwise), else the
        node's class table (rep, cnt, kc); NotImplemented when the node has no blocks or its
        key within a block spans more than ``LOCAL_MAX`` keys."""
        got = self.block_args(levels)
        if got is None or got[1][0] > LOCAL_MAX:
            return NotImplemented
        args, (ks, maxblock) = got
        if self._bslots is None or self._bslots.shape[1] < ks:
            self._bslots = np.zeros((self._threads(), max(ks, 1 << 12)), dtype=np.int64)
        size = min(self.cap + 1, self.t) + maxblock
        if self._bbuf is None or self._bbuf[0].shape[1] < size:
            P = self._threads()
            self._bbuf = (np.empty((P, size), dtype=np.int64), np.empty((P, size), dtype=np.int64))
        stopped, first, cnt, kc, read = BK.group_runs(
            *args, self.k, self.limit, PROBE if keep_table else 1.0, self.cap, self._bslots,
            maxblock, *self._bbuf, self._like)
        self.n_rows_grouped += read - self.t  # _group counted every tuple
        if stopped:
            return None
        return first.astype(np.int32), cnt, kc

    def _threads(self) -> int:
        """numba's thread count: the threads of a bucketed grouping (its buckets are
        independent) and the chunks of ``group_node_parallel``."""
        import numba
        return max(1, int(numba.get_num_threads()))

    def _slots(self, ks: int):
        """Counting slots of ``group_dense`` (int32 (threads, >= ks), all 0): allocated on
        first need and grown to the largest key space so far."""
        if self._dslots is None or self._dslots.shape[1] < ks:
            self._dslots = np.zeros((self._threads(), ks), dtype=np.int32)
        return self._dslots

    def _dense_scratch(self, size: int):
        """The new-key lists of ``group_dense`` (int64 (threads, 2, >= size)), grown to the
        largest need so far."""
        if self._dscratch is None or self._dscratch.shape[2] < size:
            self._dscratch = np.empty((self._threads(), 2, size), dtype=np.int64)
        return self._dscratch

    def _bucket_scratch(self):
        """Scratch of ``group_buckets`` (allocated on first use, t entries each: a cached
        table never has more classes than the encoded rows)."""
        if self._bscratch is None:
            self._bscratch = (np.empty(self.t, dtype=np.int64), np.empty(self.t, dtype=np.int64),
                              np.empty(self.t, dtype=np.int32))
        return self._bscratch

    def _chunk_scratch(self):
        """Per-thread tables of ``group_node_parallel`` (allocated on first use): one row per
        numba thread, hash tables sized for min(t / threads, cap + 1) keys, dense arrays."""
        if self._scratch is None:
            P = self._threads()
            keys = min(-(-self.t // P), self.cap + 1)
            size = 1
            while size < 2 * keys + 2:
                size *= 2
            self._scratch = (np.full((P, size), -1, dtype=np.int64),
                             np.empty((P, size), dtype=np.int32),
                             np.full((P, _DENSE_MAX), -1, dtype=np.int32))
        return self._scratch

    def _source(self, levels):
        """The smallest cached class table (rep, cnt, kc, levels) of a node <= ``levels``, or
        None (group from the encoded rows) when none is cached."""
        hw = self._hw  # unused slots hold int64 max keys: never below a node
        lv = np.asarray(levels, dtype=np.int64)
        ok = (self._ckeys[:hw] <= lv).all(axis=1)
        if ok.any():
            i = int(np.argmin(np.where(ok, self._csize[:hw], np.iinfo(np.int64).max)))
            self._clock += 1
            self._cstamp[i] = self._clock
            return self._ctab[i]
        return None

    def _group(self, levels, keep_table=False):
        """Class table (rep, cnt, kc, levels) of a node, rolled up from the smallest cached node
        below it (the encoded rows when none is); stops past ``cap`` classes (``group_node``)."""
        self.poll()
        self.n_evaluated += 1
        tab = self._source(levels)
        self.n_rows_grouped += self.t if tab is None else tab[0].shape[0]
        self.n_passes += tab is None
        if self.cap < _NO_CAP:
            out = self._run_stopping(levels, tab, keep_table)
            return None if out is None else (*out, tuple(levels))
        rep, cnt, _, kc = self._run_kernels(levels, tab)
        return rep, cnt, kc, tuple(levels)

    def _remember(self, levels, tab):
        """Cache a class table (LRU), keeping at most ``cache_entries`` tables holding at most
        ``cache_rows`` classes in all."""
        size = tab[0].shape[0]
        if size >= self.t * 0.9 and self._n_cached:
            return  # barely smaller than the raw rows: not worth the memory
        while self._n_cached and (self._n_cached >= self._cache_entries
                                  or self._cached_rows + size > self.cache_rows):
            used = self._ctab_used
            i = int(np.argmin(np.where(used, self._cstamp, np.iinfo(np.int64).max)))
            self._cached_rows -= int(self._csize[i])
            self._ckeys[i] = np.iinfo(np.int64).max
            self._csize[i] = np.iinfo(np.int64).max
            self._ctab[i] = None
            used[i] = False
            self._n_cached -= 1
        i = int(np.argmin(self._ctab_used))  # a free slot
        self._hw = max(self._hw, i + 1)
        self._clock += 1
        self._ckeys[i] = levels
        self._csize[i] = size
        self._cstamp[i] = self._clock
        self._ctab[i] = tab
        self._ctab_used[i] = True
        self._cached_rows += size
        self._n_cached += 1

    def check(self, levels, keep_table=False) -> CheckResult:
        """Evaluate one node (memoized). ``keep_table``: a stopping checker groups the node to
        its end unless it has more than ``cap`` classes or (a pass by blocks) the blocks of the
        first ``PROBE`` fraction of the tuples show it infeasible (its class table is cached
        for the nodes above it) rather than stopping as soon as it is known infeasible."""
        key = tuple(int(x) for x in levels)
        self.n_checks += 1
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        if self.below_bounds(key):
            res = CheckResult(False, math.inf, self.static_bound(key), -1, 0, 0)
            self.memo[key] = res
            return res
        sp = self.space
        if self.privacy is None:
            tab = self._group(key, keep_table)
            if tab is None:  # stopped early: known infeasible without its exact statistics
                res = CheckResult(False, math.inf, self.static_bound(key), -1, 0, 0)
                self.memo[key] = res
                return res
            rep, cnt, kc = tab[:3]
            self._remember(key, tab)
            mn, sup, sq_ok, sq_all, sup_ncp = K.class_stats(cnt, self.k, kc, sp.cols(key),
                                                            sp.coff, self._cncp)
        else:  # per-class histograms of the sensitive values need the rows' classes
            rep, cnt, cls, kc = self._run_kernels(key, want_cls=True)
            self.n_evaluated += 1
            self.n_passes += 1
            self.n_rows_grouped += self.t
            ok = self.privacy.classes_ok(cls, rep.shape[0])
            mn, sup, sq_ok, sq_all, sup_ncp = K.class_stats_ok(cnt, ok, kc, sp.cols(key),
                                                               sp.coff, self._cncp)
        sup = int(sup)
        feasible = sup <= self.limit
        stats = objectives.NodeStats(sup, sq_ok, sq_all, sup_ncp)
        loss, lb = self.objective.node_loss(self, key, stats)
        res = CheckResult(feasible, loss if feasible else math.inf, lb, sup, int(mn),
                          int(rep.shape[0]), stats)
        self.memo[key] = res
        return res

    def loss_as(self, name: str, levels) -> float:
        """Loss ``name`` (a lattice loss) of a feasible node, from the class statistics its check
        kept: the value a checker built with ``loss=name`` (same data, k, suppression, privacy
        and weights) would return, without grouping the node again."""
        key = tuple(int(x) for x in levels)
        res = self.check(key)
        if not res.feasible or res.stats is None:
            raise ValueError(f"loss_as needs a feasible node, got {key}")
        return objectives.get(name, "lattice").node_loss(self, key, res.stats)[0]

    def evaluate_raw(self, levels) -> float:
        """Group a node from the raw rows (no cache, no memo); returns seconds. For benchmarks."""
        import time
        t0 = time.perf_counter()
        self._run_kernels(tuple(int(x) for x in levels))
        return time.perf_counter() - t0

    # ------------------------------------------------------------------ output
    def partition(self, levels, info: dict) -> Partition:
        """The published partition of a node: one class per generalized key with >= k rows, and
        one class holding every suppressed row (published fully generalized)."""
        sp = self.space
        key = tuple(int(x) for x in levels)
        crep, ccnt, cls, ckc = self._run_kernels(key, want_cls=True)
        if self.privacy is None:
            small = ccnt < self.k
        else:
            small = ~self.privacy.classes_ok(cls, crep.shape[0])
        n_sup = int(ccnt[small].sum())
        keep = np.flatnonzero(~small)
        # the tuples come from a parallel GROUP BY in no fixed order: number the classes by their
        # generalized values so the same node always publishes the same class ids
        node_cols = [sp.cnode[sp.coff[c] + ckc[j][keep].astype(np.int64)]
                     for j, c in enumerate(sp.cols(key))]
        if node_cols:
            keep = keep[np.lexsort(node_cols[::-1])]
        new_id = np.full(crep.shape[0], keep.size, dtype=np.int64)  # suppressed -> last class
        new_id[keep] = np.arange(keep.size)
        ec = new_id[cls]
        suppressed = small[cls]
        C = keep.size + (1 if n_sup else 0)
        kept = ckc[:, keep]  # the codes of the kept classes at the node
        dc = sp.d - sp.dn
        cat_nodes = np.zeros((C, dc), dtype=np.int32)
        num_lo = np.full((C, sp.dn), np.nan)
        num_hi = np.full((C, sp.dn), np.nan)
        for j, c in enumerate(sp.cols(key)):
            nodes = sp.cnode[sp.coff[c] + kept[j].astype(np.int64)]
            if j < sp.dn:
                num_lo[:keep.size, j] = sp.node_lo[j][nodes]
                num_hi[:keep.size, j] = sp.node_hi[j][nodes]
            else:
                cat_nodes[:keep.size, j - sp.dn] = nodes
        info = dict(info)
        info["n_suppressed"] = n_sup
        info["suppression"] = n_sup / self.n
        return Partition(ec=ec, suppressed=suppressed, cat_nodes=cat_nodes, num_lo=num_lo,
                         num_hi=num_hi, info=info)
