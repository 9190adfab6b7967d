"""The simulator's prediction of one live run: the same jobs on the same shape, with its delays.

Policy parameters given once for a comparison of several policies go to each policy that has
them (a Hawk cutoff does not reach Sparrow); a parameter no compared policy has is an error, as
in `schedbridge simulate`. The live adapter's estimate keys (``LIVE_ONLY``) go to every live
policy and not to the simulator, which tells its policy the estimates the live run recorded.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path

import pandas as pd

from bridge.apps.simlive.calibration import Calibration, apply
from bridge.apps.simlive.compare import CompareError, calibrated_jobs
from bridge.apps.simlive.stages import StagePlay, replayed_table
from bridge.sim.engine import Simulation
from bridge.sim.output import PerJob
from bridge.sim.shape import MEMORY_GB_PER_CORE, ClusterShape, NodeKind
from policies.framework.api import ClusterSpec, DecisionError, PolicyEnv
from policies.framework.registry import (
    ConfigError, RegistryError, config_for, create, default_registry, describe, sim_model, stand_in, stand_ins_hint,
)
from workloads.model import Job


LIVE_ONLY = frozenset({"estimate", "learn"})  # the live adapter's estimate sources (bridge.drivers.user_jobs)


def parameter_names(policy: str) -> set[str]:
    """The parameters the simulator's model of live `policy` takes."""
    try:
        return {name for name, _type, _default in describe(default_registry().get(sim_model(policy)).config)}
    except RegistryError as exc:
        raise CompareError(f"{exc}, or {stand_ins_hint()}") from None


def split_params(policies: Sequence[str], params: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """Each policy's share of `params`; a stand-in takes none (Spark's own schedulers have no knobs here)."""
    names = {p: parameter_names(p) | LIVE_ONLY if stand_in(p) is None else set() for p in policies}
    unused = sorted(set(params) - set().union(*names.values()))
    if unused:
        raise CompareError(f"--param {', '.join(unused)}: no compared policy ({', '.join(policies)}) has "
                           f"{'this parameter' if len(unused) == 1 else 'these parameters'}")
    return {p: {k: v for k, v in params.items() if k in names[p]} for p in policies}


def node_shape(nodes: int, slots: int, memory_per_core: float | None) -> ClusterShape:
    """`nodes` nodes of `slots` cores and `memory_per_core` GB per core (the executors'; None: as
    `simulate --nodes --slots`, 4 GB per core)."""
    per_core = MEMORY_GB_PER_CORE if memory_per_core is None else memory_per_core
    return ClusterShape((NodeKind(nodes, slots, slots * per_core),))


def simulated(policy: str, params: Mapping[str, str], executors: int, cores: int, seed: int,
              network_delay: float = 0.0, memory_per_core: float | None = None) -> tuple[ClusterSpec, object]:
    """The cluster spec and the policy instance the simulator runs for live `policy` on executors
    x cores slots of `memory_per_core` GB each (:func:`node_shape`: cores and memory, so packers run
    too); CompareError, naming the policy, if the simulator cannot run it there."""
    name = sim_model(policy)
    try:
        spec = node_shape(executors, cores, memory_per_core).spec(network_delay)
        config = config_for(name, {k: v for k, v in params.items() if k not in LIVE_ONLY})
        return spec, create(name, PolicyEnv(spec, seed), config)
    except (RegistryError, ConfigError, ValueError) as exc:
        raise CompareError(f"{name}: {exc}") from None


def predict(jobs: Sequence[Job], policy: str, params: Mapping[str, str], executors: int, cores: int, seed: int,
            calibration: Calibration, cutoff: float, out: Path, nominal: Mapping[int, Job] | None = None,
            memory_per_core: float | None = None, declared: bool = True) -> pd.DataFrame:
    """Simulate `policy`'s model over `jobs` on executors x cores slots with `calibration`'s delays;
    returns the jobs as the live path would see them, also written to `out` (per-job CSV, the
    columns of `schedbridge simulate --out`). Each job's size for the short/long split is its
    `nominal` job's mean duration (default: `jobs` themselves). `memory_per_core`: the executors'
    GB per core (:func:`node_shape`); `declared`: whether tasks demand what their jobs declare
    (`_simulate`)."""
    table = _simulate(jobs, policy, params, (executors, cores, memory_per_core), seed, calibration, cutoff, declared)
    frame = calibrated_jobs(table, nominal or {j.job_id: j for j in jobs}, calibration)
    PerJob.of_table(frame, cutoff, executors * cores).write(out)
    return frame


def predict_stages(play: StagePlay, policy: str, params: Mapping[str, str], executors: int, cores: int, seed: int,
                   calibration: Calibration, cutoff: float, out: Path, nominal: Mapping[int, Job],
                   memory_per_core: float | None = None, declared: bool = True) -> pd.DataFrame:
    """:func:`predict` for a run played stage by stage (`bridge.apps.simlive.stages`): the stages'
    jobs simulated with the calibration's task overhead and network delay (its job start, end and
    driver gaps are measured per stage and job in `play` instead), read back per `nominal` job."""
    table = _simulate(play.jobs, policy, params, (executors, cores, memory_per_core), seed, calibration, cutoff,
                      declared)
    frame = replayed_table(table, play, nominal, executors * cores)
    PerJob.of_table(frame, cutoff, executors * cores).write(out)
    return frame


def _simulate(jobs: Sequence[Job], policy: str, params: Mapping[str, str], nodes: tuple[int, int, float | None],
              seed: int, calibration: Calibration, cutoff: float, declared: bool) -> pd.DataFrame:
    """The simulator's job table of `policy` over `jobs` on `nodes` (nodes, slots each, GB per core),
    tasks off their slots progressing at the run's measured share (live, the node agents' minimum
    share: a queued or suspended task runs in its shrunk container); CompareError, naming the
    policy, if the simulation fails or leaves a job unfinished. Without `declared` every task
    demands one core and its share of memory, whatever its job declares: live, Spark's own
    scheduler (a stand-in) and the node driver's NodeManagers place by slots alone."""
    name = sim_model(policy)
    spec, instance = simulated(policy, params, nodes[0], nodes[1], seed, calibration.network_delay_s, nodes[2])
    shape = replace(node_shape(*nodes), offslot_share=calibration.offslot_share)
    jobs = jobs if declared else [replace(j, demands=None) for j in jobs]
    try:
        played = shape.with_demands(apply(list(jobs), calibration))
        result = Simulation(played, instance, spec, report_long=lambda j: j.estimate > cutoff,
                            **shape.sim_options()).run()
    except (ValueError, DecisionError) as exc:
        raise CompareError(f"{name}: {exc}") from None
    if result.unfinished:
        raise CompareError(f"{name}: {len(result.unfinished)} job(s) never finished in the simulation "
                           f"(first: {result.unfinished[:5]})")
    return result.job_table()
