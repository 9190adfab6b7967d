"""A registered policy (``policies.framework.registry``) driven live by the Spark plugin's offer rounds.

Mapping (the default topology, ``bridge.drivers.topology.ExecutorNodes``): each (application,
executor) is a node of the one cluster state (``bridge.cluster``) with ``cores / spark.task.cpus``
slots; each runnable Spark stage attempt is a policy job whose tasks are its pending tasks, part of
a user job (a job group, or a Spark job: its ``unit``) whose one estimate its stages carry
(``bridge.drivers.user_jobs``: the job property ``schedbridge.estimate``, a learned or filed
estimate of its recurring job, else ``estimate``), and whose successors are the stages after it in
its Spark job (``bridge.drivers.spark.dag``). The state applies the policy's decisions exactly as in
the simulator, with zero network delay and the wall clock as its kernel's clock (timers fire in the
first round at or after their time); a task the state starts becomes a grant
(``bridge.drivers.spark.slots``) in the world's ledger (``bridge.drivers.ledger``), Spark's launch
report binds it there, and on Spark's task end the planner finishes it in the state. A
change in the set of executors, or a snapshot, rebuilds the state and the policy from Spark's;
stages Spark still needs but the policy no longer owes arrive again as new jobs. Spark cannot pause
a task: a suspended task runs on to its end while its slot goes to the policy's next task (see
``bridge.drivers.spark.slots``), or with the parameter ``kill_on_suspend=true`` it is killed (Spark
re-runs it).
"""
from __future__ import annotations

import itertools
import logging
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bridge.cluster.events import OffSlotEnd, SegmentEnd
from bridge.cluster.kernel import Kernel, SimulationError
from bridge.cluster.runner import Pausing
from bridge.cluster.state import ClusterState
from bridge.drivers.spark.dag import successors_of
from bridge.drivers.spark.slots import SparkRunner
from bridge.drivers.spark.ahead import AheadBackoff, AheadLaunches, confirmed, launches_ahead
from bridge.drivers.estimates import Estimates
from bridge.drivers.ledger import Ledger, StageKey, TaskKey
from bridge.drivers.spark.state import AppState, LiveCluster
from bridge.drivers.topology import EXECUTOR_RESOURCES, ExecutorNodes, Nodes, Topology
from bridge.drivers.user_jobs import UserJobs
from bridge.protocol.messages import (Grant, JobStart, Launched, LiveEvent, OfferRound, Placement, StageDemand,
                                      TaskEnd, TaskStart)
from policies.framework import registry
from policies.framework.api import BaseEvent, ClusterSpec, JobArrival, PolicyEnv
from workloads.demands import DEMAND_PROP, TaskDemands
from workloads.model import Job

log = logging.getLogger(__name__)

MAX_STEPS = 200_000  # events per round; more means a policy loops
ONE_SLOT = (1.0,)  # a task's demand of its node's one resource, task slots (executors whose memory is unknown)
ADAPTER_KEYS = ("estimate", "estimates", "learn", "kill_on_suspend", "seed")


@dataclass(frozen=True, slots=True)
class EngineParams:
    """Adapter parameters, taken out of the policy's parameters (``spark.schedbridge.policy.*``)."""

    seed: int = 0
    estimate: float = 1.0          # seconds per task of a user job no other source gives an estimate
    kill_on_suspend: bool = False  # Suspend -> kill the Spark task (re-run later) instead of letting it drain
    estimates: str = ""            # a runtime-estimates file (`schedbridge estimates build`)
    learn: bool = False            # learn recurring jobs' estimates from the application's finished ones

    @classmethod
    def split(cls, params: Mapping[str, str]) -> tuple[EngineParams, dict[str, str]]:
        rest = dict(params)
        kill, learn = (_flag(rest.pop(k, "false"), k) for k in ("kill_on_suspend", "learn"))
        seed, estimate = rest.pop("seed", "0"), rest.pop("estimate", "1.0")
        try:
            mine = cls(int(seed), float(estimate), kill, rest.pop("estimates", "").strip(), learn)
        except ValueError:
            raise ValueError(f"seed must be an integer and estimate a number of seconds, got seed={seed!r}, "
                             f"estimate={estimate!r}") from None
        if not math.isfinite(mine.estimate) or mine.estimate <= 0:
            raise ValueError(f"estimate must be a positive number of seconds, got {estimate!r}")
        return mine, rest

    def user_jobs(self) -> UserJobs:
        """The user jobs' registry these parameters ask for (the estimates file read now: EstimatesError
        names a file that is missing or malformed)."""
        table = Estimates.load(Path(self.estimates)) if self.estimates else None
        return UserJobs(self.estimate, table, self.learn)


def _flag(raw: str, name: str) -> bool:
    if raw.lower() not in ("true", "false"):
        raise ValueError(f"{name} must be true or false, got {raw!r}")
    return raw.lower() == "true"


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


def task_demand(spec: ClusterSpec, d: StageDemand | None, faults: Counter[str]) -> tuple[float, ...]:
    """What one task of stage ``d`` (None: a task Spark placed itself) asks of its executor, in
    ``spec``'s resources: one slot where executors are slots; on executors of (cores, GB), the
    stage's declared demand (the job property ``schedbridge.demand``, by stage kind:
    ``workloads.demands``), else one slot's share of an executor's cores and memory. A malformed
    property is not used, and a demand beyond an executor is cut to it (its task runs alone there,
    as Spark would run it): each counted in ``faults`` and logged."""
    if spec.resources != EXECUTOR_RESOURCES or spec.capacity is None:
        return ONE_SLOT
    share = tuple(c / spec.slots_per_node for c in spec.capacity)
    text = None if d is None else d.props.get(DEMAND_PROP)
    if d is None or text is None:
        return share
    try:
        declared = TaskDemands.from_property(text).of_stage(has_parents=bool(d.parents))
    except ValueError as e:
        faults["malformed"] += 1
        log.warning("schedbridge engine: stage %d: %s; its tasks ask for one slot's share", d.stage, e)
        return share
    if any(x > c for x, c in zip(declared, spec.capacity)):
        faults["cut"] += 1
        log.warning("schedbridge engine: stage %d declares %s (cores, GB), more than an executor's %s: cut to it",
                    d.stage, declared, spec.capacity)
        return tuple(min(x, c) for x, c in zip(declared, spec.capacity))
    return declared


class World:
    """One cluster state with its kernel, its Spark runner, its ledger of Spark's tasks and its
    record of launches ahead."""

    def __init__(self, policy: object, spec: ClusterSpec, runner: SparkRunner, ledger: Ledger, now: float) -> None:
        self.kernel = Kernel()
        self.kernel.advance(now)
        self.runner = runner
        self.ledger = ledger
        self.ahead = AheadLaunches()
        self.state = ClusterState(policy, spec, self.kernel, runner, keep_log=False)
        self.kernel.on(JobArrival, lambda ev: self.state.job_arrived(ev, []))

    def settle(self, now: float, effects: Sequence[BaseEvent] = ()) -> None:
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

    def occupy_foreign(self, node: int, spark_task: int) -> None:
        slot = self.state.occupy(node, spark_task, task_demand(self.state.spec, None, Counter()))
        if slot >= 0:
            self.ledger.hold_foreign(spark_task, (node, slot))


class EnginePlanner:
    """Serves a registered policy's decisions as grants, round by round.

    Its ``topology`` says what the nodes of its worlds are. By default (:class:`ExecutorNodes`)
    each application is a cluster of its own: its executors are the nodes of its own state and
    policy instance, since its tasks can run nowhere else (a daemon serving many applications
    keeps one world each). The node driver (``bridge.drivers.node_engine``) passes NodeManagers,
    shared by every application, whose containers the node agents resize."""

    def __init__(self, name: str, params: Mapping[str, str] | None = None,
                 topology: Topology | None = None) -> None:
        self.name = name
        self.params, self.config = engine_settings(name, params or {})  # unknown names/keys fail here
        self.settings = (self.params, self.config)
        self.topology = topology if topology is not None else \
            ExecutorNodes(Pausing.KILL if self.params.kill_on_suspend else Pausing.SUSPEND)
        self.launch_reports = self.topology.launch_reports
        self._worlds: dict[str | None, World] = {}      # scope (an application, or None: all) ->
        self._world: World | None = None                # the world of the last round
        self._job_ids = itertools.count()
        self.user_jobs = self.params.user_jobs()
        self._warn_truncated_estimates()
        self.demand_faults_seen = Counter[str]()  # declared task demands not used as given (``task_demand``)
        self.backoff = AheadBackoff()  # per application, across its worlds' rebuilds
        self.now = 0.0

    def _warn_truncated_estimates(self) -> None:
        """Say so when measured estimates (a file from history, or ``learn``) reach a policy that
        truncates them to whole seconds: right for the authors' traces, it moves a job measured at
        5.96 s to 5 s, across a cutoff of 5."""
        if getattr(self.config, "integer_estimates", False) and (self.params.estimates or self.params.learn):
            log.warning("schedbridge engine: %s truncates each job's estimate to whole seconds "
                        "(integer_estimates, true by default: the authors' simulator reads its traces so); "
                        "estimates from history are measured means: spark.schedbridge.policy."
                        "integer_estimates=false uses them as measured", self.name)

    @property
    def job_specs(self) -> Mapping[int, Job]:
        """The jobs (stage attempts) the policy still knows."""
        return {} if self._world is None else self._world.state.known_jobs()

    @property
    def world(self) -> World | None:
        """The current cluster state, its kernel and runner (None before the first round)."""
        return self._world

    @property
    def counters(self) -> Mapping[str, int]:
        """The cluster state's counters (launches, suspends, kills, ...) since the last rebuild."""
        return {} if self._world is None else self._world.state.log.counters

    # -- RoundPlanner ----------------------------------------------------------------------------
    def settings_for(self, params: Mapping[str, str]) -> tuple[EngineParams, Any]:
        return engine_settings(self.name, params)

    def estimates_used(self) -> list[dict[str, object]]:
        return self.user_jobs.records()

    def demand_faults(self) -> Mapping[str, int]:
        return dict(self.demand_faults_seen)

    def rebuild(self, state: AppState) -> None:
        self._drop_world(state.app)

    def forget(self, app: str) -> None:
        """``app`` ended: its world (or its part of a shared one) and its user jobs go."""
        self._drop_world(app)
        self.user_jobs.forget(app)
        self.backoff.forget(app)

    def settle(self, scope: str | None, now: float) -> None:
        """Time passed between rounds (a driver that keeps the policy's time, as the node driver
        does): ``scope``'s world, if any, fires the timers due by ``now``."""
        world = self._worlds.get(scope)
        if world is not None:
            self.now = max(self.now, now)
            world.settle(self.now)

    def _drop_world(self, app: str) -> None:
        """``app``'s state is rebuilt: its world (or its part of a shared one) goes."""
        scope = self.topology.scope(app)
        world = self._worlds.pop(scope, None)
        if world is not None:
            world.runner.release()
        self._world = None

    def plan(self, rnd: OfferRound, events: Sequence[LiveEvent], cluster: LiveCluster) -> Placement:
        self.now = max(self.now, self.topology.clock(rnd))
        scope = self.topology.scope(rnd.app)
        ends: list[Any] = []
        guesses = launches_ahead(rnd)
        world = self._worlds.get(scope)
        if world is None or self.topology.stale(world.runner, scope, cluster):
            world = self._reset(scope, cluster, rnd.cpus_per_task)  # holds launches ahead as Spark's own
            guesses = {}
        else:
            world.kernel.advance(self.now)  # before the state hears Spark's events: they happen now
            for app in self.topology.apps(scope, cluster):
                world.runner.register(app.app, app.executors)
            self._bind_launched(world, rnd)
            self.backoff.ended(rnd.app, sum(isinstance(ev, TaskEnd) and not world.ahead.is_withdrawn(ev.task)
                                            for ev in events))
            ends = [x for ev in events for x in self._on_spark_event(world, rnd.app, ev, guesses)]
        for ev in events:
            self.user_jobs.heard(rnd.app, ev)
        self._world = world
        arrivals = self._sync_stages(world, rnd, cluster.app(rnd.app).jobs if rnd.app in cluster else {},
                                     world.ahead.unbound(rnd.app, guesses))
        # one instant, ordered as in the simulator: task ends, then job arrivals, then due timers
        world.settle(self.now, ends + arrivals)
        ended = {ev.task for ev in events if isinstance(ev, TaskEnd) and ev.task in guesses}
        outcomes, withdraw = self._verify(world, rnd.app, guesses, ended)
        pause = self.backoff.verified(rnd.app, outcomes)
        if pause:
            log.info("schedbridge engine: %s: most of its last launches ahead missed; no predictions for its "
                     "next %d task ends", rnd.app, pause)
        grants = world.runner.grants(rnd)
        preempt = world.ledger.take_kills()
        self._forget_done(world)
        own = cluster.app(rnd.app) if rnd.app in cluster else None
        predict = rnd.ahead and self.topology.predicts and not self.backoff.paused(rnd.app)
        hits = sum(outcomes)
        return Placement(grants, preempt, held=self._held_by_rule(world, rnd, grants, own),
                         next=world.ahead.predictions(rnd.app, world.ledger) if predict else (),
                         withdraw=withdraw, hits=hits, misses=len(outcomes) - hits, paused=pause,
                         confirmed=confirmed(guesses, outcomes))

    @staticmethod
    def _held_by_rule(world: World, rnd: OfferRound, grants: Sequence[Grant], app: AppState | None) -> int:
        """Free slots of ``rnd.app``'s executors that the state also has free (or reserved) and the
        policy left ungranted while tasks wait: what its rule holds, as opposed to slots a stale
        view of Spark's holds (the state still thinks them busy). Spark's free slots are the
        round's offers, and for executors it did not offer (a task end offers only its own
        executor) what the application's events leave free."""
        waiting = sum(d.pending for d in rnd.stages) - sum(g.slots for g in grants)
        if waiting <= 0:
            return 0
        granted = Counter[str]()
        for g in grants:
            granted[g.executor] += g.slots
        free = {s.executor: s.free for s in rnd.slots}
        if app is not None:
            busy = Counter(t.executor for t in app.running.values())
            for e, x in app.executors.items():
                free.setdefault(e, max(x.cores // max(rnd.cpus_per_task, 1) - busy[e], 0))
        unused: dict[int, int] = {}
        held = 0
        for executor, spare in sorted(free.items()):
            node = world.runner.node_of_executor(rnd.app, executor)
            if node is None:
                continue
            if node not in unused:  # NodeManagers as nodes: several executors share one node's slots
                unused[node] = world.state.free_or_reserved(node)
            take = min(max(spare - granted[executor], 0), unused[node])
            unused[node] -= take
            held += take
        return min(held, waiting)

    # -- state from Spark --------------------------------------------------------------------------
    def _reset(self, scope: str | None, cluster: LiveCluster, cpus_per_task: int) -> World:
        """A new world over the topology's nodes for ``scope``, holding the tasks Spark runs there."""
        ledger = Ledger()
        nodes = self.topology.nodes(scope, cluster, cpus_per_task, ledger)
        world = self._worlds[scope] = self._new_world(nodes, ledger)
        for app in self.topology.apps(scope, cluster):
            world.runner.register(app.app, app.executors)
            for t in app.running.values():
                at = world.runner.node_of_executor(app.app, t.executor)
                if at is not None:
                    world.occupy_foreign(at, t.task)
        spec = world.state.spec
        log.info("schedbridge engine: %s rebuilt over %d %s x %d slots, nodes: %s", self.name,
                 spec.n_nodes, world.runner.kind, spec.slots_per_node, " ".join(world.runner.names))
        return world

    def _new_world(self, nodes: Nodes, ledger: Ledger) -> World:
        """A world with a new policy instance on ``nodes``; the slots a node does not have are held."""
        policy = registry.create(self.name, PolicyEnv(nodes.spec, self.params.seed), self.config)
        world = World(policy, nodes.spec, nodes.runner, ledger, self.now)
        held = ONE_SLOT if nodes.spec.resources != EXECUTOR_RESOURCES else None  # else its capacity is its own
        for node, have in enumerate(nodes.slots):
            for _ in range(nodes.spec.slots_per_node - have):
                world.state.occupy(node, None, held)
        return world

    def _bind_launched(self, world: World, rnd: OfferRound) -> None:
        """Binds the grants' launches (launches ahead wait for the policy: ``_verify``)."""
        for rep in rnd.launched:
            if rep.ahead:
                continue
            node = world.runner.node_of_executor(rnd.app, rep.executor)
            for spark_task in rep.tasks:
                if node is not None and self._bind(world, rnd.app, node, rep, spark_task) is None:
                    world.runner.spark_placed(rnd.app, rep.executor)
                    world.occupy_foreign(node, spark_task)

    def _bind(self, world: World, app: str, node: int, rep: Launched, spark_task: int) -> TaskKey | None:
        """Binds ``spark_task``, launched on ``rep``'s executor for its stage, to a waiting task of
        that stage there (None: none waits)."""
        key = (app, rep.stage, rep.attempt)
        task = world.runner.bind(node, world.ledger.jobs_of(key), spark_task, app, rep.executor)
        if task is not None and self.topology.predicts:
            world.ahead.bound(app, rep.executor, key)
        return task

    def _verify(self, world: World, app: str, guesses: Mapping[int, Launched],
                ended: set[int]) -> tuple[list[bool], tuple[int, ...]]:
        """Once the policy heard the round's task ends: each launch ahead, in launch order,
        that its decisions confirm (a waiting grant of its stage on its executor) is bound to that
        grant, a hit; the others are withdrawn (their grants, if any, wait). A hit that already
        ``ended`` ends at once, before the next launch is verified: that one may have taken the
        core it freed (a short task's slot refilled twice between two requests). A miss that
        ended needs no withdrawal. Per launch, in launch order, whether it hit; and the launches to
        withdraw."""
        outcomes: list[bool] = []
        withdraw = []
        for spark_task, rep in guesses.items():
            node = world.runner.node_of_executor(app, rep.executor)
            outcomes.append(node is not None and self._bind(world, app, node, rep, spark_task) is not None)
            if outcomes[-1]:
                if spark_task in ended:
                    world.settle(self.now, self._spark_task_ended(world, spark_task) or [])
            elif spark_task not in ended:
                world.ahead.withdraw(spark_task, (app, rep.stage, rep.attempt))
                withdraw.append(spark_task)
        return outcomes, tuple(withdraw)

    def _on_spark_event(self, world: World, app: str, ev: LiveEvent, guesses: Mapping[int, Launched]) -> list[Any]:
        """The state's effects of one of Spark's events (task ends are scheduled, not applied, so
        that every end of a round is in before the policy hears of any). Launches ahead are
        not Spark's own tasks: they are verified after the ends (``_verify``)."""
        if isinstance(ev, TaskStart):
            node = world.runner.node_of_executor(app, ev.executor)
            if node is not None and not world.ledger.knows(ev.task) and not world.ledger.is_foreign(ev.task) \
                    and ev.task not in guesses and not world.ahead.is_withdrawn(ev.task):
                world.runner.spark_placed(app, ev.executor)
                world.occupy_foreign(node, ev.task)
        elif isinstance(ev, TaskEnd):
            if world.ahead.ended(ev.task):
                return []
            effects = self._spark_task_ended(world, ev.task)
            if effects is not None:
                return effects
            if (where := world.ledger.end_foreign(ev.task)) is not None:
                return world.state.vacate(*where)
        return []

    def _spark_task_ended(self, world: World, spark_task: int) -> list[Any] | None:
        """The state's effects of the end of a Spark task that ran a policy task (None: it ran
        none). On its slot it ends by its ``SegmentEnd``, as in the simulator. Off it, on executors
        it was draining (a suspended task that ran on): it ends suspended. On NodeManagers it ran
        shrunk: a policy that hears such ends gets an ``OffSlotEnd``; for any other it finishes
        when the policy next gives it a slot."""
        found = world.ledger.end(spark_task)
        if found is None:
            return None
        key, e = found
        world.runner.spark_ended(e.container)
        state = world.state
        if e.at is not None:
            return [SegmentEnd(self.now, *e.at, state.token(*e.at))]
        if not world.runner.notices_queues:
            return state.finish_suspended(e.node, *key, self.now)
        if not state.hears_queued_ends:
            world.ledger.end_later(key, e.node)
            return []
        return [OffSlotEnd(self.now, e.node, *key, -1)]   # the state finishes it (``end_off_slot``)

    def _sync_stages(self, world: World, rnd: OfferRound, spark_jobs: Mapping[int, JobStart],
                     unbound: Counter[StageKey]) -> list[Any]:
        """New or grown stages arrive as jobs (returned, to schedule); tasks owed beyond Spark's
        pending count (with its ``unbound`` launches ahead: not pending, yet owed) retire,
        and so do grants for stages Spark no longer runs (also ones the policy makes later) nor
        launched ahead this round."""
        live = {(rnd.app, d.stage, d.attempt): d for d in rnd.stages}
        ledger = world.ledger
        for key in [k for k in ledger.stages() if k[0] == rnd.app and k not in live and not unbound[k]]:
            ledger.end_stage(key)  # (a stage's last task, launched ahead and done, still binds)
        self._retire(world, lambda key: key[0] == rnd.app and not ledger.has_stage(key), None)
        arrivals: list[Any] = []
        for key, d in live.items():
            owed = sum(ledger.job(j).owed for j in ledger.jobs_of(key))
            pending = d.pending + unbound[key]
            if pending > owed:
                arrival = self._arrive(world.state.spec, key, d, pending - owed, spark_jobs.get(d.job))
                ledger.add_job(arrival.job.job_id, key, pending - owed)
                arrivals.append(arrival)
            elif pending < owed:
                self._retire(world, key.__eq__, owed - pending)
        return arrivals

    def _arrive(self, spec: ClusterSpec, key: StageKey, d: StageDemand, n: int,
                spark_job: JobStart | None) -> JobArrival:
        """The policy job of ``n`` of stage attempt ``key``'s tasks, arriving now; ``spark_job`` (None if
        its job_start has not arrived yet) gives the stage's successors."""
        job_id = next(self._job_ids)
        user = self.user_jobs.of_stage(key[0], d, job_id)
        est = user.estimate
        demand = task_demand(spec, d, self.demand_faults_seen)
        job = Job(job_id, self.now, (est,) * n, est, demands=(demand,) * n,
                  name=f"{key[0]}:stage{d.stage}.{d.attempt}",
                  meta={"app": key[0], "stage": d.stage, "job": d.job, "key": user.key, **d.props},
                  successors=() if spark_job is None else successors_of(spark_job, d.stage, est), unit=user.unit)
        return JobArrival(self.now, job)

    def _retire(self, world: World, of_stage: Callable[[StageKey], bool], limit: int | None) -> None:
        """Up to ``limit`` unlaunched tasks of stages ``of_stage`` selects, which Spark no longer
        needs: they are finished, as far as the policy knows (a grant's slot now; a task queued at
        its node when the policy gives it a slot)."""
        for key, e in world.ledger.waiting():
            if limit == 0:
                return
            if of_stage(world.ledger.job(key[0]).key):
                limit = None if limit is None else limit - 1
                world.ledger.retire(key)
                effects: list[Any] = []
                if world.runner.notices_queues:
                    world.ledger.end_later(key, e.node)
                else:
                    assert e.at is not None  # a grant holds its slot
                    world.ledger.drop(key)
                    effects = world.state.finish(*e.at, self.now)
                world.settle(self.now, effects)

    def _forget_done(self, world: World) -> None:
        """Drops the world's jobs the state has finished (every task ended or retired) or rejected
        and forgotten, so a daemon serving applications for weeks keeps only live stages."""
        for job_id in world.state.forget_finished(world.ledger.job_ids()):
            world.ledger.forget_job(job_id)
