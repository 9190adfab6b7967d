"""Least-Work-Left placement (Hawk's centralized scheduler for long jobs, thesis §1.2).

Per node the table tracks the estimated work of the tasks it placed there: queued (placed, not
started) plus, for each running one, ``est - min(elapsed, est)``. ``place`` returns the node with
the least work left and charges it.

Which node goes first when several have nothing left, ``idle_first``:

* ``True`` (default; the authors' simulator, ``find_workers_long_job_prio``): nodes with no
  tracked task queued or running at all, lowest node id first; only when none is left, the least
  estimated wait, ties (such as several overrunning nodes, all with nothing left by the
  estimate) to the lowest node id. A node still running a task past its estimate has no work left by the
  estimate but is *not* idle: a new task would queue behind the overrun, and overruns are common
  because task durations scatter widely around the job's mean.
* ``False`` (our earlier reading of the thesis): any node whose estimated work left is zero,
  overrunning ones included, the one that has been free the longest first.

Which of several nodes *running past their estimate* goes first (all have nothing left by the
estimate, so their keys tie), ``ties``:

* ``"id"``: the lowest node id.
* ``"reference"`` (Hawk's and Eagle's default): the order the authors' simulator produces. Its key
  for such a node, ``2 x delay + qlen - est`` with ``qlen = est``, equals ``2 x delay`` only up to
  floating-point rounding, and the rounding depends on the running task's estimate: with the
  simulator's 0.5 ms delay, estimates of 256-2047 s round down, 64-255 s up a little, 2048 s and
  over up most. So nodes overrunning a task of a very long job (which tend to overrun longest)
  are taken last. We compute the same key and order by it, then by node id.
* ``"least_estimate"``: the smallest estimate of the running task first, then the lowest id (our
  reading of what that rounding amounts to: an overrun tends to last in proportion to the task's
  estimate).

A table may have several *groups* of nodes (e.g. the short-allowed and the general partition);
``place(now, est, group)`` picks within one group while the work per node is shared.

The heaps are keyed on each node's estimated time of becoming free, ``now + work_left``, which
(with at most one tracked task running per node, the thesis' one-slot model) can only grow as
time passes; stale keys are therefore lower bounds and are re-validated lazily when popped. With
several tracked tasks running on one node the key can shrink and the pick is approximate.
"""
from __future__ import annotations

from collections.abc import Hashable, Iterable

from librt.vecs import vec
from mypy_extensions import i64

from policies.common.heap import MinHeap, split_versioned, versioned_tie

TIES = ("id", "reference", "least_estimate")


def tie_rank(ties: str, est: float, two_delays: float) -> float:
    """Where a node running a task estimated at ``est`` stands among nodes that all have nothing
    left by the estimate (lower first; the node id breaks what is still tied): the heap's rank of
    its entries. See ``ties``."""
    if ties == "reference":
        return (two_delays + est) - est   # the authors' key 2d + qlen - est at qlen = est, as floats round it
    if ties == "least_estimate":
        return float(int(est * 2.0 ** 20))
    return 0.0


def trace_estimate(estimate: float, truncate: bool) -> float:
    """The per-task estimate a Hawk/Eagle scheduler works with: the trace's mean task duration,
    truncated to whole seconds when ``truncate`` (the authors' simulator reads it with
    ``int(float(...))`` and uses that for the estimate and the long/short class alike)."""
    return float(int(estimate)) if truncate else estimate


class LwlTable:
    __slots__ = ("queued", "running", "_heaps", "_ver", "_groups_of", "members", "_key", "_limit", "_active",
                 "idle_first", "_idle", "_in_idle", "_ended_early", "ties", "two_delays", "_rank")

    def __init__(self, n_nodes: int, nodes: Iterable[int], idle_first: bool = True, ties: str = "id",
                 two_delays: float = 0.0) -> None:
        if ties not in TIES:
            raise ValueError(f"LWL ties must be one of {', '.join(TIES)}, got {ties!r}")
        self.idle_first = idle_first
        self.ties = ties
        self.two_delays = two_delays                      # the reference's 2 x network delay
        # per-node values in flat native arrays (librt.vecs): compiled, an update is a store, where a
        # list's was a generic in-place operation and a boxed number
        self._rank = vec[float]([0.0] * n_nodes)          # tie_rank of each node's running task
        # per group, with idle_first: a heap of node ids that may be idle (checked when popped; the
        # id is the entry's tie: compiled, no Python call and no boxed comparison, as heapq's were)
        # and a flag per node saying it is in that heap, so a node is pushed at most once
        self._idle: list[MinHeap] = []
        self._in_idle: list[vec[i64]] = []
        # tasks whose end was reported before their start (a zero-length task: the driver may
        # deliver TaskFinished before TaskStarted at the same instant); their start is a no-op
        self._ended_early: set[Hashable] = set()
        self.queued = vec[float]([0.0] * n_nodes)         # est work placed but not started
        # task key -> est end; keys typed Hashable: compiled, a (job, task) tuple is boxed once per
        # call, where a tuple[int, int] is a native pair boxed again at each dictionary operation
        self.running: list[dict[Hashable, float]] = [{} for _ in range(n_nodes)]
        self._ver = vec[i64]([0] * n_nodes)
        self._key = vec[float]([0.0] * n_nodes)           # latest pushed key per node
        self._heaps: list[MinHeap] = []
        self._groups_of: list[tuple[int, ...]] = [()] * n_nodes
        self.members: list[list[int]] = []
        self._limit: list[int] = []                       # heap size that triggers compaction
        # a group's heap is kept only once something is placed in it: until then pushes skip it
        # and the first peek builds it from the latest keys (the same valid entries it would hold)
        self._active: list[bool] = []
        self.add_group(nodes)

    def add_group(self, nodes: Iterable[int]) -> int:
        """Add a group of nodes to place on; returns its index (the first group is 0)."""
        members = sorted(set(nodes))
        if not members:
            raise ValueError("LWL needs at least one node per group")
        g = len(self._heaps)
        self.members.append(members)
        for n in members:
            self._groups_of[n] = self._groups_of[n] + (g,)
        lazy = not any(self._ver)   # nothing pushed yet: every key is 0.0, as a fresh heap would say
        self._heaps.append(MinHeap([] if lazy else [(0.0, self._rank[n], self._tie(n), None) for n in members]))
        self._limit.append(4 * len(members) + 1024)
        self._active.append(not lazy)
        self._idle.append(MinHeap([(0.0, 0.0, n, None) for n in members]))
        flags = vec[i64]([0] * len(self.queued))
        for n in members:
            flags[n] = 1
        self._in_idle.append(flags)
        return g

    def work_left(self, node: int, now: float) -> float:
        w = self.queued[node]
        for end in self.running[node].values():
            if end > now:
                w += end - now
        return w

    def _push(self, node: int, now: float) -> None:
        self._ver[node] += 1
        w = self.queued[node]                             # work_left(node, now), inlined
        for end in self.running[node].values():
            if end > now:
                w += end - now
        key = self._key[node] = now + w
        heaps, limit, active = self._heaps, self._limit, self._active
        rank, tie = self._rank[node], self._tie(node)
        for g in self._groups_of[node]:
            if not active[g]:
                continue
            heap = heaps[g]
            heap.push(key, rank, tie, None)
            if len(heap) > limit[g]:
                self._compact(g)

    def _compact(self, g: int) -> None:
        """Drop stale entries: one entry per node, with its latest key (bounded memory)."""
        key, rank = self._key, self._rank
        self._heaps[g] = MinHeap([(key[n], rank[n], self._tie(n), None) for n in self.members[g]])

    def _tie(self, node: int) -> int:
        """``node``'s heap tie at its current version."""
        return versioned_tie(node, self._ver[node])

    def peek(self, now: float, group: int = 0) -> int:
        """The least-loaded node of ``group`` (without charging it)."""
        if self.idle_first:
            idle, flags = self._idle[group], self._in_idle[group]
            while idle:
                node = idle.top_tie()
                if not self.queued[node] and not self.running[node]:
                    return node
                idle.pop()
                flags[node] = 0
        if not self._active[group]:
            self._compact(group)
            self._active[group] = True
        heap = self._heaps[group]
        ver = self._ver
        while True:
            tie = heap.top_tie()
            node, v = split_versioned(tie)
            if v != ver[node]:
                heap.pop()
                continue
            w = self.work_left(node, now)
            # idle_first: a busy node with nothing left by the estimate (an overrun) is keyed
            # ``now`` like any other, so such nodes go in ``ties`` order
            if now + w <= heap.top_key() + 1e-9 or (w == 0.0 and not self.idle_first):
                return node
            heap.replace_top(now + w, heap.top_rank(), tie, None)

    def place(self, now: float, est: float, group: int = 0) -> int:
        """Least-loaded node of ``group``; charges it ``est``."""
        node = self.peek(now, group)
        self.queued[node] += est
        self._push(node, now)
        return node

    def started(self, node: int, key: Hashable, now: float, est: float) -> None:
        """A task placed on ``node`` started (``key`` identifies it until it finishes)."""
        q = self.queued[node] - est
        self.queued[node] = q if q > 1e-9 else 0.0
        if key in self._ended_early:
            self._ended_early.discard(key)
        else:
            self.running[node][key] = now + est
            self._rank[node] = tie_rank(self.ties, est, self.two_delays)
        self._freed(node, now)

    def finished(self, node: int, key: Hashable, now: float) -> None:
        running = self.running[node]
        if key in running:   # (compiled: dict.pop with a default was a Python method call)
            del running[key]
        elif self.queued[node]:
            self._ended_early.add(key)      # placed, not started yet: its start comes next
        if not running:
            self._rank[node] = 0.0
        self._freed(node, now)

    def _freed(self, node: int, now: float) -> None:
        """Re-key ``node`` after its work changed; with ``idle_first``, list it again once idle."""
        self._push(node, now)
        if self.idle_first and not self.running[node] and not self.queued[node]:
            for g in self._groups_of[node]:
                if not self._in_idle[g][node]:
                    self._in_idle[g][node] = 1
                    self._idle[g].push(0.0, 0.0, node, None)

    def has_work(self, node: int) -> bool:
        return self.queued[node] > 0 or bool(self.running[node])
