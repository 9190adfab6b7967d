"""Natjam-like baseline of the Falcon paper (our reading): whenever a waiting task's priority
beats a running task's, it preempts the lowest-priority one; no rank filter, no DAG awareness."""
from policies.framework.api import PolicyEnv
from policies.common.preemptive import preempt_lowest
from policies.falcon.tiers import LIVE, ObliviousConfig, TieredScheduler, best_fit, oblivious, suspended_room
from policies.framework.registry import PolicyEntry, Preempts


def make(config: ObliviousConfig, env: PolicyEnv) -> TieredScheduler:
    return oblivious("natjam", config, env, preempt_lowest, best_fit, 0.5, 0.5)


ENTRY = PolicyEntry("natjam", ObliviousConfig, make,
                    "Natjam-like priority preemption, dependency-oblivious (Falcon baseline, our reading)",
                    preempts=Preempts(suspended_room, live=LIVE))
