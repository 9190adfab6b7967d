"""Ursa's synthetic "expectable performance" workload (§5.3, Figs. 8–10), scaled down.

Each job has 5 stages; a stage is a CPU phase (``parallelism`` one-core monotasks of
``cpu_s`` seconds) followed by a shuffle (as many one-slot network monotasks of ``net_s``
seconds), with barriers between phases. Parallelism equals the cluster's cores, so one
job's phase fills the cluster. All jobs are submitted at time 0 in id order.

``monotasks=False`` gives the executor-style reading: each task holds its core and its
network slot for the whole stage (``cpu_s + net_s``), as a Spark task that fetches and
computes in one thread would.
"""
from __future__ import annotations

from workloads.model import Job

RESOURCES = ("cpu", "net", "mem")


def capacity(cores: int, net_slots: int, mem: float = 64.0) -> tuple[float, float, float]:
    return (float(cores), float(net_slots), mem)


def generate(jobs: int, parallelism: int, *, stages: int = 5, cpu_s: float = 4.0, net_s: float = 4.0,
             mem: float = 1.0, monotasks: bool = True) -> list[Job]:
    out = []
    for j in range(jobs):
        phases = ([((1.0, 0.0, mem), cpu_s), ((0.0, 1.0, mem), net_s)] * stages if monotasks
                  else [((1.0, 1.0, mem), cpu_s + net_s)] * stages)
        demands, durations, stage_of = [], [], []
        for s, (demand, dur) in enumerate(phases):
            demands += [demand] * parallelism
            durations += [dur] * parallelism
            stage_of += [s] * parallelism
        stage_parents = tuple(() if s == 0 else (s - 1,) for s in range(len(phases)))
        out.append(Job(j, 0.0, tuple(durations), demands=tuple(demands), stage_of=tuple(stage_of),
                       stage_parents=stage_parents, name=f"staircase-{j}"))
    return out


def ideal_jct(k: int, stages: int = 5, cpu_s: float = 4.0, net_s: float = 4.0) -> float:
    """Closed form under EJF with monotasks when cpu_s = net_s (1-based job k): jobs run in
    pairs, the second one CPU phase behind the first; a pair takes stages·(cpu_s + net_s)."""
    pair, second = divmod(k - 1, 2)
    return (pair + 1) * stages * (cpu_s + net_s) + second * cpu_s
