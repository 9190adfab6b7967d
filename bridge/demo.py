"""`schedbridge demo`: the main job on the local testbed, end to end.

Brings the testbed up, replays a short mixed workload (WordCount and TPC-H jobs arriving as a
Poisson process) once under FIFO and once under a seed policy, both through the schedbridge
Spark plugin on YARN (Kairos with its node scheduler live: node agents resize containers), prints
the side-by-side report and the paths of its plots, and stops the testbed if it started it.
"""
from __future__ import annotations

import os
import time
from importlib import resources
from pathlib import Path

import click

from bridge.options import OutputPath, param_option, renamed_option
from bridge.replay.cli import replay
from bridge.live.node_engine import preempting_policies
from bridge.replay.policy import check as check_policy
from bridge.report.cli import report
from bridge.testbed.cluster import Testbed, TestbedError
from bridge.testbed.layout import default_layout
from sparkplugin import policy_conf


def _say(message: str) -> None:
    click.echo(f"demo: {message}", err=True)


def demo_workload() -> Path:
    return Path(str(resources.files("workloads").joinpath("examples", "demo.toml")))


def _preempts(policy: str) -> bool:
    """Run the policy's node scheduler live where it has one and node agents can run (root)."""
    if policy not in preempting_policies():
        return False
    if os.geteuid() != 0:
        _say(f"{policy}: not root, so no node agents: placement only, no preemption")
        return False
    return True


@click.command()
@click.option("--workload", type=click.Path(dir_okay=False, path_type=Path),
              help="Workload file (default: workloads/examples/demo.toml).")
@click.option("--policy", "policies", multiple=True, default=("fifo", "kairos"), show_default=True,
              help="Policies to compare (repeatable).")
@param_option("Policy parameter for every compared policy (repeatable), e.g. --policy hawk "
              "--policy eagle --param cutoff=40.")
@click.option("--out", type=OutputPath(file_okay=False),
              help="Results directory (default: results/demo-TIMESTAMP).")
@renamed_option("--results", "--out")
@click.option("--keep-testbed", is_flag=True, help="Leave the testbed running afterwards.")
@click.pass_context
def demo(ctx: click.Context, workload: Path | None, policies: tuple[str, ...], params: dict[str, str],
         out: Path | None, keep_testbed: bool) -> None:
    """Start the local testbed, replay a short workload under each policy, compare them."""
    workload = workload or demo_workload()
    for policy in policies:  # every name, before the testbed starts or anything is submitted
        try:
            check_policy(policy, policy_conf(params))
        except ValueError as exc:
            raise click.ClickException(f"--policy {policy}: {exc}") from None
    results = out or Path("results") / f"demo-{time.strftime('%Y%m%d-%H%M%S')}"
    bed = Testbed(default_layout())
    was_running = all(bed.running().values())
    try:
        bed.up(progress=_say)
        for policy in policies:
            preempt = _preempts(policy)
            _say(f"replaying {workload.name} under {policy}" + (" (node agents preempt)" if preempt else ""))
            ctx.invoke(replay, workload=workload, policy=policy, out=results / policy, mode="shared",
                       hadoop_conf_dir=bed.layout.conf_dir, params=params, conf={}, preempt=preempt)
        _say("comparing the runs")
        ctx.invoke(report, results=tuple(results / p for p in policies), out=results / "report")
    except TestbedError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        if not (was_running or keep_testbed):
            bed.down(progress=_say)
