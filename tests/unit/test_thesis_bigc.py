"""Big-C on a hand-checked scenario: short tasks preempt long ones, never short ones."""
from __future__ import annotations

import pytest

from bridge.sim.engine import simulate
from policies.framework.api import (
    Assign, ClusterSpec, JobArrival, PolicyEnv, Resume, RunningTask, Suspend, TaskFinished, TaskStarted,
)
from policies.kairos.bigc import BigC, BigCConfig
from policies.framework.registry import config_for
from tests.unit.thesis_fakes import FakeView, env
from workloads.model import Job


def test_short_preempts_long_then_long_resumes_after_shorts() -> None:
    e = env(1)
    policy, view = BigC(BigCConfig(cutoff=10.0, short_share=1.0), e), FakeView(e.cluster)
    long_job, short_a, short_b = Job(0, 0.0, (100.0,)), Job(1, 1.0, (1.0,)), Job(2, 2.0, (1.0,))
    view.jobs.update({0: long_job, 1: short_a, 2: short_b})
    (assign,) = policy.on_job_arrival(JobArrival(0.0, long_job), view)
    assert assign.node == 0 and assign.probe.long
    policy.on_task_started(TaskStarted(0.001, 0, 0, 0, 0), view)
    view.run[0] = [RunningTask(0, 0, 0, 0.0, 0.0)]
    out = policy.on_job_arrival(JobArrival(1.0, short_a), view)
    assert out[0] == Suspend(0, 0) and isinstance(out[1], Assign) and out[1].probe.job_id == 1
    view.run[0] = [RunningTask(0, 1, 0, 1.0, 0.0)]
    view.susp[0] = [RunningTask(-1, 0, 0, 0.0, 1.0)]
    assert policy.on_job_arrival(JobArrival(2.0, short_b), view) == []   # no short-on-short preemption
    view.run[0] = []
    out = policy.on_task_finished(TaskFinished(2.5, 0, 0, 1, 0, 2.5), view)
    assert [d.probe.job_id for d in out] == [2]                          # the waiting short goes first
    out = policy.on_task_finished(TaskFinished(3.5, 0, 0, 2, 0, 3.5), view)
    assert out == [Resume(0, 0, 0, 0)]


def test_long_class_keeps_its_guaranteed_share() -> None:
    e = env(20)
    policy, view = BigC(BigCConfig(cutoff=10.0, short_share=0.9), e), FakeView(e.cluster)
    long_job = Job(0, 0.0, (100.0,) * 20)
    view.jobs[0] = long_job
    policy.on_job_arrival(JobArrival(0.0, long_job), view)
    for node in range(20):
        policy.on_task_started(TaskStarted(0.001, node, 0, 0, node), view)
        view.run[node] = [RunningTask(0, 0, node, 0.0, 0.0)]
    short = Job(1, 1.0, (1.0,) * 30)
    view.jobs[1] = short
    out = policy.on_job_arrival(JobArrival(1.0, short), view)
    assert sum(isinstance(d, Suspend) for d in out) == 18                # 10% of 20 slots stay long


def test_config_validation_and_simulated_run() -> None:
    with pytest.raises(ValueError):
        BigCConfig(short_share=1.5)
    assert config_for("bigc", ["short_share=0.7"]).short_share == 0.7
    jobs = [Job(i, i * 2.0, (300.0,) * 3 if i % 4 == 0 else (5.0, 7.0)) for i in range(30)]
    spec = ClusterSpec(2, 2)
    result = simulate(jobs, BigC(BigCConfig(cutoff=100.0), PolicyEnv(spec, 1)), spec)
    assert result.unfinished == []
    assert result.log.counters["suspends"] == result.log.counters["resumes"] > 0
