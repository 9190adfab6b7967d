"""What the cluster state measures: counters and the log of run segments and job outcomes.

The state is the one writer (:class:`~bridge.cluster.state.ClusterState` appends a segment where a
task leaves its slot and counts what it applies); the simulator's output and the reports read it.
Nothing here influences scheduling.
"""
from __future__ import annotations

from array import array
from typing import TYPE_CHECKING, Any, Final

from librt.vecs import append, vec
from mypy_extensions import i32, i64, u8

from policies.framework.api import Status

if TYPE_CHECKING:
    from typing_extensions import Buffer


COUNTERS = (
    "probes_sent", "entries_arrived", "probes_behind_long", "short_tasks_after_long",
    "task_requests", "cancels", "launches", "steal_requests", "steals", "stolen_entries",
    "rejected_probes", "dropped_entries", "suspends", "resumes", "heartbeats", "timers",
    "disorders", "kills", "queued_ends",
)


class Counters:
    """What the state counts (:data:`COUNTERS`), as attributes: compiled, an increment is a
    struct field's, where a dictionary's costs a lookup, a boxed addition and a store."""

    __slots__ = COUNTERS

    def __init__(self) -> None:
        self.probes_sent = 0
        self.entries_arrived = 0
        self.probes_behind_long = 0
        self.short_tasks_after_long = 0
        self.task_requests = 0
        self.cancels = 0
        self.launches = 0
        self.steal_requests = 0
        self.steals = 0
        self.stolen_entries = 0
        self.rejected_probes = 0
        self.dropped_entries = 0
        self.suspends = 0
        self.resumes = 0
        self.heartbeats = 0
        self.timers = 0
        self.disorders = 0
        self.kills = 0
        self.queued_ends = 0

    def as_dict(self) -> dict[str, int]:
        return {name: getattr(self, name) for name in COUNTERS}


SEGMENT_CHUNK: Final = 4096
"""Run segments staged in flat native arrays (``librt.vecs``: compiled, an append stores the
value, no boxed object) before they join the log's arrays, a chunk at a time, as bytes (Final:
compiled, a constant, not a global looked up per segment)."""

_SEGMENT_TYPES = ("q", "i", "i", "i", "d", "d", "B", "d")


class SegmentLog:
    """Run segments and job outcomes, in columnar form (no per-event objects are kept).

    One row per run segment of a task (a task suspended k times has k+1 rows); ``seg_done`` is
    1 on the segment that completed the task; ``seg_idle`` is the part of the segment that held
    the slot without progress (context switch, waiting for DAG parents). The ``seg_*`` columns
    are arrays (``q`` job, ``i`` task/node/slot, ``d`` times, ``B`` done), complete whenever read."""

    _job: vec[i64]
    _task: vec[i32]
    _node: vec[i32]
    _slot: vec[i32]
    _start: vec[float]
    _end: vec[float]
    _idle: vec[float]
    _done: vec[u8]

    def __init__(self, counts: Counters | None = None, records: list[tuple[Any, ...]] | None = None) -> None:
        self._columns: list[array[Any]] = [array(t) for t in _SEGMENT_TYPES]
        self._restage()
        self.job_finish: dict[int, float] = {}
        self.rejected_jobs: dict[int, Status] = {}
        self.counts = counts if counts is not None else Counters()
        self.records = records      # full event/decision log when recording

    def add(self, job: int, task: int, node: int, slot: int, start: float, end: float, done: int,
            idle: float) -> None:
        """One run segment."""
        self._job = append(self._job, job)
        self._task = append(self._task, task)
        self._node = append(self._node, node)
        self._slot = append(self._slot, slot)
        self._start = append(self._start, start)
        self._end = append(self._end, end)
        self._done = append(self._done, done)
        self._idle = append(self._idle, idle)
        if len(self._job) >= SEGMENT_CHUNK:
            self._flush()

    def _flush(self) -> None:
        staged: list[Buffer] = [self._job, self._task, self._node, self._slot, self._start, self._end, self._done,
                                self._idle]
        for col, values in zip(self._columns, staged):
            col.frombytes(memoryview(values).tobytes())
        self._restage()

    def _restage(self) -> None:
        """Empty staging arrays, one per column."""
        self._job = vec[i64]()
        self._task, self._node, self._slot = vec[i32](), vec[i32](), vec[i32]()
        self._start, self._end, self._idle = vec[float](), vec[float](), vec[float]()
        self._done = vec[u8]()

    def _column(self, i: int) -> array[Any]:
        if len(self._job):
            self._flush()
        return self._columns[i]

    @property
    def counters(self) -> dict[str, int]:
        """The counts so far, by name (:data:`COUNTERS`): a new dictionary each time."""
        return self.counts.as_dict()

    @property
    def seg_job(self) -> array[Any]:
        return self._column(0)

    @property
    def seg_task(self) -> array[Any]:
        return self._column(1)

    @property
    def seg_node(self) -> array[Any]:
        return self._column(2)

    @property
    def seg_slot(self) -> array[Any]:
        return self._column(3)

    @property
    def seg_start(self) -> array[Any]:
        return self._column(4)

    @property
    def seg_end(self) -> array[Any]:
        return self._column(5)

    @property
    def seg_done(self) -> array[Any]:
        return self._column(6)

    @property
    def seg_idle(self) -> array[Any]:
        return self._column(7)
