"""The Spark plugin in local mode: stock Spark's results, visible and enforced decisions, fallback.

One PySpark gateway for the module (the plugin jar must be on its classpath, so this module must
start it); each test opens its own short SparkContext on ``spark-schedbridge://local[2]``.
"""
from __future__ import annotations

import dataclasses
import json
import re
import socket
import subprocess
import sys
import threading
import time
import urllib.parse
import urllib.request
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from py4j.java_gateway import JavaObject, JavaPackage, get_field
from pyspark import SparkConf, SparkContext
from pyspark.errors import IllegalArgumentException
from pyspark.sql import SparkSession

import sparkplugin
from bridge.apps.report.load import load_runs
from bridge.drivers.planners import make_planner
from bridge.drivers.spark.fifo import FifoPlanner
from bridge.drivers.spark.state import LiveCluster
from bridge.plugin import bench
from bridge.plugin import inprocess as spark_inprocess
from bridge.plugin.host import PolicyHost, scoped
from bridge.plugin.daemon import DEFAULT_LIMITS, PolicyDaemon
from bridge.protocol.auth import key_digest
from bridge.protocol.messages import Grant, LiveEvent, OfferRound, Placement
from tests.integration.sparkplugin_support import (
    DaemonProcess,
    HistoryServer,
    RecordingPlanner,
    Squatter,
    assert_no_task_lost_or_repeated,
    finishes_within,
    slow_sum,
    sql_rows,
    wordcount,
)
from tests.certs import make_cert
from workloads.model import Job, Successor

# A generous deadline: the shared 2-core machine can starve the host for tens of ms, and only the
# deadline test may see deadline fallbacks (it sets its own).
BASE_CONF = {"spark.driver.memory": "512m", "spark.ui.enabled": "false",
             "spark.ui.showConsoleProgress": "false", "spark.sql.shuffle.partitions": "4",
             "spark.schedbridge.deadline": "5s"}
# Each task end asks the policy and waits for its answer (launching ahead is on by default): the
# round the tests of its deadline, its late answers, its faults and its Spark order are about.
ASKING = {"spark.schedbridge.launch.ahead": "false"}


@pytest.fixture(scope="module")
def stock() -> dict[str, list]:
    """WordCount and SQL results from stock Spark (local[2]), in a gateway that has the plugin."""
    jar = str(sparkplugin.jar_path())
    # py4j answers a JavaPackage for a name that is no class of the JVM's classpath
    if SparkContext._gateway is not None and isinstance(SparkContext._jvm.org.schedbridge.spark.BridgeStats,
                                                        JavaPackage):
        pytest.skip("a PySpark gateway without the plugin jar is already running; run this module alone")
    conf = SparkConf().setAll([*BASE_CONF.items(), ("spark.driver.extraClassPath", jar)])
    spark = SparkSession.builder.master("local[2]").config(conf=conf).getOrCreate()
    try:
        return {"wordcount": wordcount(spark), "sql": sql_rows(spark)}
    finally:
        spark.stop()


@contextmanager
def bridge_session(host: PolicyHost | None, **conf: str) -> Iterator[SparkSession]:
    """A session through the plugin; ``host`` answers in-process unless conf names an endpoint."""
    planner_host = host or PolicyHost(FifoPlanner())
    spark = spark_inprocess.session("local[2]", planner_host, conf={**BASE_CONF, **conf})
    if host is None:
        spark_inprocess.detach()
    try:
        assert spark.sparkContext._jsc.sc().taskScheduler().getClass().getSimpleName() == "BridgeTaskScheduler"
        yield spark
    finally:
        spark.stop()
        spark_inprocess.detach()


def test_master_url_passes_spark_submit_classification() -> None:
    assert sparkplugin.master("yarn") == "spark-schedbridge://yarn"
    assert sparkplugin.master("spark-schedbridge://local[2]") == "spark-schedbridge://local[2]"


def test_results_identical_to_stock_and_decisions_logged(stock: dict[str, list]) -> None:
    host = PolicyHost(FifoPlanner())
    with bridge_session(host) as spark:
        assert wordcount(spark) == stock["wordcount"]
        assert sql_rows(spark) == stock["sql"]
        stats = spark_inprocess.stats()
    granted = [g for d in host.decisions for g in d.placement.grants]
    assert granted and all(g.executor == "driver" for g in granted)
    assert stats["policy_rounds"] == len(host.decisions)
    assert stats["fallback_rounds"] == 0 and stats["warnings"] == 0


@pytest.mark.parametrize("policy", ["fifo", "hawk"])
def test_registered_policy_gives_stock_results(stock: dict[str, list], policy: str) -> None:
    host = PolicyHost(make_planner(policy))
    with bridge_session(host) as spark:
        assert wordcount(spark) == stock["wordcount"]
        assert sql_rows(spark) == stock["sql"]
        stats = spark_inprocess.stats()
    assert sum(g.slots for d in host.decisions for g in d.placement.grants) > 0
    assert stats["fallback_rounds"] == 0


@pytest.mark.parametrize("policy", ["fifo", "hawk"])
def test_launches_ahead_give_stock_results_each_confirmed_or_withdrawn(stock: dict[str, list],
                                                                            policy: str) -> None:
    """``launch.ahead``: a freed slot takes the stage the policy last placed on its executor before the
    policy is asked; the host confirms each such launch against the policy's own decision or has
    it withdrawn, so the answers are stock Spark's and no round falls back."""
    host = PolicyHost(make_planner(policy))
    with bridge_session(host, **{"spark.schedbridge.launch.ahead": "true"}) as spark:
        assert wordcount(spark) == stock["wordcount"]
        assert sql_rows(spark) == stock["sql"]
        assert spark.sparkContext.parallelize(range(600), 300).map(lambda x: 2 * x).sum() == 2 * sum(range(600))
        stats = spark_inprocess.stats()
    withdrawn = sum(len(d.placement.withdraw) for d in host.decisions)
    assert stats["ahead_tasks"] >= 100, stats  # most of the 300 tasks' slots were refilled at once
    assert stats["withdrawn_tasks"] <= withdrawn <= stats["ahead_tasks"]
    assert stats["fallback_rounds"] == 0 and stats["warnings"] == 0, stats


def test_placements_reach_the_event_log_and_counters_reach_sparks_metrics_sinks(stock: dict[str, list],
                                                                                tmp_path) -> None:
    """Spark's own channels: a placement record per task in the event log (next to Spark's task
    starts), and the plugin's counters as the `schedbridge` source of the metrics system, here
    through Spark's CsvSink."""
    events, csv = tmp_path / "events", tmp_path / "csv"
    events.mkdir()
    csv.mkdir()
    sink = "spark.metrics.conf.*.sink.csv."
    conf = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": events.as_uri(),
            "spark.eventLog.compress": "false",  # Spark 4 compresses it by default (zstd)
            f"{sink}class": "org.apache.spark.metrics.sink.CsvSink", f"{sink}period": "1",
            f"{sink}unit": "seconds", f"{sink}directory": str(csv)}
    with bridge_session(PolicyHost(make_planner("hawk")), **conf) as spark:
        assert wordcount(spark) == stock["wordcount"]
        app = spark.sparkContext.applicationId
        stats = spark_inprocess.stats()
    log = [json.loads(line) for f in events.rglob("*") if f.is_file() and not f.name.startswith(".")
           for line in f.read_text().splitlines()]  # Spark 4 rolls its event log in a folder of files
    started = {e["Task Info"]["Task ID"] for e in log if e["Event"] == "SparkListenerTaskStart"}
    placements = [e for e in log if e["Event"] == "org.schedbridge.spark.PlacementEvent"]
    assert len(started) >= 12 and {p["taskId"] for p in placements} == started
    assert len(placements) == stats["placed_tasks"]
    assert all(p["by"] == "POLICY" and p["policy"] == stats["policy"] and p["round"] >= 1 and p["executor"]
               for p in placements), placements[:3]
    metric = csv / f"{app}.driver.schedbridge.placed_tasks.csv"
    assert (csv / f"{app}.driver.schedbridge.round_latency_us.csv").exists(), sorted(f.name for f in csv.iterdir())
    assert int(metric.read_text().splitlines()[-1].split(",")[1]) == stats["placed_tasks"]
    [run] = load_runs([p for p in events.iterdir() if not p.name.startswith(".")])  # report reads it too
    assert run.plugin == {"placed_tasks": stats["placed_tasks"], "fallback_tasks": 0, "unmanaged_tasks": 0}
    assert len(run.jobs) >= 1 and set(run.jobs["status"]) == {"succeeded"} and len(run.tasks) == len(started)


def fetch(url: str, timeout_s: float = 60.0) -> str:
    """The page at ``url``, asked again (every 0.5 s, within ``timeout_s``) while it answers an error."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with urllib.request.urlopen(url, timeout=10) as answer:
                return answer.read().decode()
        except OSError as exc:  # URLError, HTTPError, a refused or reset connection
            if time.monotonic() > deadline:
                raise AssertionError(f"{url}: {exc}") from None
            time.sleep(0.5)


def test_the_schedbridge_tab_live_and_in_the_history_server(stock: dict[str, list], tmp_path: Path) -> None:
    """A running application under hawk answers GET <its UI>/schedbridge/ with a page naming the
    policy and the tasks it placed; Spark's History Server, replaying the finished application's
    event log with the plugin's jar on its classpath, shows the same tab."""
    events = tmp_path / "events"
    events.mkdir()
    conf = {"spark.ui.enabled": "true", "spark.ui.port": "0", "spark.eventLog.enabled": "true",
            "spark.eventLog.dir": events.as_uri()}
    with bridge_session(PolicyHost(make_planner("hawk")), **conf) as spark:
        assert wordcount(spark) == stock["wordcount"]
        app = spark.sparkContext.applicationId
        port = urllib.parse.urlsplit(spark.sparkContext.uiWebUrl).port
        live = fetch(f"http://127.0.0.1:{port}/schedbridge/")
        stats = spark_inprocess.stats()
    assert '<strong id="schedbridge-policy">hawk</strong>' in live, live[-2000:]
    placed = sum(int(n) for n in re.findall(r"<tr><td>\d+</td><td>\d+</td><td>(\d+)</td>", live))
    assert 0 < placed <= stats["placed_tasks"], live[-2000:]  # written at most every 200 ms while tasks launch
    server = HistoryServer(events, sparkplugin.jar_path(), tmp_path / "history.log")
    try:
        history = fetch(f"{server.url}/history/{app}/schedbridge/")
    finally:
        server.stop()
    assert '<strong id="schedbridge-policy">hawk</strong>' in history, history[-2000:]
    replayed = sum(int(n) for n in re.findall(r"<tr><td>\d+</td><td>\d+</td><td>(\d+)</td>", history))
    assert replayed == stats["placed_tasks"], history[-2000:]
    assert f"<td>policy_rounds</td><td>{stats['policy_rounds']}</td>" in history, history[-2000:]


class ArrivalLog:
    """Every job the engine made arrive (the engine forgets finished stages; this keeps them)."""

    def __init__(self, planner) -> None:
        self.jobs: list[Job] = []
        self._arrive = planner._arrive
        planner._arrive = self

    def __call__(self, *args):
        arrival = self._arrive(*args)
        self.jobs.append(arrival.job)
        return arrival


def test_falcon_gets_each_stages_successors_from_the_real_dag() -> None:
    """Two shuffles in a row on one branch, one on the other, then a join (PySpark: a union and
    one more shuffle). Both branches' first map stages run at once; live Falcon gets each with
    the stages after it in the Spark job (from the listener's job_start), so Eq. 2 sees that the
    deep branch unblocks 4 + 6 + 6 tasks through three barriers and the shallow one 6 + 6."""
    host = PolicyHost(make_planner("falcon"))
    arrived = ArrivalLog(host.planner)
    add = int.__add__
    with bridge_session(host) as spark:
        sc = spark.sparkContext
        deep = (sc.parallelize(range(100), 4).map(lambda x: (x % 10, x)).reduceByKey(add)
                .map(lambda kv: (kv[0] % 5, kv[1])).reduceByKey(add))
        shallow = sc.parallelize(range(50), 2).map(lambda x: (x % 5, x)).reduceByKey(add)
        joined = sorted(deep.join(shallow).collect())
        stats = spark_inprocess.stats()
    assert joined == [(k, (sum(range(k, 100, 5)), sum(range(k, 50, 5)))) for k in range(5)]
    assert stats["fallback_rounds"] == 0
    seen = {(job.n_tasks, job.successors) for job in arrived.jobs}
    e = 1.0  # the engine's default estimate
    assert seen == {(4, (Successor(4, e, (-1,)), Successor(6, e, (0,)), Successor(6, e, (1,)))),  # deep, 1st
                    (2, (Successor(6, e, (-1,)), Successor(6, e, (0,)))),  # shallow's map
                    (4, (Successor(6, e, (-1,)), Successor(6, e, (0,)))),  # deep, 2nd
                    (6, (Successor(6, e, (-1,)),)),  # the union's map
                    (6, ())}  # the result stage


def test_policy_sees_a_freed_slot_in_the_round_it_triggers(stock: dict[str, list]) -> None:
    """Many short tasks under the engine's FIFO: each task end triggers an offer round at once,
    while the listener bus delivers the end later. The policy must already see that slot free
    (the scheduler reports successful ends itself), or it holds the slot back until a revive."""
    host = PolicyHost(make_planner("fifo"))
    with bridge_session(host, **ASKING) as spark:
        assert spark.range(0, 300, 1, 300).count() == 300
        stats = spark_inprocess.stats()
    assert sum(g.slots for d in host.decisions for g in d.placement.grants) >= 300
    assert stats["fallback_rounds"] == 0
    assert stats["held_rounds"] == 0
    assert stats["spark_order_rounds"] == 0  # the engine's policies are asked every round


def test_spark_order_rounds_skip_the_round_trip(stock: dict[str, list]) -> None:
    """spark-fifo declares Spark's own order: while the stages and executors stay the same, most
    rounds are Spark's without a round trip, and results stay stock Spark's."""
    host = PolicyHost(FifoPlanner())
    with bridge_session(host, **ASKING) as spark:
        assert spark.range(0, 300, 1, 300).count() == 300
        assert wordcount(spark) == stock["wordcount"]
        stats = spark_inprocess.stats()
    assert stats["spark_order_rounds"] > 0
    assert stats["policy_rounds"] < 300  # fewer round trips than tasks (one offer round per task end)
    assert stats["fallback_rounds"] == 0


class OneSlotPlanner(RecordingPlanner):
    """Holds back all but one slot: at most one task runs at a time, whatever Spark offers."""

    name = "fifo"

    def plan(self, rnd: OfferRound, events: Sequence[LiveEvent], cluster: LiveCluster) -> Placement:
        super().plan(rnd, events, cluster)
        if cluster.app(rnd.app).running or not rnd.stages or not rnd.slots:
            return Placement()
        stage = rnd.stages[0]
        return Placement((Grant(stage.stage, stage.attempt, rnd.slots[0].executor, 1),))


def test_held_back_slots_stay_idle(stock: dict[str, list]) -> None:
    planner = OneSlotPlanner()
    with bridge_session(PolicyHost(planner)) as spark:
        assert slow_sum(spark, 6, 0.2, "one-slot") == sum(range(6))
        assert wordcount(spark) == stock["wordcount"]
    spans = sorted((s.t, planner.ends[t].t) for t, s in planner.starts.items() if t in planner.ends)
    assert len(spans) >= 6
    assert all(nxt_start >= end for (_, end), (nxt_start, _) in zip(spans, spans[1:])), spans


class RaisingPlanner(FifoPlanner):
    def plan(self, rnd: OfferRound, events: Sequence[LiveEvent], cluster: LiveCluster) -> Placement:
        raise RuntimeError("policy bug")


class SlowPlanner(FifoPlanner):
    def plan(self, rnd: OfferRound, events: Sequence[LiveEvent], cluster: LiveCluster) -> Placement:
        time.sleep(0.3)
        return super().plan(rnd, events, cluster)


class LateAtFirstPlanner(FifoPlanner):
    """Answers its first placing rounds 0.3 s late (a host stalled by a busy machine), then at once."""

    def __init__(self, late_rounds: int) -> None:
        super().__init__()
        self.left = late_rounds

    def plan(self, rnd: OfferRound, events: Sequence[LiveEvent], cluster: LiveCluster) -> Placement:
        if self.left > 0 and rnd.slots:
            self.left -= 1
            time.sleep(0.3)
        return super().plan(rnd, events, cluster)


@pytest.mark.parametrize("planner, deadline, reason", [(RaisingPlanner(), "5s", "policy error: RuntimeError"),
                                                       (SlowPlanner(), "50ms", "deadline")])
def test_failing_policy_falls_back_with_one_warning(stock: dict[str, list], planner: FifoPlanner,
                                                    deadline: str, reason: str) -> None:
    conf = {"spark.schedbridge.deadline": deadline, "spark.schedbridge.late.limit": "200ms", **ASKING}
    with bridge_session(PolicyHost(planner), **conf) as spark:
        assert wordcount(spark) == stock["wordcount"]
        assert sql_rows(spark) == stock["sql"]
        stats = spark_inprocess.stats()
    assert stats["fallback_rounds"] >= 2
    assert stats["warnings"] == 1
    assert reason in stats["last_failure"]


@pytest.mark.timeout(300)  # a lost re-offer stalls the job until the late limit (1 h): a hang, failed here
def test_late_answers_hold_their_rounds_and_place_every_task(stock: dict[str, list]) -> None:
    """Rounds whose answer misses the deadline launch nothing and are offered again when it lands
    (the local backend offers only when a task ends: without that re-offer the job would stall);
    within the late limit nothing falls back and the policy places every task."""
    conf = {"spark.schedbridge.deadline": "50ms", "spark.schedbridge.late.limit": "1h", **ASKING}
    with bridge_session(PolicyHost(LateAtFirstPlanner(3)), **conf) as spark:
        assert wordcount(spark) == stock["wordcount"]
        stats = spark_inprocess.stats()
    assert stats["late_rounds"] >= 3, stats
    assert stats["fallback_rounds"] == 0 and stats["fallback_tasks"] == 0, stats
    assert stats["placed_tasks"] >= 6 and stats["warnings"] == 1, stats


class HungPlanner(FifoPlanner):
    """Never answers its first placing round (a hung host) until ``release`` is set."""

    def __init__(self) -> None:
        super().__init__()
        self.release, self.hung = threading.Event(), False

    def plan(self, rnd: OfferRound, events: Sequence[LiveEvent], cluster: LiveCluster) -> Placement:
        if rnd.slots and not self.hung:
            self.hung = True
            self.release.wait(120)
        return super().plan(rnd, events, cluster)


def test_a_call_that_never_answers_ends_in_fallback_rounds_past_the_late_limit(stock: dict[str, list]) -> None:
    """The round left waiting for a hung call is offered again once the late limit has passed
    (the local backend offers only when a task ends: nothing else would), and falls back."""
    planner = HungPlanner()
    conf = {"spark.schedbridge.deadline": "50ms", "spark.schedbridge.late.limit": "500ms", **ASKING}
    with bridge_session(PolicyHost(planner), **conf) as spark:
        try:
            assert wordcount(spark) == stock["wordcount"]
            stats = spark_inprocess.stats()
        finally:
            planner.release.set()  # the host's lock is the hung call's: the session's stop detaches through it
    assert stats["late_rounds"] >= 1 and stats["fallback_rounds"] >= 1, stats
    assert "out for over 500 ms" in stats["last_failure"], stats


def _plugin_conf(key: str, value: str) -> JavaObject:
    """The plugin's BridgeConf read from one spark.schedbridge entry, in this process's JVM."""
    jvm = SparkContext._jvm
    conf = jvm.org.apache.spark.SparkConf(False).set(sparkplugin.CONF_PREFIX + key, value)
    return getattr(jvm.org.schedbridge.spark.BridgeConf, "from")(conf)


SAMPLES = {sparkplugin.TEXT: "x", sparkplugin.FLAG: "true", sparkplugin.COUNT: "3", sparkplugin.DURATION: "2s"}
REFUSED = [*((old, "50") for old in sparkplugin.RENAMED_KEYS), ("cutoff", "0.5"), ("token.fle", "t"),
           ("deadline", "soon"), ("hold.max", "1.5s"), ("io.timeout", "25d"), ("max.kills.per.task", "0"),
           ("fallback", "yes")]


def test_python_checks_the_keys_the_plugin_reads_with_the_plugin_s_messages(stock: dict[str, list]) -> None:
    for key, kind in sparkplugin.PLUGIN_KEYS.items():
        _plugin_conf(key, SAMPLES[kind])  # every key Python knows is one the plugin reads
    for text in ("50ms", " 2S ", "1min", "250", "1500us", "3h"):
        assert get_field(_plugin_conf("deadline", text), "deadlineMs") == sparkplugin.time_ms(text)
    assert dict(get_field(_plugin_conf("policy.cutoff", "0.5"), "params")) == {"cutoff": "0.5"}
    for key, value in REFUSED:
        with pytest.raises(ValueError) as python:
            sparkplugin.check_conf({sparkplugin.CONF_PREFIX + key: value})
        with pytest.raises(IllegalArgumentException) as java:  # pyspark's wrapper of the JVM's exception
            _plugin_conf(key, value)
        assert str(java.value).partition("\n")[0] == f"schedbridge: {python.value}"


# A connection that fails is retried within the start timeout (60 s by default): the tests of a host
# that never answers wait 5 s instead.
SHORT_START = {"spark.schedbridge.start.timeout": "5s"}


def test_daemon_unreachable_at_start_stops_the_application() -> None:
    with pytest.raises(Exception, match=r"the policy host \(the daemon at tcp://127.0.0.1:9\) did not answer at "
                                        r"start.*spark.schedbridge.fallback=true"):
        with bridge_session(None, **{"spark.schedbridge.endpoint": "tcp://127.0.0.1:9",
                                     "spark.schedbridge.token": "any-token-0123456789", **SHORT_START}):
            pass


def test_daemon_unreachable_at_start_with_fallback_opted_in(stock: dict[str, list]) -> None:
    conf = {"spark.schedbridge.endpoint": "tcp://127.0.0.1:9", "spark.schedbridge.fallback": "true",
            "spark.schedbridge.token": "any-token-0123456789", **SHORT_START}
    with bridge_session(None, **conf) as spark:
        assert wordcount(spark) == stock["wordcount"]
        stats = spark_inprocess.stats()
    assert stats["policy_rounds"] == 0 and stats["fallback_rounds"] >= 1
    assert stats["placed_tasks"] == 0 and stats["fallback_tasks"] >= 6  # every task was Spark's, and counted
    assert stats["warnings"] == 1 and "unreachable" in stats["last_failure"]


@contextmanager
def local_host_session(policy: str, **conf: str) -> Iterator[SparkSession]:
    """A session whose plugin starts the policy host beside the driver (the default endpoint)."""
    entries = {**BASE_CONF, **sparkplugin.spark_conf(policy, endpoint="local"), **conf}
    spark_conf = SparkConf(loadDefaults=False).setAll(sorted(entries.items()))
    spark = SparkSession.builder.config(conf=spark_conf).master(sparkplugin.master("local[2]")).getOrCreate()
    try:
        yield spark
    finally:
        spark.stop()


def test_default_endpoint_hosts_the_policy_beside_the_driver_and_stops_it(stock: dict[str, list],
                                                                          tmp_path) -> None:
    log = tmp_path / "host.log"
    with local_host_session("hawk", **{"spark.schedbridge.host.log": str(log),
                                       "spark.schedbridge.policy.cutoff": "0.5"}) as spark:
        assert wordcount(spark) == stock["wordcount"]
        stats = spark_inprocess.stats()
    assert stats["endpoint"].startswith("a host beside the driver (tcp://127.0.0.1:")
    assert stats["fallback_rounds"] == 0 and stats["fallback_tasks"] == 0 and stats["warnings"] == 0
    assert stats["placed_tasks"] >= 12  # WordCount's two stages of 6 tasks, every one placed by the policy
    text = log.read_text()
    assert "attached: policy hawk, parameters {cutoff=0.5}" in text and re.search(r"round \d+: s\d+\.0->", text)
    port = int(re.search(r"tcp://127\.0\.0\.1:(\d+)", stats["endpoint"]).group(1))
    with pytest.raises(OSError):  # the host stopped with the application
        socket.create_connection(("127.0.0.1", port), timeout=2).close()


def test_the_benchmark_reads_the_driver_s_and_the_local_host_s_cpu_per_task() -> None:
    # bench spark's throughput part: besides the rate, CPU per task of the driver JVM and of the host
    # beside it (~0.07 ms per task: 1,000 tasks give it several of the kernel's 10 ms ticks)
    with local_host_session("fifo") as spark:
        run = bench.timed_rate(spark, 1000, host_in_python=False)
    assert run.rate > 0 and run.driver_ms > 0 and run.host_ms > 0, run
    assert run.host_ms < run.driver_ms, run  # the host's share is small beside Spark's own work


def test_an_application_asking_a_daemon_for_another_policy_is_refused_at_start(tmp_path) -> None:
    daemon = DaemonProcess(tmp_path / "daemon.log")  # serves spark-fifo
    try:
        with pytest.raises(Exception, match="this policy host serves 'spark-fifo'; the application asked for 'hawk'"):
            with local_host_session("hawk", **daemon.conf):
                pass
        daemon.wait_for(r"refused .*asked for 'hawk'")
    finally:
        daemon.kill()


# One mistake from each place a configuration is checked, end to end (each case is a JVM's start):
# the policy host's check of the policy and its parameters (every message of it: test_spark_attach.py),
# the plugin's check of its own keys (every message: BridgeConfTest.java) and its first call.
MISTAKES = [("spark.schedbridge.policy", "hwak", "unknown policy 'hwak' (did you mean 'hawk'?)"),
            ("spark.schedbridge.deadline", "soon", "spark.schedbridge.deadline must be a Spark time string"),
            ("spark.schedbridge.endpoint", "tcp://127.0.0.1:9", "did not answer at start")]


@pytest.mark.parametrize("key, value, message", MISTAKES)
def test_a_configuration_mistake_ends_a_spark_submit_application_before_any_task(key: str, value: str,
                                                                                  message: str, tmp_path) -> None:
    app = tmp_path / "app.py"
    app.write_text("from pyspark.sql import SparkSession\n"
                   "spark = SparkSession.builder.getOrCreate()\n"
                   "print('TASKS RAN', spark.sparkContext.parallelize(range(4), 2).count())\n")
    cmd = [str(Path(sys.executable).parent / "schedbridge"), "submit", "--master", "spark-schedbridge://local[1]",
           "--conf", "spark.ui.enabled=false", "--conf", "spark.schedbridge.policy=hawk",
           "--conf", "spark.schedbridge.token=any-token-0123456789", "--conf", "spark.schedbridge.start.timeout=3s",
           "--conf", f"{key}={value}",
           str(app)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode != 0 and message in result.stderr, result.stderr[-3000:]
    assert "TASKS RAN" not in result.stdout


def test_daemon_killed_mid_job_then_restarted(stock: dict[str, list], tmp_path) -> None:
    first = DaemonProcess(tmp_path / "daemon1.log")
    conf = {**first.conf, "spark.schedbridge.retry.wait": "200ms"}
    with bridge_session(None, **conf) as spark:
        result: list[int] = []
        job = threading.Thread(target=lambda: result.append(slow_sum(spark, 24, 0.15, "killed")))
        job.start()
        first.wait_for(r"round \d+: s\d+\.0->driver")
        first.kill()
        job.join(timeout=120)
        assert result == [sum(range(24))]
        assert_no_task_lost_or_repeated(spark, "killed")
        before = spark_inprocess.stats()
        assert before["fallback_rounds"] >= 1 and before["warnings"] == 1

        second = DaemonProcess(tmp_path / "daemon2.log", port=first.port)
        try:
            assert wordcount(spark) == stock["wordcount"]
            second.wait_for(r"state rebuilt from snapshot: 1 executors")
            second.wait_for(r"round \d+: s\d+\.0->driver")
            after = spark_inprocess.stats()
        finally:
            second.kill()
    assert after["policy_rounds"] > before["policy_rounds"]
    assert after["warnings"] == 1


def test_serve_answers_metrics_with_the_rounds_it_placed(stock: dict[str, list], tmp_path) -> None:
    """`schedbridge serve --metrics-port`: Prometheus' parser reads its page, which counts the
    application's attach, the rounds the policy placed and the slots it granted."""
    daemon = DaemonProcess(tmp_path / "daemon.log", metrics=True)
    try:
        with bridge_session(None, **daemon.conf) as spark:
            assert wordcount(spark) == stock["wordcount"]
        with urllib.request.urlopen(daemon.metrics_url, timeout=10) as answer:
            page = answer.read().decode()
    finally:
        daemon.kill()
    samples = {(s.name, tuple(sorted(s.labels.items()))): s.value
               for family in text_string_to_metric_families(page) for s in family.samples}
    assert samples[("schedbridge_host_attaches_total", (("result", "accepted"),))] == 1
    placed = samples[("schedbridge_host_rounds_total", (("outcome", "placed"),))]
    assert placed > 0 and samples[("schedbridge_host_plan_seconds_count", ())] == placed
    assert samples[("schedbridge_host_granted_slots_total", ())] > 0
    assert samples[("schedbridge_host_detaches_total", ())] == 1


class FaultyHost(PolicyHost):
    """spark-fifo whose first round replies are, in turn, each kind of bad reply a daemon can send;
    then correct ones. ``truncated`` drops the connection in the middle of the exchange."""

    FAULTS = ("wrong round", "over the size limit", "not JSON", "wrong version", "absurd numbers", "truncated")

    def __init__(self) -> None:
        super().__init__(FifoPlanner())
        self.faults = list(self.FAULTS)

    def handle(self, text: str, owner: str | None = None) -> str:
        reply = super().handle(text, owner)
        if '"kind": "round"' not in text and '"kind":"round"' not in text or not self.faults:
            return reply
        fault, body = self.faults.pop(0), json.loads(reply)
        if fault == "truncated":
            raise ConnectionAbortedError("dropped mid-reply")
        return {"wrong round": json.dumps({**body, "round": body.get("round", 0) + 1000}),
                "over the size limit": "x" * ((16 << 20) + 10),
                "not JSON": reply[: len(reply) // 2],
                "wrong version": json.dumps({**body, "v": 9}),
                "absurd numbers": json.dumps({**body, "assign": [{"stage": 1e308, "attempt": -1, "executor": "driver",
                                                                  "slots": 10**30}]})}[fault]


def test_bad_replies_fall_back_one_round_each_and_later_rounds_stay_matched(stock: dict[str, list]) -> None:
    host = FaultyHost()
    daemon = PolicyDaemon(("127.0.0.1", 0), host, token="faulty-host-token-0123")
    threading.Thread(target=daemon.serve_forever, daemon=True).start()
    conf = {"spark.schedbridge.endpoint": f"tcp://127.0.0.1:{daemon.server_address[1]}",
            "spark.schedbridge.token": "faulty-host-token-0123", "spark.schedbridge.retry.wait": "100ms", **ASKING}
    try:
        with bridge_session(None, **conf) as spark:
            assert wordcount(spark) == stock["wordcount"]
            assert sql_rows(spark) == stock["sql"]
            stats = spark_inprocess.stats()
    finally:
        daemon.shutdown()
        daemon.server_close()
    assert not host.faults  # every kind of bad reply was sent
    assert stats["fallback_rounds"] >= len(FaultyHost.FAULTS) - 1  # "absurd numbers" parses; it grants nothing
    assert stats["policy_rounds"] > 0 and stats["placed_tasks"] > 0  # and the policy placed tasks afterwards


class KillingPlanner(RecordingPlanner):
    """FIFO that asks to preempt every running task in every round (and records task ends)."""

    def plan(self, rnd: OfferRound, events: Sequence[LiveEvent], cluster: LiveCluster) -> Placement:
        placement = super().plan(rnd, events, cluster)
        running = tuple(t for app in cluster for t in app.running)
        return Placement(placement.grants, running, False)


def test_kills_a_policy_asks_for_are_bounded_per_round_and_per_task() -> None:
    planner = KillingPlanner()
    with bridge_session(PolicyHost(planner), **{"spark.schedbridge.max.kills.per.round": "1",
                                                "spark.schedbridge.max.kills.per.task": "2"}) as spark:
        # 1 s tasks: running across several rounds even when a loaded host slows the rounds down
        # (with 0.3 s tasks, one CI run saw every task end before a round asked to kill it)
        assert slow_sum(spark, 4, 1.0, "killed") == sum(range(4))  # the job finishes despite the policy
        stats = spark_inprocess.stats()
    killed = Counter((e.stage, e.index) for e in planner.ends.values() if e.reason == "TaskKilled")
    assert killed and max(killed.values()) <= 2, killed  # no task killed more than twice
    assert stats["kills_refused"] > 0


class NeverPlanner(FifoPlanner):
    """Holds every free slot back, forever: only the watchdog lets tasks run."""

    def plan(self, rnd: OfferRound, events: Sequence[LiveEvent], cluster: LiveCluster) -> Placement:
        return Placement()


def test_the_watchdog_gives_a_round_to_spark_when_slots_stay_held_while_tasks_wait() -> None:
    with bridge_session(PolicyHost(NeverPlanner()), **{"spark.schedbridge.hold.max": "300ms"}) as spark:
        assert slow_sum(spark, 4, 0.1, "starved") == sum(range(4))  # it finishes, though the policy grants nothing
        stats = spark_inprocess.stats()
    assert stats["watchdog_rounds"] >= 1 and stats["placed_tasks"] == 0
    assert stats["fallback_tasks"] >= 4 and "watchdog" in stats["last_failure"]


class HoldFirstPlanner(FifoPlanner):
    """Holds every free slot back in its first round, then FIFO."""

    def __init__(self) -> None:
        super().__init__()
        self.rounds = 0

    def plan(self, rnd: OfferRound, events: Sequence[LiveEvent], cluster: LiveCluster) -> Placement:
        self.rounds += 1
        placement = super().plan(rnd, events, cluster)
        return Placement() if self.rounds == 1 else placement


def test_local_mode_revives_a_round_when_none_was_scheduled_after_one_left_work() -> None:
    # A held-back round's revive pushed out to 10 min: only the liveness check (late.limit + 1 s)
    # brings the next round, as it would after a round that scheduled none by a fault. Without
    # the check the job never gets another round: it is cancelled and the test fails.
    planner = HoldFirstPlanner()
    with bridge_session(PolicyHost(planner), **{"spark.schedbridge.revive.interval": "10min"}) as spark:
        start = time.monotonic()
        assert finishes_within(spark, 60, lambda: slow_sum(spark, 4, 0.1, "revived")) == sum(range(4))
        took = time.monotonic() - start
        stats = spark_inprocess.stats()
    assert stats["stall_revivals"] >= 1 and "liveness" in stats["last_failure"], stats
    assert stats["fallback_rounds"] == 0 and stats["placed_tasks"] >= 4  # the revived round was the policy's
    assert 2.0 <= took < 60, took  # waited out the bound, then finished


class TimedPlanner(FifoPlanner):
    """FIFO that notes when it first planned for each application (the host's key: id and owner)."""

    def __init__(self) -> None:
        super().__init__()
        self.first: dict[str, float] = {}

    def plan(self, rnd: OfferRound, events: Sequence[LiveEvent], cluster: LiveCluster) -> Placement:
        self.first.setdefault(rnd.app, time.monotonic())
        return super().plan(rnd, events, cluster)


def test_an_application_id_squatted_before_the_application_starts_is_still_the_application_s(
        stock: dict[str, list]) -> None:
    """Another client with the daemon's token plays the id the application will have (every
    ``local-<ms>`` ahead of the clock) before the application's first round; the application's
    tasks are placed by the policy all the same, none by Spark's fallback. (The default caps on
    applications per key and per connection refuse such a squatter after a few ids; lifted here,
    the ids it does claim must still not be the application's.)"""
    planner, token = TimedPlanner(), "squatted-daemon-token-0123"
    uncapped = dataclasses.replace(DEFAULT_LIMITS, apps_per_key=1 << 20, apps_per_connection=1 << 20)
    daemon = PolicyDaemon(("127.0.0.1", 0), PolicyHost(planner), token=token, limits=uncapped)
    threading.Thread(target=daemon.serve_forever, daemon=True).start()
    squatter = Squatter(daemon.server_address, token)
    try:
        deadline = time.monotonic() + 30
        while squatter.ahead_ms() < 2000 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert squatter.ahead_ms() >= 2000, "the squatter cannot outrun the clock on this machine"
        with bridge_session(None, **{"spark.schedbridge.endpoint": f"tcp://127.0.0.1:{daemon.server_address[1]}",
                                     "spark.schedbridge.token": token}) as spark:
            app = spark.sparkContext.applicationId
            assert wordcount(spark) == stock["wordcount"]
            stats = spark_inprocess.stats()
    finally:
        squatter.stop()
        daemon.shutdown()
        daemon.server_close()
    squatted = scoped(app, key_digest(squatter.key))
    own = [key for key in planner.first if key.startswith(app + "@") and key != squatted]
    assert squatted in planner.first and len(own) == 1, (app, own)
    assert planner.first[squatted] < planner.first[own[0]]  # the squatter played the id first
    assert stats["fallback_rounds"] == 0 and stats["warnings"] == 0 and stats["placed_tasks"] >= 12


def test_the_plugin_reaches_serve_over_tls_and_a_certificate_it_cannot_verify_stops_it(
        stock: dict[str, list], tmp_path) -> None:
    daemon = DaemonProcess(tmp_path / "daemon.log", tls=make_cert(tmp_path))
    try:
        with bridge_session(None, **daemon.conf) as spark:
            assert wordcount(spark) == stock["wordcount"]
            stats = spark_inprocess.stats()
        assert stats["endpoint"] == f"the daemon at tls://localhost:{daemon.port}"
        assert stats["fallback_rounds"] == 0 and stats["warnings"] == 0 and stats["placed_tasks"] >= 12
        # a certificate it cannot verify stops the application at once: were it retried within the
        # start timeout (1 h here), the test's time limit would fail it
        wrong = {**daemon.conf, "spark.schedbridge.tls.ca": str(make_cert(tmp_path, "other").cert),
                 "spark.schedbridge.start.timeout": "1h"}
        with pytest.raises(Exception, match=r"did not answer at start: .*TLS handshake failed"):
            with bridge_session(None, **wrong):
                pass
    finally:
        daemon.kill()
