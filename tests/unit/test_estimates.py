"""Runtime estimates of recurring jobs (`bridge.drivers.estimates`) and `schedbridge estimates build`:
the key of each kind and their precedence, runs (one application's Spark jobs of one key and job
group), which runs count, the sources it reads, the file and every refusal of a bad one, and the
committed real event log, whose means are computed here from its own events."""
from __future__ import annotations

import io
import json
import math
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner, Result

from bridge.cli import main
from bridge.drivers.estimates import (
    KEY_PRECEDENCE, Estimate, Estimates, EstimatesError, Learner, job_key, run_id,
)

FIXTURE = next((Path(__file__).resolve().parents[1] / "fixtures").glob("eventlog_v2_*"))
T0 = 1_800_000_000_000  # ms since the epoch


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, ["estimates", "build", *args])


# --- synthetic event logs, as Spark writes them ---------------------------------------------------

def spark_job(job_id: int, props: dict[str, str], stages: dict[int, list[int]], *, ok: bool | None = True,
              names: dict[int, str] | None = None) -> list[dict]:
    """A Spark job's events: its start, each stage submitted with its tasks' ends (durations in ms),
    its end (``ok`` None: it never ends)."""
    infos = [{"Stage ID": s, "Stage Attempt ID": 0, "Stage Name": (names or {}).get(s, f"stage {s} at app.py:{s}"),
              "Number of Tasks": len(d), "Parent IDs": []} for s, d in stages.items()]
    events: list[dict] = [{"Event": "SparkListenerJobStart", "Job ID": job_id, "Submission Time": T0,
                           "Stage Infos": infos, "Stage IDs": list(stages), "Properties": props}]
    for info, durations in zip(infos, stages.values()):
        events.append({"Event": "SparkListenerStageSubmitted", "Stage Info": info, "Properties": props})
        events += [task_end(info["Stage ID"], 100 * job_id + i, ms) for i, ms in enumerate(durations)]
    if ok is not None:
        events.append({"Event": "SparkListenerJobEnd", "Job ID": job_id, "Completion Time": T0 + 9000,
                       "Job Result": {"Result": "JobSucceeded" if ok else "JobFailed"}})
    return events


def task_end(stage: int, task_id: int, ms: int, reason: str = "Success") -> dict:
    launch = T0 + 1000 + task_id
    return {"Event": "SparkListenerTaskEnd", "Stage ID": stage, "Stage Attempt ID": 0, "Task Type": "ResultTask",
            "Task End Reason": {"Reason": reason},
            "Task Info": {"Task ID": task_id, "Index": 0, "Attempt": 0, "Partition ID": 0, "Launch Time": launch,
                          "Executor ID": "1", "Host": "h1", "Speculative": False, "Getting Result Time": 0,
                          "Finish Time": launch + ms, "Failed": reason != "Success", "Killed": False}}


def write_log(path: Path, app_id: str, *jobs: list[dict]) -> Path:
    """A plain single-file event log of one application (compact JSON lines, as Spark writes)."""
    events = [{"Event": "SparkListenerLogStart", "Spark Version": "4.3.0"},
              {"Event": "SparkListenerApplicationStart", "App Name": "t", "App ID": app_id, "Timestamp": T0,
               "User": "u"}, *(e for job in jobs for e in job),
              {"Event": "SparkListenerApplicationEnd", "Timestamp": T0 + 60_000}]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events))
    return path


def built(tmp_path: Path, *sources: Path) -> tuple[Estimates, Result]:
    out = tmp_path / "out" / "estimates.json"
    result = invoke(*map(str, sources), "--out", str(out))
    assert result.exit_code == 0, result.output
    return Estimates.load(out), result


# --- keys ---------------------------------------------------------------------------------------

@pytest.mark.parametrize("props,call_site,key", [
    ({"schedbridge.job": "query-small/q3", "spark.jobGroup.id": "g"}, "", "job:query-small/q3"),
    ({"schedbridge.job": " ", "spark.jobGroup.id": "g", "spark.job.tags": "t"}, "", "group:g"),
    ({"spark.job.tags": "b,a, b,,", "spark.job.description": "d"}, "", "tags:a,b"),
    ({"spark.job.tags": " , ", "spark.job.description": "nightly"}, "", "description:nightly"),
    ({"callSite.short": "count at a.py:4"}, "collect at a.py:9", "callsite:count at a.py:4"),
    ({"spark.rdd.scope": "{}"}, "collect at a.py:9", "callsite:collect at a.py:9"),
    ({}, " ", ""),
])
def test_a_job_is_named_by_the_first_property_set(props: dict[str, str], call_site: str, key: str) -> None:
    assert job_key(props, call_site) == key


def test_the_precedence_is_one_named_tuple() -> None:
    assert [kind for _, kind in KEY_PRECEDENCE] == ["job", "group", "tags", "description", "callsite"]
    assert KEY_PRECEDENCE[0][0] == "schedbridge.job" and KEY_PRECEDENCE[-1][0] == "callSite.short"


@pytest.mark.parametrize("props,names,key", [
    ({"schedbridge.job": "query-small/q3"}, None, "job:query-small/q3"),
    ({"spark.jobGroup.id": "nightly-etl"}, None, "group:nightly-etl"),
    ({"spark.job.tags": "etl,daily"}, None, "tags:daily,etl"),
    ({"spark.job.description": "load orders"}, None, "description:load orders"),
    ({"callSite.short": "count at etl.py:12"}, None, "callsite:count at etl.py:12"),
    ({}, {0: "collect at etl.py:30"}, "callsite:collect at etl.py:30"),  # no property: its first stage's name
], ids=["schedbridge.job", "group", "tags", "description", "call-site", "first-stage"])
def test_each_key_kind_through_build(tmp_path: Path, props: dict[str, str], names: dict[int, str] | None,
                                     key: str) -> None:
    log = write_log(tmp_path / "app-1", "app-1", spark_job(0, props, {0: [1000, 3000], 1: [500]}, names=names))
    found, _ = built(tmp_path, log)
    assert list(found) == [key]
    assert found[key] == Estimate(mean_s=1.5, tasks=3, runs=1, stages=(2.0, 0.5))


# --- runs -----------------------------------------------------------------------------------------

def test_the_spark_jobs_of_one_group_are_one_run(tmp_path: Path) -> None:
    q3 = {"schedbridge.job": "query-small/q3"}
    log = write_log(tmp_path / "app-1", "app-1",
                    spark_job(0, {**q3, "spark.jobGroup.id": "schedbridge-job-7"}, {0: [1000, 1000], 1: [4000]}),
                    spark_job(1, {**q3, "spark.jobGroup.id": "schedbridge-job-7"}, {2: [3000]}),
                    spark_job(2, {**q3, "spark.jobGroup.id": "schedbridge-job-9"}, {3: [3000, 3000], 4: [2000]}))
    found, result = built(tmp_path, log)
    # run 1: stages 0, 1, 2 (two Spark jobs); run 2: stages 3, 4
    assert found["job:query-small/q3"] == Estimate(mean_s=round(17 / 7, 6), tasks=7, runs=2, stages=(2.0, 3.0, 3.0))
    assert "2 runs of recurring jobs ended" in result.output
    assert run_id(q3, 4) == "spark-job-4" and run_id({"spark.jobGroup.id": "g"}, 4) == "g"


def test_runs_that_fail_or_do_not_end_before_the_log_are_left_out(tmp_path: Path) -> None:
    counted = spark_job(0, {"spark.jobGroup.id": "done"}, {0: [2000]})
    counted.insert(-1, task_end(0, 50, 90_000, reason="ExceptionFailure"))  # a failed attempt: not a duration
    log = write_log(tmp_path / "app-1", "app-1", counted,
                    spark_job(1, {"spark.jobGroup.id": "cut"}, {1: [1000]}),
                    spark_job(2, {"spark.jobGroup.id": "cut"}, {2: [1000]}, ok=None),  # never ends
                    spark_job(3, {"spark.jobGroup.id": "failed"}, {3: [1000]}, ok=False))
    found, result = built(tmp_path, log)
    assert dict(found) == {"group:done": Estimate(2.0, 1, 1, (2.0,))}
    assert "left out: 1 runs still running when their log ends, 1 runs with a failed Spark job" in result.output


def test_the_same_application_twice_counts_once(tmp_path: Path) -> None:
    job = spark_job(0, {"spark.jobGroup.id": "g"}, {0: [1000]})
    first = write_log(tmp_path / "a" / "app-1", "app-1", job)
    copy = write_log(tmp_path / "b" / "app-1.copy", "app-1", job)
    found, result = built(tmp_path, tmp_path / "a", tmp_path / "b", first)
    assert found["group:g"].runs == 1
    assert result.output.count("skipped") == 2
    assert f"skipped {copy}: application app-1, already read from {first}" in result.output


def test_results_folders_are_searched_at_any_depth(tmp_path: Path) -> None:
    replay = tmp_path / "replay-results"
    write_log(replay / "eventlogs" / "app-1", "app-1", spark_job(0, {"schedbridge.job": "wc"}, {0: [1000]}))
    (replay / "jobs.csv").write_text("job_id\n0\n")
    simlive = tmp_path / "sim-vs-live"
    write_log(simlive / "eagle" / "repeat-1" / "live" / "eventlogs" / "app-2", "app-2",
              spark_job(0, {"schedbridge.job": "wc"}, {0: [3000]}))
    (simlive / "eagle" / "repeat-1" / "sim.csv").write_text("job_id\n")
    found, result = built(tmp_path, replay, simlive)
    assert found["job:wc"] == Estimate(2.0, 2, 2, (2.0,))
    assert "read 2 event logs" in result.output


def test_a_zstd_file_reads_as_its_plain_copy(tmp_path: Path) -> None:
    plain = write_log(tmp_path / "plain" / "app-1", "app-1", spark_job(0, {"spark.job.tags": "x"}, {0: [1500]}))
    packed = tmp_path / "zstd" / "app-1.zstd"
    packed.parent.mkdir()
    with pa.CompressedOutputStream(str(packed), "zstd") as stream:
        stream.write(plain.read_bytes())
    expected = {"tags:x": Estimate(1.5, 1, 1, (1.5,))}
    assert dict(built(tmp_path, packed)[0]) == dict(built(tmp_path, plain)[0]) == expected


# --- the committed real log ------------------------------------------------------------------------

def test_the_fixture_builds_with_its_real_task_durations(tmp_path: Path) -> None:
    [part] = FIXTURE.glob("events_*")
    stream = pa.CompressedInputStream(pa.OSFile(str(part)), "zstd")
    events = [json.loads(line) for line in io.TextIOWrapper(io.BufferedReader(stream), encoding="utf-8")]
    stage_job: dict[int, int] = {}
    names: dict[int, str] = {}
    per_job: dict[int, dict[int, list[float]]] = {}
    for e in events:
        if e["Event"] == "SparkListenerJobStart":
            names[e["Job ID"]] = f"callsite:{e['Properties']['callSite.short']}"
            for stage in e["Stage IDs"]:
                stage_job.setdefault(stage, e["Job ID"])
        elif e["Event"] == "SparkListenerTaskEnd" and e["Task End Reason"]["Reason"] == "Success":
            seconds = (e["Task Info"]["Finish Time"] - e["Task Info"]["Launch Time"]) / 1000
            per_job.setdefault(stage_job[e["Stage ID"]], {}).setdefault(e["Stage ID"], []).append(seconds)
    found, result = built(tmp_path, FIXTURE)
    assert sorted(found) == sorted(names.values()) and len(found) == 6
    for job, stages in per_job.items():
        durations = [d for stage in sorted(stages) for d in stages[stage]]
        estimate = found[names[job]]
        assert estimate.mean_s == pytest.approx(sum(durations) / len(durations), abs=1e-6)
        assert estimate.stages == pytest.approx([sum(stages[s]) / len(stages[s]) for s in sorted(stages)], abs=1e-6)
        assert (estimate.tasks, estimate.runs) == (len(durations), 1)
    assert "callsite:count at" in result.output and "mean task (s)" in result.output


# --- the learner -------------------------------------------------------------------------------------

def test_the_learner_counts_a_run_when_it_ends_its_stages_in_id_order() -> None:
    learner = Learner()
    learner.task_ended("k", "r1", 7, 4.0)
    learner.task_ended("k", "r1", 3, 1.0)
    learner.task_ended("k", "r2", 1, 9.0)  # r2 never ends
    learner.task_ended("k", "r3", 1, 9.0)
    learner.discard("k", "r3")
    learner.run_ended("k", "r3")
    assert dict(learner.estimates()) == {}
    learner.run_ended("k", "r1")
    assert learner.estimates()["k"] == Estimate(2.5, 2, 1, (1.0, 4.0))


def test_the_learner_takes_a_0_ms_task_as_1_ms_and_ignores_a_clock_jump() -> None:
    learner = Learner()
    for seconds in (0.0, -3.0, math.nan, math.inf):
        learner.task_ended("k", 1, 0, seconds)
    learner.run_ended("k", 1)
    assert learner.estimates()["k"] == Estimate(0.001, 1, 1, (0.001,))


# --- the file ----------------------------------------------------------------------------------------

def test_the_file_round_trips_with_its_keys_sorted(tmp_path: Path) -> None:
    jobs = {"job:z": Estimate(1 / 3, 3, 1, (0.25, 0.5)), "group:a": Estimate(90.58, 12, 4, (90.58,))}
    path = tmp_path / "e.json"
    Estimates(jobs).save(path)
    loaded = Estimates.load(path)
    assert list(loaded) == ["group:a", "job:z"] and loaded.get("job:x") is None and len(loaded) == 2
    assert loaded["group:a"] == jobs["group:a"]
    assert loaded["job:z"].mean_s == pytest.approx(1 / 3, abs=1e-6) and loaded["job:z"].stages == (0.25, 0.5)
    document = json.loads(path.read_text())
    assert (document["format"], document["version"]) == ("schedbridge-estimates", 1)


GOOD = {"mean_s": 1.5, "tasks": 3, "runs": 1, "stages": [1.5]}


@pytest.mark.parametrize("text,message", [
    ("{not json", "not JSON"),
    (json.dumps({"format": "other", "version": 1, "jobs": {}}), "not an estimates file"),
    (json.dumps({"format": "schedbridge-estimates", "version": 2, "jobs": {}}), "'version' 2"),
    (json.dumps({"format": "schedbridge-estimates", "version": 1, "jobs": []}), "'jobs' must be an object"),
    *[(json.dumps({"format": "schedbridge-estimates", "version": 1, "jobs": {"job:q": {**GOOD, field: value}}}),
       f"jobs['job:q'].{where}: {value_text}") for field, value, where, value_text in [
        ("mean_s", 0, "mean_s", "0 is not a duration"),
        ("mean_s", -1.0, "mean_s", "-1.0 is not a duration"),
        ("mean_s", 2e7, "mean_s", "20000000.0 is not a duration"),
        ("mean_s", "1", "mean_s", "'1' is not a duration"),
        ("stages", [1.0, float("nan")], "stages[1]", "nan is not a duration"),
        ("stages", [float("inf")], "stages[0]", "inf is not a duration"),
        ("tasks", 0, "tasks", "0 is not a positive whole number"),
        ("tasks", 2.5, "tasks", "2.5 is not a positive whole number"),
        ("runs", True, "runs", "True is not a positive whole number"),
        ("runs", -2, "runs", "-2 is not a positive whole number"),
        ("stages", 1.5, "stages", "must be a list"),
    ]],
    (json.dumps({"format": "schedbridge-estimates", "version": 1, "jobs": {"job:q": {"mean": 1}}}),
     "jobs['job:q']: fields must be exactly mean_s, tasks, runs, stages, not mean"),
    (json.dumps({"format": "schedbridge-estimates", "version": 1, "jobs": {" ": GOOD}}), "jobs[' ']: a job key"),
])
def test_a_bad_file_is_one_error_naming_it_and_the_field(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(EstimatesError) as caught:
        Estimates.load(path)
    assert str(caught.value).startswith(f"{path}: ") and message in str(caught.value)


def test_a_file_over_64_mb_or_missing_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "big.json"
    with big.open("wb") as file:
        file.truncate((64 << 20) + 1)  # sparse: no disk used
    with pytest.raises(EstimatesError, match=f"^{big}: over 64 MB"):
        Estimates.load(big)
    with pytest.raises(EstimatesError, match="cannot read"):
        Estimates.load(tmp_path / "none.json")


# --- what the command refuses ----------------------------------------------------------------------

def test_bad_sources_are_one_line_errors(tmp_path: Path) -> None:
    out = str(tmp_path / "e.json")
    missing = invoke(str(tmp_path / "none"), "--out", out)
    assert missing.exit_code == 2 and "does not exist" in missing.output
    notes = tmp_path / "notes.txt"
    notes.write_text("hello\n")
    not_a_log = invoke(str(notes), "--out", out)
    assert not_a_log.exit_code == 1 and f"Error: {notes}: not a Spark event log" in not_a_log.output
    (tmp_path / "empty").mkdir()
    empty = invoke(str(tmp_path / "empty"), "--out", out)
    assert empty.exit_code == 1 and "no Spark event log in it" in empty.output
    assert not Path(out).exists()


def test_a_malformed_event_names_its_line_and_nothing_unfinished_writes_nothing(tmp_path: Path) -> None:
    out = tmp_path / "e.json"
    log = write_log(tmp_path / "logs" / "app-1", "app-1", [{"Event": "SparkListenerJobStart", "Job ID": 0}])
    bad = invoke(str(log), "--out", str(out))
    assert bad.exit_code == 1 and f"{log} line 3: SparkListenerJobStart with no 'Submission Time'" in bad.output
    assert "Traceback" not in bad.output
    log = write_log(log, "app-1", spark_job(0, {}, {0: [1000]}, ok=None))
    unfinished = invoke(str(log), "--out", str(out))
    assert unfinished.exit_code == 1 and "nothing written" in unfinished.output and not out.exists()
