"""Conformance: every registered policy on random small traces (hypothesis).

Invariants: every task of every job runs to completion exactly once; no slot runs two tasks at
the same time; a task's productive run time equals its duration; time never goes backwards;
the same seed gives the same decision log, byte for byte."""
from __future__ import annotations

from collections import Counter, defaultdict

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.sim.engine import SimResult, Simulation
from policies.framework.api import ClusterSpec, PolicyEnv
from policies.framework.registry import default_registry
from workloads.model import Job

NAMES = default_registry().names()

durations = st.lists(st.floats(0.0, 40.0).map(lambda x: round(x, 3)), min_size=1, max_size=6)
traces = st.lists(st.tuples(st.floats(0.0, 8.0).map(lambda x: round(x, 3)), durations, st.floats(0.05, 0.5)),
                  min_size=1, max_size=10)


def _jobs(raw) -> list[Job]:
    submit, jobs = 0.0, []
    for i, (gap, ds, share) in enumerate(raw):
        submit += gap
        jobs.append(Job(i, submit, tuple(ds), demands=tuple((1.0, share * 8.0) for _ in ds)))
    return jobs


def _spec(nodes: int, slots: int) -> ClusterSpec:
    # a capacity vector for the multi-resource policies; every demand fits a free slot
    return ClusterSpec(nodes, slots_per_node=slots, resources=("cpu", "mem"), capacity=(float(slots), 8.0 * slots))


def _run(name: str, jobs: list[Job], spec: ClusterSpec, seed: int) -> tuple[SimResult, list[str]]:
    reg = default_registry()
    policy = reg.create(name, PolicyEnv(spec, seed))
    result = Simulation(jobs, policy, spec, record=True).run()
    return result, [repr(r) for r in result.log.records or ()]


def check_invariants(result: SimResult, jobs: list[Job]) -> None:
    lg = result.log
    assert result.unfinished == [], f"jobs never finished: {result.unfinished}"
    done = Counter()
    productive: dict[tuple[int, int], float] = defaultdict(float)
    by_slot: dict[tuple[int, int], list[tuple[float, float]]] = defaultdict(list)
    for j, t, n, s, a, b, ok, idle in zip(lg.seg_job, lg.seg_task, lg.seg_node, lg.seg_slot, lg.seg_start,
                                         lg.seg_end, lg.seg_done, lg.seg_idle):
        assert b >= a
        by_slot[(n, s)].append((a, b))
        productive[(j, t)] += b - a - idle
        if ok:
            done[(j, t)] += 1
    expected = {(j.job_id, t) for j in jobs if j.job_id not in lg.rejected_jobs for t in range(j.n_tasks)}
    assert set(done) == expected
    assert all(c == 1 for c in done.values())
    for j in jobs:
        for t, d in enumerate(j.durations):
            if (j.job_id, t) in expected:
                assert productive[(j.job_id, t)] == pytest.approx(d, abs=1e-6)
    for segs in by_slot.values():
        segs.sort()
        for (_, b0), (a1, _) in zip(segs, segs[1:]):
            assert a1 >= b0 - 1e-9, "a slot ran two tasks at once"
    times = [rec[0].time for rec in lg.records or ()]
    assert all(x <= y for x, y in zip(times, times[1:])), "time went backwards"
    for j in jobs:
        if j.job_id in lg.job_finish:
            assert lg.job_finish[j.job_id] >= j.submit


@pytest.mark.parametrize("name", NAMES)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=traces, nodes=st.integers(2, 5), slots=st.integers(1, 2), seed=st.integers(0, 5))
def test_policy_invariants_and_determinism(name, raw, nodes, slots, seed):
    jobs = _jobs(raw)
    spec = _spec(nodes, slots)
    first, log1 = _run(name, jobs, spec, seed)
    check_invariants(first, jobs)
    _, log2 = _run(name, jobs, spec, seed)
    assert log1 == log2, "same seed, different decision log"


CORE_DAG = ("fifo", "fair", "sparrow", "hawk", "lwl", "dlwl")
dag_jobs = st.lists(
    st.tuples(st.floats(0.0, 5.0).map(lambda x: round(x, 3)),
              st.lists(st.tuples(st.floats(0.0, 10.0).map(lambda x: round(x, 3)),
                                 st.lists(st.integers(0, 10), max_size=3)), min_size=1, max_size=6)),
    min_size=1, max_size=6)


@pytest.mark.parametrize("name", CORE_DAG)
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=dag_jobs, nodes=st.integers(1, 4), seed=st.integers(0, 5))
def test_core_policies_run_dags_in_order(name, raw, nodes, seed):
    """Task i may depend on earlier tasks only (so the DAG is acyclic); parents finish first."""
    submit, jobs = 0.0, []
    for i, (gap, tasks) in enumerate(raw):
        submit += gap
        parents = tuple(tuple(sorted({p % t for p in ps})) if t else () for t, (_, ps) in enumerate(tasks))
        jobs.append(Job(i, submit, tuple(d for d, _ in tasks), parents=parents))
    spec = ClusterSpec(nodes)
    result, _ = _run(name, jobs, spec, seed)
    assert result.unfinished == []
    lg = result.log
    start = {(j, t): s for j, t, s in zip(lg.seg_job, lg.seg_task, lg.seg_start)}
    end = {(j, t): e for j, t, e, ok in zip(lg.seg_job, lg.seg_task, lg.seg_end, lg.seg_done) if ok}
    for job in jobs:
        for t, ps in enumerate(job.parents or ()):
            for p in ps:
                assert start[(job.job_id, t)] >= end[(job.job_id, p)]
