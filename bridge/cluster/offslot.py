"""Work a task does off its slot, in simulated worlds whose ``offslot_share`` is above 0.

A bound entry queued at a node, or a suspended task, progresses at ``share`` of full speed (the
live node driver runs both in containers shrunk to the node agent's minimum share). The work it
does there shortens what is left of it, but is not ``attained`` service. The state starts and
stops the clock of each task here; this module keeps only the two tables.
"""
from __future__ import annotations

import math

from bridge.cluster.events import OffSlotEnd


class OffSlotWork:
    """Per task ``(job, task)``: where and since when it progresses off its slot (with the token
    of its simulated end), and the work it did off its slot before that."""

    __slots__ = ("share", "_since", "_done")

    def __init__(self, share: float) -> None:
        self.share = share
        self._since: dict[tuple[int, int], tuple[int, float, int]] = {}   # -> (node, since, token)
        self._done: dict[tuple[int, int], float] = {}                    # work done before ``since``

    def start(self, node: int, jid: int, task: int, work: float, now: float, token: int) -> OffSlotEnd:
        """The task progresses off its slot at ``node`` from ``now``, ``work`` seconds of its
        duration left before what it did off its slot: the event of its simulated end."""
        key = (jid, task)
        self._since[key] = (node, now, token)
        left = work - self._done.get(key, 0.0)
        return OffSlotEnd(now + max(left, 0.0) / self.share, node, jid, task, token)

    def stop(self, jid: int, task: int, now: float) -> float:
        """The task stops progressing off its slot (it starts, resumes or leaves its node's
        queue); returns the work it did off its slot in all."""
        key = (jid, task)
        at = self._since.pop(key, None)
        done = self._done.get(key, 0.0)
        if at is not None:
            done = self._done[key] = done + (now - at[1]) * self.share
        return done

    def is_current(self, jid: int, task: int, token: int) -> bool:
        """Whether ``token`` is that of the task's simulated end now (not gone stale)."""
        at = self._since.get((jid, task))
        return at is not None and at[2] == token

    def exhaust(self, jid: int, task: int, now: float) -> None:
        """The task completed its work off its slot: given a slot, it ends at once."""
        self.stop(jid, task, now)
        self._done[(jid, task)] = math.inf

    def done(self, jid: int, task: int) -> float:
        """The work the task did off its slot before its current stretch there."""
        return self._done.get((jid, task), 0.0)

    def finished(self, jid: int, task: int) -> None:
        """The task ended on a slot: what it did off its slot is of no more use."""
        self._done.pop((jid, task), None)

    def forget(self, jid: int, task: int) -> None:
        """The task ended off its slot."""
        self._since.pop((jid, task), None)
        self._done.pop((jid, task), None)
