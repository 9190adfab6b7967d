"""`schedbridge replay WORKLOAD --policy NAME`: a workload against the live cluster."""
from __future__ import annotations

import time
from pathlib import Path

import click

import sparkplugin
from bridge.common.options import (
    FiniteFloat,
    KeyValue,
    OutputPath,
    estimates_option,
    interarrival_option,
    pairs_to_dict,
    param_option,
    renamed_option,
)
from bridge.nodes.cluster_agents import agents_option
from bridge.replay import policy as policies
from bridge.replay import preemption
from bridge.replay.executor_spread import SpreadError
from bridge.replay.inputs import prepare_inputs
from bridge.replay.runner import MODES, Replay, ReplayPlan
from bridge.target.config import announce, hadoop_conf_dir_option, resolve
from workloads.expand import expand
from workloads.trace import TraceError
from workloads.workload_file import WorkloadFileError, at_interarrival, load_workload
from yarnclient.errors import YarnError
from yarnclient.resourcemanager import ResourceManagerClient

USER_ERRORS = (WorkloadFileError, TraceError, YarnError, ValueError, OSError)


def spark_settings(conf: dict[str, str], params: dict[str, str], estimates: Path | None = None) -> dict[str, str]:
    """The Spark conf of the replay: ``--conf`` entries plus the policy parameters (``--param``)
    and the estimates file (``--estimates``, by its absolute path).

    A policy parameter given as ``--conf`` is refused, naming ``--param``: one spelling, and the
    parameters' Spark keys stay the plugin's business (`sparkplugin.policy_conf`)."""
    for key, value in conf.items():
        bare = key.removeprefix(sparkplugin.CONF_PREFIX)  # the old spelling, spark.schedbridge.<param>
        if sparkplugin.is_policy_param(key) or (key != bare and bare not in sparkplugin.PLUGIN_KEYS
                                                and sparkplugin.PARAM_NAME.fullmatch(bare)):
            name = next(iter(sparkplugin.policy_params({key: value}))) if sparkplugin.is_policy_param(key) else bare
            raise click.BadParameter(f"{key} is a policy parameter: use --param {name}={value}",
                                     param_hint="--conf")
    table = {} if estimates is None else {sparkplugin.ESTIMATES_KEY: str(estimates.resolve())}
    return {**conf, **sparkplugin.policy_conf(params), **table}


def _results_dir(results: Path | None, workload: str, policy: str, mode: str) -> Path:
    path = results or Path("results") / f"{workload}-{policy}-{mode}-{time.strftime('%Y%m%d-%H%M%S')}"
    if path.exists() and any(path.iterdir()):
        raise click.BadParameter(f"{path} is not empty", param_hint="--out")
    path.mkdir(parents=True, exist_ok=True)
    return path


def build_plan(workload_path: Path, policy: str, mode: str, results: Path | None,
               conf_dir: Path | None, conf: dict[str, str], preempt: bool = False,
               agents_file: Path | None = None,
               measure_alone: bool = False, min_share: float | None = None,
               interarrival: float | None = None) -> tuple[ReplayPlan, ResourceManagerClient]:
    """Validate everything (with ``preempt``, every node agent answers) and prepare the inputs;
    nothing is submitted yet. ``interarrival``: the mix's mean seconds between jobs instead of the
    file's."""
    workload = load_workload(workload_path)
    if interarrival is not None:
        workload = at_interarrival(workload, interarrival)
        click.echo(f"replay: one job every {interarrival:.3g} s on average (--interarrival)", err=True)
    submissions = expand(workload)
    policies.check(policy, conf, preempt)
    target = resolve(conf_dir)
    announce("replay", target)
    agents = preemption.check(policy, mode, target, conf, agents_file, min_share) if preempt else None
    if agents is not None:
        click.echo(f"replay: {agents.origin}", err=True)
    rm = target.rm_client()
    rm.info()  # fails fast, with the RM's address (every RM's, with HA), when the cluster is down
    click.echo(f"replay: preparing {len(workload.inputs)} input(s) in HDFS", err=True)
    inputs = prepare_inputs(workload.inputs, target.webhdfs_url, target.fs_default)
    plan = ReplayPlan(workload.name, workload.seed, policy, mode, submissions, inputs, target,
                      _results_dir(results, workload.name, policy, mode), conf, agents, measure_alone,
                      workload.inputs)
    return plan, rm


@click.command("replay")
@click.argument("workload", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--policy", required=True,
              help="A registered policy (run by the schedbridge Spark plugin), or 'stock' for "
                   "Spark's own FIFO scheduler, 'stock-fair' for its FAIR scheduler (each job its own pool).")
@click.option("--out", type=OutputPath(file_okay=False),
              help="Results directory (default: results/WORKLOAD-POLICY-MODE-TIMESTAMP).")
@renamed_option("--results", "--out")
@click.option("--mode", type=click.Choice(MODES), default="shared", show_default=True,
              help="Jobs of one long-running Spark application, or one application per job.")
@hadoop_conf_dir_option
@param_option()
@estimates_option()
@click.option("--conf", multiple=True, type=KeyValue(), callback=pairs_to_dict, metavar="KEY=VALUE",
              help="Extra Spark setting (repeatable), e.g. spark.executor.instances=2.")
@click.option("--preempt", is_flag=True,
              help="Run the policy's node scheduler on real containers (kairos): node agents resize "
                   "them (those of --agents; without it, on the local testbed as root, agents started "
                   "for the run). Shared mode; see docs/replay.md.")
@agents_option
@click.option("--min-share", type=FiniteFloat(0.01, 1024), default=None,
              help="With --preempt: cores a shrunk container keeps, for the node agents the run starts "
                   "itself [default: the agent's, 0.1, Kairos' minimum-cpu]. A host whose slots get less "
                   "than a core each may want less (docs/live-preemption.md).")
@click.option("--measure-alone", is_flag=True,
              help="Before time 0, run the first job of each category once by itself (shared mode: in the "
                   "replay's application; per-job: as its own application) and record its runtime as "
                   "duration_alone_s, the slowdown's denominator, of every job of that category.")
@interarrival_option
def replay(workload: Path, policy: str, out: Path | None, mode: str, hadoop_conf_dir: Path | None,
           params: dict[str, str], estimates: Path | None, conf: dict[str, str], preempt: bool,
           agents: Path | None, min_share: float | None, measure_alone: bool,
           interarrival: float | None) -> None:
    """Submit every job of WORKLOAD at its arrival time and record what happens."""
    settings = spark_settings(conf, params, estimates)
    try:
        if agents is not None and not preempt:
            raise click.BadParameter("the node agents are for --preempt only", param_hint="--agents")
        if min_share is not None and not preempt:
            raise click.BadParameter("the node agents' share is for --preempt only", param_hint="--min-share")
        plan, rm = build_plan(workload, policy, mode, out, hadoop_conf_dir, settings, preempt, agents,
                              measure_alone=measure_alone, min_share=min_share,
                              interarrival=interarrival)
    except USER_ERRORS as exc:
        raise click.ClickException(str(exc)) from None
    try:
        state = Replay(plan, rm).run()
    except SpreadError as exc:  # --preempt: YARN cannot or did not place N + Q executors per node
        raise click.ClickException(str(exc)) from None
    click.echo(f"replay {state}: results in {plan.results}")
