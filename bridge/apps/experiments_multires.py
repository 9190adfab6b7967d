"""Experiments for the multi-resource and DAG policies (Falcon, Psychas–Ghaderi, Ursa) and the
cross-family comparison; registered in :mod:`bridge.apps.experiments`.

Each function writes CSV and Markdown tables and PNG plots into ``out_dir`` and returns the
paths. All runs are seeded; ``quick`` shrinks sizes for smoke tests. Each experiment lists its
simulations as :class:`Point` objects and runs them through :func:`bridge.apps.sweep.run_points`, on
``--workers`` processes, before building its tables.
"""
from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from bridge.apps import sweep
from bridge.common import atomic, plots, tables
from bridge.sim.measures import mean_queue, measure, queue_at
from bridge.sim.engine import SimResult, simulate
from policies.framework import registry
from policies.framework.api import ClusterSpec, DecisionError, PolicyEnv
from workloads.model import Job
from workloads.multires import dag_jobs, google_shape, slotted, staircase, tpch_shape

SEED = 1
FALCON_FAMILY = ("falcon", "natjam", "amoeba", "srpt-preempt", "snb")
PSYCHAS_FAMILY = ("bf-js", "vqs", "vqs-bf", "fifo-ff")
SWITCH_COST = 0.002  # seconds per resume (our reading of a context switch)


def run(policy: str, jobs: Sequence[Job], spec: ClusterSpec, settings: dict[str, Any] | None = None,
        **sim: Any) -> SimResult:
    """One seeded simulation of a registered policy."""
    config = registry.config_for(policy, settings or {})
    return simulate(jobs, registry.create(policy, PolicyEnv(spec, SEED), config), spec, **sim)


@dataclass(frozen=True)
class Point:
    """One simulation of a sweep, as a worker process receives it. ``then`` reduces its result to
    what the tables need (in the worker: a whole result is large to send back); it must pickle,
    so it is a module-level function or a :func:`functools.partial` of one."""

    name: str
    policy: str
    jobs: Sequence[Job]
    spec: ClusterSpec
    then: Callable[[SimResult], Any]
    settings: dict[str, Any] = field(default_factory=dict)
    sim: dict[str, Any] = field(default_factory=dict)

    def __str__(self) -> str:
        return self.name


def run_point(point: Point) -> Any:
    """:func:`run` on the point, reduced by its ``then``."""
    return point.then(run(point.policy, point.jobs, point.spec, point.settings, **point.sim))


def run_points(points: Sequence[Point], desc: str) -> list[Any]:
    """The points' reduced results in their order (:func:`bridge.apps.sweep.run_points`)."""
    return sweep.run_points(run_point, points, desc)


# -- output helpers ---------------------------------------------------------------------------
def write_table(df: pd.DataFrame, out_dir: Path, name: str) -> list[Path]:
    """`name`.csv (full precision) and `name`.md (`bridge.common.tables.markdown`)."""
    csv, md = out_dir / f"{name}.csv", out_dir / f"{name}.md"
    atomic.write_text(csv, df.to_csv(index=False))
    atomic.write_text(md, tables.markdown(df))
    return [csv, md]


def plot_lines(df: pd.DataFrame, x: str, ys: Sequence[str], hue: str, path: Path, title: str,
               logy: bool = False) -> Path:
    """One panel per column in `ys` against `x`, one line per value of `hue` (`bridge.common.plots`)."""
    return plots.draw([[plots.Panel([plots.Series(str(name), part[x].tolist(), part[y].tolist(), marker="o")
                                     for name, part in df.groupby(hue, sort=False)],
                                    xlabel=x, ylabel=y, logy=logy) for y in ys]],
                      path, title, panel_size=(4.2, 3.4))


def ordering(values: dict[str, float], lower_is_better: bool = True) -> str:
    """'a < b < c' from best to worst."""
    items = sorted(values.items(), key=lambda kv: kv[1] if lower_is_better else -kv[1])
    return (" < " if lower_is_better else " > ").join(k for k, _ in items)


# -- Falcon -----------------------------------------------------------------------------------
def falcon_spec(workers: int) -> ClusterSpec:
    return ClusterSpec(workers, 6, dag_jobs.RESOURCES, dag_jobs.WORKER, 0.0005)


def falcon_workload(jobs: int, rate: float) -> list[Job]:
    """Falcon jobs with a median task of 1 s (our reading: the paper's sub-second regime with
    its tiny makespans cannot be matched with its own submission rates)."""
    return dag_jobs.generate(dag_jobs.DagSpec(jobs, rate, median_duration=1.0), SEED)


def falcon_orderings(out_dir: Path, quick: bool) -> list[Path]:
    """Makespan vs jobs (Fig. 4/7: 10 and 30 workers at 50 jobs/s) and the four metrics vs
    tasks (Figs. 5/6: 30 workers at 5 and 50 jobs/s), every policy of the paper."""
    counts = (20, 40) if quick else (25, 50, 100)
    settings = [(10, 50.0), (30, 50.0), (30, 5.0)]
    keys = [(workers, rate, n) for workers, rate in settings for n in counts]
    points = [Point(f"{p} ({workers} workers, {rate:g} jobs/s, {n} jobs)", p, jobs, falcon_spec(workers), measure,
                    sim={"switch_cost": SWITCH_COST})
              for workers, rate, n in keys for jobs in [falcon_workload(n, rate)] for p in FALCON_FAMILY]
    measured = iter(run_points(points, "falcon-orderings"))
    df = pd.DataFrame([{"workers": workers, "rate": rate, "n_jobs": n, **next(measured).row(dag_jobs.RESOURCES)}
                       for workers, rate, n in keys for _ in FALCON_FAMILY])
    paths = write_table(df, out_dir, "falcon_orderings")
    checks = []
    for (workers, rate, n), part in df.groupby(["workers", "rate", "n_jobs"], sort=False):
        v = {k: dict(zip(part.policy, part[k])) for k in
             ("makespan", "preemptions", "disorders", "throughput_tasks_per_ms", "avg_utilization")}
        checks.append({"workers": workers, "rate": rate, "n_jobs": n, "tasks": int(part.tasks.iloc[0]),
                       "makespan": ordering(v["makespan"]), "preemptions": ordering(v["preemptions"]),
                       "disorders": ordering(v["disorders"]),
                       "throughput": ordering(v["throughput_tasks_per_ms"], lower_is_better=False),
                       "utilization": ordering(v["avg_utilization"], lower_is_better=False)})
    paths += write_table(pd.DataFrame(checks), out_dir, "falcon_orderings_summary")
    paths += write_table(falcon_claims(df), out_dir, "falcon_claims")
    for workers, rate in settings:
        part = df[(df.workers == workers) & (df.rate == rate)]
        paths.append(plot_lines(part, "tasks", ["makespan", "preemptions", "disorders",
                                                 "throughput_tasks_per_ms", "avg_utilization"],
                                "policy", out_dir / f"falcon_{workers}w_{int(rate)}jps.png",
                                f"Falcon family, {workers} workers, {rate:g} jobs/s"))
    return paths


def falcon_claims(df: pd.DataFrame) -> pd.DataFrame:
    """In how many settings each ordering the paper reports holds."""
    groups = [{p: r for p, r in zip(g.policy, g.to_dict("records"))}
              for _, g in df.groupby(["workers", "rate", "n_jobs"], sort=False)]

    def chain(metric: str, order: Sequence[str]) -> Any:
        return lambda d: all(d[a][metric] < d[b][metric] for a, b in zip(order, order[1:]))

    def extreme(metric: str, policy: str, lowest: bool) -> Any:
        return lambda d: all((d[policy][metric] < d[q][metric]) == lowest and d[policy][metric] != d[q][metric]
                             for q in d if q != policy)

    thr = "throughput_tasks_per_ms"
    claims = [
        ("makespan: Falcon < Natjam < Amoeba (Figs. 4, 7)", chain("makespan", ["falcon", "natjam", "amoeba"])),
        ("makespan: Falcon lowest of all five", extreme("makespan", "falcon", True)),
        ("preemptions: Falcon lowest (Figs. 5a, 6a)", extreme("preemptions", "falcon", True)),
        ("preemptions: SNB highest", extreme("preemptions", "snb", False)),
        ("disorders: Falcon < Natjam < Amoeba < SRPT < SNB (Figs. 5b, 6b)",
         chain("disorders", ["falcon", "natjam", "amoeba", "srpt-preempt", "snb"])),
        ("disorders: Falcon = 0 and SNB highest",
         lambda d: d["falcon"]["disorders"] == 0 and extreme("disorders", "snb", False)(d)),
        ("throughput: Falcon highest (Figs. 5c, 6c)", extreme(thr, "falcon", False)),
        ("throughput: SNB < SRPT < {Amoeba, Natjam} < Falcon",
         lambda d: d["snb"][thr] < d["srpt-preempt"][thr] < min(d["amoeba"][thr], d["natjam"][thr])
         and max(d["amoeba"][thr], d["natjam"][thr]) < d["falcon"][thr]),
        ("utilisation: Falcon highest (Figs. 5d, 6d)", extreme("avg_utilization", "falcon", False)),
        ("utilisation: SNB lowest", extreme("avg_utilization", "snb", True)),
    ]
    return pd.DataFrame([{"claim": text, "holds": f"{sum(map(test, groups))}/{len(groups)}"} for text, test in claims])


def falcon_ablations(out_dir: Path, quick: bool) -> list[Path]:
    """δ sweep (preemptions should fall as δ grows), packing off, Eq. (3)-only priority,
    sequential reading of the probability choice."""
    jobs = falcon_workload(30 if quick else 60, 50.0)
    spec = falcon_spec(30)
    variants: list[tuple[str, dict[str, Any]]] = [(f"delta={d}", {"delta": d}) for d in (0.0, 0.2, 0.35, 0.5, 0.8)]
    variants += [("no packing", {"packing": False}), ("no DAG priority", {"dag_priority": False}),
                 ("sequential choice", {"reading": "sequential"}), ("estimate noise 0.3", {"estimate_noise": 0.3})]
    measured = run_points([Point(f"falcon {label}", "falcon", jobs, spec, measure, settings,
                                 {"switch_cost": SWITCH_COST}) for label, settings in variants], "falcon-ablations")
    df = pd.DataFrame([{"variant": label, **m.row(dag_jobs.RESOURCES)}
                       for (label, _), m in zip(variants, measured)])
    paths = write_table(df, out_dir, "falcon_ablations")
    deltas = df[df.variant.str.startswith("delta=")].assign(delta=lambda d: d.variant.str[6:].astype(float))
    paths.append(plot_lines(deltas.assign(policy="falcon"), "delta", ["preemptions", "makespan"], "policy",
                            out_dir / "falcon_delta.png", "Falcon: Selective Preemption threshold δ"))
    return paths


# -- Psychas–Ghaderi --------------------------------------------------------------------------
def unit_spec(servers: int, capacity: float = 1.0) -> ClusterSpec:
    return ClusterSpec(servers, 512, ("size",), (capacity,), 0.0)


def growth(result: SimResult, horizon: float) -> tuple[float, float, float]:
    """Mean queue over the second half, and the queue at mid-horizon and at the end."""
    mid, end = queue_at(result, [horizon / 2, horizon])
    return mean_queue(result, horizon / 2, horizon), float(mid), float(end)


def psychas_stability(out_dir: Path, quick: bool) -> list[Path]:
    """Fig. 3a: VQS's throughput limit 4μ/3 ≈ 0.0133 vs 0.02 (rate sweep, one unit server);
    Fig. 3b: BF-J/S and VQS-BF lock into (2, 1) with deterministic service, VQS does not."""
    h3a = 100_000 if quick else 300_000
    rates, fig3a_policies = (0.010, 0.012, 0.013, 0.014, 0.016, 0.018), ("bf-js", "vqs", "vqs-bf")
    h3b = 600_000 if quick else 2_000_000
    times = [h3b * i / 20 for i in range(1, 21)]
    fig3b_jobs = slotted.generate(slotted.fig3b(0.0306, h3b), SEED)
    points = [Point(f"{p} (Fig. 3a, rate {rate:g})", p, jobs, unit_spec(1), functools.partial(growth, horizon=h3a),
                    {"J": 4})
              for rate in rates for jobs in [slotted.generate(slotted.fig3a(rate, h3a), SEED)] for p in fig3a_policies]
    points += [Point(f"{p} (Fig. 3b)", p, fig3b_jobs, unit_spec(1, 10.0), functools.partial(queue_at, times=times),
                     {"J": 4}) for p in PSYCHAS_FAMILY]
    results = run_points(points, "psychas-stability")
    df = pd.DataFrame([{"rate": rate, "policy": p, "mean_queue_2nd_half": q, "queue_mid": mid, "queue_end": end}
                       for (rate, p), (q, mid, end) in zip([(r, p) for r in rates for p in fig3a_policies], results)])
    paths = write_table(df, out_dir, "psychas_fig3a")
    paths.append(plot_lines(df, "rate", ["mean_queue_2nd_half", "queue_end"], "policy",
                            out_dir / "psychas_fig3a.png", "Fig. 3a: sizes 0.4/0.6, geometric mean 100", logy=True))
    tdf = pd.DataFrame([{"slot": t, "policy": p, "queue": q}
                        for p, queues in zip(PSYCHAS_FAMILY, results[len(rates) * len(fig3a_policies):])
                        for t, q in zip(times, queues)])
    fig3b = tdf.pivot(index="slot", columns="policy", values="queue").reset_index()
    paths += write_table(fig3b, out_dir, "psychas_fig3b")
    paths.append(plot_lines(tdf, "slot", ["queue"], "policy", out_dir / "psychas_fig3b.png",
                            "Fig. 3b: sizes 2/5 (2:1), capacity 10, deterministic 100 slots, λ = 0.0306"))
    return paths


def psychas_load(out_dir: Path, quick: bool) -> list[Path]:
    """Fig. 4: average queue vs traffic intensity α, 5 unit servers, μ = 0.01."""
    horizon = 6_000 if quick else 20_000
    alphas = (0.85, 0.95) if quick else (0.85, 0.90, 0.95, 0.99)
    keys = [("Unif[0.1,0.9]" if large else "Unif[0.01,0.19]", large, J, alpha, p)
            for large, J in ((False, 7), (True, 4)) for alpha in alphas for p in PSYCHAS_FAMILY]
    jobs = {(large, alpha): slotted.generate(slotted.fig4(alpha, large, horizon=horizon), SEED)
            for _, large, _, alpha, _ in keys}
    then = functools.partial(mean_queue, start=0.1 * horizon, end=horizon)
    queues = run_points([Point(f"{p} (sizes {sizes}, alpha {alpha:g})", p, jobs[large, alpha], unit_spec(5), then,
                               {"J": J}) for sizes, large, J, alpha, p in keys], "psychas-load")
    df = pd.DataFrame([{"sizes": sizes, "alpha": alpha, "policy": p, "mean_queue": q}
                       for (sizes, _, _, alpha, p), q in zip(keys, queues)])
    paths = write_table(df, out_dir, "psychas_fig4")
    for sizes, part in df.groupby("sizes"):
        tag = "b" if "0.9" in sizes else "a"
        paths.append(plot_lines(part, "alpha", ["mean_queue"], "policy", out_dir / f"psychas_fig4{tag}.png",
                                f"Fig. 4{tag}: sizes {sizes}, 5 servers", logy=True))
    return paths


def smallest_j(sizes: Iterable[float], eps: float = 0.01) -> int:
    """The smallest J > 1 with F_R(1/2^J) < ε (Cor. 1)."""
    s = sorted(sizes)
    for J in range(2, 20):
        if sum(1 for x in s if x <= 2.0 ** -J) / len(s) < eps:
            return J
    return 20


def psychas_trace(out_dir: Path, quick: bool) -> list[Path]:
    """Fig. 5 on a generated trace with the Google 2011 shape: queue vs traffic scaling."""
    servers, tasks = (10, 2000) if quick else (20, 6000)
    spec = ClusterSpec(servers, 512, ("cpu", "mem"), (1.0, 1.0), 0.0)
    keys, points = [], []
    for scaling in (1.0, 1.2, 1.4, 1.6):
        jobs = google_shape.generate(servers, tasks, scaling, SEED)
        J = smallest_j(max(j.demands[0]) for j in jobs if j.demands is not None)
        end = jobs[-1].submit
        for p in PSYCHAS_FAMILY:
            keys.append({"scaling": scaling, "J": J, "policy": p})
            points.append(Point(f"{p} (traffic scaling {scaling:g})", p, jobs, spec,
                                functools.partial(mean_queue, start=0.1 * end, end=end),
                                {"J": J, "slot": google_shape.SLOT}))
    df = pd.DataFrame([{**key, "mean_queue": q} for key, q in zip(keys, run_points(points, "psychas-trace"))])
    paths = write_table(df, out_dir, "psychas_fig5")
    paths.append(plot_lines(df, "scaling", ["mean_queue"], "policy", out_dir / "psychas_fig5.png",
                            f"Fig. 5 (generated Google-shaped trace, {servers} servers)", logy=True))
    return paths


# -- Ursa -------------------------------------------------------------------------------------
URSA_VARIANTS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("Ursa-EJF", "ursa", {"order": "ejf"}), ("Ursa-SRJF", "ursa", {"order": "srjf"}),
    ("Ursa per-task", "ursa-per-task", {}), ("Capacity", "capacity", {}), ("Tetris", "tetris", {}),
    ("Tetris2", "tetris2", {}))


def ursa_placement(out_dir: Path, quick: bool) -> list[Path]:
    """Table 4's placement ranking in one runtime (monotask worker queues) on TPC-H-shaped
    DAGs, and the §5.3 staircase against its closed form."""
    spec = ClusterSpec(8, 12, tpch_shape.RESOURCES, (8.0, 4.0, 64.0), 0.0)
    jobs = tpch_shape.generate(20 if quick else 40, 2.0, SEED)
    measured = run_points([Point(label, policy, jobs, spec, measure, settings)
                           for label, policy, settings in URSA_VARIANTS], "ursa-placement")
    rows = [{"placement": label, "makespan": m.makespan, "mean_jct": m.mean_jct,
             "SE_cpu": m.se[0], "UE_cpu": m.ue[0], "SE_net": m.se[1]}
            for (label, _, _), m in zip(URSA_VARIANTS, measured)]
    paths = write_table(pd.DataFrame(rows), out_dir, "ursa_placement")
    n = 8 if quick else 20
    stair = []
    sspec = ClusterSpec(4, 4, staircase.RESOURCES, staircase.capacity(2, 2), 0.0)
    for mono in (True, False):
        r = run("ursa", staircase.generate(n, 8, monotasks=mono), sspec)
        for k in range(1, n + 1):
            stair.append({"job": k, "monotasks": mono, "jct": r.log.job_finish[k - 1], "ideal": staircase.ideal_jct(k)})
    sdf = pd.DataFrame(stair)
    paths += write_table(sdf, out_dir, "ursa_staircase")
    paths.append(plot_lines(sdf.assign(runtime=sdf.monotasks.map({True: "monotasks", False: "executor tasks"})),
                            "job", ["jct"], "runtime", out_dir / "ursa_staircase.png",
                            "Ursa-EJF staircase (ideal: 40k, 40k + 4)"))
    return paths


# -- cross-family -----------------------------------------------------------------------------
def cross_family_row(point: Point) -> dict[str, object]:
    """A policy's row of the cross-family table, or why it cannot run the workload."""
    try:
        return {**run_point(point).row(dag_jobs.RESOURCES), "note": ""}
    except (DecisionError, ValueError, KeyError) as e:
        return {"policy": point.policy, "note": f"cannot run: {str(e).splitlines()[0][:90]}"}


def cross_family(out_dir: Path, quick: bool) -> list[Path]:
    """Every registered policy on the same multi-resource DAG workload (Falcon-style jobs,
    30 workers of 6 cores / 12 GB, 5 jobs/s). Policies that cannot run it say why."""
    jobs = falcon_workload(20 if quick else 60, 5.0)
    spec = falcon_spec(30)
    points = [Point(policy, policy, jobs, spec, measure, sim={"switch_cost": SWITCH_COST})
              for policy in registry.names()]
    rows = sweep.run_points(cross_family_row, points, "cross-family")
    df = pd.DataFrame(rows)
    paths = write_table(df, out_dir, "cross_family")
    ok = df[df.note == ""].sort_values("makespan")
    return paths + [plots.bars(ok.policy.tolist(), ok.makespan.tolist(), out_dir / "cross_family.png",
                               "makespan (s)", "All policies, same multi-resource DAG workload")]


__all__ = ["falcon_orderings", "falcon_ablations", "psychas_stability", "psychas_load", "psychas_trace",
           "ursa_placement", "cross_family"]
