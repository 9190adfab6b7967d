"""Bad multi-resource/DAG input gets an error naming the job and the task."""
import json
from dataclasses import replace

import pytest

from bridge.sim.engine import Simulation
from policies.framework import registry
from policies.framework.api import ClusterSpec, PolicyEnv
from workloads.model import Job, WorkloadError
from workloads.trace import TraceError, read_trace

SPEC = ClusterSpec(2, 6, ("cpu", "mem"), (6.0, 12.0), 0.0)


def _sim(job: Job) -> Simulation:
    return Simulation([job], registry.create("falcon", PolicyEnv(SPEC, 1)), SPEC)


def test_cyclic_dag_in_jsonl_names_file_line_job_and_task(tmp_path):
    path = tmp_path / "jobs.jsonl"
    lines = [{"submit": 0, "durations": [1, 1], "parents": [[], []]},
             {"id": 7, "submit": 1, "durations": [1, 1, 1], "parents": [[], [2], [1]]}]
    path.write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    with pytest.raises(TraceError, match=r"jobs.jsonl:2: .*job 7: task dependencies contain a cycle through task [12]"):
        read_trace(path)


def test_demand_vector_of_wrong_length_names_job_and_task():
    job = Job(4, 0.0, (1.0, 1.0), demands=((1.0,), (2.0,)))
    with pytest.raises(WorkloadError, match=r"job 4 task 0: demand \(1.0,\) has 1 entries, but the cluster has 2"):
        _sim(job)


def test_task_larger_than_every_server_names_job_and_task():
    job = Job(5, 0.0, (1.0, 1.0), demands=((1.0, 1.0), (2.0, 13.0)))
    with pytest.raises(WorkloadError, match=r"job 5 task 1: demand is larger than every server \(mem=13 > 12\)"):
        _sim(job)


def test_generated_dag_workloads_round_trip_through_jsonl(tmp_path):
    from workloads.multires import dag_jobs, staircase
    from workloads.multires.jsonl import write_jsonl

    jobs = dag_jobs.generate(dag_jobs.DagSpec(3, 5.0), seed=2) + [
        replace(j, job_id=10 + j.job_id, submit=1.0) for j in staircase.generate(2, 2, stages=1)]
    path = tmp_path / "w.jsonl"
    write_jsonl(path, jobs)
    back = read_trace(path)
    fields = ("job_id", "submit", "durations", "demands", "parents", "stage_of", "stage_parents", "name")
    assert [tuple(getattr(j, f) for f in fields) for j in back] == [tuple(getattr(j, f) for f in fields) for j in jobs]
