"""One vocabulary across commands: the input file as an argument (`simulate TRACE`, `rank TRACE`,
`replay WORKLOAD`, `sim-vs-live WORKLOAD`, `report RESULTS...`), the short/long cutoff as `--cutoff`,
the older spellings `simulate --trace` and `--report-cutoff` still accepted and said so in --help;
units in `simulate`'s table; a description beside every name `experiment --list` prints."""
from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from bridge.apps.experiments import EXPERIMENTS
from bridge.cli import main

TRACE = "0 1 3 3\n0 1 4 4\n1 2 2 2 2\n2 1 50 50\n"
INPUT_FIRST = {"simulate": "TRACE", "rank": "TRACE", "replay": "WORKLOAD", "sim-vs-live": "WORKLOAD",
               "report": "RESULTS"}
CUTOFF_TAKERS = ("simulate", "rank", "report", "sim-vs-live")


def invoke(*args: str) -> click.testing.Result:
    return CliRunner().invoke(main, list(args))


def command(name: str) -> click.Command:
    found = main.get_command(click.Context(main), name)
    assert found is not None, name
    return found


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "tiny.trace"
    path.write_text(TRACE)
    return path


def summary(*args: str) -> dict:
    result = invoke("simulate", *args, "--policy", "fifo", "--nodes", "2", "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.output.strip().splitlines()[-1])


@pytest.mark.parametrize("name", sorted(INPUT_FIRST))
def test_every_command_takes_its_input_file_as_an_argument(name: str) -> None:
    arguments = [p for p in command(name).params if isinstance(p, click.Argument)]
    assert arguments and arguments[0].human_readable_name == INPUT_FIRST[name]


@pytest.mark.parametrize("name", CUTOFF_TAKERS)
def test_every_command_names_the_cutoff_alike(name: str) -> None:
    options = [p for p in command(name).params if isinstance(p, click.Option) and "cutoff" in (p.name or "")]
    assert len(options) == 1 and options[0].opts[0] == "--cutoff"


def test_simulate_takes_the_trace_as_an_argument_or_by_its_older_option(trace: Path) -> None:
    as_argument = summary(str(trace))
    assert as_argument["jobs"] == 4 and as_argument["trace"] == str(trace)
    assert summary("--trace", str(trace)) == as_argument
    twice = invoke("simulate", str(trace), "--trace", str(trace), "--policy", "fifo", "--nodes", "2")
    assert twice.exit_code == 2 and "give the trace once: as TRACE or as --trace FILE" in twice.output
    missing = invoke("simulate", "--policy", "fifo", "--nodes", "2")
    assert missing.exit_code == 2 and "Missing argument 'TRACE'" in missing.output
    assert "Traceback" not in twice.output + missing.output


def test_simulate_takes_the_cutoff_by_either_name(trace: Path) -> None:
    new, old = summary(str(trace), "--cutoff", "3.5"), summary(str(trace), "--report-cutoff", "3.5")
    assert new["reporting_cutoff"] == old["reporting_cutoff"] == 3.5
    assert new["jct"]["long"]["count"] == 2 and new == old  # the 4 s and 50 s jobs are above 3.5 s


def test_simulate_help_says_which_spellings_are_older() -> None:
    text = " ".join(invoke("simulate", "--help").output.split())
    assert "simulate [OPTIONS] TRACE" in text
    assert "--trace FILE TRACE as an option: its older spelling" in text
    assert "--cutoff, --report-cutoff" in text and "(--report-cutoff: its older name, still accepted)" in text


def test_simulate_table_gives_its_units(trace: Path) -> None:
    result = invoke("simulate", str(trace), "--policy", "fifo", "--nodes", "2")
    assert result.exit_code == 0, result.output
    header = next(line for line in result.output.splitlines() if line.startswith("class"))
    assert header.split() == ["class", "jobs", "p50", "JCT", "(s)", "p90", "JCT", "(s)", "p99", "JCT", "(s)",
                              "mean", "JCT", "(s)", "p99", "slowdown"]
    assert " s  suspensions" in result.output  # the makespan's unit


def test_experiment_list_describes_every_experiment() -> None:
    result = invoke("experiment", "--list")
    assert result.exit_code == 0
    lines = result.output.splitlines()
    assert [line.split()[0] for line in lines] == sorted(EXPERIMENTS)
    for line in lines:
        name, description = line.split(maxsplit=1)
        assert description == EXPERIMENTS[name].summary and len(description) > 20
