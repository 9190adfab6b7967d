"""The preemptive workers keep each node's waiting tasks in start order (arrivals inserted, started
tasks removed, re-ranked at a new instant with one priority per priority class, rebuilt after a
suspension): that changes no decision. The same runs with the order rebuilt at every step give the
same records, on DAG jobs and on bursts of large flat stages that preempt."""
import random

import pytest

import policies.falcon.tiers as tiers
from bridge.sim.engine import simulate
from policies.framework import registry
from policies.framework.api import ClusterSpec, PolicyEnv, Suspend
from tests.unit.source_module import load_source
from workloads.model import Job
from workloads.multires import dag_jobs


def _pure_workers(monkeypatch) -> type:
    """The source's class (the compiled one takes no interpreted subclass)."""
    return load_source("policies/common/preemptive.py", monkeypatch).PreemptiveWorkers


def _flat_bursts() -> list[Job]:
    rng = random.Random(4)
    sizes = (300, 20, 200, 40, 300, 10)
    return [Job(j, 3.0 * j, tuple(rng.uniform(0.05, 2.0) for _ in range(n)),
                demands=tuple((1.0, 2.0) for _ in range(n))) for j, n in enumerate(sizes)]


def _uniform_bursts() -> list[Job]:
    """Flat stages whose tasks share one estimate: one priority class per stage."""
    sizes = (300, 20, 200, 40, 300, 10)
    estimates = (2.0, 0.05, 1.0, 0.1, 1.5, 0.05)
    return [Job(j, 3.0 * j, tuple(estimates[j] for _ in range(n)),
                demands=tuple((1.0, 2.0) for _ in range(n))) for j, n in enumerate(sizes)]


def _records(policy: str, spec: ClusterSpec, jobs: list[Job], workers: type, monkeypatch) -> list:
    monkeypatch.setattr(tiers, "PreemptiveWorkers", workers)
    pol = registry.create(policy, PolicyEnv(spec, 5), registry.config_for(policy, {}))
    result = simulate(jobs, pol, spec, switch_cost=0.002, record=True)
    assert result.unfinished == []
    return result.log.records


@pytest.mark.parametrize("policy", ["falcon", "natjam", "amoeba"])
@pytest.mark.parametrize("case", ["dag", "bursts", "uniform"])
def test_keeping_the_order_for_the_instant_decides_as_rebuilding_it(policy, case, monkeypatch):
    pure = _pure_workers(monkeypatch)
    taken, carried = [], []

    class Counting(pure):  # type: ignore[misc, valid-type]
        def step(self, node, view):
            kept = self._order.get(node)
            taken.append(kept is not None and kept[0] == view.now)
            carried.append(kept is not None and kept[0] != view.now)
            return super().step(node, view)

    class Rebuilt(pure):  # type: ignore[misc, valid-type]
        def step(self, node, view):
            self._order.pop(node, None)
            return super().step(node, view)

    if case == "dag":
        spec = ClusterSpec(4, 6, dag_jobs.RESOURCES, dag_jobs.WORKER, 0.0005)
        jobs = dag_jobs.generate(dag_jobs.DagSpec(12, 50.0), seed=3)
    else:
        spec = ClusterSpec(1, 16, dag_jobs.RESOURCES, (16.0, 64.0), 0.0005)
        jobs = _flat_bursts() if case == "bursts" else _uniform_bursts()
    fast = _records(policy, spec, jobs, Counting, monkeypatch)
    full = _records(policy, spec, jobs, Rebuilt, monkeypatch)
    assert fast == full
    assert any(isinstance(d, Suspend) for _ev, ds in full for d in ds)  # runs that preempt
    assert any(carried)  # orders carried into a later instant, re-ranked
    if case != "dag":  # a busy node taking stages of hundreds of tasks at once: mostly kept
        assert sum(taken) > len(taken) / 4, (sum(taken), len(taken))
