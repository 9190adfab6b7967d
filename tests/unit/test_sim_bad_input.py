"""Bad input gets a clear error and no partial output (trace, CLI, parameters)."""
from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from bridge.sim.cli import simulate
from policies.framework.api import ProbeInfo, Run
from policies.framework.registry import PolicyEntry, default_registry
from workloads.model import Job, WorkloadError
from workloads.trace import TraceError, read_trace

GOOD = "0 2 5 5 5\n1 1 3 3\n"


@pytest.mark.parametrize("text,line,field", [
    ("0 2 5 5 5\nx 1 3 3\n", 2, "submit_time"),
    ("0 2 5 5\n", 1, "d2"),                 # n_tasks says 2, one duration
    ("0 1 5 5 6\n", 1, "d2"),               # one duration too many
    ("0 1.5 5 5\n", 1, "n_tasks"),
    ("0 0 5\n", 1, "n_tasks"),
    ("0 1 -5 5\n", 1, "mean_task_duration"),
    ("0 1 5 -5\n", 1, "d1"),
    ("0 2 5 5 nan\n", 1, "d2"),
    ("0 2\n", 1, "mean_task_duration"),
    ("5 1 1 1\n3 1 1 1\n", 2, "submit_time"),  # out of order
])
def test_malformed_line_names_file_line_field(tmp_path, text, line, field):
    p = tmp_path / "t.txt"
    p.write_text(text)
    with pytest.raises(TraceError) as e:
        read_trace(p)
    assert (e.value.line, e.value.field) == (line, field)
    assert str(e.value).startswith(f"{p}:{line}: field '{field}'")


def test_missing_and_empty_trace(tmp_path):
    with pytest.raises(TraceError, match="cannot open"):
        read_trace(tmp_path / "nope.txt")
    (tmp_path / "e.txt").write_text("# only a comment\n\n")
    with pytest.raises(TraceError, match="no jobs"):
        read_trace(tmp_path / "e.txt")


def test_jsonl_errors_name_field(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"submit": 0, "durations": [1, 2]}\n{"submit": 1, "durations": [1], "bogus": 1}\n')
    with pytest.raises(TraceError) as e:
        read_trace(p)
    assert (e.value.line, e.value.field) == (2, "bogus")
    p.write_text('{"submit": 0, "durations": [1, 2], "parents": [[1], [0]]}\n')
    with pytest.raises(TraceError, match="cycle"):
        read_trace(p)


def test_jsonl_rich_job(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text('{"submit": 0, "durations": [1, 2], "demands": [[1, 2], [0.5, 1]], "parents": [[], [0]]}\n')
    (job,) = read_trace(p)
    assert job.demands == ((1.0, 2.0), (0.5, 1.0)) and job.parents == ((), (0,)) and job.estimate == 1.5


def test_model_refuses_negative_sizes():
    with pytest.raises(WorkloadError):
        Job(0, 0.0, (1.0, -1.0))
    with pytest.raises(WorkloadError):
        Job(0, -1.0, (1.0,))
    with pytest.raises(WorkloadError):
        Job(0, 0.0, ())


def _cli(tmp_path, *args):
    trace = tmp_path / "t.txt"
    trace.write_text(GOOD)
    return CliRunner().invoke(simulate, ["--trace", str(trace), *args])


def test_cli_unknown_policy_lists_known(tmp_path):
    r = _cli(tmp_path, "--policy", "nope", "--nodes", "2")
    assert r.exit_code != 0 and "unknown policy 'nope'" in r.output and "sparrow" in r.output


def test_cli_unknown_parameter_lists_valid(tmp_path):
    r = _cli(tmp_path, "--policy", "hawk", "--nodes", "2", "--param", "stealing_attempts=3")
    assert r.exit_code != 0 and "valid parameters" in r.output and "steal_attempts" in r.output


@pytest.mark.parametrize("args", [
    ("--policy", "hawk", "--nodes", "2", "--param", "big_partition=120"),
    ("--policy", "hawk", "--nodes", "2", "--param", "steal_attempts=many"),
    ("--policy", "fifo", "--nodes", "-3"),
    ("--policy", "fifo", "--nodes", "2", "--slots", "0"),
    ("--policy", "fifo", "--nodes", "2", "--out", "x.txt"),
])
def test_cli_refuses_impossible_values(tmp_path, args):
    r = _cli(tmp_path, *args)
    assert r.exit_code != 0 and "Error" in r.output


def test_cli_malformed_trace(tmp_path):
    trace = tmp_path / "bad.txt"
    trace.write_text("0 2 5 5\n")
    out = tmp_path / "o.csv"
    r = CliRunner().invoke(simulate, ["--trace", str(trace), "--policy", "fifo", "--nodes", "2", "--out", str(out)])
    assert r.exit_code != 0 and "bad.txt:1: field 'd2'" in r.output
    assert not out.exists()


def test_cli_no_partial_output_when_the_run_fails(tmp_path, monkeypatch):
    class Broken:
        name = "broken-for-test"

        def on_job_arrival(self, ev, view):
            return (Run(0, 0, ProbeInfo(ev.job.job_id, 0)),)  # not queued anywhere: the simulator refuses it

    from dataclasses import make_dataclass

    from policies.framework import registry

    monkeypatch.setattr(registry, "_DEFAULT", None)  # a registry of this test's own, dropped after it
    default_registry().register(PolicyEntry("broken-for-test", make_dataclass("BrokenCfg", []), lambda c, e: Broken()))
    out = tmp_path / "o.parquet"
    r = _cli(tmp_path, "--policy", "broken-for-test", "--nodes", "2", "--out", str(out))
    assert r.exit_code != 0 and "invalid decision" in r.output
    assert list(tmp_path.glob("o.parquet*")) == [] and list(tmp_path.glob(".o.parquet*")) == []


def test_cli_json_and_csv(tmp_path):
    out = tmp_path / "res.csv"
    r = _cli(tmp_path, "--policy", "sparrow", "--nodes", "3", "--json", "--out", str(out), "--report-cutoff", "4")
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout)                     # stderr says which simulator core ran
    assert summary["core"].startswith("simulator core: ") and summary["core"] in r.stderr
    assert summary["jct"]["short"]["count"] == 1 and summary["jct"]["long"]["count"] == 1
    assert set(summary["jct"]["short"]) >= {"p50", "p90", "p99"}
    assert 0 < summary["utilization"] <= 1
    lines = out.read_text().splitlines()
    assert lines[0].startswith("job_id,submit,finish,completion_time,slowdown,class")
    assert len(lines) == 3


def test_cli_parquet_and_table(tmp_path):
    import pandas as pd
    out = tmp_path / "res.parquet"
    r = _cli(tmp_path, "--policy", "hawk", "--nodes", "3", "--out", str(out))
    assert r.exit_code == 0, r.output
    assert "p90 JCT" in r.output
    df = pd.read_parquet(out)
    assert list(df["job_id"]) == [0, 1] and set(df["class"]) <= {"short", "long"}
