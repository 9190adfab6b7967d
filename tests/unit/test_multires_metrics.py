"""SE/UE, disorders and throughput on a case small enough to compute by hand."""
import pytest

from bridge.sim.measures import mean_queue, measure
from bridge.sim.engine import simulate
from policies.framework import registry
from policies.framework.api import ClusterSpec, PolicyEnv
from workloads.model import Job

SPEC = ClusterSpec(1, 6, ("cpu", "mem"), (6.0, 12.0), 0.0)
CHAIN = [Job(0, 0.0, (1.0, 1.0), demands=((3.0, 6.0), (3.0, 6.0)), parents=((), (0,)))]


def _measure(policy: str):
    return measure(simulate(CHAIN, registry.create(policy, PolicyEnv(SPEC, 1)), SPEC))


def test_dependency_aware_chain_runs_in_order():
    m = _measure("falcon")
    assert (m.makespan, m.disorders, m.preemptions) == (2.0, 0, 0)
    assert m.se == pytest.approx((0.5, 0.5)) and m.ue == pytest.approx((1.0, 1.0))  # 3·1 + 3·1 of 6·2
    assert m.throughput_tasks_per_ms == pytest.approx(2 / 2000)


def test_oblivious_start_is_a_disorder_that_holds_resources_idle():
    # the child starts at 0 beside its parent, waits 1 s, then runs 1 s: X = 3·1 + 3·2, Z = 3 + 3
    m = _measure("natjam")
    assert (m.makespan, m.disorders) == (2.0, 1)
    assert m.se == pytest.approx((9 / 12, 18 / 24)) and m.ue == pytest.approx((6 / 9, 12 / 18))
    assert m.avg_utilization == pytest.approx(0.5) and m.avg_allocation == pytest.approx(0.75)


def test_mean_queue_counts_waiting_time_in_window():
    jobs = [Job(0, 0.0, (2.0,), demands=((1.0,),)), Job(1, 0.0, (2.0,), demands=((1.0,),))]
    spec = ClusterSpec(1, 4, ("size",), (1.0,), 0.0)
    result = simulate(jobs, registry.create("bf-js", PolicyEnv(spec, 1)), spec)
    assert mean_queue(result, 0.0, 4.0) == pytest.approx(2.0 / 4.0)  # the second job waits 2 slots
