"""The distribution as a user installs it, and a third-party policy package found by entry point.

* **The core install.** A fresh virtual environment in a temporary directory gets
  ``pip install -c constraints.txt PROJECT`` (no extras) from a copy of this tree, with pip's cache
  reused (15 to 50 s warm on the shared 2-core machine), and the example policy package
  ``examples/policy-package`` beside it. There, pyspark, DuckDB and tpchgen-cli are absent;
  every command's ``--help`` shows help or, for a command that needs an extra, one line naming
  it; ``trace generate``, ``simulate`` and ``report`` work, and the example policy is listed and
  simulated by its entry-point name.
* **Live.** The same package installed with ``pip install --target`` into a temporary directory
  on ``PYTHONPATH`` (the shared virtual environment stays untouched) is found by its entry point
  in the policy host the plugin starts beside the driver, and places every task of ``pi.py``
  submitted with ``schedbridge submit`` to the testbed's YARN.
"""
from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import sparkplugin
from bridge.cli import BENCHMARKS, SUBCOMMANDS
from bridge.common.extras import EXTRA_OF
from tests.integration.process_output import failure_excerpt

# make test-long: a venv built from pip's cache (about 100 s on a busy machine)
pytestmark = [pytest.mark.integration, pytest.mark.long]

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "examples" / "policy-package"
POLICY = "shortest-estimate-first"
JOBS = 30
# What a copy of the tree leaves out: environments, caches, results, and build outputs (pip's build/,
# Maven's target/) only beside the file of the build that writes them: bridge/target is a package.
_ANYWHERE = shutil.ignore_patterns(".venv", ".cache", ".testbed", ".git", "results", "__pycache__", "*.egg-info",
                                   ".hypothesis", ".pytest_cache")
BUILD_OUTPUTS = {"build", "target"}


def not_copied(directory: str, names: list[str]) -> set[str]:
    ignored = set(_ANYWHERE(directory, names))
    if "pyproject.toml" in names or "pom.xml" in names:
        ignored |= BUILD_OUTPUTS & set(names)
    return ignored


def clean_env() -> dict[str, str]:
    """This environment without what would let the shared venv or the tree leak in (and with an
    80-column terminal, so help text wraps as in :func:`full_help`)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
    return {**env, "COLUMNS": "80"}


def pip_install(python: Path | str, *args: str) -> None:
    """``pip install`` with the caller's pip cache; fails the test with pip's own message."""
    result = subprocess.run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", *args],
                            capture_output=True, text=True, timeout=900, env=clean_env())
    assert result.returncode == 0, result.stderr[-3000:]


def copy_of(tree: Path, dest: Path) -> Path:
    """A copy of ``tree`` to build from: pip builds a local project in place, and the shared
    tree must not get build/ and egg-info directories from a test."""
    return Path(shutil.copytree(tree, dest, ignore=not_copied))


class CoreVenv:
    """A virtual environment with the core install and the example policy package."""

    def __init__(self, work: Path) -> None:
        self.work = work
        self.bin = work / "venv" / "bin"
        source = copy_of(ROOT, work / "src")
        start = time.monotonic()
        subprocess.run([sys.executable, "-m", "venv", str(work / "venv")], check=True, timeout=300)
        pip_install(self.bin / "python", "-c", str(source / "constraints.txt"), str(source))
        pip_install(self.bin / "python", str(source / "examples" / "policy-package"))
        self.install_s = time.monotonic() - start

    def run(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        """``schedbridge ARGS`` (or ``python -c`` with ``args[0] == "-c"``) in the venv, from its directory."""
        cmd = [str(self.bin / "python"), *args] if args[0] == "-c" else [str(self.bin / "schedbridge"), *args]
        result = subprocess.run(cmd, cwd=self.work, capture_output=True, text=True, timeout=600, env=clean_env())
        if check:
            assert result.returncode == 0, result.stderr[-3000:]
        return result


@pytest.fixture(scope="module")
def core(tmp_path_factory: pytest.TempPathFactory) -> CoreVenv:
    venv = CoreVenv(tmp_path_factory.mktemp("core-install"))
    print(f"core venv with the example package installed in {venv.install_s:.1f} s")
    return venv


def test_the_core_install_has_no_package_of_an_extra(core: CoreVenv) -> None:
    for module in EXTRA_OF:
        result = core.run("-c", f"import {module}", check=False)
        assert result.returncode != 0 and f"No module named '{module}'" in result.stderr
    assert not (core.bin / "tpchgen-cli").exists()


# The commands whose module imports pyspark when it loads: the core install lists them as needing
# the [spark] extra, and their `--help` is the one line that names it. So is `submit --help`: submit
# hands its options, --help included, to pyspark's spark-submit. Every other command shows its help
# there: the core's own, and `sim-vs-live`, which imports pyspark only when it runs live.
NEEDS_SPARK = {"demo", "replay", "tpch", "bench spark", "bench spark-tpch"}
NEEDS_SPARK_FOR_HELP = NEEDS_SPARK | {"submit"}
ALL_COMMANDS = [*(f"bench {name}" for name in BENCHMARKS), *SUBCOMMANDS]


def full_help(command: str) -> str:
    """``schedbridge COMMAND --help`` as this environment (every extra installed) prints it."""
    from click.testing import CliRunner

    from bridge.cli import main

    # click wraps help to 2 columns less than the terminal it finds (COLUMNS, :func:`clean_env`)
    result = CliRunner().invoke(main, [*command.split(), "--help"], prog_name="schedbridge", terminal_width=78)
    assert result.exit_code == 0, result.output
    return result.stdout


@pytest.mark.parametrize("command", ALL_COMMANDS)
def test_every_command_shows_help_or_names_the_extra_it_needs(core: CoreVenv, command: str) -> None:
    result = core.run(*command.split(), "--help", check=False)
    if command in NEEDS_SPARK_FOR_HELP:
        assert (result.returncode, result.stdout) == (1, ""), result.stderr[-3000:]
        assert result.stderr == f"Error: `schedbridge {command}` needs pyspark, which is not installed: " \
                                "pip install 'schedbridge[spark]'\n"
    else:  # the same help as with every extra installed (but in a group's list of commands, those
        # that need the extra, checked below)
        assert (result.returncode, result.stderr) == (0, ""), result.stderr[-3000:]
        assert result.stdout.startswith(f"Usage: schedbridge {command} ")
        listed = {name.split()[-1] for name in NEEDS_SPARK if name.startswith(f"{command} ")}
        assert except_lines_of(result.stdout, listed) == except_lines_of(full_help(command), listed)


def except_lines_of(help_text: str, commands: set[str]) -> list[str]:
    """The lines of ``help_text`` but those listing one of ``commands``."""
    return [line for line in help_text.splitlines() if line.split()[:1] not in ([c] for c in commands)]


def test_the_command_lists_mark_the_commands_that_need_an_extra(core: CoreVenv) -> None:
    for group, names in (("", SUBCOMMANDS), ("bench ", BENCHMARKS)):
        listing = core.run(*group.split(), "--help").stdout.splitlines()
        for name in names:
            (line,) = [x for x in listing if x.split()[:1] == [name]]
            assert ("(needs the [spark] extra)" in line) == (f"{group}{name}" in NEEDS_SPARK), line


def test_a_live_command_stops_with_the_extra_to_install(core: CoreVenv) -> None:
    result = core.run("replay", "workload.toml", "--policy", "fifo", check=False)
    assert result.returncode == 1
    assert result.stderr == "Error: `schedbridge replay` needs pyspark, which is not installed: " \
                            "pip install 'schedbridge[spark]'\n"


def test_the_example_policy_is_listed_by_its_entry_point(core: CoreVenv) -> None:
    listed = core.run("simulate", "--list-policies").stdout
    assert f"{POLICY} shortest estimate first (an example package)" in listed
    assert "tie_break=arrival" in listed


def test_simulate_and_report_run_the_example_policy(core: CoreVenv) -> None:
    """Shortest estimate first finishes every job, and the short jobs much sooner than FIFO: it is
    the package's policy that ran, with its parameter."""
    core.run("trace", "generate", "yahoo", "--jobs", str(JOBS), "--seed", "1", "--out", "t.trace")
    summaries = {}
    for policy, params in [(POLICY, ["--param", "tie_break=size"]), ("fifo", [])]:
        out = core.run("simulate", "--trace", "t.trace", "--nodes", "20", "--policy", policy, *params,
                       "--out", f"{policy}.csv", "--json").stdout
        summaries[policy] = json.loads(out)
    sef, fifo = summaries[POLICY], summaries["fifo"]
    assert sef["policy"] == POLICY and sef["settings"] == ["tie_break=size"]
    assert sef["finished_jobs"] == fifo["finished_jobs"] == JOBS
    assert sef["jct"]["short"]["mean"] < fifo["jct"]["short"]["mean"] / 2, (sef["jct"], fifo["jct"])
    printed = core.run("report", f"{POLICY}.csv", "fifo.csv", "--out", "report").stdout
    # the report: a column per run, each with the 30 jobs of its per-job file and, per class
    # (simulate's, by the cutoff the generated trace states), their completion times' mean and
    # percentiles as numpy computes them from the file's submit and finish times
    table = pd.read_csv(core.work / "report" / "report.csv", index_col=0)
    labels = [f"{POLICY} (sim)", "fifo (sim)"]
    assert list(table.columns) == labels
    text = (core.work / "report" / "report.txt").read_text()
    assert printed.startswith(text) and text.startswith("reporting cutoff 90.5811 s (recorded by simulate)")
    assert text.splitlines()[1].split() == " ".join(labels).split()
    rows = {line.split("  ")[0]: line for line in text.splitlines()[2:]}
    for label, policy in zip(labels, (POLICY, "fifo")):
        jobs = pd.read_csv(core.work / f"{policy}.csv")
        expected = {"jobs": JOBS, "succeeded": JOBS, "failed": 0}
        for cls, of_class in jobs.groupby("class"):
            jct = (of_class["finish"] - of_class["submit"]).to_numpy()
            expected |= {f"{cls} jobs finished": len(jct), f"{cls} mean JCT (s)": jct.mean(),
                         **{f"{cls} JCT p{p} (s)": np.percentile(jct, p) for p in (50, 90, 99)}}
        for measure, value in expected.items():
            assert table.loc[measure, label] == pytest.approx(value, rel=1e-9), (measure, label)
            shown = float(rows[measure][len(measure):].split()[labels.index(label)])  # 3 significant digits
            assert shown == pytest.approx(value, rel=5e-3), (measure, label, rows[measure])


def test_the_example_policy_places_every_task_live_on_yarn(testbed, tmp_path: Path) -> None:
    site = tmp_path / "site"
    pip_install(sys.executable, "--no-deps", "--target", str(site), str(copy_of(EXAMPLE, tmp_path / "package")))
    stats_file, out = tmp_path / "stats.json", tmp_path / "pi.txt"
    partitions = 12
    cmd = [str(Path(sys.executable).parent / "schedbridge"), "submit", "--master", "spark-schedbridge://yarn",
           "--num-executors", "2", "--conf", f"spark.schedbridge.policy={POLICY}",
           *(arg for key, value in sparkplugin.policy_conf({"tie_break": "size"}).items()
             for arg in ("--conf", f"{key}={value}")),
           "--conf", f"spark.schedbridge.stats.file={stats_file}", "--conf", f"spark.executorEnv.PYTHONPATH={ROOT}",
           # room for the policy's call on a loaded host: a round past the default 50 ms deadline
           # falls back to Spark (tested in test_sparkplugin_local.py), seen once here in a CI run
           "--conf", "spark.schedbridge.deadline=5s",
           str(ROOT / "tests" / "integration" / "jobs" / "pi.py"), str(partitions), "--executors", "2",
           "--out", str(out)]
    env = {**testbed.spark_env(), "PYTHONPATH": f"{site}{os.pathsep}{ROOT}"}
    result = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, failure_excerpt(result.stderr)
    assert math.isclose(float(out.read_text()), math.pi, abs_tol=0.1)
    stats = json.loads(stats_file.read_text())
    assert stats["policy"] == POLICY and stats["endpoint"].startswith("a host beside the driver"), stats
    assert stats["placed_tasks"] >= partitions and stats["fallback_rounds"] == 0 and stats["warnings"] == 0, stats
