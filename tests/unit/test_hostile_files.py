"""Hostile traces and TOML files (issue 46, items 6-7): huge magnitudes, JSON or TOML nested too
deeply, integers of thousands of digits and URLs Python cannot split end in one error naming the
file and the line or key (exit 1 or 2 from the command line), never a traceback or a silently wrong
result (a job submitted at 1e300 s simulated to a completion of 0.0)."""
from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.cli import main
from bridge.common.magnitudes import MAX_TIME_S
from bridge.nodes.cluster_agents import AgentsConfigError
from bridge.nodes.cluster_agents import load as load_agents
from bridge.sim.shape import ClusterFileError
from bridge.sim.shape import load as load_cluster
from workloads.trace import TraceError, read_trace
from workloads.workload_file import WorkloadFileError, load_workload

TRACES = {  # name -> (file name, text, a fragment of the error)
    "submitted at 1e300": ("t.trace", "0 1 5 5\n1e300 1 5 5\n", ":2: field 'submit_time': a time of at most 1e+10 s"),
    "a duration of 1e300": ("t.trace", "0 2 5 5 1e300\n", ":1: field 'd2': a time of at most 1e+10 s"),
    "a mean of 1e11": ("t.trace", "0 1 1e11 5\n", ":1: field 'mean_task_duration': a time of at most"),
    "jsonl submitted at 1e300": ("t.jsonl", '{"submit": 1e300, "durations": [1]}\n', ":1: field 'submit'"),
    "jsonl nested": ("t.jsonl", "[" * 200_000 + "\n", ":1: field 'json': invalid JSON: nested too deeply"),
    "jsonl of 5000 digits": ("t.jsonl", '{"submit": ' + "9" * 5000 + ', "durations": [1]}\n', ":1: field 'json'"),
    "jsonl estimate 1e400": ("t.jsonl", '{"submit": 0, "durations": [1], "estimate": 1e400}\n', "field 'estimate'"),
}


@pytest.mark.parametrize("name", TRACES)
def test_a_hostile_trace_is_one_error_naming_file_line_and_field(tmp_path: Path, name: str) -> None:
    file, text, fragment = TRACES[name]
    trace = tmp_path / file
    trace.write_text(text)
    with pytest.raises(TraceError, match=fragment.replace("+", r"\+")):
        read_trace(trace)
    result = CliRunner().invoke(main, ["simulate", "--trace", str(trace), "--policy", "fifo", "--nodes", "1"])
    _assert_one_line(result.exit_code, result.output, str(trace))


def _assert_one_line(code: int, output: str, *fragments: str) -> None:
    assert code in (1, 2) and "Traceback" not in output, output
    errors = [line for line in output.splitlines() if line.startswith("Error")]
    assert len(errors) == 1, output
    for fragment in fragments:
        assert fragment in errors[0], output


@pytest.mark.parametrize("args", [
    ("yahoo", "--jobs", "20", "--shrink=1e-300"), ("yahoo", "--jobs", "2000", "--load", "0.001", "--nodes", "1")])
def test_generating_arrivals_past_the_longest_time_is_one_error(tmp_path: Path, args: tuple[str, ...]) -> None:
    out = tmp_path / "g.jsonl"
    result = CliRunner().invoke(main, ["trace", "generate", *args, "--out", str(out)])
    _assert_one_line(result.exit_code, result.output, "the last job would arrive at", f"past {MAX_TIME_S:g} s")
    assert not out.exists()


NESTED = {"array": "a = " + "[" * 5000 + "]" * 5000 + "\n",
          "inline table": "a = " + "{b = " * 5000 + "1" + "}" * 5000 + "\n"}


@pytest.mark.parametrize("name", NESTED)
def test_toml_nested_too_deeply_is_one_error_in_every_reader(tmp_path: Path, name: str) -> None:
    path = tmp_path / "deep.toml"
    path.write_text(NESTED[name])
    with pytest.raises(ClusterFileError, match="nested too deeply"):
        load_cluster(path, 1000)
    with pytest.raises(AgentsConfigError, match=f"{path}: .*nested too deeply"):
        load_agents(path)
    with pytest.raises(WorkloadFileError, match="nested too deeply"):
        load_workload(path)
    result = CliRunner().invoke(main, ["simulate", "--cluster", str(path), "--trace", str(_tiny(tmp_path)),
                                       "--policy", "fifo"])
    _assert_one_line(result.exit_code, result.output, str(path), "nested too deeply")


def _tiny(where: Path) -> Path:
    trace = where / "tiny.trace"
    trace.write_text("0 1 5 5\n")
    return trace


@pytest.mark.parametrize("text,key", [
    ('token_file = "t"\nurl = "http://[::1:8478"\n', "url"),
    ('token_file = "t"\n[nodes]\n"nm1:8042" = "http://[bad"\n', "nodes.nm1:8042"),
])
def test_an_agent_url_python_cannot_split_is_named(tmp_path: Path, text: str, key: str) -> None:
    path = tmp_path / "agents.toml"
    path.write_text(text)
    with pytest.raises(AgentsConfigError, match=f"key '{key}': .*Invalid IPv6 URL"):
        load_agents(path)


LINE = st.text(alphabet="0123456789 .e-+[]{}\":,naifsubmitdurations", max_size=40)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(lines=st.lists(LINE, min_size=1, max_size=4), rich=st.booleans())
def test_fuzzed_traces_read_within_bounds_or_fail_naming_the_line(tmp_path: Path, lines: list[str],
                                                                   rich: bool) -> None:
    trace = tmp_path / ("t.jsonl" if rich else "t.trace")
    trace.write_text("\n".join(lines) + "\n")
    try:
        jobs = read_trace(trace)
    except TraceError as exc:
        assert str(exc).startswith(f"{trace}:") and "\n" not in str(exc)
        return
    for job in jobs:
        assert 0 <= job.submit <= MAX_TIME_S and all(0 <= d <= MAX_TIME_S for d in job.durations)


TOML = st.text(alphabet="[]{}=\"' \n.,0123456789e+-abcdnoesuntrlkf_", max_size=80)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=TOML)
def test_fuzzed_toml_files_are_read_or_one_error(tmp_path: Path, text: str) -> None:
    path = tmp_path / "fuzz.toml"
    path.write_text(text)
    for read, error in ((lambda: load_cluster(path, 1000), ClusterFileError), (lambda: load_agents(path),
                        AgentsConfigError), (lambda: load_workload(path), WorkloadFileError)):
        try:
            read()
        except error as exc:
            assert str(path) in str(exc)
