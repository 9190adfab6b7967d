"""A Spark job's stage DAG, as the successors of one of its stages (``Job.successors``).

Live, each runnable stage is a policy job of its own; the stages after it in its Spark job (from
the listener's ``job_start``, which lists every stage with its parents) have not been submitted
yet. They become the job's successors, with their real task counts, so that dependency-aware
priorities (Falcon's Eq. 2) see the downstream work a stage unblocks.
"""
from __future__ import annotations

from bridge.protocol.messages import JobStart
from workloads.dag import ancestors, topological_order
from workloads.model import Successor


def successors_of(job: JobStart, stage: int, estimate: float) -> tuple[Successor, ...]:
    """The stages of ``job`` that depend on ``stage``, parents first, each waiting for ``stage``
    (-1) or for earlier entries; parents on other branches are not ``stage``'s concern."""
    specs = {st.stage: st for st in job.stages}
    ancestry = ancestors({s: [p for p in st.parents if p in specs] for s, st in specs.items()})
    below = {s for s, anc in ancestry.items() if stage in anc}
    order = topological_order({s: [p for p in specs[s].parents if p in below] for s in sorted(below)})
    index = {s: k for k, s in enumerate(order)}
    return tuple(Successor(max(specs[s].tasks, 1), estimate,
                           tuple(sorted({-1 if p == stage else index[p]
                                         for p in specs[s].parents if p == stage or p in below})))
                 for s in order)
