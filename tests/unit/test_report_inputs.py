"""`schedbridge report` on malformed results: one error line naming the file (and line), no
report directory left behind."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bridge.apps.report.cli import report

JOBS = "job_id,submit_s,end_s,status\n1,0,5,succeeded\n2,1,4,failed\n"


def results_dir(tmp_path: Path, jobs: str = JOBS) -> Path:
    path = tmp_path / "run"
    path.mkdir()
    (path / "jobs.csv").write_text(jobs)
    return path


def run_report(*args: str) -> Result:
    return CliRunner().invoke(report, list(args))


def assert_one_error_line(result: Result, *fragments: str) -> None:
    assert result.exit_code == 1 and isinstance(result.exception, (SystemExit, type(None))), result.exception
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("Error: "), result.output
    for fragment in fragments:
        assert fragment in lines[0], result.output


@pytest.mark.parametrize("meta,fragment", [
    (b"[1, 2]", "expected a JSON object, got list"),
    (b'"text"', "expected a JSON object, got str"),
    (b"{bad", "not valid JSON"),
    (b"\xff\xfe\x00", "not valid JSON"),
    (b'{"plugin": {"placed_tasks": "many"}}', "plugin.placed_tasks: expected a finite number"),
])
def test_malformed_meta_json(tmp_path: Path, meta: bytes, fragment: str) -> None:
    run = results_dir(tmp_path)
    (run / "meta.json").write_bytes(meta)
    assert_one_error_line(run_report(str(run)), f"{run / 'meta.json'}: {fragment}")
    assert not (run / "report").exists()


@pytest.mark.parametrize("jobs,fragment", [
    ("job_id,submit_s,end_s,status\n1,abc,5,succeeded\n",
     "line 2: column submit_s: expected a finite number, got 'abc'"),
    ("job_id,submit_s,end_s,status\n1,0,5,succeeded\n2,0,inf,succeeded\n", "line 3: column end_s"),
    ("job_id,submit_s,end_s,status\n1,0,5,succeeded,x,y\n", "a row has more fields than the header"),
    ("job_id,submit_s,end_s,status\n1,5,1,succeeded\n", "line 2: end_s 1.0 is before submit_s 5.0"),
])
def test_malformed_jobs_csv(tmp_path: Path, jobs: str, fragment: str) -> None:
    run = results_dir(tmp_path, jobs)
    assert_one_error_line(run_report(str(run)), f"{run / 'jobs.csv'}: {fragment}")
    assert not (run / "report").exists()


@pytest.mark.parametrize("name,text,fragment", [
    ("tasks.csv", "job_id,launch_s,finish_s\n1,0,zero\n", "line 2: column finish_s"),
    ("tasks.csv", "job_id,launch_s,finish_s\n1,3,2\n", "line 2: finish_s 2.0 is before launch_s 3.0"),
    ("utilization.csv", "time_s,vcores_allocated,vcores_total\n0,1,\n", "line 2: an empty cell"),
])
def test_malformed_task_and_utilization_tables(tmp_path: Path, name: str, text: str, fragment: str) -> None:
    run = results_dir(tmp_path)
    (run / name).write_text(text)
    assert_one_error_line(run_report(str(run)), f"{run / name}: {fragment}")


def test_simulator_file_with_text_in_a_number_column(tmp_path: Path) -> None:
    path = tmp_path / "sim.csv"
    path.write_text("job_id,submit,finish,slowdown\n0,0,4,1.0\n1,1,5,fast\n")
    assert_one_error_line(run_report(str(path)), f"{path}: line 3: column slowdown")
    assert not (tmp_path / "sim-report").exists()


def test_unwritable_out_is_refused_before_reading(tmp_path: Path) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = run_report(str(tmp_path / "no-such-run"), "--out", str(blocker / "report"))
    assert result.exit_code == 2 and "--out" in result.output and "not a directory" in result.output


def test_unwritable_default_place_is_refused(tmp_path: Path) -> None:
    run = results_dir(tmp_path)
    (run / "report").write_text("a file where the report directory would go")
    result = run_report(str(run))
    assert_one_error_line(result, "cannot write the report to")


def test_a_good_run_still_reports(tmp_path: Path) -> None:
    run = results_dir(tmp_path)
    result = run_report(str(run))
    assert result.exit_code == 0, result.output
    assert {p.name for p in (run / "report").iterdir()} >= {"report.csv", "report.txt"}
