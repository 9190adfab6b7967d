"""A binary min-heap of ``(key, tie, item)`` entries, for the simulator's hot queues.

The kernel's event queue and the LWL tables pop millions of entries per run. With ``heapq`` an
entry is a tuple and every comparison goes through Python's generic rich comparison, item by
item (about a fifth of a compiled run's time, measured). Here an entry is a small class and the
heap compares its float key and integer tie-breaker directly, which the compiled core
(``policies/framework/compiled.py``) turns into C comparisons; as pure Python it works the same, just
without that gain. Order: by ``key``, then ``tie`` (callers make ties unique when the order of
equal keys matters); ``item`` is never compared.
"""
from __future__ import annotations

from collections.abc import Iterable


VERSION_BITS = 32
"""Lazy deletion (the LWL tables, Kairos' levels): an entry for ``node`` at ``version`` has tie
``node << VERSION_BITS | version``, the order of a ``(key, node, version)`` tuple in one integer
(a version counts one node's re-keyings: far below 2**32)."""
VERSION_MASK = (1 << VERSION_BITS) - 1


class Entry:
    """One heap entry; ``item`` is the caller's payload."""

    __slots__ = ("key", "tie", "item")

    def __init__(self, key: float, tie: int, item: object) -> None:
        self.key = key
        self.tie = tie
        self.item = item


def versioned_tie(node: int, version: int) -> int:
    """The tie of ``node``'s entry at ``version`` (see :data:`VERSION_BITS`)."""
    return (node << VERSION_BITS) | version


def split_versioned(tie: int) -> tuple[int, int]:
    """``(node, version)`` of a :func:`versioned_tie`."""
    return tie >> VERSION_BITS, tie & VERSION_MASK


def versioned(key: float, node: int, version: int) -> Entry:
    """The entry of ``node`` at ``version`` under ``key``."""
    return Entry(key, versioned_tie(node, version), None)


class MinHeap:
    """Entries in ``(key, tie)`` order: push, pop and peek at the smallest."""

    __slots__ = ("_a",)

    def __init__(self, entries: Iterable[Entry] = ()) -> None:
        self._a: list[Entry] = list(entries)
        for pos in range(len(self._a) // 2 - 1, -1, -1):
            self._sift_down(pos, self._a[pos])

    def __len__(self) -> int:
        return len(self._a)

    def __bool__(self) -> bool:
        return len(self._a) > 0

    def top(self) -> Entry:
        """The smallest entry (IndexError if empty)."""
        return self._a[0]

    def push(self, key: float, tie: int, item: object) -> None:
        a = self._a
        e = Entry(key, tie, item)
        pos = len(a)
        a.append(e)
        while pos > 0:
            parent = (pos - 1) >> 1
            p = a[parent]
            if key < p.key or (key == p.key and tie < p.tie):   # e before p (compiled: C comparisons)
                a[pos] = p
                pos = parent
            else:
                break
        a[pos] = e

    def pop(self) -> Entry:
        """Remove and return the smallest entry (IndexError if empty)."""
        a = self._a
        last = a.pop()
        if not a:
            return last
        top = a[0]
        self._sift_down(0, last)
        return top

    def replace_top(self, key: float, tie: int, item: object) -> None:
        """Pop the smallest entry and push a new one, in one pass (IndexError if empty). The top
        entry object is reused for the new one (one allocation less per kernel event: read what
        you need of :meth:`top` first). The new entry sinks only as far as it must: the kernel's
        is usually due soon, so it stays near the top (where :meth:`pop`'s leaf, a late entry, is
        best taken to the bottom first)."""
        e = self._a[0]
        e.key, e.tie, e.item = key, tie, item
        self._sift_down(0, e, True)

    def _sift_down(self, pos: int, e: Entry, early: bool = False) -> None:
        """Place ``e`` at ``pos`` or below. ``early``: stop where ``e`` comes before the smaller
        child (an entry that belongs near the top); otherwise the hole goes down along the smaller
        children to a leaf and ``e`` climbs back up (as ``heapq`` does: fewer comparisons for an
        entry taken from the bottom)."""
        a = self._a
        n = len(a)
        start = pos
        key, tie = e.key, e.tie
        child = 2 * pos + 1
        while child < n:
            c = a[child]
            right = child + 1
            if right < n:
                r = a[right]
                if r.key < c.key or (r.key == c.key and r.tie < c.tie):   # r before c
                    c = r
                    child = right
            if early and (key < c.key or (key == c.key and tie < c.tie)):  # e before c
                break
            a[pos] = c
            pos = child
            child = 2 * pos + 1
        while pos > start and not early:
            parent = (pos - 1) >> 1
            p = a[parent]
            if key < p.key or (key == p.key and tie < p.tie):
                a[pos] = p
                pos = parent
            else:
                break
        a[pos] = e
