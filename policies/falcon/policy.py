"""Falcon as an engine policy: complementary packing + most-matched placement at the
masters, Eq. (2)/(3) priorities, Selective Preemption on the workers, precedence enforced."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from policies.framework.bounds import ESTIMATE_NOISE, FRACTION, MASTERS, SUSPENDED_PER_NODE, check_bounds
from policies.framework.api import PolicyEnv
from policies.common.preemptive import TaskKey
from policies.common.vectors import Vector, normalized
from policies.falcon.book import TaskBook
from policies.falcon.packing import PackItem, pack_complementary
from policies.falcon.preemption import DEFAULT_DELTA, Reading, SpDecision, SpTask, selective_preemption
from policies.falcon.tiers import LIVE, TieredScheduler, best_fit, singletons, suspended_room
from policies.framework.registry import PolicyEntry, Preempts


@dataclass(frozen=True)
class FalconConfig:
    """Defaults are the paper's (δ = 0.35, ω1 = ω2 = 0.5) plus our readings (5 masters,
    roulette choice, noiseless estimates). ``packing``/``dag_priority`` are ablations."""

    masters: int = field(default=5, metadata=MASTERS)
    delta: float = field(default=DEFAULT_DELTA, metadata=FRACTION)
    w1: float = field(default=0.5, metadata=FRACTION)
    w2: float = field(default=0.5, metadata=FRACTION)
    reading: Reading = Reading.ROULETTE
    packing: bool = True
    dag_priority: bool = True
    estimate_noise: float = field(default=0.0, metadata=ESTIMATE_NOISE)
    max_suspended: int = field(default=0, metadata=SUSPENDED_PER_NODE)   # per worker; 0: no limit (the paper's)

    def __post_init__(self) -> None:
        check_bounds(self)
        if abs(self.w1 + self.w2 - 1.0) > 1e-9:
            raise ValueError(f"w1 and w2 must sum to 1, got {self.w1} and {self.w2}")


def complementary_pairs(tasks: Sequence[TaskKey], demand: Callable[[TaskKey], Vector], capacity: Vector,
                        compatible: Callable[[TaskKey, TaskKey], bool]) -> list[tuple[TaskKey, ...]]:
    """Falcon's packing (Eq. 1) over demand shares, in dispatch (priority) order."""
    items = [PackItem(k, normalized(demand(k), capacity)) for k in tasks]
    return pack_complementary(items, compatible)


def make_falcon(config: FalconConfig, env: PolicyEnv) -> TieredScheduler:
    book = TaskBook(env.rng("estimates"), config.estimate_noise, config.w1, config.w2, config.dag_priority)
    rng = env.rng("selective-preemption")

    def rule(waiting: Sequence[SpTask[TaskKey]], running: Sequence[SpTask[TaskKey]],
             compatible: Callable[[TaskKey, TaskKey], bool]) -> SpDecision[TaskKey] | None:
        return selective_preemption(waiting, running, compatible, rng, config.delta, config.reading)

    return TieredScheduler("falcon", env, book, rule, masters=config.masters,
                           group=complementary_pairs if config.packing else singletons,
                           place=best_fit, early_start=False, max_suspended=config.max_suspended)


ENTRY = PolicyEntry("falcon", FalconConfig, make_falcon,
                    "Falcon: complementary packing, DAG priorities, Selective Preemption (delta)",
                    preempts=Preempts(suspended_room, live=LIVE))
