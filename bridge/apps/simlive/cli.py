"""`schedbridge sim-vs-live WORKLOAD --policy P [--policy Q ...]`: each policy run live (the
replay) and simulated (calibrated from that run), one table and CDF plots with both."""
from __future__ import annotations

import json
import time
from contextlib import ExitStack
from pathlib import Path

import click

from bridge.common.options import (
    EXECUTORS,
    MAX_SLOTS,
    REPEATS,
    SLOTS,
    FiniteFloat,
    OutputPath,
    estimates_option,
    interarrival_option,
    param_option,
)
from bridge.target.config import hadoop_conf_dir_option

RUN_ERRORS: tuple[type[Exception], ...] = (ValueError, OSError)


class MemorySize(click.ParamType):
    """A JVM memory size as Spark writes it (``512m``, ``2g``, ``1.5g``), in GB."""

    name = "size"
    UNITS = {"m": 1 / 1024, "g": 1.0}

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> float:
        if isinstance(value, float):
            return value
        text = str(value).strip().lower()
        try:
            gb = float(text[:-1]) * self.UNITS[text[-1:]]
        except (KeyError, ValueError):
            self.fail(f"{value!r} is not a memory size such as 512m or 2g", param, ctx)
        if not 0 < gb < 1e6:
            self.fail(f"{value!r}: a memory size above 0 is needed", param, ctx)
        return gb


SIZE = MemorySize()


@click.command("sim-vs-live")
@click.argument("workload", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--policy", "policies", multiple=True, required=True,
              help="A registered policy, or a stand-in run without the plugin: 'stock' (Spark's FIFO scheduler "
                   "live, the simulator's fifo) or 'stock-fair' (Spark's FAIR scheduler, each replayed job its "
                   "own pool; the simulator's fair); repeatable.")
@click.option("--executors", default=4, show_default=True, type=EXECUTORS,
              help="Executors of the shared application = the simulator's nodes.")
@click.option("--executor-cores", default=1, show_default=True, type=SLOTS,
              help="Cores (task slots) per executor = the simulator's slots per node.")
@click.option("--executor-memory", type=SIZE, default=None, metavar="SIZE",
              help="Memory of each executor (spark.executor.memory, e.g. 1g or 512m) = the simulator's nodes' memory; "
                   "needed by a workload that declares task demands [default: Spark's setting live, 4 GB per core "
                   "simulated].")
@click.option("--repeats", default=1, show_default=True, type=REPEATS,
              help="Live runs per policy, each simulated with its own calibration.")
@click.option("--preempt", is_flag=True,
              help="Run each preempting policy's node scheduler on real containers (the replay's --preempt; "
                   "simulated with its live parameters, NodeManagers as nodes); the others run as they are.")
@click.option("--min-share", type=FiniteFloat(0.01, 1024), default=None,
              help="With --preempt: cores a shrunk container keeps (the replay's --min-share; the simulator "
                   "plays the share the agents answered) [default: the agent's, 0.1].")
@click.option("--seed", type=int, default=None,
              help="Policy random seed, live and simulated, of the first repeat; repeat R uses SEED + R - 1 "
                   "[default: the workload's seed].")
@click.option("--cutoff", type=FiniteFloat(min=0, max=1e9), default=None,
              help="Reporting cutoff (s) on a job's mean task duration for short/long [default: every "
                   "command's rule for jobs whose trace states no cutoff: the 90th percentile of the "
                   "workload's job means; of the first run's measured jobs for workloads without trace "
                   "durations].")
# the choices are bridge.apps.simlive.measured.JOB_MODELS (not imported here: it loads pandas)
@click.option("--job-model", type=click.Choice(["critical-path", "serial", "tasks", "stages"]), default=None,
              help="Workloads without trace durations (WordCount, TPC-H) are simulated from each live run's "
                   "measured task work: each stage a job arriving when its parents end, as the live engine "
                   "schedules it (stages); every task in its stages with Spark's parents (tasks); or each job as "
                   "one task, a stage as its longest task (critical-path) or as all its tasks' work together "
                   "(serial), stages in sequence [default: stages]. A trace workload plays its trace's durations, "
                   "whatever the model.")
@click.option("--extra-vcores", default=0, show_default=True, type=click.IntRange(0, MAX_SLOTS),
              help="Every NodeManager advertises this many more vcores during the live runs (sleeping "
                   "tasks hold a slot, not a CPU); local testbed only, restored at the end.")
@param_option("Policy parameter (repeatable), given to each compared policy that has it.")
@estimates_option()
@click.option("--estimates-from", metavar="STAND-IN",
              help="Build each repeat's runtime estimates from the history of this stand-in's live run of the "
                   "same repeat (e.g. stock, listed first) and give them to the other policies, as the papers "
                   "take estimates from earlier runs of recurring jobs.")
@hadoop_conf_dir_option
@click.option("--out", type=OutputPath(file_okay=False), default=None,
              help="Output directory [default: results/sim-vs-live-WORKLOAD-TIMESTAMP]; must be empty "
                   "unless --resume.")
@click.option("--resume", is_flag=True,
              help="Reuse the complete live runs already in --out (POLICY/repeat-R/live of this workload, "
                   "policy and seed): simulate every run again, run live only the missing ones (an "
                   "interrupted one is moved aside and run again).")
@interarrival_option
@click.option("--offered-load", type=FiniteFloat(min=0.01, max=1.0), default=None, metavar="FRACTION",
              help="Before the comparison, run stock Spark at the mix's rate (or --interarrival's, where the "
                   "fit starts) and measure its work, again at each rate that work calls for (at most 3 "
                   "runs), and run every policy at the rate that offers this load to the executors' slots "
                   "(e.g. 0.85; docs/sim-vs-live.md). A job mix only.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object on stdout instead of the table.")
def sim_vs_live(workload: Path, policies: tuple[str, ...], executors: int, executor_cores: int,
                executor_memory: float | None, repeats: int,
                preempt: bool, min_share: float | None, seed: int | None, cutoff: float | None,
                job_model: str | None, extra_vcores: int,
                params: dict[str, str], estimates: Path | None, estimates_from: str | None,
                hadoop_conf_dir: Path | None, out: Path | None, resume: bool, interarrival: float | None,
                offered_load: float | None, as_json: bool) -> None:
    """Run WORKLOAD live under each --policy and simulate it on the same shape, calibrated from the
    live run's event logs; write one table and CDF plots with both."""
    from bridge.apps.simlive.calibration import CalibrationError
    from bridge.apps.simlive.compare import CompareError
    from bridge.apps.simlive.session import Comparison
    from bridge.sim.cli import jsonable  # NaN as null, as simulate --json prints it
    from workloads.trace import TraceError
    from workloads.workload_file import WorkloadFileError
    from yarnclient.errors import YarnError

    errors: tuple[type[Exception], ...] = (*RUN_ERRORS, WorkloadFileError, TraceError, YarnError, CompareError,
                                           CalibrationError)
    target = out or Path("results") / f"sim-vs-live-{workload.stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    if target.exists() and any(target.iterdir()) and not resume:
        raise click.BadParameter(f"{target} is not empty (--resume reuses its complete live runs)", param_hint="--out")
    if resume and out is None:
        raise click.BadParameter("--resume needs the --out of the comparison to resume", param_hint="--resume")
    if min_share is not None and not preempt:
        raise click.BadParameter("the node agents' share is for --preempt only", param_hint="--min-share")
    try:
        comparison = Comparison.prepare(workload, list(dict.fromkeys(policies)), executors, executor_cores,
                                        seed, cutoff, params, preempt, hadoop_conf_dir, job_model,
                                        executor_memory_gb=executor_memory, interarrival=interarrival)
        comparison.resume, comparison.min_share = resume, min_share
        comparison.use_estimates(estimates, estimates_from)
        target.mkdir(parents=True, exist_ok=True)  # kept on failure: a live run's results are evidence
        with ExitStack() as stack:
            if extra_vcores:
                comparison.raise_vcores(stack, extra_vcores)
            if offered_load is not None:
                comparison.fit_load(offered_load, target)
            result = comparison.run(repeats, target)
    except errors as exc:
        raise click.ClickException(str(exc)) from None
    if as_json:
        click.echo(json.dumps(jsonable(result.as_dict()), sort_keys=True))
    else:
        click.echo(result.text())
        click.echo(f"results in {target}")

