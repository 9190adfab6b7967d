"""The simulated cluster's shape: how many nodes, each one's cores and memory, from ``--nodes/--slots``
or a ``--cluster`` TOML file (format: ``docs/workloads.md``, "Cluster files").

Every node has a capacity vector over :data:`RESOURCES` (cores, GB of memory) and as many slots as
cores, so every registered policy runs: slot policies see the slots, packing policies (Falcon,
Tetris, Ursa, ...) the capacity. A task whose trace gives no demand asks for one core and
:meth:`ClusterShape.memory_per_task` GB: the leanest node's memory per core, so a node's cores,
never its memory, bound how many such tasks it runs, whatever the policy. Nodes with fewer cores
than the largest hold their missing slots for good (:meth:`ClusterShape.hold_missing_slots`), as
the live driver holds an executor's missing slots.
"""
from __future__ import annotations

import math
import re
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from bridge.common import tomltext
from policies.framework.api import ClusterSpec
from workloads.model import Job, distinct

RESOURCES = ("cpu", "mem")
MEMORY_GB_PER_CORE = 4.0
"""A node's memory when nothing says otherwise, per core (our reading: general-purpose cloud
machines have 4 GB per vCPU; the thesis' slots have no memory)."""
NODE_KEYS = {"count": "how many nodes of this kind", "cores": "cores, also the node's slots",
             "memory_gb": f"GB of memory (default: cores x {MEMORY_GB_PER_CORE:g})"}
TOP_KEYS = {"nodes": "a [[nodes]] table per kind of node",
            "offslot_share": "the speed of a task off its slot (queued or suspended), as a share of full speed"}


class ClusterFileError(ValueError):
    """A cluster file that cannot be used; the message names the file, the key and the line."""


@dataclass(frozen=True)
class NodeKind:
    count: int
    cores: int
    memory_gb: float


@dataclass(frozen=True)
class ClusterShape:
    """Kinds of nodes, in node order (node ids count through the kinds), and ``offslot_share``:
    how fast a task progresses off its slot, queued at a node or suspended there (0: it does not,
    the thesis' model; live, the node driver runs such a task in a container shrunk to the node
    agent's minimum share)."""

    kinds: tuple[NodeKind, ...]
    offslot_share: float = 0.0
    source: str = ""

    @property
    def n_nodes(self) -> int:
        return sum(k.count for k in self.kinds)

    @property
    def cores(self) -> list[int]:
        """Each node's cores, in node order."""
        return [k.cores for k in self.kinds for _ in range(k.count)]

    @property
    def total_slots(self) -> int:
        return sum(k.count * k.cores for k in self.kinds)

    @property
    def memory_per_task(self) -> float:
        """GB a task without a demand in its trace asks for: the leanest node's memory per core."""
        return min(k.memory_gb / k.cores for k in self.kinds)

    @property
    def task_demand(self) -> tuple[float, float]:
        """What a task without a demand in its trace asks for: one core, :attr:`memory_per_task` GB
        (``read_trace(path, shape.task_demand)`` gives it while reading)."""
        return (1.0, self.memory_per_task)

    def spec(self, network_delay: float) -> ClusterSpec:
        """The policies' view: slots per node = the largest node's cores; capacity per node."""
        caps = [(float(k.cores), k.memory_gb) for k in self.kinds for _ in range(k.count)]
        top = (max(c for c, _ in caps), max(m for _, m in caps))
        uniform = all(c == caps[0] for c in caps)
        return ClusterSpec(self.n_nodes, int(top[0]), RESOURCES, top, network_delay,
                           node_capacity=None if uniform else tuple(caps))

    def describe(self) -> str:
        """One line: the file, or the kinds of nodes (``4 x 2 cores 8 GB``)."""
        kinds = ", ".join(f"{k.count} x {k.cores} cores {k.memory_gb:g} GB" for k in self.kinds)
        if self.offslot_share:
            kinds += f"; off-slot share {self.offslot_share:g}"
        return f"{self.source}: {kinds}" if self.source else kinds

    def sim_options(self) -> dict[str, Any]:
        """The ``Simulation`` keyword arguments this shape sets (the state's off-slot share)."""
        return {"offslot_share": self.offslot_share} if self.offslot_share else {}

    def with_demands(self, jobs: Sequence[Job]) -> list[Job]:
        """``jobs`` with :attr:`task_demand` for every task whose trace gives no demand;
        ClusterFileError if a given demand fits no node (each distinct vector checked once)."""
        one = self.task_demand
        out = []
        for job in jobs:
            if job.demands is None:
                out.append(replace(job, demands=(one,) * job.n_tasks))
                continue
            for d in distinct(job.demands):
                if d != one and len(d) == len(RESOURCES) and not any(
                        d[0] <= k.cores + 1e-9 and d[1] <= k.memory_gb + 1e-9 for k in self.kinds):
                    where = f" ({self.source})" if self.source else ""
                    raise ClusterFileError(f"job {job.job_id} task {job.demands.index(d)}: demand {tuple(d)} "
                                           f"(cores, GB) fits no node of the cluster{where}")
            out.append(job)
        return out

    def hold_missing_slots(self, state: Any) -> None:
        """Nodes with fewer cores than the spec's slots per node hold the rest of their slots for
        good (``ClusterState.occupy``), so slot policies see each node's own cores."""
        top = max(k.cores for k in self.kinds)
        for node, cores in enumerate(self.cores):
            for _ in range(top - cores):
                state.occupy(node, None)


def uniform(nodes: int, slots: int) -> ClusterShape:
    """``--nodes N --slots S``: N nodes of S cores and S x :data:`MEMORY_GB_PER_CORE` GB."""
    return ClusterShape((NodeKind(nodes, slots, slots * MEMORY_GB_PER_CORE),))


def load(path: Path, max_slots: int) -> ClusterShape:
    """A cluster file (TOML); ClusterFileError naming the file, key and line of the first problem."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ClusterFileError(f"{path}: cannot read the cluster file: {e}") from None
    try:
        doc = tomltext.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ClusterFileError(f"{path}: not valid TOML: {e}") from None

    def fail(what: str, key: str, table: int | None = None) -> ClusterFileError:
        line = _line_of(text, key, table)
        where = f"{path}{f', line {line}' if line else ''}"
        return ClusterFileError(f"{where}: {key}: {what}")

    for key in doc:
        if key not in TOP_KEYS:
            raise fail(f"unknown key; known: {', '.join(f'{k} ({v})' for k, v in TOP_KEYS.items())}", key)
    tables = doc.get("nodes")
    if not isinstance(tables, list) or not tables or not all(isinstance(t, dict) for t in tables):
        raise fail("at least one [[nodes]] table (count, cores, optional memory_gb) is needed", "nodes")
    kinds = []
    for i, t in enumerate(tables):
        for key in t:
            if key not in NODE_KEYS:
                raise fail(f"unknown key in [[nodes]] table {i + 1}; known: "
                           f"{', '.join(f'{k} ({v})' for k, v in NODE_KEYS.items())}", key, i)
        for key in ("count", "cores"):
            v = t.get(key)
            if v is None:
                raise fail(f"missing in [[nodes]] table {i + 1} ({NODE_KEYS[key]})", key, i)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= max_slots:
                raise fail(f"a whole number from 1 to {max_slots:,} is needed, got {v!r}", key, i)
        mem = t.get("memory_gb", t["cores"] * MEMORY_GB_PER_CORE)
        if isinstance(mem, bool) or not isinstance(mem, (int, float)) or not (0 < mem < math.inf):
            raise fail(f"a positive number of GB is needed, got {mem!r}", "memory_gb", i)
        kinds.append(NodeKind(t["count"], t["cores"], float(mem)))
    share = doc.get("offslot_share", 0.0)
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0 <= share <= 1:
        raise fail(f"a number from 0 to 1 is needed, got {share!r}", "offslot_share")
    shape = ClusterShape(tuple(kinds), float(share), str(path))
    if shape.total_slots > max_slots:
        raise ClusterFileError(f"{path}: {shape.total_slots:,} cores in all is more than {max_slots:,}")
    return shape


def _line_of(text: str, key: str, table: int | None) -> int | None:
    """The line (from 1) that sets ``key`` at the top (``table`` None) or in the ``table``-th
    ``[[nodes]]`` table (from 0), else that table's header line; None if neither is found."""
    setting = re.compile(rf"^\s*[\"']?{re.escape(key)}[\"']?\s*=")
    current: int | str | None = None   # None: the top level; an int: that [[nodes]] table
    seen, header = -1, None
    for n, line in enumerate(text.splitlines(), 1):
        if re.match(r"^\s*\[\[\s*nodes\s*\]\]", line):
            seen += 1
            current = seen
            header = n if seen == table else header
        elif re.match(r"^\s*\[", line):
            current = "other"
        elif current == table and setting.match(line):
            return n
    return header
