"""Declared task demands: the workload file's `demand` key, its checks, and what carries it on."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from workloads.demands import DEMAND_PROP, TaskDemands
from workloads.expand import expand
from workloads.spec import Submission, TasksJob, TpchJob, TraceSource, WordCountJob, Workload, \
    submission_from_json, submission_to_json
from workloads.workload_file import WorkloadFileError, check_demands_fit, load_workload

BASE = """
seed = 3
jobs = 6
mean_interarrival_s = 1.0

[inputs.wc]
kind = "wordcount"
size_mb = 4
block_mb = 1

[inputs.db]
kind = "tpch"
scale_factor = 0.01

[categories.cpu]
kind = "wordcount"
input = "wc"
reduces = 2
probability = 0.5
{cpu}

[categories.q]
kind = "tpch"
input = "db"
probability = 0.5
{q}
"""


def load(tmp_path: Path, cpu: str = "", q: str = "") -> Workload:
    path = tmp_path / "w.toml"
    path.write_text(BASE.format(cpu=cpu, q=q))
    return load_workload(path)


def test_a_demand_for_every_task_and_one_per_stage_kind(tmp_path: Path) -> None:
    workload = load(tmp_path, cpu="demand = { map = [1, 0.25], reduce = [2, 0.1] }", q="demand = [1, 1.5]")
    assert workload.mix is not None
    cpu, q = workload.mix.categories
    assert cpu.demands == TaskDemands((1.0, 0.25), (2.0, 0.1))
    assert q.demands == TaskDemands((1.0, 1.5), (1.0, 1.5))
    for s in expand(workload):   # each submission carries its category's demands
        assert s.params.demands == (cpu.demands if isinstance(s.params, WordCountJob) else q.demands)


def test_without_a_demand_nothing_is_declared(tmp_path: Path) -> None:
    assert all(s.params.demands is None for s in expand(load(tmp_path)))


@pytest.mark.parametrize("cpu, key, says", [
    ("demand = [1]", "categories.cpu.demand", "expected [cores, GB]"),
    ("demand = [0, 1]", "categories.cpu.demand", "cores > 0"),
    ("demand = [1, -1]", "categories.cpu.demand", "GB >= 0"),
    ("demand = [1, \"2g\"]", "categories.cpu.demand", "expected [cores, GB]"),
    ("demand = { map = [1, 1] }", "categories.cpu.demand", "exactly the keys map and reduce"),
    ("demand = { map = [1, 1], reduce = [1, 1], join = [1, 1] }", "categories.cpu.demand", "got join, map, reduce"),
    ("demand = { map = [1, 1], reduce = [true, 1] }", "categories.cpu.demand.reduce", "expected [cores, GB]"),
])
def test_a_bad_demand_is_one_line_naming_file_and_key(tmp_path: Path, cpu: str, key: str, says: str) -> None:
    with pytest.raises(WorkloadFileError) as caught:
        load(tmp_path, cpu=cpu)
    message = str(caught.value)
    assert message.startswith(f"{tmp_path / 'w.toml'}: {key}: ") and says in message and "\n" not in message


def test_a_demand_that_fits_no_executor_names_its_category(tmp_path: Path) -> None:
    workload = load(tmp_path, cpu="demand = { map = [1, 0.25], reduce = [2, 0.1] }", q="demand = [1, 1.5]")
    check_demands_fit(workload, (2.0, 1.5))   # both fit a 2-core 1.5 GB executor
    with pytest.raises(WorkloadFileError, match=r"categories\.cpu\.demand: .*fits no executor of 1 cores and 2 GB"):
        check_demands_fit(workload, (1.0, 2.0))   # the reduce's 2 cores do not
    with pytest.raises(WorkloadFileError, match=r"categories\.q\.demand: .*fits no executor of 2 cores and 1 GB"):
        check_demands_fit(workload, (2.0, 1.0))   # the query's 1.5 GB do not


def test_demands_survive_the_submission_round_trip() -> None:
    for params in (WordCountJob("wc", 2, 0, TaskDemands((1.0, 0.25), (2.0, 0.1))),
                   TpchJob("db", 3, TaskDemands.uniform((1.0, 1.5))),
                   TasksJob((1.0, 2.0), "spin", ((1.0, 0.5), (2.0, 4.0)))):
        submission = Submission(0, 1.0, "c", params)
        assert submission_from_json(submission_to_json(submission)) == submission


def test_the_property_round_trip_and_its_errors() -> None:
    demands = TaskDemands((1.0, 0.25), (2.0, 0.1))
    assert TaskDemands.from_property(demands.to_property()) == demands
    assert demands.of_stage(has_parents=False) == (1.0, 0.25) and demands.of_stage(has_parents=True) == (2.0, 0.1)
    for bad in ("[1, 2]", "{\"map\": [1, 2]}", "{\"map\": [1, 2], \"reduce\": [0, 1]}", "1,2"):
        with pytest.raises(ValueError, match=DEMAND_PROP):
            TaskDemands.from_property(bad)


def test_a_jsonl_traces_demands_are_kept(tmp_path: Path) -> None:
    trace = tmp_path / "t.jsonl"
    trace.write_text(json.dumps({"submit": 0, "durations": [1, 2], "demands": [[1, 0.5], [2, 4]]}) + "\n"
                     + json.dumps({"submit": 4, "durations": [3]}) + "\n")
    first, second = expand(Workload("t", tmp_path / "t.toml", 0, trace=TraceSource(trace, time_scale=0.5)))
    assert first.params == TasksJob((0.5, 1.0), "sleep", ((1.0, 0.5), (2.0, 4.0)))
    assert second.params == TasksJob((1.5,), "sleep", None)


class Context:
    """A SparkContext's job properties, as the replay sets them."""

    def __init__(self) -> None:
        self.props: dict[str, str] = {}

    def setJobGroup(self, group: str, description: str, interruptOnCancel: bool) -> None:
        self.props["spark.jobGroup.id"] = group

    def setLocalProperty(self, key: str, value: str | None) -> None:
        if value is None:
            self.props.pop(key, None)
        else:
            self.props[key] = value


def test_the_replay_carries_a_jobs_demands_to_spark_and_the_next_job_does_not_inherit_them(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace

    from bridge.replay import jobs

    context = Context()
    seen: list[str | None] = []
    monkeypatch.setitem(jobs._RUNNERS, WordCountJob, lambda *args: seen.append(context.props.get(DEMAND_PROP)))
    monkeypatch.setitem(jobs._RUNNERS, TasksJob, lambda *args: seen.append(context.props.get(DEMAND_PROP)))
    spark = SimpleNamespace(sparkContext=context)
    declared = TaskDemands((1.0, 0.25), (2.0, 0.1))
    jobs.run_job(spark, Submission(0, 0.0, "c", WordCountJob("wc", 2, 0, declared)), {}, "g0")
    jobs.run_job(spark, Submission(1, 0.0, "c", WordCountJob("wc", 2)), {}, "g1")
    jobs.run_job(spark, Submission(2, 0.0, "t", TasksJob((1.0, 1.0), "sleep", ((1.0, 3.0), (2.0, 0.5)))), {}, "g2")
    assert seen[1] is None and seen[0] is not None and seen[2] is not None
    assert TaskDemands.from_property(seen[0]) == declared   # what the live engine reads back
    assert TaskDemands.from_property(seen[2]) == TaskDemands.uniform((2.0, 3.0))
    with pytest.raises(ValueError, match="must be \\(cores, GB\\)"):
        jobs.run_job(spark, Submission(3, 0.0, "t", TasksJob((1.0,), "sleep", ((1.0, 2.0, 3.0),))), {}, "g3")


def test_falcon_dag_declares_tasks_whose_executors_cores_and_memory_bind_differently() -> None:
    from policies.common.vectors import add, dominant, fits, normalized

    workload = load_workload(Path(__file__).resolve().parents[2] / "workloads" / "examples" / "falcon-dag.toml")
    executor = (2.0, 0.5)   # its paragraph's executors: 2 cores, the testbed's 512 MB heap
    check_demands_fit(workload, executor)
    assert workload.mix is not None
    tasks = {d for c in workload.mix.categories if c.demands is not None for d in (c.demands.map, c.demands.reduce)}
    cpu = [d for d in tasks if dominant(normalized(d, executor)) == 0]
    memory = [d for d in tasks if dominant(normalized(d, executor)) == 1]
    assert cpu and memory
    assert all(fits(add(a, b), executor) for a in cpu for b in cpu)          # cores bind CPU-heavy tasks
    assert not any(fits(add(a, b), executor) for a in memory for b in memory)  # memory binds memory-heavy ones
    assert all(fits(add(a, b), executor) for a in cpu for b in memory)       # a complementary pair shares one
