"""`schedbridge replay WORKLOAD --policy NAME`: a workload against the live cluster."""
from __future__ import annotations

import time
from pathlib import Path

import click

from bridge.options import OutputPath
from bridge.replay.inputs import prepare_inputs
from bridge.replay import policy as policies
from bridge.replay import preemption
from bridge.replay.runner import MODES, Replay, ReplayPlan
from bridge.replay.target import announce, hadoop_conf_dir_option, resolve
from workloads.expand import expand
from workloads.trace import TraceError
from workloads.workload_file import WorkloadFileError, load_workload
from yarnclient.errors import YarnError
from yarnclient.resourcemanager import ResourceManagerClient

USER_ERRORS = (WorkloadFileError, TraceError, YarnError, ValueError, OSError)


def _conf_pairs(pairs: tuple[str, ...]) -> dict[str, str]:
    conf = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="--conf")
        conf[key] = value
    return conf


def _results_dir(results: Path | None, workload: str, policy: str, mode: str) -> Path:
    path = results or Path("results") / f"{workload}-{policy}-{mode}-{time.strftime('%Y%m%d-%H%M%S')}"
    if path.exists() and any(path.iterdir()):
        raise click.BadParameter(f"{path} is not empty", param_hint="--results")
    path.mkdir(parents=True, exist_ok=True)
    return path


def build_plan(workload_path: Path, policy: str, mode: str, results: Path | None,
               conf_dir: Path | None, conf: dict[str, str],
               preempt: bool = False) -> tuple[ReplayPlan, ResourceManagerClient]:
    """Validate everything and prepare the inputs; nothing is submitted yet."""
    workload = load_workload(workload_path)
    submissions = expand(workload)
    policies.check(policy, conf, preempt)
    target = resolve(conf_dir)
    announce("replay", target)
    if preempt:
        preemption.check(policy, mode, target, conf)
    rm = target.rm_client()
    rm.info()  # fails fast, with the RM's address (every RM's, with HA), when the cluster is down
    click.echo(f"replay: preparing {len(workload.inputs)} input(s) in HDFS", err=True)
    inputs = prepare_inputs(workload.inputs, target.webhdfs_url, target.fs_default)
    plan = ReplayPlan(workload.name, workload.seed, policy, mode, submissions, inputs, target,
                      _results_dir(results, workload.name, policy, mode), conf, preempt)
    return plan, rm


@click.command("replay")
@click.argument("workload", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--policy", required=True,
              help="A registered policy (run by the schedbridge Spark plugin), or 'stock' for "
                   "Spark's own scheduler.")
@click.option("--results", type=OutputPath(file_okay=False),
              help="Results directory (default: results/WORKLOAD-POLICY-MODE-TIMESTAMP).")
@click.option("--mode", type=click.Choice(MODES), default="shared", show_default=True,
              help="Jobs of one long-running Spark application, or one application per job.")
@hadoop_conf_dir_option
@click.option("--conf", "confs", multiple=True, metavar="KEY=VALUE",
              help="Extra Spark setting (repeatable), e.g. spark.executor.instances=2.")
@click.option("--preempt", is_flag=True,
              help="Run the policy's node scheduler on real containers (kairos): node agents resize "
                   "them. Local testbed, shared mode, as root; see docs/replay.md.")
def replay(workload: Path, policy: str, results: Path | None, mode: str,
           hadoop_conf_dir: Path | None, confs: tuple[str, ...], preempt: bool) -> None:
    """Submit every job of WORKLOAD at its arrival time and record what happens."""
    try:
        plan, rm = build_plan(workload, policy, mode, results, hadoop_conf_dir, _conf_pairs(confs), preempt)
    except USER_ERRORS as exc:
        raise click.ClickException(str(exc)) from None
    state = Replay(plan, rm).run()
    click.echo(f"replay {state}: results in {plan.results}")
