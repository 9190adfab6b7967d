"""Kairos on a real YARN cluster through the Spark plugin: central placement in the offer rounds,
node-side LAS on real containers through the node agents.

A *node* here is a NodeManager (not an executor, as in the generic engine adapter): it has N cores
and, once its vcores are raised by Q, up to N+Q one-core executors. Every task Spark starts on an
executor arrives at the executor's node in `policies.kairos` (Algorithm 2): it runs at full share, or
the oldest running task's container is shrunk to the minimum share, and quantum timers on the wall
clock swap tasks by attained service. Placement (Algorithm 3) grants each pending task a free
executor on the node the Kairos central scheduler ranks first (fewest tasks, then the lowest
attained-service variance from the nodes' heartbeats). Executors must report their YARN container
and NodeManager (`executor_added` fields ``container`` and ``nm``); a round naming an executor this
planner cannot place raises, and the plugin falls back to Spark's own scheduling for that round.
"""
from __future__ import annotations

import itertools
from functools import partial
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bridge.live.node_capacity import NodeResources, RaisedVcores
from bridge.live.node_driver import LiveNodeDriver
from bridge.live.node_table import NodeTable
from bridge.live.preemption import ContainerPreemptor, ContainerRef
from bridge.live.spark_protocol import Grant, LiveEvent, OfferRound, Placement
from bridge.live.spark_state import AppState, LiveCluster
from policies.api import ClusterSpec, PolicyEnv
from policies.kairos import Kairos, KairosConfig
from policies.registry import config_for

StageKey = tuple[str, int, int]  # (app, stage, attempt)


class KairosLivePlanner:
    """The plugin's `RoundPlanner` for Kairos with container-resize preemption."""

    name = "kairos"

    def __init__(self, config: KairosConfig, nodes: Sequence[str], cores: int, preemptor: ContainerPreemptor,
                 clock: Callable[[], float]) -> None:
        """``nodes``: the NodeManagers' web addresses as YARN reports them (``host:port``)."""
        self.settings = config
        self.policy = Kairos(config, PolicyEnv(ClusterSpec(len(nodes), cores)))
        self.driver = LiveNodeDriver(self.policy, NodeTable(len(nodes), cores), preemptor, clock)
        self.node_of = {address: i for i, address in enumerate(nodes)}
        self.executors: dict[tuple[str, str], tuple[int, ContainerRef]] = {}
        self.job_ids: dict[StageKey, int] = {}
        self.claimed: dict[str, set[tuple[int, int]]] = {}   # app -> (job, task) the central side counted
        self._next_job = itertools.count()

    def settings_for(self, params: Mapping[str, str]) -> KairosConfig:
        return config_for(self.name, params)

    def rebuild(self, state: AppState) -> None:
        """Nothing derived is dropped: the snapshot's executors and tasks are re-read in `plan`."""

    def plan(self, rnd: OfferRound, events: Sequence[LiveEvent], cluster: LiveCluster) -> Placement:
        raw = rnd.events
        if rnd.snapshot is not None:
            raw = (*rnd.snapshot.get("executors", ()), *rnd.snapshot.get("running", ()))
            self._forget_ended(rnd.app, rnd.snapshot.get("running", ()))
        for ev in raw:
            self._observe(rnd.app, ev)
        return Placement(self._grants(rnd))

    def _forget_ended(self, app: str, running: Sequence[Mapping[str, Any]]) -> None:
        """A snapshot replaces the events since the last good round: tasks it no longer lists as
        running ended meanwhile, and their task_end was never seen."""
        alive = {(self.job_ids.get((app, int(ev["stage"]), int(ev["attempt"]))), int(ev["task"])) for ev in running}
        for job, task in sorted(self.claimed.get(app, set()) - alive):
            self._task_ended(app, job, task)

    def _task_ended(self, app: str, job: int, task: int) -> None:
        self.claimed.get(app, set()).discard((job, task))
        self.driver.post(partial(self.driver.task_finished, job, task))

    # -- Spark's events -> the node side ------------------------------------------------------------
    def _observe(self, app: str, ev: Mapping[str, Any]) -> None:
        kind = ev.get("e")
        if kind == "executor_added":
            self._register(app, ev)
        elif kind == "executor_removed":
            self.executors.pop((app, str(ev["executor"])), None)
        elif kind == "task_start":
            self._task_started(app, ev)
        elif kind == "task_end":
            job = self.job_ids.get((app, int(ev["stage"]), int(ev["attempt"])))
            if job is not None:
                self._task_ended(app, job, int(ev["task"]))

    def _register(self, app: str, ev: Mapping[str, Any]) -> None:
        executor, container, nm = str(ev["executor"]), str(ev.get("container", "")), str(ev.get("nm", ""))
        if nm not in self.node_of or not container:
            raise ValueError(f"executor {executor} of {app}: no YARN container on a known NodeManager "
                             f"(container {container!r}, nm {nm!r}; known {sorted(self.node_of)})")
        self.executors[(app, executor)] = (self.node_of[nm], ContainerRef(nm, container))

    def _task_started(self, app: str, ev: Mapping[str, Any]) -> None:
        where = self.executors.get((app, str(ev["executor"])))
        if where is None:
            return
        key = (app, int(ev["stage"]), int(ev["attempt"]))
        job = self.job_ids.setdefault(key, next(self._next_job))
        task = int(ev["task"])
        claimed = self.claimed.setdefault(app, set())
        if (job, task) in claimed:
            return  # known already (a snapshot repeats running tasks)
        claimed.add((job, task))
        with self.driver.lock:
            self.policy.central.claim(where[0])
        self.driver.post(partial(self.driver.task_started, where[0], job, task, where[1]))

    # -- placement -------------------------------------------------------------------------------
    def _grants(self, rnd: OfferRound) -> tuple[Grant, ...]:
        free: dict[int, list[str]] = {}
        for slot in rnd.slots:
            where = self.executors.get((rnd.app, slot.executor))
            if where is None:
                raise ValueError(f"round {rnd.round} offers executor {slot.executor}, which never registered")
            free.setdefault(where[0], []).extend([slot.executor] * (slot.free // max(rnd.cpus_per_task, 1)))
        placed: Counter[int] = Counter()
        grants: Counter[tuple[int, int, str]] = Counter()
        with self.driver.lock:
            for stage in rnd.stages:
                for _ in range(stage.pending):
                    ranked = self.policy.central.rank([n for n, ex in free.items() if ex], placed)
                    if not ranked:
                        return _merge(grants)
                    placed[ranked[0]] += 1
                    grants[(stage.stage, stage.attempt, free[ranked[0]].pop(0))] += 1
        return _merge(grants)


def _merge(grants: Counter[tuple[int, int, str]]) -> tuple[Grant, ...]:
    return tuple(Grant(stage, attempt, executor, n) for (stage, attempt, executor), n in sorted(grants.items()))


@contextmanager
def kairos_live(rm: NodeResources, preemptor: ContainerPreemptor, nodes: Sequence[str], cores: int,
                config: KairosConfig, vcores_record: Path, tick_s: float = 0.1) -> Iterator[KairosLivePlanner]:
    """Kairos live for the span of the block: nodes advertise ``cores + q`` vcores, the node driver
    runs on its own thread, and on exit every throttled container and every node is restored.

    ``nodes`` are the NodeManagers' web addresses as the RM reports them; ``preemptor.agents`` maps
    each to its node agent (it may be filled in later, before the first task starts)."""
    start = time.monotonic()
    planner = KairosLivePlanner(config, nodes, cores, preemptor, lambda: time.monotonic() - start)
    stop = threading.Event()
    thread = threading.Thread(target=planner.driver.run, args=(stop, tick_s), name="kairos-node-driver",
                              daemon=True)
    with RaisedVcores(rm, config.q, vcores_record):
        thread.start()
        try:
            yield planner
        finally:
            stop.set()
            planner.driver.post(lambda: None)  # wake it
            thread.join(timeout=10)
            planner.driver.restore()
