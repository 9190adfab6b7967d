"""The daemon's TCP transport (hello, token, attach, rounds) and `schedbridge submit`'s rewriting."""
from __future__ import annotations

import json
import socket
import threading
from collections.abc import Iterator

import click
import pytest

from bridge.live.spark_daemon import PolicyDaemon, is_loopback
from bridge.live.spark_fifo import FifoPlanner
from bridge.live.spark_host import PolicyHost
from bridge.live.spark_submit import rewrite


@pytest.fixture
def daemon() -> Iterator[PolicyDaemon]:
    server = PolicyDaemon(("127.0.0.1", 0), PolicyHost(FifoPlanner()), token="s3cret")
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


def exchange(sock_file, msg: dict) -> dict:
    sock_file.write(json.dumps(msg).encode() + b"\n")
    sock_file.flush()
    return json.loads(sock_file.readline())


def test_daemon_hello_attach_and_round(daemon: PolicyDaemon) -> None:
    with socket.create_connection(daemon.server_address, timeout=5) as s, s.makefile("rwb") as f:
        assert exchange(f, {"v": 2, "kind": "hello", "app": "a", "token": "s3cret"})["ok"]
        assert exchange(f, {"v": 2, "kind": "attach", "app": "a", "policy": "spark-fifo", "params": {}}) == {
            "v": 2, "attached": True, "policy": "spark-fifo"}
        reply = exchange(f, {"v": 2, "kind": "round", "app": "a", "round": 1, "now_ms": 1, "cpus_per_task": 1,
                             "slots": [{"executor": "1", "host": "h", "free": 2}],
                             "stages": [{"stage": 0, "attempt": 0, "job": 0, "tasks": 3, "pending": 3,
                                         "running": 0}],
                             "events": [], "snapshot": {"executors": [], "running": [], "jobs": []}})
        assert reply["assign"] == [{"stage": 0, "attempt": 0, "executor": "1", "slots": 2}]
        assert "error" in exchange(f, {"v": 2, "kind": "round"})


@pytest.mark.parametrize("token", ["", "wrong"])
def test_a_daemon_with_a_token_requires_it_on_loopback_too(daemon: PolicyDaemon, token: str) -> None:
    with socket.create_connection(daemon.server_address, timeout=5) as s, s.makefile("rwb") as f:
        reply = exchange(f, {"v": 2, "kind": "hello", "app": "a", "token": token})
        assert reply["ok"] is False and reply["error"] == "bad token"
        assert f.readline() == b""  # closed: nothing more is read from this client


def test_daemon_refuses_an_application_asking_for_another_policy(daemon: PolicyDaemon) -> None:
    with socket.create_connection(daemon.server_address, timeout=5) as s, s.makefile("rwb") as f:
        assert exchange(f, {"v": 2, "kind": "hello", "app": "a", "token": "s3cret"})["ok"]
        reply = exchange(f, {"v": 2, "kind": "attach", "app": "a", "policy": "hawk", "params": {}})
        assert reply["refused"].startswith("this policy host serves 'spark-fifo'; the application asked for 'hawk'")


def test_non_loopback_needs_a_token() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("::1") and not is_loopback("10.0.0.1")
    with pytest.raises(ValueError, match="without a token"):
        PolicyDaemon(("0.0.0.0", 0), PolicyHost(FifoPlanner()))


def test_submit_keeps_yarn_only_options_and_adds_the_jar(monkeypatch) -> None:
    monkeypatch.setenv("HADOOP_CONF_DIR", "/etc/hadoop")
    args = rewrite(["--master", "spark-schedbridge://yarn", "--num-executors", "2", "--queue=q",
                    "--jars", "a.jar", "--executor-memory", "512m", "app.py", "--x", "1"], "/p.jar")
    assert args[-3:] == ["app.py", "--x", "1"]
    text = " ".join(args)
    assert "--conf spark.executor.instances=2" in text and "--conf spark.yarn.queue=q" in text
    assert "--conf spark.yarn.isPython=true" in text and "--executor-memory 512m" in text
    assert "--jars /p.jar,a.jar" in text and "--driver-class-path /p.jar" in text
    assert "--num-executors" not in text


def test_submit_refuses_other_masters_and_missing_conf_dir(monkeypatch) -> None:
    with pytest.raises(click.UsageError, match="--master must be"):
        rewrite(["--master", "yarn", "app.py"], "/p.jar")
    monkeypatch.delenv("HADOOP_CONF_DIR", raising=False)
    monkeypatch.delenv("YARN_CONF_DIR", raising=False)
    with pytest.raises(click.UsageError, match="HADOOP_CONF_DIR"):
        rewrite(["--master", "spark-schedbridge://yarn", "app.py"], "/p.jar")
    local = rewrite(["--master", "spark-schedbridge://local[2]", "--num-executors", "2", "app.py"], "/p.jar")
    assert "--num-executors" in local  # not YARN: left to spark-submit as given


def test_a_message_over_the_limit_closes_the_connection_instead_of_being_split(daemon: PolicyDaemon,
                                                                              monkeypatch) -> None:
    monkeypatch.setattr("bridge.live.spark_daemon.MAX_MESSAGE_BYTES", 1000)
    with socket.create_connection(daemon.server_address, timeout=5) as s, s.makefile("rwb") as f:
        assert exchange(f, {"v": 2, "kind": "hello", "app": "a", "token": "s3cret"})["ok"]
        f.write(b'{"v": 2, "kind": "round", "pad": "' + b"x" * 3000 + b'"}\n')
        f.flush()
        assert "over 1000 bytes" in json.loads(f.readline())["error"]
        assert f.readline() == b""  # closed: no answers to the pieces of the long line
    with socket.create_connection(daemon.server_address, timeout=5) as s, s.makefile("rwb") as f:
        assert exchange(f, {"v": 2, "kind": "hello", "app": "a", "token": "s3cret"})["ok"]  # others unaffected
