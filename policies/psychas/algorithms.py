"""One scheduling pass of each Psychas–Ghaderi algorithm (§IV–§VII), as pure planners.

Each planner works on scratch state the caller owns for one decision instant: a list
of server residual capacities (servers have capacity 1) and the waiting queue(s). It
removes the jobs it places from the queue, lowers the residuals, and returns the
placements as ``(job key, server index)`` pairs in decision order.
"""
from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from policies.psychas.partition import Configuration
from policies.psychas.queues import SizeQueue, VirtualQueues, Waiting

EPS = 1e-9
Placement = tuple[Hashable, int]
RESERVED_FOR_CLASS1 = 2 / 3


def best_fit_server(size: float, residuals: Sequence[float]) -> int | None:
    """BF-J's choice: the server with the least residual capacity that still fits; ties
    go to the lowest index."""
    best: int | None = None
    for i, res in enumerate(residuals):
        if res + EPS >= size and (best is None or res < residuals[best] - EPS):
            best = i
    return best


def _place(job: Waiting, server: int, residuals: list[float], out: list[Placement]) -> None:
    residuals[server] -= job.size
    out.append((job.key, server))


def best_fit_server_fill(server: int, residuals: list[float], queue: SizeQueue | VirtualQueues,
                         out: list[Placement]) -> None:
    """BF-S on one server: keep placing the largest waiting job that fits."""
    while (job := queue.largest_fitting(residuals[server])) is not None:
        queue.remove(job)
        _place(job, server, residuals, out)


def bf_js(residuals: list[float], departed: Sequence[int], queue: SizeQueue,
          arrivals: Sequence[Waiting]) -> list[Placement]:
    """BF-J/S (§IV): BF-S over the servers that had departures since the last slot (in
    the order given), then BF-J over this slot's arrivals that are still waiting."""
    out: list[Placement] = []
    for server in departed:
        best_fit_server_fill(server, residuals, queue, out)
    placed = {key for key, _ in out}
    for job in arrivals:
        if job.key in placed:
            continue
        fit = best_fit_server(job.size, residuals)
        if fit is not None:
            queue.remove(job)
            _place(job, fit, residuals, out)
    return out


def fifo_first_fit(residuals: list[float], queue: SizeQueue) -> list[Placement]:
    """FIFO-FF (§VII-B): place the head-of-line job on the lowest-index server that fits;
    stop at the first head-of-line job that fits nowhere (strict FIFO, our reading)."""
    out: list[Placement] = []
    while (job := queue.head()) is not None:
        server = next((i for i, r in enumerate(residuals) if r + EPS >= job.size), None)
        if server is None:
            break
        queue.remove(job)
        _place(job, server, residuals, out)
    return out


@dataclass(frozen=True)
class ServerMix:
    """What a server holds, as VQS sees it: whether a class-1 job is in service, how
    many jobs of each class, and how much capacity the non-class-1 jobs use."""

    has_class1: bool
    class_counts: tuple[int, ...]
    others_load: float


def vqs_fill(server: int, config: Configuration, mix: ServerMix, residuals: list[float],
             vqs: VirtualQueues, out: list[Placement], strict_hol: bool = False) -> None:
    """VQS step 2 (§V-B): a configuration with a class-1 job reserves 2/3 of the server
    for it; the other class fills the rest from its queue in FIFO order. With
    ``strict_hol`` the scan stops at the first job that does not fit (else it skips it)."""
    if config.reserves_class1 and not mix.has_class1:
        head = vqs.queues[1].head()
        if head is not None and head.size <= residuals[server] + EPS:   # (a smaller server: it may not)
            vqs.remove(head)
            _place(head, server, residuals, out)
    # what the configuration leaves the other class, within what the server has left (the same on
    # the paper's unit servers; less on a server smaller than the largest)
    room = min((1 - RESERVED_FOR_CLASS1 if config.reserves_class1 else 1.0) - mix.others_load, residuals[server])
    queue = vqs.queues[config.other_class]
    job = queue.head()
    while job is not None and queue.largest_fitting(room) is not None:
        following = queue.after(job.seq)
        if job.size <= room + EPS:
            vqs.remove(job)
            _place(job, server, residuals, out)
            room -= job.size
        elif strict_hol:
            break
        job = following


def vqs_bf_fill(server: int, config: Configuration, mix: ServerMix, residuals: list[float],
                vqs: VirtualQueues, out: list[Placement]) -> None:
    """VQS-BF step 2 (§VI): the largest fitting class-1 job if the configuration has one
    (no reservation), then the largest fitting jobs of the other class up to its count,
    then Best-Fit over the whole queue."""
    if config.reserves_class1:
        job = vqs.queues[1].largest_fitting(residuals[server])
        if job is not None:
            vqs.remove(job)
            _place(job, server, residuals, out)
    j = config.other_class
    held = mix.class_counts[j]
    while held < config.count(j):
        job = vqs.queues[j].largest_fitting(residuals[server])
        if job is None:
            break
        vqs.remove(job)
        _place(job, server, residuals, out)
        held += 1
    best_fit_server_fill(server, residuals, vqs, out)
