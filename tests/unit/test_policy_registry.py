"""Registry: names, configs, --param parsing, conformance checks, and the README example."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from bridge.sim.engine import simulate
from policies.framework.api import ClusterSpec, PolicyEnv
from policies.framework.registry import (
    BUILTINS, ConfigError, PolicyEntry, Registry, RegistryError, default_registry, make_config,
    parse_settings,
)
from workloads.model import Job


@dataclass(frozen=True)
class Cfg:
    n: int = 2
    ratio: float = 0.5
    on: bool = True
    name: str = "x"

    def __post_init__(self):
        if self.n < 0:
            raise ValueError(f"n must be >= 0, got {self.n}")
        if not 0 <= self.ratio <= 1:
            raise ValueError(f"ratio must be within [0, 1], got {self.ratio}")


def test_parse_settings_types():
    c = parse_settings(Cfg, ["n=5", "ratio=0.25", "on=no", "name=abc"])
    assert c == Cfg(5, 0.25, False, "abc")


@pytest.mark.parametrize("setting,needle", [
    ("bogus=1", "valid parameters: n, name, on, ratio"),
    ("n=abc", "not an integer"),
    ("on=maybe", "not a boolean"),
    ("n=-1", "n must be >= 0"),
    ("ratio=1.5", "ratio must be within"),
    ("novalue", "expected key=value"),
])
def test_parse_settings_errors(setting, needle):
    with pytest.raises(ConfigError, match=re.escape(needle)):
        parse_settings(Cfg, [setting], policy="p")


def test_unknown_policy_lists_known():
    with pytest.raises(RegistryError) as e:
        default_registry().get("nope")
    assert "fifo" in str(e.value) and "known policies" in str(e.value)


def test_duplicate_name_refused():
    reg = Registry()
    entry = PolicyEntry("a", Cfg, lambda c, e: None)
    reg.register(entry)
    with pytest.raises(RegistryError, match="already registered"):
        reg.register(entry)


def test_nonconforming_policy_refused():
    class NoName:
        def on_job_arrival(self, ev, view):
            return ()

    class Typo:
        name = "typo"

        def on_job_arrival(self, ev, view):
            return ()

        def on_slot_free(self, ev, view):  # misspelled hook
            return ()

    class VersionOneStealer:
        name = "stealer"

        def on_job_arrival(self, ev, view):
            return ()

        def on_steal_request(self, ev, view):  # one call per victim: API version 1, replaced
            return ()

    reg = Registry()
    reg.register(PolicyEntry("noname", Cfg, lambda c, e: NoName()))
    reg.register(PolicyEntry("typo", Cfg, lambda c, e: Typo()))
    reg.register(PolicyEntry("stealer", Cfg, lambda c, e: VersionOneStealer()))
    env = PolicyEnv(ClusterSpec(1))
    with pytest.raises(RegistryError, match="name"):
        reg.create("noname", env)
    with pytest.raises(RegistryError, match="on_slot_free"):
        reg.create("typo", env)
    with pytest.raises(RegistryError, match=r"unknown hook\(s\) \['on_steal_request'\]"):
        reg.create("stealer", env)


def test_every_builtin_loads_with_defaults():
    reg = default_registry()
    env = PolicyEnv(ClusterSpec(64, slots_per_node=2, resources=("cpu", "mem"), capacity=(2.0, 8.0)))
    for name in BUILTINS:
        p = reg.create(name, env)
        assert p.name == name


def test_readme_example_policy_runs():
    text = (Path(__file__).parents[2] / "policies" / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    ns: dict = {}
    exec(compile(code, "README-example", "exec"), ns)
    reg = Registry()
    reg.register(ns["ENTRY"])
    spec = ClusterSpec(3)
    cfg = reg.config("random-probe", ["probes_per_task=2"])
    pol = reg.create("random-probe", PolicyEnv(spec, seed=3), cfg)
    jobs = [Job(i, float(i), (1.0, 2.0, 3.0)) for i in range(5)]
    r = simulate(jobs, pol, spec)
    assert r.unfinished == [] and len(r.log.seg_done) == 15
    with pytest.raises(ConfigError, match="probes_per_task"):
        reg.config("random-probe", ["probes_per_task=0"])


def test_make_config_from_mapping():
    assert make_config(Cfg, {"n": "3"}).n == 3


def test_third_party_policy_from_entry_point(monkeypatch):
    from importlib.metadata import EntryPoint

    import policies.framework.registry as registry

    eps = [EntryPoint("fifo-again", "policies.stock.fifo:ENTRY", registry.ENTRY_POINT_GROUP)]
    monkeypatch.setattr(registry, "entry_points", lambda group: eps if group == registry.ENTRY_POINT_GROUP else [])
    reg = Registry()
    reg.load_entry_points()
    # the entry point's PolicyEntry declares the name "fifo", not "fifo-again": refused clearly
    with pytest.raises(RegistryError, match="declares the name 'fifo'"):
        reg.get("fifo-again")
    eps[:] = [EntryPoint("fifo", "policies.stock.fifo:ENTRY", registry.ENTRY_POINT_GROUP)]
    reg = Registry()
    reg.load_entry_points()
    assert reg.get("fifo").name == "fifo"
    reg2 = Registry()
    reg2.register("policies.stock.fifo:ENTRY", name="fifo")
    with pytest.raises(RegistryError, match="already exists"):
        reg2.load_entry_points()
