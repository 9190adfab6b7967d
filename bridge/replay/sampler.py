"""Cluster utilization over a replay, sampled from the ResourceManager's REST API.

Each sample has the cluster-wide figures (`/ws/v1/cluster/metrics`) and the vcores and memory
held by this run's own applications (running apps carrying the run's tag): on a cluster shared
with other users only the latter measure the replayed policy.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from yarnclient.errors import YarnError
from yarnclient.resourcemanager import ResourceManagerClient


@dataclass(frozen=True)
class Sample:
    time_s: float
    vcores_allocated: int
    vcores_total: int
    memory_mb_allocated: int
    memory_mb_total: int
    containers: int
    apps_running: int
    apps_pending: int
    run_vcores_allocated: int
    run_memory_mb_allocated: int


def fetch_sample(rm: ResourceManagerClient, run_tag: str, time_s: float) -> Sample:
    m = rm.metrics()
    own = [a.raw for a in rm.apps(states=["RUNNING"])
           if run_tag in a.raw.get("applicationTags", "").split(",")]
    return Sample(time_s, m.vcores_allocated, m.vcores_total, m.memory_mb_allocated,
                  m.memory_mb_total, m.containers_allocated, m.apps_running, m.apps_pending,
                  sum(int(a.get("allocatedVCores", 0)) for a in own),
                  sum(int(a.get("allocatedMB", 0)) for a in own))


class UtilizationSampler:
    """A daemon thread taking one sample every `interval_s`; a failed poll is skipped, not fatal."""

    def __init__(self, rm: ResourceManagerClient, run_tag: str, interval_s: float = 1.0,
                 clock: Callable[[], float] = time.time) -> None:
        self._rm, self._tag, self._t0, self._interval, self._clock = rm, run_tag, 0.0, interval_s, clock
        self._samples: list[Sample] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="utilization-sampler", daemon=True)

    def start(self, t0: float) -> None:
        """Sample from now on; times are seconds since `t0` (epoch seconds)."""
        self._t0 = t0
        self._thread.start()

    def _loop(self) -> None:
        while not self._stop.is_set():
            try:
                self._samples.append(fetch_sample(self._rm, self._tag, self._clock() - self._t0))
            except YarnError:
                pass
            self._stop.wait(self._interval)

    def stop(self) -> pd.DataFrame:
        """Stop sampling; returns the samples taken."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join()
        return pd.DataFrame(list(self._samples), columns=list(Sample.__dataclass_fields__))
