"""`rank`'s runs: one policy under one seed, simulated under a time limit.

With ``--workers 1`` the runs follow one another in this process (a debugger, a profiler and a
traceback see them as they are). A run over the limit is stopped by a wall-clock alarm
(``SIGALRM``), whose handler raises :class:`Overdue` in Python code (a policy stuck in one
decision, a sleep), and by the simulation's own tick (every 65,536 events), which checks the
deadline: the compiled simulator core runs no signal handler until it calls back into Python.

With more workers every run goes to a worker process of pebble's pool (spawned, not forked: see
`bridge.apps.sweep`), which stops the worker running an overdue run by its own process handle
(SIGTERM, then SIGKILL) and starts a fresh one for the runs still to come, so the limit holds
whatever the run is doing. A worker that dies (``os._exit``, a signal, a crash in native code,
the OOM killer) fails only its own run: pebble names the run, and the others go on. Workers ignore
SIGINT: a Ctrl-C is the command's to handle (it stops the pool and writes the rows that finished).
"""
from __future__ import annotations

import functools
import multiprocessing
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, wait
from concurrent.futures import TimeoutError as RunTimedOut
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pebble import ProcessExpired, ProcessPool
from tqdm import tqdm

from bridge.sim.shape import ClusterShape
from workloads.model import Job

# (column, class or "" for the whole run, statistic); lower is better for all but utilization
MEASURES: tuple[tuple[str, str, str], ...] = (
    ("short p50 (s)", "short", "p50"), ("short p90 (s)", "short", "p90"),
    ("long p50 (s)", "long", "p50"), ("long p90 (s)", "long", "p90"),
    ("makespan (s)", "", "makespan"), ("utilization", "", "utilization"))
POLL_S = 0.5  # how often the progress bar's list of running runs (and their times) is refreshed
Tick = Callable[[int, float], None]  # the simulation's tick(events, simulated time)


@dataclass(frozen=True)
class Point:
    """One policy under one seed on the trace: what a worker process receives."""

    trace: Path
    policy: str
    shape: ClusterShape
    network_delay: float
    seed: int
    cutoff: float

    def __str__(self) -> str:
        return f"{self.policy} seed {self.seed}"


@dataclass(frozen=True)
class Outcome:
    """One run: its measures and per-class JCTs, or why it has none."""

    policy: str
    measures: dict[str, float] = field(default_factory=dict)
    unfinished: int = 0
    problem: str = ""  # "not run: ...", "failed: ..." or "timed out after N s": no measures
    jct: dict[str, tuple[float, ...]] = field(default_factory=dict)  # class -> finished jobs' JCTs


@functools.lru_cache(maxsize=1)
def _jobs(trace: Path, demand: tuple[float, float]) -> list[Job]:
    """The trace, read once per worker process (its runs follow one another)."""
    from workloads.trace import read_trace

    return read_trace(trace, demand)


def settings_for(policy: str, cutoff: float) -> dict[str, str]:
    """The trace's cutoff for the policies that take one from the trace (the package docstring)."""
    from workloads.synthetic.kinds import TRACE_PARAMETERS

    return {"cutoff": repr(cutoff)} if "cutoff" in TRACE_PARAMETERS.get(policy, ()) else {}


def run_point(point: Point, tick: Tick | None = None) -> Outcome:
    """Simulate one policy under one seed and measure it, as ``simulate`` would; ``tick`` is
    called as the simulation goes (module-level: worker processes import it)."""
    from bridge.common.metrics import summarize, with_completion
    from bridge.sim.engine import Simulation
    from policies.framework.api import PolicyEnv
    from policies.framework.registry import ConfigError, RegistryError, config_for, create

    spec = point.shape.spec(point.network_delay)
    jobs = point.shape.with_demands(_jobs(point.trace, point.shape.task_demand))
    try:
        policy = create(point.policy, PolicyEnv(spec, point.seed), config_for(point.policy, settings_for(
            point.policy, point.cutoff)))
    except (RegistryError, ConfigError, ValueError) as exc:
        return Outcome(point.policy, problem=f"not run: {exc}")
    try:
        result = Simulation(jobs, policy, spec, report_long=lambda j: j.mean_duration > point.cutoff,
                            **point.shape.sim_options()).run(progress=tick)
    except Exception as exc:  # noqa: BLE001 - one policy's failure is a row of the table, not the end of the others
        return Outcome(point.policy, problem=f"failed: {type(exc).__name__}: {exc}")
    job_table = result.job_table()
    slots = point.shape.total_slots
    summary = summarize(job_table, result.task_table(), cutoff=point.cutoff, n_slots=slots)
    measures = {column: float(summary["jct"][cls][stat] if cls else summary[stat]) for column, cls, stat in MEASURES}
    done = with_completion(job_table, point.cutoff).dropna(subset=["jct"])
    jct = {cls: tuple(done.loc[done["cls"] == cls, "jct"].tolist()) for cls in ("short", "long")}
    return Outcome(point.policy, measures, len(result.unfinished), jct=jct)


class Overdue(BaseException):
    """A run in this process past its time limit (not an Exception: a run's failures are rows,
    caught as Exception, and this one must reach :func:`_in_process` as itself)."""


def run_all(points: Sequence[Point], workers: int, limit_s: float,
            finished: Callable[[Point, Outcome], None]) -> None:
    """Every point, in this process (``workers`` 1) or on ``workers`` worker processes, each run
    stopped after ``limit_s`` seconds; ``finished(point, outcome)`` as each ends, in the order
    they end. A policy whose run cannot give figures (timed out, failed, not run) has its other
    seeds' runs skipped: its row says why already. The progress bar names the runs under way and
    how long each has run."""
    with tqdm(total=len(points), desc="rank", unit="run") as bar:
        if workers == 1:
            _in_process(points, limit_s, finished, bar)
        else:
            _in_pool(points, workers, limit_s, finished, bar)


def _in_process(points: Sequence[Point], limit_s: float, finished: Callable[[Point, Outcome], None],
                bar: tqdm) -> None:
    """The runs one after another in this process (module docstring)."""
    decided: set[str] = set()  # policies whose row a problem decided
    for point in points:
        if point.policy not in decided:
            outcome = _within_limit(point, limit_s, bar)
            if outcome.problem:
                decided.add(point.policy)
            finished(point, outcome)
        bar.update()


def _within_limit(point: Point, limit_s: float, bar: tqdm) -> Outcome:
    """One run in this process, stopped by an alarm or its tick past ``limit_s`` (module docstring);
    the tick also shows how long it has run."""
    started = time.monotonic()

    def tick(events: int, now: float) -> None:
        elapsed = time.monotonic() - started
        if elapsed > limit_s:
            raise Overdue()
        bar.set_postfix_str(f"{point} {elapsed:.0f}s", refresh=True)

    bar.set_postfix_str(f"{point} 0s", refresh=True)
    try:
        with _alarm(limit_s):
            return run_point(point, tick)
    except Overdue:
        return Outcome(point.policy, problem=f"timed out after {limit_s:g} s")


@contextmanager
def _alarm(limit_s: float) -> Iterator[None]:
    """:class:`Overdue` raised in the block once ``limit_s`` seconds have passed. An alarm set
    before (a test runner's watchdog) is set again after the block, less the time spent in it: it
    goes off late by at most the block's time, never not at all."""
    def overdue(signum: int, frame: object) -> None:
        raise Overdue()

    started = time.monotonic()
    previous = signal.signal(signal.SIGALRM, overdue)
    outer, interval = signal.setitimer(signal.ITIMER_REAL, limit_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - started), 1e-3), interval)


def _in_pool(points: Sequence[Point], workers: int, limit_s: float, finished: Callable[[Point, Outcome], None],
             bar: tqdm) -> None:
    """The runs on ``workers`` worker processes of pebble's pool (module docstring)."""
    context = multiprocessing.get_context("spawn")  # not fork: see bridge.apps.sweep
    pool = ProcessPool(max_workers=max(1, min(workers, len(points))), context=context)
    futures: dict[Future[Outcome], Point] = {}
    try:
        futures = {pool.schedule(run_point, args=(point,), timeout=limit_s): point for point in points}
        pending = set(futures)
        since: dict[Future[Outcome], float] = {}
        while pending:
            done, pending = wait(pending, timeout=POLL_S, return_when=FIRST_COMPLETED)
            for future in done:
                point = futures[future]
                outcome = _outcome(future, point, limit_s)
                if outcome is None:  # cancelled: its policy's row is decided
                    continue
                if outcome.problem:
                    for other in pending:
                        if futures[other].policy == point.policy:
                            other.cancel()
                finished(point, outcome)
            bar.update(len(done))
            bar.set_postfix_str(_under_way(futures, pending, since), refresh=True)
    finally:
        pool.stop()  # stops the workers still running (an interrupt, an error): nothing outlives the command
        pool.join()


def _outcome(future: Future[Outcome], point: Point, limit_s: float) -> Outcome | None:
    """The run's outcome, a row saying why it has none, or None if it was cancelled."""
    try:
        return future.result()
    except CancelledError:
        return None
    except RunTimedOut:
        return Outcome(point.policy, problem=f"timed out after {limit_s:g} s")
    except ProcessExpired as exc:
        how = f"killed by signal {-exc.exitcode}" if exc.exitcode < 0 else f"exit code {exc.exitcode}"
        return Outcome(point.policy, problem=f"failed: its worker process died ({how})")
    except Exception as exc:  # noqa: BLE001 - raised outside the simulation (reading the trace): still one row
        return Outcome(point.policy, problem=f"failed: {type(exc).__name__}: {exc}")


def _under_way(futures: dict[Future[Outcome], Point], pending: set[Future[Outcome]],
               since: dict[Future[Outcome], float]) -> str:
    """The runs under way, each with the seconds it has run (from when it was first seen running)."""
    now = time.monotonic()
    running = [f for f in pending if f.running()]
    for future in running:
        since.setdefault(future, now)
    return ", ".join(f"{futures[f]} {now - since[f]:.0f}s" for f in sorted(running, key=since.__getitem__))
