"""Kairos (thesis Ch. 4): node-level Least Attained Service plus central task-count balancing.

No runtime estimates, no long/short classes, no partitions.

* **Node scheduler** (Algorithm 2). Each node runs its tasks LAS-style on its ``N`` slots: a new
  task is the youngest, so it runs at once, suspending the *oldest* running task when no slot is
  free; a finishing task hands its slot to the youngest idle task; every quantum ``W`` a running
  task is swapped for the youngest idle task if that one is not older (``<=``: equal ages
  alternate every W, approximating processor sharing). Starvation prevention, two readings:
  ``starvation = preempted`` ([X] YARN code, the default): a task preempted more than
  ``starvation_preemptions`` times next runs unpreemptible for ``starvation_quanta x W``, and its
  counter resets; ``starvation = waited`` (the thesis' words, "a task that cannot run for a given
  number of consecutive quanta"): a task idle for ``starvation_preemptions`` quanta in a row runs
  next, unpreemptible for ``starvation_quanta x W``. They differ where short tasks come in quick
  succession: a query's 12-18 stages each preempt the batch task on their node for a fraction of
  a second, which the YARN count turns into a protected run that holds the query's later stages
  for 2 W, while the batch task never went a quantum without running.
* **Central scheduler** (Algorithm 3). A queue of pending tasks, first come first served; each goes to a node with the
  fewest tasks, never above ``N + Q`` tasks per node (admission control). Ties go to the node
  whose tasks have the lowest attained-service variance ("var"), or a random one ("random"), or
  the one with the lowest attained-service sum ("sum").
* **A task that ends off its slot** (``QueuedTaskEnded``: live, an idle task runs in a container
  shrunk to the minimum share and may finish there) leaves its node's count at once, by a heartbeat.
* **Heartbeats** carry ``(task count, variance, sum, tasks received)``. The central scheduler
  adds the tasks it sent that the node had not yet received, so counts are never stale low
  (thesis gap §6.3: counts must be updated locally on assignment).

Our reading where the thesis is silent: heartbeats are sent whenever a node's task set changes
(``heartbeat_interval = 0``) or every ``heartbeat_interval`` seconds; quantum timers are armed
only while a node has idle tasks (a timer that finds no idle task would only restart itself).
A DAG job's task (Spark stages) joins the central queue only once its parents have finished (the
central scheduler hears its tasks finish), as YARN sees a stage's requests only when Spark
submits the stage: a node only ever holds tasks that can run. It joins at its user job's place
(``order = job``), as the prototype's CapacityScheduler serves applications in submission order
whenever their requests come, not at the tail (``order = fifo``), where each of a query's
12-18 stages would wait behind every task queued since the query began (measured on the
interactive/batch mix: docs/sim-to-real.md).

Quantum ends at which nothing can happen are skipped, not simulated: a timer that keeps its task
running is re-armed at the first quantum end where the swap test could pass (the task has aged
past the youngest idle one and its starvation protection has run out), and an arrival, the only
event that can make a node's youngest idle task younger, pulls skipped timers back to their next
quantum end. The swaps are those of a timer firing every W; only the no-op firings are gone.
"""
from __future__ import annotations

from typing import cast

from mypy_extensions import mypyc_attr

from policies.framework.api import (
    ClusterView, Decision, Decisions, Heartbeat, JobArrival, PolicyEnv, ProbeArrival, QueuedTaskEnded, Run,
    SendHeartbeat, SetTimer, SlotFreed, TaskFinished, Timer,
)
from policies.framework.registry import PolicyEntry, Preempts
from policies.kairos.central import Central
from policies.kairos.config import Age, CentralOrder, KairosConfig, KairosHeartbeat, Starvation, TieBreak
from policies.kairos.node import NodeScheduler, QuantumKey


@mypyc_attr(allow_interpreted_subclasses=True)  # others may extend it (tests do)
class Kairos:
    """The Kairos policy: `Central` on the scheduler side, `NodeScheduler` on every node."""

    name = "kairos"

    def __init__(self, config: KairosConfig, env: PolicyEnv) -> None:
        self.config = config
        self.central = Central(config, env)
        self.nodes = NodeScheduler(config, env.cluster.n_nodes)

    # scheduler side
    def on_job_arrival(self, ev: JobArrival, view: ClusterView) -> Decisions:
        self.central.add_job(ev)
        return self.central.dispatch()

    def on_task_finished(self, ev: TaskFinished, view: ClusterView) -> Decisions:
        """Only DAG jobs' tasks report finishing (``ProbeInfo.notify``)."""
        central = self.central
        central.task_finished(ev.job_id, ev.task)
        return central.dispatch() if central.pending else ()

    def on_heartbeat(self, ev: Heartbeat, view: ClusterView) -> Decisions:
        central = self.central
        central.heartbeat(ev.node, ev.payload)
        return central.dispatch() if central.pending else ()

    # node side
    def on_probe_arrival(self, ev: ProbeArrival, view: ClusterView) -> Decisions:
        out = self.nodes.arrive(ev, view)
        return out + self._report(ev.node, view, ev.time, extra_new=self._unplaced(out))

    def on_slot_freed(self, ev: SlotFreed, view: ClusterView) -> Decisions:
        out = self.nodes.slot_freed(ev, view)
        if ev.job_id < 0:
            return out
        return out + self._report(ev.node, view, ev.time, extra_new=self._unplaced(out))

    def on_queued_task_ended(self, ev: QueuedTaskEnded, view: ClusterView) -> Decisions:
        """The node's count drops at once (its heartbeat says so), so the central scheduler may
        send it another task: live, a short task that finished at the minimum share on the node's
        extra executor no longer holds the node at N + Q until its turn on a slot."""
        self.nodes.queued_ended(ev)
        return self._report(ev.node, view, ev.time)

    def on_node_timer(self, ev: Timer, view: ClusterView) -> Decisions:
        assert ev.node is not None, "node timers carry their node"
        if ev.key == "heartbeat":
            return self._periodic_heartbeat(ev.node, view, ev.time)
        return self.nodes.quantum(ev.node, cast(QuantumKey, ev.key), ev.time, view)  # as _arm sets it

    # heartbeats
    @staticmethod
    def _unplaced(out: list[Decision]) -> int:
        """1 if `out` starts a never-run task (`view` lists it nowhere yet), else 0."""
        return 1 if any(isinstance(d, Run) for d in out) else 0

    def _report(self, node: int, view: ClusterView, now: float, extra_new: int = 0) -> list[Decision]:
        if self.config.heartbeat_interval == 0:
            return [SendHeartbeat(node, self.nodes.heartbeat(node, view, now, extra_new))]
        if self.nodes.heartbeat_armed[node]:
            return []
        self.nodes.heartbeat_armed[node] = True
        return [SetTimer(now + self.config.heartbeat_interval, node, "heartbeat")]

    def _periodic_heartbeat(self, node: int, view: ClusterView, now: float) -> Decisions:
        hb = self.nodes.heartbeat(node, view, now)
        self.nodes.heartbeat_armed[node] = hb.n_tasks > 0
        out: list[Decision] = [SendHeartbeat(node, hb)]
        if hb.n_tasks:
            out.append(SetTimer(now + self.config.heartbeat_interval, node, "heartbeat"))
        return out


def _factory(config: KairosConfig, env: PolicyEnv) -> Kairos:
    return Kairos(config, env)


def _extra_tasks(config: KairosConfig) -> int:
    return config.q


ENTRY = PolicyEntry("kairos", KairosConfig, _factory,
                    "Kairos: node-level LAS with quantum W + central fewest-tasks placement capped at N+Q",
                    # live: the prototype's W = 50 s for jobs of 85-1,175 s, scaled to jobs of seconds
                    # (our reading for a 2-core testbed), and Q = 1 extra executor per node
                    preempts=Preempts(_extra_tasks, live={"q": "1", "w": "5"}, admits_within=True))

__all__ = ["Age", "CentralOrder", "ENTRY", "Kairos", "KairosConfig", "KairosHeartbeat", "Starvation", "TieBreak"]
