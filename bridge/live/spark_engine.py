"""A registered policy (``policies.registry``) driven live by the Spark plugin's offer rounds.

Mapping: each (application, executor) is a node of the one cluster state (``bridge.cluster``)
with ``cores / spark.task.cpus`` slots; each runnable Spark stage attempt is a policy job whose
tasks are its pending tasks (estimate: the job property ``schedbridge.estimate`` in seconds, else
``estimate``) and whose successors are the stages after it in its Spark job
(``bridge.live.spark_dag``). The state applies the policy's decisions exactly as in the
simulator, with zero network delay and the wall clock as its kernel's clock (timers fire in the
first round at or after their time); a task the state starts becomes a grant
(``bridge.live.spark_slots``), Spark's launch report binds it, Spark's task end finishes it. A
change in the set of executors, or a snapshot, rebuilds the state and the policy from Spark's;
stages Spark still needs but the policy no longer owes arrive again as new jobs. Spark cannot
pause a task: a suspended task runs on to its end while its slot goes to the policy's next task
(see ``bridge.live.spark_slots``), or with the parameter ``kill_on_suspend=true`` it is killed
(Spark re-runs it).
"""
from __future__ import annotations

import itertools
import logging
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bridge.cluster.kernel import Kernel, SimulationError
from bridge.cluster.state import ClusterState, Pausing
from bridge.live.spark_dag import successors_of
from bridge.live.spark_protocol import (Grant, JobStart, LiveEvent, OfferRound, Placement, StageDemand,
                                        TaskEnd, TaskStart)
from bridge.live.spark_slots import SparkSlots
from bridge.live.spark_state import AppState, LiveCluster
from policies import registry
from policies.api import ClusterSpec, JobArrival, PolicyEnv
from workloads.model import Job

log = logging.getLogger(__name__)

ESTIMATE_PROP = "schedbridge.estimate"
MAX_STEPS = 200_000  # events per round; more means a policy loops
MAX_FOREIGN_PASSES = 100  # retire-and-replace rounds of cross-application reservations per offer round
StageKey = tuple[str, int, int]  # (app, stage, attempt)
# The one resource live: task slots (cores / spark.task.cpus); every task needs one.
SLOT_RESOURCE = ("slots",)
ONE_SLOT = (1.0,)
ADAPTER_KEYS = ("estimate", "kill_on_suspend", "seed")


@dataclass(frozen=True, slots=True)
class EngineParams:
    """Adapter parameters, taken out of the policy's ``spark.schedbridge.*`` parameters."""

    seed: int = 0
    estimate: float = 1.0          # seconds per task when a job sets no schedbridge.estimate
    kill_on_suspend: bool = False  # Suspend -> kill the Spark task (re-run later) instead of letting it drain

    @classmethod
    def split(cls, params: Mapping[str, str]) -> tuple[EngineParams, dict[str, str]]:
        rest = dict(params)
        kill = rest.pop("kill_on_suspend", "false").lower()
        if kill not in ("true", "false"):
            raise ValueError(f"kill_on_suspend must be true or false, got {kill!r}")
        seed, estimate = rest.pop("seed", "0"), rest.pop("estimate", "1.0")
        try:
            mine = cls(int(seed), float(estimate), kill == "true")
        except ValueError:
            raise ValueError(f"seed must be an integer and estimate a number of seconds, got seed={seed!r}, "
                             f"estimate={estimate!r}") from None
        if not math.isfinite(mine.estimate) or mine.estimate <= 0:
            raise ValueError(f"estimate must be a positive number of seconds, got {estimate!r}")
        return mine, rest


def engine_settings(name: str, params: Mapping[str, str]) -> tuple[EngineParams, Any]:
    """The adapter's parameters and policy ``name``'s validated config for ``params``.

    Raises RegistryError (unknown policy) or ConfigError (unknown key, bad value), naming what
    is valid; the adapter's own keys are named beside the policy's."""
    mine, rest = EngineParams.split(params)
    try:
        return mine, registry.config_for(name, rest)
    except registry.ConfigError as e:
        if "unknown parameter" not in str(e):
            raise
        raise registry.ConfigError(f"{e}; the live adapter's: {', '.join(ADAPTER_KEYS)}") from None


@dataclass(slots=True)
class _LiveJob:
    key: StageKey
    n: int
    started: int = 0
    retired: int = 0

    @property
    def owed(self) -> int:
        return self.n - self.started - self.retired


class _World:
    """One cluster state over a fixed set of executors, with its kernel and its Spark runner."""

    def __init__(self, policy: object, spec: ClusterSpec, slots: SparkSlots, pausing: Pausing) -> None:
        self.kernel = Kernel()
        self.slots = slots
        self.state = ClusterState(policy, spec, self.kernel, slots, pausing=pausing, keep_log=False)
        self.kernel.on(JobArrival, lambda ev: self.state.job_arrived(ev, []))

    def settle(self, now: float, effects: Sequence[object] = ()) -> None:
        """Schedule ``effects`` and dispatch everything due by ``now`` (a policy's cascade of
        decisions, and its timers that came due)."""
        k = self.kernel
        k.advance(now)
        k.schedule_all(effects)
        start = k.events

        def guard(events: int, _: float) -> None:
            if events - start > MAX_STEPS:
                raise SimulationError(f"more than {MAX_STEPS} events in one round: the policy loops")

        k.run(until=now, tick=guard, tick_every=MAX_STEPS)


class EnginePlanner:
    """Serves a registered policy's decisions as grants, round by round."""

    def __init__(self, name: str, params: Mapping[str, str] | None = None) -> None:
        self.name = name
        self.params, self._config = engine_settings(name, params or {})  # unknown names/keys fail here
        self.settings = (self.params, self._config)
        self._world: _World | None = None
        self._node_keys: tuple[tuple[str, str], ...] = ()
        self._jobs: dict[int, _LiveJob] = {}
        self._by_stage: dict[StageKey, list[int]] = {}
        self._job_ids = itertools.count()
        self._t0_ms: int | None = None
        self.now = 0.0

    @property
    def job_specs(self) -> Mapping[int, Job]:
        """The jobs (stage attempts) the policy still knows."""
        return {} if self._world is None else self._world.state.job_by_id

    @property
    def counters(self) -> Mapping[str, int]:
        """The cluster state's counters (launches, suspends_ignored, kills, ...) since the last rebuild."""
        return {} if self._world is None else self._world.state.log.counters

    # -- RoundPlanner ----------------------------------------------------------------------------
    def settings_for(self, params: Mapping[str, str]) -> tuple[EngineParams, Any]:
        return engine_settings(self.name, params)

    def rebuild(self, state: AppState) -> None:
        self._world = None

    def plan(self, rnd: OfferRound, events: Sequence[LiveEvent], cluster: LiveCluster) -> Placement:
        if self._t0_ms is None:
            self._t0_ms = rnd.now_ms
        self.now = max(self.now, (rnd.now_ms - self._t0_ms) / 1000.0)
        keys = tuple((app.app, e) for app in cluster for e in app.executors)
        if self._world is None or keys != self._node_keys:
            world = self._reset(keys, cluster, rnd.cpus_per_task)
        else:
            world = self._world
            world.kernel.advance(self.now)  # before the state hears Spark's events: they happen now
            self._bind_launched(world, rnd)
            for ev in events:
                self._on_spark_event(world, rnd.app, ev)
        world.settle(self.now)
        self._sync_stages(world, rnd, cluster.app(rnd.app).jobs if rnd.app in cluster else {})
        self._retire_foreign(world)
        preempt, world.slots.kills = tuple(world.slots.kills), []
        grants = self._grants(world, rnd.app)
        self._forget_done(world)
        return Placement(grants, preempt)

    # -- state from Spark --------------------------------------------------------------------------
    def _reset(self, keys: tuple[tuple[str, str], ...], cluster: LiveCluster, cpus_per_task: int) -> _World:
        cores = {(a.app, e): x.cores for a in cluster for e, x in a.executors.items()}
        per_node = [max(cores[key] // cpus_per_task, 0) for key in keys]
        slots = max(per_node + [1])
        self._node_keys = keys
        self._jobs.clear()
        self._by_stage.clear()
        spec = ClusterSpec(n_nodes=max(len(keys), 1), slots_per_node=slots, resources=SLOT_RESOURCE,
                           capacity=(float(slots),), network_delay=0.0)
        policy = registry.create(self.name, PolicyEnv(spec, self.params.seed), self._config)
        runner = SparkSlots([f"{app}/{e}" for app, e in keys])
        runner.kill = self.params.kill_on_suspend
        world = self._world = _World(policy, spec, runner, Pausing.KILL if runner.kill else Pausing.SUSPEND)
        world.kernel.advance(self.now)
        for node, have in enumerate(per_node):
            for _ in range(slots - have):
                world.state.occupy(node, None, ONE_SLOT)  # slots this executor does not have
        for app in cluster:
            for t in app.running.values():
                node = world.slots.node_of.get(f"{app.app}/{t.executor}")
                if node is not None:
                    self._occupy_foreign(world, node, t.task)
        log.info("schedbridge engine: %s rebuilt over %d executors x %d slots, nodes: %s", self.name,
                 len(keys), slots, " ".join(world.slots.executors))
        return world

    def _occupy_foreign(self, world: _World, node: int, spark_task: int) -> None:
        slot = world.state.occupy(node, spark_task, ONE_SLOT)
        if slot >= 0:
            world.slots.foreign[spark_task] = (node, slot)

    def _bind_launched(self, world: _World, rnd: OfferRound) -> None:
        for rep in rnd.launched:
            node = world.slots.node_of.get(f"{rnd.app}/{rep.executor}")
            jobs = self._by_stage.get((rnd.app, rep.stage, rep.attempt), [])
            for spark_task in rep.tasks:
                job = None if node is None else world.slots.bind(node, jobs, spark_task)
                if job is not None:
                    self._jobs[job].started += 1
                elif node is not None:
                    self._occupy_foreign(world, node, spark_task)

    def _on_spark_event(self, world: _World, app: str, ev: LiveEvent) -> None:
        slots = world.slots
        if isinstance(ev, TaskStart) and ev.task not in slots.bound and ev.task not in slots.foreign:
            node = slots.node_of.get(f"{app}/{ev.executor}")
            if node is not None:
                self._occupy_foreign(world, node, ev.task)
        elif isinstance(ev, TaskEnd):
            if (where := slots.bound.pop(ev.task, None)) is not None:
                world.settle(self.now, world.state.finish(*where, self.now))
            elif (where := slots.foreign.pop(ev.task, None)) is not None:
                world.settle(self.now, world.state.vacate(*where))
            elif (key := slots.drained(ev.task)) is not None:
                node = slots.node_of[f"{app}/{ev.executor}"]
                world.settle(self.now, world.state.finish_suspended(node, *key, self.now))

    def _sync_stages(self, world: _World, rnd: OfferRound, spark_jobs: Mapping[int, JobStart]) -> None:
        """New or grown stages arrive as jobs; tasks owed beyond Spark's pending count retire, and
        so do grants for stages Spark no longer runs (also ones the policy makes later)."""
        live = {(rnd.app, d.stage, d.attempt): d for d in rnd.stages}
        for key in [k for k in self._by_stage if k[0] == rnd.app and k not in live]:
            del self._by_stage[key]
        self._retire(world, lambda key: key[0] == rnd.app and key not in self._by_stage, None)
        for key, d in live.items():
            owed = sum(self._jobs[j].owed for j in self._by_stage.get(key, []))
            if d.pending > owed:
                self._arrive(world, key, d, d.pending - owed, spark_jobs.get(d.job))
            elif d.pending < owed:
                self._retire(world, key.__eq__, owed - d.pending)

    def _arrive(self, world: _World, key: StageKey, d: StageDemand, n: int, spark_job: JobStart | None) -> None:
        """``spark_job`` (None if its job_start has not arrived yet) gives the stage's successors."""
        job_id = next(self._job_ids)
        est = float(d.props.get(ESTIMATE_PROP, self.params.estimate))
        job = Job(job_id, self.now, (est,) * n, est, demands=(ONE_SLOT,) * n,
                  name=f"{key[0]}:stage{d.stage}.{d.attempt}",
                  meta={"app": key[0], "stage": d.stage, "job": d.job, **d.props},
                  successors=() if spark_job is None else successors_of(spark_job, d.stage, est))
        self._jobs[job_id] = _LiveJob(key, n)
        self._by_stage.setdefault(key, []).append(job_id)
        world.settle(self.now, [JobArrival(self.now, job)])

    def _retire(self, world: _World, of_stage: Callable[[StageKey], bool], limit: int | None) -> None:
        """Up to ``limit`` granted-but-unlaunched tasks of stages ``of_stage`` selects, which Spark
        no longer needs: finished, as far as the policy knows."""
        for where, job in sorted(world.slots.granted.items()):
            if limit == 0:
                return
            if of_stage(self._jobs[job].key):
                limit = None if limit is None else limit - 1
                self._retire_grant(world, where)

    def _retire_grant(self, world: _World, where: tuple[int, int]) -> None:
        job = world.slots.granted.pop(where)
        self._jobs[job].retired += 1
        world.settle(self.now, world.state.finish(*where, self.now))

    def _retire_foreign(self, world: _World) -> None:
        """Grants are scoped to the application whose executor they name: one for another
        application's stage can never launch (an executor runs only its own application's tasks),
        so it is retired (the policy hears the task finished and the slot freed, and the stage's
        tasks arrive anew next round). Repeated while the freed slots draw new such grants."""
        for _ in range(MAX_FOREIGN_PASSES):
            foreign = [w for w, job in sorted(world.slots.granted.items())
                       if world.slots.app_of(w[0]) != self._jobs[job].key[0]]
            if not foreign:
                return
            for where in foreign:
                self._retire_grant(world, where)

    def _forget_done(self, world: _World) -> None:
        """Drops jobs the state has finished (every task ended or retired) or rejected, so a
        daemon serving applications for weeks keeps only live stages."""
        state = world.state
        for job_id in [j for j in self._jobs if j not in state.launched]:
            key = self._jobs.pop(job_id).key
            for table in (state.job_by_id, state.remaining, state.log.job_finish, state.log.rejected_jobs):
                table.pop(job_id, None)
            ids = self._by_stage.get(key)
            if ids is not None:
                ids.remove(job_id)
                if not ids:
                    del self._by_stage[key]

    def _grants(self, world: _World, app: str) -> tuple[Grant, ...]:
        """``app``'s grants on ``app``'s own executors (executor ids repeat across applications)."""
        count: Counter[tuple[int, int, str]] = Counter()
        for (node, _), job in world.slots.granted.items():
            key = self._jobs[job].key
            if key[0] == app and world.slots.app_of(node) == app:
                count[(key[1], key[2], world.slots.executor_of(node))] += 1
        return tuple(Grant(st, at, ex, n) for (st, at, ex), n in sorted(count.items()))
