"""The attach step: an application's policy and parameters are accepted, applied or refused by the
policy host before any round, with the mistake named; and the host process the plugin starts
beside each driver (``bridge.plugin.local_host``)."""
from __future__ import annotations

import json
import logging
import os
import socket
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from bridge.drivers.planners import make_planner
from bridge.drivers.spark.fifo import FifoPlanner
from bridge.drivers.spark.state import LiveCluster
from bridge.plugin.host import PolicyHost
from bridge.plugin.local_host import own_session
from bridge.protocol.auth import AuthError, client_handshake, new_nonce
from bridge.protocol.messages import LiveEvent, OfferRound, Placement, ProtocolError, decode
from tests.unit.test_spark_live_engine import FakeSpark, drive


def attach(host: PolicyHost, policy: str, params: dict[str, str] | None = None) -> dict:
    return json.loads(host.handle(json.dumps({"v": 2, "kind": "attach", "app": "app-1", "policy": policy,
                                              "params": params or {}})))


@pytest.mark.parametrize("policy, params, message", [
    ("hwak", {}, "unknown policy 'hwak' (did you mean 'hawk'?)"),
    ("hawk", {"cutof": "10"}, "unknown parameter(s) ['cutof'] (did you mean 'cutoff'?)"),
    ("hawk", {"cutoff": "abc"}, "cutoff='abc' is not a number"),
    ("hawk", {"cutoff": "-1"}, "cutoff must be within [0, 1e+09], got -1"),
    ("hawk", {"estimate": "0"}, "estimate must be a positive number of seconds"),
    ("spark-fifo", {"k": "1"}, "spark-fifo takes no parameters"),
])
def test_a_configuration_mistake_is_refused_with_its_name(policy: str, params: dict, message: str) -> None:
    host = PolicyHost()
    reply = attach(host, policy, params)
    assert message in reply["refused"], reply
    assert host.planner is None  # nothing was built from the mistake
    assert attach(host, "hawk")["attached"]  # and the next, correct, attach is served


def test_a_round_before_any_attach_is_an_error_not_a_crash() -> None:
    spark = FakeSpark({"1": 1}, {1: (1, {})})
    assert "attach" in json.loads(PolicyHost().handle(spark.request()))["error"]


def long_stage_executors(params: dict[str, str]) -> set[str]:
    """Executors Hawk's host, configured by the attach alone, ran an estimated-100 s stage on."""
    host = PolicyHost()
    assert attach(host, "hawk", {"big_partition": "50", **params})["attached"]
    spark = FakeSpark({"1": 2, "2": 2}, {1: (12, {"schedbridge.estimate": "100"})})
    drive(host, spark)
    return {ex for _, ex in spark.ran_on}


def test_the_applications_parameters_change_the_decisions() -> None:
    assert long_stage_executors({"cutoff": "10"}) == {"2"}  # long: only Hawk's general partition (node 1)
    assert long_stage_executors({"cutoff": "1000"}) == {"1", "2"}  # short: probes reach both executors


def test_a_configured_host_serves_only_its_own_policy_and_settings() -> None:
    host = PolicyHost(make_planner("hawk", {"cutoff": "10"}))
    assert attach(host, "hawk", {"cutoff": "10.0"})["attached"]  # the same value, spelled otherwise
    assert "asked for 'sparrow'" in attach(host, "sparrow")["refused"]
    refused = attach(host, "hawk")["refused"]
    assert "cutoff: host 10.0, application 90.5811" in refused


# --- the host process beside the driver ---------------------------------------------------------
def start_local_host(token: str | None) -> subprocess.Popen:
    env = {k: v for k, v in os.environ.items() if k != "SCHEDBRIDGE_HOST_TOKEN"}
    if token is not None:
        env["SCHEDBRIDGE_HOST_TOKEN"] = token
    return subprocess.Popen([sys.executable, "-m", "bridge.plugin.local_host"], env=env, text=True,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def exchange(f, msg: dict) -> dict:
    f.write(json.dumps(msg).encode() + b"\n")
    f.flush()
    return json.loads(f.readline())


def test_local_host_serves_with_its_token_and_exits_when_its_stdin_closes() -> None:
    token = new_nonce()
    proc = start_local_host(token)
    try:
        ready = proc.stdout.readline().split()
        assert ready[0] == "READY" and ready[1].startswith("tcp://127.0.0.1:")
        assert os.getsid(proc.pid) == proc.pid != os.getsid(0)  # a session of its own
        port = int(ready[1].rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s, s.makefile("rwb") as f:
            with pytest.raises(AuthError):
                client_handshake(f, "wrong-token-0123456789", "a", new_nonce())
        with socket.create_connection(("127.0.0.1", port), timeout=5) as s, s.makefile("rwb") as f:
            client_handshake(f, token, "a", new_nonce())
            assert exchange(f, {"v": 2, "kind": "attach", "app": "a", "policy": "sparrow", "params": {}})["attached"]
        proc.stdin.close()  # what the driver does when the application stops (or the OS, if it dies)
        assert proc.wait(timeout=10) == 0
    finally:
        proc.kill()
        proc.wait()


@pytest.mark.parametrize("parent,written", [("/autogroup-7 nice -10\n", "-10\n"), ("/autogroup-7 nice 5\n", "5\n"),
                                            ("/autogroup-7 nice 0\n", None), (None, None)])
def test_the_hosts_own_session_keeps_the_drivers_autogroup_nice(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, parent: str | None, written: str | None) -> None:
    sessions: list[bool] = []
    monkeypatch.setattr(os, "setsid", lambda: sessions.append(True))
    (tmp_path / "self").mkdir()
    if parent is not None:   # else no autogroups here
        (tmp_path / str(os.getppid())).mkdir()
        (tmp_path / str(os.getppid()) / "autogroup").write_text(parent)
    own_session(tmp_path)
    assert sessions == [True]
    mine = tmp_path / "self" / "autogroup"
    assert (mine.read_text() if mine.exists() else None) == written


def test_a_host_that_leads_its_session_already_keeps_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse() -> None:
        raise PermissionError(1, "Operation not permitted")
    monkeypatch.setattr(os, "setsid", refuse)
    (tmp_path / str(os.getppid())).mkdir()
    (tmp_path / str(os.getppid()) / "autogroup").write_text("/autogroup-7 nice -10\n")
    own_session(tmp_path)
    assert not (tmp_path / "self" / "autogroup").exists()


def test_a_raised_nice_the_kernel_refuses_is_warned_of(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(os, "setsid", lambda: None)
    (tmp_path / str(os.getppid())).mkdir()
    (tmp_path / str(os.getppid()) / "autogroup").write_text("/autogroup-7 nice -10\n")
    (tmp_path / "self").mkdir()
    (tmp_path / "self" / "autogroup").mkdir()   # unwritable as a file, as /proc refuses a non-root -10
    with caplog.at_level(logging.WARNING):
        own_session(tmp_path)
    assert "keeps nice 0, not the driver's -10" in caplog.text


def test_local_host_refuses_to_start_without_a_token() -> None:
    proc = start_local_host(None)
    out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 2 and "SCHEDBRIDGE_HOST_TOKEN is not set" in out


# --- messages no host may crash on ----------------------------------------------------------------
def round_text(**overrides: object) -> str:
    msg = {"v": 2, "kind": "round", "app": "a", "round": 1, "now_ms": 1, "cpus_per_task": 1, "slots": [],
           "stages": [], "events": [], **overrides}
    return json.dumps(msg)


@pytest.mark.parametrize("text", [
    "not json", "[1, 2]", json.dumps({"v": 1, "kind": "round"}), "{" * 100_000, "[" * 100_000,
    round_text(round=1e999).replace("Infinity", "1e999"),
    round_text(now_ms=0).replace('"now_ms": 0', '"now_ms": ' + "9" * 5000),
    round_text(snapshot={"executors": [1, 2], "running": "x", "jobs": None}),
    round_text(snapshot={"executors": [{"e": "executor_added"}], "running": [], "jobs": []}),
    round_text(events=[{"e": "task_end", "t": "soon"}]), round_text(slots=[{"free": []}]),
    json.dumps({"v": 2, "kind": "attach", "app": "a", "policy": "hawk", "params": ["cutoff"]}),
])
def test_the_host_answers_any_message_with_an_error_and_never_raises(text: str) -> None:
    host = PolicyHost(make_planner("fifo"))
    reply = json.loads(host.handle(text))
    assert "error" in reply, reply
    spark = FakeSpark({"1": 1}, {1: (1, {})})
    assert json.loads(host.handle(spark.request()))["round"] == 1  # and goes on serving


def test_json_nested_past_the_stack_is_one_protocol_error() -> None:
    with pytest.raises(ProtocolError, match="nested too deeply"):
        decode('{"v": 2, "kind": "round", "x": ' + "[" * 100_000)


class SlowFifo(FifoPlanner):
    """Spark's FIFO, 20 ms per round."""

    def plan(self, rnd: OfferRound, events: Sequence[LiveEvent], cluster: LiveCluster) -> Placement:
        time.sleep(0.02)
        return super().plan(rnd, events, cluster)


def test_a_reply_says_the_hosts_own_time_on_its_round() -> None:
    host = PolicyHost(SlowFifo())
    spark = FakeSpark({"1": 1}, {1: (1, {})})
    start = time.perf_counter()
    reply = json.loads(host.handle(spark.request()))
    elapsed_us = (time.perf_counter() - start) * 1e6
    assert reply["assign"] and 20_000 <= reply["host_us"] <= elapsed_us
