"""Bad numbers, undecodable files and unwritable output places: one clear error naming the
option, file or key, before any work, and nothing left behind."""
from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bridge.apps import experiments
from bridge.cli import main
from policies.framework.registry import ConfigError, config_for
from workloads.trace import TraceError, read_trace
from workloads.workload_file import WorkloadFileError, load_workload

TRACE = "0 2 5 5 5\n1 1 3 3\n"


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def assert_refused(result: Result, *names: str) -> None:
    """An error (not a traceback, not success) whose message names each of ``names``."""
    assert result.exit_code in (1, 2), (result.exit_code, result.output, result.exception)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    assert "Error" in result.output and "Traceback" not in result.output
    for name in names:
        assert name in result.output, result.output


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "t.trace"
    path.write_text(TRACE)
    return path


@pytest.mark.parametrize("option,value", [
    ("--network-delay", "nan"), ("--network-delay", "inf"), ("--network-delay", "-1"),
    ("--report-cutoff", "nan"), ("--report-cutoff", "-inf"), ("--report-cutoff", "-3"),
])
def test_simulate_refuses_meaningless_numbers_and_writes_nothing(tmp_path: Path, trace: Path, option: str,
                                                                  value: str) -> None:
    out = tmp_path / "res" / "o.csv"
    result = invoke("simulate", "--trace", str(trace), "--policy", "fifo", "--nodes", "2", option, value,
                    "--out", str(out))
    assert_refused(result, option)
    assert not (tmp_path / "res").exists()


@pytest.mark.parametrize("setting,key", [("probe_ratio=inf", "probe_ratio"), ("probe_ratio=nan", "probe_ratio"),
                                         ("cutoff=-1", "cutoff")])
def test_simulate_refuses_non_finite_or_negative_policy_parameters(trace: Path, setting: str, key: str) -> None:
    result = invoke("simulate", "--trace", str(trace), "--policy", "eagle", "--nodes", "2", "--param", setting)
    assert_refused(result, key)


@pytest.mark.parametrize("command", [("simulate", "--policy", "eagle", "--nodes", "2"), ("serve", "--policy", "eagle")])
@pytest.mark.parametrize("params, message", [
    (("--param", "cutoff"), "expected KEY=VALUE, got 'cutoff'"),
    (("--param", "=1"), "expected KEY=VALUE, got '=1'"),
    (("--param", "cutoff=1", "--param", "cutoff=2"), "'cutoff' given twice"),
])
def test_param_is_refused_when_malformed_or_repeated(trace: Path, command: tuple[str, ...],
                                                      params: tuple[str, ...], message: str) -> None:
    trace_args = ("--trace", str(trace)) if command[0] == "simulate" else ()
    assert_refused(invoke(*command, *trace_args, *params), "--param", message)


def test_simulate_names_param_for_the_old_set(trace: Path) -> None:
    result = invoke("simulate", "--trace", str(trace), "--policy", "eagle", "--nodes", "2", "--set", "cutoff=1")
    assert_refused(result, "--set is now --param KEY=VALUE")


@pytest.mark.parametrize("policy,setting", [("sparrow", "probe_ratio"), ("kairos", "w"), ("hawk", "cutoff"),
                                            ("ursa", "ept"), ("falcon", "delta")])
@pytest.mark.parametrize("value", ["nan", "inf", "-inf", float("nan"), float("inf")])
def test_policy_parameters_are_finite(policy: str, setting: str, value: object) -> None:
    settings = {setting: value} if isinstance(value, float) else [f"{setting}={value}"]
    with pytest.raises(ConfigError, match=f"{setting}.*finite"):
        config_for(policy, settings)


@pytest.mark.parametrize("policy", ["eagle", "dlwl", "bigc", "hawk"])
def test_a_negative_cutoff_is_refused(policy: str) -> None:
    with pytest.raises(ConfigError, match=re.escape("cutoff must be within [0, 1e+09], got -5")):
        config_for(policy, ["cutoff=-5"])


def test_experiment_refuses_a_nan_scale_and_creates_nothing(tmp_path: Path) -> None:
    result = invoke("experiment", "hawk-vs-sparrow", "--scale", "nan", "--out", str(tmp_path / "results"))
    assert_refused(result, "--scale")
    assert not (tmp_path / "results").exists()


@pytest.mark.parametrize("value", ["nan", "inf", "0", "-2"])
def test_trace_generate_refuses_a_meaningless_load(tmp_path: Path, value: str) -> None:
    out = tmp_path / "y.trace"
    assert_refused(invoke("trace", "generate", "yahoo", "--jobs", "3", "--load", value, "--out", str(out)),
                   "--load")
    assert list(tmp_path.iterdir()) == []


def test_bench_refuses_a_nan_load() -> None:
    assert_refused(invoke("bench", "sim", "--load", "nan"), "--load")


@pytest.fixture
def fake_experiment(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """An experiment 'fake' that records its calls, writes one file and then fails."""
    calls: list[Path] = []

    def fake(out_dir: Path, quick: bool) -> list[Path]:
        calls.append(out_dir)
        (out_dir / "half.csv").write_text("a,b\n")
        raise RuntimeError("the experiment broke")

    module = types.ModuleType("fake_experiment_module")
    module.fake = fake  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setitem(experiments.EXPERIMENTS, "fake", experiments.Experiment(f"{module.__name__}:fake", "a test's"))
    return calls


def test_unwritable_out_is_refused_before_any_work(tmp_path: Path, trace: Path, fake_experiment: list[Path]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    place = str(blocker / "sub" / "o.csv")
    assert_refused(invoke("experiment", "fake", "--out", place), "--out", "not a directory")
    assert fake_experiment == []
    assert_refused(invoke("simulate", "--trace", str(trace), "--policy", "fifo", "--nodes", "2", "--out", place),
                   "--out", "not a directory")
    assert_refused(invoke("trace", "generate", "yahoo", "--jobs", "3", "--out", place), "--out")


def test_a_failed_experiment_leaves_no_directory(tmp_path: Path, fake_experiment: list[Path]) -> None:
    result = invoke("experiment", "fake", "--out", str(tmp_path / "results"))
    assert fake_experiment == [tmp_path / "results" / "fake"]
    assert isinstance(result.exception, RuntimeError)
    assert not (tmp_path / "results").exists()


def test_a_failed_experiment_keeps_an_existing_out_directory(tmp_path: Path, fake_experiment: list[Path]) -> None:
    (tmp_path / "results").mkdir()
    (tmp_path / "results" / "older.csv").write_text("x\n")
    invoke("experiment", "fake", "--out", str(tmp_path / "results"))
    assert [p.name for p in (tmp_path / "results").iterdir()] == ["older.csv"]


def test_trace_generate_creates_missing_directories(tmp_path: Path) -> None:
    out = tmp_path / "new" / "dir" / "y.trace"
    result = invoke("trace", "generate", "yahoo", "--jobs", "3", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert len(read_trace(out)) == 3


@pytest.mark.parametrize("suffix", [".trace", ".jsonl"])
def test_an_undecodable_trace_is_named_with_its_line(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"bin{suffix}"
    first = '{"submit": 0, "durations": [1]}\n' if suffix == ".jsonl" else "0 1 1 1\n"
    path.write_bytes(first.encode() + b"1 1 1 \xe9\x00\n")
    with pytest.raises(TraceError) as err:
        read_trace(path)
    assert str(err.value).startswith(f"{path}:2: field 'file': not UTF-8 text")


@pytest.mark.parametrize("field", ['"id": 1e400', '"stage_of": [1e400]'])
def test_an_overflowing_integer_in_a_jsonl_trace_is_named(tmp_path: Path, field: str) -> None:
    path = tmp_path / "t.jsonl"
    path.write_text(f'{{"submit": 0, "durations": [1], {field}}}\n')
    with pytest.raises(TraceError, match=rf"^{path}:1: field"):
        read_trace(path)


def test_simulate_names_an_undecodable_trace(tmp_path: Path) -> None:
    path = tmp_path / "bin.trace"
    path.write_bytes(b"\xff\xfe\x00\x01binary")
    result = invoke("simulate", "--trace", str(path), "--policy", "fifo", "--nodes", "2")
    assert_refused(result, f"{path}:1", "not UTF-8")


def test_an_undecodable_workload_file_is_named_with_its_line(tmp_path: Path) -> None:
    path = tmp_path / "w.toml"
    path.write_bytes(b'name = "x"\n\xff\xfe = 1\n')
    with pytest.raises(WorkloadFileError, match=r"w\.toml: line 2: not UTF-8 text"):
        load_workload(path)


@pytest.mark.parametrize("args,option", [
    (("up", "--timeout", "nan"), "--timeout"), (("up", "--timeout", "0"), "--timeout"),
    (("up", "--vcores", "-4"), "--vcores"), (("up", "--memory-mb", "0"), "--memory-mb"),
    (("status", "--nodemanagers", "0"), "--nodemanagers"), (("logs", "-n", "-1"), "--lines"),
])
def test_testbed_refuses_bad_numbers_before_touching_a_testbed(monkeypatch: pytest.MonkeyPatch,
                                                               args: tuple[str, ...], option: str) -> None:
    def no_testbed(*_args: object) -> None:
        raise AssertionError("a testbed was built from a bad value")

    monkeypatch.setattr("bridge.apps.testbed_cli._testbed", no_testbed)
    assert_refused(invoke("testbed", *args), option)


def test_experiment_lists_anywhere_but_refuses_to_run_where_it_cannot_write(monkeypatch: pytest.MonkeyPatch,
                                                                           fake_experiment: list[Path]) -> None:
    monkeypatch.chdir("/proc")  # nothing can be created here, not even by root
    listing = invoke("experiment", "--list")
    assert listing.exit_code == 0 and "hawk-vs-sparrow" in listing.output
    assert_refused(invoke("experiment", "fake"), "cannot write the results (--out) to results")
    assert fake_experiment == []
