"""Stand-in for the Falcon paper's never-expanded "SNB" baseline (our proxy, after its
reference [35]: decentralised preemptive grid scheduling): random placement without a load
table, priority = waiting time (aging), preemption on any priority advantage, no DAG
awareness. Aging makes a waiting task overtake running ones quickly, so it preempts most."""
from policies.framework.api import PolicyEnv
from policies.common.preemptive import preempt_lowest
from policies.falcon.tiers import LIVE, ObliviousConfig, TieredScheduler, oblivious, random_worker, suspended_room
from policies.framework.registry import PolicyEntry, Preempts


def make(config: ObliviousConfig, env: PolicyEnv) -> TieredScheduler:
    return oblivious("snb", config, env, preempt_lowest, random_worker, 0.0, 1.0)


ENTRY = PolicyEntry("snb", ObliviousConfig, make,
                    "SNB stand-in: random placement, aging priority, eager preemption (our proxy)",
                    preempts=Preempts(suspended_room, live=LIVE))
