"""Spark's state per application as the plugin reports it, shared by every application of a host.

Rebuilt from a snapshot whenever the plugin (re)connects or a round failed, then kept current
by the batched listener events. The policy host owns it; planners read it.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from bridge.protocol.messages import (
    ExecutorAdded,
    ExecutorRemoved,
    JobEnd,
    JobStart,
    LiveEvent,
    PolicyRequest,
    TaskEnd,
    TaskStart,
    parse_event,
)


@dataclass
class AppState:
    """One Spark application: its executors, running tasks and active jobs."""

    app: str
    request: PolicyRequest | None = None
    executors: dict[str, ExecutorAdded] = field(default_factory=dict)
    running: dict[int, TaskStart] = field(default_factory=dict)
    jobs: dict[int, JobStart] = field(default_factory=dict)

    def apply(self, ev: LiveEvent) -> None:
        match ev:
            case ExecutorAdded():
                self.executors[ev.executor] = ev
            case ExecutorRemoved():
                self.executors.pop(ev.executor, None)
            case TaskStart():
                self.running[ev.task] = ev
            case TaskEnd():
                self.running.pop(ev.task, None)
            case JobStart():
                self.jobs[ev.job] = ev
            case JobEnd():
                self.jobs.pop(ev.job, None)


def from_snapshot(app: str, snapshot: Mapping[str, Any], request: PolicyRequest | None) -> AppState:
    """An application's state rebuilt from the plugin's full snapshot."""
    state = AppState(app, request)
    for key in ("executors", "jobs", "running"):
        for raw in snapshot.get(key, ()):
            state.apply(parse_event(raw))
    return state


class LiveCluster:
    """Every connected application's state: what one shared policy sees."""

    def __init__(self) -> None:
        self._apps: dict[str, AppState] = {}

    def __contains__(self, app: str) -> bool:
        return app in self._apps

    def __iter__(self) -> Iterator[AppState]:
        return iter(self._apps.values())

    def app(self, app: str) -> AppState:
        return self._apps[app]

    def reset(self, app: str, snapshot: Mapping[str, Any], request: PolicyRequest | None) -> AppState:
        self._apps[app] = from_snapshot(app, snapshot, request)
        return self._apps[app]

    def forget(self, app: str) -> None:
        self._apps.pop(app, None)

    def apply(self, app: str, events: Iterable[LiveEvent]) -> None:
        state = self._apps[app]
        for ev in events:
            state.apply(ev)
