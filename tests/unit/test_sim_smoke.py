"""Smoke tests of the step-1 contract: trace -> registry -> simulator with FIFO."""
from __future__ import annotations

import pytest

from bridge.sim.engine import simulate
from policies.framework.api import ClusterSpec, PolicyEnv
from policies.framework.registry import create
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


def test_a_job_that_waits_for_others_arrives_when_the_last_ends_plus_its_gap():
    spec = ClusterSpec(1, network_delay=0.0)
    jobs = [Job(1, 0.0, (2.0,)), Job(2, 0.0, (3.0,), after=(1, 3), after_gap=0.5), Job(3, 1.0, (1.0,)),
            Job(4, 9.0, (1.0,), after=(1,))]
    r = simulate(jobs, _fifo(spec), spec)
    assert r.unfinished == []
    # 1 runs 0-2, 3 (arrived at 1) 2-3; 2 arrives 3.5 and runs to 6.5; 4 waited for 1 but not before its submit
    assert r.log.job_finish == pytest.approx({1: 2.0, 3: 3.0, 2: 6.5, 4: 10.0})
    assert r.job_table().set_index("job_id")["submit"].to_dict() == {1: 0.0, 2: 3.5, 3: 1.0, 4: 9.0}


@pytest.mark.parametrize("jobs, message", [
    ([Job(1, 0.0, (1.0,), after=(7,))], r"job 1 waits for unknown job\(s\) \[7\]"),
    ([Job(1, 0.0, (1.0,), after=(2,)), Job(2, 0.0, (1.0,), after=(1,))], "jobs wait for each other in a cycle"),
])
def test_waits_on_unknown_jobs_or_in_a_cycle_are_refused(jobs, message):
    spec = ClusterSpec(1)
    with pytest.raises(ValueError, match=message):
        simulate(jobs, _fifo(spec), spec)


@pytest.mark.parametrize("kw, message", [({"after": (1,)}, "cannot wait for itself"),
                                         ({"after_gap": -1.0}, "after_gap must be finite and >= 0")])
def test_a_bad_wait_is_a_workload_error(kw, message):
    with pytest.raises(ValueError, match=message):
        Job(1, 0.0, (1.0,), **kw)
