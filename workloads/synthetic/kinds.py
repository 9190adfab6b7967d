"""The named synthetic trace kinds of the thesis and `generate`, which turns a kind into a trace.

Centroids are "our reading": the thesis (§2.4.1) derives them from Chen et al. [20, 21] but does
not print them, so each kind's centroids are calibrated to reproduce what the thesis does print
(Tables 2.1, 2.2, 3.1: % long jobs and % long task-seconds under the simulator's cutoff; about
1.2 M tasks for the Yahoo trace). `docs/reproduction.md` lists measured against published values.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from workloads.synthetic.base import (
    TraceJob,
    TraceStats,
    assemble,
    interarrival_for_load,
    poisson_submit_times,
    trace_stats,
)
from workloads.synthetic.draws import Category, CategoryWorkload, CentroidWorkload, JobClass, JobDrawer


@dataclass(frozen=True)
class TraceKind:
    """A workload and the setting the thesis uses it in.

    `native_interarrival` fixes the arrival rate (the thesis keeps it constant and varies the
    cluster size); kinds without one get the rate that offers `default_load` on `default_nodes`.
    `cutoff` is the simulator's long/short cutoff (mean task duration, seconds),
    `short_partition_pct` the matching Hawk/Eagle short-only partition, and `las_quantum` the
    Kairos quantum W the thesis uses on this trace (None: the policy's default).
    """

    name: str
    description: str
    workload: JobDrawer
    cutoff: float
    short_partition_pct: float
    default_jobs: int
    default_nodes: int
    native_interarrival: float | None = None
    default_load: float = 0.95
    las_quantum: float | None = None

    def policy_parameters(self) -> dict[str, float]:
        """The values this trace gives the policy parameters of the same name."""
        values = {"cutoff": self.cutoff, "big_partition": 100 - self.short_partition_pct,
                  "w": self.las_quantum}
        return {key: value for key, value in values.items() if value is not None}


# Kairos Table 4.1 as a single-stage bag of map tasks (the thesis' synthetic traces also keep only
# mappers). A category's task duration is its stand-alone runtime divided by its number of map
# waves on the 120-core testbed, so a job alone takes the table's "duration". Our reading.
_KAIROS_CORES = 120


def _kairos_category(name: str, maps: int, alone: float, probability: float) -> Category:
    waves = -(-maps // _KAIROS_CORES)
    return Category(name, maps, alone / waves, probability)


_KAIROS_TABLE_4_1 = (
    _kairos_category("small", 15, 85.0, 0.32),
    _kairos_category("medium small", 15, 201.0, 0.31),
    _kairos_category("medium", 30, 239.0, 0.31),
    _kairos_category("medium long", 112, 308.0, 0.04),
    _kairos_category("long", 224, 1175.0, 0.02),
)

# Chen et al.-style k-means workloads: name, description, classes (share, tasks centroid, mean
# task duration centroid), cutoff, short partition %, thesis job count, nodes, native inter-arrival.
_CENTROID_ROWS = (
    ("yahoo", "Yahoo 2011-like (Chen et al. [21]): 9.41% long jobs, 98.31% long task-seconds",
     ((0.891, 16, 6.0), (0.109, 330, 300.0)), 90.5811, 2, 24262, 4000, None),
    ("cloudera", "Cloudera-c-like (Chen et al. [20]): 5.02% long jobs, 91-92.79% long task-seconds",
     ((0.948, 20, 25.0), (0.052, 150, 900.0)), 272.7830, 9, 21030, 15000, None),
    ("facebook", "Facebook 2010-like (Chen et al. [20]): 2.01% long jobs, 99.79% long task-seconds",
     ((0.978, 3, 2.5), (0.022, 1000, 500.0)), 76.5951, 2, 1169184, 170000, None),
    ("google", "Google 2011-like: 10% long jobs holding ~83% of task-seconds; 1 s mean inter-arrival",
     ((0.868, 8, 110.0), (0.132, 32, 1500.0)), 1129.532, 17, 506460, 15000, 1.0),
)


# Kairos' quantum W in the thesis' simulations: 100 s (its default) except 10,000 s on Google.
_LAS_QUANTUM = {"google": 10000.0}


def _centroid_kind(row: tuple) -> TraceKind:
    name, description, classes, cutoff, partition, jobs, nodes, interarrival = row
    workload = CentroidWorkload(tuple(JobClass(*c) for c in classes))
    quantum = _LAS_QUANTUM.get(name)
    return TraceKind(name, description, workload, cutoff, partition, jobs, nodes, interarrival, las_quantum=quantum)


KINDS: dict[str, TraceKind] = {
    kind.name: kind
    for kind in (
        *map(_centroid_kind, _CENTROID_ROWS),
        TraceKind(
            "hawk-motivation",
            "Hawk Fig 2.1: 95% jobs of 100 x 100 s tasks, 5% of 1000 x 20000 s; Poisson mean 50 s",
            CategoryWorkload(
                (Category("short", 100, 100.0, 0.95), Category("long", 1000, 20000.0, 0.05)),
                exact_shares=True,
            ),
            cutoff=1000.0, short_partition_pct=2, default_jobs=1000, default_nodes=15000,
            native_interarrival=50.0,
        ),
        TraceKind(
            "kairos",
            "Kairos Table 4.1 heavy-tailed WordCount mix (map tasks); Poisson mean 60 s",
            CategoryWorkload(_KAIROS_TABLE_4_1),
            cutoff=270.0, short_partition_pct=5, default_jobs=100, default_nodes=_KAIROS_CORES,
            native_interarrival=60.0,
        ),
        TraceKind(
            "kairos-uniform",
            "Kairos uniform mix: categories 1-3 with 0.35/0.35/0.3; Poisson mean 30 s",
            CategoryWorkload(
                tuple(Category(c.name, c.n_tasks, c.task_duration, p)
                      for c, p in zip(_KAIROS_TABLE_4_1[:3], (0.35, 0.35, 0.3)))
            ),
            cutoff=220.0, short_partition_pct=30, default_jobs=100, default_nodes=_KAIROS_CORES,
            native_interarrival=30.0,
        ),
    )
}


# Which of its trace's parameters (`TraceKind.policy_parameters`) each policy takes in the thesis'
# simulations: Hawk, Eagle and Eagle's DLWL+SRPT baseline the cutoff and long partition, Big-C the
# cutoff, Kairos its W. Every other policy keeps its defaults, although some share a parameter's
# name: LWL's `cutoff = -1` and whole-cluster partitions are what make it the centralized baseline.
TRACE_PARAMETERS: dict[str, tuple[str, ...]] = {
    "hawk": ("cutoff", "big_partition"),
    "eagle": ("cutoff", "big_partition"),
    "dlwl": ("cutoff", "big_partition"),
    "bigc": ("cutoff",),
    "kairos": ("w",),
}


def trace_settings(trace: str, policy: str) -> dict[str, float]:
    """The parameters `policy` takes from trace kind `trace` in the thesis' simulations (cutoff,
    long partition, W), on every trace: explicit even where they equal the policy's defaults."""
    values = get_kind(trace).policy_parameters()
    return {key: values[key] for key in TRACE_PARAMETERS.get(policy, ()) if key in values}


@dataclass(frozen=True)
class GeneratedTrace:
    kind: TraceKind
    jobs: tuple[TraceJob, ...]
    stats: TraceStats


def get_kind(name: str) -> TraceKind:
    try:
        return KINDS[name]
    except KeyError:
        raise KeyError(f"unknown trace kind {name!r}; known kinds: {', '.join(sorted(KINDS))}") from None


def generate(
    name: str, *, jobs: int | None = None, seed: int = 0, load: float | None = None, nodes: int | None = None
) -> GeneratedTrace:
    """Generate a trace of kind `name`.

    Job shapes and arrivals come from two independent seeded streams, so changing the load (or
    the cluster size it is computed for) moves arrivals but never changes the jobs themselves.
    With `load`, the Poisson arrival rate offers that load to `nodes` single-slot nodes; without
    it the kind's native rate is used.
    """
    kind = get_kind(name)
    n_jobs = kind.default_jobs if jobs is None else jobs
    n_nodes = kind.default_nodes if nodes is None else nodes
    if n_jobs < 1:
        raise ValueError(f"--jobs must be at least 1, got {n_jobs}")
    if n_nodes < 1:
        raise ValueError(f"--nodes must be at least 1, got {n_nodes}")
    if load is not None and load <= 0:
        raise ValueError(f"--load must be positive, got {load}")
    shape_seed, arrival_seed = np.random.SeedSequence(seed).spawn(2)
    durations = kind.workload.draw(np.random.default_rng(shape_seed), n_jobs)
    interarrival = _interarrival(kind, durations, load, n_nodes)
    submits = poisson_submit_times(np.random.default_rng(arrival_seed), n_jobs, interarrival)
    if not np.isfinite(submits).all():  # a trace with an infinite time would be written as "inf"
        raise ValueError(f"--load {load} puts the arrival times beyond what a float holds")
    trace = assemble(submits, durations)
    return GeneratedTrace(kind, trace, trace_stats(trace, kind.cutoff, n_nodes))


def _interarrival(kind: TraceKind, durations: list[np.ndarray], load: float | None, nodes: int) -> float:
    if load is None and kind.native_interarrival is not None:
        return kind.native_interarrival
    total = float(sum(float(d.sum()) for d in durations))
    return interarrival_for_load(total, len(durations), load or kind.default_load, nodes)
