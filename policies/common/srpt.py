"""SRPT reordering of a node's probe queue with a bypass budget (Eagle Algorithm 1, DLWL+SRPT).

A node queue is a list of `QueuedProbe`s in arrival order. `pick` returns which entry runs next:
the short probe whose job has the least estimated remaining work, scanning front to back and
never looking past a long entry, provided running it does not push any probe it bypasses over
its starvation budget (``cap x`` that probe's estimated task duration). `charge` then adds the
bypassing task's estimate to each bypassed probe's counter.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence

from policies.api import ProbeInfo


class QueuedProbe:
    """A probe waiting at a node and how much work has bypassed it so far."""

    __slots__ = ("probe", "bypassed")

    def __init__(self, probe: ProbeInfo) -> None:
        self.probe = probe
        self.bypassed = 0.0

    def slack(self, cap: float) -> float:
        """How much more work may still bypass this probe."""
        return cap * self.probe.est - self.bypassed


def pick(queue: Sequence[QueuedProbe], remaining: Callable[[ProbeInfo], float], cap: float,
         eligible: Callable[[QueuedProbe], bool] | None = None) -> int | None:
    """Index of the entry to run next, or None for an empty (or wholly ineligible) queue.

    `remaining(probe)` is the estimated remaining work of the probe's job. One pass: the
    smallest slack in front of an entry decides whether that entry may bypass them all."""
    best: int | None = None
    first: int | None = None
    shortest = min_slack = float("inf")
    for i, entry in enumerate(queue):
        if eligible is not None and not eligible(entry):
            continue
        if first is None:
            first = i
        probe = entry.probe
        if probe.long:
            break
        est = probe.est
        left = remaining(probe)
        if left < shortest and est <= min_slack:
            shortest, best = left, i
        slack = cap * est - entry.bypassed
        if slack < min_slack:
            min_slack = slack
    return first if best is None else best


def charge(queue: Sequence[QueuedProbe], chosen: int, eligible: Callable[[QueuedProbe], bool] | None = None) -> None:
    """The task of entry `chosen` bypasses every eligible short entry in front of it."""
    est = queue[chosen].probe.est
    for entry in queue[:chosen]:
        if (eligible is None or eligible(entry)) and not entry.probe.long:
            entry.bypassed += est
