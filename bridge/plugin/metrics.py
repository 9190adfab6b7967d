"""``schedbridge serve``'s counters as Prometheus metrics (``prometheus-client``), scraped at ``GET /metrics``.

What an operator watches on a shared policy host: how many rounds it answers and how (placed, the
policy raised, refused by a cap or a mismatch, resync), how long the policy takes, how many of the
plugin's launches ahead the policy confirmed, how often it stopped predicting for an application
whose launches ahead mostly missed, attaches accepted and refused, the applications and connections
it holds, and applications it forgot.
No label names an application: a label per application id would grow without bound.

The exporter is a second port beside the daemon's, which speaks the plugin's line protocol, not
HTTP. Unlike the node agents' page (on their own authenticated API), it has no token, so it is
off unless ``serve --metrics-port`` asks for it, and on loopback unless ``--metrics-host`` names
another address: the counters say how busy the host is, which is nobody's business off the host.
"""
from __future__ import annotations

from collections.abc import Callable
from threading import Thread
from wsgiref.simple_server import WSGIServer

from prometheus_client import CollectorRegistry, Counter, Gauge, Summary, start_http_server

ROUND_OUTCOMES = ("placed", "policy_error", "refused", "resync")


class HostMetrics:
    """A policy host's and its daemon's metrics, in a registry of their own (one per host, so two
    hosts in one process, as in tests, count apart)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.rounds = Counter("schedbridge_host_rounds", "Offer rounds answered, by outcome: placed (a "
                              "placement), policy_error (the policy raised), refused (a cap, a mismatch or "
                              "a malformed round), resync (no state for the application: snapshot asked).",
                              ("outcome",), registry=r)
        for outcome in ROUND_OUTCOMES:
            self.rounds.labels(outcome)  # each outcome is 0 before it happens, not absent
        self.plan_seconds = Summary("schedbridge_host_plan_seconds", "Time the policy took to plan a round.",
                                    registry=r)
        self.granted_slots = Counter("schedbridge_host_granted_slots", "Slots the policy granted.", registry=r)
        self.preemptions = Counter("schedbridge_host_preemptions", "Task attempts the policy asked to preempt.",
                                   registry=r)
        self.ahead = Counter("schedbridge_host_ahead_launches", "Tasks the plugin launched on a "
                                   "prediction before asking, by outcome: hit (the policy's decision, bound to "
                                   "its grant), miss (not the policy's: withdrawn).", ("outcome",), registry=r)
        for outcome in ("hit", "miss"):
            self.ahead.labels(outcome)
        self.ahead_pauses = Counter("schedbridge_host_ahead_pauses", "Times the host stopped predicting for an "
                                    "application whose launches ahead mostly missed (each pause lasts some of its "
                                    "task ends, then the host predicts again).", registry=r)
        self.attaches = Counter("schedbridge_host_attaches", "Applications' attaches, by result: accepted, "
                                "refused (another policy or other parameters).", ("result",), registry=r)
        for result in ("accepted", "refused"):
            self.attaches.labels(result)
        self.detaches = Counter("schedbridge_host_detaches", "Applications that detached (their SparkContext "
                                "stopped).", registry=r)
        self.forgotten = Counter("schedbridge_serve_forgotten", "Applications forgotten without a detach, by "
                                 "reason: no_connection (--app-timeout), idle (not named), crowded (too many "
                                 "keys without connections).", ("reason",), registry=r)
        for reason in ("no_connection", "idle", "crowded"):
            self.forgotten.labels(reason)
        self.applications = Gauge("schedbridge_host_applications", "Applications the host keeps a state for.",
                                  registry=r)
        self.connections = Gauge("schedbridge_serve_connections", "Logged-in connections open now.", registry=r)

    def count_applications(self, count: Callable[[], int]) -> None:
        """The applications gauge reads ``count()`` when scraped."""
        self.applications.set_function(count)


def start_exporter(metrics: HostMetrics, host: str, port: int) -> tuple[WSGIServer, Thread]:
    """Serves ``metrics`` at ``http://host:port/metrics`` on a daemon thread; ``port`` 0 picks a free
    one (``server.server_port``). Stop with ``server.shutdown()`` and ``server.server_close()``."""
    return start_http_server(port, host, registry=metrics.registry)
