"""In-process policy hosting: a PySpark driver serves its own SparkContext's offer rounds.

The plugin reaches the host through pyspark's py4j callback server: a Python object implementing
the Java interface ``org.schedbridge.spark.PolicyChannel`` (strings in, strings out) is registered
with ``InProcessChannel.set`` before the SparkContext starts.
"""
from __future__ import annotations

from collections.abc import Mapping

import sparkplugin
from bridge.plugin.host import PolicyHost


class _Py4jChannel:
    """The py4j callback: one JSON request in, one JSON reply out."""

    def __init__(self, host: PolicyHost) -> None:
        self._host = host

    def call(self, request: str) -> str:
        return self._host.handle(request)

    class Java:
        implements = ["org.schedbridge.spark.PolicyChannel"]


_attached: list[PolicyHost] = []   # the host attached last in this process, if any


def attached() -> PolicyHost | None:
    """The policy host this process attached last (it stays readable after its session stops)."""
    return _attached[-1] if _attached else None


def attach(host: PolicyHost) -> None:
    """Registers ``host`` as this JVM's in-process policy (the gateway must be running)."""
    from pyspark import SparkContext
    from pyspark.java_gateway import ensure_callback_server_started

    gateway = SparkContext._gateway
    if gateway is None:
        raise RuntimeError("the PySpark gateway is not running; call SparkContext._ensure_initialized first")
    ensure_callback_server_started(gateway)
    gateway.jvm.org.schedbridge.spark.InProcessChannel.set(_Py4jChannel(host))
    _attached[:] = [host]


def detach() -> None:
    """Unregisters the in-process policy; later rounds fall back to Spark's own scheduling."""
    from pyspark import SparkContext

    if SparkContext._gateway is not None:
        SparkContext._gateway.jvm.org.schedbridge.spark.InProcessChannel.set(None)


def session(inner_master: str, host: PolicyHost, conf: Mapping[str, str] | None = None,
            params: Mapping[str, str] | None = None, app_name: str = "schedbridge"):
    """A SparkSession on ``spark-schedbridge://<inner_master>`` whose rounds ``host`` answers.

    The plugin attaches with the policy and parameters of the Spark conf, so ``params`` and any
    ``spark.schedbridge.policy.<param>`` in ``conf`` must be those ``host``'s planner was built with, or
    the session is refused at start, naming the difference."""
    from pyspark import SparkConf, SparkContext
    from pyspark.sql import SparkSession

    if host.planner is None:
        raise ValueError("an in-process policy host needs its planner: PolicyHost(make_planner(name, params))")
    entries = {**sparkplugin.spark_conf(host.planner.name, params), **(conf or {})}
    spark_conf = SparkConf(loadDefaults=False).setAll(sorted(entries.items()))
    SparkContext._ensure_initialized(conf=spark_conf)
    attach(host)
    # master last: a running gateway's system properties may carry another spark.master
    return (SparkSession.builder.config(conf=spark_conf).appName(app_name)
            .master(sparkplugin.master(inner_master)).getOrCreate())


def stats() -> dict:
    """The plugin's counters for the current SparkContext (rounds, fallbacks, warnings, latencies)."""
    import json

    from pyspark import SparkContext

    gateway = SparkContext._gateway
    if gateway is None:
        raise RuntimeError("no SparkContext: the plugin's counters exist only while a session runs")
    return json.loads(gateway.jvm.org.schedbridge.spark.BridgeStats.json())
