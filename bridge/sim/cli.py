"""``schedbridge simulate``: run one policy over a trace file on a simulated cluster."""
from __future__ import annotations

import json
import math
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar, cast

import click

from bridge.common import atomic
from bridge.common.options import (
    MAX_TOTAL_SLOTS, NODES, SLOTS, FiniteFloat, OutputPath, output_dir, param_option, renamed_option,
)

OUT_SUFFIXES = (".csv", ".parquet")
PROGRESS_MIN_TASKS = 200_000
F = TypeVar("F", bound=Callable[..., Any])


def summary_table(summary: dict[str, Any]) -> str:
    """Human-readable summary: JCT percentiles per class (`bridge.common.tables`) and the run's counts."""
    from bridge.common.tables import cell, text

    lines = [f"policy {summary['policy']}  nodes {summary['nodes']}  slots/node {summary['slots_per_node']}  "
             f"seed {summary['seed']}  reporting cutoff {summary['reporting_cutoff']:.6g} s "
             f"({summary['reporting_cutoff_origin']})",
             f"jobs {summary['jobs']} (finished {summary['finished_jobs']}, unfinished {summary['unfinished_jobs']}, "
             f"rejected {summary['rejected_jobs']})  tasks {summary['tasks']}  events {summary['events']}",
             ""]
    classes = [{"class": c, "jobs": summary["jct"][c]["count"],
                **{f"{p} JCT (s)": summary["jct"][c][p] for p in ("p50", "p90", "p99", "mean")},
                "p99 slowdown": summary["slowdown"][c]["p99"]} for c in ("short", "long")]
    lines.append(text(classes))
    hol = summary.get("head_of_line", {})
    lines += ["",
              f"utilization {summary['utilization']:.3f}  makespan {cell(summary['makespan'])} s  "
              f"suspensions {summary['suspensions']}",
              f"probes behind long {hol.get('probes_behind_long', 0)}  short tasks after long "
              f"{hol.get('short_tasks_after_long', 0)}  re-scheduled probes {hol.get('rescheduled_probes', 0)}"]
    return "\n".join(lines)


def per_task_frame(tasks: Any, jobs: Any, cutoff: float, cluster_slots: int) -> Any:
    """The --tasks-out file: one row per run segment (a suspended task has several, ``done`` on
    the one that completed it); ``queued`` is when the task could first be scheduled, its job's
    submission (the simulator does not log when an entry reached its node). The run's reporting
    cutoff and the cluster's task slots are on every row, as in the per-job file, so that ``report``
    splits and measures utilization from this file alone as the run did."""
    submit = jobs.set_index("job_id")["submit"]
    out = tasks[["job_id", "task", "node", "slot"]].copy()
    out["queued"] = out["job_id"].map(submit)
    out = out.join(tasks[["start", "end", "done"]]).sort_values(["job_id", "task", "start"], kind="stable")
    return out.assign(reporting_cutoff=cutoff, cluster_slots=cluster_slots)


def write_atomic(frame: Any, path: Path) -> None:
    """Write CSV or Parquet (by extension); an error leaves neither a partial file nor a
    directory created for it behind."""
    with output_dir(path.parent):
        _replace_with(frame, path)


def _replace_with(frame: Any, path: Path) -> None:
    """Write to a temporary file next to ``path``, then rename it over ``path``."""
    with atomic.replacing(path) as tmp:
        if path.suffix == ".parquet":
            frame.to_parquet(tmp, index=False)
        else:
            frame.to_csv(tmp, index=False)


def _list_policies(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    if not value or ctx.resilient_parsing:
        return
    from policies.framework.bounds import bounds_of
    from policies.framework.registry import default_registry, describe, param_text

    reg = default_registry()
    for name in reg.names():
        entry = reg.get(name)
        ranges = bounds_of(entry.config)
        params = ", ".join(f"{n}={param_text(d)}" + (f" ({ranges[n].describe()})" if n in ranges else "")
                           for n, _t, d in describe(entry.config)) or "(no parameters)"
        click.echo(f"{name:14} {entry.summary}\n{'':14} {params}")
    ctx.exit(0)


def cluster_options(command: F) -> F:
    """The simulated cluster's options, one definition for every command that simulates (``simulate``,
    ``rank``): ``--nodes``/``--slots`` or ``--cluster`` (:func:`cluster_shape` makes the shape of
    them) and ``--network-delay``."""
    for option in reversed((
            click.option("--nodes", type=NODES, default=None,
                         help="number of nodes (or --cluster) [default: the cluster the trace states, as trace "
                              "import records it]"),
            click.option("--slots", "slots", default=1, show_default=True, type=SLOTS,
                         help="slots per node: its cores, with 4 GB of memory per core"),
            click.option("--cluster", "cluster_file", type=click.Path(dir_okay=False, path_type=Path), default=None,
                         help="TOML file of heterogeneous nodes instead of --nodes/--slots (docs/workloads.md)"),
            click.option("--network-delay", default=0.0005, show_default=True, type=FiniteFloat(min=0, max=60),
                         help="one way, seconds"))):
        command = option(command)
    return command


@click.command()
@click.option("--list-policies", is_flag=True, expose_value=False, is_eager=True, callback=_list_policies,
              help="list the registered policies and their parameters, then exit")
@click.argument("trace_path", metavar="TRACE", required=False, type=click.Path(dir_okay=False, path_type=Path))
@click.option("--trace", "trace_option", type=click.Path(dir_okay=False, path_type=Path), metavar="FILE",
              help="TRACE as an option: its older spelling, still accepted for scripts written with it")
@click.option("--policy", required=True, help="policy name (see --list-policies)")
@cluster_options
@param_option("policy parameter (repeatable; see --list-policies)")
@renamed_option("--set", "--param KEY=VALUE")
@click.option("--seed", default=1, show_default=True, type=int, help="policy random seed")
@click.option("--cutoff", "--report-cutoff", "report_cutoff", type=FiniteFloat(min=0, max=1e9), default=None,
              help="reporting cutoff (s) on the mean task duration for short/long, as report and rank "
                   "take it (--report-cutoff: its older name, still accepted); default: the one "
                   "the trace states (trace generate writes its kind's), else the 90th percentile of "
                   "the jobs' mean task durations (top 10% are long)")
@click.option("--out", type=OutputPath(dir_okay=False), default=None,
              help="per-job results, .csv or .parquet")
@click.option("--tasks-out", type=OutputPath(dir_okay=False), default=None,
              help="per-task records (job_id, task, node, slot, queued, start, end, done, reporting_cutoff, "
                   "cluster_slots), .csv or .parquet; `schedbridge report` takes it")
@click.option("--json", "as_json", is_flag=True, help="print the summary as one JSON object on stdout")
@click.option("--progress/--no-progress", default=None,
              help="progress bar on stderr (default: on for runs over 200k tasks)")
def simulate(trace_path: Path | None, trace_option: Path | None, policy: str, nodes: int | None, slots: int,
             cluster_file: Path | None, params: dict[str, str], seed: int, report_cutoff: float | None,
             network_delay: float, out: Path | None, tasks_out: Path | None, as_json: bool,
             progress: bool | None) -> None:
    """Simulate POLICY over TRACE (thesis format: submit n mean d1..dn; or .jsonl) on the cluster
    (--nodes/--slots, --cluster, or the one the trace states) and summarize job completion times."""
    trace_path = one_trace(trace_path, trace_option)
    # numpy only sums and sorts columns here, and OpenBLAS's threads would spin at its import (about
    # 0.06 s of CPU each run): one thread, unless the user's environment says otherwise
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from bridge.common.metrics import cutoff_origin, offered_load, reporting_cutoff, summary as summarize
    from bridge.sim.engine import Simulation
    from bridge.sim.output import PerJob, segments
    from bridge.sim.shape import ClusterFileError
    from policies.framework.api import DecisionError, PolicyEnv
    from policies.framework.compiled import CORE
    from policies.framework.registry import ConfigError, RegistryError, config_for, create
    from workloads.trace import TraceError, read_trace, stated_cutoff

    for path, hint in ((out, "--out"), (tasks_out, "--tasks-out")):
        if path is not None and path.suffix not in OUT_SUFFIXES:
            raise click.BadParameter(f"{path}: use a .csv or .parquet file name", param_hint=hint)
    shape = cluster_shape(trace_path, nodes, slots, cluster_file)
    try:
        config = config_for(policy, params)
        spec = shape.spec(network_delay)
        pol = create(policy, PolicyEnv(spec, seed), config)
        jobs = shape.with_demands(read_trace(trace_path, shape.task_demand))
        stated = stated_cutoff(trace_path)
    except (RegistryError, ConfigError, TraceError, ClusterFileError) as e:
        raise click.ClickException(str(e)) from None
    except ValueError as e:
        raise click.ClickException(f"{policy}: {e}") from None
    cutoff = report_cutoff if report_cutoff is not None else \
        reporting_cutoff([j.mean_duration for j in jobs], stated)
    origin = cutoff_origin(report_cutoff is not None, stated is not None)
    load = offered_load([j.submit for j in jobs], sum(j.work for j in jobs), shape.total_slots)
    if load > 1:
        cluster = shape.describe() if cluster_file else \
            f"{shape.n_nodes} nodes x {spec.slots_per_node} slot{'s' * (spec.slots_per_node > 1)}"
        click.echo(f"warning: the trace offers load {load:.3g} to {cluster} (over 1: queues grow for the whole "
                   "run, and the figures measure an overloaded cluster)", err=True)
    sim = Simulation(jobs, pol, spec, report_long=lambda j: j.mean_duration > cutoff, **shape.sim_options())
    shape.hold_missing_slots(sim.state)
    click.echo(CORE.describe(), err=True)
    n_tasks = sum(j.n_tasks for j in jobs)
    show = progress if progress is not None else n_tasks >= PROGRESS_MIN_TASKS
    bar = None
    tick = None
    if show:
        from tqdm import tqdm

        bar = tqdm(total=len(jobs), unit="job", desc=f"{policy}", file=sys.stderr, mininterval=0.5)

        def tick(events: int, now: float) -> None:
            bar.n = sim._next_job  # jobs released so far
            bar.set_postfix_str(f"t={now:.0f}s ev={events}", refresh=False)
            bar.refresh()
    try:
        result = sim.run(progress=tick)
    except DecisionError as e:
        raise click.ClickException(f"policy {policy!r} made an invalid decision: {e}") from None
    finally:
        if bar is not None:
            bar.n = sim._next_job
            bar.close()
    per_job = PerJob.of_run(result, cutoff, shape.total_slots)  # numpy columns: no pandas, no task table
    summary = summarize(per_job.jobs, segments(result.log), cutoff=cutoff, n_slots=shape.total_slots,
                        counters=result.log.counters,
                        extra={"policy": policy, "trace": str(trace_path), "nodes": shape.n_nodes,
                               "slots_per_node": spec.slots_per_node, "cluster": shape.describe(), "seed": seed,
                               "settings": [f"{k}={v}" for k, v in params.items()], "events": result.events,
                               "core": CORE.describe(), "reporting_cutoff_origin": origin,
                               "offered_load": load})
    where = infinite_at(summary) or per_job.infinite_at()
    if where:
        raise click.ClickException(f"{where} is infinite: the trace's times (with --network-delay) go beyond "
                                   "what a float holds; nothing written")
    if out is not None:
        per_job.write(out)
    if tasks_out is not None:  # the task table (and pandas) only when asked for
        write_atomic(per_task_frame(result.task_table(), result.job_table(), cutoff, shape.total_slots),
                     tasks_out)
    if as_json:
        click.echo(json.dumps(jsonable(summary), sort_keys=True))
    else:
        click.echo(summary_table(summary))
        if out is not None:
            click.echo(f"per-job results: {out}")
        if tasks_out is not None:
            click.echo(f"per-task records: {tasks_out}")
    if result.unfinished:
        click.echo(f"warning: {len(result.unfinished)} job(s) never finished "
                   f"(first: {result.unfinished[:5]})", err=True)


def one_trace(argument: Path | None, option: Path | None) -> Path:
    """The trace, given as the argument TRACE (as every command takes its input) or as ``--trace``
    (its older spelling), once."""
    if argument is not None and option is not None:
        raise click.UsageError("give the trace once: as TRACE or as --trace FILE (its older spelling)")
    if argument is None and option is None:
        raise click.UsageError("Missing argument 'TRACE'.")
    return cast(Path, argument or option)


def _slots_given() -> bool:
    return click.get_current_context().get_parameter_source("slots") is not click.core.ParameterSource.DEFAULT


def nodes_and_slots(trace_path: Path, nodes: int | None, slots: int, other: str = "") -> tuple[int, int]:
    """``--nodes/--slots``, else the cluster ``trace_path`` states (``trace import`` records the one
    its jobs ran on; said on stderr); UsageError when neither says, naming ``other`` ways out too."""
    from workloads.trace import TraceError, stated_cluster

    if nodes is not None:
        return nodes, slots
    if _slots_given():
        raise click.UsageError("--slots needs --nodes (without both, the cluster the trace states)")
    try:
        stated = stated_cluster(trace_path)
    except TraceError as e:
        raise click.ClickException(str(e)) from None
    if stated is None:
        raise click.UsageError(f"give --nodes (with --slots){other}: {trace_path} states no cluster "
                               "(trace import records the one its jobs ran on)")
    click.echo(f"cluster {stated[0]} nodes x {stated[1]} slots: the one {trace_path} states", err=True)
    return stated


def cluster_shape(trace_path: Path, nodes: int | None, slots: int, cluster_file: Path | None) -> Any:
    """The simulated cluster of ``--nodes/--slots``, of ``--cluster`` (``bridge.sim.shape``), else
    the one the trace states."""
    from bridge.sim.shape import ClusterFileError, load, uniform

    if cluster_file is not None:
        if nodes is not None or _slots_given():
            raise click.UsageError("--cluster describes the nodes: give it without --nodes/--slots")
        try:
            return load(cluster_file, MAX_TOTAL_SLOTS)
        except ClusterFileError as e:
            raise click.ClickException(str(e)) from None
    nodes, slots = nodes_and_slots(trace_path, nodes, slots, " or --cluster FILE")
    if nodes * slots > MAX_TOTAL_SLOTS:
        raise click.BadParameter(f"{nodes} nodes x {slots} slots is more than {MAX_TOTAL_SLOTS:,} slots in all",
                                 param_hint="--nodes/--slots")
    return uniform(nodes, slots)


def infinite_at(x: Any, where: str = "") -> str | None:
    """The key path of the first infinite number in nested dicts and lists ``x``, or None: no
    output carries an ``Infinity`` (NaN stays: it is how a class without jobs is reported)."""
    if isinstance(x, dict):
        items: Any = ((f"{where}.{k}" if where else str(k), v) for k, v in x.items())
    elif isinstance(x, (list, tuple)):
        items = ((where, v) for v in x)
    else:
        return where if isinstance(x, float) and math.isinf(x) else None
    return next((found for path, v in items if (found := infinite_at(v, path))), None)


def jsonable(x: Any) -> Any:
    """``x`` with tuples as lists and NaN as None, for ``json.dumps`` (JSON has no NaN); the
    ``--json`` output of ``simulate`` and ``sim-vs-live``."""
    if isinstance(x, dict):
        return {k: jsonable(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return [jsonable(v) for v in x]
    if isinstance(x, float) and math.isnan(x):
        return None
    return x
