"""The live preemption mechanism and Kairos' node side on the wall clock, against fake agents."""
from __future__ import annotations

import logging
from pathlib import Path

import pytest

from bridge.live.node_capacity import RaisedVcores, restore
from bridge.live.node_driver import LiveNodeDriver
from bridge.live.node_table import NodeTable
from bridge.live.preemption import ContainerPreemptor, ContainerRef
from policies.api import ClusterSpec, Code, PolicyEnv
from policies.kairos import Kairos, KairosConfig
from tests.unit.live_fakes import FakeAgent, FakeRM

NODE = "nm-1"


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def ref(name: str) -> ContainerRef:
    return ContainerRef(NODE, name)


def kairos_driver(slots: int = 2, w: float = 10.0) -> tuple[LiveNodeDriver, FakeAgent, Clock, Kairos]:
    agent, clock = FakeAgent(), Clock()
    policy = Kairos(KairosConfig(q=2, w=w), PolicyEnv(ClusterSpec(1, slots)))
    driver = LiveNodeDriver(policy, NodeTable(1, slots), ContainerPreemptor({NODE: agent}, clock=clock), clock)
    return driver, agent, clock, policy


class Idle:
    """A node policy that never runs anything (every arrival stays queued)."""

    name = "idle"

    def on_job_arrival(self, ev, view):
        return []


# -- the mechanism --------------------------------------------------------------------------


def test_preemptor_tracks_throttles_and_restores_them() -> None:
    agent = FakeAgent()
    preemptor = ContainerPreemptor({NODE: agent})
    assert preemptor.suspend(ref("a")).ok and preemptor.suspend(ref("b")).ok
    assert preemptor.resume(ref("a")).ok
    assert preemptor.throttled == {ref("b")}
    assert preemptor.restore_all() == []
    assert agent.calls[-1] == ("resume", "b") and preemptor.throttled == set()


def test_finished_container_is_skipped_not_an_error() -> None:
    agent = FakeAgent()
    agent.gone.add("done")
    status = ContainerPreemptor({NODE: agent}).suspend(ref("done"))
    assert status.code is Code.SKIP and "done" in status.reason


def test_unreachable_agent_keeps_the_throttle_for_a_later_restore() -> None:
    agent = FakeAgent()
    preemptor = ContainerPreemptor({NODE: agent})
    preemptor.suspend(ref("a"))
    agent.down = True
    assert preemptor.resume(ref("a")).code is Code.ERROR
    assert preemptor.restore_all() == [ref("a")]
    assert preemptor.suspend(ContainerRef("elsewhere", "x")).code is Code.ERROR


def test_freeze_mode_freezes() -> None:
    agent = FakeAgent()
    ContainerPreemptor({NODE: agent}, freeze=True).suspend(ref("a"))
    assert agent.calls == [("freeze", "a")]


# -- Kairos' node side, live ------------------------------------------------------------------


def test_new_task_preempts_the_oldest_and_the_quantum_swaps_back() -> None:
    driver, agent, clock, _ = kairos_driver()
    driver.task_started(0, 1, 100, ref("a"))
    clock.t = 1.0
    driver.task_started(0, 1, 101, ref("b"))
    assert agent.calls == []
    clock.t = 5.0
    driver.task_started(0, 2, 200, ref("c"))          # no free slot: the oldest ("a", 5 s) is suspended
    assert agent.calls == [("suspend", "a")]
    assert [t.task for t in driver.table.running(0)] == [200, 101]
    clock.t = 10.9
    driver.tick()
    assert agent.calls == [("suspend", "a")]        # no quantum has ended yet
    clock.t = 11.0                                   # b's quantum: a (5 s) is younger than b (10 s)
    driver.tick()
    assert agent.calls[1:] == [("suspend", "b"), ("resume", "a")]
    clock.t = 15.0                                   # c's quantum: b (10 s) is not older than c (10 s)
    driver.tick()
    assert agent.calls[3:] == [("suspend", "c"), ("resume", "b")]
    assert driver.table.attained(0, 2, 200) == pytest.approx(10.0)


def test_finished_task_hands_its_slot_to_the_youngest_suspended() -> None:
    driver, agent, clock, _ = kairos_driver(slots=1)
    driver.task_started(0, 1, 100, ref("a"))
    clock.t = 3.0
    driver.task_started(0, 1, 101, ref("b"))
    clock.t = 4.0
    driver.task_finished(1, 101)
    assert agent.calls == [("suspend", "a"), ("resume", "a")]
    assert driver.preemptor.throttled == set()
    assert [t.task for t in driver.table.running(0)] == [100]


def test_heartbeats_reach_the_central_scheduler() -> None:
    driver, _, clock, policy = kairos_driver()
    for i, name in enumerate("abc"):
        clock.t = float(i)
        policy.central.claim(0)                       # the placement side sent it
        driver.task_started(0, 1, i, ref(name))
    assert policy.central.rank([0]) == [0] and policy.central.rank([0], {0: 2}) == []
    assert policy.central.levels.count[0] == 3
    driver.task_finished(1, 0)
    assert policy.central.levels.count[0] == 2


def test_a_task_the_policy_does_not_run_is_held_at_the_minimum_share() -> None:
    agent, clock = FakeAgent(), Clock()
    driver = LiveNodeDriver(Idle(), NodeTable(1, 1), ContainerPreemptor({NODE: agent}), clock)
    driver.task_started(0, 1, 7, ref("q"))
    assert agent.calls == [("suspend", "q")] and driver.table.queued(0) == 1
    driver.task_finished(1, 7)           # the executor stays: its container gets its full share back
    assert agent.calls[-1] == ("resume", "q")
    assert driver.table.queued(0) == 0 and driver.preemptor.throttled == set()


def test_a_suspended_task_that_ends_leaves_its_executor_at_full_share() -> None:
    driver, agent, clock, _ = kairos_driver(slots=1)
    driver.task_started(0, 1, 100, ref("a"))
    clock.t = 3.0
    driver.task_started(0, 1, 101, ref("b"))      # a is suspended
    driver.task_finished(1, 100)                  # ... and ends at the minimum share
    assert agent.calls == [("suspend", "a"), ("resume", "a")]
    clock.t = 4.0
    driver.task_started(0, 1, 102, ref("a"))      # the next task on a's executor: b is preempted
    assert agent.calls[2:] == [("suspend", "b")]


# -- node capacity (N+Q admission) ------------------------------------------------------------


def test_raised_vcores_are_restored_on_exit_and_on_error(tmp_path: Path) -> None:
    rm = FakeRM({"n1": (4, 4096), "n2": (4, 4096)})
    record = tmp_path / "vcores.json"
    with RaisedVcores(rm, 4, record):
        assert rm.capacity == {"n1": (8, 4096), "n2": (8, 4096)}
    assert rm.capacity == {"n1": (4, 4096), "n2": (4, 4096)} and not record.exists()

    failing = FakeRM({"n1": (4, 4096), "n2": (4, 4096)}, fail_on="n2")
    with pytest.raises(RuntimeError, match="n2"):
        with RaisedVcores(failing, 4, record):
            pass
    assert failing.capacity == {"n1": (4, 4096), "n2": (4, 4096)}


def test_restore_from_the_record_of_a_killed_driver(tmp_path: Path) -> None:
    rm = FakeRM({"n1": (4, 4096)})
    record = tmp_path / "vcores.json"
    RaisedVcores(rm, 2, record).__enter__()           # the driver dies here, never exiting
    assert rm.capacity["n1"] == (6, 4096)
    assert restore(rm, record) == [] and rm.capacity["n1"] == (4, 4096)
    assert restore(rm, record) == []                  # nothing left to do


def resume_failed():
    """Task a suspended for b; b ends, and a's resume fails: its agent does not answer."""
    driver, agent, clock, _ = kairos_driver(slots=1)
    driver.task_started(0, 1, 100, ref("a"))
    clock.t = 3.0
    driver.task_started(0, 1, 101, ref("b"))      # a is suspended
    agent.down = True
    driver.task_finished(1, 101)                  # a gets the slot back, but its agent does not answer
    return driver, agent, clock


def test_a_failed_resume_is_retried_while_the_task_runs() -> None:
    driver, agent, clock = resume_failed()
    assert driver.preemptor.throttled == {ref("a")} and [t.task for t in driver.table.running(0)] == [100]
    clock.t = 4.0
    driver.tick()                                 # retried after retry_s (1 s): still down
    clock.t = 5.5
    driver.tick()
    assert driver.preemptor.throttled == {ref("a")} and len(driver.preemptor.commands) == 3
    agent.down = False                            # the next try waits twice as long: 2 s
    clock.t = 5.9
    driver.tick()
    assert agent.calls == [("suspend", "a")]
    clock.t = 6.0
    driver.tick()
    assert agent.calls == [("suspend", "a"), ("resume", "a")] and driver.preemptor.throttled == set()
    clock.t = 20.0
    driver.tick()
    assert len(agent.calls) == 2                  # once acknowledged, never sent again


def test_restore_drops_unsent_commands_and_resumes_what_is_throttled() -> None:
    driver, agent, _ = resume_failed()            # a's resume waits for its retry
    agent.down = False
    assert driver.restore() == [] and driver.outbox == {}
    assert agent.calls == [("suspend", "a"), ("resume", "a")]


def test_the_run_after_a_killed_one_raises_from_the_recorded_originals(tmp_path: Path) -> None:
    rm = FakeRM({"n1": (4, 4096)})
    record = tmp_path / "vcores.json"
    RaisedVcores(rm, 2, record).__enter__()           # killed with the nodes raised
    with RaisedVcores(rm, 2, record):
        assert rm.capacity["n1"] == (6, 4096)         # not 8: the raised 6 is not taken for the original
    assert rm.capacity["n1"] == (4, 4096) and not record.exists()


def test_a_damaged_record_is_refused_by_name_and_changes_nothing(tmp_path: Path) -> None:
    rm = FakeRM({"n1": (6, 4096)})
    record = tmp_path / "vcores.json"
    record.write_text("{not json")
    with pytest.raises(ValueError, match="vcores record .*vcores.json is unreadable"):
        RaisedVcores(rm, 2, record).__enter__()
    assert rm.capacity["n1"] == (6, 4096) and record.read_text() == "{not json"


def test_failed_commands_are_one_summary_line_not_a_warning_each(caplog: pytest.LogCaptureFixture) -> None:
    agent = FakeAgent()
    preemptor = ContainerPreemptor({NODE: agent})
    preemptor.suspend(ref("a"))
    assert preemptor.failures() == ""
    agent.down = True
    with caplog.at_level(logging.WARNING):
        preemptor.resume(ref("a"))
        preemptor.resume(ref("a"))
    assert caplog.records == []
    assert preemptor.failures() == ("2 of 3 preemption command(s) failed, on nm-1 "
                                    "(last: resume a: AgentUnavailable: agent down)")
