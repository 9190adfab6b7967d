"""The agent's counters, served as Prometheus text (exposition format 0.0.4) at `GET /metrics`.

Operators already scrape their nodes with Prometheus; a page in its own format lets them watch how
often containers are suspended, how many leases lapse (a controller that died or lost the network)
and whether the reconcile loop keeps up, without a client library (none is a dependency here).
Counters are bumped by the server and the service; gauges are sampled from the agent when scraped.
"""
from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
Labels = tuple[tuple[str, str], ...]  # (name, value) pairs, in the order they are printed
Samples = Mapping[Labels, float]


@dataclass(frozen=True)
class Family:
    name: str
    kind: str  # counter, gauge or summary
    help: str
    labels: tuple[str, ...] = ()


FAMILIES = (
    Family("schedbridge_agent_containers", "gauge",
           "Containers the agent manages or its NodeManager lists as running, by state: running (full "
           "size), suspended (minimum share or frozen), resized (another CPU cap).", ("state",)),
    Family("schedbridge_agent_leases_held", "gauge", "Throttles held under a lease now."),
    Family("schedbridge_agent_nodemanager_reachable", "gauge",
           "1 if the last reconciliation reached the NodeManager, else 0."),
    Family("schedbridge_agent_suspends_total", "counter", "Suspend commands applied (freezes included)."),
    Family("schedbridge_agent_resumes_total", "counter", "Resume commands applied."),
    Family("schedbridge_agent_resizes_total", "counter", "Resize commands applied."),
    Family("schedbridge_agent_lease_renewals_total", "counter", "Leases renewed by a controller."),
    Family("schedbridge_agent_lease_expiries_total", "counter",
           "Leases that ran out (their controller stopped renewing): the container went back to full size."),
    Family("schedbridge_agent_requests_total", "counter", "HTTP requests answered, by method, endpoint and status.",
           ("method", "endpoint", "status")),
    Family("schedbridge_agent_connections_refused_total", "counter",
           "Connections closed unserved, by reason: unauthorized (missing or wrong token), displaced "
           "(an unauthenticated connection pushed out by a newer one, see admission).", ("reason",)),
    Family("schedbridge_agent_reconcile_duration_seconds", "summary", "Time each reconciliation took."),
)


class AgentMetrics:
    """Counters and the reconcile-time summary; thread-safe (the server's loop and workers and the
    reconcile loop all bump them)."""

    def __init__(self) -> None:
        self._counts: defaultdict[tuple[str, Labels], float] = defaultdict(float)
        self._lock = threading.Lock()

    def inc(self, name: str, amount: float = 1, /, **labels: str) -> None:
        with self._lock:
            self._counts[(name, tuple(labels.items()))] += amount

    def observe(self, name: str, value: float) -> None:
        """One observation of summary `name`: its `_sum` and `_count` series."""
        with self._lock:
            self._counts[(f"{name}_sum", ())] += value
            self._counts[(f"{name}_count", ())] += 1

    def exposition(self, sampled: Mapping[str, Samples]) -> str:
        """Every family, its samples from the counters and from `sampled` (gauges read at scrape time)."""
        with self._lock:
            counts = dict(self._counts)
        lines = []
        for family in FAMILIES:
            lines += [f"# HELP {family.name} {family.help}", f"# TYPE {family.name} {family.kind}"]
            names = (f"{family.name}_sum", f"{family.name}_count") if family.kind == "summary" else (family.name,)
            for name in names:
                samples: dict[Labels, float] = {labels: value for (n, labels), value in counts.items() if n == name}
                samples.update(sampled.get(name, {}))
                lines += [f"{name}{_labels(labels)} {_number(value)}" for labels, value in sorted(samples.items())]
                if not samples and not family.labels:
                    lines.append(f"{name} 0")  # a counter that has not moved yet is 0, not absent
        return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    """Exact for counts (no exponent that drops digits), Python's shortest repr otherwise."""
    return str(int(value)) if float(value).is_integer() else repr(float(value))


def _labels(labels: Labels) -> str:
    if not labels:
        return ""
    return "{" + ",".join(f'{key}="{_escape(value)}"' for key, value in labels) + "}"


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
