"""Invariants of Eagle, Kairos and Big-C on random small traces (hypothesis)."""
from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.sim.engine import SimResult, simulate
from policies.framework.api import ClusterSpec, PolicyEnv
from policies.framework.registry import config_for, create
from workloads.model import Job

POLICIES = {
    "eagle": ("cutoff=10", "big_partition=75", "min_probes=3"),
    "kairos": ("q=2", "w=2"),
    "bigc": ("cutoff=10", "short_share=0.75"),
}

durations = st.lists(st.floats(0.1, 40.0, allow_nan=False), min_size=1, max_size=5)
traces = st.lists(st.tuples(st.floats(0.0, 5.0, allow_nan=False), durations), min_size=1, max_size=12)


def _jobs(raw: list[tuple[float, list[float]]]) -> list[Job]:
    submit, jobs = 0.0, []
    for i, (gap, ds) in enumerate(raw):
        submit += gap
        jobs.append(Job(i, submit, tuple(ds)))
    return jobs


def _run(name: str, jobs: list[Job], spec: ClusterSpec, seed: int) -> SimResult:
    policy = create(name, PolicyEnv(spec, seed), config_for(name, POLICIES[name]))
    return simulate(jobs, policy, spec)


@pytest.mark.parametrize("name", sorted(POLICIES))
@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(raw=traces, nodes=st.integers(1, 4), slots=st.integers(1, 2), seed=st.integers(0, 9))
def test_every_task_runs_once_without_overlap_and_reproducibly(name: str, raw: list, nodes: int,
                                                               slots: int, seed: int) -> None:
    jobs = _jobs(raw)
    spec = ClusterSpec(nodes, slots)
    result = _run(name, jobs, spec, seed)
    log = result.log
    assert result.unfinished == []
    done = Counter((j, t) for j, t, d in zip(log.seg_job, log.seg_task, log.seg_done) if d)
    assert done == Counter((j.job_id, t) for j in jobs for t in range(j.n_tasks))
    by_slot: dict[tuple[int, int], list[tuple[float, float]]] = {}
    for node, slot, start, end in zip(log.seg_node, log.seg_slot, log.seg_start, log.seg_end):
        assert end >= start
        by_slot.setdefault((node, slot), []).append((start, end))
    for segments in by_slot.values():
        segments.sort()
        assert all(a[1] <= b[0] + 1e-9 for a, b in zip(segments, segments[1:]))
    for job in jobs:
        assert log.job_finish[job.job_id] >= job.submit + max(job.durations) - 1e-9
    assert _run(name, jobs, spec, seed).log.job_finish == log.job_finish
