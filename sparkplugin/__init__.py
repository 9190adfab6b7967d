"""schedbridge's Spark scheduler backend: the JVM plugin jar and the Spark conf that selects it.

The plugin (``sparkplugin/src/main/java``) is an ``ExternalClusterManager`` chosen by masters of
the form ``spark-schedbridge://INNER`` (INNER is ``yarn``, ``local[N]``, ``local-cluster[W,C,M]``
or ``spark://host:port``). ``make setup`` builds it with Maven (``sparkplugin/pom.xml``).
"""
from __future__ import annotations

import json
import re
import sys
from collections.abc import Mapping
from pathlib import Path

MASTER_PREFIX = "spark-schedbridge://"
CONF_PREFIX = "spark.schedbridge."
# spark.schedbridge.policy names the policy; spark.schedbridge.policy.<param> are its parameters.
POLICY_PREFIX = f"{CONF_PREFIX}policy."
ESTIMATES_KEY = f"{CONF_PREFIX}estimates"  # a runtime-estimates file for the policy host
TEXT, FLAG, COUNT, DURATION = "text", "flag", "count", "duration"
VALUE_FORMS = {FLAG: "true or false", COUNT: "a positive integer",
               DURATION: "a Spark time string from 1ms to 24d such as 50ms, 2s or 1min (a bare number is ms)"}
# The plugin's resources, shipped in its jar and read here by path (package data of a wheel).
RESOURCES = Path(__file__).resolve().parent / "src" / "main" / "resources" / "org" / "schedbridge" / "spark"
# The JSON Schema of every message between the plugin and a policy host (bridge/protocol/messages.py).
PROTOCOL_SCHEMA = RESOURCES / "protocol.schema.json"
# The plugin's own keys, the one list of them that BridgeConf.java reads too: see _conf_keys.
CONF_KEYS = RESOURCES / "conf-keys.json"


def _conf_keys() -> tuple[dict[str, str], dict[str, str]]:
    """The plugin's keys (after CONF_PREFIX) -> how each is read, and the renamed keys (old -> new), from
    CONF_KEYS; the preflight checks and the refusals below are derived from them."""
    listed = json.loads(CONF_KEYS.read_text())
    return dict(listed["keys"]), dict(listed["renamed"])


PLUGIN_KEYS, RENAMED_KEYS = _conf_keys()
# Spark's time strings (org.apache.spark.network.util.JavaUtils.timeStringAs): the suffix in ms.
TIME_STRING = re.compile(r"(-?[0-9]+)([a-z]+)?")
TIME_UNITS_US = {"us": 1, "ms": 10**3, "s": 10**6, "m": 60 * 10**6, "min": 60 * 10**6, "h": 3600 * 10**6,
                 "d": 86400 * 10**6}
MAX_MS = 2**31 - 1  # the plugin keeps durations as Java ints
PARAM_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # what a policy parameter's name looks like
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
    """True for ``spark.schedbridge.policy.<param>`` keys."""
    return key.startswith(POLICY_PREFIX)


def policy_params(conf: Mapping[str, str]) -> dict[str, str]:
    """The policy parameters among Spark conf entries, by name without the prefix, with the
    estimates file (``spark.schedbridge.estimates``) as the adapter parameter ``estimates``, as the
    plugin hands them to its policy host (``BridgeConf.java``)."""
    params = {key.removeprefix(POLICY_PREFIX): value for key, value in conf.items() if is_policy_param(key)}
    table = conf.get(ESTIMATES_KEY, "").strip()
    if table:
        if "estimates" in params:
            raise ValueError(f"set {ESTIMATES_KEY} or {POLICY_PREFIX}estimates, not both")
        params["estimates"] = table
    return params


def time_ms(text: str) -> int:
    """A Spark time string in milliseconds, read as Spark reads its own (``JavaUtils.timeStringAsMs``):
    case and surrounding blanks ignored, an integer with an optional unit (us, ms, s, m, min, h, d),
    a bare number in milliseconds, microseconds truncated. ValueError for anything else."""
    match = TIME_STRING.fullmatch(text.lower().strip())
    if match is None or (match[2] is not None and match[2] not in TIME_UNITS_US):
        raise ValueError(f"not a Spark time string: {text!r}")
    return int(match[1]) * TIME_UNITS_US[match[2] or "ms"] // 1000


def check_conf(conf: Mapping[str, str]) -> None:
    """Raises ValueError, naming the key, for a ``spark.schedbridge.*`` entry the plugin refuses at
    start (``BridgeConf.java``): a bad value, an old or unknown key."""
    for key in sorted(k for k in conf if k.startswith(CONF_PREFIX) and not is_policy_param(k)):
        name = key.removeprefix(CONF_PREFIX)
        kind = PLUGIN_KEYS.get(name)
        if kind is None:
            raise ValueError(unknown_key_message(name))
        if not _valid(kind, conf[key]):
            raise ValueError(f"{key} must be {VALUE_FORMS[kind]}, got {conf[key]!r}")


def _valid(kind: str, raw: str) -> bool:
    """Whether ``raw`` is a value the plugin accepts for a key of this kind."""
    if kind == FLAG:
        return raw.strip().lower() in ("true", "false")
    if kind == COUNT:
        return re.fullmatch(r"\+?[0-9]+", raw.strip()) is not None and 0 < int(raw) <= MAX_MS
    if kind == DURATION:
        try:
            return 0 < time_ms(raw) <= MAX_MS
        except ValueError:
            return False
    return True


def unknown_key_message(name: str) -> str:
    """Why ``spark.schedbridge.<name>``, not a plugin key, is refused, naming what to write instead."""
    if name in RENAMED_KEYS:
        return (f"{CONF_PREFIX}{name} is now {CONF_PREFIX}{RENAMED_KEYS[name]}, a Spark time string "
                "(e.g. 50ms, 2s; a bare number is milliseconds)")
    if PARAM_NAME.fullmatch(name):
        return (f"{CONF_PREFIX}{name} is not a plugin key; policy parameters are {POLICY_PREFIX}<param>: "
                f"did you mean {POLICY_PREFIX}{name}?")
    return (f"unknown key {CONF_PREFIX}{name}: the plugin's keys are {', '.join(sorted(PLUGIN_KEYS))}, "
            f"policy parameters are {POLICY_PREFIX}<param>")


def policy_conf(params: Mapping[str, str]) -> dict[str, str]:
    """Spark conf entries for policy parameters (the inverse of :func:`policy_params`): the one
    place their keys are spelled, for every command that takes ``--param``."""
    return {f"{POLICY_PREFIX}{name}": str(value) for name, value in params.items()}


def spark_conf(policy: str, params: Mapping[str, str] | None = None, *,
               endpoint: str = "inprocess") -> dict[str, str]:
    """Spark conf entries that put the plugin on the driver's classpath and choose the policy.

    ``endpoint`` is ``inprocess`` (the PySpark driver hosts the policy), ``local`` (the plugin
    starts a policy host process with this Python), ``tcp://host:port`` or ``tls://host:port`` (``schedbridge serve``);
    ``params`` become ``spark.schedbridge.policy.<name>``."""
    jar = str(jar_path())
    conf = {"spark.jars": jar, "spark.driver.extraClassPath": jar,
            f"{CONF_PREFIX}policy": policy, f"{CONF_PREFIX}endpoint": endpoint,
            f"{CONF_PREFIX}python": sys.executable}
    return {**conf, **policy_conf(params or {})}
