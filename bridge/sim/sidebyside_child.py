"""The child of ``schedbridge bench sim --baseline`` (``bridge.sim.sidebyside``): one policy of one
tree, simulated in this fresh process, printed as one JSON row.

Run by path with the tree under test first on ``sys.path``: it imports only interfaces every tree
has (``bridge.sim.bench.trace_jobs``, ``bridge.sim.engine.Simulation``, ``policies.registry``, the
metrics module) and nothing at module level, so it never loads this tree's code into the child.
"""
from __future__ import annotations

import json
import resource
import sys
import time
from collections.abc import Sequence
from typing import Any

PERCENTILES = ("p50", "p90", "p99")
CLASSES = ("short", "long")


def _child_main(argv: Sequence[str]) -> None:
    """In the child: import the tree at ``argv[0]`` (with ``policies`` from ``argv[1]`` if set),
    simulate, print one JSON row."""
    root, policies_from, policy, n_jobs, nodes, load, trace = argv
    sys.path[0] = root                 # not this file's directory: the tree under test
    if policies_from:
        sys.path.insert(0, policies_from)
    from bridge.sim.bench import trace_jobs
    from bridge.sim.engine import Simulation
    try:
        from policies.framework.api import ClusterSpec, PolicyEnv
        from policies.framework.registry import config_for, create
    except ModuleNotFoundError:           # a tree older than policies/framework
        from policies.api import ClusterSpec, PolicyEnv  # type: ignore[import-not-found,no-redef]
        from policies.registry import config_for, create  # type: ignore[import-not-found,no-redef]
    from workloads.synthetic import get_kind, trace_settings

    jobs = trace_jobs(trace, int(n_jobs), int(nodes), float(load))
    spec = ClusterSpec(int(nodes))
    pol = create(policy, PolicyEnv(spec, 1), config_for(policy, trace_settings(trace, policy)))
    w0, c0 = time.perf_counter(), time.process_time()
    res = Simulation(jobs, pol, spec).run()
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    sim_rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024   # before any percentile
    summary = _percentiles(res, get_kind(trace).policy_parameters()["cutoff"])
    import bridge.cluster.kernel as kernel_module
    registry_module = sys.modules[create.__module__]
    core = sys.modules.get("policies.framework.compiled") or sys.modules.get("policies.compiled")  # absent in
    # trees older than the compiled core
    print(json.dumps({
        "policy": policy, "events": res.events, "cpu_s": round(cpu, 4), "wall_s": round(wall, 4),
        "sim_peak_rss_mb": round(sim_rss, 1), "pandas": "pandas" in sys.modules,
        "core": core.CORE.describe() if core else "simulator core: pure Python (no compiled core in this tree)",
        "unfinished": len(res.unfinished), "engine": kernel_module.__file__, "policies": registry_module.__file__,
        "jct": {c: {p: summary[c][p] for p in PERCENTILES} for c in CLASSES}}))


def _percentiles(res: Any, cutoff: float) -> dict[str, dict[str, float]]:
    """Short/long completion-time percentiles by ``bridge.common.metrics``: on numpy arrays where the tree
    has ``class_stats`` (no pandas in the child, so its peak RSS is the simulation's), through the
    pandas job table in older trees."""
    import numpy as np

    try:
        from bridge.common import metrics
    except ImportError:  # a tree from before bridge/common
        from bridge import metrics  # type: ignore[attr-defined,no-redef]

    if not hasattr(metrics, "class_stats"):
        return metrics.completion_summary(res.job_table(), cutoff)
    fin = res.log.job_finish
    jct = np.array([fin.get(j.job_id, np.nan) - j.submit for j in res.jobs], dtype=float)
    long = np.array([j.work / j.n_tasks > cutoff for j in res.jobs], dtype=bool)
    return metrics.class_stats(jct, long)


if __name__ == "__main__":
    _child_main(sys.argv[1:])
