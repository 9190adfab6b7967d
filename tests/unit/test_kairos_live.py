"""Kairos live through the plugin's rounds: placement by the central ranking, LAS on containers."""
from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from bridge.live.kairos_live import KairosLivePlanner, kairos_live
from bridge.live.preemption import ContainerPreemptor, ContainerRef
from bridge.live.spark_protocol import OfferRound, Slot, StageDemand
from bridge.live.spark_state import LiveCluster
from policies.kairos import KairosConfig
from tests.unit.live_fakes import FakeAgent, FakeRM

A, B = "localhost:8052", "localhost:8062"
EXECUTORS = {"1": (A, "c1"), "2": (A, "c2"), "3": (B, "c3"), "4": (B, "c4")}


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def added(executor: str, nm: str, container: str) -> dict[str, Any]:
    return {"e": "executor_added", "t": 0, "executor": executor, "host": "localhost", "cores": 1,
            "container": container, "nm": nm}


def started(task: int, executor: str, stage: int = 0) -> dict[str, Any]:
    return {"e": "task_start", "t": 0, "task": task, "stage": stage, "attempt": 0, "index": task,
            "executor": executor, "host": "localhost", "speculative": False}


def rnd(n: int, free: Mapping[str, int], pending: int, events: tuple = ()) -> OfferRound:
    stage = StageDemand(0, 0, 0, 10, pending, 0, {}, {}, ())
    return OfferRound("app", n, 0, 1, tuple(Slot(e, "localhost", k) for e, k in free.items() if k),
                      (stage,) if pending else (), tuple(events))


def planner() -> tuple[KairosLivePlanner, FakeAgent, Clock]:
    agent, clock = FakeAgent(), Clock()
    preemptor = ContainerPreemptor({A: agent, B: agent}, clock=clock)
    return KairosLivePlanner(KairosConfig(q=1, w=10.0), [A, B], 1, preemptor, clock), agent, clock


def test_placement_balances_task_counts_and_arrivals_preempt_by_resizing() -> None:
    p, agent, clock = planner()
    hello = tuple(added(e, nm, c) for e, (nm, c) in EXECUTORS.items())
    first = p.plan(rnd(1, {e: 1 for e in EXECUTORS}, 3, hello), [], LiveCluster())
    assert [(g.executor, g.slots) for g in first.grants] == [("1", 1), ("2", 1), ("3", 1)]

    for t, (task, executor) in enumerate([(10, "1"), (11, "3"), (12, "2")], start=1):
        clock.t = float(t)
        p.plan(rnd(t + 1, {"4": 1}, 0, (started(task, executor),)), [], LiveCluster())
        p.driver.drain()                              # the driver's thread, stepped by hand
    assert agent.calls == [("suspend", "c1")]      # node A: 2 tasks on 1 core, the oldest shrinks
    assert [t.task for t in p.driver.table.running(0)] == [12]

    nxt = p.plan(rnd(5, {"4": 1}, 2, (started(12, "2"),)), [], LiveCluster())   # a repeated start
    assert [(g.executor, g.slots) for g in nxt.grants] == [("4", 1)]   # node A is at N+Q = 2
    assert p.driver.inbox.empty()

    clock.t = 13.0                                   # task 12's quantum ends: task 10 is younger
    p.driver.tick()
    assert agent.calls[1:] == [("suspend", "c2"), ("resume", "c1")]


def test_a_snapshot_ends_the_tasks_it_no_longer_lists() -> None:
    p, agent, clock = planner()
    hello = tuple(added(e, nm, c) for e, (nm, c) in EXECUTORS.items())
    p.plan(rnd(1, {}, 0, (*hello, started(10, "1"), started(11, "2"))), [], LiveCluster())
    p.driver.drain()
    assert agent.calls == [("suspend", "c1")] and p.policy.central.levels.count[0] == 2
    snapshot = {"executors": list(hello), "running": [started(11, "2")]}   # task 10 ended unseen
    resync = OfferRound("app", 2, 0, 1, (), (), (), snapshot=snapshot)
    p.plan(resync, [], LiveCluster())
    p.driver.drain()
    assert set(p.driver.table.tasks) == {(0, 11)} and p.policy.central.levels.count[0] == 1


def test_an_executor_without_a_yarn_container_fails_the_round() -> None:
    p, _, _ = planner()
    with pytest.raises(ValueError, match="no YARN container"):
        p.plan(rnd(1, {"9": 1}, 1, ({**added("9", A, ""), "container": ""},)), [], LiveCluster())


def test_session_raises_vcores_and_restores_nodes_and_containers(tmp_path: Path) -> None:
    rm, agent = FakeRM({"n1": (4, 4096)}), FakeAgent()
    preemptor = ContainerPreemptor({A: agent})
    with kairos_live(rm, preemptor, [A], 4, KairosConfig(q=4, w=50.0), tmp_path / "vcores.json") as p:
        assert rm.capacity["n1"] == (8, 4096)
        p.driver.post(lambda: preemptor.suspend(ContainerRef(A, "c1")))   # applied by the driver's thread
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
    agent, clock = HungAgent(), Clock()
    p = KairosLivePlanner(KairosConfig(q=1, w=10.0), [A, B], 1, ContainerPreemptor({A: agent, B: agent}), clock)
    hello = tuple(added(e, nm, c) for e, (nm, c) in EXECUTORS.items())
    p.plan(rnd(1, {}, 0, (*hello, started(10, "1"), started(11, "2"))), [], LiveCluster())
    sender = threading.Thread(target=p.driver.drain)   # the driver's thread: node A shrinks c1 ...
    sender.start()
    assert agent.entered.wait(5)                       # ... and its agent hangs
    t0 = time.monotonic()
    placement = p.plan(rnd(2, {"3": 1, "4": 1}, 1), [], LiveCluster())
    waited = time.monotonic() - t0
    agent.release.set()
    sender.join(5)
    assert waited < 1.0, f"the offer round waited {waited:.1f} s for a hung agent"
    assert [(g.executor, g.slots) for g in placement.grants] == [("3", 1)]
    assert agent.calls == [("suspend", "c1")]
