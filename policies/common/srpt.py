"""SRPT reordering of a node's probe queue with a bypass budget (Eagle Algorithm 1, DLWL+SRPT).

A node queue is a list of `QueuedProbe`s in arrival order. `pick` returns which entry runs next:
the short probe whose job has the least estimated remaining work, scanning front to back and
never looking past a long entry, provided running it does not push any probe it bypasses over
its starvation budget (``cap x`` that probe's estimated task duration). `pick_last_fit` is the
choice the authors' simulator actually makes (see its docstring). `charge` then adds the
bypassing short task's estimate to each bypassed probe's counter. An entry marked ``busy`` (a
sticky probe whose task request is in flight on another slot) is skipped by all three.
"""
from __future__ import annotations

import math

from policies.common.idtable import IdTable
from policies.framework.api import ProbeInfo


class QueuedProbe:
    """A probe waiting at a node, how much work has bypassed it so far, and whether it is
    ``busy`` (its task request in flight: it may not run on another slot meanwhile)."""

    __slots__ = ("probe", "bypassed", "busy")

    def __init__(self, probe: ProbeInfo) -> None:
        self.probe = probe
        self.bypassed = 0.0
        self.busy = False

    def slack(self, cap: float) -> float:
        """How much more work may still bypass this probe."""
        return cap * self.probe.est - self.bypassed


def pick(queue: list[QueuedProbe], tasks_left: IdTable[int], cap: float) -> int | None:
    """Index of the entry to run next, or None for an empty (or wholly busy) queue.

    A probe's job has ``est x tasks_left[job]`` estimated work left (none once it is absent). One
    pass: the smallest slack in front of an entry decides whether that entry may bypass them all.
    (A table rather than a function of the probe: no closure per call, no call per entry; a list,
    an id table and ``math.inf``: compiled, native operations, where a Sequence's iterator, a
    Mapping's ``get`` and ``float("inf")`` were Python calls.)"""
    best: int | None = None
    first: int | None = None
    shortest = min_slack = math.inf
    for i, entry in enumerate(queue):
        if entry.busy:
            continue
        if first is None:
            first = i
        probe = entry.probe
        if probe.long:
            break
        est = probe.est
        n = tasks_left.get(probe.job_id)
        left = est * n if n is not None else 0.0
        if left < shortest and est <= min_slack:
            shortest, best = left, i
        slack = cap * est - entry.bypassed
        if slack < min_slack:
            min_slack = slack
    return first if best is None else best


def pick_last_fit(queue: list[QueuedProbe], cap: float) -> int | None:
    """Index of the entry the authors' simulator runs next, or None for an empty (or wholly
    busy) queue.

    Their `get_next_probe_acc_to_sbp_srpt` assigns its running minimum of remaining work to a
    misspelled name, so the minimum stays +inf and every entry passes the SRPT test: what is left
    is the bypass budget alone. Scanning front to back, an entry qualifies when its task estimate
    fits the smallest slack of the short entries in front of it; the last qualifying entry wins,
    and a qualifying long entry wins at once (the scan stops there), while a long entry that does
    not fit is passed over. The first entry always qualifies (nothing in front of it)."""
    chosen: int | None = None
    min_slack = math.inf
    for i, entry in enumerate(queue):
        if entry.busy:
            continue
        probe = entry.probe
        if probe.est <= min_slack:
            chosen = i
            if probe.long:
                break
        if not probe.long:
            min_slack = min(min_slack, entry.slack(cap))
    return chosen


def charge(queue: list[QueuedProbe], chosen: int) -> None:
    """A short task run from entry `chosen` bypasses every short entry in front of it but busy ones.

    A long entry chosen behind short ones (only `pick_last_fit` does that) charges nothing, as in
    the authors' simulator; `pick` only ever chooses a long entry with nothing eligible in front."""
    if queue[chosen].probe.long:
        return
    est = queue[chosen].probe.est
    for entry in queue[:chosen]:
        if not entry.busy and not entry.probe.long:
            entry.bypassed += est
