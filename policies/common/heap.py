"""A binary min-heap of ``(key, rank, tie, item)`` entries, for the simulator's hot queues.

The kernel's event queue and the LWL tables pop millions of entries per run. With ``heapq`` an
entry is a tuple and every comparison goes through Python's generic rich comparison, item by
item. An entry object per item, compared natively, was faster, but then a sift read an object per
step, scattered in memory (the compiled core's largest cost: cache misses, measured). Here the
heap itself is two flat native arrays (``librt.vecs``, which mypyc compiles to C arrays): the keys
and, beside each, the entry's slot; a sift moves only those and touches no object. The rank and
tie sit in flat arrays by slot too, read only when two keys are equal, and the item in a list by
slot, read when the top is taken; a removed entry's slot is reused. As pure Python it works the
same, just without that gain. Order: by ``key``, then ``rank`` (a float: the LWL tables' order of
equal loads; 0.0 elsewhere), then ``tie`` (a 64-bit integer; callers make ties unique when the
order of equal keys matters); ``item`` is never compared.
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import Final

from librt.vecs import append, pop, vec
from mypy_extensions import i64


VERSION_BITS: Final = 32
"""Lazy deletion (the LWL tables, Kairos' levels): an entry for ``node`` at ``version`` has tie
``node << VERSION_BITS | version``, the order of a ``(key, node, version)`` tuple in one integer
(a version counts one node's re-keyings: far below 2**32)."""
VERSION_MASK: Final = (1 << VERSION_BITS) - 1   # Final: compiled, constants, not globals looked up


def versioned_tie(node: int, version: int) -> int:
    """The tie of ``node``'s entry at ``version`` (see :data:`VERSION_BITS`)."""
    return (node << VERSION_BITS) | version


def split_versioned(tie: int) -> tuple[int, int]:
    """``(node, version)`` of a :func:`versioned_tie`."""
    return tie >> VERSION_BITS, tie & VERSION_MASK


def versioned(key: float, node: int, version: int) -> tuple[float, float, int, object]:
    """The entry of ``node`` at ``version`` under ``key``."""
    return key, 0.0, versioned_tie(node, version), None


class MinHeap:
    """Entries in ``(key, rank, tie)`` order: push, pop and look at the smallest."""

    __slots__ = ("_keys", "_slots", "_ranks", "_ties", "_items", "_free")

    def __init__(self, entries: Iterable[tuple[float, float, int, object]] = ()) -> None:
        self._keys = vec[float]()     # heap order
        self._slots = vec[i64]()      # heap order: where the entry's rank, tie and item are
        self._ranks = vec[float]()    # by slot
        self._ties = vec[i64]()
        self._items: list[object] = []
        self._free = vec[i64]()       # slots of removed entries
        for key, rank, tie, item in entries:
            self._keys = append(self._keys, key)
            self._slots = append(self._slots, len(self._items))
            self._ranks = append(self._ranks, rank)
            self._ties = append(self._ties, tie)
            self._items.append(item)
        for pos in range(len(self._keys) // 2 - 1, -1, -1):
            self._sift_down(pos, self._keys[pos], self._slots[pos], False)

    def __len__(self) -> int:
        return len(self._keys)

    def __bool__(self) -> bool:
        return len(self._keys) > 0

    def top_key(self) -> float:
        """The smallest entry's key (IndexError if empty)."""
        return self._keys[0]

    def top_rank(self) -> float:
        return self._ranks[self._slots[0]]

    def top_tie(self) -> int:
        return self._ties[self._slots[0]]

    def top_item(self) -> object:
        return self._items[self._slots[0]]

    def push(self, key: float, rank: float, tie: int, item: object) -> None:
        free = self._free
        if len(free):
            self._free, slot = pop(free)
            self._ranks[slot] = rank
            self._ties[slot] = tie
            self._items[slot] = item
        else:
            slot = len(self._items)
            self._ranks = append(self._ranks, rank)
            self._ties = append(self._ties, tie)
            self._items.append(item)
        keys, slots = self._keys, self._slots
        pos: i64 = len(keys)
        keys = self._keys = append(keys, key)
        slots = self._slots = append(slots, slot)
        while pos > 0:
            parent = (pos - 1) >> 1
            pk = keys[parent]
            if key < pk or (key == pk and self._first(slot, slots[parent])):   # compiled: C comparisons
                keys[pos] = pk
                slots[pos] = slots[parent]
                pos = parent
            else:
                break
        keys[pos] = key
        slots[pos] = slot

    def pop(self) -> object:
        """Remove the smallest entry and return its item (IndexError if empty)."""
        slot = self._slots[0]
        item = self._items[slot]
        self._items[slot] = None
        self._free = append(self._free, slot)
        self._keys, key = pop(self._keys)
        self._slots, last = pop(self._slots)
        if len(self._keys):
            self._sift_down(0, key, last, False)
        return item

    def replace_top(self, key: float, rank: float, tie: int, item: object) -> None:
        """Pop the smallest entry and push a new one, in one pass (IndexError if empty): the new
        one takes the top's slot. It sinks only as far as it must: the kernel's is usually due
        soon, so it stays near the top (where :meth:`pop`'s leaf, a late entry, is best taken to
        the bottom first)."""
        slot = self._slots[0]
        self._ranks[slot] = rank
        self._ties[slot] = tie
        self._items[slot] = item
        self._sift_down(0, key, slot, True)

    def _first(self, a: i64, b: i64) -> bool:
        """Whether the entry in slot ``a`` comes before the one in slot ``b`` of an equal key."""
        ranks = self._ranks
        ra, rb = ranks[a], ranks[b]
        return ra < rb or (ra == rb and self._ties[a] < self._ties[b])

    def _sift_down(self, pos: i64, key: float, slot: i64, early: bool) -> None:
        """Place the entry ``(key, slot)`` at ``pos`` or below. ``early``: stop where it comes
        before the smaller child (an entry that belongs near the top); otherwise the hole goes
        down along the smaller children to a leaf and the entry climbs back up (as ``heapq``
        does: fewer comparisons for an entry taken from the bottom)."""
        keys, slots = self._keys, self._slots
        n = len(keys)
        start = pos
        child = 2 * pos + 1
        while child < n:
            ck = keys[child]
            right = child + 1
            if right < n:
                rk = keys[right]
                if rk < ck or (rk == ck and self._first(slots[right], slots[child])):   # right first
                    ck = rk
                    child = right
            if early and (key < ck or (key == ck and self._first(slot, slots[child]))):  # before the child
                break
            keys[pos] = ck
            slots[pos] = slots[child]
            pos = child
            child = 2 * pos + 1
        while pos > start and not early:
            parent = (pos - 1) >> 1
            pk = keys[parent]
            if key < pk or (key == pk and self._first(slot, slots[parent])):
                keys[pos] = pk
                slots[pos] = slots[parent]
                pos = parent
            else:
                break
        keys[pos] = key
        slots[pos] = slot
