"""Fuzzing the command line's inputs: numeric options, policy parameters, trace files, workload
files and `report` inputs. Whatever the input, the outcome is success or one clear error: never a
traceback, never a zero exit on bad input, never a partial output; and a success is checked too
(a valid option value gives the results worked out by hand for a small trace, or reaches the
command as the number it spells; an accepted file gives what the file says). Derandomized, so a failure
reproduces; about 15 s in all."""
from __future__ import annotations

import json
import math
import shutil
import tomllib
from collections.abc import Callable
from pathlib import Path

import click
import pandas as pd
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


def int_within(lo: int, hi: int) -> Callable[[str], bool]:
    return lambda text: (x := _int(text)) is not None and lo <= x <= hi


# (command line before the option, option, which values are valid, the type a valid value parses
# to). Every command here must refuse a bad value when parsing, before reading a trace or running
# anything.
SIMULATE = ("simulate", "--trace", "t.trace", "--policy", "fifo")
NUMERIC_OPTIONS = [
    ((*SIMULATE, "--nodes", "2"), "--network-delay", finite_within(0, 60), float),
    ((*SIMULATE, "--nodes", "2"), "--report-cutoff", finite_within(0, 1e9), float),
    (SIMULATE, "--nodes", int_within(1, 10**6), int),
    ((*SIMULATE, "--nodes", "2"), "--slots", int_within(1, 1024), int),
    ((*SIMULATE, "--nodes", "2"), "--seed", lambda t: _int(t) is not None, int),
    (("experiment", "hawk-vs-sparrow", "--quick"), "--scale", finite_within(0, 1, lo_open=True), float),
    (("trace", "generate", "yahoo"), "--jobs", int_within(1, 10**6), int),
    (("trace", "generate", "yahoo", "--jobs", "2"), "--load", finite_within(0.001, 100), float),
    (("trace", "generate", "yahoo", "--jobs", "2"), "--nodes", int_within(1, 10**6), int),
    (("trace", "generate", "yahoo", "--jobs", "2"), "--seed", int_at_least(0), int),
    (("bench", "sim"), "--jobs", int_within(1, 10**6), int),
    (("bench", "sim"), "--nodes", int_within(1, 10**6), int),
    (("bench", "sim"), "--load", finite_within(0.01, 10), float),
]
# and, so that valid values come up often enough to be checked too, small numbers near the bounds
NUMBERISH = st.one_of(st.sampled_from(NASTY), TEXT, st.floats().map(repr), st.integers(-10**30, 10**30).map(str),
                      st.integers(-2, 12).map(str), st.floats(-1, 12).map(repr))

# TRACE by hand: job 0 (submit 0, tasks of 5 and 5 s), job 1 (1.5, 3 s), job 2 (4, tasks of 1, 2 and 3 s).
MEAN_DURATION = (5.0, 3.0, 2.0)
DEFAULT_DELAY = 0.0005


def fifo_jct_two_slots(d: float) -> list[float]:
    """FIFO on two single-slot nodes, one-way delay d: job 0 takes both slots (its tasks start at d
    and end at 5 + d; the scheduler hears it at 5 + 2d); job 1's task runs on one from 5 + 3d to 8 + 3d,
    job 2's first two tasks in turn on the other: 5 + 3d to 6 + 3d, 6 + 5d to 8 + 5d, and its third,
    once job 1's slot is heard free at 8 + 4d, there from 8 + 5d to 11 + 5d."""
    return [5 + d, 8 + 3 * d - 1.5, 11 + 5 * d - 4]


def fifo_jct_alone(d: float) -> list[float]:
    """FIFO with six or more slots: every task starts as its assignment arrives."""
    return [5 + d, 3 + d, 3 + d]


def fifo_jct_one_slot(d: float) -> list[float]:
    """FIFO on one slot: the six tasks one after the other, each 2d after the last one ended."""
    return [10 + 3 * d, 13 + 5 * d - 1.5, 19 + 11 * d - 4]


def check_simulate(option: str, number: float, result: Result, out: Path) -> None:
    """A run of TRACE: its three jobs, each one's completion time worked out by hand above, the
    short/long classes by the reporting cutoff, the settings echoed in the summary."""
    assert result.exit_code == 0, (result.output, result.exception)
    summary = json.loads(result.stdout)
    frame = pd.read_csv(out)
    assert frame["job_id"].tolist() == [0, 1, 2] and frame["n_tasks"].tolist() == [2, 1, 3]
    jct = frame["completion_time"].tolist()
    assert jct == pytest.approx((frame["finish"] - frame["submit"]).tolist(), rel=1e-12)
    delay = number if option == "--network-delay" else DEFAULT_DELAY
    slots = {"--nodes": number, "--slots": 2 * number}.get(option, 2)
    if slots == 2:
        assert jct == pytest.approx(fifo_jct_two_slots(delay), rel=1e-9)
    elif slots == 1:
        assert jct == pytest.approx(fifo_jct_one_slot(delay), rel=1e-9)
    elif slots >= 6:
        assert jct == pytest.approx(fifo_jct_alone(delay), rel=1e-9)
    else:  # no job finishes before its longest task could have, from its assignment on
        assert all(j >= a - 1e-9 for j, a in zip(jct, fifo_jct_alone(delay))), jct
    assert (summary["finished_jobs"], summary["unfinished_jobs"], summary["tasks"]) == (3, 0, 6)
    # the cutoff given, or by default the p90 of the mean task durations 2, 3, 5: 3 + 0.8 x 2
    cutoff = number if option == "--report-cutoff" else 4.6
    long = [m > cutoff for m in MEAN_DURATION]
    assert frame["class"].tolist() == ["long" if x else "short" for x in long]
    assert (summary["jct"]["long"]["count"], summary["jct"]["short"]["count"]) == (sum(long), 3 - sum(long))
    assert summary["reporting_cutoff"] == pytest.approx(cutoff, rel=1e-12)
    assert summary["seed"] == (number if option == "--seed" else 1)
    assert (summary["nodes"], summary["slots_per_node"]) == (number if option == "--nodes" else 2,
                                                             number if option == "--slots" else 1)


def check_generate(option: str, number: float, result: Result, out: Path) -> None:
    """A trace of as many jobs as asked under the header stating its reporting cutoff, each line
    `submit n mean d1..dn` (the mean of the durations), finite, in submission order."""
    assert result.exit_code == 0, (result.output, result.exception)
    header, *lines = out.read_text().splitlines()
    assert header.startswith("# reporting_cutoff=90.5811 "), header
    assert len(lines) == (number if option == "--jobs" else 2)
    submits = []
    for line in lines:
        fields = [float(x) for x in line.split()]
        assert len(fields) == 3 + int(fields[1]) and all(math.isfinite(x) and x >= 0 for x in fields), line
        assert fields[2] == pytest.approx(sum(fields[3:]) / fields[1], rel=1e-6, abs=1e-6)  # printed to 6 places
        submits.append(fields[0])
    assert submits == sorted(submits)


# What a valid value is run with: a cheap run of the real command and a check of its output, or
# (for commands whose smallest run takes seconds, or values that would start a large run) the
# command's work replaced, checking only that the value reaches it as parsed.
RUNS: dict[tuple[str, str], tuple[Callable[[float], bool], Callable[[str, float, Result, Path], None]]] = {
    ("simulate", "--network-delay"): (lambda x: True, check_simulate),
    ("simulate", "--report-cutoff"): (lambda x: True, check_simulate),
    ("simulate", "--nodes"): (lambda x: x <= 5000, check_simulate),
    ("simulate", "--slots"): (lambda x: x <= 5000, check_simulate),
    ("simulate", "--seed"): (lambda x: True, check_simulate),
    ("trace", "--jobs"): (lambda x: x <= 500, check_generate),
    ("trace", "--load"): (lambda x: True, check_generate),
    ("trace", "--nodes"): (lambda x: True, check_generate),
    ("trace", "--seed"): (lambda x: True, check_generate),
}


def leaf_command(words: tuple[str, ...]) -> click.Command:
    """The click command a command line runs (its leading words that name groups and commands)."""
    command: click.Command = main
    for word in words:
        if not isinstance(command, click.Group):
            break
        found = command.get_command(click.Context(command), word)
        if found is None:
            break
        command = found
    return command


@pytest.mark.parametrize("before,option,valid,kind", NUMERIC_OPTIONS,
                         ids=[f"{b[0]}{o}" for b, o, _, _ in NUMERIC_OPTIONS])
@FUZZ
@given(value=NUMBERISH)
def test_numeric_options_refuse_every_bad_value(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                before: tuple[str, ...], option: str, valid: Callable[[str], bool],
                                                kind: type, value: str) -> None:
    """A bad value is refused naming the option, with nothing written; a good one runs (cheaply,
    with its output checked) or reaches the command's work as the number it spells."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "t.trace").write_text(TRACE)
    out = tmp_path / "out"
    shutil.rmtree(out, ignore_errors=True)
    out_args = ("--out", str(out / "x.csv")) if before[0] in ("simulate", "trace") else ()
    out_args = ("--out", str(out)) if before[0] == "experiment" else out_args
    json_args = ("--json",) if before[0] == "simulate" else ()
    if not valid(value):
        result = invoke(*before, f"{option}={value}", *out_args)
        assert_clean_refusal(result, option)
        assert not out.exists()
        return
    number = kind(value)
    cheap, check = RUNS.get((before[0], option), (lambda x: False, None))
    if cheap(number):
        assert check is not None
        check(option, number, invoke(*before, f"{option}={value}", *out_args, *json_args), out / "x.csv")
        return
    command = leaf_command(before)
    (param,) = [p for p in command.params if option in p.opts]
    seen: dict[str, object] = {}
    with monkeypatch.context() as m:
        m.setattr(command, "callback", lambda **params: seen.update(params))
        result = invoke(*before, f"{option}={value}", *out_args)
    assert result.exit_code == 0, (result.output, result.exception)
    assert type(seen[param.name]) is kind and seen[param.name] == number


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
        # a row per job line of the file (blank and # lines skipped), ids by line or the file's,
        # every job finished, no sooner than its mean task duration
        lines = [s for s in (raw.decode("utf-8").strip() for raw in trace.read_bytes().split(b"\n"))
                 if s and not s.startswith("#")]
        ids = [json.loads(s).get("id", i) if suffix == ".jsonl" else i for i, s in enumerate(lines)]
        frame = pd.read_csv(out)
        assert sorted(frame["job_id"]) == sorted(ids), (lines, frame)
        assert frame["finish"].notna().all() and (frame["completion_time"] >= frame["mean_duration"] - 1e-9).all()
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
        workload = load_workload(path)
    except WorkloadFileError as exc:
        assert str(exc).startswith(str(path)) and "\n" not in str(exc).strip()
        return
    # accepted: what it read is what the file says (its TOML parsed here)
    data = tomllib.loads(path.read_bytes().decode("utf-8"))
    assert (workload.path, workload.name, workload.seed) == (path, data.get("name", path.stem), data["seed"])
    assert [i.name for i in workload.inputs] == list(data.get("inputs", {}))
    assert (workload.trace is None, workload.mix is None) == ("trace" not in data, "trace" in data)


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
        # one run: its jobs, outcomes and mean completion time as the jobs.csv given says them
        jobs = pd.read_csv(run / "jobs.csv")
        done = jobs["status"] == "succeeded"
        jct = (jobs["end_s"].astype(float) - jobs["submit_s"].astype(float))[done].dropna()
        table = pd.read_csv(out / "report.csv", index_col=0)
        assert table.shape[1] == 1, table
        column = table.iloc[:, 0]
        assert (column["jobs"], column["succeeded"], column["failed"]) == \
            (len(jobs), done.sum(), (jobs["status"] == "failed").sum())
        # no task durations: every job is short
        assert column["short mean JCT (s)"] == pytest.approx(jct.mean(), rel=1e-9, nan_ok=True)
        assert column["long jobs finished"] == 0
        assert (out / "report.txt").read_text().splitlines()[1].split() == table.columns[0].split()
    else:
        assert_clean_refusal(result, str(run))
        assert len(result.output.strip().splitlines()) == 1
        assert not out.exists()
