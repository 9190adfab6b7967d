"""The agent's counters, served as Prometheus text (exposition format 0.0.4) at `GET /metrics`.

Operators already scrape their nodes with Prometheus; a page in its own format lets them watch how
often containers are suspended, how many leases lapse (a controller that died or lost the network)
and whether the reconcile loop keeps up. The server and the service bump counters and the summary
(`prometheus-client`'s, thread-safe); gauges, and the lease expiries the lease table counts, are
sampled from the agent when scraped.
"""
from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from prometheus_client import CollectorRegistry, Counter, Summary, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_PLAIN_0_0_4
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

CONTENT_TYPE = CONTENT_TYPE_PLAIN_0_0_4
Labels = tuple[tuple[str, str], ...]  # (name, value) pairs
Samples = Mapping[Labels, float]


@dataclass(frozen=True)
class Family:
    name: str
    kind: str  # counter, gauge or summary
    help: str
    labels: tuple[str, ...] = ()
    sampled: bool = False  # read from the agent at scrape time, not bumped


FAMILIES = (
    Family("schedbridge_agent_containers", "gauge",
           "Containers the agent manages or its NodeManager lists as running, by state: running (full "
           "size), suspended (minimum share or frozen), resized (another CPU cap).", ("state",), sampled=True),
    Family("schedbridge_agent_leases_held", "gauge", "Throttles held under a lease now.", sampled=True),
    Family("schedbridge_agent_nodemanager_reachable", "gauge",
           "1 if the last reconciliation reached the NodeManager, else 0.", sampled=True),
    Family("schedbridge_agent_suspends_total", "counter", "Suspend commands applied (freezes included)."),
    Family("schedbridge_agent_resumes_total", "counter", "Resume commands applied."),
    Family("schedbridge_agent_resizes_total", "counter", "Resize commands applied."),
    Family("schedbridge_agent_lease_renewals_total", "counter", "Leases renewed by a controller."),
    Family("schedbridge_agent_lease_expiries_total", "counter",
           "Leases that ran out (their controller stopped renewing): the container went back to full size.",
           sampled=True),
    Family("schedbridge_agent_requests_total", "counter", "HTTP requests answered, by method, endpoint and status.",
           ("method", "endpoint", "status")),
    Family("schedbridge_agent_connections_refused_total", "counter",
           "Connections closed unserved, by reason: unauthorized (missing or wrong token), displaced "
           "(an unauthenticated connection pushed out by a newer one, see admission).", ("reason",)),
    Family("schedbridge_agent_reconcile_duration_seconds", "summary", "Time each reconciliation took."),
)


class AgentMetrics:
    """The families above in a registry of the agent's own; thread-safe (the server's loop and
    workers and the reconcile loop all bump them)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self._counter_of = {f.name: Counter(f.name, f.help, f.labels, registry=self.registry)
                          for f in FAMILIES if f.kind == "counter" and not f.sampled}
        self._summary_of = {f.name: Summary(f.name, f.help, f.labels, registry=self.registry)
                           for f in FAMILIES if f.kind == "summary"}
        self._sampled: Mapping[str, Samples] = {}
        self._scrape = threading.Lock()  # one scrape's samples at a time
        self.registry.register(_Sampled(self))

    def inc(self, name: str, amount: float = 1, /, **labels: str) -> None:
        counter = self._counter_of[name]
        (counter.labels(**labels) if labels else counter).inc(amount)

    def observe(self, name: str, value: float) -> None:
        """One observation of summary `name`: its `_sum` and `_count` series."""
        self._summary_of[name].observe(value)

    def exposition(self, sampled: Mapping[str, Samples]) -> str:
        """Every family: the bumped ones as they stand, the sampled ones from `sampled` (read now)."""
        with self._scrape:
            self._sampled = sampled
            try:
                return generate_latest(self.registry).decode()
            finally:
                self._sampled = {}


class _Sampled:
    """The sampled families of one scrape (prometheus-client's custom collector protocol)."""

    def __init__(self, metrics: AgentMetrics) -> None:
        self._metrics = metrics

    def describe(self) -> list[Metric]:
        return []  # nothing to check at registration: the names are the table's

    def collect(self) -> Iterator[Metric]:
        sampled = self._metrics._sampled
        for f in FAMILIES:
            if not f.sampled:
                continue
            metric: Metric = (GaugeMetricFamily(f.name, f.help, labels=f.labels) if f.kind == "gauge"
                              else CounterMetricFamily(f.name, f.help, labels=f.labels))
            samples = sampled.get(f.name, {})
            for labels, value in sorted(samples.items()):
                metric.add_metric([v for _, v in labels], value)  # type: ignore[attr-defined]
            if not samples and not f.labels:
                metric.add_metric([], 0.0)  # type: ignore[attr-defined]  # 0 before the first scrape's value
            yield metric
