"""A table keyed by integer ids, flat where the ids are dense (a trace's job ids: 0 .. n-1)."""
from __future__ import annotations

from typing import Generic, TypeVar

V = TypeVar("V")

SPARE: int = 1024
"""How far past the list's end a new id may lie and still extend it (beyond: the dictionary)."""


class IdTable(Generic[V]):
    """Values by integer id: ids from 0 up to about twice the list's length in a list indexed by
    the id, any other in a dictionary. Compiled, a read of a dense id is a bounds check and a list
    read, where a dictionary's boxed the id (an allocation past 256) and hashed it; far-off ids
    (a live driver's, or negative ones) cost what a dictionary costs. Values are never None."""

    __slots__ = ("_near", "_far")

    def __init__(self) -> None:
        self._near: list[V | None] = []
        self._far: dict[int, V] = {}

    def get(self, key: int) -> V | None:
        """The value of ``key``, or None."""
        if 0 <= key < len(self._near):
            return self._near[key]
        return self._far.get(key) if self._far else None

    def __getitem__(self, key: int) -> V:
        v = self.get(key)
        if v is None:
            raise KeyError(key)
        return v

    def __contains__(self, key: int) -> bool:
        return self.get(key) is not None

    def set(self, key: int, value: V) -> None:
        near = self._near
        n = len(near)
        if n <= key < 2 * n + SPARE:
            near.extend([None] * (max(key + 1, 2 * n) - n))
            far = self._far
            for k in [k for k in far if n <= k < len(near)]:   # keep every far id out of the list's range
                near[k] = far.pop(k)
        if 0 <= key < len(near):
            near[key] = value
        else:
            self._far[key] = value

    def pop(self, key: int) -> V | None:
        """Remove ``key``; its value, or None if it had none."""
        if 0 <= key < len(self._near):
            v = self._near[key]
            self._near[key] = None
            return v
        return self._far.pop(key, None) if self._far else None
