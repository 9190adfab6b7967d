"""Spark plugin benchmark: decision latency per offer round and placement throughput.

1. Decision latency (p50/p99): a 1,000-task stage on ``spark-schedbridge://local[64]`` (64 slots),
   trivial tasks or, with ``--task-ms``, tasks that sleep that long (so the driver is not busy
   starting tasks back to back); the plugin times every policy round trip (request serialised,
   py4j call, the policy host's planning, reply parsed) and every whole policy round in the
   scheduler (batch built, round trip, grants applied through Spark's own resourceOffers), and
   splits each trip into its parts (request serialised, the trip out and back, the host's own
   time as its reply says, reply parsed); the
   host times the policy's own decision in each round. The host-side planning time of a
   synthetic round with exactly 64 free slots and 1,000 pending tasks is reported too.
2. Placement throughput: many trivial tasks (JVM-only, no Python workers), stock Spark
   (``local[N]``) vs the bridge (``spark-schedbridge://local[N]``), alternating in one run, with
   the bridge's count of rounds in which the policy held free slots back while tasks were pending,
   and each kind's CPU per task (the driver JVM's, and the policy host's); with
   ``--launch-ahead``, the bridge without and with ``spark.schedbridge.launch.ahead`` in the same
   alternation (the latency part then launches ahead). Beside the medians of each kind, each bridge
   run paired with stock's run of the same repeat: its rate, and stock's CPU per task over its own.

Both parts run for each ``--endpoint``: ``inprocess`` (the PySpark driver hosts the policy, a
py4j callback per round) and ``local`` (the default of spark-submit: a host process beside the
driver, JSON over loopback TCP), so their costs compare within one run. The policy's own decision
time is host-timed in-process only (the local host's decisions live in its own process).

Run: ``schedbridge bench spark [--policy fifo] [--param KEY=VALUE] [--tasks 4000] [--repeats 3] [--task-ms 0]
[--endpoint inprocess --endpoint local] [--launch-ahead]`` (``--repeats 0``: the latency part only).
"""
from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import click
from pyspark import SparkConf, SparkContext
from pyspark.sql import SparkSession

import sparkplugin
from bridge.common.options import SLOTS, param_option
from bridge.common.metrics import median, percentile
from bridge.drivers.planners import make_planner
from bridge.plugin import inprocess as spark_inprocess
from bridge.plugin.host import PolicyHost
from bridge.protocol.messages import PROTOCOL_VERSION
from policies.framework.registry import STOCK

BASE = {"spark.driver.memory": "512m", "spark.ui.enabled": "false", "spark.ui.showConsoleProgress": "false"}
# The parts of a round trip the plugin times (BridgeStats.CallParts): the trip is from the request
# sent to its reply back (hand-offs between threads and processes, the transport), less the host's part.
CALL_PARTS = (("serialise_us", "request serialised"), ("trip_us", "trip"), ("host_us", "host"),
              ("parse_us", "reply parsed"))


def synthetic_rounds(executors: int = 16, slots: int = 4, stages: int = 10,
                     pending: int = 1000) -> tuple[str, str]:
    """A snapshot round announcing ``executors`` x ``slots``, then a round with all those slots free
    and ``pending`` tasks over ``stages`` new stages (arrivals and placement in one round)."""
    execs = [{"e": "executor_added", "t": 0, "executor": str(i), "host": f"h{i % 4}", "cores": slots,
              "container": "", "nm": ""} for i in range(executors)]
    base = {"v": PROTOCOL_VERSION, "kind": "round", "app": "bench", "now_ms": 1000, "cpus_per_task": 1, "launched": [],
            "events": [], "slots": [{"executor": str(i), "host": f"h{i % 4}", "free": slots}
                                    for i in range(executors)]}
    setup = {**base, "round": 1, "stages": [], "snapshot": {"executors": execs, "running": [], "jobs": []}}
    timed = {**base, "round": 2, "stages": [
        {"stage": s, "attempt": 0, "job": s, "tasks": pending // stages, "pending": pending // stages,
         "running": 0, "locality": {f"h{s % 4}": pending // stages}, "props": {}, "parents": []}
        for s in range(stages)]}
    return json.dumps(setup), json.dumps(timed)


def host_planning_us(policy: str, repeats: int = 200, params: Mapping[str, str] | None = None) -> list[float]:
    """Host-side time of the synthetic 64-slot / 1,000-task round (a fresh host each repeat)."""
    setup, timed = synthetic_rounds()
    out = []
    for _ in range(repeats):
        host = PolicyHost(make_planner(policy, params))
        host.handle(setup)
        start = time.perf_counter_ns()
        reply = host.handle(timed)
        out.append((time.perf_counter_ns() - start) / 1000)
    assert sum(g["slots"] for g in json.loads(reply)["assign"]) == 64, reply
    return out


def trivial_job(spark: SparkSession, tasks: int) -> float:
    """Seconds to run ``tasks`` trivial JVM tasks."""
    start = time.perf_counter()
    spark.range(0, tasks, 1, tasks).count()
    return time.perf_counter() - start


def sleeping_job(spark: SparkSession, tasks: int, ms: int) -> None:
    """``tasks`` tasks that each sleep ``ms`` in the JVM (collected, so the call is not pruned)."""
    rows = spark.range(0, tasks, 1, tasks).selectExpr(
        f"reflect('java.lang.Thread', 'sleep', cast({ms} as bigint)) as slept").collect()
    assert len(rows) == tasks


def stock_session(cores: int) -> SparkSession:
    conf = SparkConf(loadDefaults=False).setAll(list(BASE.items()))
    return SparkSession.builder.config(conf=conf).master(f"local[{cores}]").getOrCreate()


def bridge_session(policy: str, cores: int, endpoint: str, ahead: bool = False,
                   params: Mapping[str, str] | None = None) -> tuple[SparkSession, PolicyHost | None]:
    """A session through the plugin; the in-process host is returned (None for a ``local`` host).
    ``ahead``: ``spark.schedbridge.launch.ahead`` (freed slots take their predicted stage at once), set
    either way: the bridge without it is the one that asks at each task end, whatever the default."""
    base = {**BASE, f"{sparkplugin.CONF_PREFIX}launch.ahead": str(ahead).lower()}
    if endpoint == "inprocess":
        host = PolicyHost(make_planner(policy, params))
        return spark_inprocess.session(f"local[{cores}]", host, conf=base), host
    plugin_conf = sparkplugin.spark_conf(policy, params, endpoint=endpoint)
    conf = SparkConf(loadDefaults=False).setAll([*base.items(), *plugin_conf.items()])
    return SparkSession.builder.config(conf=conf).master(sparkplugin.master(f"local[{cores}]")).getOrCreate(), None


@click.command("spark")
@click.option("--policy", default="fifo", show_default=True)
@param_option()
@click.option("--tasks", type=click.IntRange(1, 10_000_000), default=4000, show_default=True,
              help="trivial tasks per throughput run")
@click.option("--cores", type=SLOTS, default=2, show_default=True, help="local[N] for the throughput runs")
@click.option("--repeats", type=click.IntRange(0, 1000), default=3, show_default=True,
              help="throughput runs per kind (0: latency only)")
@click.option("--task-ms", type=click.IntRange(0, 3_600_000), default=0, show_default=True,
              help="latency phase: each task sleeps this long")
@click.option("--endpoint", "endpoints", multiple=True, type=click.Choice(("inprocess", "local")),
              help="where the policy is hosted (repeatable; default: both)")
@click.option("--launch-ahead", "ahead", is_flag=True,
              help="latency with spark.schedbridge.launch.ahead=true (a freed slot takes its predicted stage "
                   "before the policy is asked); throughput without and with it")
def spark(**options: object) -> None:
    """Spark plugin, local mode: decision latency per offer round and placement throughput vs stock."""
    args = SimpleNamespace(**options)
    args.endpoints = list(args.endpoints) or ["inprocess", "local"]
    jar = str(sparkplugin.jar_path())
    SparkContext._ensure_initialized(conf=SparkConf().setAll([*BASE.items(), ("spark.driver.extraClassPath", jar)]))

    planning = host_planning_us(args.policy, params=args.params)
    print(f"policy {args.policy}")
    for endpoint in args.endpoints:
        latency(args, endpoint)
    print(f"host planning, synthetic 64 slots / 1,000 pending: p50 {percentile(planning, 50):.0f} us, "
          f"p99 {percentile(planning, 99):.0f} us")
    if args.repeats > 0:
        throughput(args)


def latency(args: SimpleNamespace, endpoint: str) -> None:
    """Round trips on local[64] over 1,000 tasks, after a warm-up job."""
    spark, host = bridge_session(args.policy, 64, endpoint, args.ahead, args.params)
    trivial_job(spark, 200)  # warm-up
    warm = {key: len(values) for key, values in spark_inprocess.stats().items() if key.endswith("_us")}
    warm_decisions = len(host.decisions) if host else 0
    if args.task_ms > 0:
        sleeping_job(spark, 1000, args.task_ms)
    else:
        trivial_job(spark, 1000)
    stats = spark_inprocess.stats()
    timed = {key: stats[key][n:] for key, n in warm.items()}
    calls, rounds = timed["call_us"], timed["round_us"]
    decided = "n/a (another process)"
    if host is not None:
        decisions = [float(d.micros) for d in list(host.decisions)[warm_decisions:]]
        decided = f"p50 {percentile(decisions, 50):.0f} us, p99 {percentile(decisions, 99):.0f} us"
    spark.stop()
    tasks = f"{args.task_ms} ms tasks" if args.task_ms > 0 else "trivial tasks"
    print(f"[{endpoint}] round trip per offer round (JVM-timed, {len(calls)} rounds, local[64], 1,000 {tasks}): "
          f"p50 {percentile(calls, 50):.0f} us, p99 {percentile(calls, 99):.0f} us; whole round in the scheduler "
          f"p50 {percentile(rounds, 50):.0f} us, p99 {percentile(rounds, 99):.0f} us; the policy's decision "
          f"(host-timed) {decided}; late rounds {stats['late_rounds']}, fallback rounds {stats['fallback_rounds']}, "
          f"stall revivals {stats['stall_revivals']}")
    print(f"[{endpoint}] where the round trip goes, p50 / p99 us: " + ", ".join(
        f"{label} {percentile(timed[key], 50):.0f} / {percentile(timed[key], 99):.0f}" for key, label in CALL_PARTS))


def throughput(args: SimpleNamespace) -> None:
    """Stock vs bridge, fresh sessions, ``args.repeats`` times each, alternating and each repeat
    starting one kind later, after one uncounted pass over the kinds (a JVM's first runs are its
    slowest: without it, stock, first, ran 30-45% below its later runs); with ``--launch-ahead``
    each endpoint runs without and with it, so they compare within one run."""
    bridges = {bridge_kind(e, ahead): (e, ahead) for ahead in (False, *((True,) if args.ahead else ()))
               for e in args.endpoints}
    kinds = [STOCK.name, *bridges]
    runs: dict[str, list[Run]] = {kind: [] for kind in kinds}
    counters = {kind: {"policy_rounds": 0, "held_rounds": 0, "late_rounds": 0, "fallback_rounds": 0,
                       "ahead_tasks": 0, "withdrawn_tasks": 0, "stall_revivals": 0} for kind in bridges}

    def run(kind: str) -> Run:
        s = bridge_session(args.policy, args.cores, *bridges[kind], args.params)[0] if kind in bridges \
            else stock_session(args.cores)
        measured = timed_rate(s, args.tasks, kind in bridges and bridges[kind][0] == "inprocess")
        if kind in bridges:
            stats = spark_inprocess.stats()
            counters[kind] = {k: v + stats[k] for k, v in counters[kind].items()}
        s.stop()
        return measured

    warm_up = {kind: round(run(kind).rate) for kind in kinds}
    for repeat in range(args.repeats):
        first = repeat % len(kinds)
        for kind in kinds[first:] + kinds[:first]:
            runs[kind].append(run(kind))
    rate = {k: median([r.rate for r in rs]) for k, rs in runs.items()}
    medians = ", ".join(f"bridge [{k}] {rate[k]:.0f} tasks/s ({100 * rate[k] / rate[STOCK.name]:.0f}% of stock)"
                        for k in kinds[1:])
    print(f"throughput, {args.tasks} trivial tasks on local[{args.cores}] (median of {args.repeats}): "
          f"stock {rate[STOCK.name]:.0f} tasks/s, {medians}")
    print("paired with stock's run of the same repeat, median (per repeat): " + "; ".join(
        f"[{k}] rate {percent(paired(runs[k], runs[STOCK.name], by_rate))}, "
        f"CPU {percent(paired(runs[k], runs[STOCK.name], by_cpu))}" for k in kinds[1:]))
    print("CPU per task, ms (median): " + ", ".join(
        f"{k}: driver {median([r.driver_ms for r in rs]):.2f}"
        + (f" + host {median([r.host_ms for r in rs]):.3f}" if k in bridges else "") for k, rs in runs.items()))
    print("runs:", json.dumps({k: [round(r.rate) for r in rs] for k, rs in runs.items()}),
          "after an uncounted pass:", json.dumps(warm_up))
    print("bridge throughput runs (incl. warm-ups):", json.dumps(counters))


def by_rate(bridge: Run, stock: Run) -> float:
    """The bridge's rate as a fraction of stock's."""
    return bridge.rate / stock.rate


def by_cpu(bridge: Run, stock: Run) -> float:
    """Stock's CPU per task as a fraction of the bridge's (driver and host): the rate the bridge
    would reach on a CPU-bound driver, steadier than the rate where other processes come and go."""
    return stock.driver_ms / (bridge.driver_ms + bridge.host_ms)


def paired(bridge: list[Run], stock: list[Run], ratio: Callable[[Run, Run], float]) -> list[float]:
    """Each repeat's bridge run against stock's run of the same repeat (minutes apart at most): a
    machine whose speed drifts over a sitting (this one's halved between a morning and an evening)
    moves both runs of a pair, where it moves a median of each kind's runs apart."""
    return [ratio(b, s) for b, s in zip(bridge, stock, strict=True)]


def percent(ratios: list[float]) -> str:
    """``median% (each%, ...)``."""
    return f"{100 * median(ratios):.0f}% ({', '.join(f'{100 * r:.0f}%' for r in ratios)})"


def bridge_kind(endpoint: str, ahead: bool) -> str:
    """How a bridge configuration is named in the figures."""
    return f"{endpoint}, launching ahead" if ahead else endpoint


@dataclass(frozen=True)
class Run:
    """One throughput run: tasks per second, and CPU per task (ms) of the driver JVM and of the
    policy's host (the process beside the driver, or the in-process host's Python driver)."""
    rate: float
    driver_ms: float
    host_ms: float


def timed_rate(spark: SparkSession, tasks: int, host_in_python: bool) -> Run:
    """A ``tasks``-task trivial job, after a warm-up job. CPU per task is steadier than the rate on a
    shared machine: a run that meets another process's burst loses time, not CPU."""
    trivial_job(spark, 200)
    driver, started = cpu_s()
    python = time.process_time()
    seconds = trivial_job(spark, tasks)
    driver_after, started_after = cpu_s()
    host = time.process_time() - python if host_in_python else started_after - started
    return Run(tasks / seconds, 1000 * (driver_after - driver) / tasks, 1000 * host / tasks)


def cpu_s() -> tuple[float, float]:
    """CPU seconds used so far by the driver JVM and by the processes it started (a ``local`` host)."""
    gateway = SparkContext._gateway
    if gateway is None:
        raise RuntimeError("no SparkContext: the driver's CPU is read while a session runs")
    current = gateway.jvm.java.lang.ProcessHandle.current()
    started = sum(cpu_of(h) for h in current.descendants().toArray())
    return cpu_of(current), started


def cpu_of(handle: Any) -> float:
    """A process's CPU seconds, as the JVM reads them (0 once it has exited)."""
    duration = handle.info().totalCpuDuration()
    return duration.get().toNanos() / 1e9 if duration.isPresent() else 0.0
