"""Engine invariants extended to resource vectors and DAGs, for every multi-resource policy:
no server ever exceeds any capacity, and a task never starts before its parents finish
unless the policy allows it (``early_start``) and the engine counted the disorder."""
from collections import defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.sim.engine import simulate
from policies.framework import registry
from policies.framework.api import ClusterSpec, PolicyEnv
from workloads.model import Job

CAPACITY = (6.0, 12.0)
POLICIES = ("falcon", "natjam", "amoeba", "srpt-preempt", "snb", "bf-js", "vqs", "vqs-bf", "fifo-ff",
            "ursa", "ursa-per-task", "capacity", "tetris", "tetris2")


@st.composite
def dag_job(draw, job_id: int, submit: float) -> Job:
    n = draw(st.integers(1, 6))
    parents = tuple(tuple(sorted(draw(st.sets(st.integers(0, i - 1), max_size=2)))) if i else ()
                    for i in range(n))
    demands = tuple((draw(st.sampled_from([0.5, 1.0, 2.0, 3.0])), draw(st.sampled_from([0.5, 2.0, 6.0, 12.0])))
                    for _ in range(n))
    durations = tuple(draw(st.sampled_from([0.05, 0.1, 0.3, 1.0])) for _ in range(n))
    return Job(job_id, submit, durations, demands=demands, parents=parents)


@st.composite
def workload(draw) -> list[Job]:
    gaps = draw(st.lists(st.sampled_from([0.0, 0.05, 0.2]), min_size=1, max_size=4))
    submits = [sum(gaps[:i + 1]) for i in range(len(gaps))]
    return [draw(dag_job(j, t)) for j, t in enumerate(submits)]


def _check_capacity(result) -> None:
    jobs = {j.job_id: j for j in result.jobs}
    per_node = defaultdict(list)
    lg = result.log
    for j, t, n, s, e in zip(lg.seg_job, lg.seg_task, lg.seg_node, lg.seg_start, lg.seg_end):
        d = jobs[j].demands[t]
        per_node[n] += [(e, 0, [-x for x in d]), (s, 1, list(d))]  # ends before starts at a tie
    for events in per_node.values():
        used = [0.0, 0.0]
        for _, _, delta in sorted(events, key=lambda ev: (ev[0], ev[1])):
            used = [u + x for u, x in zip(used, delta)]
            assert all(u <= c + 1e-9 for u, c in zip(used, CAPACITY)), used


def _early_starts(result, strict: bool = True) -> int:
    """Tasks whose first start precedes a parent's finish (``strict=False``: or coincides
    with it, when the start was handled first within that instant)."""
    lg = result.log
    first, done = {}, {}
    for j, t, s, e, ok in zip(lg.seg_job, lg.seg_task, lg.seg_start, lg.seg_end, lg.seg_done):
        first[(j, t)] = min(s, first.get((j, t), s))
        if ok:
            done[(j, t)] = e
    return sum(1 for job in result.jobs for t, ps in enumerate(job.parents)
               if any(first[(job.job_id, t)] < done[(job.job_id, p)] or
                      (not strict and first[(job.job_id, t)] == done[(job.job_id, p)]) for p in ps))


@pytest.mark.parametrize("policy", POLICIES)
@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(jobs=workload(), nodes=st.integers(1, 3))
def test_vector_capacity_and_precedence(policy, jobs, nodes):
    spec = ClusterSpec(nodes, 6, ("cpu", "mem"), CAPACITY, 0.0005)
    pol = registry.create(policy, PolicyEnv(spec, 3))
    result = simulate(jobs, pol, spec, switch_cost=0.001)
    assert not result.unfinished
    _check_capacity(result)
    early = _early_starts(result)
    if getattr(pol, "early_start", False):
        assert early <= result.log.counters["disorders"] <= _early_starts(result, strict=False)
    else:
        assert early == 0 and result.log.counters["disorders"] == 0


@pytest.mark.parametrize("policy", POLICIES)
def test_ready_task_not_starved_by_same_step_early_starts(policy):
    """Regression (natjam): a worker early-started a not-ready task in the same step as its
    liveness guard suspended the older stuck ones; the new stuck task kept the ready task
    (the whole memory) out and no event was left to revisit the worker, so job 1 never ended."""
    jobs = [Job(0, 0.0, (0.05,), demands=((0.5, 0.5),), parents=((),)),
            Job(1, 0.0, (0.05,) * 6,
                demands=((0.5, 6.0), (0.5, 12.0), (0.5, 0.5), (0.5, 0.5), (0.5, 6.0), (0.5, 6.0)),
                parents=((), (0,), (0, 1), (0, 1), (0, 1), (0, 1)))]
    spec = ClusterSpec(1, 6, ("cpu", "mem"), CAPACITY, 0.0005)
    result = simulate(jobs, registry.create(policy, PolicyEnv(spec, 3)), spec, switch_cost=0.001)
    assert not result.unfinished
    lg = result.log
    finished = [(j, t) for j, t, ok in zip(lg.seg_job, lg.seg_task, lg.seg_done) if ok]
    assert sorted(finished) == [(0, 0)] + [(1, t) for t in range(6)]
    _check_capacity(result)
