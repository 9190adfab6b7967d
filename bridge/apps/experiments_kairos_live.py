"""Kairos vs YARN FIFO, live on the testbed: a scaled-down Kairos WordCount workload in one Spark app.

    sudo .venv/bin/schedbridge bench kairos-live workloads/examples/kairos-live-mini.toml \\
        --policy kairos --out results/kairos-live-mini-kairos
    ... --policy fifo --out results/kairos-live-mini-fifo
    .venv/bin/schedbridge report results/kairos-live-mini-fifo results/kairos-live-mini-kairos

Every node counts as N = ``--cores`` cores. ``fifo`` is stock Spark on YARN with N one-core
executors per node: Spark's FIFO inside the application, the thesis' "YARN FIFO" baseline.
``kairos`` runs `bridge.drivers.node_engine` in-process on ``spark-schedbridge://yarn`` with N+Q
executors per node, and one node agent per NodeManager restricted to this application. It needs
root for the agents' cgroups.

First each category of the workload runs once alone (its ``duration_alone_s``, for slowdowns).
Then every job is submitted at its arrival time from its own thread. ``jobs.csv`` and
``meta.json`` follow the replay results layout (`bridge.replay.results`), so `schedbridge report`
reads them.

A fixed comparison of two named configurations, so it lives with the experiment definitions
(``bridge/apps/experiments*.py``), which may choose by policy name.
"""
from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from contextlib import ExitStack
from pathlib import Path
from types import SimpleNamespace

import click
import pandas as pd

from bridge.common.options import OutputPath, param_option
from bridge.drivers.node_engine import node_preemption
from bridge.nodes.preemption import ContainerPreemptor
from bridge.plugin import inprocess as spark_inprocess
from bridge.plugin.host import PolicyHost
from bridge.replay.inputs import prepare_inputs
from bridge.common import atomic
from bridge.replay.results import write_frame
from bridge.testbed.layout import default_layout
from bridge.testbed.local_agents import start_local_agents
from bridge.testbed.spark import spark_defaults, spark_env
from workloads.expand import expand
from workloads.spec import Submission, WordCountJob, params_to_json
from workloads.wordcount.job import word_counts
from workloads.workload_file import load_workload
from yarnclient import ResourceManagerClient


def run_job(sc, sub: Submission, inputs: dict[str, str]) -> int:
    p = sub.params
    if not isinstance(p, WordCountJob):
        raise click.UsageError(f"job {sub.job_id}: the Kairos live experiment replays word-count jobs only")
    return word_counts(sc, inputs[p.input], p.reduces, p.extra_flops).count()


def alone_durations(sc, subs: list[Submission], inputs: dict[str, str]) -> dict[str, float]:
    """Each category's runtime alone on the idle application (one run, the first job of it)."""
    out: dict[str, float] = {}
    for sub in subs:
        if sub.category not in out:
            start = time.monotonic()
            run_job(sc, sub, inputs)
            out[sub.category] = time.monotonic() - start
    return out


def replay_jobs(sc, subs: list[Submission], inputs: dict[str, str]) -> list[dict]:
    """Submit every job at its arrival time from its own thread; their records once all ended."""
    rows: list[dict] = []
    start = time.monotonic()

    def one(sub: Submission) -> None:
        time.sleep(max(0.0, sub.time_s - (time.monotonic() - start)))
        submit = time.monotonic() - start
        sc.setJobGroup(f"job-{sub.job_id}", sub.category)
        try:
            run_job(sc, sub, inputs)
            status = "succeeded"
        except Exception:  # noqa: BLE001 - a failed job is recorded, the replay goes on
            status = "failed"
        rows.append({"job_id": sub.job_id, "category": sub.category, "kind": sub.kind,
                     "params": params_to_json(sub.params), "arrival_s": sub.time_s, "submit_s": submit,
                     "end_s": time.monotonic() - start, "status": status})

    threads = [threading.Thread(target=one, args=(s,), name=f"job-{s.job_id}") for s in subs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return sorted(rows, key=lambda r: r["job_id"])


@click.command("kairos-live")
@click.argument("workload", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option("--policy", type=click.Choice(("kairos", "fifo")), required=True)
@click.option("--out", type=OutputPath(file_okay=False), required=True, help="Results directory.")
@click.option("--cores", type=int, default=1, show_default=True, help="N: cores per node for the policy")
@param_option("Kairos' parameter (repeatable), over this bench's q=1 (Q: extra executors per node, so "
              "also how many executors YARN grants) and w=5.0 (the quantum W, seconds)")
def kairos_live(**options: object) -> None:
    """Kairos vs YARN FIFO live on the testbed (root): one WordCount workload in one Spark app."""
    args = SimpleNamespace(**options)
    if args.params and args.policy != "kairos":
        raise click.BadParameter("policy parameters apply to --policy kairos", param_hint="--param")
    args.params = {**BENCH_PARAMS, **args.params}
    try:
        args.q = int(args.params["q"])
    except ValueError:
        raise click.BadParameter(f"q must be an integer, got {args.params['q']!r}", param_hint="--param") from None
    run(args)


BENCH_PARAMS = {"q": "1", "w": "5.0"}  # Kairos' Q and a quantum for WordCount jobs of seconds


def run(args: SimpleNamespace) -> None:
    """The bench proper, on the options as attributes (``args.out`` is the results directory)."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # unwind: restore vcores and containers
    os.environ.update(spark_env(default_layout()))
    layout = default_layout()
    rm = ResourceManagerClient(layout.rm_url, user=layout.user)
    workload = load_workload(args.workload)
    subs = list(expand(workload))
    inputs = prepare_inputs(workload.inputs, layout.webhdfs_url, layout.fs_default)
    args.out.mkdir(parents=True, exist_ok=True)
    nodes = sorted(n.http_address for n in rm.nodes(states=["RUNNING"]))
    per_node = args.cores + (args.q if args.policy == "kairos" else 0)
    conf = {**spark_defaults(layout), "spark.executor.instances": str(per_node * len(nodes)),
            "spark.dynamicAllocation.enabled": "false", "spark.locality.wait": "0s",
            "spark.scheduler.mode": "FIFO", "spark.ui.enabled": "false"}
    with ExitStack() as agents_stack, ExitStack() as stack:   # agents outlive the session's restore
        if args.policy == "kairos":
            preemptor = ContainerPreemptor({})
            params = args.params
            planner = stack.enter_context(node_preemption(rm, preemptor, nodes, args.cores, "kairos", params,
                                                          args.out / "vcores.json"))
            spark = spark_inprocess.session("yarn", PolicyHost(planner), conf=conf, app_name="kairos-live-bench",
                                            params=params)
            app_id = spark.sparkContext.applicationId
            preemptor.agents.update(start_local_agents(agents_stack, layout, rm, app_id, args.out,
                                                         "kairos-bench"))
        else:
            from pyspark.sql import SparkSession
            builder = SparkSession.builder.master("yarn").appName("fifo-live-bench")
            for key, value in conf.items():
                builder = builder.config(key, value)
            spark = builder.getOrCreate()
        stack.callback(spark.stop)
        sc = spark.sparkContext
        deadline = time.monotonic() + 600
        while sc._jsc.sc().getExecutorIds().size() < per_node * len(nodes):
            if time.monotonic() > deadline:
                raise SystemExit(f"YARN did not grant {per_node * len(nodes)} executors within 600 s")
            time.sleep(0.5)
        alone = alone_durations(sc, subs, inputs)
        rows = replay_jobs(sc, subs, inputs)
        for row in rows:
            row["duration_alone_s"] = alone[row["category"]]
        write_frame(args.out / "jobs.csv", pd.DataFrame(rows))
        meta = {"workload": workload.name, "policy": args.policy, "mode": "shared", "source": "live",
                "seed": workload.seed, "state": "complete", "cores_per_node": args.cores,
                **({"params": args.params} if args.policy == "kairos" else {}), "executors_per_node": per_node}
        if args.policy == "kairos":
            meta["preemption_commands"] = len(preemptor.commands)
            meta["plugin"] = spark_inprocess.stats()
        atomic.write_text(args.out / "meta.json", json.dumps(meta, indent=1))

