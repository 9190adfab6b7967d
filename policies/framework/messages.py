"""The contract's value types: statuses, queue entries, events in and decisions out.

Re-exported by :mod:`policies.framework.api`, which documents the contract; import them from there. They
live in a module of their own because the simulator's compiled core (``policies/framework/compiled.py``)
compiles this one with mypyc into native classes: a field read is then a C struct access and a
construction from compiled code a C call, where an interpreted class costs a dictionary lookup per
read and a Python frame per ``__init__`` (together about a quarter of a compiled run's time,
measured). Hence the shape of each class, which works compiled and as pure Python alike:

* ``@dataclass(init=False, unsafe_hash=True)`` for ``==``, ``hash``, ``repr`` and
  ``dataclasses.fields``, with an explicit ``__init__`` (mypyc compiles a written ``__init__``
  natively, never a generated one);
* an event's ``tier`` is a property of its class (mypyc would take a class attribute of a
  dataclass for a field);
* :class:`Value` makes every instance picklable by its fields.

Values are immutable by contract: nothing assigns to a field after ``__init__`` (mypyc's native
classes cannot refuse an assignment at run time, so the check is review, not ``frozen=True``).
Compiled, a field given a value of another type than its annotation raises ``TypeError`` at
construction (e.g. ``Run(0, 0, None)``); pure Python does not check, and the cluster state
refuses such a decision when it applies it.
"""
from __future__ import annotations

import enum
from collections.abc import Hashable
from dataclasses import dataclass, fields
from typing import Any

from workloads.model import Job


class Value:
    """Base of the value types: pickled as their class and field values."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, tuple([getattr(self, f.name) for f in fields(self)]))  # type: ignore[arg-type]


# ---------------------------------------------------------------------------------------------
# Status: closed codes, as values
# ---------------------------------------------------------------------------------------------


class Code(enum.Enum):
    """Closed set of outcome codes (as in the Kubernetes scheduling framework)."""

    OK = "ok"                        # applied / accepted
    UNSCHEDULABLE = "unschedulable"  # does not fit now; may fit later (retry)
    ERROR = "error"                  # the policy or driver failed; do not retry
    SKIP = "skip"                    # not applicable; nothing done
    WAIT = "wait"                    # accepted, outcome pending (e.g. awaiting a reply)


@dataclass(init=False, unsafe_hash=True)
class Status(Value):
    """Outcome of a hook or of applying a decision: a code, a reason and who said so."""

    code: Code
    reason: str
    source: str

    def __init__(self, code: Code = Code.OK, reason: str = "", source: str = "") -> None:
        self.code = code
        self.reason = reason
        self.source = source

    @property
    def ok(self) -> bool:
        return self.code is Code.OK


OK = Status()


# ---------------------------------------------------------------------------------------------
# Value types carried by events and decisions
# ---------------------------------------------------------------------------------------------


@dataclass(init=False, unsafe_hash=True)
class ProbeInfo(Value):
    """A queue entry travelling to a node: a late-binding probe (``task is None``) or a task
    bound by its sender. ``est`` and ``long`` are the *sender's* belief (estimated task
    duration, scheduling class); ``pid`` is a sender-chosen id for logs; ``round`` counts
    re-sends (Eagle re-probing, stealing); ``info`` is free policy payload (keep it immutable).
    ``notify=False`` asks the driver not to send TaskStarted/TaskFinished to the scheduler side
    for tasks run from this entry (saves two messages per task when the scheduler does not
    track them, e.g. Hawk's short tasks)."""

    job_id: int
    task: int | None
    est: float
    long: bool
    pid: int
    round: int
    info: Any
    notify: bool

    def __init__(self, job_id: int, task: int | None = None, est: float = 0.0, long: bool = False,
                 pid: int = -1, round: int = 0, info: Any = None, notify: bool = True) -> None:
        self.job_id = job_id
        self.task = task
        self.est = est
        self.long = long
        self.pid = pid
        self.round = round
        self.info = info
        self.notify = notify

    def bind(self, task: int) -> ProbeInfo:
        """This probe bound to a task (same job, estimate, class, id and notify flag)."""
        return ProbeInfo(self.job_id, task, self.est, self.long, self.pid, self.round, self.info, self.notify)


@dataclass(init=False, unsafe_hash=True)
class RunningTask(Value):
    """Physical state of one occupied slot (or one suspended task; ``slot == -1`` then)."""

    slot: int
    job_id: int
    task: int
    started: float      # when the current run segment began
    attained: float     # service received before the current segment
    probe: ProbeInfo | None

    def __init__(self, slot: int, job_id: int, task: int, started: float, attained: float,
                 probe: ProbeInfo | None = None) -> None:
        self.slot = slot
        self.job_id = job_id
        self.task = task
        self.started = started
        self.attained = attained
        self.probe = probe


# ---------------------------------------------------------------------------------------------
# Events in. ``tier`` orders same-instant events in the simulator (lower runs first).
# ---------------------------------------------------------------------------------------------


class BaseEvent(Value):
    """What every event has: the instant it happens and its class's tier."""

    time: float

    @property
    def tier(self) -> int:
        raise NotImplementedError


@dataclass(init=False, unsafe_hash=True)
class JobArrival(BaseEvent):
    time: float
    job: Job

    def __init__(self, time: float, job: Job) -> None:
        self.time = time
        self.job = job

    @property
    def tier(self) -> int:
        return 5


@dataclass(init=False, unsafe_hash=True)
class ProbeArrival(BaseEvent):
    time: float
    node: int
    probe: ProbeInfo

    def __init__(self, time: float, node: int, probe: ProbeInfo) -> None:
        self.time = time
        self.node = node
        self.probe = probe

    @property
    def tier(self) -> int:
        return 3


@dataclass(init=False, unsafe_hash=True)
class TaskRequest(BaseEvent):
    """Late binding: ``node`` runs ``probe`` on ``slot`` and asks the job's scheduler for a task."""

    time: float
    node: int
    slot: int
    probe: ProbeInfo

    def __init__(self, time: float, node: int, slot: int, probe: ProbeInfo) -> None:
        self.time = time
        self.node = node
        self.slot = slot
        self.probe = probe

    @property
    def tier(self) -> int:
        return 2


@dataclass(init=False, unsafe_hash=True)
class TaskStarted(BaseEvent):
    time: float
    node: int
    slot: int
    job_id: int
    task: int

    def __init__(self, time: float, node: int, slot: int, job_id: int, task: int) -> None:
        self.time = time
        self.node = node
        self.slot = slot
        self.job_id = job_id
        self.task = task

    @property
    def tier(self) -> int:
        return 2


@dataclass(init=False, unsafe_hash=True)
class TaskFinished(BaseEvent):
    """Delivered to the scheduler side, one network delay after the task ended at ``finished``."""

    time: float
    node: int
    slot: int
    job_id: int
    task: int
    finished: float

    def __init__(self, time: float, node: int, slot: int, job_id: int, task: int, finished: float) -> None:
        self.time = time
        self.node = node
        self.slot = slot
        self.job_id = job_id
        self.task = task
        self.finished = finished

    @property
    def tier(self) -> int:
        return 1


@dataclass(init=False, unsafe_hash=True)
class SlotFreed(BaseEvent):
    """A slot of ``node`` became free. ``job_id``/``task`` name the task that just finished on it
    (``-1`` when the slot was freed otherwise, e.g. a cancelled request or a suspension)."""

    time: float
    node: int
    slot: int
    job_id: int
    task: int

    def __init__(self, time: float, node: int, slot: int, job_id: int = -1, task: int = -1) -> None:
        self.time = time
        self.node = node
        self.slot = slot
        self.job_id = job_id
        self.task = task

    @property
    def tier(self) -> int:
        return 1


@dataclass(init=False, unsafe_hash=True)
class QueuedTaskEnded(BaseEvent):
    """A task of ``node`` that held no slot ended: it made progress off its slot (live, in a
    container shrunk to the node agent's minimum share; in the simulator, at the cluster's
    ``offslot_share``). ``probe`` is the bound entry it was queued as (it has left the node's
    queue), or None if it was suspended (it has left ``view.suspended``). The task is finished:
    the scheduler side hears a TaskFinished with slot -1. Sent only to a policy with the hook; to
    any other, such a task finishes at once when the policy next gives it a slot."""

    time: float
    node: int
    job_id: int
    task: int
    probe: ProbeInfo | None

    def __init__(self, time: float, node: int, job_id: int, task: int, probe: ProbeInfo | None = None) -> None:
        self.time = time
        self.node = node
        self.job_id = job_id
        self.task = task
        self.probe = probe

    @property
    def tier(self) -> int:
        return 1


@dataclass(init=False, unsafe_hash=True)
class Heartbeat(BaseEvent):
    time: float
    node: int
    payload: Any

    def __init__(self, time: float, node: int, payload: Any) -> None:
        self.time = time
        self.node = node
        self.payload = payload

    @property
    def tier(self) -> int:
        return 4


@dataclass(init=False, unsafe_hash=True)
class Timer(BaseEvent):
    time: float
    node: int | None
    key: Hashable

    def __init__(self, time: float, node: int | None, key: Hashable) -> None:
        self.time = time
        self.node = node
        self.key = key

    @property
    def tier(self) -> int:
        return 6


@dataclass(init=False, unsafe_hash=True)
class ProbeRejected(BaseEvent):
    time: float
    node: int
    probe: ProbeInfo
    status: Status
    payload: Any

    def __init__(self, time: float, node: int, probe: ProbeInfo, status: Status, payload: Any = None) -> None:
        self.time = time
        self.node = node
        self.probe = probe
        self.status = status
        self.payload = payload

    @property
    def tier(self) -> int:
        return 4


@dataclass(init=False, unsafe_hash=True)
class StealAttempt(BaseEvent):
    """``thief`` asks ``victims``, in order and all at this instant, until one gives entries: one
    event (and one hook call) per ``Steal``, however many victims it names."""

    time: float
    thief: int
    victims: tuple[int, ...]

    def __init__(self, time: float, thief: int, victims: tuple[int, ...]) -> None:
        self.time = time
        self.thief = thief
        self.victims = victims

    @property
    def tier(self) -> int:
        return 2


# ---------------------------------------------------------------------------------------------
# Decisions out
# ---------------------------------------------------------------------------------------------


@dataclass(init=False, unsafe_hash=True)
class Assign(Value):
    """Send a task (``probe.task`` must be set) to ``node``; it arrives as a ProbeArrival."""

    node: int
    probe: ProbeInfo

    def __init__(self, node: int, probe: ProbeInfo) -> None:
        self.node = node
        self.probe = probe


@dataclass(init=False, unsafe_hash=True)
class Probe(Value):
    """Send ``probe`` to every node in ``nodes`` (repeats allowed: one entry per occurrence)."""

    nodes: tuple[int, ...]
    probe: ProbeInfo

    def __init__(self, nodes: tuple[int, ...], probe: ProbeInfo) -> None:
        self.nodes = nodes
        self.probe = probe


@dataclass(init=False, unsafe_hash=True)
class Run(Value):
    """Start ``probe`` (an entry queued at ``node``) on the free ``slot``.

    A bound entry starts now. An unbound probe reserves the slot and sends a TaskRequest to the
    job's scheduler, which answers Launch or Cancel. With ``keep`` the entry stays queued at the
    node afterwards (sticky probes); otherwise it leaves the queue now."""

    node: int
    slot: int
    probe: ProbeInfo
    keep: bool

    def __init__(self, node: int, slot: int, probe: ProbeInfo, keep: bool = False) -> None:
        self.node = node
        self.slot = slot
        self.probe = probe
        self.keep = keep


@dataclass(init=False, unsafe_hash=True)
class Launch(Value):
    """Answer to a TaskRequest: run ``task`` of ``job_id`` on the reserved slot."""

    node: int
    slot: int
    job_id: int
    task: int

    def __init__(self, node: int, slot: int, job_id: int, task: int) -> None:
        self.node = node
        self.slot = slot
        self.job_id = job_id
        self.task = task


@dataclass(init=False, unsafe_hash=True)
class Cancel(Value):
    """Answer to a TaskRequest: no task for this probe. The slot is freed (SlotFreed follows)
    and the probe leaves the node's queue if it was kept there."""

    node: int
    slot: int
    probe: ProbeInfo

    def __init__(self, node: int, slot: int, probe: ProbeInfo) -> None:
        self.node = node
        self.slot = slot
        self.probe = probe


@dataclass(init=False, unsafe_hash=True)
class Suspend(Value):
    """Pause the task running on ``slot``; it keeps its attained service. The slot is free at once."""

    node: int
    slot: int

    def __init__(self, node: int, slot: int) -> None:
        self.node = node
        self.slot = slot


@dataclass(init=False, unsafe_hash=True)
class Resume(Value):
    """Continue a task suspended on ``node`` on the free ``slot``."""

    node: int
    slot: int
    job_id: int
    task: int

    def __init__(self, node: int, slot: int, job_id: int, task: int) -> None:
        self.node = node
        self.slot = slot
        self.job_id = job_id
        self.task = task


@dataclass(init=False, unsafe_hash=True)
class Steal(Value):
    """``thief`` asks ``victims`` in order (one StealAttempt) until one answers with a non-empty Give."""

    thief: int
    victims: tuple[int, ...]

    def __init__(self, thief: int, victims: tuple[int, ...]) -> None:
        self.thief = thief
        self.victims = victims


@dataclass(init=False, unsafe_hash=True)
class Give(Value):
    """Move queued entries from ``victim`` to ``thief`` (they arrive as ProbeArrivals)."""

    victim: int
    thief: int
    probes: tuple[ProbeInfo, ...]

    def __init__(self, victim: int, thief: int, probes: tuple[ProbeInfo, ...]) -> None:
        self.victim = victim
        self.thief = thief
        self.probes = probes


@dataclass(init=False, unsafe_hash=True)
class Drop(Value):
    """Remove a queued entry from ``node`` without running it."""

    node: int
    probe: ProbeInfo

    def __init__(self, node: int, probe: ProbeInfo) -> None:
        self.node = node
        self.probe = probe


@dataclass(init=False, unsafe_hash=True)
class Reject(Value):
    """Refuse work. With ``probe`` (node side): the probe leaves ``node``'s queue and goes back to
    its scheduler as a ProbeRejected carrying ``payload``. Without a probe (scheduler side): the
    whole job ``job_id`` is refused and will never run."""

    status: Status
    job_id: int
    node: int
    probe: ProbeInfo | None
    payload: Any

    def __init__(self, status: Status, job_id: int = -1, node: int = -1, probe: ProbeInfo | None = None,
                 payload: Any = None) -> None:
        self.status = status
        self.job_id = job_id
        self.node = node
        self.probe = probe
        self.payload = payload


@dataclass(init=False, unsafe_hash=True)
class SetTimer(Value):
    """Deliver ``Timer(at, node, key)``: to ``on_node_timer`` if ``node`` is set, else ``on_timer``."""

    at: float
    node: int | None
    key: Hashable

    def __init__(self, at: float, node: int | None, key: Hashable) -> None:
        self.at = at
        self.node = node
        self.key = key


@dataclass(init=False, unsafe_hash=True)
class SendHeartbeat(Value):
    """Node -> scheduler message; arrives one network delay later as a Heartbeat."""

    node: int
    payload: Any

    def __init__(self, node: int, payload: Any) -> None:
        self.node = node
        self.payload = payload
