"""Numbers within what the machine can do: every numeric parameter of every registered policy has
an explicit range (``policies/framework/bounds.py``), and a value outside it, through the real ``--param``
parser, is one ConfigError naming the parameter and the range; the command-line cases of issue 32
(item 7) each end in one clear error, within a time limit, never a traceback, a hang, a
MemoryError or an ``Infinity`` in an output."""
from __future__ import annotations

import dataclasses
import json
import math
import re
import typing
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from bridge.cli import main
from bridge.sim.cli import infinite_at
from policies.framework.bounds import bounds_of
from policies.framework.registry import ConfigError, default_registry

NUMERIC = (int, float)


def numeric_parameters() -> list[tuple[str, str]]:
    """(policy, parameter) for every int or float field of every registered policy's config."""
    reg = default_registry()
    out = []
    for name in reg.names():
        config = reg.get(name).config
        hints = typing.get_type_hints(config)
        out += [(name, f.name) for f in dataclasses.fields(config) if hints[f.name] in NUMERIC]
    return out


PARAMETERS = numeric_parameters()
# huge, tiny, negative, nan/inf, 2^70: each refused unless the parameter's range admits it
FUZZ = ["1e12", "1e308", "1e-300", "5e-324", "-1", "-1e12", "nan", "-nan", "inf", "-inf", "1e999", str(2**70)]


def test_every_registered_policy_is_covered() -> None:
    assert {policy for policy, _ in PARAMETERS} >= {"kairos", "sparrow", "eagle", "hawk", "dlwl", "ursa", "falcon"}


@pytest.mark.parametrize("policy,key", PARAMETERS)
def test_every_numeric_parameter_declares_its_range(policy: str, key: str) -> None:
    bounds = bounds_of(default_registry().get(policy).config)
    assert key in bounds, f"{policy}: {key} has no range (field(..., metadata=within(low, high)))"
    assert math.isfinite(bounds[key].low) and math.isfinite(bounds[key].high)
    assert bounds[key].high <= 1e10, f"{policy}: {key}'s upper bound {bounds[key].high:g} is no bound"


@pytest.mark.parametrize("policy,key", PARAMETERS)
@pytest.mark.parametrize("text", FUZZ)
def test_out_of_range_values_are_one_clean_error(policy: str, key: str, text: str) -> None:
    reg = default_registry()
    bounds = bounds_of(reg.get(policy).config)[key]
    number = float(text)
    try:
        config = reg.config(policy, [f"{key}={text}"])
    except ConfigError as e:
        assert key in str(e) and policy in str(e)
        return
    assert math.isfinite(number) and bounds.admits(number), f"{policy}: {key}={text} was accepted"
    assert math.isfinite(getattr(config, key))


@pytest.mark.parametrize("policy,key", PARAMETERS)
def test_just_outside_the_range_names_the_bound(policy: str, key: str) -> None:
    reg = default_registry()
    bounds = bounds_of(reg.get(policy).config)[key]
    for value in (bounds.low - 1, bounds.high * 2 + 1):
        with pytest.raises(ConfigError, match=re.escape(f"{key} must be {bounds.describe()}, got")):
            reg.config(policy, [f"{key}={value:g}"])


def test_a_config_built_directly_is_held_to_the_same_ranges() -> None:
    from policies.kairos.kairos import KairosConfig

    with pytest.raises(ValueError, match=r"q must be within \[0, 1024\]"):
        KairosConfig(q=2**70)
    assert KairosConfig(heartbeat_interval=0.0).heartbeat_interval == 0.0  # 0 switches it off


def test_infinite_output_numbers_are_found() -> None:
    assert infinite_at({"jct": {"long": {"p50": 1.0, "max": math.inf}}}) == "jct.long.max"
    assert infinite_at({"finish": [1.0, -math.inf]}) == "finish"
    assert infinite_at({"p50": math.nan, "jobs": [1, 2]}) is None  # NaN is a class without jobs


# -- the command-line cases of the issue ---------------------------------------------------------

TRACE = "0 2 5 5 5\n1.5 1 3 3\n"


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    path = tmp_path / "t.trace"
    path.write_text(TRACE)
    return path


def invoke(*args: object) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def assert_clean_error(result: Result, *needles: str) -> None:
    assert result.exit_code in (1, 2), (result.exit_code, result.output, result.exception)
    assert isinstance(result.exception, SystemExit), repr(result.exception)
    assert "Error" in result.output and "Traceback" not in result.output and "Infinity" not in result.output
    for needle in needles:
        assert needle in result.output, result.output


def simulate(trace: Path, *args: object) -> Result:
    return invoke("simulate", "--trace", trace, "--policy", *args)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("args,needles", [
    (("fifo", "--nodes", "1e9"), ("--nodes",)),
    (("fifo", "--nodes", 10**9), ("--nodes", "1<=x<=1000000")),
    (("fifo", "--nodes", 2, "--slots", "1e9"), ("--slots",)),
    (("fifo", "--nodes", 2, "--slots", 10**9), ("--slots", "1<=x<=1024")),
    (("fifo", "--nodes", 2, "--slots", 2**70), ("--slots", "1<=x<=1024")),
    (("fifo", "--nodes", 100_000, "--slots", 1024), ("--nodes/--slots", "10,000,000 slots")),
    (("kairos", "--nodes", 2, "--param", "q=1e12"), ("kairos: q must be within [0, 1024]",)),
    (("sparrow", "--nodes", 2, "--param", "probe_ratio=1e9"), ("sparrow: probe_ratio must be within [0.01, 500]",)),
    (("eagle", "--nodes", 2, "--param", "min_probes=1e12"), ("eagle: min_probes must be within [0, 100000]",)),
    (("kairos", "--nodes", 2, "--param", "w=1e-300"), ("kairos: w must be within [0.001, 1e+07]",)),
    (("dlwl", "--nodes", 2, "--param", "heartbeat=1e-300"), ("dlwl: heartbeat must be within [0.001, 86400]",)),
    (("fifo", "--nodes", 2, "--network-delay=1e308", "--json"), ("--network-delay", "0<=x<=60")),
])
def test_simulate_cases(trace: Path, args: tuple, needles: tuple[str, ...]) -> None:
    assert_clean_error(simulate(trace, *args), *needles)


@pytest.mark.timeout(30)
@pytest.mark.parametrize("args,needles", [
    (("--jobs", "1e12"), ("--jobs",)),
    (("--jobs", 10**12), ("--jobs", "1<=x<=1000000")),
    (("--jobs", 5, "--load=5e-324"), ("--load", "0.001<=x<=100")),
])
def test_trace_generate_cases(tmp_path: Path, args: tuple, needles: tuple[str, ...]) -> None:
    out = tmp_path / "out.trace"
    assert_clean_error(invoke("trace", "generate", "yahoo", *args, "--out", out), *needles)
    assert not out.exists()


@pytest.mark.timeout(30)
def test_the_bounds_themselves_are_usable(trace: Path, tmp_path: Path) -> None:
    result = simulate(trace, "fifo", "--nodes", 2, "--network-delay", 60, "--json")
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output.splitlines()[-1])
    assert summary["jct"]["long"]["max"] == pytest.approx(5 + 60)  # FIFO: one delay, the launch to the node
    result = invoke("trace", "generate", "yahoo", "--jobs", 1, "--load", 0.001, "--out", tmp_path / "one")
    assert result.exit_code == 0, result.output
    assert "inf" not in result.output and "n/a (one arrival time)" in result.output


def test_list_policies_shows_each_range() -> None:
    result = invoke("simulate", "--list-policies")
    assert result.exit_code == 0, result.output
    assert "q=2 (within [0, 1024])" in result.output
    assert "heartbeat_interval=0.0 (0 (off) or within [0.001, 86400])" in result.output


@pytest.mark.timeout(30)
@pytest.mark.parametrize("args,option", [
    (("bench", "spark", "--tasks", -1), "--tasks"),
    (("bench", "spark", "--cores", 2**70), "--cores"),
    (("bench", "spark-tpch", "--scale-factor", "nan"), "--scale-factor"),
    (("bench", "spark-tpch", "--executors", 10**9), "--executors"),
    (("bench", "idle-slots", "--executors", 10**9), "--executors"),
    (("bench", "sim", "--jobs", 10**12), "--jobs"),
    (("testbed", "up", "--vcores", 2**70), "--vcores"),
    (("testbed", "up", "--timeout", "1e308"), "--timeout"),
    (("sim-vs-live", "w.toml", "--policy", "fifo", "--cutoff", "nan"), "--cutoff"),
    (("sim-vs-live", "w.toml", "--policy", "fifo", "--executors", 10**9), "--executors"),
    (("tpch", "--policy", "fifo", "--scale", "1e308"), "--scale"),
    (("experiment", "hawk-vs-sparrow", "--workers", 10**9), "--workers"),
])
def test_other_commands_bound_their_numbers(args: tuple, option: str) -> None:
    assert_clean_error(invoke(*args), option)
