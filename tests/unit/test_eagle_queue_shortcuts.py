"""Eagle's node queues skip two scans: the look for probes of finished jobs when no job left since
the node last found none, and SRPT's pick when the queue holds one job's probes (its first free
entry). Neither changes a decision: the same runs with both scans made at every step give the
same records, on a few nodes whose queues hold one large stage at a time and several at once."""
import random

import pytest

from bridge.sim.engine import simulate
from policies.framework import registry
from policies.framework.api import ClusterSpec, PolicyEnv
from tests.unit.source_module import load_source
from workloads.model import Job

def _jobs() -> list[Job]:
    """Large stages arriving alone (one job per queue), bursts that share the queues, and long
    jobs (over the 1 s cutoff) whose nodes refuse short probes, re-sent after their job may be gone."""
    rng = random.Random(7)
    jobs, t = [], 0.0
    for j in range(60):
        t += rng.choice((0.05, 0.4, 6.0))
        n = rng.choice((3, 40, 300))
        mean = rng.choice((0.1, 0.1, 0.1, 2.0))
        jobs.append(Job(j, t, tuple(rng.uniform(0.2, 1.8) * mean for _ in range(n))))
    return jobs


def _records(policy_class, params: dict[str, str]) -> list:
    spec = ClusterSpec(3, 2, network_delay=0.05)
    config = registry.config_for("eagle", {"min_probes": "2", "cutoff": "1.0", **params})
    result = simulate(_jobs(), policy_class(config, PolicyEnv(spec, 5)), spec, record=True)
    assert result.unfinished == []
    return result.log.records


@pytest.mark.parametrize("params", [{}, {"integer_estimates": "false"}, {"sss": "false"}, {"sbp_srpt": "false"},
                                    {"queue_pick": "last_fit", "integer_estimates": "false"}])
def test_skipping_the_scans_decides_as_scanning(params, monkeypatch):
    module = load_source("policies/eagle/eagle.py", monkeypatch)
    shortcuts = []

    class Scanning(module.Eagle):  # type: ignore[misc, valid-type]
        def _next(self, node, slot, view):
            self.nodes.checked[node] = -1    # look for finished jobs' probes every time
            self.discipline.first_of_one_job = False
            return super()._next(node, slot, view)

    class Counting(module.Eagle):  # type: ignore[misc, valid-type]
        def _next(self, node, slot, view):
            solo = self.nodes.solo[node]
            assert solo < 0 or all(e.probe.job_id == solo for e in self.nodes.queues[node])
            shortcuts.append((self.nodes.checked[node] == self.gone, solo >= 0))
            return super()._next(node, slot, view)

    assert _records(Counting, params) == _records(Scanning, params)
    assert any(skip for skip, _ in shortcuts) and any(one for _, one in shortcuts)
    assert not all(one for _, one in shortcuts)  # queues shared by several jobs too
