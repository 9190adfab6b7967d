"""The Ursa family's retry ticks: skipping the ones that cannot place anything changes no
decision, and a backlog that cannot move (or an idle cluster) costs no ticks."""
import random
from dataclasses import replace
from typing import Any

import pytest

from bridge.sim.engine import SimResult, simulate
from policies.framework import registry
from policies.framework.api import ClusterSpec, PolicyEnv
from policies.ursa.policy import UrsaConfig
from workloads.model import Job
from workloads.multires import tpch_shape

VARIANTS = ("ursa", "ursa-per-task", "capacity", "tetris", "tetris2")
SLOT_SPEC = ClusterSpec(4, 1, ("cpu", "mem"), (1.0, 4.0), 0.0005)
DAG_SPEC = ClusterSpec(2, 12, tpch_shape.RESOURCES, (8.0, 4.0, 64.0), 0.0005)


def _run(policy: str, jobs: list[Job], spec: ClusterSpec, **config: Any) -> SimResult:
    return simulate(jobs, registry.create(policy, PolicyEnv(spec, 1), UrsaConfig(**config)), spec)


def _decisions(result: SimResult) -> tuple[object, ...]:
    """Everything the policy decided, as the simulator recorded it: where and when each task ran."""
    log = result.log
    segments = sorted(zip(log.seg_job, log.seg_task, log.seg_node, log.seg_slot, log.seg_start, log.seg_end))
    return result.unfinished, sorted(log.job_finish.items()), segments


def _slot_jobs(n: int, seed: int) -> list[Job]:
    """An overloaded single-slot trace: jobs of 1-6 one-core tasks, 4 GB each, arriving faster
    than four nodes serve them, so backlogs wait between completions."""
    rng = random.Random(seed)
    jobs, t = [], 0.0
    for j in range(n):
        t += rng.expovariate(1.0)
        k = rng.randint(1, 6)
        jobs.append(Job(j, t, tuple(rng.uniform(0.5, 8.0) for _ in range(k)), demands=((1.0, 4.0),) * k))
    return jobs


@pytest.mark.parametrize("policy", VARIANTS)
@pytest.mark.parametrize("order", ["ejf", "srjf"])
def test_skipping_stalled_ticks_changes_no_decision(policy: str, order: str) -> None:
    for jobs, spec in ((_slot_jobs(20, 3), SLOT_SPEC), (tpch_shape.generate(6, 4.0, seed=1), DAG_SPEC)):
        every = _run(policy, jobs, spec, order=order, retry="every-interval")
        skip = _run(policy, jobs, spec, order=order, retry="on-change")
        assert not every.unfinished
        assert _decisions(skip) == _decisions(every)
        assert skip.events < every.events  # ticks were skipped, not merely the same run twice


def _blocked(hold: float, gap: float, retry: str) -> SimResult:
    """One node: job 0's task holds it for ``hold`` s while job 1 waits; job 2 arrives ``gap`` s
    after both are done, on an idle cluster."""
    spec = replace(SLOT_SPEC, n_nodes=1)
    jobs = [Job(0, 0.0, (hold,), demands=((1.0, 4.0),)), Job(1, 1.0, (2.0,), demands=((1.0, 4.0),)),
            Job(2, hold + 2.0 + gap, (1.0,), demands=((1.0, 4.0),))]
    result = _run("capacity", jobs, spec, retry=retry)
    assert not result.unfinished
    return result


def test_a_backlog_that_cannot_move_and_an_idle_cluster_cost_no_ticks() -> None:
    short, long_hold, long_gap = _blocked(10.0, 5.0, "on-change"), _blocked(1000.0, 5.0, "on-change"), \
        _blocked(10.0, 5000.0, "on-change")
    assert short.events == long_hold.events == long_gap.events
    # the reference retries every interval while job 1 waits: about 10 passes per second held
    assert _blocked(1000.0, 5.0, "every-interval").events - _blocked(10.0, 5.0, "every-interval").events > 9000


def test_resuming_finds_the_first_tick_at_or_after_the_change() -> None:
    from policies.ursa.retry import RetryGrid

    rng = random.Random(7)
    for _ in range(2000):
        grid = RetryGrid(rng.choice([0.1, 0.001, 0.37, 10.0]))
        origin = rng.uniform(0, 1e5)
        grid.stall(origin)
        ticks = [origin + k * grid.interval for k in range(1, 200)]
        at = rng.choice([rng.uniform(origin, ticks[-2]), rng.choice(ticks[:-1])])
        assert grid.resume(at) == min(t for t in ticks if t >= at)
        assert grid.is_tick(min(t for t in ticks if t >= at))
