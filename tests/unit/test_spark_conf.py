"""The plugin's Spark conf as the Python side reads it (time strings, the policy parameters' prefix,
the refusals that name the key to write instead) and spark-submit's option table read from Spark's
launcher jar, checked against the installed spark-submit's own help."""
from __future__ import annotations

import json
import os
import re
import subprocess
import zipfile

import pytest

import sparkplugin
from bridge.launch.launcher import PARSER_CLASS, LauncherError, launcher_jar, option_tables, value_options
from bridge.launch.submit import rewrite, spark_home

P = sparkplugin.CONF_PREFIX


@pytest.mark.parametrize("text, ms", [("50ms", 50), ("2s", 2000), ("1min", 60_000), ("1m", 60_000), ("3h", 10_800_000),
                                      ("1d", 86_400_000), ("250", 250), (" 2S ", 2000), ("1500us", 1), ("999us", 0),
                                      ("-5s", -5000)])
def test_time_strings_read_as_spark_reads_them(text: str, ms: int) -> None:
    assert sparkplugin.time_ms(text) == ms


@pytest.mark.parametrize("text", ["1.5s", "2 s", "soon", "", "5sec", "s", "1e3"])
def test_what_spark_refuses_as_a_time_string_is_refused(text: str) -> None:
    with pytest.raises(ValueError, match="not a Spark time string"):
        sparkplugin.time_ms(text)


def test_durations_accept_time_strings() -> None:
    sparkplugin.check_conf({P + "deadline": "50ms", P + "io.timeout": "2s", P + "retry.wait": "1500",
                            P + "revive.interval": "100ms", P + "start.timeout": "1min", P + "hold.max": "30s",
                            P + "max.kills.per.round": "4", P + "fallback": "TRUE", P + "policy": "hawk",
                            P + "policy.cutoff": "0.5", "spark.executor.instances": "2"})


@pytest.mark.parametrize("key, value", [("deadline", "soon"), ("deadline", "0ms"), ("hold.max", "1.5s"),
                                        ("io.timeout", "25d"), ("retry.wait", "999us"), ("max.kills.per.task", "0"),
                                        ("max.kills.per.round", "2s"), ("fallback", "yes")])
def test_a_bad_value_is_one_error_naming_the_key_and_the_value(key: str, value: str) -> None:
    with pytest.raises(ValueError) as e:
        sparkplugin.check_conf({P + key: value})
    assert str(e.value).startswith(f"{P}{key} must be ") and str(e.value).endswith(f"got {value!r}")


@pytest.mark.parametrize("old, new", sorted(sparkplugin.RENAMED_KEYS.items()))
def test_the_old_millisecond_keys_are_refused_naming_the_new_one(old: str, new: str) -> None:
    with pytest.raises(ValueError, match=re.escape(f"{P}{old} is now {P}{new}, a Spark time string")):
        sparkplugin.check_conf({P + old: "100"})
    assert sparkplugin.PLUGIN_KEYS[new] == sparkplugin.DURATION and not new.endswith(".ms")


def test_a_policy_parameter_without_its_prefix_is_refused_naming_the_prefixed_key() -> None:
    with pytest.raises(ValueError, match=re.escape(f"{P}cutoff is not a plugin key; policy parameters are "
                                                   f"{P}policy.<param>: did you mean {P}policy.cutoff?")):
        sparkplugin.check_conf({P + "cutoff": "0.5"})


def test_an_unknown_dotted_key_is_refused_listing_the_plugin_keys() -> None:
    with pytest.raises(ValueError,
                       match=re.escape(f"unknown key {P}token.fle: the plugin's keys are agents, "
                                       "cluster.mainClass, cluster.pyFile, deadline, ")):
        sparkplugin.check_conf({P + "token.fle": "/t"})


def test_policy_parameters_round_trip_under_their_own_prefix() -> None:
    conf = sparkplugin.policy_conf({"cutoff": "0.5", "w": 2})
    assert conf == {P + "policy.cutoff": "0.5", P + "policy.w": "2"}
    with_plugin_keys = {**conf, P + "policy": "hawk", P + "deadline": "1s"}
    assert sparkplugin.policy_params(with_plugin_keys) == {"cutoff": "0.5", "w": "2"}


def test_the_estimates_file_is_the_adapters_parameter_given_once() -> None:
    assert sparkplugin.policy_params({P + "estimates": " e.json ", P + "policy.w": "2"}) == {"estimates": "e.json",
                                                                                          "w": "2"}
    with pytest.raises(ValueError, match="not both"):
        sparkplugin.policy_params({P + "estimates": "a.json", P + "policy.estimates": "b.json"})


def _help_options() -> tuple[set[str], set[str]]:
    """Every option in the installed ``spark-submit --help``, and those it shows with a value."""
    env = {**os.environ, "SPARK_HOME": str(spark_home())}
    out = subprocess.run([str(spark_home() / "bin" / "spark-submit"), "--help"], env=env, capture_output=True,
                         text=True, timeout=120, check=True)
    text = out.stdout + out.stderr
    every = (set(re.findall(r"(?m)^\s+(--[a-z-]+|-[a-z])\b", text))
             | set(re.findall(r"(?m)^\s+--[a-z-]+, (-[a-z])\b", text)))
    shown_with_value = set(re.findall(r"(?m)^\s+(--[a-z-]+)(?:, -[a-z])? [A-Z_]+(?:=[A-Z_]+)?\s", text))
    return every, shown_with_value


def test_the_option_table_is_spark_submits_own() -> None:
    tables = option_tables(launcher_jar(spark_home()))
    every, shown_with_value = _help_options()
    assert {"--master", "--conf", "-c", "--name", "--queue", "--num-executors", "--kill"} <= tables["opts"]
    assert not tables["opts"] & tables["switches"]
    assert shown_with_value <= tables["opts"]
    assert every <= tables["opts"] | tables["switches"], every - tables["opts"] - tables["switches"]
    assert "--verbose" in every and "--master" in shown_with_value  # the help was read at all


@pytest.mark.parametrize("option", sorted(value_options(launcher_jar(spark_home())) - {"--master"}))
def test_every_value_option_keeps_its_value_away_from_the_application(option: str) -> None:
    args = rewrite(["--master", "spark-schedbridge://local[1]", option, "app.py", "app.py", "--name", "x"], "/p.jar")
    assert args[-3:] == ["app.py", "--name", "x"]  # the application, then its own arguments untouched


def test_a_spark_home_without_a_launcher_jar_is_named(tmp_path) -> None:
    with pytest.raises(LauncherError, match=f"no spark-launcher_.*jar in {tmp_path / 'jars'}"):
        launcher_jar(tmp_path)


def test_a_launcher_jar_without_the_parser_class_or_with_a_broken_one_is_named(tmp_path) -> None:
    empty, broken = tmp_path / "empty.jar", tmp_path / "broken.jar"
    with zipfile.ZipFile(empty, "w"):
        pass
    with zipfile.ZipFile(broken, "w") as zf:
        zf.writestr(PARSER_CLASS, b"\xca\xfe\xba\xbe\x00\x00\x00\x3d\x00\x09")
    with pytest.raises(LauncherError, match=f"cannot read {PARSER_CLASS} from {empty}"):
        option_tables(empty)
    with pytest.raises(LauncherError, match=f"cannot parse {PARSER_CLASS} from {broken}"):
        option_tables(broken)


def test_the_plugin_keys_are_those_of_the_plugins_conf_keys_file_each_of_a_kind_the_check_knows() -> None:
    """``conf-keys.json`` is the one list (``BridgeConf.java`` reads it from the jar, with the same kinds)."""
    listed = json.loads(sparkplugin.CONF_KEYS.read_text())
    assert (sparkplugin.PLUGIN_KEYS, sparkplugin.RENAMED_KEYS) == (listed["keys"], listed["renamed"])
    assert set(sparkplugin.PLUGIN_KEYS.values()) == {sparkplugin.TEXT, *sparkplugin.VALUE_FORMS}
