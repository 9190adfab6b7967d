"""A registered policy (``policies.registry``) driven live by the Spark plugin's offer rounds.

Mapping: each (application, executor) is a node with ``cores / spark.task.cpus`` slots; each
runnable Spark stage attempt is a policy job whose tasks are its pending tasks (estimate: the
job property ``schedbridge.estimate`` in seconds, else ``estimate``) and whose successors are the
stages after it in its Spark job (``bridge.live.spark_dag``). Events a round brings (task
ends, Spark's launch report) become ``TaskFinished``/``SlotFreed``; the policy's decisions are
applied at once (zero network delay) on :class:`LiveNodes`, and every slot reserved for a task
becomes a grant. A change in the set of executors, or a snapshot, rebuilds the policy from
Spark's state; stages Spark still needs but the policy no longer owes arrive again as new jobs.
Spark cannot pause a task: ``Suspend`` is ignored (the task keeps its slot), or with the parameter
``kill_on_suspend=true`` becomes a preemption (Spark re-runs the task); ``Resume`` is ignored.
"""
from __future__ import annotations

import heapq
import itertools
import logging
import math
from collections import Counter, deque
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bridge.live.spark_dag import successors_of
from bridge.live.spark_nodes import FOREIGN, LiveNodes, SlotState
from bridge.live.spark_protocol import (Grant, JobStart, LiveEvent, OfferRound, Placement, StageDemand,
                                        TaskEnd, TaskStart)
from bridge.live.spark_state import AppState, LiveCluster
from policies import registry
from policies.api import (Assign, Cancel, ClusterSpec, Drop, Give, Heartbeat, JobArrival, Launch, PolicyEnv,
                          Probe, ProbeArrival, ProbeInfo, ProbeRejected, Reject, Resume, Run, RunningTask,
                          SendHeartbeat, SetTimer, SlotFreed, Steal, StealRequest, Suspend, TaskFinished,
                          TaskRequest, Timer)
from workloads.model import Job

log = logging.getLogger(__name__)

ESTIMATE_PROP = "schedbridge.estimate"
MAX_STEPS = 200_000  # hook calls per round; more means a policy loops
MAX_FOREIGN_PASSES = 100  # retire-and-replace rounds of cross-application reservations per offer round
StageKey = tuple[str, int, int]  # (app, stage, attempt)
# The one resource live: task slots (cores / spark.task.cpus); every task needs one.
SLOT_RESOURCE = ("slots",)
ADAPTER_KEYS = ("estimate", "kill_on_suspend", "seed")


@dataclass(frozen=True, slots=True)
class EngineParams:
    """Adapter parameters, taken out of the policy's ``spark.schedbridge.*`` parameters."""

    seed: int = 0
    estimate: float = 1.0          # seconds per task when a job sets no schedbridge.estimate
    kill_on_suspend: bool = False  # Suspend -> kill the Spark task (re-run later) instead of ignoring

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


class _View:
    """The read-only ClusterView policies get, over :class:`LiveNodes`."""

    def __init__(self, planner: EnginePlanner, spec: ClusterSpec) -> None:
        self._p = planner
        self.spec = spec

    @property
    def now(self) -> float:
        return self._p.now

    def job(self, job_id: int) -> Job:
        return self._p.job_specs[job_id]

    def free_slot(self, node: int) -> int:
        return self._p.nodes.free_slot(node)

    def free_slots(self, node: int) -> int:
        return self._p.nodes.free_count(node)

    def running(self, node: int) -> tuple[RunningTask, ...]:
        return self._p.nodes.running(node)

    def suspended(self, node: int) -> tuple[RunningTask, ...]:
        return ()

    def queued(self, node: int) -> int:
        return len(self._p.nodes.queues[node])

    def free_capacity(self, node: int) -> tuple[float, ...] | None:
        return (float(self._p.nodes.free_count(node)),)

    def attained(self, node: int, job_id: int, task: int) -> float:
        return next((self.now - r.started for r in self.running(node) if (r.job_id, r.task) == (job_id, task)), 0.0)

    def is_ready(self, job_id: int, task: int) -> bool:
        return True


class EnginePlanner:
    """Serves a registered policy's decisions as grants, round by round."""

    def __init__(self, name: str, params: Mapping[str, str] | None = None) -> None:
        self.name = name
        self.params, self._config = engine_settings(name, params or {})  # unknown names/keys fail here
        self.settings = (self.params, self._config)
        self._policy: Any = None
        self._node_keys: tuple[tuple[str, str], ...] = ()
        self.nodes = LiveNodes([], 1)
        self.job_specs: dict[int, Job] = {}
        self._jobs: dict[int, _LiveJob] = {}
        self._by_stage: dict[StageKey, list[int]] = {}
        self._timers: list[tuple[float, int, int | None, Hashable]] = []
        self._seq = itertools.count()
        self._job_ids = itertools.count()
        self._preempt: list[int] = []
        self._t0_ms: int | None = None
        self._warned: set[str] = set()
        self.now = 0.0

    # -- RoundPlanner ----------------------------------------------------------------------------
    def settings_for(self, params: Mapping[str, str]) -> tuple[EngineParams, Any]:
        return engine_settings(self.name, params)

    def rebuild(self, state: AppState) -> None:
        self._policy = None

    def plan(self, rnd: OfferRound, events: Sequence[LiveEvent], cluster: LiveCluster) -> Placement:
        if self._t0_ms is None:
            self._t0_ms = rnd.now_ms
        self.now = (rnd.now_ms - self._t0_ms) / 1000.0
        keys = tuple((app.app, e) for app in cluster for e in app.executors)
        if self._policy is None or keys != self._node_keys:
            self._reset(keys, cluster, rnd.cpus_per_task)
        else:
            self._bind_launched(rnd)
            for ev in events:
                self._on_spark_event(rnd.app, ev)
        self._sync_stages(rnd, cluster.app(rnd.app).jobs if rnd.app in cluster else {})
        self._fire_timers()
        self._retire_foreign()
        preempt, self._preempt = tuple(self._preempt), []
        grants = self._grants(rnd.app)
        self._forget_done()
        return Placement(grants, preempt)

    # -- state from Spark --------------------------------------------------------------------------
    def _reset(self, keys: tuple[tuple[str, str], ...], cluster: LiveCluster, cpus_per_task: int) -> None:
        cores = {(a.app, e): x.cores for a in cluster for e, x in a.executors.items()}
        slots = max([c // cpus_per_task for c in cores.values()] + [1])
        self._node_keys = keys
        self.nodes = LiveNodes([f"{app}/{e}" for app, e in keys], slots)
        for n, key in enumerate(keys):
            for s in self.nodes.slots[n][max(cores[key] // cpus_per_task, 0):]:
                s.job_id = FOREIGN  # slots this executor does not have
        for app in cluster:
            for t in app.running.values():
                node = self.nodes.node_of.get(f"{app.app}/{t.executor}")
                if node is not None:
                    self.nodes.occupy_foreign(node, t.task, self.now)
        self.job_specs.clear()
        self._jobs.clear()
        self._by_stage.clear()
        self._timers.clear()
        spec = ClusterSpec(n_nodes=max(len(keys), 1), slots_per_node=slots, resources=SLOT_RESOURCE,
                           capacity=(float(slots),), network_delay=0.0)
        self._policy = registry.create(self.name, PolicyEnv(spec, self.params.seed), self._config)
        self._view = _View(self, spec)
        log.info("schedbridge engine: %s rebuilt over %d executors x %d slots, nodes: %s", self.name,
                 len(keys), slots, " ".join(self.nodes.executors))

    def _bind_launched(self, rnd: OfferRound) -> None:
        for rep in rnd.launched:
            node = self.nodes.node_of.get(f"{rnd.app}/{rep.executor}")
            jobs = self._by_stage.get((rnd.app, rep.stage, rep.attempt), [])
            for spark_task in rep.tasks:
                job = next((j for j in jobs if self._bound_to(node, j, spark_task)), None)
                if job is None and node is not None:
                    self.nodes.occupy_foreign(node, spark_task, self.now)
                elif job is not None:
                    self._jobs[job].started += 1

    def _bound_to(self, node: int | None, job: int, spark_task: int) -> bool:
        return node is not None and self.nodes.bind(node, job, spark_task, self.now)

    def _on_spark_event(self, app: str, ev: LiveEvent) -> None:
        if isinstance(ev, TaskStart) and ev.task not in self.nodes.by_spark_task:
            node = self.nodes.node_of.get(f"{app}/{ev.executor}")
            if node is not None:
                self.nodes.occupy_foreign(node, ev.task, self.now)
        elif isinstance(ev, TaskEnd):
            freed = self.nodes.release(ev.task)
            if freed is not None:
                self._slot_done(*freed)

    def _slot_done(self, node: int, slot: int, was: SlotState) -> None:
        """A task left ``slot``: the scheduler hears it finished, the node that the slot is free."""
        if was.job_id >= 0:
            self._deliver("on_task_finished", TaskFinished(self.now, node, slot, was.job_id, was.task, self.now))
            self._deliver("on_slot_freed", SlotFreed(self.now, node, slot, was.job_id, was.task))
        else:
            self._deliver("on_slot_freed", SlotFreed(self.now, node, slot))

    def _sync_stages(self, rnd: OfferRound, spark_jobs: Mapping[int, JobStart]) -> None:
        """New or grown stages arrive as jobs; tasks owed beyond Spark's pending count retire, and
        so do reservations for stages Spark no longer runs (also ones the policy makes later)."""
        live = {(rnd.app, d.stage, d.attempt): d for d in rnd.stages}
        for key in [k for k in self._by_stage if k[0] == rnd.app and k not in live]:
            del self._by_stage[key]
        self._retire(lambda key: key[0] == rnd.app and key not in self._by_stage, None)
        for key, d in live.items():
            owed = sum(self._jobs[j].owed for j in self._by_stage.get(key, []))
            if d.pending > owed:
                self._arrive(key, d, d.pending - owed, spark_jobs.get(d.job))
            elif d.pending < owed:
                self._retire(key.__eq__, owed - d.pending)

    def _arrive(self, key: StageKey, d: StageDemand, n: int, spark_job: JobStart | None) -> None:
        """``spark_job`` (None if its job_start has not arrived yet) gives the stage's successors."""
        job_id = next(self._job_ids)
        est = float(d.props.get(ESTIMATE_PROP, self.params.estimate))
        job = Job(job_id, self.now, (est,) * n, est, demands=((1.0,),) * n,
                  name=f"{key[0]}:stage{d.stage}.{d.attempt}",
                  meta={"app": key[0], "stage": d.stage, "job": d.job, **d.props},
                  successors=() if spark_job is None else successors_of(spark_job, d.stage, est))
        self.job_specs[job_id] = job
        self._jobs[job_id] = _LiveJob(key, n)
        self._by_stage.setdefault(key, []).append(job_id)
        self._deliver("on_job_arrival", JobArrival(self.now, job))

    def _retire(self, of_stage: Callable[[StageKey], bool], limit: int | None) -> None:
        """Up to ``limit`` reserved-but-unlaunched slots of stages ``of_stage`` selects, which Spark
        no longer needs: finished, as far as the policy knows."""
        for node, slot, s in list(self.nodes.unstarted()):
            if limit == 0:
                return
            if of_stage(self._jobs[s.job_id].key):
                limit = None if limit is None else limit - 1
                self._retire_slot(node, slot, s)

    def _retire_slot(self, node: int, slot: int, s: SlotState) -> None:
        was = SlotState(s.job_id, s.task, s.probe, None, s.started, True)
        s.clear()
        self._jobs[was.job_id].retired += 1
        self._slot_done(node, slot, was)

    def _retire_foreign(self) -> None:
        """Reservations are scoped to the application whose executor they name: one for another
        application's stage can never launch (an executor runs only its own application's tasks),
        so it is retired (the policy hears the task finished and the slot freed, and the stage's
        tasks arrive anew next round). Repeated while the freed slots draw new such reservations."""
        for _ in range(MAX_FOREIGN_PASSES):
            foreign = [(node, slot, s) for node, slot, s in self.nodes.unstarted()
                       if self._app_of(node) != self._jobs[s.job_id].key[0]]
            if not foreign:
                return
            for node, slot, s in foreign:
                self._retire_slot(node, slot, s)

    def _app_of(self, node: int) -> str:
        return self.nodes.executors[node].split("/", 1)[0]

    def _forget_done(self) -> None:
        """Drops jobs the policy can no longer hear of (nothing owed; no slot or node queue holds
        them), so a daemon serving applications for weeks keeps only live stages."""
        done = [j for j, live in self._jobs.items() if live.owed == 0]
        if not done:  # the usual round: spare the scan of every slot and queue
            return
        held = {s.job_id for row in self.nodes.slots for s in row}
        held.update(p.job_id for q in self.nodes.queues for p in q)
        for job_id in [j for j in done if j not in held]:
            key = self._jobs.pop(job_id).key
            del self.job_specs[job_id]
            ids = self._by_stage.get(key)
            if ids is not None:
                ids.remove(job_id)
                if not ids:
                    del self._by_stage[key]

    def _fire_timers(self) -> None:
        while self._timers and self._timers[0][0] <= self.now:
            _, _, node, key = heapq.heappop(self._timers)
            hook = "on_timer" if node is None else "on_node_timer"
            self._deliver(hook, Timer(self.now, node, key))

    def _grants(self, app: str) -> tuple[Grant, ...]:
        """``app``'s reservations on ``app``'s own executors (executor ids repeat across applications)."""
        count: Counter[tuple[int, int, str]] = Counter()
        for node, _, s in self.nodes.unstarted():
            key = self._jobs[s.job_id].key
            owner, executor = self.nodes.executors[node].split("/", 1)
            if key[0] == app and owner == app:
                count[(key[1], key[2], executor)] += 1
        return tuple(Grant(st, at, ex, n) for (st, at, ex), n in sorted(count.items()))

    # -- the policy's decisions, applied at once ------------------------------------------------------
    def _deliver(self, hook: str, ev: Any) -> None:
        work: deque[tuple[str, Any]] = deque([(hook, ev)])
        steps = 0
        while work:
            hook, ev = work.popleft()
            fn = getattr(self._policy, hook, None)
            if fn is None:
                continue
            steps += 1
            if steps > MAX_STEPS:
                raise RuntimeError(f"policy {self.name} made more than {MAX_STEPS} hook calls in one round")
            for d in fn(ev, self._view) or ():
                work.extend(self._apply(d))

    def _apply(self, d: Any) -> list[tuple[str, Any]]:
        now, nodes = self.now, self.nodes
        match d:
            case Assign(node=node, probe=probe):
                return self._arrive_at(node, probe)
            case Probe(nodes=targets, probe=probe):
                return [x for node in targets for x in self._arrive_at(node, probe)]
            case Run(node=node, slot=slot, probe=probe, keep=keep):
                if not keep:
                    nodes.dequeue(node, probe)
                bound = probe.task is not None
                if probe.job_id not in self._jobs:
                    self._warn_once("job", f"Run for unknown job {probe.job_id} ignored")
                    return []
                got = nodes.reserve(node, slot, probe, probe.job_id, probe.task if bound else -1, bound)
                if got < 0:
                    self._warn_once("run", f"Run on a busy or unknown slot {node}/{slot} ignored")
                    return []
                return [] if bound else [("on_task_request", TaskRequest(now, node, got, probe))]
            case Launch(node=node, slot=slot, job_id=job_id, task=task):
                s = nodes.slots[node][slot]
                if s.job_id != job_id or s.bound:
                    self._warn_once("launch", f"Launch on slot {node}/{slot} not reserved for job {job_id}")
                    return []
                s.task, s.bound = task, True
                return []
            case Cancel(node=node, slot=slot, probe=probe):
                nodes.slots[node][slot].clear()
                nodes.dequeue(node, probe)
                return [("on_slot_freed", SlotFreed(now, node, slot))]
            case Drop(node=node, probe=probe):
                nodes.dequeue(node, probe)
                return []
            case Reject(probe=probe, node=node, status=status, payload=payload) if probe is not None:
                nodes.dequeue(node, probe)
                return [("on_probe_rejected", ProbeRejected(now, node, probe, status, payload))]
            case Give(victim=victim, thief=thief, probes=probes):
                out = []
                for p in probes:
                    if nodes.dequeue(victim, p):
                        out += self._arrive_at(thief, p)
                return out
            case Steal(thief=thief, victims=victims):
                return self._steal(thief, victims)
            case SetTimer(at=at, node=node, key=key):
                heapq.heappush(self._timers, (at, next(self._seq), node, key))
                return []
            case SendHeartbeat(node=node, payload=payload):
                return [("on_heartbeat", Heartbeat(now, node, payload))]
            case Suspend(node=node, slot=slot):
                task = nodes.slots[node][slot].spark_task
                if self.params.kill_on_suspend and task is not None:
                    self._preempt.append(task)
                else:
                    self._warn_once("suspend", "Spark cannot pause tasks; Suspend ignored")
                return []
            case Resume() | Reject():
                self._warn_once(type(d).__name__, f"{type(d).__name__} is not available live; ignored")
                return []
        raise TypeError(f"unknown decision {d!r}")

    def _arrive_at(self, node: int, probe: ProbeInfo) -> list[tuple[str, Any]]:
        self.nodes.queues[node].append(probe)
        return [("on_probe_arrival", ProbeArrival(self.now, node, probe))]

    def _steal(self, thief: int, victims: tuple[int, ...]) -> list[tuple[str, Any]]:
        """Asks victims in order until one gives something (as the simulator does, without delay)."""
        fn = getattr(self._policy, "on_steal_request", None)
        out: list[tuple[str, Any]] = []
        for victim in victims if fn is not None else ():
            decisions = list(fn(StealRequest(self.now, victim, thief), self._view) or ())
            for d in decisions:
                out += self._apply(d)
            if any(isinstance(d, Give) and d.probes for d in decisions):
                break
        return out

    def _warn_once(self, kind: str, message: str) -> None:
        if kind not in self._warned:
            self._warned.add(kind)
            log.warning("schedbridge engine: %s: %s", self.name, message)
