"""Smoke tests of the step-1 contract: trace -> registry -> simulator with FIFO."""
from __future__ import annotations

import pytest

from bridge.sim.engine import simulate
from policies.api import ClusterSpec, PolicyEnv
from policies.registry import create
from workloads.model import Job
from workloads.trace import TraceError, read_trace


def _fifo(spec: ClusterSpec):
    return create("fifo", PolicyEnv(spec, seed=1))


def test_fifo_runs_thesis_example(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("0 3 20 10 20 30\n1 2 5 5 5\n1 1 100 100\n")
    jobs = read_trace(p)
    assert [j.n_tasks for j in jobs] == [3, 2, 1]
    assert jobs[0].estimate == 20
    spec = ClusterSpec(2)
    r = simulate(jobs, _fifo(spec), spec)
    assert r.unfinished == []
    d = 0.0005
    # job 0: tasks 0,1 start at d; task 2 waits for node 0 (free at 10+d, RM learns at 10+2d)
    assert r.log.job_finish[0] == pytest.approx(10 + 3 * d + 30)
    assert r.log.job_finish[2] == pytest.approx(130 + 7 * d)
    assert sorted(r.log.seg_done) == [1] * 6


def test_fifo_dag_respects_parents():
    spec = ClusterSpec(4)
    job = Job(0, 0.0, (1.0, 2.0, 3.0), parents=((), (0,), (0, 1)))
    r = simulate([job], _fifo(spec), spec)
    starts = dict(zip(r.log.seg_task, r.log.seg_start))
    ends = dict(zip(r.log.seg_task, r.log.seg_end))
    assert starts[1] >= ends[0] and starts[2] >= ends[1]
    assert r.unfinished == []


def test_same_seed_same_log(tmp_path):
    jobs = [Job(i, i * 0.5, tuple(float(1 + (i * k) % 7) for k in range(1, 4))) for i in range(20)]
    spec = ClusterSpec(3, slots_per_node=2)

    def run():
        r = simulate(jobs, _fifo(spec), spec, record=True)
        return [repr(x) for x in r.log.records]

    assert run() == run()


def test_malformed_trace_names_file_line_field(tmp_path):
    p = tmp_path / "bad.txt"
    p.write_text("0 2 5 5 5\n3 2 5 5 x\n")
    with pytest.raises(TraceError) as e:
        read_trace(p)
    assert "bad.txt:2" in str(e.value) and "d2" in str(e.value)
