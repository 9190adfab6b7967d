"""`rank`'s runs: one policy under one seed, simulated in a worker process under a time limit.

A run is stopped from outside when it exceeds the limit: a thread cannot be stopped, and a signal
(an alarm) reaches Python code only between bytecodes, never inside the compiled simulator core
or numpy. So every run, with ``--workers 1`` too, runs in a worker process of pebble's pool
(the policies one after another on one worker), which stops the worker running an overdue run by
its own process handle (SIGTERM, then SIGKILL) and starts a fresh one for the runs still to come.
A worker that dies (``os._exit``, a signal, a crash in native code, the OOM killer) fails only its
own run: pebble names the run, and the others go on. Workers ignore SIGINT: a Ctrl-C is the
command's to handle (it stops the pool and writes the rows that finished).
"""
from __future__ import annotations

import functools
import multiprocessing
import time
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, CancelledError, Future, wait
from concurrent.futures import TimeoutError as RunTimedOut
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


def run_point(point: Point) -> Outcome:
    """Simulate one policy under one seed and measure it, as ``simulate`` would (module-level:
    worker processes import it)."""
    from bridge.common.metrics import summarize, with_completion
    from bridge.sim.engine import simulate
    from policies.api import PolicyEnv
    from policies.registry import ConfigError, RegistryError, config_for, create

    spec = point.shape.spec(point.network_delay)
    jobs = point.shape.with_demands(_jobs(point.trace, point.shape.task_demand))
    try:
        policy = create(point.policy, PolicyEnv(spec, point.seed), config_for(point.policy, settings_for(
            point.policy, point.cutoff)))
    except (RegistryError, ConfigError, ValueError) as exc:
        return Outcome(point.policy, problem=f"not run: {exc}")
    try:
        result = simulate(jobs, policy, spec, report_long=lambda j: j.mean_duration > point.cutoff,
                          **point.shape.sim_options())
    except Exception as exc:  # noqa: BLE001 - one policy's failure is a row of the table, not the end of the others
        return Outcome(point.policy, problem=f"failed: {type(exc).__name__}: {exc}")
    job_table = result.job_table()
    slots = point.shape.total_slots
    summary = summarize(job_table, result.task_table(), cutoff=point.cutoff, n_slots=slots)
    measures = {column: float(summary["jct"][cls][stat] if cls else summary[stat]) for column, cls, stat in MEASURES}
    done = with_completion(job_table, point.cutoff).dropna(subset=["jct"])
    jct = {cls: tuple(done.loc[done["cls"] == cls, "jct"].tolist()) for cls in ("short", "long")}
    return Outcome(point.policy, measures, len(result.unfinished), jct=jct)


def run_all(points: Sequence[Point], workers: int, limit_s: float,
            finished: Callable[[Point, Outcome], None]) -> None:
    """Every point on ``workers`` worker processes, each run stopped after ``limit_s`` seconds;
    ``finished(point, outcome)`` as each ends, in the order they end. A policy whose run cannot
    give figures (timed out, failed, not run) has its other seeds' runs cancelled: its row says
    why already. The progress bar names the runs under way and how long each has run."""
    context = multiprocessing.get_context("spawn")  # not fork: see bridge.apps.sweep
    pool = ProcessPool(max_workers=max(1, min(workers, len(points))), context=context)
    futures: dict[Future[Outcome], Point] = {}
    try:
        futures = {pool.schedule(run_point, args=(point,), timeout=limit_s): point for point in points}
        pending = set(futures)
        since: dict[Future[Outcome], float] = {}
        with tqdm(total=len(points), desc="rank", unit="run") as bar:
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
