"""`schedbridge demo`: the sim-to-real story on the local testbed, end to end.

Brings the testbed up, runs each comparison of the demo's plan (by default
``workloads/examples/demo/sim-to-real.toml``: interactive TPC-H queries behind a WordCount batch
job under stock Spark, Hawk, Eagle and Kairos with ``--preempt``) through `sim-vs-live`'s Python API,
prints per policy the live figures beside the simulator's prediction and one reading line computed
from them, and stops the testbed if it started it. The plan is data, not code, so that what the
demo shows can be changed (or shrunk, as its integration test does) without touching this module.
"""
from __future__ import annotations

import math
import os
import time
import tomllib
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field, replace
from importlib import resources
from pathlib import Path

import click

from bridge.apps.simlive.compare import Measured
from bridge.apps.simlive.measured import DEFAULT_JOB_MODEL, JOB_MODELS
from bridge.apps.simlive.session import Comparison
from bridge.common import tomltext
from bridge.common import atomic
from bridge.common.metrics import CLASSES
from bridge.common.options import OutputPath, estimates_option, renamed_option
from bridge.common.tables import text as render
from bridge.drivers.node_engine import preempting_policies
from bridge.replay.policy import check as check_policy
from bridge.testbed.cluster import Testbed, TestbedError
from bridge.testbed.layout import default_layout
from sparkplugin import policy_conf
from workloads.workload_file import TomlTable, WorkloadFileError
from yarnclient.errors import YarnError

STATS = ("p50", "p90")  # what the demo prints per class; the result files hold p99 too

ERRORS: tuple[type[Exception], ...] = (ValueError, OSError, YarnError, TestbedError)  # a plan, workload or run


def _say(message: str) -> None:
    click.echo(f"demo: {message}", err=True)


def default_plan() -> Path:
    """The plan shipped with the package (what `make demo` runs)."""
    return Path(str(resources.files("workloads").joinpath("examples", "demo", "sim-to-real.toml")))


@dataclass(frozen=True)
class Planned:
    """One comparison of the plan: a sim-vs-live run's arguments, and what its reading line compares."""

    name: str
    title: str
    workload: Path
    policies: tuple[str, ...]
    executors: int
    executor_cores: int
    extra_vcores: int = 0
    preempt: bool = False
    cutoff: float | None = None
    reading: tuple[str, str] = ("short", "p90")  # class, statistic
    params: dict[str, str] = field(default_factory=dict)
    job_model: str = DEFAULT_JOB_MODEL  # how a workload without trace durations is simulated
    estimates_from: str | None = None  # the stand-in whose live run gives the other policies' estimates
    offered_load: float | None = None  # fit the mix's rate to this load first (`Comparison.fit_load`)


def _policies(table: TomlTable) -> tuple[str, ...]:
    """Two or more policy names: the first is the reading's baseline."""
    value = table.raw("policies")
    if not isinstance(value, list) or len(value) < 2 or not all(isinstance(v, str) for v in value):
        raise table.error("policies", f"expected a list of two or more policy names, got {value!r}")
    return tuple(value)


def _reading(table: TomlTable) -> tuple[str, str]:
    """'CLASS STAT', e.g. 'short p90'."""
    words = table.text("reading", "short p90").split()
    if len(words) != 2 or words[0] not in CLASSES or words[1] not in (*STATS, "p99"):
        raise table.error("reading", "expected 'CLASS STAT' (CLASS short or long, STAT p50, p90 or p99), "
                                     f"got {' '.join(words)!r}")
    return words[0], words[1]


def _cutoff(table: TomlTable) -> float | None:
    """The reporting cutoff (s), or None for sim-vs-live's default."""
    return None if table.raw("cutoff", None) is None else table.number("cutoff")


def _offered_load(table: TomlTable) -> float | None:
    """The load the mix's rate is fitted to before the comparison, or None to keep the file's rate."""
    load = table.optional_number("offered_load")
    if load is not None and load > 1:
        raise table.error("offered_load", f"a fraction of the slots' time, at most 1, got {load}")
    return load


def _comparison(table: TomlTable, base: Path) -> Planned:
    """One ``[[comparison]]`` table, every key checked (the error names the file and the key)."""
    preempt, params = table.raw("preempt", False), table.raw("params", {})
    if not isinstance(preempt, bool):
        raise table.error("preempt", f"expected true or false, got {preempt!r}")
    if not isinstance(params, dict) or not all(isinstance(v, (str, int, float)) for v in params.values()):
        raise table.error("params", f"expected a table of KEY = VALUE, got {params!r}")
    estimates_from = table.raw("estimates_from", None)
    if estimates_from is not None and not isinstance(estimates_from, str):
        raise table.error("estimates_from", f"expected a stand-in's name, got {estimates_from!r}")
    workload = (base / table.text("workload")).resolve()
    planned = Planned(table.text("name"), table.text("title"), workload, _policies(table),
                      table.integer("executors", minimum=1), table.integer("executor_cores", minimum=1),
                      table.integer("extra_vcores", 0, minimum=0), preempt, _cutoff(table),
                      _reading(table), {k: str(v) for k, v in params.items()},
                      table.text("job_model", DEFAULT_JOB_MODEL, choices=JOB_MODELS), estimates_from,
                      _offered_load(table))
    table.finish()
    return planned


def load_plan(path: Path) -> list[Planned]:
    """The demo's comparisons from a plan file; a mistake names the file and the key."""
    try:
        data = tomltext.loads(path.read_text())
    except (OSError, UnicodeDecodeError) as exc:
        raise WorkloadFileError(path, "", f"cannot read: {exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise WorkloadFileError(path, "", f"not valid TOML: {exc}") from None
    top = TomlTable(path, "", data)
    tables = top.raw("comparison")
    if not isinstance(tables, list) or not tables:
        raise top.error("comparison", "expected one or more [[comparison]] tables")
    top.finish()
    plan = [_comparison(TomlTable(path, f"comparison[{i}]", t), path.parent) for i, t in enumerate(tables, 1)]
    names = [p.name for p in plan]
    if len(set(names)) != len(names):
        raise top.error("comparison", f"two comparisons share a name (each names a results directory): {names}")
    return plan


def figures_table(runs: Sequence[Measured]) -> str:
    """Per policy and class: live and simulated p50 and p90, and their ratios."""
    rows: list[dict[str, object]] = []
    for run in runs:
        for cls in CLASSES:
            row: dict[str, object] = {"policy": run.policy, "class": cls, "jobs": run.live[cls]["count"]}
            for stat in STATS:
                row |= {f"{stat} live (s)": run.live[cls][stat], f"{stat} sim (s)": run.sim[cls][stat],
                        f"{stat} live/sim": run.ratio(cls, stat)}
            rows.append(row)
    return render(rows)


def _times(value: float, base: float) -> tuple[float, str]:
    """How many times lower or higher `value` is than `base`."""
    return (base / value, "lower") if value <= base else (value / base, "higher")


def reading_lines(runs: Sequence[Measured], cls: str, stat: str) -> list[str]:
    """Each policy against the first (the baseline), live and as predicted, from the figures alone."""
    baseline, lines, what = runs[0], [], f"{cls}-job {stat}"
    for run in runs[1:]:
        live, sim = (run.live[cls][stat], baseline.live[cls][stat]), (run.sim[cls][stat], baseline.sim[cls][stat])
        if any(math.isnan(v) or v <= 0 for v in (*live, *sim)):
            lines.append(f"{run.policy} against {baseline.policy}: a {what} is missing or zero, not compared")
            continue
        (live_x, live_way), (sim_x, sim_way) = _times(*live), _times(*sim)
        lines.append(f"{run.policy}'s {what} is {live_x:.2g}x {live_way} than {baseline.policy}'s live "
                     f"({live[0]:.3g} s against {live[1]:.3g} s); the simulator predicted {sim_x:.2g}x {sim_way} "
                     f"({sim[0]:.3g} s against {sim[1]:.3g} s)")
    return lines


def _prepare(planned: Planned, conf_dir: Path, estimates: Path | None = None) -> Comparison:
    """The comparison checked as far as it can be before anything runs: workload, policies,
    parameters, and the Spark plugin each live policy needs. Whether a --preempt comparison's
    policies can be simulated is checked once the testbed is up (:func:`_check_preempting`): they
    are simulated on its NodeManagers, which the ResourceManager names."""
    comparison = Comparison.prepare(planned.workload, list(planned.policies), planned.executors,
                                    planned.executor_cores, None, planned.cutoff, planned.params, planned.preempt,
                                    conf_dir, planned.job_model, check=not planned.preempt)
    comparison.use_estimates(estimates, planned.estimates_from)
    for policy in planned.policies:
        check_policy(policy, policy_conf(comparison.params[policy]), comparison.preempts(policy))
    return comparison


def _run(planned: Planned, comparison: Comparison, out: Path) -> str:
    """One comparison on the testbed; what the demo prints for it (also kept in summary.txt)."""
    with ExitStack() as stack:
        if planned.extra_vcores:
            comparison.raise_vcores(stack, planned.extra_vcores)
        if planned.offered_load is not None:
            comparison.fit_load(planned.offered_load, out)
        result = comparison.run(1, out)
    return "\n".join([f"{planned.title} ({comparison.name}: {planned.executors} executors x "
                      f"{planned.executor_cores} cores; short/long cutoff {result.cutoff:.3g} s)",
                      f"simulated durations: {result.durations}", figures_table(result.runs),
                      *(f"reading: {line}" for line in reading_lines(result.runs, *planned.reading)),
                      f"table: {out / 'table.txt'}", f"plot: {out / 'jct_cdf.png'}",
                      *([f"arrivals: {result.arrivals}"] if result.arrivals else [])])


def _runnable(planned: Planned) -> tuple[Planned | None, str | None]:
    """What of the comparison this machine can run, and what it leaves out: the node agents that
    `--preempt` starts on the local testbed write cgroups, which takes root, so without it the
    preempting policies are left out and the others run as they would beside them (the whole
    comparison is left out if fewer than two policies remain)."""
    if not planned.preempt or os.geteuid() == 0:
        return planned, None
    kept = tuple(p for p in planned.policies if p not in preempting_policies())
    left_out = ", ".join(p for p in planned.policies if p not in kept)
    why = f"{left_out} not run: --preempt starts node agents that resize containers through cgroups, which needs root"
    return (replace(planned, policies=kept, preempt=False) if len(kept) >= 2 else None), why


@dataclass(frozen=True)
class Checked:
    """One comparison of the plan as this machine runs it: ``runnable`` (None: not at all) with its
    prepared comparison, and what was left out and why."""

    planned: Planned
    runnable: Planned | None
    comparison: Comparison | None
    left_out: str | None


def _checked(plan_file: Path, conf_dir: Path, estimates: Path | None = None) -> list[Checked]:
    """The plan's comparisons, each checked before the testbed starts (``estimates``: the file every
    live policy gets); a mistake ends the demo with one line naming the plan file and the comparison
    or key."""
    try:
        plan = load_plan(plan_file)
    except ERRORS as exc:
        raise click.ClickException(str(exc)) from None
    checked = []
    for planned in plan:
        runnable, left_out = _runnable(planned)
        try:
            comparison = None if runnable is None else _prepare(runnable, conf_dir, estimates)
        except ERRORS as exc:
            raise click.ClickException(f"{plan_file}: comparison {planned.name!r}: {exc}") from None
        checked.append(Checked(planned, runnable, comparison, left_out))
    return checked


def _shown(item: Checked, out: Path) -> str:
    """What the demo prints for one comparison: its run, and what it left out and why."""
    if item.runnable is None or item.comparison is None:
        return f"{item.planned.title}: {item.left_out}"
    text = _run(item.runnable, item.comparison, out)
    return text if item.left_out is None else f"{text}\n{item.left_out}"


def _check_preempting(plan: list[Checked], plan_file: Path) -> None:
    """Every runnable --preempt comparison's policies can be simulated on the testbed's
    NodeManagers (read from its ResourceManager, so once it is up), before any comparison runs."""
    for item in plan:
        if item.runnable is not None and item.runnable.preempt and item.comparison is not None:
            try:
                item.comparison.check_simulatable()
            except ERRORS as exc:
                raise click.ClickException(f"{plan_file}: comparison {item.planned.name!r}: {exc}") from None


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60)} min {int(seconds % 60)} s"


@click.command()
@click.option("--plan", "plan_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
              help="The comparisons to run [default: workloads/examples/demo/sim-to-real.toml].")
@click.option("--out", type=OutputPath(file_okay=False),
              help="Results directory, must be empty (default: results/demo-TIMESTAMP).")
@renamed_option("--results", "--out")
@click.option("--keep-testbed", is_flag=True, help="Leave the testbed running afterwards.")
@estimates_option()
def demo(plan_file: Path | None, out: Path | None, keep_testbed: bool, estimates: Path | None) -> None:
    """Start the local testbed and show, per comparison of the plan (interactive TPC-H queries
    behind a WordCount batch job under stock Spark, Hawk, Eagle and Kairos), each policy's live
    figures beside the simulator's prediction; about 11-13 minutes on a 2-core machine."""
    started, results = time.monotonic(), out or Path("results") / f"demo-{time.strftime('%Y%m%d-%H%M%S')}"
    if results.exists() and any(results.iterdir()):
        raise click.BadParameter(f"{results} is not empty", param_hint="--out")
    bed = Testbed(default_layout())
    plan_file = plan_file or default_plan()
    plan = _checked(plan_file, bed.layout.conf_dir, estimates)
    was_running = all(bed.running().values())
    try:
        bed.up(progress=_say)
        _check_preempting(plan, plan_file)
        shown = []
        for i, item in enumerate(plan, 1):
            runs = item.runnable
            what = item.left_out if runs is None else (f"{', '.join(runs.policies)} live on the testbed, each then "
                                                       f"simulated ({_minutes(time.monotonic() - started)} so far)")
            _say(f"[{i}/{len(plan)}] {item.planned.name}: {what}")
            (results / item.planned.name).mkdir(parents=True, exist_ok=True)
            shown.append(_shown(item, results / item.planned.name))
            click.echo(shown[-1] + "\n")
        atomic.write_text(results / "summary.txt", "\n\n".join(shown) + "\n")
        _say(f"done in {_minutes(time.monotonic() - started)}; results in {results}")
    except ERRORS as exc:
        raise click.ClickException(str(exc)) from None
    finally:
        if not (was_running or keep_testbed):
            bed.down(progress=_say)
