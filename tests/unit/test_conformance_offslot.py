"""Kairos' tasks that end off their slot, the same in the simulator and on the node driver.

Live (``bridge.drivers.node_engine``), a task Kairos keeps idle on a node (queued, or suspended)
runs in a container shrunk to the node agent's minimum share and may end there; the simulator
plays the same with ``offslot_share``. Here a fake Spark on YARN plays each task's work at full
speed in a container at full share and at the share ``R`` in a shrunk one (as the fake agent's
resize commands leave it), on 2 NodeManagers x (N = 1 slot + Q = 1 extra executor), and the
simulator plays the same trace on 2 nodes x 1 slot with zero network delay: every job must end
at the same instant in both, with the same number of tasks ended off their slot (some: the
trace makes Kairos' starvation guard hold short tasks in the node queues).
"""
from __future__ import annotations

import math

import pytest

from bridge.sim.engine import simulate
from policies.framework import registry
from policies.framework.api import ClusterSpec, PolicyEnv
from tests.unit.test_node_engine import YarnSpark, planner
from workloads.model import Job

R = 0.3
PARAMS = {"q": "1", "w": "5"}
TOLERANCE = 1e-6


def trace() -> list[Job]:
    """Two long one-task jobs, then short ones arriving faster than the nodes' slots serve them."""
    jobs = [Job(0, 0.0, (25.0,), 25.0), Job(1, 0.1, (25.0,), 25.0)]
    return jobs + [Job(2 + k, 1.0 + 1.3 * k, (0.6,), 0.6) for k in range(12)]


def simulated(share: float) -> tuple[dict[int, float], int]:
    spec = ClusterSpec(2, 1, network_delay=0.0)
    policy = registry.create("kairos", PolicyEnv(spec, 0), registry.config_for("kairos", PARAMS))
    result = simulate(trace(), policy, spec, offslot_share=share)
    assert not result.unfinished
    return dict(result.log.job_finish), result.log.counters["queued_ends"]


def live(share: float) -> tuple[dict[int, float], int]:
    """Each job is one stage of the fake's one application; its tasks play the job's duration."""
    p, agent, clock = planner("kairos", PARAMS)
    spark = YarnSpark()
    work = {j.job_id: j.durations[0] for j in trace()}
    to_submit = sorted(trace(), key=lambda j: j.submit)
    done: dict[int, float] = {}           # Spark task -> work done
    ended: dict[int, float] = {}          # stage -> when its (one) task ended
    shrunk: set[str] = set()
    calls = 0

    def rate(task: int) -> float:
        return share if spark.container[spark.running[task][1]] in shrunk else 1.0

    def rounds() -> None:
        while spark.step(p):              # launch what is granted; the next round binds it
            pass

    while to_submit or spark.running or any(n for n, _ in spark.pending.values()):
        timer = p.engine.world.kernel.next_time() if p.engine.world is not None else math.inf
        ends = [clock.t + (work[spark.running[t][0]] - done.get(t, 0.0)) / rate(t)
                for t in spark.running if rate(t) > 0]
        now = min([to_submit[0].submit if to_submit else math.inf, timer, *ends])
        assert now < math.inf, "nothing left to happen but work remains: the live run stalled"
        for t in spark.running:
            done[t] = done.get(t, 0.0) + (now - clock.t) * rate(t)
        clock.t = now
        for t in [t for t in spark.running if done[t] >= work[spark.running[t][0]] - TOLERANCE]:
            ended[spark.running[t][0]] = now
            spark.end(t)
        while to_submit and to_submit[0].submit <= now:
            job = to_submit.pop(0)
            spark.pending[job.job_id] = (job.n_tasks, repr(job.estimate))
        rounds()
        p.tick()                          # timers due, then the container commands
        rounds()
        for action, container in agent.calls[calls:]:
            (shrunk.add if action == "suspend" else shrunk.discard)(container)
        calls = len(agent.calls)
    return ended, p.counters["queued_ends"]


@pytest.mark.parametrize("share", [R, 0.0])
def test_kairos_ends_the_same_jobs_at_the_same_instants_in_the_simulator_and_on_the_node_driver(share):
    sim, sim_ends = simulated(share)
    real, real_ends = live(share)
    assert sorted(real) == sorted(sim)
    late = {j: (sim[j], real[j]) for j in sim if abs(sim[j] - real[j]) > TOLERANCE}
    assert not late, f"{len(late)} of {len(sim)} jobs ended at other times (sim, live): {late}"
    assert real_ends == sim_ends and (sim_ends > 0) == (share > 0)
