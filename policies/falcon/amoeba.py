"""Amoeba-like baseline of the Falcon paper (our reading): when a waiting task beats some
running task, checkpoint the running task with the most remaining work, ignoring the
other waiting tasks; no DAG awareness."""
from policies.framework.api import PolicyEnv
from policies.common.preemptive import preempt_longest
from policies.falcon.tiers import LIVE, ObliviousConfig, TieredScheduler, best_fit, oblivious, suspended_room
from policies.framework.registry import PolicyEntry, Preempts


def make(config: ObliviousConfig, env: PolicyEnv) -> TieredScheduler:
    return oblivious("amoeba", config, env, preempt_longest, best_fit, 0.5, 0.5)


ENTRY = PolicyEntry("amoeba", ObliviousConfig, make,
                    "Amoeba-like checkpoint-the-longest preemption (Falcon baseline, our reading)",
                    preempts=Preempts(suspended_room, live=LIVE))
