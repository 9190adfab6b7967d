"""The independent points of an experiment, run in this process, in worker processes or as Spark tasks.

An experiment's points (a policy on a cluster size under a seed) do not depend on one another,
so ``schedbridge experiment --workers N`` spreads them over N processes of the standard library's
:class:`~concurrent.futures.ProcessPoolExecutor`, and ``--master MASTER`` over a Spark
application's executors (:func:`on_spark`: each point one task of one stage, collected to this
driver; Spark is the engine, none is written here). Each point is seeded on its own and the results
come back in the points' order whatever order they finish in, so an experiment writes the same
bytes as a serial run; it writes only after the last point, so a failed sweep leaves no result
files. Workers are spawned rather than forked: a forked copy of a process that has threads (tqdm's
monitor, numeric libraries' pools) can deadlock on a lock one of them held.

Spark's executors import the experiment's code, so schedbridge must be installed on every node,
in the Python that runs Spark's Python workers (``spark.pyspark.python``, by default this Python's
path). Our reading: it is not shipped with the job (``--py-files``), because the points need its
dependencies too (numpy, pandas), which a zip of our packages cannot carry, and a cluster's Python
environment is the cluster's to manage (installed on the nodes, or Spark's own
``spark.yarn.dist.archives`` of a packed environment). On the local testbed the executors run on
this host and use this virtual environment. A node that cannot import it fails the sweep with an
error saying so.
"""
from __future__ import annotations

import functools
import multiprocessing
import os
import re
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

import click
from tqdm import tqdm

P = TypeVar("P")
R = TypeVar("R")

_workers = 1
_spark: Any = None  # the SparkContext of `on_spark`'s block, if any
_started: Any = None  # in a worker process: the queue it names the points it starts on (`_announced`)
PROGRESS_POLL_S = 0.5
MISSING_MODULE = re.compile(r"(?:ModuleNotFoundError|ImportError): No module named '([^']+)'")


@dataclass(frozen=True)
class SparkRun:
    """A Spark application to run sweeps on: Spark's ``master`` URL, the Spark ``conf``, and the
    ``policy`` that places its tasks (`bridge.replay.policy`: ``stock`` for Spark's own scheduler,
    else a registered policy on ``spark-schedbridge://``, its parameters in ``conf``)."""

    master: str
    policy: str
    conf: dict[str, str] = field(default_factory=dict)
    hadoop_conf_dir: Path | None = None  # which YARN cluster (`bridge.target.config`), for a yarn master

    @property
    def inner_master(self) -> str:
        """Spark's own master, without the plugin's ``spark-schedbridge://``."""
        import sparkplugin

        return self.master.removeprefix(sparkplugin.MASTER_PREFIX)


@contextmanager
def workers(count: int) -> Iterator[None]:
    """Run the sweeps started inside the block on ``count`` processes (1: in this one), so the
    experiments' own signatures need no worker argument."""
    global _workers
    previous, _workers = _workers, count
    try:
        yield
    finally:
        _workers = previous


@contextmanager
def on_spark(run: SparkRun, app_name: str) -> Iterator[None]:
    """Run the sweeps started inside the block as tasks of one Spark application on ``run``,
    started here (before the block: a master that cannot start fails before anything is written)
    and stopped after it."""
    global _spark
    session = _open_session(run, app_name)
    previous, _spark = _spark, session.sparkContext
    click.echo(f"experiment: runs as tasks of Spark application {_spark.applicationId} on {run.master}", err=True)
    try:
        yield
    finally:
        _spark = previous
        session.stop()


def _open_session(run: SparkRun, app_name: str) -> Any:
    """The SparkSession of ``run``; any failure to start is one error naming the master."""
    try:
        from bridge.replay import policy as policies
    except ImportError as exc:
        raise click.ClickException(f"--master needs pyspark ({exc}): install schedbridge[spark]") from None
    from bridge.replay.launchers import failure_summary
    from bridge.target.config import announce, resolve
    from yarnclient.errors import YarnError

    # the executors' Python: the conf's, else the user's PYSPARK_PYTHON, else this one (PySpark's
    # driver reads it from the environment, so it is set there only when the user has not)
    python = run.conf.get("spark.pyspark.python") or os.environ.get("PYSPARK_PYTHON") or sys.executable
    os.environ.setdefault("PYSPARK_PYTHON", python)
    conf = {"spark.pyspark.python": python, "spark.ui.showConsoleProgress": "false", **run.conf}  # our bar only
    try:
        policies.check(run.policy, conf)
        if run.inner_master == "yarn":
            target = resolve(run.hadoop_conf_dir, hdfs=False)
            announce("experiment", target)
            target.rm_client().info()  # fails fast, naming the RM, when the cluster is down
            os.environ.update({**target.env, "PYSPARK_PYTHON": python})  # read by the JVM the session launches
    except (ValueError, OSError, YarnError) as exc:
        raise click.ClickException(f"--master {run.master}: {exc}") from None
    try:
        return policies.open_session(run.policy, conf, app_name, master=run.inner_master)
    except Exception as exc:
        raise click.ClickException(f"--master {run.master}: Spark did not start: "
                                   f"{failure_summary(str(exc))}") from exc


def run_points(fn: Callable[[P], R], points: Sequence[P], desc: str,
               name: Callable[[P], str] = str, dead: Callable[[P, str], R] | None = None) -> list[R]:
    """``fn`` on every point, returned in ``points``' order, under one progress bar. A point that
    raises stops the sweep with one error naming it (``name(point)``). With more than one worker
    or on Spark, ``fn`` must be a module-level function and the points and results picklable.
    With worker processes, a point whose process dies (``os._exit``, a signal, a crash in native
    code) is named too: its result is ``dead(point, why)`` and the others run on, or without
    ``dead`` the sweep stops naming it."""
    count = min(_workers, len(points))
    with tqdm(total=len(points), desc=desc, unit="run") as bar:
        if _spark is not None and points:
            return _on_spark(_spark, fn, points, desc, name, bar)
        if count <= 1:
            results = []
            for point in points:
                results.append(_call(fn, point, desc, name))
                bar.update()
            return results
        return _in_workers(fn, points, desc, name, count, bar.update, dead)


def _call(fn: Callable[[P], R], point: P, desc: str, name: Callable[[P], str]) -> R:
    try:
        return fn(point)
    except Exception as exc:
        raise _failed(point, exc, desc, name) from exc


def _in_workers(fn: Callable[[P], R], points: Sequence[P], desc: str, name: Callable[[P], str], count: int,
                done: Callable[[], object], dead: Callable[[P, str], R] | None) -> list[R]:
    """The points on ``count`` spawned processes. A process that dies breaks the whole pool, failing
    every point not finished, whichever process ran it: those under way then run again each alone,
    so the one that dies is known, and the others on a fresh pool."""
    results: dict[int, R] = {}
    todo = list(range(len(points)))
    while todo:
        lost, under_way = _pool_round(fn, points, todo, desc, name, count, done, results)
        suspects = [i for i in lost if i in under_way] or lost  # none said it started: any may have died
        for i in suspects:
            results[i] = _alone(fn, points[i], desc, name, dead)
            done()
        todo = [i for i in lost if i not in suspects]
    return [results[i] for i in range(len(points))]


def _pool_round(fn: Callable[[P], R], points: Sequence[P], todo: Sequence[int], desc: str,
                name: Callable[[P], str], count: int, done: Callable[[], object],
                results: dict[int, R]) -> tuple[list[int], set[int]]:
    """``todo``'s points on a fresh pool, their results into ``results``; returns the points lost
    to a dead process and the points that had started. On a point's failure the points not started
    are cancelled (those running finish first: a process cannot be stopped cleanly mid-point)."""
    context = multiprocessing.get_context("spawn")
    started = context.SimpleQueue()
    lost: list[int] = []
    under_way: set[int] = set()
    with ProcessPoolExecutor(min(count, len(todo)), mp_context=context, initializer=_listen,
                             initargs=(started,)) as pool:
        futures: dict[Future[R], int] = {pool.submit(_announced, fn, i, points[i]): i for i in todo}
        try:
            for future in as_completed(futures):
                _drain(started, under_way)  # as they come: a full pipe would block the workers
                index = futures[future]
                try:
                    results[index] = future.result()
                except BrokenProcessPool:
                    lost.append(index)
                    continue
                except Exception as exc:
                    raise _failed(points[index], exc, desc, name) from exc
                done()
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise
    _drain(started, under_way)
    started.close()
    return sorted(lost), under_way


def _listen(started: Any) -> None:
    """A worker process's initializer: where it names the points it starts."""
    global _started
    _started = started


def _announced(fn: Callable[[P], R], index: int, point: P) -> R:
    """``fn(point)`` in a worker process, named first as under way (if the process dies, see
    `_in_workers`)."""
    _started.put(index)
    return fn(point)


def _drain(started: Any, into: set[int]) -> None:
    while not started.empty():
        into.add(started.get())


def _alone(fn: Callable[[P], R], point: P, desc: str, name: Callable[[P], str],
           dead: Callable[[P, str], R] | None) -> R:
    """``fn(point)`` on a process of its own: if that dies, the point's own doing."""
    with ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn")) as pool:
        try:
            return pool.submit(fn, point).result()
        except BrokenProcessPool:
            why = "its worker process died (it exited or was killed while running it)"
            if dead is None:
                raise click.ClickException(f"{desc}: the run {name(point)} failed: {why}") from None
            return dead(point, why)
        except Exception as exc:
            raise _failed(point, exc, desc, name) from exc


def _on_spark(sc: Any, fn: Callable[[P], R], points: Sequence[P], desc: str, name: Callable[[P], str],
              bar: tqdm) -> list[R]:
    """The points as the tasks of one Spark stage (one partition each), collected in their order.
    A point that raises is reported as a value (:func:`_guarded`), not retried: it would fail
    again; the other points finish first, since a Spark job runs its tasks to the end. The bar
    counts the stage's finished tasks, polled from Spark's status tracker."""
    group = f"schedbridge-sweep-{uuid.uuid4().hex}"
    sc.setJobGroup(group, desc)
    stop = threading.Event()
    poller = threading.Thread(target=_follow, args=(sc, group, bar, stop), daemon=True)
    poller.start()
    try:
        outcomes = sc.parallelize(list(points), len(points)).map(functools.partial(_guarded, fn)).collect()
    except Exception as exc:
        raise _spark_failed(exc, desc, sc) from exc
    finally:
        stop.set()
        poller.join()
    bar.update(len(points) - bar.n)
    for point, (ok, value) in zip(points, outcomes, strict=True):
        if not ok:
            raise click.ClickException(f"{desc}: the run {name(point)} failed: {value}")
    return [value for _, value in outcomes]


def _guarded(fn: Callable[[P], R], point: P) -> tuple[bool, R | str]:
    """``fn(point)`` in a Spark task: ``(True, result)``, or ``(False, "Type: message")``."""
    try:
        return True, fn(point)
    except Exception as exc:  # noqa: BLE001 - the driver raises it, naming the point
        return False, f"{type(exc).__name__}: {exc}"


def _follow(sc: Any, group: str, bar: tqdm, stop: threading.Event) -> None:
    """Move ``bar`` to the number of finished tasks of ``group``'s jobs until ``stop``."""
    tracker = sc.statusTracker()
    while not stop.wait(PROGRESS_POLL_S):
        done = 0
        for job in tracker.getJobIdsForGroup(group):
            info = tracker.getJobInfo(job)
            stages = [tracker.getStageInfo(stage) for stage in (info.stageIds if info else [])]
            done += sum(stage.numCompletedTasks for stage in stages if stage)
        if done > bar.n:
            bar.update(done - bar.n)


def _spark_failed(exc: Exception, desc: str, sc: Any) -> click.ClickException:
    """The error of a Spark job that failed outside the points' own code: an executor that cannot
    import the experiment's modules says what to install where, anything else its telling line."""
    from bridge.replay.launchers import failure_summary

    missing = MISSING_MODULE.search(str(exc))
    if missing:
        python = getattr(sc, "pythonExec", None) or os.environ.get("PYSPARK_PYTHON", "python3")
        return click.ClickException(
            f"{desc}: a Spark executor cannot import {missing.group(1)!r}: install schedbridge (this version, "
            f"with its dependencies) on every node, in the Python that runs Spark's Python workers "
            f"(spark.pyspark.python: {python}; set it with --conf spark.pyspark.python=PATH)")
    return click.ClickException(f"{desc}: the Spark job failed: {failure_summary(str(exc))}")


def _failed(point: P, exc: Exception, desc: str, name: Callable[[P], str]) -> click.ClickException:
    return click.ClickException(f"{desc}: the run {name(point)} failed: {type(exc).__name__}: {exc}")
