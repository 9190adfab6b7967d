"""`schedbridge serve --metrics-port`: the host's counters as Prometheus text at /metrics, moving with
the rounds, attaches and connections a real daemon serves."""
from __future__ import annotations

import json
import urllib.request
from collections.abc import Iterator

import pytest
from click.testing import CliRunner
from prometheus_client.parser import text_string_to_metric_families

from bridge.drivers.spark.fifo import FifoPlanner
from bridge.plugin.daemon import PolicyDaemon, serve as serve_command
from bridge.plugin.host import PolicyHost
from bridge.plugin.metrics import start_exporter
from tests.unit.test_spark_transport_submit import KEY_A, TOKEN, connect, exchange, round_msg, serve

ATTACH = {"v": 2, "kind": "attach", "app": "a", "policy": "spark-fifo", "params": {}}


@pytest.fixture
def daemon() -> Iterator[PolicyDaemon]:
    server = serve(PolicyDaemon(("127.0.0.1", 0), PolicyHost(FifoPlanner()), token=TOKEN))
    exporter, _ = start_exporter(server.host.metrics, "127.0.0.1", 0)
    server.metrics_url = f"http://127.0.0.1:{exporter.server_port}/metrics"  # type: ignore[attr-defined]
    yield server
    exporter.shutdown()
    exporter.server_close()
    server.shutdown()
    server.server_close()


def scrape(daemon: PolicyDaemon) -> dict[tuple[str, frozenset], float]:
    """(sample name, labels) -> value, as Prometheus' own parser reads the page."""
    with urllib.request.urlopen(daemon.metrics_url, timeout=5) as answer:  # type: ignore[attr-defined]
        assert answer.headers["Content-Type"].startswith("text/plain")
        text = answer.read().decode()
    return {(s.name, frozenset(s.labels.items())): s.value
            for family in text_string_to_metric_families(text) for s in family.samples}


def test_the_counters_move_with_what_the_daemon_serves(daemon: PolicyDaemon) -> None:
    before = scrape(daemon)
    assert before[("schedbridge_host_rounds_total", frozenset({("outcome", "placed")}))] == 0
    assert before[("schedbridge_serve_connections", frozenset())] == 0
    s, f = connect(daemon, KEY_A)
    with s, f:
        assert exchange(f, ATTACH)["attached"]
        assert exchange(f, {**ATTACH, "policy": "hawk"})["refused"]
        placed = exchange(f, round_msg("app-A"))
        assert exchange(f, {**round_msg("app-B", snapshot=False), "round": 2})["resync"]
        during = scrape(daemon)
        assert exchange(f, {"v": 2, "kind": "detach", "app": "app-A"})["detached"]
    granted = sum(g["slots"] for g in placed["assign"])
    assert granted == 2  # FIFO fills the two free slots
    assert during[("schedbridge_serve_connections", frozenset())] == 1
    assert during[("schedbridge_host_applications", frozenset())] == 1
    after = scrape(daemon)
    assert after[("schedbridge_host_rounds_total", frozenset({("outcome", "placed")}))] == 1
    assert after[("schedbridge_host_rounds_total", frozenset({("outcome", "resync")}))] == 1
    assert after[("schedbridge_host_rounds_total", frozenset({("outcome", "policy_error")}))] == 0
    assert after[("schedbridge_host_attaches_total", frozenset({("result", "accepted")}))] == 1
    assert after[("schedbridge_host_attaches_total", frozenset({("result", "refused")}))] == 1
    assert after[("schedbridge_host_detaches_total", frozenset())] == 1
    assert after[("schedbridge_host_granted_slots_total", frozenset())] == granted
    assert after[("schedbridge_host_plan_seconds_count", frozenset())] == 1
    assert after[("schedbridge_host_applications", frozenset())] == 0


def test_a_refused_round_is_counted_as_refused() -> None:
    host = PolicyHost()  # no policy until an attach
    reply = json.loads(host.handle(json.dumps(round_msg("app-A"))))
    assert reply["error"].startswith("no policy yet")
    assert host.metrics.rounds.labels("refused")._value.get() == 1


def test_serve_refuses_a_metrics_port_out_of_range() -> None:
    result = CliRunner().invoke(serve_command, ["--policy", "fifo", "--metrics-port", "70000"])
    assert result.exit_code == 2 and "--metrics-port" in result.output
