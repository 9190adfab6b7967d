"""The thesis' experiments (Hawk Ch. 2, Eagle Ch. 3, Kairos Ch. 4) on the synthetic traces.

Each experiment is a list of simulation runs (trace kind, cluster size, policy variant, seed),
summarised per run (job completion time percentiles for short and long jobs by the trace's
reporting cutoff, utilization, head-of-line counters) and written as CSV tables, printed tables
and PNG plots. ``scale`` shrinks an experiment with :func:`workloads.synthetic.scaling.shrink`:
``scale`` times the nodes and tasks per job at the same offered load, and ``3 x scale`` times the
thesis' number of jobs (capped at 1: a shrunk cluster needs proportionally more jobs to reach
steady state), so ``--scale 0.01`` runs in about a minute and ``--scale 1`` is the thesis' size.
"""
from __future__ import annotations

import csv
import functools
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click
import numpy as np

from bridge.apps import sweep
from bridge.common import atomic, metrics, plots, tables
from bridge.sim.engine import SimResult, simulate
from policies.framework.api import ClusterSpec, PolicyEnv
from policies.framework.registry import config_for, create
from workloads.model import Job
from workloads.synthetic import generate, get_kind, simulator_jobs, trace_settings
from workloads.synthetic.scaling import shrink

PERCENTILES = metrics.PERCENTILES
JOBS_PER_SCALE = 3.0


@dataclass(frozen=True)
class Variant:
    """A policy under a label, with `--param`-style settings (per-trace ones are added later)."""

    label: str
    policy: str
    settings: tuple[str, ...] = ()


@dataclass(frozen=True)
class RunSpec:
    trace: str
    nodes: int          # thesis-scale size; the run uses round(nodes x scale)
    variant: Variant
    seed: int
    slots: int = 1


@dataclass
class Summary:
    """One run, measured. `jct` maps job id to completion time (for per-job comparisons)."""

    trace: str
    nodes: int
    label: str
    seed: int
    stats: dict[str, float]
    jct: dict[int, float] = field(repr=False)
    long_jobs: frozenset[int] = field(repr=False)


def build_jobs(trace: str, n_jobs: int, seed: int, scale: float) -> list[Job]:
    """The trace's jobs shrunk to `scale` (offered load on `scale x` nodes as the original)."""
    return simulator_jobs(shrink(generate(trace, jobs=n_jobs, seed=seed).jobs, scale))


def run_one(spec: RunSpec, jobs: Sequence[Job], scale: float) -> Summary:
    """Simulate `spec` on `jobs` and summarise it."""
    cutoff = get_kind(spec.trace).cutoff
    nodes = max(1, round(spec.nodes * scale))
    cluster = ClusterSpec(nodes, spec.slots)
    settings: dict[str, object] = dict(trace_settings(spec.trace, spec.variant.policy))
    for setting in spec.variant.settings:                               # the variant overrides
        key, value = setting.split("=", 1)
        settings[key] = value
    policy = create(spec.variant.policy, PolicyEnv(cluster, spec.seed), config_for(spec.variant.policy, settings))
    result = simulate(jobs, policy, cluster, report_long=lambda j: j.estimate > cutoff)
    long_jobs = frozenset(j.job_id for j in jobs if j.estimate > cutoff)
    return _summarise(spec, result, long_jobs)


def _summarise(spec: RunSpec, result: SimResult, long_jobs: frozenset[int]) -> Summary:
    """`bridge.common.metrics` on the run: JCT statistics per class (by each job's estimate, as the
    simulator reports them), utilization from the first submission to the run's end."""
    jobs = metrics.with_completion(result.job_table(), get_kind(spec.trace).cutoff)
    jobs["cls"] = np.where(jobs["job_id"].isin(long_jobs), "long", "short")
    summary = metrics.completion_summary(jobs, math.inf)
    stats: dict[str, float] = {}
    for cls in metrics.CLASSES:
        stats.update({f"{cls}_{k}": v for k, v in summary[cls].items() if k.startswith("p") or k == "mean"})
        stats[f"{cls}_jobs"] = summary[cls]["count"]
    n_slots = result.spec.n_nodes * result.spec.slots_per_node
    utilization = metrics.mean_utilization(result.task_table(), n_slots, start=float(jobs["submit"].min()),
                                           end=result.end_time)
    stats["utilization"] = 0.0 if math.isnan(utilization) else utilization
    stats["unfinished"] = len(result.unfinished)
    log = result.log
    for counter in ("probes_behind_long", "short_tasks_after_long", "rejected_probes", "stolen_entries",
                    "suspends"):
        stats[counter] = log.counters.get(counter, 0)
    jct = jobs.dropna(subset=["jct"]).set_index("job_id")["jct"].to_dict()
    return Summary(spec.trace, spec.nodes, spec.variant.label, spec.seed, stats, jct, long_jobs)


@dataclass(frozen=True)
class Point:
    """One run of a sweep as a worker process receives it: the spec and the trace to build."""

    spec: RunSpec
    n_jobs: int
    scale: float

    def __str__(self) -> str:
        s = self.spec
        return f"{s.variant.label} on {s.trace} at {s.nodes} nodes, seed {s.seed}"


@functools.lru_cache(maxsize=4)
def _cached_jobs(trace: str, n_jobs: int, seed: int, scale: float) -> list[Job]:
    """:func:`build_jobs`, kept for the next points of the same trace and seed (the variants of
    one size follow one another); the simulator does not change the jobs it is given."""
    return build_jobs(trace, n_jobs, seed, scale)


def run_point(point: Point) -> Summary:
    """:func:`run_one` on the point's trace (module-level, so worker processes can import it)."""
    spec = point.spec
    return run_one(spec, _cached_jobs(spec.trace, point.n_jobs, spec.seed, point.scale), point.scale)


def run_all(specs: Sequence[RunSpec], n_jobs: dict[str, int], scale: float, desc: str) -> list[Summary]:
    """Run every spec, in parallel under ``--workers`` (:mod:`bridge.apps.sweep`), with a progress bar."""
    points = [Point(spec, max(20, round(n_jobs[spec.trace] * min(1.0, JOBS_PER_SCALE * scale))), scale)
              for spec in specs]
    return sweep.run_points(run_point, points, desc)


# ------------------------------------------------------------------------------------------
# tables and plots
# ------------------------------------------------------------------------------------------

def ratios(rows: Sequence[Summary], baseline: str) -> list[dict[str, object]]:
    """Each non-baseline run's percentiles divided by the baseline's (same trace, nodes, seed),
    averaged over seeds; also the share of jobs it completes no later than the baseline."""
    base = {(r.trace, r.nodes, r.seed): r for r in rows if r.label == baseline}
    groups: dict[tuple[str, int, str], list[dict[str, float]]] = {}
    for r in rows:
        b = base.get((r.trace, r.nodes, r.seed))
        if r.label == baseline or b is None:
            continue
        ratio = {k: _div(r.stats[k], b.stats[k]) for k in r.stats if k.endswith(tuple(f"_p{p}" for p in PERCENTILES))
                 or k.endswith("_mean")}
        for cls in ("short", "long"):
            ratio[f"{cls}_better_or_equal"] = _share_not_worse(r, b, cls == "long")
        groups.setdefault((r.trace, r.nodes, r.label), []).append(ratio)
    table = []
    for (trace, nodes, label), values in sorted(groups.items()):
        row: dict[str, object] = {"trace": trace, "nodes": nodes, "variant": label, "baseline": baseline}
        for key in values[0]:
            row[key] = round(float(np.nanmean([v[key] for v in values])), 4)
        table.append(row)
    return table


def _div(a: float, b: float) -> float:
    return a / b if b > 0 else math.nan


def _share_not_worse(run: Summary, base: Summary, long: bool) -> float:
    """`bridge.common.metrics.share_not_worse` over one class of the run's jobs."""
    return metrics.share_not_worse({j: t for j, t in run.jct.items() if (j in run.long_jobs) == long}, base.jct)


def write_csv(rows: Sequence[dict[str, object]], path: Path) -> Path:
    with atomic.replacing(path) as temp, temp.open("w", newline="") as out:
        writer = csv.DictWriter(out, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    return path


def raw_rows(rows: Sequence[Summary]) -> list[dict[str, object]]:
    return [{"trace": r.trace, "nodes": r.nodes, "variant": r.label, "seed": r.seed,
             **{k: round(v, 4) for k, v in r.stats.items()}} for r in rows]


def plot_ratios(table: Sequence[dict[str, Any]], path: Path, title: str) -> Path:
    """Ratio vs nodes, one panel per (trace, class), one line per (variant, percentile)."""
    grid = []
    for trace in sorted({str(r["trace"]) for r in table}):
        rows = [r for r in table if r["trace"] == trace]
        variants = sorted({str(r["variant"]) for r in rows})
        grid.append([plots.Panel(
            [plots.Series(f"{variant} p{p}", [n for n, _ in series], [r[f"{cls}_p{p}"] for _, r in series], marker="o")
             for variant in variants
             for series in [sorted((int(r["nodes"]), r) for r in rows if r["variant"] == variant)]
             for p in PERCENTILES],
            f"{trace}: {cls} jobs (normalized to {rows[0]['baseline']})", "nodes (thesis scale)", hline=1.0)
            for cls in ("short", "long")])
    return plots.draw(grid, path, title, panel_size=(5.0, 3.2))


# ------------------------------------------------------------------------------------------
# the experiments
# ------------------------------------------------------------------------------------------

# Jobs per trace at scale 1 (Table 2.2 / 3.1 sizes).
THESIS_JOBS = {"google": 506460, "yahoo": 24262, "cloudera": 21030}


@dataclass(frozen=True)
class Sweep:
    """Variants against a baseline over cluster sizes, per trace."""

    name: str
    title: str
    baseline: Variant
    variants: tuple[Variant, ...]
    sizes: dict[str, tuple[int, ...]]
    seeds: tuple[int, ...] = (1,)

    def specs(self) -> list[RunSpec]:
        return [RunSpec(trace, nodes, v, seed)
                for trace, sizes in self.sizes.items() for nodes in sizes for seed in self.seeds
                for v in (self.baseline, *self.variants)]

    def run(self, out_dir: Path, scale: float) -> list[Path]:
        rows = run_all(self.specs(), THESIS_JOBS, scale, self.name)
        table = ratios(rows, self.baseline.label)
        written = [write_csv(raw_rows(rows), out_dir / f"{self.name}-runs.csv"),
                   write_csv(table, out_dir / f"{self.name}-normalized.csv"),
                   plot_ratios(table, out_dir / f"{self.name}.png", self.title)]
        click.echo(f"\n{self.title} (scale {scale:g}; ratios < 1: better than {self.baseline.label})")
        click.echo(tables.text(table, ["trace", "nodes", "variant", "short_p50", "short_p90", "short_p99",
                                       "long_p50", "long_p90", "long_p99", "short_better_or_equal"]))
        return written


HAWK = Variant("hawk", "hawk")
SPARROW = Variant("sparrow", "sparrow")
EAGLE = Variant("eagle", "eagle")
KAIROS = Variant("kairos", "kairos")
GOOGLE_SWEEP = (15000, 17000, 19000, 21000, 23000)

SWEEPS = {
    s.name: s for s in (
        Sweep("hawk-vs-sparrow", "Hawk vs Sparrow (Fig 2.5, 2.6)", SPARROW, (HAWK,),
              {"google": (10000, 15000, 20000, 25000, 30000, 40000, 50000),
               "yahoo": (3000, 4000, 6000, 8000), "cloudera": (10000, 15000, 20000, 30000)}),
        Sweep("hawk-breakdown", "Hawk components (Fig 2.7)", HAWK,
              (Variant("no-central", "hawk", ("centralized=false",)),
               Variant("no-partition", "hawk", ("big_partition=100",)),
               Variant("no-stealing", "hawk", ("stealing=false",))),
              {"google": (15000,)}),
        Sweep("eagle-vs-hawk", "Eagle vs Hawk (Fig 3.2)", HAWK, (EAGLE,),
              {"google": GOOGLE_SWEEP, "yahoo": (4000, 5000, 6000, 7000, 8000), "cloudera": GOOGLE_SWEEP}),
        Sweep("kairos-vs-eagle", "Kairos vs Eagle (Fig 4.8, 4.9)", EAGLE, (KAIROS,),
              {"google": GOOGLE_SWEEP, "yahoo": (4000, 5000, 6000, 7000, 8000)}),
    )
}


# Kairos prototype stand-in (thesis §3.6): 30 nodes x 4 cores, 100 WordCount-like jobs.
PROTOTYPE_NODES, PROTOTYPE_SLOTS = 30, 4
PROTOTYPE_KAIROS = ("q=4", "w=50")
PROTOTYPE_VARIANTS = (
    Variant("kairos", "kairos", PROTOTYPE_KAIROS),
    Variant("kairos q=2", "kairos", ("q=2", "w=50")),
    Variant("kairos q=8", "kairos", ("q=8", "w=50")),
    Variant("kairos w=10", "kairos", ("q=4", "w=10")),
    Variant("kairos w=100", "kairos", ("q=4", "w=100")),
    Variant("kairos random", "kairos", (*PROTOTYPE_KAIROS, "tie_break=random")),
    Variant("kairos sum", "kairos", (*PROTOTYPE_KAIROS, "tie_break=sum")),
    Variant("bigc", "bigc"),
    Variant("fifo", "fifo"),
)
PROTOTYPE_PERCENTILES = (10, 30, 50, 90, 99)


def _alone(job: Job, slots: int) -> float:
    """A job's runtime alone on the cluster: its longest task times its number of waves."""
    return max(job.durations) * math.ceil(job.n_tasks / slots)


def prototype_point(point: tuple[str, Variant, int]) -> tuple[list[float], list[float]]:
    """One prototype run (trace, variant, seed): its jobs' completion times and slowdowns."""
    trace, variant, seed = point
    jobs = build_jobs(trace, 100, seed, 1.0)
    summary = run_one(RunSpec(trace, PROTOTYPE_NODES, variant, seed, PROTOTYPE_SLOTS), jobs, 1.0)
    slots = PROTOTYPE_NODES * PROTOTYPE_SLOTS
    alone = {j.job_id: _alone(j, slots) for j in jobs}
    return list(summary.jct.values()), [summary.jct[j] / alone[j] for j in summary.jct]


def kairos_prototype(out_dir: Path, scale: float) -> list[Path]:
    """Kairos vs Big-C and FIFO, Q/W sensitivity and tie-breaks (Fig 4.4-4.7), in simulation."""
    seeds = range(1, max(1, round(10 * scale)) + 1)
    jcts: dict[tuple[str, str], list[float]] = {}
    points = [(trace, v, seed) for trace in ("kairos", "kairos-uniform") for v in PROTOTYPE_VARIANTS
              for seed in seeds]
    for (trace, variant, _), (jct, slowdown) in zip(points, sweep.run_points(
            prototype_point, points, "kairos-prototype", lambda p: f"{p[1].label} on {p[0]}, seed {p[2]}")):
        jcts.setdefault((trace, variant.label), []).extend(jct)
        jcts.setdefault((trace, variant.label + " slowdown"), []).extend(slowdown)
    rows: list[dict[str, object]] = []
    for (trace, label), values in sorted(jcts.items()):
        row: dict[str, object] = {"trace": trace, "variant": label}
        row.update({f"p{p}": round(metrics.percentile(values, p), 2) for p in PROTOTYPE_PERCENTILES})
        row["max"] = round(max(values), 2)
        rows.append(row)
    click.echo(f"\nKairos prototype stand-in: {PROTOTYPE_NODES} nodes x {PROTOTYPE_SLOTS} cores, "
               f"{len(seeds)} seeds x 100 jobs (JCT in s; 'slowdown' rows: JCT / runtime alone)")
    click.echo(tables.text(rows, ["trace", "variant", *[f"p{p}" for p in PROTOTYPE_PERCENTILES], "max"]))
    return [write_csv(rows, out_dir / "kairos-prototype.csv"), _plot_cdfs(jcts, out_dir / "kairos-prototype.png")]


def _plot_cdfs(jcts: dict[tuple[str, str], list[float]], path: Path) -> Path:
    """CDFs of JCT and slowdown per variant, log x (Fig 4.4, 4.5)."""
    panels = []
    for trace, slowdown in (("kairos", False), ("kairos", True), ("kairos-uniform", False)):
        what = "slowdown" if slowdown else "JCT"
        panels.append(plots.Panel(
            [plots.cdf(label.removesuffix(" slowdown"), values) for (t, label), values in sorted(jcts.items())
             if t == trace and label.endswith(" slowdown") == slowdown],
            f"{trace}: CDF of {what}", "slowdown" if slowdown else "job completion time (s)", logx=True))
    return plots.draw([panels], path, panel_size=(5.0, 4.0))


def _entry(name: str) -> Callable[..., list[Path]]:
    """The `schedbridge experiment` function for `name`: (out_dir, quick, scale=None)."""

    def run(out_dir: Path, quick: bool, scale: float | None = None) -> list[Path]:
        factor = scale if scale is not None else (0.01 if quick else 1.0)
        if name == "kairos-prototype":
            return kairos_prototype(out_dir, factor if scale is not None else (0.2 if quick else 1.0))
        if name == "sparrow-hol":
            return sparrow_hol(out_dir, factor if scale is not None else (0.1 if quick else 1.0))
        return SWEEPS[name].run(out_dir, factor)

    run.__name__ = name.replace("-", "_")
    return run


hawk_vs_sparrow = _entry("hawk-vs-sparrow")
hawk_breakdown = _entry("hawk-breakdown")
eagle_vs_hawk = _entry("eagle-vs-hawk")
kairos_vs_eagle = _entry("kairos-vs-eagle")
kairos_prototype_experiment = _entry("kairos-prototype")
sparrow_hol_experiment = _entry("sparrow-hol")


def utilization_samples(result: SimResult, every: float = 100.0) -> np.ndarray:
    """Fraction of busy slots every `every` seconds (Hawk's sampling), from the first submission
    to the run's end (`bridge.common.metrics.utilization_series`)."""
    series = metrics.utilization_series(result.task_table(), result.spec.n_nodes * result.spec.slots_per_node,
                                        every, start=min(j.submit for j in result.jobs), end=result.end_time)
    return series["utilization"].to_numpy()


def sparrow_hol(out_dir: Path, scale: float) -> list[Path]:
    """Hawk's motivating simulation (Fig 2.1): Sparrow's short jobs stuck behind long tasks."""
    kind = get_kind("hawk-motivation")
    jobs = build_jobs("hawk-motivation", kind.default_jobs, 1, scale)
    nodes = max(1, round(kind.default_nodes * scale))
    rows: list[dict[str, object]] = []
    for policy in ("sparrow", "hawk"):
        cluster = ClusterSpec(nodes, 1)
        settings = trace_settings("hawk-motivation", policy)
        result = simulate(jobs, create(policy, PolicyEnv(cluster, 1), config_for(policy, settings)), cluster)
        util = utilization_samples(result)
        short = [result.log.job_finish[j.job_id] - j.submit for j in jobs if j.estimate <= kind.cutoff]
        rows.append({"policy": policy, "nodes": nodes, "median_utilization": round(metrics.median(util), 3),
                     "max_utilization": round(float(util.max()), 3),
                     "short_jobs_over_15000s": round(float(np.mean(np.array(short) > 15000.0)), 3),
                     "short_p50": round(metrics.median(short), 1)})
    click.echo(f"\nHawk motivation (Fig 2.1): {len(jobs)} jobs on {nodes} nodes (scale {scale:g}; "
               "short_p50 in s, utilization and short_jobs_over_15000s as shares)")
    click.echo(tables.text(rows))
    return [write_csv(rows, out_dir / "sparrow-hol.csv")]
