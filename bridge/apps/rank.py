"""`schedbridge rank TRACE`: which policy would have helped this cluster?

Every policy `simulate --list-policies` lists is simulated on the trace (typically one `trace
import` made from the cluster's own history) on the cluster size given, each in a worker process
(`bridge.apps.sweep`), and ranked on what a researcher weighs: short- and long-job JCT (p50 and
p90, by the same reporting cutoff as `simulate`), makespan and utilization. Each measure ranks the
policies that ran (1 = best: the lowest JCT or makespan, the highest utilization; a missing value
ranks last); a policy's score is the mean of its ranks, and the table is ordered by it, policies
that left jobs unfinished after those that finished every job. A policy that cannot run on this
cluster (one that needs per-node capacity vectors, say) or that fails, its worker process dying
included, is kept in the table as "not run: <reason>" or "failed: <reason>", never dropped.

Policies that take a scheduling cutoff from the trace in the thesis' simulations
(`workloads.synthetic.kinds.TRACE_PARAMETERS`: Hawk, Eagle, DLWL, Big-C) get the trace's reporting
cutoff, so they split short and long jobs where the ranking does; every other parameter keeps its
default. The cluster size and the offered load it makes are printed with the table, and a load
above 1 is called out: such a run measures how fast queues grow, not the policies' steady state.
"""
from __future__ import annotations

import functools
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import click

from bridge.apps import sweep
from bridge.common import atomic
from bridge.common.options import MAX_TOTAL_SLOTS, NODES, SLOTS, FiniteFloat, OutputPath, output_dir
from workloads.model import Job

# (column, class or None, statistic); lower is better for all but utilization
MEASURES: tuple[tuple[str, str, str], ...] = (
    ("short p50 (s)", "short", "p50"), ("short p90 (s)", "short", "p90"),
    ("long p50 (s)", "long", "p50"), ("long p90 (s)", "long", "p90"),
    ("makespan (s)", "", "makespan"), ("utilization", "", "utilization"))
HIGHER_IS_BETTER = {"utilization"}


@dataclass(frozen=True)
class Point:
    """One policy on the trace: what a worker process receives."""

    trace: Path
    policy: str
    nodes: int
    slots: int
    seed: int
    cutoff: float

    def __str__(self) -> str:
        return self.policy


@dataclass(frozen=True)
class Outcome:
    """One policy's run: its measures and per-class JCTs, or why it has none."""

    policy: str
    measures: dict[str, float] = field(default_factory=dict)
    unfinished: int = 0
    problem: str = ""  # "not run: ..." or "failed: ...": no measures
    jct: dict[str, tuple[float, ...]] = field(default_factory=dict)  # class -> finished jobs' JCTs


@functools.lru_cache(maxsize=1)
def _jobs(trace: Path) -> list[Job]:
    """The trace, read once per worker process (its points follow one another)."""
    from workloads.trace import read_trace

    return read_trace(trace)


def settings_for(policy: str, cutoff: float) -> dict[str, str]:
    """The trace's cutoff for the policies that take one from the trace (module docstring)."""
    from workloads.synthetic.kinds import TRACE_PARAMETERS

    return {"cutoff": repr(cutoff)} if "cutoff" in TRACE_PARAMETERS.get(policy, ()) else {}


def run_point(point: Point) -> Outcome:
    """Simulate one policy and measure it (module-level: worker processes import it)."""
    from bridge.common.metrics import summarize, with_completion
    from bridge.sim.engine import simulate
    from bridge.sim.shape import uniform
    from policies.api import ClusterSpec, PolicyEnv
    from policies.registry import ConfigError, RegistryError, config_for, create

    shape = uniform(point.nodes, point.slots)  # as `simulate --nodes --slots`: cores and memory per node
    spec = shape.spec(ClusterSpec(1).network_delay)  # the policies' default delay, as `simulate`'s
    jobs = shape.with_demands(_jobs(point.trace))
    try:
        policy = create(point.policy, PolicyEnv(spec, point.seed), config_for(point.policy, settings_for(
            point.policy, point.cutoff)))
    except (RegistryError, ConfigError, ValueError) as exc:
        return Outcome(point.policy, problem=f"not run: {exc}")
    try:
        result = simulate(jobs, policy, spec, report_long=lambda j: j.mean_duration > point.cutoff)
    except Exception as exc:  # noqa: BLE001 - one policy's failure is a row of the table, not the end of the others
        return Outcome(point.policy, problem=f"failed: {type(exc).__name__}: {exc}")
    job_table = result.job_table()
    summary = summarize(job_table, result.task_table(), cutoff=point.cutoff, n_slots=point.nodes * point.slots)
    measures = {column: float(summary["jct"][cls][stat] if cls else summary[stat]) for column, cls, stat in MEASURES}
    done = with_completion(job_table, point.cutoff).dropna(subset=["jct"])
    jct = {cls: tuple(done.loc[done["cls"] == cls, "jct"].tolist()) for cls in ("short", "long")}
    return Outcome(point.policy, measures, len(result.unfinished), jct=jct)


def died(point: Point, why: str) -> Outcome:
    """A policy whose worker process died: a failed row, the other policies' rows kept."""
    return Outcome(point.policy, problem=f"failed: {why}")


def _ranks(values: Sequence[float], higher_is_better: bool) -> list[int]:
    """Competition ranks (1 = best, ties share the best rank); a missing value ranks last."""
    def key(v: float) -> float:
        return math.inf if math.isnan(v) else (-v if higher_is_better else v)
    keys = [key(v) for v in values]
    return [1 + sum(other < mine for other in keys) for mine in keys]


def ranked(outcomes: Sequence[Outcome]) -> list[dict[str, object]]:
    """The table's rows, best first (module docstring), with each policy's rank and score; the
    measures no policy has a value for (no long job in the trace, say) are not scored."""
    ran = [o for o in outcomes if not o.problem]
    scored = [m for m, _, _ in MEASURES if any(not math.isnan(o.measures[m]) for o in ran)]
    ranks = {m: _ranks([o.measures[m] for o in ran], m in HIGHER_IS_BETTER) for m in scored}
    rows: list[dict[str, object]] = []
    for i, o in enumerate(ran):
        score = sum(ranks[m][i] for m in scored) / len(scored) if scored else math.nan
        note = f"{o.unfinished} jobs unfinished" if o.unfinished else ""
        rows.append({"policy": o.policy, **o.measures, "score": round(score, 2), "note": note})
    rows.sort(key=lambda r: (r["note"] != "", r["score"], r["policy"]))
    for position, row in enumerate(rows, start=1):
        row["rank"] = position
    rows += [{"rank": "-", "policy": o.policy, "note": o.problem}
             for o in sorted((o for o in outcomes if o.problem), key=lambda o: o.policy)]
    return rows


def plot_cdfs(outcomes: Sequence[Outcome], path: Path, title: str) -> Path:
    """JCT CDFs of the short and long jobs, one line per policy that ran (marked where it has few
    jobs, so that one job is a visible point), on a log time axis where the times span decades."""
    from dataclasses import replace

    from bridge.common import plots  # matplotlib: loaded when a ranking is drawn, not for --help

    ran = [o for o in outcomes if not o.problem]
    panels = []
    for cls in ("short", "long"):
        times = [t for o in ran for t in o.jct.get(cls, ()) if t > 0]
        series = [replace(plots.cdf(o.policy, o.jct[cls]), marker="o" if len(o.jct[cls]) < 20 else None)
                  for o in ran if o.jct.get(cls)]
        panels.append(plots.Panel(series, title=f"{cls} jobs", xlabel="job completion time (s)",
                                  ylabel="fraction of jobs", logx=bool(times) and max(times) > 10 * min(times),
                                  empty=f"no {cls} job finished"))
    return plots.draw([panels], path, title=title)


COLUMNS = ["rank", "policy", *(m for m, _, _ in MEASURES), "score", "note"]


@click.command()
@click.argument("trace_path", metavar="TRACE", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--nodes", type=NODES, default=None,
              help="Nodes of the cluster to rank the policies on [default: the cluster the trace states, as "
                   "trace import records it].")
@click.option("--slots", default=1, show_default=True, type=SLOTS, help="Slots per node.")
@click.option("--policy", "only", multiple=True,
              help="Rank only this policy (repeatable) [default: every policy simulate --list-policies lists].")
@click.option("--workers", type=click.IntRange(1, 1024), default=None, show_default="the machine's cores",
              help="Worker processes running the policies (1: one after another in this process).")
@click.option("--seed", default=1, show_default=True, type=int, help="Policy random seed, the same for every policy.")
@click.option("--cutoff", type=FiniteFloat(min=0, max=1e9), default=None,
              help="Short/long cutoff (s) on a job's mean task duration [default: as simulate's, the trace's "
                   "stated cutoff, else the 90th "
                   "percentile of the trace's job mean task durations].")
@click.option("--out", "out_dir", type=OutputPath(file_okay=False), default=None,
              show_default="results/rank-TRACE", help="Directory for ranking.csv, summary.txt and jct_cdf.png.")
def rank(trace_path: Path, nodes: int | None, slots: int, only: tuple[str, ...], workers: int | None, seed: int,
         cutoff: float | None, out_dir: Path | None) -> None:
    """Rank every policy on TRACE: which one would have helped this cluster?

    Simulates each policy on NODES x SLOTS and ranks them on short- and long-job JCT (p50, p90),
    makespan and utilization; prints the table with the cluster size and offered load it assumed,
    and writes it with the JCT CDFs under --out."""
    from bridge.common import tables
    from bridge.common.metrics import cutoff_origin, offered_load, reporting_cutoff
    from policies.registry import default_registry, did_you_mean
    from bridge.sim.cli import nodes_and_slots
    from workloads.trace import TraceError, stated_cutoff

    nodes, slots = nodes_and_slots(trace_path, nodes, slots)
    if nodes * slots > MAX_TOTAL_SLOTS:
        raise click.BadParameter(f"{nodes} nodes x {slots} slots is more than {MAX_TOTAL_SLOTS:,} slots in all",
                                 param_hint="--nodes/--slots")
    names = default_registry().names()
    unknown = [name for name in only if name not in names]
    if unknown:
        raise click.BadParameter(f"unknown policy {unknown[0]!r}{did_you_mean(unknown[0], names)}; see "
                                 "schedbridge simulate --list-policies", param_hint="--policy")
    try:
        jobs = _jobs(trace_path)
    except TraceError as exc:
        raise click.ClickException(str(exc)) from None
    stated = stated_cutoff(trace_path)
    origin = cutoff_origin(cutoff is not None, stated is not None)
    if cutoff is None:
        cutoff = reporting_cutoff([j.mean_duration for j in jobs], stated)
    if out_dir is None:
        out_dir = Path("results") / f"rank-{trace_path.stem}"
    load = offered_load([j.submit for j in jobs], sum(j.work for j in jobs), nodes * slots)
    head = [f"trace {trace_path}: {len(jobs)} jobs, {sum(j.n_tasks for j in jobs)} tasks; short/long cutoff "
            f"{cutoff:.4g} s ({origin}); seed {seed}",
            f"cluster {nodes} nodes x {slots} slots = {nodes * slots} slots; offered load on it "
            + (f"{load:.3f}" if math.isfinite(load) else "n/a (every job arrives at once)")]
    if load > 1:
        head.append(f"warning: the trace offers {load:.2f}x what {nodes * slots} slots can run: queues grow "
                    "throughout, and the ranking measures overload, not steady state")
    points = [Point(trace_path.resolve(), name, nodes, slots, seed, cutoff) for name in (only or names)]
    with sweep.workers(workers or os.cpu_count() or 1):
        outcomes = sweep.run_points(run_point, points, "rank", dead=died)
    rows = ranked(outcomes)
    note = "note".ljust(max(len(str(row["note"])) for row in rows))  # notes (and their header) left-aligned
    shown = [{**row, note: str(row["note"]).ljust(len(note))} for row in rows]
    table = [line.rstrip() for line in tables.text(shown, [*COLUMNS[:-1], note]).splitlines()]
    text = "\n".join([*head, "", *table]) + "\n"
    click.echo(text, nl=False)
    try:
        with output_dir(out_dir):
            with atomic.replacing(out_dir / "ranking.csv") as temp:
                import pandas as pd

                pd.DataFrame(rows, columns=COLUMNS).to_csv(temp, index=False)
            atomic.write_text(out_dir / "summary.txt", text)
            plot_cdfs(outcomes, out_dir / "jct_cdf.png", f"{trace_path.name} on {nodes} x {slots} slots, "
                                                         f"cutoff {cutoff:.4g} s")
    except OSError as exc:
        raise click.ClickException(f"cannot write the ranking to {out_dir}: {exc.strerror or exc}") from None
    click.echo(f"wrote {out_dir / 'ranking.csv'}, {out_dir / 'summary.txt'}, {out_dir / 'jct_cdf.png'}")
