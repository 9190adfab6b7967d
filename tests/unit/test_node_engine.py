"""Preempting policies live on NodeManagers (bridge.drivers.node_engine) against a fake Spark on YARN
and fake node agents: the policy's own decisions, applied by the one cluster state, become grants
on the right nodes and container resizes, for Kairos, Big-C and Falcon alike."""
from __future__ import annotations

import itertools
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from bridge.drivers.node_engine import NodePlanner, node_preemption, preempting_policies
from bridge.drivers.spark.state import LiveCluster
from bridge.nodes.container_commands import ContainerCommands
from bridge.nodes.preemption import ContainerPreemptor, ContainerRef
from bridge.protocol.messages import ContainerChange, Launched, OfferRound, Slot, StageDemand, parse_event
from tests.unit.live_fakes import FakeAgent, FakeRM

A, B = "localhost:8052", "localhost:8062"
EXECUTORS = {"1": (A, "c1"), "2": (A, "c2"), "3": (B, "c3"), "4": (B, "c4")}


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


class YarnSpark:
    """One application with one-core executors in YARN containers; launches what it is granted."""

    def __init__(self, executors: dict[str, tuple[str, str]] = EXECUTORS) -> None:
        self.cluster = LiveCluster()
        hello = [{"e": "executor_added", "t": 0, "executor": e, "host": "localhost", "cores": 1,
                  "container": c, "nm": nm} for e, (nm, c) in executors.items()]
        self.cluster.reset("app", {"executors": hello}, None)
        self.free = {e: 1 for e in executors}
        self.container = {e: c for e, (_, c) in executors.items()}
        self.pending: dict[int, tuple[int, str]] = {}     # stage -> (pending tasks, estimate)
        self.running: dict[int, tuple[int, str]] = {}     # Spark task -> (stage, executor)
        self.launched: list[Launched] = []
        self.events: list[dict[str, Any]] = []
        self.ids = itertools.count(100)
        self.round = 0

    def offer(self) -> OfferRound:
        self.round += 1
        events, self.events = tuple(parse_event(e) for e in self.events), []
        self.cluster.apply("app", events)
        launched, self.launched = tuple(self.launched), []
        stages = tuple(StageDemand(s, 0, 0, n, n, 0, {}, {"schedbridge.estimate": est}, ())
                       for s, (n, est) in sorted(self.pending.items()) if n)
        slots = tuple(Slot(e, "localhost", f) for e, f in self.free.items() if f)
        return OfferRound("app", self.round, 0, 1, slots, stages, (), launched=launched), events

    def step(self, planner: NodePlanner) -> list[tuple[int, str]]:
        """One round: launch the grants; returns (Spark task, container) launched."""
        rnd, events = self.offer()
        placement = planner.plan(rnd, events, self.cluster)
        out = []
        for g in placement.grants:
            for _ in range(min(g.slots, self.free[g.executor], self.pending[g.stage][0])):
                task = next(self.ids)
                self.free[g.executor] -= 1
                self.pending[g.stage] = (self.pending[g.stage][0] - 1, self.pending[g.stage][1])
                self.running[task] = (g.stage, g.executor)
                self.launched.append(Launched(g.stage, 0, g.executor, (task,)))
                self.events.append(self._task("task_start", task))
                out.append((task, self.container[g.executor]))
        return out

    def end(self, task: int) -> None:
        self.events.append({**self._task("task_end", task), "duration_ms": 5, "reason": "Success"})
        stage, executor = self.running.pop(task)
        self.free[executor] += 1

    def _task(self, kind: str, task: int) -> dict[str, Any]:
        stage, executor = self.running[task]
        return {"e": kind, "t": 0, "task": task, "stage": stage, "attempt": 0, "index": task,
                "executor": executor, "host": "localhost", "speculative": False}


def planner(name: str, params: dict[str, str], agent: FakeAgent | None = None,
            clock: Clock | None = None) -> tuple[NodePlanner, FakeAgent, Clock]:
    agent, clock = agent or FakeAgent(), clock or Clock()
    return NodePlanner(name, params, [A, B], 1, ContainerPreemptor({A: agent, B: agent}, clock=clock), clock), \
        agent, clock


def test_kairos_places_by_task_count_and_time_slices_a_node_by_resizing() -> None:
    p, agent, clock = planner("kairos", {"q": "1", "w": "10"})
    spark = YarnSpark()
    spark.pending[0] = (3, "1")
    launched = spark.step(p)                       # fewest tasks first: A, B, then A again (N+Q = 2)
    assert sorted(c for _, c in launched) == ["c1", "c2", "c3"]
    clock.t = 1.0
    spark.step(p)                                  # the launches bind: A's first task was suspended
    p.tick()                                       # by the second's arrival (LAS: the youngest runs);
    assert agent.calls == [("suspend", "c1"), ("suspend", "c4")]   # B's idle executor waits shrunk
    clock.t = 10.5                                 # the quantum: c1 (0 s attained) is younger than c2
    p.tick()
    assert agent.calls[2:] == [("suspend", "c2"), ("resume", "c1")]
    assert p.counters["suspends"] == 2 and p.counters["resumes"] == 1


def test_a_reply_tells_the_application_its_containers_suspended_and_resumed_since_the_last() -> None:
    """What the node driver sent reaches the application's next reply, each command once, with
    the executor of its container (the plugin posts them for Spark's event log and UI)."""
    p, agent, clock = planner("kairos", {"q": "1", "w": "10"})
    spark = YarnSpark()
    spark.pending[0] = (3, "1")
    spark.step(p)
    p.tick()                                       # c1 (queued) and c4 (idle) shrunk
    rnd, events = spark.offer()
    told = p.plan(rnd, events, spark.cluster).containers
    assert told == (ContainerChange("1", "c1", "suspend", True), ContainerChange("4", "c4", "suspend", True))
    clock.t = 10.5                                 # the quantum: c2 suspended, c1 resumed
    agent.down = True                              # ... but c1's agent is unreachable
    p.tick()
    rnd, events = spark.offer()
    assert p.plan(rnd, events, spark.cluster).containers == (ContainerChange("2", "c2", "suspend", False),
                                                             ContainerChange("1", "c1", "resume", False))
    rnd, events = spark.offer()
    assert p.plan(rnd, events, spark.cluster).containers == ()


def test_a_task_queued_at_a_node_starts_in_a_container_already_shrunk() -> None:
    """Idle executors wait at the minimum share and a granted one is set to its task's share with
    the grant, before Spark's launch is reported (a queued task used to run its first ~0.1 s at
    full share); nothing is sent again on the report. A task given a slot restores the full share."""
    p, agent, clock = planner("kairos", {"q": "1", "w": "10"})
    spark = YarnSpark()
    spark.pending[0] = (3, "1")
    spark.step(p)                                  # A's first task is suspended by the second's arrival
    p.tick()
    shrunk = [("suspend", "c1"), ("suspend", "c4")]  # queued c1 and idle c4, before any launch report
    assert agent.calls == shrunk
    clock.t = 1.0
    spark.step(p)                                  # the launches are reported and bound
    p.tick()
    assert agent.calls == shrunk
    spark.pending[1] = (1, "1")                    # B has one task: the next goes there, to its slot
    assert [c for _, c in spark.step(p)] == ["c4"]
    p.tick()                                       # (the youngest runs: B's first task is suspended)
    assert agent.calls == [*shrunk, ("suspend", "c3"), ("resume", "c4")]


def test_sparks_own_task_in_an_idle_executor_runs_at_full_share() -> None:
    """A fallback round's task (Spark placed it; no launch report, only its start) in an executor
    that waits shrunk gets the full share back (it ran shrunk for its whole life before: 14
    fallback tasks of the mission study's Kairos repeat 3, up to 11.9 s each)."""
    p, agent, clock = planner("kairos", {"q": "1", "w": "10"})
    spark = YarnSpark()
    spark.pending[0] = (3, "1")
    spark.step(p)
    p.tick()
    assert ("suspend", "c4") in agent.calls        # idle, so shrunk
    spark.running[999] = (0, "4")                  # Spark's own placement, in a fallback round
    spark.free["4"] -= 1
    spark.events.append(spark._task("task_start", 999))
    clock.t = 1.0
    spark.step(p)
    p.tick()
    assert agent.calls[-1] == ("resume", "c4")


def test_a_task_that_ends_while_suspended_leaves_its_node_at_once_and_its_executor_is_restored() -> None:
    """Kairos hears the end (QueuedTaskEnded): node A drops below N + Q = 2 in that round, so the
    waiting fifth task gets A's freed executor then, not when the quantum would have given the
    ended task its slot (10.5 s)."""
    p, agent, clock = planner("kairos", {"q": "1", "w": "10"})
    spark = YarnSpark()
    spark.pending[0] = (5, "1")
    launched = spark.step(p)                       # A, B, A, B: both nodes at N + Q, one task waits
    assert sorted(c for _, c in launched) == ["c1", "c2", "c3", "c4"]
    first = launched[0][0]
    clock.t = 1.0
    spark.step(p)
    p.tick()
    assert ("suspend", "c1") in agent.calls        # each node's first task, by the second's arrival
    spark.end(first)                               # it ended at the minimum share
    clock.t = 2.0
    assert [c for _, c in spark.step(p)] == ["c1"]  # the waiting task, at once, on A's freed executor
    p.tick()
    assert ("resume", "c1") in agent.calls         # the executor's next task must not start shrunk
    assert p.counters["queued_ends"] == 1 and p.counters["resumes"] == 0


@pytest.mark.parametrize("name,params", [("bigc", {}), ("falcon", {"delta": "0"})])
def test_a_short_stage_preempts_a_long_one_by_shrinking_its_container(name: str, params: dict[str, str]) -> None:
    """One NodeManager of one slot, busy with a long stage's task; a short stage arrives: the
    policy's node side suspends the long task (its container shrinks) and runs the short one on
    the node's extra executor; once the short task is done, the long one resumes at full share.
    (Falcon with delta = 0: with the paper's 0.35 a lone waiting task never preempts.)"""
    agent, clock = FakeAgent(), Clock()
    p = NodePlanner(name, params, [A], 1, ContainerPreemptor({A: agent}, clock=clock), clock)
    spark = YarnSpark({"1": (A, "c1"), "2": (A, "c2")})
    spark.pending[1] = (1, "1000")
    assert [c for _, c in spark.step(p)] == ["c1"]
    clock.t = 1.0
    spark.pending[2] = (1, "0.1")
    [(short, container)] = spark.step(p)
    assert container == "c2"
    clock.t = 2.0
    spark.step(p)
    p.tick()
    assert agent.calls == [("suspend", "c1")]
    spark.end(short)
    clock.t = 3.0
    spark.step(p)
    p.tick()
    assert agent.calls[0] == ("suspend", "c1")     # and c2, idle again, waits shrunk
    assert sorted(agent.calls[1:]) == [("resume", "c1"), ("suspend", "c2")]
    assert p.counters["suspends"] == 1 and p.counters["resumes"] == 1


def test_tasks_off_their_slots_hold_only_a_nodes_extra_executors() -> None:
    """Falcon's worker queues without bound. One slot, two executors: the long task L is suspended
    for X, then ends at the minimum share; queued Y takes its executor. When X ends, the worker
    gives the slot to the short Z, queued after W: W (off its slot) may not take the freed
    executor, since Y already holds the node's one extra executor, so Z starts there at full share
    (before, W took it shrunk and the slot stayed empty with Z waiting for an executor)."""
    agent, clock = FakeAgent(), Clock()
    p = NodePlanner("falcon", {}, [A], 1, ContainerPreemptor({A: agent}, clock=clock), clock)
    spark = YarnSpark({"1": (A, "c1"), "2": (A, "c2")})
    spark.pending[1] = (1, "1000")
    [(long, _)] = spark.step(p)
    for at, stage, estimate in [(1.0, 2, "1000"), (2.0, 3, "1000"), (2.5, 5, "1000"), (3.0, 4, "0.1")]:
        clock.t = at
        spark.pending[stage] = (1, estimate)
        launched = spark.step(p)
        if stage == 2:
            [(x, _)] = launched                    # X on the slot, L suspended
    spark.end(long)
    clock.t = 5.0
    assert [spark.running[t][0] for t, _ in spark.step(p)] == [3]   # Y, in L's executor
    clock.t = 6.0
    spark.step(p)
    spark.end(x)
    clock.t = 7.0
    [(z, container)] = spark.step(p)
    p.tick()
    assert spark.running[z][0] == 4 and container == "c2"
    assert ("suspend", "c2") not in agent.calls and spark.pending[5][0] == 1   # W waits, no executor


def test_a_policy_that_does_not_preempt_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match="'sparrow' does not preempt.*preempting policies: .*bigc.*kairos"):
        planner("sparrow", {})
    assert {"kairos", "bigc", "falcon"} <= set(preempting_policies())


def test_an_executor_without_a_yarn_container_fails_the_round() -> None:
    p, _, _ = planner("kairos", {})
    with pytest.raises(ValueError, match="no YARN container"):
        p.plan(*YarnSpark({"9": (A, "")}).offer(), YarnSpark({"9": (A, "")}).cluster)


def test_session_raises_vcores_by_the_policys_extra_tasks_and_restores_them(tmp_path: Path) -> None:
    for name, params, extra in (("kairos", {"q": "3"}, 3), ("bigc", {}, 1)):
        rm, agent = FakeRM({"n1": (4, 4096)}), FakeAgent()
        preemptor = ContainerPreemptor({A: agent})
        with node_preemption(rm, preemptor, [A], 4, name, params, tmp_path / "vcores.json") as p:
            assert rm.capacity["n1"] == (4 + extra, 4096)
            with p.lock:
                p.commands.want(ContainerRef(A, "c1"), "suspend")
            p.wake.set()                           # sent by the driver's thread
            deadline = time.monotonic() + 5
            while not agent.calls and time.monotonic() < deadline:
                time.sleep(0.01)
            assert agent.calls == [("suspend", "c1")]
        assert rm.capacity["n1"] == (4, 4096)
        assert agent.calls[-1] == ("resume", "c1")


class HungAgent(FakeAgent):
    """An agent that stops answering: every call waits until the test releases it."""

    def __init__(self) -> None:
        super().__init__()
        self.entered, self.release = threading.Event(), threading.Event()

    def _call(self, action: str, container_id: str) -> dict[str, Any]:
        self.entered.set()
        self.release.wait(10)
        return super()._call(action, container_id)


def test_a_hung_agent_does_not_hold_up_offer_rounds() -> None:
    agent = HungAgent()
    p, _, clock = planner("kairos", {"q": "1", "w": "10"}, agent)
    spark = YarnSpark()
    spark.pending[0] = (3, "1")
    spark.step(p)
    spark.step(p)                                  # A's first task is to shrink ...
    sender = threading.Thread(target=p.tick)       # ... by the driver's thread, whose agent hangs
    sender.start()
    assert agent.entered.wait(5)
    t0 = time.monotonic()
    spark.pending[1] = (1, "1")
    launched = spark.step(p)
    waited = time.monotonic() - t0
    agent.release.set()
    sender.join(5)
    assert waited < 1.0, f"the offer round waited {waited:.1f} s for a hung agent"
    assert [c for _, c in launched] == ["c4"]       # node B has room for one more (N+Q = 2)


def commands(agent: FakeAgent, clock: Clock) -> ContainerCommands:
    return ContainerCommands(ContainerPreemptor({A: agent}, clock=clock), clock, threading.RLock())


def test_a_failed_resume_is_retried_at_doubling_intervals() -> None:
    agent, clock = FakeAgent(), Clock()
    c, ref = commands(agent, clock), ContainerRef(A, "a")
    c.want(ref, "suspend")
    c.flush()
    agent.down = True
    c.want(ref, "resume")
    c.flush()                                      # fails: retried after retry_s (1 s)
    clock.t = 1.0
    c.flush()                                      # still down: the next try in 2 s
    assert c.preemptor.throttled == {ref} and len(c.preemptor.commands) == 3
    agent.down = False
    clock.t = 2.9
    c.flush()
    assert agent.calls == [("suspend", "a")]
    clock.t = 3.0
    c.flush()
    assert agent.calls == [("suspend", "a"), ("resume", "a")] and c.preemptor.throttled == set()
    clock.t = 20.0
    c.flush()
    assert len(agent.calls) == 2                   # once acknowledged, never sent again


def test_commands_wait_for_agents_opened_later_and_then_a_missing_agent_is_a_counted_failure() -> None:
    """A replay opens its agents once its application exists, while executors already register:
    the commands of that window wait in the outbox instead of failing for want of an agent."""
    agent, clock = FakeAgent(), Clock()
    c = ContainerCommands(ContainerPreemptor({}, clock=clock, awaiting_agents=True), clock, threading.RLock())
    c.want(ContainerRef(A, "a"), "suspend")
    c.flush()
    assert c.preemptor.commands == [] and ContainerRef(A, "a") in c.outbox
    c.preemptor.attach({A: agent})
    c.flush()
    assert agent.calls == [("suspend", "a")] and c.outbox == {}
    c.want(ContainerRef("elsewhere:8042", "b"), "suspend")
    c.flush()
    assert c.outbox == {} and "1 of 2 preemption command(s) failed, on elsewhere:8042" in c.preemptor.failures()


def test_restore_drops_unsent_commands_and_resumes_what_is_throttled() -> None:
    agent, clock = FakeAgent(), Clock()
    c, ref = commands(agent, clock), ContainerRef(A, "a")
    c.want(ref, "suspend")
    c.flush()
    c.want(ContainerRef(A, "b"), "suspend")        # never sent
    assert c.restore() == [] and c.outbox == {}
    assert agent.calls == [("suspend", "a"), ("resume", "a")]


def test_a_host_of_a_preempting_policy_asks_for_launches_at_once_and_others_do_not() -> None:
    """The node side shrinks a queued task's container once it knows which container runs it, so
    the host asks the plugin at attach for launches in rounds without a free slot too."""
    import json

    from bridge.drivers.planners import make_planner
    from bridge.plugin.host import PolicyHost

    attach = json.dumps({"v": 2, "kind": "attach", "app": "a", "policy": "kairos", "params": {"q": "1", "w": "10"}})
    assert json.loads(PolicyHost(planner("kairos", {"q": "1", "w": "10"})[0]).handle(attach))["launch_reports"] is True
    for name in ("kairos", "fifo", "spark-fifo"):
        request = attach.replace('"kairos"', f'"{name}"').replace('"params": {"q": "1", "w": "10"}', '"params": {}')
        reply = json.loads(PolicyHost(make_planner(name)).handle(request))
        assert reply["attached"] and reply["launch_reports"] is False
