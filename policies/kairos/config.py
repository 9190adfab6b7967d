"""Kairos' parameters and the node heartbeat (thesis Ch. 4; the policy: `policies.kairos.kairos`)."""
from __future__ import annotations

import enum
from dataclasses import dataclass, field

from policies.framework.api import value
from policies.framework.bounds import DAY, MS, check_bounds, within


class CentralOrder(enum.Enum):
    """Which pending task the central scheduler places next."""

    FIFO = "fifo"   # tasks in the order they became ready (Algorithm 3 as written)
    JOB = "job"     # a ready task takes its user job's arrival place (YARN's and Spark's FIFO)


class Age(enum.Enum):
    """What a node's LAS counts as a task's attained service."""

    TASK = "task"   # the task's own (Algorithm 2)
    JOB = "job"     # its user job's tasks' on the node, together (our extension for multi-stage jobs)


class Starvation(enum.Enum):
    """What makes a task starving, to be given a protected run."""

    PREEMPTED = "preempted"   # preempted more than N times ([X] the YARN prototype's counter)
    WAITED = "waited"         # idle for N quanta in a row (the thesis' text; our reading of it)


class TieBreak(enum.Enum):
    """How the central scheduler picks among nodes holding equally many tasks."""

    VAR = "var"
    RANDOM = "random"
    SUM = "sum"


@dataclass(frozen=True)
class KairosConfig:
    """Kairos parameters; defaults are the thesis' simulation settings (Yahoo trace).

    q: extra tasks admitted per node beyond its slots (simulation 2; YARN prototype 4).
    w: LAS quantum in seconds (simulation 100 Yahoo / 10000 Google; YARN prototype 50).
    starvation_preemptions: the starvation counter's limit N ([X] 3; thesis simulation 3):
        preemptions tolerated (``starvation = preempted``) or quanta idle in a row (``waited``).
    starvation_quanta: length of the protected run, in quanta ([X] 2).
    starvation: preempted (default: the YARN prototype's count) or waited (the thesis' text: a
        task that has not run for N quanta in a row runs next, at a quantum end or a freed slot,
        whatever its age; our reading).
    tie_break: var (default), random or sum.
    swap_margin: a running task is swapped out at a quantum end only if it is older than the
        youngest idle task by at least ``swap_margin x w`` (thesis: 0; YARN prototype: 0.5).
    heartbeat_interval: seconds between node heartbeats; 0 = on every change (our reading).
    order: job (default: a ready task queues at its user job's arrival place, as the prototype's
        CapacityScheduler keeps an application's place for its later container requests; our
        reading for multi-stage jobs) or fifo (a task queues when it becomes ready: Algorithm 3's
        FIFO over tasks taken literally). The same for one-stage jobs, the thesis' only kind.
    age: task (default, Algorithm 2: a task's own attained service) or job (our extension, not the
        thesis': the attained service of the task's user job's tasks on the node, running and
        suspended, together; a task never preempts or swaps with one of its own job, and quantum
        ends are not skipped). A batch job's next map then no longer counts as younger than a
        query that has run a few seconds.
    """

    q: int = field(default=2, metadata=within(0, 1024))
    w: float = field(default=100.0, metadata=within(MS, 1e7))
    starvation_preemptions: int = field(default=3, metadata=within(0, 1_000_000))
    starvation_quanta: int = field(default=2, metadata=within(0, 1_000_000))
    tie_break: TieBreak = TieBreak.VAR
    swap_margin: float = field(default=0.0, metadata=within(0, 1e6))
    heartbeat_interval: float = field(default=0.0, metadata=within(MS, DAY, zero_off=True))
    order: CentralOrder = CentralOrder.JOB
    age: Age = Age.TASK
    starvation: Starvation = Starvation.PREEMPTED

    def __post_init__(self) -> None:
        check_bounds(self)


@value
class KairosHeartbeat:
    """Node -> central state: tasks present, variance and sum of their attained service, and
    how many tasks the node has received in total (to count tasks still in flight)."""

    n_tasks: int
    variance: float
    total: float
    received: int
