"""The independent points of an experiment, run in this process or in worker processes.

An experiment's points (a policy on a cluster size under a seed) do not depend on one another,
so ``schedbridge experiment --workers N`` spreads them over N processes of the standard library's
:class:`~concurrent.futures.ProcessPoolExecutor`. Each point is seeded on its own and the results
come back in the points' order whatever order they finish in, so an experiment writes the same
bytes as a serial run; it writes only after the last point, so a failed sweep leaves no result
files. Workers are spawned rather than forked: a forked copy of a process that has threads (tqdm's
monitor, numeric libraries' pools) can deadlock on a lock one of them held.
"""
from __future__ import annotations

import multiprocessing
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from typing import TypeVar

import click
from tqdm import tqdm

P = TypeVar("P")
R = TypeVar("R")

_workers = 1


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


def run_points(fn: Callable[[P], R], points: Sequence[P], desc: str,
               name: Callable[[P], str] = str) -> list[R]:
    """``fn`` on every point, returned in ``points``' order, under one progress bar. A point that
    raises stops the sweep with one error naming it (``name(point)``). With more than one worker,
    ``fn`` must be a module-level function and the points and results picklable."""
    count = min(_workers, len(points))
    with tqdm(total=len(points), desc=desc, unit="run") as bar:
        if count <= 1:
            results = []
            for point in points:
                results.append(_call(fn, point, desc, name))
                bar.update()
            return results
        return _in_workers(fn, points, desc, name, count, bar.update)


def _call(fn: Callable[[P], R], point: P, desc: str, name: Callable[[P], str]) -> R:
    try:
        return fn(point)
    except Exception as exc:
        raise _failed(point, exc, desc, name) from exc


def _in_workers(fn: Callable[[P], R], points: Sequence[P], desc: str, name: Callable[[P], str], count: int,
                done: Callable[[], object]) -> list[R]:
    """The points on ``count`` spawned processes; on a failure the points not started are
    cancelled (those running finish first: a process cannot be stopped cleanly mid-point)."""
    results: dict[int, R] = {}
    with ProcessPoolExecutor(count, mp_context=multiprocessing.get_context("spawn")) as pool:
        futures: dict[Future[R], int] = {pool.submit(fn, point): i for i, point in enumerate(points)}
        try:
            for future in as_completed(futures):
                index = futures[future]
                try:
                    results[index] = future.result()
                except Exception as exc:
                    raise _failed(points[index], exc, desc, name) from exc
                done()
        except BaseException:
            pool.shutdown(cancel_futures=True)
            raise
    return [results[i] for i in range(len(points))]


def _failed(point: P, exc: Exception, desc: str, name: Callable[[P], str]) -> click.ClickException:
    return click.ClickException(f"{desc}: the run {name(point)} failed: {type(exc).__name__}: {exc}")
