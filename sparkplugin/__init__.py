"""schedbridge's Spark scheduler backend: the JVM plugin jar and the Spark conf that selects it.

The plugin (``sparkplugin/src/main/java``) is an ``ExternalClusterManager`` chosen by masters of
the form ``spark-schedbridge://INNER`` (INNER is ``yarn``, ``local[N]``, ``local-cluster[W,C,M]``
or ``spark://host:port``). ``make setup`` builds it with Maven (``sparkplugin/pom.xml``).
"""
from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

MASTER_PREFIX = "spark-schedbridge://"
CONF_PREFIX = "spark.schedbridge."
# Keys the plugin itself reads (BridgeConf.java); every other spark.schedbridge.X is a policy parameter.
PLUGIN_KEYS = frozenset({
    "policy", "endpoint", "token", "token.file", "fallback", "python", "host.log", "stats.file", "deadline.ms",
    "io.timeout.ms", "retry.ms", "revive.ms", "start.timeout.ms", "max.kills.per.round", "max.kills.per.task",
    "hold.max.ms"})
JAR = Path(__file__).resolve().parent / "build" / "schedbridge-sparkplugin.jar"


class PluginJarMissing(FileNotFoundError):
    """The plugin jar has not been built."""


def jar_path() -> Path:
    """Path of the built plugin jar; a clear error if it is missing."""
    if not JAR.is_file():
        raise PluginJarMissing(f"the Spark plugin jar {JAR} is missing: run `make setup` "
                               "(or `make plugin`) to build it")
    return JAR


def master(inner: str) -> str:
    """The master URL wrapping Spark's own ``inner`` master, e.g. ``master("yarn")``."""
    return inner if inner.startswith(MASTER_PREFIX) else MASTER_PREFIX + inner


def is_policy_param(key: str) -> bool:
    """True for ``spark.schedbridge.<param>`` keys that are not the plugin's own."""
    return key.startswith(CONF_PREFIX) and key.removeprefix(CONF_PREFIX) not in PLUGIN_KEYS


def policy_params(conf: Mapping[str, str]) -> dict[str, str]:
    """The policy parameters among Spark conf entries, by name without the prefix."""
    return {key.removeprefix(CONF_PREFIX): value for key, value in conf.items() if is_policy_param(key)}


def policy_conf(params: Mapping[str, str]) -> dict[str, str]:
    """Spark conf entries for policy parameters (the inverse of :func:`policy_params`): the one
    place their keys are spelled, for every command that takes ``--param``."""
    return {f"{CONF_PREFIX}{name}": str(value) for name, value in params.items()}


def spark_conf(policy: str, params: Mapping[str, str] | None = None, *, endpoint: str = "inprocess",
               deadline_ms: int | None = None) -> dict[str, str]:
    """Spark conf entries that put the plugin on the driver's classpath and choose the policy.

    ``endpoint`` is ``inprocess`` (the PySpark driver hosts the policy), ``local`` (the plugin
    starts a policy host process with this Python) or ``tcp://host:port`` (``schedbridge serve``);
    ``params`` become ``spark.schedbridge.<name>``."""
    jar = str(jar_path())
    conf = {"spark.jars": jar, "spark.driver.extraClassPath": jar,
            f"{CONF_PREFIX}policy": policy, f"{CONF_PREFIX}endpoint": endpoint,
            f"{CONF_PREFIX}python": sys.executable}
    if deadline_ms is not None:
        conf[f"{CONF_PREFIX}deadline.ms"] = str(deadline_ms)
    return {**conf, **policy_conf(params or {})}
