"""What a slot of the cluster state holds: a running task, a reservation, or a foreign task."""
from __future__ import annotations

from policies.framework.api import ProbeInfo


class Running:
    """Mutable record of a task on a slot (or suspended: slot -1)."""

    __slots__ = ("job_id", "task", "start", "attained", "token", "probe", "demand", "flag", "long", "hold")

    def __init__(self, job_id: int, task: int, start: float, attained: float, token: int,
                 probe: ProbeInfo | None, demand: tuple[float, ...] | None, flag: bool, long: bool) -> None:
        self.job_id = job_id
        self.task = task
        self.start = start
        self.attained = attained
        self.token = token    # identifies the current run segment (-1 while suspended)
        self.probe = probe
        self.demand = demand
        self.flag = flag      # the entry it came from was queued behind a long task
        self.long = long      # long by the *reporting* classification
        # unproductive seconds at the start of the current segment: a context switch after a
        # resume, or math.inf while the task waits for DAG parents it was started before
        self.hold = 0.0


class Reserved:
    """A slot held for an unbound probe while its TaskRequest is in flight."""

    __slots__ = ("probe", "keep", "flag")

    def __init__(self, probe: ProbeInfo, keep: bool, flag: bool) -> None:
        self.probe = probe
        self.keep = keep
        self.flag = flag


class Foreign:
    """A slot held by a task the policy did not place (live: a task Spark ran on its own)."""

    __slots__ = ("ref", "demand")

    def __init__(self, ref: object, demand: tuple[float, ...] | None) -> None:
        self.ref = ref
        self.demand = demand
