"""The policy contract: typed events in, typed decisions out.

A *policy* is a plain Python object. Drivers (the simulator in ``bridge/sim``, later the live
YARN/Spark driver) deliver **events** to it by calling its **hooks**; each hook returns a
sequence of **decisions**, which the driver applies. A policy never performs I/O, never reads
the wall clock and never uses the module-level ``random``; it reads time from the event
(``ev.time``) and the cluster from the read-only :class:`ClusterView` it is given, and draws
randomness from ``env.rng()`` handed to its factory.

Hooks (implement only those you need; each is one small Protocol below):

Scheduler side (the job's scheduler: central or distributed, it does not matter here)

    on_job_arrival(ev: JobArrival, view)        required
    on_task_request(ev: TaskRequest, view)      late binding: a node asks for a task of a probe's job
    on_task_started(ev: TaskStarted, view)      a task began running (after network delay)
    on_task_finished(ev: TaskFinished, view)    a task finished (after network delay)
    on_heartbeat(ev: Heartbeat, view)           a node's SendHeartbeat arrived
    on_probe_rejected(ev: ProbeRejected, view)  a node refused a probe (Reject decision)
    on_timer(ev: Timer, view)                   a SetTimer(node=None) fired

Node side (the per-node scheduler; ``ev.node`` says which node)

    on_probe_arrival(ev: ProbeArrival, view)    a probe or a bound task reached the node
    on_slot_freed(ev: SlotFreed, view)          a slot became free (task finished, request cancelled)
    on_queued_task_ended(ev: QueuedTaskEnded, view)  a task queued or suspended there ended off its slot
    on_steal_attempt(ev: StealAttempt, view)    a thief asks its victims, in order: answer with the
                                                Give of the first that has work (one call per Steal)
    on_node_timer(ev: Timer, view)              a SetTimer(node=n) fired

Decisions (immutable values, like the events; the driver applies them in order, at ``ev.time``):

    Assign(node, probe)          send a task bound to ``probe.task`` to a node (central placement)
    Probe(nodes, probe)          send a late-binding reservation to each node (a node may repeat)
    Run(node, slot, probe)       start a queued entry on a free slot; unbound probes first ask the
                                 job's scheduler (TaskRequest), bound tasks start at once
    Launch(node, slot, job, task)  the scheduler's answer to a TaskRequest: run this task
    Cancel(node, slot, probe)    the scheduler's answer to a TaskRequest: nothing left to run
    Suspend(node, slot)          pause the task on a slot (it keeps its attained service)
    Resume(node, slot, job, task)  continue a suspended task of that node on a free slot
    Steal(thief, victims)        ask victims, in order, for work until one gives some
    Give(victim, thief, probes)  a victim hands queued entries to a thief
    Drop(node, probe)            remove a queued entry without running it
    Reject(status, ...)          refuse a probe (node side) or a whole job (scheduler side)
    SetTimer(at, node, key)      deliver Timer(key) at time ``at`` to a node or to the scheduler
    SendHeartbeat(node, payload)  node -> scheduler state (Kairos counts, Eagle bit-vectors, ...)

The driver owns the physical truth (which task runs on which slot, what is suspended, which
entries sit at a node); the policy owns everything else (queue order, estimates, partitions,
load tables). A decision that contradicts the physical truth (running on a busy slot, launching
a task twice, resuming a task that is not suspended there) is a bug in the policy: the simulator
raises :class:`DecisionError` carrying a :class:`Status`.

``policies`` never imports ``bridge``, ``yarnclient``, ``sparkplugin`` or anything doing I/O.
See ``policies/README.md`` for a worked example. The events, decisions and the values they
carry are defined in ``policies/framework/messages.py`` (compiled natively by the simulator's core) and
re-exported here; import them from this module.
"""
from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import MISSING, dataclass, fields
from typing import Any, Protocol, TypeVar, dataclass_transform, runtime_checkable

from policies.framework.messages import (
    OK, Assign, BaseEvent, Cancel, Code, Drop, Give, Heartbeat, JobArrival, Launch, Probe, ProbeArrival,
    ProbeInfo, ProbeRejected, QueuedTaskEnded, Reject, Resume, Run, RunningTask, SendHeartbeat, SetTimer,
    SlotFreed, Status, Steal, StealAttempt, Suspend, TaskFinished, TaskRequest, TaskStarted, Timer, Value,
)
from workloads.model import Job

__all__ = [
    "API_VERSION", "ALL_HOOKS", "NODE_HOOKS", "NONE", "OK", "SCHEDULER_HOOKS", "Assign", "BaseEvent", "Cancel",
    "ClusterSpec", "ClusterView", "Code", "DecisionError", "Decision", "Decisions", "Drop", "Event", "Give",
    "Heartbeat", "HeartbeatHook", "JobArrival", "Launch", "NodeTimerHook", "Policy", "PolicyEnv", "Probe",
    "ProbeArrival", "ProbeArrivalHook", "ProbeInfo", "ProbeRejected", "ProbeRejectedHook", "QueuedTaskEnded",
    "QueuedTaskEndedHook", "Reject", "Resume",
    "Run", "RunningTask", "SendHeartbeat", "SetTimer", "SlotFreed", "SlotFreedHook", "Status", "Steal",
    "StealAttempt", "StealAttemptHook", "Suspend", "TaskFinished", "TaskFinishedHook", "TaskRequest",
    "TaskRequestHook", "TaskStarted", "TaskStartedHook", "Timer", "TimerHook", "Value", "check_policy",
    "hooks_of", "value",
]

API_VERSION = 2   # 2: one on_steal_attempt per Steal replaced on_steal_request per victim

T = TypeVar("T")


@dataclass_transform(frozen_default=True)
def value(cls: type[T]) -> type[T]:
    """``@dataclass(frozen=True, slots=True)`` with a faster ``__init__``.

    The simulator creates millions of events and decisions; the stock frozen ``__init__`` goes
    through ``object.__setattr__`` per field and is about twice as slow as setting the slot
    descriptors directly, which is what the generated initializer does. Instances stay frozen
    (assignment raises ``FrozenInstanceError``), hashable, comparable and picklable.
    """
    cls = dataclass(frozen=True, slots=True)(cls)
    ns: dict[str, Any] = {}
    params: list[str] = []
    body: list[str] = []
    for f in fields(cls):  # type: ignore[arg-type]  # cls is a dataclass from the line above
        if f.default_factory is not MISSING:  # pragma: no cover - not used by value types
            raise TypeError(f"{cls.__name__}.{f.name}: default_factory is not supported")
        if f.default is MISSING:
            params.append(f.name)
        else:
            ns[f"_d_{f.name}"] = f.default
            params.append(f"{f.name}=_d_{f.name}")
        ns[f"_s_{f.name}"] = getattr(cls, f.name).__set__
        body.append(f"_s_{f.name}(self, {f.name})")
    if hasattr(cls, "__post_init__"):
        body.append("self.__post_init__()")
    src = f"def __init__(self, {', '.join(params)}):\n    " + "\n    ".join(body or ["pass"])
    exec(src, ns)  # generated from the dataclass fields above
    init = ns["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init  # type: ignore[method-assign]  # replacing the generated __init__ is the point
    return cls


# ---------------------------------------------------------------------------------------------
# Errors and the cluster's shape (statuses, events, decisions: policies/framework/messages.py)
# ---------------------------------------------------------------------------------------------


class DecisionError(RuntimeError):
    """A policy returned a decision that contradicts the cluster state."""

    def __init__(self, status: Status, decision: object = None) -> None:
        super().__init__(f"{status.source or 'driver'}: {status.reason} (decision {decision!r})")
        self.status = status
        self.decision = decision


@value
class ClusterSpec:
    """Static shape of the cluster, given to policy factories."""

    n_nodes: int
    slots_per_node: int = 1
    resources: tuple[str, ...] = ()             # names of capacity dimensions, e.g. ("cpu", "mem")
    capacity: tuple[float, ...] | None = None   # every node's capacity vector (the largest, if they differ)
    network_delay: float = 0.0005               # one way, seconds
    # heterogeneous nodes: node i's capacity vector (then ``capacity`` is their elementwise max)
    node_capacity: tuple[tuple[float, ...], ...] | None = None

    def __post_init__(self) -> None:
        if self.n_nodes < 1:
            raise ValueError(f"n_nodes must be >= 1, got {self.n_nodes}")
        if self.slots_per_node < 1:
            raise ValueError(f"slots_per_node must be >= 1, got {self.slots_per_node}")
        if self.network_delay < 0:
            raise ValueError(f"network_delay must be >= 0, got {self.network_delay}")
        if self.capacity is not None and len(self.capacity) != len(self.resources):
            raise ValueError("capacity must have one entry per resource name")
        if self.node_capacity is not None:
            if self.capacity is None or len(self.node_capacity) != self.n_nodes:
                raise ValueError("node_capacity needs a capacity and one vector per node")
            if any(len(c) != len(self.capacity) or any(x > m for x, m in zip(c, self.capacity))
                   for c in self.node_capacity):
                raise ValueError("each node_capacity vector must have capacity's length and be within it")

    def capacity_of(self, node: int) -> tuple[float, ...] | None:
        """Node ``node``'s capacity vector (None if the cluster has none)."""
        return self.capacity if self.node_capacity is None else self.node_capacity[node]


@value
class PolicyEnv:
    """What a factory gets besides its config: the cluster shape and a seed for its own RNG."""

    cluster: ClusterSpec
    seed: int = 0

    def rng(self, stream: str = "") -> random.Random:
        """A ``random.Random`` private to this policy (and ``stream``), seeded deterministically."""
        return random.Random(f"{self.seed}/{stream}")


Event = (JobArrival | ProbeArrival | TaskRequest | TaskStarted | TaskFinished | SlotFreed | QueuedTaskEnded
         | Heartbeat | Timer | ProbeRejected | StealAttempt)
Decision = (Assign | Probe | Run | Launch | Cancel | Suspend | Resume | Steal | Give | Drop | Reject | SetTimer
            | SendHeartbeat)
Decisions = Sequence[Decision]
NONE: tuple[Decision, ...] = ()


# ---------------------------------------------------------------------------------------------
# The read-only view of the cluster a hook gets
# ---------------------------------------------------------------------------------------------


class ClusterView(Protocol):
    """Read-only physical state. Policies must not keep references to returned containers
    beyond the hook call (the driver may reuse them)."""

    spec: ClusterSpec

    @property
    def now(self) -> float: ...

    def job(self, job_id: int) -> Job:
        """The immutable spec of a job that has arrived."""

    def free_slot(self, node: int) -> int:
        """Lowest free slot of ``node`` (not running and not reserved), or -1."""

    def free_slots(self, node: int) -> int:
        """Number of free slots of ``node``."""

    def free_slot_ids(self, node: int) -> tuple[int, ...]:
        """The free slots of ``node``, lowest first (a slot that is running, reserved for a task
        request or held by a task the policy did not place is not free)."""

    def running(self, node: int) -> tuple[RunningTask, ...]:
        """Tasks running on ``node`` (reserved-but-not-started slots are not listed)."""

    def suspended(self, node: int) -> tuple[RunningTask, ...]:
        """Tasks suspended on ``node`` (slot -1), in suspension order."""

    def queued(self, node: int) -> int:
        """Number of entries queued at ``node`` (delivered, not yet run, dropped or given away)."""

    def free_capacity(self, node: int) -> tuple[float, ...] | None:
        """Capacity minus demands of running tasks (None if the cluster has no capacity vector)."""

    def attained(self, node: int, job_id: int, task: int) -> float:
        """Service a task on ``node`` has received so far (running or suspended)."""

    def is_ready(self, job_id: int, task: int) -> bool:
        """True if every DAG parent of the task has finished (always True without a DAG)."""


# ---------------------------------------------------------------------------------------------
# Hooks: one Protocol per extension point
# ---------------------------------------------------------------------------------------------


class Policy(Protocol):
    """Every policy has a ``name``; ``on_job_arrival`` is the one mandatory hook."""

    name: str

    def on_job_arrival(self, ev: JobArrival, view: ClusterView) -> Decisions: ...


@runtime_checkable
class TaskRequestHook(Protocol):
    def on_task_request(self, ev: TaskRequest, view: ClusterView) -> Decisions: ...


@runtime_checkable
class TaskStartedHook(Protocol):
    def on_task_started(self, ev: TaskStarted, view: ClusterView) -> Decisions: ...


@runtime_checkable
class TaskFinishedHook(Protocol):
    def on_task_finished(self, ev: TaskFinished, view: ClusterView) -> Decisions: ...


@runtime_checkable
class HeartbeatHook(Protocol):
    def on_heartbeat(self, ev: Heartbeat, view: ClusterView) -> Decisions: ...


@runtime_checkable
class ProbeRejectedHook(Protocol):
    def on_probe_rejected(self, ev: ProbeRejected, view: ClusterView) -> Decisions: ...


@runtime_checkable
class TimerHook(Protocol):
    def on_timer(self, ev: Timer, view: ClusterView) -> Decisions: ...


@runtime_checkable
class ProbeArrivalHook(Protocol):
    def on_probe_arrival(self, ev: ProbeArrival, view: ClusterView) -> Decisions: ...


@runtime_checkable
class SlotFreedHook(Protocol):
    def on_slot_freed(self, ev: SlotFreed, view: ClusterView) -> Decisions: ...


@runtime_checkable
class QueuedTaskEndedHook(Protocol):
    def on_queued_task_ended(self, ev: QueuedTaskEnded, view: ClusterView) -> Decisions: ...


@runtime_checkable
class StealAttemptHook(Protocol):
    def on_steal_attempt(self, ev: StealAttempt, view: ClusterView) -> Decisions: ...


@runtime_checkable
class NodeTimerHook(Protocol):
    def on_node_timer(self, ev: Timer, view: ClusterView) -> Decisions: ...


# hook method name -> event type it receives; the scheduler side first, then the node side.
SCHEDULER_HOOKS: dict[str, type] = {
    "on_job_arrival": JobArrival,
    "on_task_request": TaskRequest,
    "on_task_started": TaskStarted,
    "on_task_finished": TaskFinished,
    "on_heartbeat": Heartbeat,
    "on_probe_rejected": ProbeRejected,
    "on_timer": Timer,
}
NODE_HOOKS: dict[str, type] = {
    "on_probe_arrival": ProbeArrival,
    "on_slot_freed": SlotFreed,
    "on_queued_task_ended": QueuedTaskEnded,
    "on_steal_attempt": StealAttempt,
    "on_node_timer": Timer,
}
ALL_HOOKS: dict[str, type] = {**SCHEDULER_HOOKS, **NODE_HOOKS}


def hooks_of(policy: object) -> frozenset[str]:
    """The hook names ``policy`` implements (callable attributes named like a hook)."""
    return frozenset(h for h in ALL_HOOKS if callable(getattr(policy, h, None)))


def check_policy(policy: object) -> Status:
    """Load-time conformance check: a non-empty ``name`` and a callable ``on_job_arrival``.

    Also refuses attributes that look like misspelled hooks (``on_...`` not in the contract),
    so a typo does not silently leave a hook unimplemented."""
    name = getattr(policy, "name", None)
    if not isinstance(name, str) or not name:
        return Status(Code.ERROR, "policy has no non-empty string attribute 'name'", "check_policy")
    if not callable(getattr(policy, "on_job_arrival", None)):
        return Status(Code.ERROR, f"policy {name!r} does not implement on_job_arrival", name)
    unknown = sorted(a for a in dir(policy)
                     if a.startswith("on_") and a not in ALL_HOOKS and callable(getattr(policy, a)))
    if unknown:
        return Status(Code.ERROR, f"policy {name!r} has unknown hook(s) {unknown}; "
                                  f"known hooks: {sorted(ALL_HOOKS)}", name)
    return OK
