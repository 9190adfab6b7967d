"""Idle slot-seconds while tasks are pending, from one Spark event log.

A scheduler wastes the cluster when an executor slot is free while a task that could use it
waits. At each instant of the application's lifetime

    idle = min(free executor slots, pending tasks of submitted stages)

where a slot is `Total Cores // spark.task.cpus` of each live executor, free slots are slots not
running a task, and a stage's pending tasks are its tasks neither finished successfully nor
running (a failed or killed attempt makes its task pending again). A stage counts from
`StageSubmitted` (Spark submits a stage only once its parents are done, so it is runnable) to
`StageCompleted`. `idle` is integrated over time: slot-seconds.

Only the event log is read (its own timestamps: executors' add/remove times, stages' submission
and completion times, tasks' launch and finish times), so stock Spark and any scheduler plugin are
measured alike. Why a slot stayed idle (Spark's locality wait, a policy holding it on purpose or
by mistake) is not in the log: this measure cannot tell them apart.

Limits: only the default resource profile's `spark.task.cpus` is used (no stage-level resource
profiles); a log cut short (`.inprogress`) is integrated up to its last timestamp.
"""
from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bridge.history import logs
from bridge.history.events import (FIELD_ERRORS, ApplicationEnd, ApplicationStart, EnvironmentUpdate, Event,
                                   ExecutorAdded, ExecutorRemoved, Other, StageCompleted, StageSubmitted, TaskEnd,
                                   TaskStart, need, typed)

StageKey = tuple[int, int]  # (stage id, stage attempt id)


class EventLogError(ValueError):
    """The file is not a Spark event log this measure can integrate."""


@dataclass(frozen=True)
class IdleSlots:
    """What one application left idle; times in seconds, slot figures in slot-seconds."""

    app_id: str
    app_name: str
    runtime_s: float  # application start to end
    idle_slot_s: float  # integral of min(free slots, pending tasks)
    busy_slot_s: float  # integral of running tasks
    pending_task_s: float  # integral of pending tasks (waiting, whether or not a slot was free)
    max_slots: int
    tasks: int  # task attempts started


@dataclass
class _Stage:
    tasks: int
    done: set[int] = field(default_factory=set)  # task indexes that finished successfully
    running: dict[int, int] = field(default_factory=dict)  # task index -> attempts running

    def pending(self) -> int:
        return max(0, self.tasks - len(self.done) - len(self.running))


@dataclass
class _State:
    """The cluster as the log describes it at one instant."""

    task_cpus: int = 1
    cores: dict[str, int] = field(default_factory=dict)  # live executor -> cores
    running: int = 0
    stages: dict[StageKey, _Stage] = field(default_factory=dict)  # submitted, not completed
    started: int = 0

    def slots(self) -> int:
        """Task slots of the live executors (divided when asked: the environment update that
        carries spark.task.cpus may come after an executor's registration)."""
        return sum(cores // self.task_cpus for cores in self.cores.values())

    def idle(self) -> int:
        free = max(0, self.slots() - self.running)
        return min(free, sum(s.pending() for s in self.stages.values()))


def _task_cpus(event: EnvironmentUpdate) -> int:
    """`spark.task.cpus` of the application's settings."""
    try:
        return event.task_cpus
    except ValueError as e:
        raise EventLogError(str(e)) from None


def _timestamp(event: Event) -> float | None:
    """When the change an event reports happened (ms), from the event's own time fields."""
    if isinstance(event, TaskStart):
        return event.launch_ms
    if isinstance(event, TaskEnd):
        return event.finish_ms
    if isinstance(event, StageSubmitted):
        return event.stage.submission_ms
    if isinstance(event, StageCompleted):
        return event.stage.completion_ms
    if isinstance(event, (ApplicationStart, ApplicationEnd, ExecutorAdded, ExecutorRemoved)):
        return event.timestamp_ms
    return event.timestamp_ms() if isinstance(event, Other) else None


def _apply(state: _State, event: Event) -> None:
    """One event's change to the state (events that change nothing measured are ignored)."""
    if isinstance(event, EnvironmentUpdate):
        state.task_cpus = _task_cpus(event)
    elif isinstance(event, ExecutorAdded):
        state.cores[event.executor_id] = event.cores or 0
    elif isinstance(event, ExecutorRemoved):
        state.cores.pop(event.executor_id, None)
    elif isinstance(event, StageSubmitted):
        state.stages[(event.stage.stage_id, event.stage.attempt)] = _Stage(need(event.stage.tasks, "Number of Tasks"))
    elif isinstance(event, StageCompleted):
        state.stages.pop((event.stage.stage_id, event.stage.attempt), None)
    elif isinstance(event, TaskStart):
        _task_started(state, event)
    elif isinstance(event, TaskEnd):
        _task_ended(state, event)


def _task_started(state: _State, event: TaskStart) -> None:
    state.running += 1
    state.started += 1
    stage = state.stages.get((event.stage_id, event.stage_attempt))
    if stage is not None:
        index = need(event.index, "Index")
        stage.running[index] = stage.running.get(index, 0) + 1


def _task_ended(state: _State, event: TaskEnd) -> None:
    """A task's slot is free again; its index is done on success, pending again otherwise."""
    state.running = max(0, state.running - 1)
    stage = state.stages.get((event.stage_id, event.stage_attempt))
    if stage is None:  # a task of a completed stage (a zombie or speculative copy)
        return
    index = need(event.index, "Index")
    left = stage.running.get(index, 0) - 1
    if left > 0:
        stage.running[index] = left
    else:
        stage.running.pop(index, None)
    if event.succeeded:
        stage.done.add(index)


def _timed(log: Iterable[dict]) -> Iterator[tuple[int, Event]]:
    """Events, typed, with the time of their change, in time order (log order among equal times).

    The log is written in the order the listener bus delivers events, which may trail the
    change itself (a task's end is posted after the next task on its slot may have launched)."""
    stamped: list[tuple[int, int, Event]] = []
    previous = 0
    for seq, raw in enumerate(log):  # an event without a time happened with the one before it
        event = typed(raw)
        stamp = _timestamp(event)
        previous = previous if stamp is None else int(stamp)
        stamped.append((previous, seq, event))
    stamped.sort(key=lambda item: (item[0], item[1]))
    return ((stamp, event) for stamp, _, event in stamped)


def integrate(log: Iterable[dict]) -> IdleSlots:
    """Idle slot-seconds of one application's events (parsed JSON objects, in log order)."""
    state, app_id, app_name = _State(), "", ""
    start = end = last = None
    idle = busy = pending = 0.0
    max_slots = 0
    for time_ms, event in _timed(log):
        if last is not None and time_ms > last:
            span = (time_ms - last) / 1000.0
            idle += state.idle() * span
            busy += state.running * span
            pending += sum(s.pending() for s in state.stages.values()) * span
        last = time_ms  # _timed yields times in order
        if isinstance(event, ApplicationStart):
            app_id, app_name, start = event.app_id, event.app_name, time_ms
        elif isinstance(event, ApplicationEnd):
            end = time_ms
        _apply(state, event)
        max_slots = max(max_slots, state.slots())
    if start is None:
        raise EventLogError(f"no {ApplicationStart.NAME}: not a Spark event log")
    assert last is not None, "set at every event, so by the start event too"
    return IdleSlots(app_id=app_id, app_name=app_name, runtime_s=((end or last) - start) / 1000.0,
                     idle_slot_s=idle, busy_slot_s=busy, pending_task_s=pending, max_slots=max_slots,
                     tasks=state.started)


def read(path: Path) -> IdleSlots:
    """Idle slot-seconds of the application whose event log is `path` (any log `bridge.history`
    reads: a file, plain or zstd-compressed, or a rolled folder)."""
    try:
        return integrate(line.event for line in logs.log_lines(path) if line.event is not None)
    except logs.EventLogError as e:  # the reader's: names the file and line
        raise EventLogError(str(e)) from None
    except EventLogError as e:
        raise EventLogError(f"{path}: {e}") from None
    except FIELD_ERRORS as e:
        raise EventLogError(f"{path}: malformed event ({type(e).__name__}: {e})") from None
