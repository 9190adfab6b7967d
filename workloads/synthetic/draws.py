"""How a trace kind draws job shapes (task counts and task durations), before arrivals.

Two families cover every thesis workload:
- `CentroidWorkload`: the k-means description of Chen et al. used for the Yahoo-, Cloudera-c- and
  Facebook-like traces (thesis §2.4.1). Each job picks a class; its number of tasks and its mean
  task duration are exponential draws whose scale is the class centroid; each task's duration is a
  Gaussian(mean, 2 x mean) draw, negative draws being redrawn ("excluding negative values").
- `CategoryWorkload`: a fixed menu of job categories with fixed task counts and durations (Hawk's
  motivating workload, Kairos' Table 4.1).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


class JobDrawer(Protocol):
    """Draws the task durations of `n_jobs` jobs, one array per job."""

    def draw(self, rng: np.random.Generator, n_jobs: int) -> list[np.ndarray]: ...


@dataclass(frozen=True)
class JobClass:
    """One k-means cluster: how often it occurs and its two centroids (exponential scales)."""

    share: float
    tasks_scale: float
    duration_scale: float


@dataclass(frozen=True)
class CentroidWorkload:
    """Jobs drawn around per-class centroids; see the module docstring."""

    classes: tuple[JobClass, ...]

    def draw(self, rng: np.random.Generator, n_jobs: int) -> list[np.ndarray]:
        shares = np.array([c.share for c in self.classes])
        picked = rng.choice(len(self.classes), size=n_jobs, p=shares / shares.sum())
        tasks_scale = np.array([c.tasks_scale for c in self.classes])[picked]
        duration_scale = np.array([c.duration_scale for c in self.classes])[picked]
        n_tasks = np.maximum(1, np.ceil(rng.exponential(tasks_scale))).astype(np.int64)
        job_means = rng.exponential(duration_scale)
        task_means = np.repeat(job_means, n_tasks)
        durations = _nonnegative_gaussian(rng, task_means)
        return np.split(durations, np.cumsum(n_tasks)[:-1])


def _nonnegative_gaussian(rng: np.random.Generator, means: np.ndarray) -> np.ndarray:
    """Gaussian(mean, 2 x mean) per element, redrawing negative values until none is left."""
    values = rng.normal(means, 2.0 * means)
    negative = values < 0
    while negative.any():
        values[negative] = rng.normal(means[negative], 2.0 * means[negative])
        negative = values < 0
    return values


@dataclass(frozen=True)
class Category:
    """A job category: every job of it has `n_tasks` tasks of `task_duration` seconds."""

    name: str
    n_tasks: int
    task_duration: float
    probability: float


@dataclass(frozen=True)
class CategoryWorkload:
    """Jobs drawn from a category menu.

    With `exact_shares` the category counts are the rounded shares, shuffled (Hawk's "95% of the
    jobs are short"); otherwise each job draws its category independently (Kairos' "each experiment
    draws 100 jobs with the probabilities" of Table 4.1).
    """

    categories: tuple[Category, ...]
    exact_shares: bool = False

    def draw(self, rng: np.random.Generator, n_jobs: int) -> list[np.ndarray]:
        probabilities = np.array([c.probability for c in self.categories])
        probabilities = probabilities / probabilities.sum()
        if self.exact_shares:
            counts = np.floor(probabilities * n_jobs).astype(np.int64)
            counts[0] += n_jobs - counts.sum()
            picked = rng.permutation(np.repeat(np.arange(len(self.categories)), counts))
        else:
            picked = rng.choice(len(self.categories), size=n_jobs, p=probabilities)
        return [
            np.full(self.categories[i].n_tasks, self.categories[i].task_duration) for i in picked.tolist()
        ]
