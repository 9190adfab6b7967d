"""Hawk's and Eagle's choices taken from the authors' simulator where the thesis is silent (issue 19):
LWL takes idle nodes first, estimates are the trace mean truncated to whole seconds, a steal
victim may be the thief itself; and Eagle's scheduler-side SSS rounds as an option. Each test
also runs the earlier reading (the config field turned off) to show the behaviour differs."""
from __future__ import annotations

import random

import pytest

from bridge.sim.engine import simulate
from policies.framework.api import (
    ClusterSpec, Give, JobArrival, PolicyEnv, Probe, ProbeArrival, ProbeInfo, RunningTask, Steal, StealAttempt,
)
from policies.common.lwl import LwlTable, trace_estimate
from policies.common.stealing import pick_victims
from policies.eagle.eagle import Eagle, EagleConfig, Snapshot
from policies.eagle.hawk import Hawk, HawkConfig
from policies.framework.registry import ConfigError, config_for
from tests.unit.thesis_fakes import FakeView, env
from workloads.model import Job


def _overrun_table(idle_first: bool) -> LwlTable:
    """Three nodes, each given one task of estimate 100 at t=0; at t=500 node 0 still runs its
    task (an overrun) while nodes 1 and 2 finished theirs at t=150."""
    t = LwlTable(3, range(3), idle_first)
    assert [t.place(0.0, 100.0) for _ in range(3)] == [0, 1, 2]
    for node in range(3):
        t.started(node, (0, node), 0.0, 100.0)
    t.finished(1, (0, 1), 150.0)
    t.finished(2, (0, 2), 150.0)
    return t


def test_lwl_takes_idle_nodes_lowest_id_first_not_an_overrunning_one() -> None:
    t = _overrun_table(idle_first=True)
    assert t.work_left(0, 500.0) == 0.0 and t.has_work(0)    # nothing left by the estimate, still busy
    assert [t.place(500.0, 100.0) for _ in range(3)] == [1, 2, 0]
    # the earlier reading: zero estimated work left is enough, and node 0's key is the oldest
    assert _overrun_table(idle_first=False).place(500.0, 100.0) == 0


def test_lwl_overrunning_nodes_go_lowest_id_first() -> None:
    """No idle node left: among nodes with nothing left by the estimate, the lowest id first (the
    reference's tie), not the one whose estimated end is oldest."""
    t = LwlTable(3, range(3))
    assert [t.place(0.0, 100.0) for _ in range(3)] == [0, 1, 2]
    t.started(2, (0, 2), 0.0, 100.0)                 # estimated end 100
    t.started(0, (0, 0), 50.0, 100.0)                # estimated end 150
    t.started(1, (0, 1), 60.0, 100.0)                # estimated end 160
    assert [t.place(500.0, 100.0) for _ in range(3)] == [0, 1, 2]
    old = LwlTable(3, range(3), idle_first=False)
    assert [old.place(0.0, 100.0) for _ in range(3)] == [0, 1, 2]
    for node, start in ((2, 0.0), (0, 50.0), (1, 60.0)):
        old.started(node, (0, node), start, 100.0)
    assert old.place(500.0, 100.0) == 2              # the earlier reading: oldest estimated end


def _overrunning(ties: str, estimates: tuple[float, ...]) -> LwlTable:
    """One node per estimate, each running one task of that estimate since t=0 (all overrun at
    t=10,000), under the reference's 1 ms round trip."""
    n = len(estimates)
    t = LwlTable(n, range(n), ties=ties, two_delays=0.001)
    for node, est in enumerate(estimates):
        assert t.place(0.0, est) == node
        t.started(node, (node, 0), 0.0, est)
    return t


def test_lwl_overrunning_nodes_in_the_reference_order() -> None:
    """The authors' key ``2d + est - est`` rounds by the estimate's magnitude: 256-2047 s lowest,
    then 64-255 s, then 2048 s and over; equal keys by node id."""
    estimates = (3732.0, 697.0, 150.0, 2048.0, 1000.0)
    keys = [(0.001 + e) - e for e in estimates]
    assert len(set(keys)) == 3                         # the rounding differs by magnitude
    want = sorted(range(len(estimates)), key=lambda n: (keys[n], n))
    assert want == [1, 4, 2, 0, 3]
    t = _overrunning("reference", estimates)
    assert [t.place(10_000.0, 100.0) for _ in estimates] == want
    t = _overrunning("least_estimate", estimates)
    assert [t.place(10_000.0, 100.0) for _ in estimates] == [2, 1, 4, 3, 0]
    t = _overrunning("id", estimates)
    assert [t.place(10_000.0, 100.0) for _ in estimates] == [0, 1, 2, 3, 4]


def test_lwl_ties_leave_real_differences_alone() -> None:
    """The tie rule orders only nodes with nothing left: a node with work left comes after them."""
    t = _overrunning("reference", (150.0, 5000.0, 700.0))
    t.started(2, (2, 1), 9_990.0, 700.0)            # node 2 starts a new task: 690 s left at 10,000
    assert t.work_left(2, 10_000.0) == pytest.approx(690.0)
    # the node overrunning a 5,000 s task comes last among overruns, but before node 2's 690 s
    assert [t.place(10_000.0, 100.0) for _ in range(2)] == [0, 1]
    with pytest.raises(ValueError, match="ties"):
        LwlTable(1, range(1), ties="random")
    with pytest.raises(ConfigError, match="lwl_ties"):
        config_for("hawk", {"lwl_ties": "random"})


def test_lwl_idle_node_is_taken_again_once_its_work_is_done() -> None:
    t = LwlTable(4, range(2, 4))
    assert t.place(0.0, 5.0) == 2
    t.started(2, (0, 0), 0.0, 5.0)
    assert t.place(1.0, 5.0) == 3
    t.finished(2, (0, 0), 9.0)                                # ran past its estimate, now idle
    assert t.place(9.0, 5.0) == 2


def test_lwl_zero_length_task_reported_finished_before_started_leaves_the_node_idle() -> None:
    t = LwlTable(2, range(2))
    assert t.place(0.0, 50.0) == 0
    t.finished(0, (7, 0), 1.0)          # a 0 s task: its end arrives before its start
    t.started(0, (7, 0), 1.0, 50.0)
    assert not t.has_work(0) and t.place(2.0, 50.0) == 0


def test_hawk_zero_length_long_task_does_not_block_its_node() -> None:
    spec = ClusterSpec(2, 1)
    jobs = [Job(0, 0.0, (0.0,), 100.0), Job(1, 10.0, (100.0,), 100.0), Job(2, 10.0, (100.0,), 100.0)]
    policy = Hawk(HawkConfig(cutoff=10.0, big_partition=100.0, stealing=False), PolicyEnv(spec, 1))
    result = simulate(jobs, policy, spec)
    assert result.unfinished == [] and policy.lwl is not None
    assert [result.log.job_finish[1], result.log.job_finish[2]] == pytest.approx([110.001, 110.001], abs=0.01)
    assert not any(policy.lwl.has_work(n) for n in range(2))


def _hawk_overrun_jct(idle_first: bool) -> float:
    """A long job whose first task overruns its estimate tenfold, then a one-task long job: does it
    queue behind the overrun on node 0 while nodes 1 and 2 are empty?"""
    spec = ClusterSpec(3, 1)
    jobs = [Job(0, 0.0, (1000.0, 150.0, 150.0), 100.0), Job(1, 500.0, (100.0,), 100.0)]
    config = HawkConfig(cutoff=10.0, big_partition=100.0, stealing=False, lwl_idle_first=idle_first)
    result = simulate(jobs, Hawk(config, PolicyEnv(spec, 1)), spec)
    assert result.unfinished == []
    return result.log.job_finish[1] - 500.0


def test_hawk_long_task_goes_to_an_empty_node_not_behind_an_overrun() -> None:
    assert _hawk_overrun_jct(idle_first=True) == pytest.approx(100.0, abs=0.01)
    assert _hawk_overrun_jct(idle_first=False) == pytest.approx(600.0, abs=0.01)


def test_estimate_is_the_truncated_trace_mean() -> None:
    assert trace_estimate(90.9, truncate=True) == 90.0 and trace_estimate(90.9, truncate=False) == 90.9
    # mean 90.9 > cutoff 90.5811 is long as written, short once truncated (two jobs of the
    # 24,262-job Yahoo-like trace change class this way)
    job = Job(0, 0.0, (90.9,) * 3, 90.9)
    for truncate, long in ((True, False), (False, True)):
        hawk = Hawk(HawkConfig(integer_estimates=truncate), env(100))
        view = FakeView(ClusterSpec(100))
        view.jobs[0] = job
        (probe,) = hawk.on_job_arrival(_arrival(job), view)
        assert probe.probe.long is long and probe.probe.est == (90.0 if truncate else 90.9)
        eagle = Eagle(EagleConfig(integer_estimates=truncate), env(100))
        probes = eagle.on_job_arrival(_arrival(job), view)
        assert all(p.probe.long is long for p in probes)


def _arrival(job: Job) -> JobArrival:
    return JobArrival(job.submit, job)


def test_steal_victim_may_be_the_thief_itself() -> None:
    drawn = pick_victims(random.Random(3).random, 200, 0, 4, thief=2, allow_thief=True)
    assert 2 in drawn and len(drawn) == 200
    assert 2 not in pick_victims(random.Random(3).random, 200, 0, 4, thief=2)
    assert pick_victims(random.Random(3).random, 2, 0, 1, thief=0, allow_thief=True) == (0, 0)
    spec = ClusterSpec(4)
    for steal_self, hits in ((True, True), (False, False)):
        hawk = Hawk(HawkConfig(big_partition=50.0, steal_self=steal_self), PolicyEnv(spec, 1))
        asked = [v for _ in range(50) for d in hawk.after_idle(3, 0, FakeView(spec)) if isinstance(d, Steal)
                 for v in d.victims]
        assert (3 in asked) is hits and set(asked) <= {2, 3}
    # the thief asking itself gets nothing, even with entries queued there since it asked
    busy = FakeView(spec, run={3: [RunningTask(0, 9, 0, 0.0, 0.0, ProbeInfo(9))]})
    long, short = ProbeInfo(1, est=1000.0, long=True), ProbeInfo(2, est=1.0)
    for p in (long, short):
        hawk.on_probe_arrival(ProbeArrival(0.5, 3, p), busy)
    assert hawk.on_steal_attempt(StealAttempt(1.0, 3, (3,)), busy) == ()
    assert hawk.on_steal_attempt(StealAttempt(1.0, 2, (3,)), busy) == (Give(3, 2, (short,)),)


def _eagle_at_scheduler(n: int, **config: object) -> tuple[Eagle, FakeView]:
    e = env(n)
    return Eagle(EagleConfig(**{"cutoff": 10.0, "reject_at": "scheduler", **config}), e), FakeView(e.cluster)


def test_eagle_scheduler_side_rounds_skip_nodes_holding_long_work() -> None:
    policy, view = _eagle_at_scheduler(10, big_partition=50.0, min_probes=10, probe_ratio=1.0)
    long_job = Job(0, 0.0, (20.0,) * 5)
    view.jobs[0] = long_job
    long_probes = list(policy.on_job_arrival(_arrival(long_job), view))
    for p in long_probes:                                   # the long tasks reach nodes 5..9 and queue
        node = p.nodes[0]
        view.run[node] = [RunningTask(0, 9, 0, 0.0, 0.0)]
        policy.on_probe_arrival(_probe_arrival(node, p), view)
    short = Job(1, 0.0, (1.0,) * 3)
    view.jobs[1] = short
    out = list(policy.on_job_arrival(_arrival(short), view))
    assert all(isinstance(d, Probe) for d in out)
    nodes = [n for d in out for n in d.nodes]
    assert len(nodes) == 10 and all(n < 5 for n in nodes)   # every refused probe re-drawn among 0..4
        # the node accepts whatever arrives: the decision was the scheduler's
    assert policy.on_probe_arrival(_probe_arrival(7, out[0]), view) == ()


def test_eagle_scheduler_side_rounds_fall_back_to_the_short_partition() -> None:
    policy, view = _eagle_at_scheduler(10, big_partition=80.0, min_probes=4, probe_ratio=1.0, rounds=1)
    for node in range(10):
        policy.nodes.long_here[node] = int(node >= 2)
        policy.nodes.snapshot[node] = Snapshot(bits=0b1111111100, ts=1) if node >= 2 else None
    short = Job(1, 0.0, (1.0,))
    view.jobs[1] = short
    out = list(policy.on_job_arrival(_arrival(short), view))
    fallback = [d for d in out if d.probe.round == 1]
    assert fallback and all(n in (0, 1) for d in fallback for n in d.nodes)
    assert sum(len(d.nodes) for d in out) == 4


def test_eagle_reject_at_is_checked() -> None:
    with pytest.raises(ConfigError):
        config_for("eagle", ["reject_at=nowhere"])
    assert config_for("eagle", ["reject_at=scheduler"]).reject_at == "scheduler"


def _probe_arrival(node: int, probe: Probe) -> ProbeArrival:
    return ProbeArrival(0.001, node, probe.probe)
