"""The `rank` command: the runs, the table written as its rows finish, the figures at the end.

ranking.csv and summary.txt are rewritten (atomically) each time a policy's row is complete, with
a line saying how many rows are in; a Ctrl-C (SIGINT) or SIGTERM stops the runs under way, writes
the rows that finished (the others are rows saying they were interrupted), says so and exits with
128 + the signal's number. The figures are drawn once every row is in.
"""
from __future__ import annotations

import math
import os
import signal
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import click

from bridge.apps.rank import runs
from bridge.apps.rank.table import DEFAULT_TOLERANCE, Row, csv_rows, ranked, row_of, text_rows
from bridge.common import atomic
from bridge.common.options import MAX_SECONDS, FiniteFloat, OutputPath, renamed_option
from bridge.sim.cli import cluster_options, cluster_shape, nodes_and_slots

DEFAULT_TIMEOUT_S = 120.0
MAX_SEEDS = 100
COLUMNS = ["rank", "policy", *(m for m, _, _ in runs.MEASURES), "score", "note"]


class Seeds(click.ParamType):
    """``N`` (seeds 1 to N) or a comma-separated list of seeds (``1,5,9``), each once."""

    name = "N|LIST"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if isinstance(value, tuple):
            return value
        text = str(value).strip()
        try:
            seeds = tuple(int(s) for s in text.split(",")) if "," in text else tuple(range(1, int(text) + 1))
        except ValueError:
            self.fail(f"{value!r} is neither a number of seeds nor a comma-separated list of seeds", param, ctx)
        if not 1 <= len(seeds) <= MAX_SEEDS:
            self.fail(f"{value!r}: between 1 and {MAX_SEEDS} seeds", param, ctx)
        if len(set(seeds)) < len(seeds):
            self.fail(f"{value!r} names a seed twice", param, ctx)
        return seeds


@dataclass
class Ranking:
    """The rows as they come in, and the files that hold them."""

    policies: Sequence[str]
    seeds: tuple[int, ...]
    head: Sequence[str]
    tolerance: float
    out_dir: Path
    outcomes: dict[str, list[runs.Outcome]] = field(default_factory=dict)
    rows: dict[str, Row] = field(default_factory=dict)

    def add(self, point: runs.Point, outcome: runs.Outcome) -> None:
        """One run's outcome; once its policy's row is complete (every seed, or a problem), the
        files are rewritten with it. A run that ends after its row is decided is left out."""
        if point.policy in self.rows:
            return
        outcomes = self.outcomes.setdefault(point.policy, [])
        outcomes.append(outcome)
        if outcome.problem or len(outcomes) == len(self.seeds):
            self.rows[point.policy] = row_of(point.policy, outcomes)
            if len(self.rows) < len(self.policies):
                self.write(f"partial: {len(self.rows)} of {len(self.policies)} policies finished; "
                           "the others are running or waiting", "not finished yet")

    def table(self, missing: str) -> list[dict[str, object]]:
        """The ranked rows, a policy without a row yet as a row saying ``missing``."""
        return ranked([self.rows.get(p) or Row(p, problem=missing) for p in self.policies], self.tolerance)

    def write(self, status: str, missing: str = "") -> str:
        """ranking.csv and summary.txt of the rows so far, under a ``status`` line if any; returns
        the summary's text."""
        import pandas as pd

        from bridge.common import tables

        table = self.table(missing)
        shown = text_rows(table)
        note = "note".ljust(max(len(str(row["note"])) for row in shown))  # notes (and their header) left-aligned
        shown = [{**row, note: str(row["note"]).ljust(len(note))} for row in shown]
        lines = [line.rstrip() for line in tables.text(shown, [*COLUMNS[:-1], note]).splitlines()]
        text = "\n".join([*self.head, *([status] if status else []), "", *lines]) + "\n"
        with atomic.replacing(self.out_dir / "ranking.csv") as temp:
            pd.DataFrame(csv_rows(table, len(self.seeds))).to_csv(temp, index=False, float_format="%.6g")
        atomic.write_text(self.out_dir / "summary.txt", text)
        return text


class Stopped(KeyboardInterrupt):
    """SIGTERM, handled as a Ctrl-C is."""


@contextmanager
def sigterm_stops() -> Iterator[None]:
    """SIGTERM raises :class:`Stopped` in the block (as SIGINT raises KeyboardInterrupt)."""
    def stop(signum: int, frame: FrameType | None) -> None:
        raise Stopped()

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@click.command()
@click.argument("trace_path", metavar="TRACE", type=click.Path(dir_okay=False, path_type=Path))
@cluster_options
@click.option("--policy", "only", multiple=True,
              help="Rank only this policy (repeatable) [default: every policy simulate --list-policies lists].")
@click.option("--seeds", type=Seeds(), default="1", show_default=True,
              help="Policy random seeds: N (seeds 1 to N) or a list (1,5,9); each policy runs under each, and "
                   "each figure is the mean ± std over them.")
@renamed_option("--seed", "--seeds N or --seeds LIST")
@click.option("--policy-timeout", "limit_s", type=FiniteFloat(min=1, max=MAX_SECONDS), default=DEFAULT_TIMEOUT_S,
              show_default=True, help="Seconds one run (a policy under a seed) may take, a worker process's start "
                                      "included; past it, the run is stopped and the policy's row says it timed out.")
@click.option("--tie-tolerance", type=FiniteFloat(min=0, max=1), default=DEFAULT_TOLERANCE, show_default=True,
              help="Relative difference within which two policies' figures tie (besides overlapping mean ± std "
                   "bands over several seeds).")
@click.option("--workers", type=click.IntRange(1, 1024), default=None, show_default="the machine's cores",
              help="Worker processes running the runs (1: one after another in this process).")
@click.option("--top", type=click.IntRange(1, 10), default=8, show_default=True,
              help="Policies drawn in jct_cdf.png, the best first (measures.png draws every one).")
@click.option("--cutoff", type=FiniteFloat(min=0, max=1e9), default=None,
              help="Short/long cutoff (s) on a job's mean task duration [default: as simulate's, the trace's "
                   "stated cutoff, else the 90th percentile of the trace's job mean task durations].")
@click.option("--out", "out_dir", type=OutputPath(file_okay=False), default=None,
              show_default="results/rank-TRACE",
              help="Directory for ranking.csv, summary.txt, measures.png and jct_cdf.png.")
def rank(trace_path: Path, nodes: int | None, slots: int, cluster_file: Path | None, network_delay: float,
         only: tuple[str, ...], seeds: tuple[int, ...], limit_s: float, tie_tolerance: float, workers: int | None,
         top: int, cutoff: float | None, out_dir: Path | None) -> None:
    """Rank every policy on TRACE: which one would have helped this cluster?

    Simulates each policy under each seed on the cluster (--nodes/--slots or --cluster) and ranks
    them on short- and long-job JCT (p50, p90), makespan and utilization, ties shown as ties;
    prints the table with the cluster and offered load it assumed, and writes it (as its rows
    finish, and on Ctrl-C) with its figures under --out."""
    from bridge.common.metrics import cutoff_origin, offered_load, reporting_cutoff
    from bridge.sim.shape import ClusterFileError
    from policies.framework.registry import default_registry, did_you_mean
    from workloads.trace import TraceError, read_trace, stated_cutoff

    if cluster_file is None:
        nodes, slots = nodes_and_slots(trace_path, nodes, slots, " or --cluster FILE")
    shape = cluster_shape(trace_path, nodes, slots, cluster_file)
    names = default_registry().names()
    unknown = [name for name in only if name not in names]
    if unknown:
        raise click.BadParameter(f"unknown policy {unknown[0]!r}{did_you_mean(unknown[0], names)}; see "
                                 "schedbridge simulate --list-policies", param_hint="--policy")
    try:
        jobs = shape.with_demands(read_trace(trace_path, shape.task_demand))
    except (TraceError, ClusterFileError) as exc:
        raise click.ClickException(str(exc)) from None
    stated = stated_cutoff(trace_path)
    origin = cutoff_origin(cutoff is not None, stated is not None)
    if cutoff is None:
        cutoff = reporting_cutoff([j.mean_duration for j in jobs], stated)
    if out_dir is None:
        out_dir = Path("results") / f"rank-{trace_path.stem}"
    total = shape.total_slots
    cluster = f"{nodes} nodes x {slots} slots = {total} slots" if cluster_file is None else shape.describe()
    load = offered_load([j.submit for j in jobs], sum(j.work for j in jobs), total)
    head = [f"trace {trace_path}: {len(jobs)} jobs, {sum(j.n_tasks for j in jobs)} tasks; short/long cutoff "
            f"{cutoff:.4g} s ({origin}); seed{'s' * (len(seeds) > 1)} {', '.join(map(str, seeds))}",
            f"cluster {cluster}; offered load on it "
            + (f"{load:.3f}" if math.isfinite(load) else "n/a (every job arrives at once)")
            + f"; network delay {network_delay:g} s one way",
            f"ties: within {tie_tolerance * 100:g}%"
            + (" or overlapping mean ± std over the seeds" if len(seeds) > 1 else "")
            + f"; each run stopped after {limit_s:g} s"]
    if load > 1:
        head.append(f"warning: the trace offers {load:.2f}x what {total} slots can run: queues grow "
                    "throughout, and the ranking measures overload, not steady state")
    policies = list(only or names)
    points = [runs.Point(trace_path.resolve(), policy, shape, network_delay, seed, cutoff)
              for policy in policies for seed in seeds]
    ranking = Ranking(policies, seeds, head, tie_tolerance, out_dir)
    try:  # kept whatever happens next: the rows are written as they finish
        out_dir.mkdir(parents=True, exist_ok=True)
        _run(ranking, points, workers or os.cpu_count() or 1, limit_s)
        text = ranking.write("")
        figures = _draw(ranking, trace_path.name, cluster, cutoff, top)
    except OSError as exc:
        raise click.ClickException(f"cannot write the ranking to {out_dir}: {exc.strerror or exc}") from None
    click.echo(text, nl=False)
    click.echo(f"wrote {', '.join(str(out_dir / name) for name in ('ranking.csv', 'summary.txt', *figures))}")


def _run(ranking: Ranking, points: Sequence[runs.Point], workers: int, limit_s: float) -> None:
    """The runs into ``ranking``; on SIGINT or SIGTERM, the rows that finished written, the
    command ended with 128 + the signal's number."""
    try:
        with sigterm_stops():
            runs.run_all(points, workers, limit_s, ranking.add)
    except KeyboardInterrupt as exc:
        signum = signal.SIGTERM if isinstance(exc, Stopped) else signal.SIGINT
        done, every = len(ranking.rows), len(ranking.policies)
        text = ranking.write(f"interrupted by {signum.name}: {done} of {every} policies finished",
                             "interrupted before it finished")
        click.echo(text, nl=False)
        click.echo(f"rank: interrupted by {signum.name}: wrote the {done} finished row(s) of {every} to "
                   f"{ranking.out_dir / 'ranking.csv'} and summary.txt (no figures)", err=True)
        raise click.exceptions.Exit(128 + signum) from None


def _draw(ranking: Ranking, trace: str, cluster: str, cutoff: float, top: int) -> list[str]:
    """The figures (`figures`); the names of the files written."""
    from bridge.apps.rank.figures import plot_cdfs, plot_measures

    table = ranking.table("")
    title = f"{trace} on {cluster}, cutoff {cutoff:.4g} s, seeds {', '.join(map(str, ranking.seeds))}"
    plot_measures(table, ranking.out_dir / "measures.png", title + " (mean ± std)")
    order = [str(t["policy"]) for t in table if t["rank"] != "-"]
    plot_cdfs(ranking.outcomes, order, top, ranking.out_dir / "jct_cdf.png", title)
    return ["measures.png", "jct_cdf.png"]
