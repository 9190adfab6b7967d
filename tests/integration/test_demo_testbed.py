"""`schedbridge demo` on the real local testbed, its two comparisons at a reduced size: a small
sleeping-task trace under stock Spark and Eagle, and a few WordCount jobs under FIFO and Kairos
with --preempt (as root: the node agents resize containers). Every figure the demo prints, and
each reading line, is checked against the comparison's own table.csv (which the sim-vs-live test
checks against the replay's and the simulator's files)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from bridge.tables import cell
from tests.integration.process_output import failure_excerpt

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "workloads" / "examples"
TRACE = "0 3 2 2 2 2\n1 1 6 6\n2 2 1 1 1\n4 3 1 1 1 1\n5 1 1 1\n7 2 1.5 1 2\n9 1 1 1\n"
TRACE_WORKLOAD = 'name = "demo-trace"\nseed = 3\n[trace]\npath = "small.trace"\ntime_scale = 1.0\ntask_mode = "sleep"\n'
PLAN = """\
[[comparison]]
name = "placement"
title = "placement, small"
workload = "small.toml"
policies = ["stock", "eagle"]
executors = 2
executor_cores = 2
cutoff = 2.5
reading = "short p90"
params = { cutoff = "2.5" }

[[comparison]]
name = "preemption"
title = "preemption, small"
workload = "hol.toml"
policies = ["fifo", "kairos"]
executors = 2
executor_cores = 1
preempt = true
cutoff = 2.0
reading = "short p50"
"""


def _hol_workload() -> str:
    """kairos-hol.toml shrunk: its two long jobs (lighter) and two short ones."""
    text = (EXAMPLES / "kairos-hol.toml").read_text()
    return (text.replace('name = "kairos-hol"', 'name = "hol"').replace("jobs = 14", "jobs = 4")
            .replace("extra_flops = 9000", "extra_flops = 2000"))


@pytest.fixture(scope="module")
def run(testbed, tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    if os.geteuid() != 0:
        pytest.skip("the preemption comparison's node agents write cgroups: run as root")
    root = tmp_path_factory.mktemp("demo")
    (root / "small.trace").write_text(TRACE)
    (root / "small.toml").write_text(TRACE_WORKLOAD)
    (root / "hol.toml").write_text(_hol_workload())
    (root / "plan.toml").write_text(PLAN)
    out = root / "out"
    command = [sys.executable, "-c", "from bridge.cli import main; main()", "demo", "--plan", str(root / "plan.toml"),
               "--keep-testbed", "--out", str(out)]
    done = subprocess.run(command, env=testbed.spark_env(), capture_output=True, text=True, timeout=1200)
    assert done.returncode == 0, failure_excerpt(done.stderr)
    assert "demo: [1/2] placement" in done.stderr and "demo: [2/2] preemption" in done.stderr
    return done.stdout, out


def _times(value: float, base: float) -> tuple[float, str]:
    return (base / value, "lower") if value <= base else (value / base, "higher")


def _printed_rows(stdout: str, title: str) -> list[list[str]]:
    """The rows of the figures table printed under `title`."""
    block = stdout.split(title, 1)[1].splitlines()
    assert block[1].startswith("simulated durations: ") and block[2].split()[:3] == ["policy", "class", "jobs"]
    return [line.split() for line in block[3:7]]


@pytest.mark.parametrize(("name", "policies", "reading"), [("placement", ("stock", "eagle"), ("short", "p90")),
                                                           ("preemption", ("fifo", "kairos"), ("short", "p50"))])
def test_printed_figures_are_the_comparisons_tables(run: tuple[str, Path], name: str, policies: tuple[str, str],
                                                    reading: tuple[str, str]) -> None:
    stdout, out = run
    table = pd.read_csv(out / name / "table.csv").set_index(["policy", "class", "JCT"])
    rows = _printed_rows(stdout, f"{name}, small (")
    expected = []
    for policy in policies:
        for cls in ("short", "long"):
            row = [policy, cls, cell(int(table.loc[(policy, cls, "p50"), "jobs"]))]
            for stat in ("p50", "p90"):
                figures = table.loc[(policy, cls, stat)]
                row += [cell(figures["live (s)"]), cell(figures["sim (s)"]), cell(figures["live/sim"])]
            expected.append(row)
    assert rows == expected
    cls, stat = reading
    other, base = table.loc[(policies[1], cls, stat)], table.loc[(policies[0], cls, stat)]
    (lx, lway), (sx, sway) = (_times(other[side], base[side]) for side in ("live (s)", "sim (s)"))
    assert (f"reading: {policies[1]}'s {cls}-job {stat} is {lx:.2g}x {lway} than {policies[0]}'s live "
            in stdout) and f"; the simulator predicted {sx:.2g}x {sway} (" in stdout
    assert (out / name / "jct_cdf.png").stat().st_size > 0 and f"plot: {out / name / 'jct_cdf.png'}" in stdout


def test_summary_is_what_was_printed_and_kairos_preempted(run: tuple[str, Path]) -> None:
    stdout, out = run
    assert (out / "summary.txt").read_text().strip() == stdout.strip()
    kairos = pd.read_csv(out / "preemption" / "table.csv")
    assert set(kairos["policy"]) == {"fifo", "kairos"}
    applied = list((out / "preemption" / "kairos").rglob("preemption.json"))  # the replay's record of its resizes
    assert len(applied) == 1 and json.loads(applied[0].read_text()), "Kairos preempted nothing"
