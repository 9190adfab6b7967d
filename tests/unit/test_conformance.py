"""Same policy, same behaviour: every registered policy, one small trace, simulated and live.

The simulator runs the trace with zero network delay. The live run drives the Spark engine
adapter (``EnginePlanner``, executors as nodes) with a fake Spark on a virtual clock that plays
the same task durations on the same node/slot shape: it offers a round whenever something
happens (a job is submitted, a task ends, a policy timer comes due), launches what it is
granted, and each launched task runs for the duration of the policy task its grant was for.
Every task must start and finish at the same instants in both worlds (to the millisecond of the
plugin's clock), and the policy must have made the same numbers of launches, suspensions and
resumptions, and asked as many victims to steal from (each driver interprets ``on_steal_attempt``).

The same holds when the fake Spark launches ahead (``bridge.drivers.spark.ahead``): on a task end
it launches a task of the stage the last reply predicted for that executor at once, reports it as
launched ahead, and kills what the next reply withdraws before launching that reply's grants. Each
hit is the policy's own decision taken earlier, so the instants are the simulator's still.

Where the worlds must differ, by design:
* The trace's jobs have tasks of one duration each, equal to the job's estimate: live, a policy
  sees estimates only (a Spark stage has no recorded durations), so a policy reading
  ``Job.durations`` would otherwise see different inputs.
* Jobs have no DAG and every task needs one slot: live, a stage is one job of independent tasks.
* Preempting policies run here on the same state, but a Spark task cannot pause: a suspended
  task drains (runs on to its end) live, while the simulator stops its clock. They are compared
  on a trace sparse enough that their node sides never preempt, so the placement is what is
  compared; their preemption live is tested against fake node agents in test_node_engine.py.
"""
from __future__ import annotations

import itertools
import math
import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from bridge.drivers.spark.ahead import AheadBackoff, BackoffRule
from bridge.drivers.spark.engine import EnginePlanner
from bridge.drivers.user_jobs import ESTIMATE_PROP
from bridge.drivers.spark.state import LiveCluster
from bridge.protocol.messages import Launched, OfferRound, Placement, Slot, StageDemand, parse_event
from bridge.sim.engine import simulate
from policies.framework import registry
from policies.framework.api import ClusterSpec, PolicyEnv
from workloads.model import Job

NODES, SLOTS = 3, 2
COUNTED = ("launches", "suspends", "resumes", "steal_requests")
EXAMPLE_PACKAGE = Path(__file__).resolve().parents[2] / "examples" / "policy-package" / "src"
TOLERANCE = 0.002  # s: the plugin's clock has milliseconds; a timer fires in the first round after it


def trace(busy: bool) -> list[Job]:
    """Jobs of 1-5 tasks of one duration each (1-9 s); ``busy``: they overlap and queue."""
    rng = random.Random(11)
    jobs, t = [], 0.0
    for j in range(12):
        t += rng.choice([0.5, 1.5, 4.0]) if busy else 20.0
        d = float(rng.randint(1, 9)) + 0.25 * j  # distinct durations: no coincident task ends
        n = rng.randint(1, 5 if busy else 2)
        jobs.append(Job(j, t, (d,) * n, d, demands=((1.0,),) * n))
    return jobs


def simulated(name: str, jobs: list[Job]) -> tuple[dict[tuple[int, int], tuple[float, float]], dict[str, int]]:
    spec = ClusterSpec(NODES, SLOTS, ("slots",), (float(SLOTS),), network_delay=0.0)
    result = simulate(jobs, registry.create(name, PolicyEnv(spec, 0)), spec)
    lg = result.log
    times = {(j, t): (s, e) for j, t, s, e, done in zip(lg.seg_job, lg.seg_task, lg.seg_start, lg.seg_end,
                                                      lg.seg_done) if done}
    assert not result.unfinished
    return times, {c: lg.counters[c] for c in COUNTED}


class TraceSpark:
    """One application with NODES executors of SLOTS cores; each trace job is one stage.
    ``ahead``: launch on the replies' ``next`` predictions, counting ``hits`` and ``misses``."""

    def __init__(self, jobs: list[Job], ahead: bool = False) -> None:
        self.jobs = {j.job_id: j for j in jobs}
        self.to_submit = sorted(jobs, key=lambda j: j.submit)
        self.cluster = LiveCluster()
        hello = [{"e": "executor_added", "t": 0, "executor": str(e), "host": f"h{e}", "cores": SLOTS}
                 for e in range(NODES)]
        self.cluster.reset("app", {"executors": hello}, None)
        self.free = {str(e): SLOTS for e in range(NODES)}
        self.pending: dict[int, int] = {}
        self.running: dict[int, tuple[int, str, float]] = {}   # Spark task -> (stage, executor, end)
        self.events: list[dict] = []
        self.launched: list[Launched] = []
        self.times: dict[tuple[int, int], tuple[float, float]] = {}
        self.order: dict[int, int] = {}   # Spark task -> the state's start order of its policy task
        self.ids = itertools.count()
        self.round = 0
        self.ahead = ahead
        self.next: dict[str, int] = {}                 # executor -> the stage the last reply predicts
        self.guesses: dict[int, float] = {}            # launches ahead not yet verified -> launch time
        self.hits = self.misses = 0

    def run(self, planner: EnginePlanner) -> None:
        """Rounds from t = 0 (the planner's clock starts at its first round) until all is done."""
        planner.plan(*self._offer(0.0), self.cluster)
        while self.to_submit or self.running or any(self.pending.values()):
            now = min(self._next(planner))
            assert now < math.inf, "nothing left to happen but work remains: the live run stalled"
            now = math.ceil(now * 1000) / 1000  # rounds carry the plugin's milliseconds
            self._end_tasks(now)
            while self.to_submit and self.to_submit[0].submit <= now:
                job = self.to_submit.pop(0)
                self.pending[job.job_id] = job.n_tasks
            self._launch(planner, planner.plan(*self._offer(now), self.cluster), now)
            assert self.round < 2_000, f"the live run makes no progress at t={now}: {self.pending}"

    def _next(self, planner: EnginePlanner) -> list[float]:
        timer = planner.world.kernel.next_time() if planner.world is not None else math.inf
        return [self.to_submit[0].submit if self.to_submit else math.inf,
                min((end for _, _, end in self.running.values()), default=math.inf), timer]

    def _end_tasks(self, now: float) -> None:
        """Report the tasks that ended, those that ended together in the order they started (as
        the simulator orders them; Spark's own order is arbitrary)."""
        for task, (stage, ex, end) in sorted(self.running.items(), key=lambda kv: (kv[1][2], self.order[kv[0]])):
            if end <= now:
                self.events.append({**self._task(task, stage, ex, "task_end"), "duration_ms": 1, "reason": "Success"})
                del self.running[task]
                self.free[ex] += 1
                guess = self.next.get(ex)
                if self.ahead and guess is not None and self.pending.get(guess, 0) > 0:
                    self._launch_ahead(guess, ex, now)

    def _launch_ahead(self, stage: int, executor: str, now: float) -> None:
        """Launch a task of ``stage`` on ``executor``'s freed core at once; it plays its stage's one
        task duration (the trace's)."""
        task = next(self.ids)
        self.guesses[task] = now
        self.running[task] = (stage, executor, now + self.jobs[stage].estimate)
        self.free[executor] -= 1
        self.pending[stage] -= 1
        self.launched.append(Launched(stage, 0, executor, (task,), ahead=True))
        self.events.append(self._task(task, stage, executor, "task_start"))

    def _offer(self, now: float) -> tuple[OfferRound, tuple]:
        self.round += 1
        events, self.events = tuple(parse_event(e) for e in self.events), []
        self.cluster.apply("app", events)
        launched, self.launched = tuple(self.launched), []
        # each simulated job is a Spark job of its own, so a user job of its own (its own estimate)
        stages = tuple(StageDemand(s, 0, s, self.jobs[s].n_tasks, n, 0, {},
                                   {ESTIMATE_PROP: repr(self.jobs[s].estimate)}, ())
                       for s, n in sorted(self.pending.items()) if n)
        slots = tuple(Slot(e, f"h{e}", f) for e, f in self.free.items() if f)
        return OfferRound("app", self.round, round(now * 1000), 1, slots, stages, (), launched=launched,
                          ahead=self.ahead), events

    def _verify(self, planner: EnginePlanner, placement: Placement) -> None:
        """Kill the withdrawn launches ahead (Spark re-queues their tasks); the others were
        bound to the policy's grants: they run its tasks, from their launch."""
        world = planner.world
        assert set(placement.withdraw) <= self.guesses.keys(), "withdrawn what was not a launch ahead"
        for task in placement.withdraw:
            stage, ex, _ = self.running.pop(task)
            self.free[ex] += 1
            self.pending[stage] += 1
            self.events.append({**self._task(task, stage, ex, "task_end"), "duration_ms": 0, "reason": "TaskKilled"})
            del self.guesses[task]
            self.misses += 1
        bound = {e.spark: (j, t, e.at) for (j, t), e in world.ledger.bound()}
        for task, start in self.guesses.items():
            j, t, at = bound[task]
            stage, _, end = self.running[task]
            assert world.state.view.job(j).meta["stage"] == stage and at is not None
            assert end - start == self.jobs[stage].durations[t]
            self.order[task] = world.state.token(*at)
            self.times[(stage, t)] = (start, end)
            self.hits += 1
        self.guesses.clear()
        self.next = {p.executor: p.stage for p in placement.next}

    def _launch(self, planner: EnginePlanner, placement: Placement, now: float) -> None:
        """Launch the grants; each Spark task plays the duration of the policy task its grant holds
        (the grants of an executor bind in slot order, as the engine binds them)."""
        self._verify(planner, placement)
        world = planner.world
        for g in placement.grants:
            node = world.runner.node_of[f"app/{g.executor}"]
            held = [e.at for (j, _), e in world.ledger.waiting()
                    if e.node == node and world.state.view.job(j).meta["stage"] == g.stage]
            assert len(held) >= g.slots <= self.free[g.executor], (g, held, self.free)
            for where in held[:g.slots]:
                r = next(r for r in world.state.view.running(where[0]) if r.slot == where[1])
                duration = self.jobs[g.stage].durations[r.task]
                task = next(self.ids)
                self.order[task] = world.state.token(*where)
                self.running[task] = (g.stage, g.executor, now + duration)
                self.free[g.executor] -= 1
                self.pending[g.stage] -= 1
                self.times[(g.stage, r.task)] = (now, now + duration)
                self.launched.append(Launched(g.stage, 0, g.executor, (task,)))
                self.events.append(self._task(task, g.stage, g.executor, "task_start"))

    @staticmethod
    def _task(task: int, stage: int, executor: str, kind: str) -> dict:
        return {"e": kind, "t": 0, "task": task, "stage": stage, "attempt": 0, "index": task,
                "executor": executor, "host": f"h{executor}", "speculative": False}


def live(name: str, jobs: list[Job], ahead: bool = False, backoff: BackoffRule | None = None
         ) -> tuple[dict[tuple[int, int], tuple[float, float]], dict[str, int], TraceSpark]:
    planner = EnginePlanner(name, {})
    if backoff is not None:
        planner.backoff = AheadBackoff(backoff)
    spark = TraceSpark(jobs, ahead)
    spark.run(planner)
    return spark.times, {c: planner.counters[c] for c in COUNTED}, spark


PREEMPTING = {n for n in registry.default_registry().names() if registry.default_registry().get(n).preempts}


@pytest.mark.parametrize("name", sorted(registry.BUILTINS))
def test_same_policy_same_behaviour_in_the_simulator_and_live(name: str) -> None:
    assert_same_behaviour(name)


def test_the_example_policy_package_behaves_the_same_in_the_simulator_and_live(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``examples/policy-package``, written against the public contract only, registered the way
    its entry point does (tests/integration/test_packaging.py installs it for real)."""
    monkeypatch.syspath_prepend(str(EXAMPLE_PACKAGE))
    monkeypatch.setattr(registry, "_DEFAULT", None)  # a registry of this test's own, dropped after it
    registry.default_registry().register("schedbridge_sef:ENTRY", name="shortest-estimate-first")
    assert_same_behaviour("shortest-estimate-first")


def assert_same_behaviour(name: str, ahead: bool = False, backoff: BackoffRule | None = None) -> TraceSpark:
    """Policy ``name`` starts and finishes every task at the same instants in both worlds (the
    live run's host pausing predictions by ``backoff``, else by default); the live run's fake
    Spark, for its counts of launches ahead."""
    jobs = trace(busy=name not in PREEMPTING)
    sim_times, sim_counts = simulated(name, jobs)
    live_times, live_counts, spark = live(name, jobs, ahead, backoff)
    assert sorted(live_times) == sorted(sim_times), "different tasks ran"
    late = {k: (sim_times[k], live_times[k]) for k in sim_times
            if any(abs(a - b) > TOLERANCE for a, b in zip(sim_times[k], live_times[k]))}
    assert not late, (f"{len(late)} of {len(sim_times)} tasks ran at other times (sim, live): "
                      f"{dict(list(late.items())[:5])}")
    assert live_counts == sim_counts
    return spark


AHEAD: dict[str, tuple[int, int]] = {}  # policy -> (hits, misses), printed at the end of the module


@pytest.mark.parametrize("name", sorted(registry.BUILTINS))
def test_same_policy_same_behaviour_when_the_plugin_launches_ahead(name: str) -> None:
    spark = assert_same_behaviour(name, ahead=True)
    AHEAD[name] = (spark.hits, spark.misses)
    assert not spark.guesses


def test_fifo_gives_a_freed_core_to_its_stage_so_a_launch_ahead_comes_before_it_asks() -> None:
    spark = assert_same_behaviour("fifo", ahead=True)
    assert spark.hits > 0


def test_a_launch_the_policy_did_not_decide_is_withdrawn_and_runs_no_task() -> None:
    """fifo-ff decides at slot boundaries (a timer), not at a task end: each launch on a task end
    misses and is killed, and every task still runs once, where and when the simulator runs it
    (a killed launch is recorded as no task's run)."""
    spark = assert_same_behaviour("fifo-ff", ahead=True)
    assert spark.misses > 0 and spark.hits == 0


@pytest.mark.parametrize("name", ["bf-js", "fifo-ff", "vqs", "vqs-bf"])
def test_a_policy_deciding_at_its_timers_has_few_launches_ahead_withdrawn(name: str) -> None:
    """Every launch ahead misses for them (0/5 on this trace while the host always predicted): the
    host stops predicting once misses dominate, and this trace ends within the first pause."""
    spark = assert_same_behaviour(name, ahead=True)
    assert spark.hits == 0 and spark.misses <= BackoffRule().pause_misses


@pytest.mark.parametrize("name", ["fair", "fifo-ff"])
def test_predictions_paused_and_resumed_change_no_instant(name: str) -> None:
    """Short pauses (two task ends, then four): the host predicts again, its probes miss and pause
    it again, and every task still runs at the simulator's instants."""
    spark = assert_same_behaviour(name, ahead=True, backoff=BackoffRule(window=4, first_pause=2, max_pause=4))
    always = assert_same_behaviour(name, ahead=True, backoff=BackoffRule(window=4, pause_misses=5))  # never pauses
    assert BackoffRule().pause_misses < spark.misses < always.misses


@pytest.fixture(scope="module", autouse=True)
def _report_launches_ahead() -> Iterator[None]:
    yield
    if AHEAD:
        print("\nlaunch-ahead hits/launches per policy:", ", ".join(
            f"{n} {h}/{h + m}" for n, (h, m) in sorted(AHEAD.items())))
