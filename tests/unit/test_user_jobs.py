"""The user job a live stage belongs to: one unit and one estimate per job group, from the job
property, what was learned, the estimates file or the default, in that order."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bridge.drivers.estimates import Estimates
from bridge.drivers.spark.engine import EnginePlanner
from bridge.drivers.topology import slot_spec
from bridge.drivers.user_jobs import UserJobs
from bridge.protocol.messages import JobEnd, JobStart, StageDemand, StageSpec, TaskEnd


def stage(stage: int, job: int, **props: str) -> StageDemand:
    return StageDemand(stage, 0, job, 2, 2, 0, {}, props, ())


def table(tmp_path: Path, jobs: dict[str, float]) -> Path:
    path = tmp_path / "estimates.json"
    path.write_text(json.dumps({"format": "schedbridge-estimates", "version": 1, "jobs": {
        key: {"mean_s": mean, "tasks": 4, "runs": 1, "stages": [mean]} for key, mean in jobs.items()}}))
    return path


def test_stages_of_one_job_group_share_its_unit_and_estimate(tmp_path: Path) -> None:
    jobs = UserJobs(1.0, Estimates.load(table(tmp_path, {"job:etl": 40.0})))
    group = {"spark.jobGroup.id": "run-7", "schedbridge.job": "etl"}
    first, second = jobs.of_stage("app", stage(1, 0, **group), 10), jobs.of_stage("app", stage(5, 3, **group), 11)
    assert (first.unit, first.estimate, first.source) == (10, 40.0, "file")
    assert (second.unit, second.estimate) == (10, 40.0)
    other = jobs.of_stage("app", stage(6, 4, **{**group, "spark.jobGroup.id": "run-8"}), 12)
    assert other.unit == 12
    assert jobs.sources == {"file": 2}


def test_without_a_group_each_spark_job_is_a_user_job_of_its_own() -> None:
    jobs = UserJobs(2.5)
    a, b, c = (jobs.of_stage("app", stage(s, j), s) for s, j in ((1, 0), (2, 0), (3, 1)))
    assert (a.unit, b.unit, c.unit) == (1, 1, 3)
    assert {a.estimate, c.estimate} == {2.5}
    assert jobs.sources == {"default": 2}


def test_the_job_property_wins_and_a_bad_one_is_ignored(tmp_path: Path) -> None:
    jobs = UserJobs(1.0, Estimates.load(table(tmp_path, {"job:etl": 40.0})))
    given = jobs.of_stage("app", stage(1, 0, **{"schedbridge.job": "etl", "schedbridge.estimate": "3"}), 0)
    assert given.estimate == 3.0
    bad = jobs.of_stage("app", stage(2, 1, **{"schedbridge.job": "etl", "schedbridge.estimate": "soon"}), 1)
    assert (bad.estimate, bad.source) == (40.0, "file")


def run(jobs: UserJobs, job: int, stage_id: int, key: str, seconds: list[float], ok: bool = True) -> None:
    jobs.heard("app", JobStart(0, job, (StageSpec(stage_id, len(seconds), ()),), {"schedbridge.job": key}))
    for i, s in enumerate(seconds):
        jobs.heard("app", TaskEnd(0, 100 * job + i, stage_id, 0, i, "1", "h1", False, round(s * 1000), "Success"))
    jobs.heard("app", TaskEnd(0, 999, stage_id, 0, 9, "1", "h1", False, 90_000, "TaskKilled"))
    jobs.heard("app", JobEnd(0, job, ok))


def test_learn_takes_the_mean_of_a_finished_runs_successful_tasks(tmp_path: Path) -> None:
    jobs = UserJobs(1.0, Estimates.load(table(tmp_path, {"job:wc": 99.0})), learn=True)
    assert jobs.of_stage("app", stage(1, 0, **{"schedbridge.job": "wc"}), 0).source == "file"
    run(jobs, 0, 1, "wc", [10.0, 30.0])
    learned = jobs.of_stage("app", stage(2, 1, **{"schedbridge.job": "wc"}), 1)
    assert (learned.estimate, learned.source) == (pytest.approx(20.0), "learned")


def test_a_failed_run_teaches_nothing() -> None:
    jobs = UserJobs(1.0, learn=True)
    run(jobs, 0, 1, "wc", [10.0, 30.0], ok=False)
    assert jobs.of_stage("app", stage(2, 1, **{"schedbridge.job": "wc"}), 1).source == "default"


def test_the_engine_tells_the_policy_the_filed_estimate_and_the_unit(tmp_path: Path) -> None:
    planner = EnginePlanner("fifo", {"estimates": str(table(tmp_path, {"group:nightly": 12.0}))})
    job = planner._arrive(slot_spec(1, 1), ("app", 4, 0), stage(4, 2, **{"spark.jobGroup.id": "nightly"}), 2, None)
    assert (job.job.estimate, job.job.unit, job.job.meta["key"]) == (12.0, job.job.job_id, "group:nightly")
    assert planner.user_jobs.records()[0]["source"] == "file"


def test_a_missing_estimates_file_is_refused_by_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="nope.json"):
        EnginePlanner("fifo", {"estimates": str(tmp_path / "nope.json")})


@pytest.mark.parametrize("params,warned", [({"learn": "true"}, True), ({}, False),
                                           ({"learn": "true", "integer_estimates": "false"}, False)])
def test_measured_estimates_truncated_to_whole_seconds_are_warned_of(
        params: dict[str, str], warned: bool, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="bridge.drivers.spark.engine"):
        EnginePlanner("hawk", params)
    assert ("integer_estimates=false" in caplog.text) == warned, caplog.text
