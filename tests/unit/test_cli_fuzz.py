"""Fuzzing the command line's inputs: numeric options, policy parameters, trace files, workload
files and `report` inputs. Whatever the input, the outcome is success or one clear error: never a
traceback, never a zero exit on bad input, never a partial output. Derandomized, so a failure
reproduces; about 15 s in all."""
from __future__ import annotations

import math
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner, Result
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bridge.cli import main
from workloads.workload_file import WorkloadFileError, load_workload

FUZZ = settings(derandomize=True, database=None, deadline=None,
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
EXAMPLES = Path(__file__).resolve().parents[2] / "workloads" / "examples"
TRACE = "0 2 5 5 5\n1.5 1 3 3\n4 3 2 1 2 3\n"
JSONL = ('{"submit": 0, "durations": [1, 2], "id": 4, "stage_of": [0, 1], "stage_parents": [[], [0]]}\n'
         '{"submit": 1, "durations": [3], "estimate": 2, "demands": [[1, 2]]}\n')
JOBS = "job_id,submit_s,end_s,status,duration_alone_s\n1,0,5,succeeded,4\n2,1,9,succeeded,\n3,2,,failed,\n"
META = '{"policy": "fifo", "mode": "shared", "source": "live", "plugin": {"placed_tasks": 3}}'

# Tokens that break numbers and files in the ways people (and programs) do.
NASTY = ["nan", "NaN", "-nan", "inf", "-inf", "+inf", "Infinity", "1e999", "-1e999", "-1", "-0.5", "0", "",
         " ", "abc", "1,5", "0x10", "1e", "--", "\x00", "é", "💥", "\\", '"', "{", "[]", "99999999999999999999"]
TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)


def invoke(*args: str) -> Result:
    return CliRunner().invoke(main, list(args))


def assert_clean_refusal(result: Result, *names: str) -> None:
    """Refused with a usage or user error that names ``names``: not a traceback, not success."""
    assert result.exit_code in (1, 2), (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Error" in result.output and "Traceback" not in result.output
    for name in names:
        assert name in result.output, result.output


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _int(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def finite_within(lo: float, hi: float = math.inf, lo_open: bool = False) -> Callable[[str], bool]:
    def ok(text: str) -> bool:
        x = _float(text)
        return x is not None and math.isfinite(x) and (x > lo if lo_open else x >= lo) and x <= hi
    return ok


def int_at_least(lo: int) -> Callable[[str], bool]:
    return lambda text: (x := _int(text)) is not None and x >= lo


# (command line before the option, option, which values are valid). Every command here must refuse
# a bad value when parsing, before reading a trace or running anything.
NUMERIC_OPTIONS = [
    (("simulate", "--trace", "t.trace", "--policy", "fifo", "--nodes", "2"), "--network-delay", finite_within(0)),
    (("simulate", "--trace", "t.trace", "--policy", "fifo", "--nodes", "2"), "--report-cutoff", finite_within(0)),
    (("simulate", "--trace", "t.trace", "--policy", "fifo"), "--nodes", int_at_least(1)),
    (("simulate", "--trace", "t.trace", "--policy", "fifo", "--nodes", "2"), "--slots", int_at_least(1)),
    (("simulate", "--trace", "t.trace", "--policy", "fifo", "--nodes", "2"), "--seed", lambda t: _int(t) is not None),
    (("experiment", "hawk-vs-sparrow", "--quick"), "--scale", finite_within(0, 1, lo_open=True)),
    (("trace", "generate", "yahoo"), "--jobs", int_at_least(1)),
    (("trace", "generate", "yahoo", "--jobs", "2"), "--load", finite_within(0, lo_open=True)),
    (("trace", "generate", "yahoo", "--jobs", "2"), "--nodes", int_at_least(1)),
    (("trace", "generate", "yahoo", "--jobs", "2"), "--seed", int_at_least(0)),
    (("bench", "sim"), "--jobs", int_at_least(1)),
    (("bench", "sim"), "--nodes", int_at_least(1)),
    (("bench", "sim"), "--load", finite_within(0.01, 10)),
]
NUMBERISH = st.one_of(st.sampled_from(NASTY), TEXT, st.floats().map(repr), st.integers(-10**30, 10**30).map(str))


@pytest.mark.parametrize("before,option,valid", NUMERIC_OPTIONS, ids=[f"{b[0]}{o}" for b, o, _ in NUMERIC_OPTIONS])
@FUZZ
@given(value=NUMBERISH)
def test_numeric_options_refuse_every_bad_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                before: tuple[str, ...], option: str, valid: Callable[[str], bool],
                                                value: str) -> None:
    if valid(value.strip()):
        return  # a valid value would start real work; the other tests run those
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "out"
    out_args = ("--out", str(out / "x.csv")) if before[0] in ("simulate", "trace") else ()
    out_args = ("--out", str(out)) if before[0] == "experiment" else out_args
    result = invoke(*before, f"{option}={value}", *out_args)
    assert_clean_refusal(result, option)
    assert not out.exists()


FLOAT_PARAMETERS = [("sparrow", "probe_ratio"), ("eagle", "cutoff"), ("hawk", "probe_ratio"), ("kairos", "w"),
                    ("dlwl", "heartbeat"), ("bigc", "short_share"), ("ursa", "interval"), ("falcon", "delta"),
                    ("vqs", "slot")]


@pytest.mark.parametrize("policy,key", FLOAT_PARAMETERS)
@FUZZ
@given(value=st.sampled_from(["nan", "inf", "-inf", "1e999", "-1", "abc", "", "-1e-300"]))
def test_policy_parameters_refuse_bad_values(tmp_path: Path, policy: str, key: str, value: str) -> None:
    trace = tmp_path / "t.trace"
    trace.write_text(TRACE)
    result = invoke("simulate", "--trace", str(trace), "--policy", policy, "--nodes", "2", "--param", f"{key}={value}")
    assert_clean_refusal(result, key)


def mutate(text: str, data: st.DataObject) -> bytes:
    """``text`` with a few tokens replaced by nasty ones, bytes inserted or lines cut short."""
    tokens = text.replace("\n", " \n ").split(" ")
    for _ in range(data.draw(st.integers(1, 3))):
        i = data.draw(st.integers(0, len(tokens) - 1))
        tokens[i] = data.draw(st.one_of(st.sampled_from(NASTY), TEXT))
    raw = " ".join(tokens).replace(" \n ", "\n").encode("utf-8")
    if data.draw(st.booleans()):
        at = data.draw(st.integers(0, len(raw)))
        raw = raw[:at] + data.draw(st.binary(max_size=4)) + raw[at:]
    if data.draw(st.booleans()):
        raw = raw[:data.draw(st.integers(0, len(raw)))]
    return raw


@pytest.mark.parametrize("suffix,text", [(".trace", TRACE), (".jsonl", JSONL)])
@FUZZ
@given(data=st.data())
def test_trace_files(tmp_path: Path, suffix: str, text: str, data: st.DataObject) -> None:
    trace = tmp_path / f"fuzzed{suffix}"
    trace.write_bytes(mutate(text, data))
    out = tmp_path / "res" / "o.csv"
    shutil.rmtree(out.parent, ignore_errors=True)
    result = invoke("simulate", "--trace", str(trace), "--policy", "sparrow", "--nodes", "2", "--out", str(out))
    if result.exit_code == 0:
        assert out.is_file()
    else:
        assert_clean_refusal(result, str(trace))
        assert not out.parent.exists()


@FUZZ
@given(data=st.data())
def test_workload_files(tmp_path: Path, data: st.DataObject) -> None:
    name = data.draw(st.sampled_from(sorted(p.name for p in EXAMPLES.glob("*.toml"))))
    shutil.copytree(EXAMPLES / "traces", tmp_path / "traces", dirs_exist_ok=True)
    path = tmp_path / name
    path.write_bytes(mutate((EXAMPLES / name).read_text(), data))
    try:
        load_workload(path)
    except WorkloadFileError as exc:
        assert str(exc).startswith(str(path)) and "\n" not in str(exc).strip()


JSON = st.recursive(st.none() | st.booleans() | st.floats() | st.integers() | TEXT,
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
                    max_leaves=6)


@FUZZ
@given(data=st.data())
def test_report_inputs(tmp_path: Path, data: st.DataObject) -> None:
    run = tmp_path / "run"
    shutil.rmtree(run, ignore_errors=True)
    run.mkdir()
    (run / "jobs.csv").write_bytes(mutate(JOBS.replace(",", " , "), data).replace(b" , ", b","))
    meta = data.draw(st.one_of(st.just(META), JSON.map(repr), st.builds(
        lambda plugin: f'{{"policy": "p", "plugin": {plugin}}}', JSON.map(repr))))
    (run / "meta.json").write_text(meta.replace("'", '"'))
    out = tmp_path / "report"
    shutil.rmtree(out, ignore_errors=True)
    result = CliRunner().invoke(main, ["report", str(run), "--out", str(out)])
    if result.exit_code == 0:
        assert (out / "report.csv").is_file() and (out / "report.txt").is_file()
    else:
        assert_clean_refusal(result, str(run))
        assert len(result.output.strip().splitlines()) == 1
        assert not out.exists()
