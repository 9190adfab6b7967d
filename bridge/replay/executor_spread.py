"""`replay --preempt`: exactly N + Q executors on every NodeManager, sized from their capacities.

A preempting policy's node scheduler needs N + Q executors on each node (Kairos: N running, Q more
for the tasks it preempts for). Raising every node's vcores by Q lets YARN admit that many, but
nothing stops it packing more on one node and fewer on another (measured: 3 + 1 over two
NodeManagers, so one node had no spare executor). Our reading of how to guarantee the spread on any
YARN cluster: size every executor container so that exactly k = N + Q fit on each NodeManager's
memory, with room for the application master on whichever node YARN puts it:

    k * C + AM <= M_i   and   (k + 1) * C > M_i   for every node i,

where C and AM are the executor's and the AM's container sizes after YARN's rounding (up to a
multiple of the scheduler's increment: ``yarn.scheduler.minimum-allocation-mb`` under the
CapacityScheduler, ``yarn.resource-types.memory-mb.increment-allocation`` under the
FairScheduler, both read from the RM's own configuration). Among the sizes that fit we take the
largest (the most memory for the executors); the executor heap stays as configured (default
``DEFAULT_HEAP_MB``) and the rest of C is its memory overhead (the Python workers live there).
The vcores must fit too (k executors and the AM on one node). Once the executors are up, their
containers are counted per NodeManager (RM REST); any other spread stops the replay with the
nodes and counts.
"""
from __future__ import annotations

import math
import re
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from yarnclient.models import AllocatedContainer

DEFAULT_HEAP_MB = 512          # spark.executor.memory when the conf does not set it
MIN_OVERHEAD_MB = 256          # the least memory overhead an executor is given (Python workers)
AM_HEAP_MB, AM_OVERHEAD_MB = 256, 256  # the client-mode AM (ExecutorLauncher: it only asks YARN for
# containers) when not set: a 512 MB container, which leaves room for N + Q = 4 executors on a 4 GB NodeManager
FAIR_SCHEDULER = "FairScheduler"
SIZED_KEYS = ("spark.executor.memoryOverhead", "spark.executor.memoryOverheadFactor",
              "spark.executor.pyspark.memory", "spark.memory.offHeap.enabled")
_SIZE = re.compile(r"^(\d+)([kmgt]?)b?$", re.IGNORECASE)
_UNIT_MB = {"k": 1 / 1024, "": 1, "m": 1, "g": 1024, "t": 1024 * 1024}


class SpreadError(ValueError):
    """The executors cannot be, or were not, spread N + Q per NodeManager (nodes and counts named)."""


@dataclass(frozen=True)
class Node:
    """A NodeManager's capacity as the ResourceManager sees it (vcores already raised by Q)."""

    node_id: str
    vcores: int
    memory_mb: int


@dataclass(frozen=True)
class Sizing:
    """The containers that make exactly ``per_node`` executors fit on each NodeManager."""

    per_node: int
    container_mb: int
    heap_mb: int
    am_heap_mb: int
    am_overhead_mb: int

    def spark_conf(self) -> dict[str, str]:
        """Spark settings that ask YARN for these containers."""
        return {"spark.executor.memory": f"{self.heap_mb}m",
                "spark.executor.memoryOverhead": f"{self.container_mb - self.heap_mb}m",
                "spark.yarn.am.memory": f"{self.am_heap_mb}m",
                "spark.yarn.am.memoryOverhead": f"{self.am_overhead_mb}m"}


def megabytes(value: str, key: str) -> int:
    """A Spark size (``512m``, ``2g``; a bare number is MiB, as Spark reads these keys) in MiB;
    ValueError naming the key."""
    match = _SIZE.match(value.strip())
    if not match:
        raise ValueError(f"{key}: {value!r} is not a size such as 512m or 2g")
    return math.ceil(int(match.group(1)) * _UNIT_MB[match.group(2).lower()])


def increment_mb(rm_conf: Mapping[str, str]) -> int:
    """The step YARN rounds a container's memory up to (see the module docstring)."""
    if FAIR_SCHEDULER in rm_conf.get("yarn.resourcemanager.scheduler.class", ""):
        return int(rm_conf.get("yarn.resource-types.memory-mb.increment-allocation", "1024"))
    return int(rm_conf.get("yarn.scheduler.minimum-allocation-mb", "1024"))


def rounded(mb: int, step: int) -> int:
    """``mb`` as YARN allocates it: up to a multiple of ``step``."""
    return -(-mb // step) * step


def size(nodes: Sequence[Node], per_node: int, conf: Mapping[str, str], step: int) -> Sizing:
    """The largest executor container with exactly ``per_node`` executors on each of ``nodes``
    (and room for the AM on any of them); SpreadError naming the nodes if there is none."""
    if given := [k for k in SIZED_KEYS if k in conf]:
        raise SpreadError(f"--preempt sizes the executor containers itself (N + Q per NodeManager); "
                          f"remove --conf {', '.join(given)}")
    heap = megabytes(conf.get("spark.executor.memory", f"{DEFAULT_HEAP_MB}m"), "spark.executor.memory")
    am_heap = megabytes(conf.get("spark.yarn.am.memory", f"{AM_HEAP_MB}m"), "spark.yarn.am.memory")
    am_overhead = megabytes(conf.get("spark.yarn.am.memoryOverhead", f"{AM_OVERHEAD_MB}m"),
                            "spark.yarn.am.memoryOverhead")
    am = rounded(am_heap + am_overhead, step)
    cores = int(conf.get("spark.executor.cores", "1")) * per_node + int(conf.get("spark.yarn.am.cores", "1"))
    if short := [n for n in nodes if n.vcores < cores]:
        raise SpreadError(f"{per_node} executors and the AM need {cores} vcores per NodeManager; "
                          + ", ".join(f"{n.node_id} advertises {n.vcores}" for n in short))
    lowest = max(n.memory_mb for n in nodes) // (per_node + 1) + 1           # (k + 1) * C > M_i
    highest = (min(n.memory_mb for n in nodes) - am) // per_node               # k * C + AM <= M_i
    container = highest // step * step
    if container < max(lowest, heap + MIN_OVERHEAD_MB):
        raise SpreadError(
            f"no executor container size makes exactly {per_node} fit on every NodeManager with a "
            f"{am} MB AM beside them ({', '.join(f'{n.node_id}: {n.memory_mb} MB' for n in nodes)}; YARN "
            f"rounds to {step} MB; the heap is {heap} MB + at least {MIN_OVERHEAD_MB} MB overhead): "
            f"lower spark.executor.memory or node_cores, or give the NodeManagers equal memory")
    return Sizing(per_node, container, heap, am_heap, am_overhead)


def executors_per_node(containers: Sequence[AllocatedContainer]) -> Counter[str]:
    """The application's executor containers (every one but the AM's) per node id."""
    return Counter(c.node_id for c in containers if not c.is_am)


def check_spread(counts: Mapping[str, int], nodes: Sequence[str], per_node: int) -> None:
    """SpreadError naming every NodeManager without exactly ``per_node`` executors."""
    placed = {n: counts.get(n, 0) for n in sorted({*nodes, *counts})}
    if placed != {n: per_node for n in nodes}:  # also executors on a node not listed as RUNNING
        raise SpreadError(f"YARN placed the executors {placed} (node: executors), not {per_node} on each "
                          "NodeManager (another application's containers, or NodeManagers whose memory "
                          "changed?); stopping rather than preempting unevenly")


def await_spread(containers: Callable[[], Sequence[AllocatedContainer]], nodes: Sequence[str], per_node: int,
                 timeout_s: float = 120.0, poll_s: float = 0.5,
                 clock: Callable[[], float] = time.monotonic, sleep: Callable[[float], None] = time.sleep) -> None:
    """Wait until the application holds every executor container (``per_node`` x nodes), then
    check their spread; SpreadError after ``timeout_s`` naming what YARN had placed."""
    deadline = clock() + timeout_s
    while True:
        counts = executors_per_node(containers())
        if sum(counts.values()) >= per_node * len(nodes):
            return check_spread(counts, nodes, per_node)
        if clock() >= deadline:
            raise SpreadError(f"after {timeout_s:.0f} s YARN had placed {sum(counts.values())} of "
                              f"{per_node * len(nodes)} executors ({dict(sorted(counts.items()))}); is the "
                              "cluster busy with another application?")
        sleep(poll_s)
