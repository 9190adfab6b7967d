"""One world's record of which Spark task runs which policy task: the one record outside the state.

The cluster state knows where each policy task is (its slot, or suspended, or queued at a node);
the ledger knows what Spark does with it. Per world, the planner keeps one ``Ledger``:

* its policy jobs: each is one Spark stage attempt's tasks (``StageKey``), with how many of
  them Spark launched or no longer needs;
* its policy tasks Spark runs or will run (``Entry``): a task *waits* for Spark's launch (on
  executors a grant on its slot, on NodeManagers queued at its node), is *bound* to the Spark task
  that runs it (on its slot, or off it: draining, or shrunk), or *ended* off its slot (the node
  driver finishes it when the policy next gives it a slot);
* the Spark tasks Spark placed itself (``foreign``: they hold a slot of the state), and the Spark
  tasks to kill this round.

Data runs one way: the planner turns Spark's reports into ledger updates and calls on the state;
the state's effects reach the world's runner, which records what they mean for Spark here.
"""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

TaskKey = tuple[int, int]        # (policy job id, task)
Where = tuple[int, int]          # (node, slot) of the cluster state
StageKey = tuple[str, int, int]  # (app, stage, attempt)


@dataclass(slots=True)
class LiveJob:
    """A policy job: ``n`` tasks of one Spark stage attempt, ``started`` of them launched by Spark
    and ``retired`` ones Spark no longer needs."""

    key: StageKey
    n: int
    started: int = 0
    retired: int = 0

    @property
    def owed(self) -> int:
        return self.n - self.started - self.retired


@dataclass(slots=True)
class Entry:
    """A policy task Spark runs or will run."""

    node: int                   # the node Spark runs it on (or its grant's, or its queue's)
    at: Where | None = None     # its slot while it is on one
    waits: bool = False         # Spark has not launched it yet (a grant, or queued at its node)
    order: int = 0              # among the waiting tasks of its node: a grant's slot, a queue's arrival
    spark: int | None = None    # the Spark task that runs it
    container: object = None    # where that Spark task runs, as the runner names it (node driver)
    ended: bool = False         # its Spark task ended off its slot: it finishes on its next slot


class Ledger:
    """One world's policy jobs and tasks as Spark sees them."""

    def __init__(self) -> None:
        self._jobs: dict[int, LiveJob] = {}
        self._stages: dict[StageKey, list[int]] = {}
        self._tasks: dict[TaskKey, Entry] = {}
        self._spark: dict[int, TaskKey] = {}          # Spark task -> the policy task it runs
        self._foreign: dict[int, Where] = {}          # Spark task placed by Spark -> its slot
        self._kills: list[int] = []
        self._arrivals = itertools.count()

    # -- jobs (stage attempts) ---------------------------------------------------------------------
    def add_job(self, job_id: int, key: StageKey, n: int) -> None:
        self._jobs[job_id] = LiveJob(key, n)
        self._stages.setdefault(key, []).append(job_id)

    def job(self, job_id: int) -> LiveJob:
        return self._jobs[job_id]

    def job_ids(self) -> list[int]:
        return list(self._jobs)

    def stages(self) -> list[StageKey]:
        return list(self._stages)

    def has_stage(self, key: StageKey) -> bool:
        return key in self._stages

    def jobs_of(self, key: StageKey) -> list[int]:
        """The policy jobs of a stage attempt Spark still runs (none once it ended)."""
        return self._stages.get(key, [])

    def end_stage(self, key: StageKey) -> None:
        """Spark no longer runs the stage attempt: no launch binds to its jobs any more."""
        del self._stages[key]

    def forget_job(self, job_id: int) -> None:
        """The state finished (or forgot) the job: it goes, and its stage's list with its last job."""
        key = self._jobs.pop(job_id).key
        ids = self._stages.get(key)
        if ids is not None:
            ids.remove(job_id)
            if not ids:
                del self._stages[key]

    # -- tasks: what the state's effects mean for Spark (recorded by the runner) --------------------
    def grant(self, key: TaskKey, node: int, slot: int) -> None:
        """The state started ``key`` on a slot of executor ``node``: a grant Spark will launch."""
        self._tasks[key] = Entry(node, (node, slot), waits=True, order=slot)

    def queue(self, key: TaskKey, node: int) -> None:
        """``key`` reached ``node``'s queue: it waits there for an executor Spark launches it in."""
        e = self._tasks.setdefault(key, Entry(node))
        e.node, e.waits, e.order = node, True, next(self._arrivals)

    def place(self, key: TaskKey, node: int, slot: int) -> Entry:
        """``key`` is on a slot (a bound task resumed, or any task on the node driver)."""
        e = self._tasks.setdefault(key, Entry(node))
        e.at = (node, slot)
        return e

    def unplace(self, key: TaskKey, node: int | None = None) -> Entry | None:
        """``key`` left its slot, still bound (``node``: the node it left, where it ends)."""
        e = self._tasks.get(key)
        if e is not None:
            e.at = None
            e.node = e.node if node is None else node
        return e

    def drop(self, key: TaskKey) -> None:
        """``key`` is no longer Spark's concern: a grant withdrawn, or a task finished on its slot."""
        e = self._tasks.pop(key)
        if e.spark is not None:
            del self._spark[e.spark]

    def kill(self, key: TaskKey) -> None:
        """``key``'s Spark task is killed this round (Spark runs the task again as new work)."""
        spark = self._tasks[key].spark
        assert spark is not None
        self.drop(key)
        self._kills.append(spark)

    def entry(self, key: TaskKey) -> Entry | None:
        return self._tasks.get(key)

    # -- tasks: Spark's reports (recorded by the planner) --------------------------------------------
    def waiting(self) -> list[tuple[TaskKey, Entry]]:
        """The tasks Spark has not launched, by node, then grant slot or queue arrival."""
        return sorted(((k, e) for k, e in self._tasks.items() if e.waits), key=lambda ke: (ke[1].node, ke[1].order))

    def waiting_at(self, node: int, jobs: list[int]) -> list[TaskKey]:
        """``node``'s waiting tasks of ``jobs``, in :meth:`waiting`'s order."""
        return [k for k, e in self.waiting() if e.node == node and k[0] in jobs]

    def bound(self) -> Iterator[tuple[TaskKey, Entry]]:
        """The tasks Spark runs now."""
        return ((k, self._tasks[k]) for k in self._spark.values())

    def bind(self, key: TaskKey, spark_task: int, container: object = None) -> None:
        """Spark launched ``key`` as ``spark_task`` (in ``container``)."""
        e = self._tasks[key]
        e.waits, e.spark, e.container = False, spark_task, container
        self._spark[spark_task] = key
        self._jobs[key[0]].started += 1

    def knows(self, spark_task: int) -> bool:
        return spark_task in self._spark

    def end(self, spark_task: int) -> tuple[TaskKey, Entry] | None:
        """Spark's task ended: the policy task it ran, no longer in the ledger (None: not one)."""
        key = self._spark.pop(spark_task, None)
        return None if key is None else (key, self._tasks.pop(key))

    def end_later(self, key: TaskKey, node: int) -> None:
        """``key`` ended off its slot; it finishes when the policy next gives it one."""
        self._tasks[key] = Entry(node, ended=True)

    def retire(self, key: TaskKey) -> Entry:
        """Spark no longer needs waiting task ``key``: its job counts it retired."""
        self._jobs[key[0]].retired += 1
        e = self._tasks[key]
        e.waits = False
        return e

    def take_kills(self) -> tuple[int, ...]:
        """The Spark tasks to kill this round."""
        kills, self._kills = tuple(self._kills), []
        return kills

    # -- Spark's own tasks ----------------------------------------------------------------------------
    def hold_foreign(self, spark_task: int, where: Where) -> None:
        self._foreign[spark_task] = where

    def is_foreign(self, spark_task: int) -> bool:
        return spark_task in self._foreign

    def end_foreign(self, spark_task: int) -> Where | None:
        return self._foreign.pop(spark_task, None)
