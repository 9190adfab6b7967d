"""`schedbridge sim-vs-live` on the real local testbed, read from the shared `demo_run` (the demo runs
its comparisons through sim-vs-live's API and writes the same files): a sleeping-task trace under
stock Spark and Eagle, and WordCount jobs (no trace durations) under FIFO and Kairos `--preempt`,
simulated from each run's measured work. Every figure of the results and the table is checked
against figures recomputed here from the replay's jobs.csv/tasks.csv/preemption.json and the
simulator's per-job file."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from tests.integration.demo_run import (MEANS, MISSION_LOAD, PLACEMENT, PLACEMENT_CUTOFF, PREEMPTION, PREEMPTION_CUTOFF,
                                        TRACE_TASKS, DemoRun, live_figures, long_jobs, measured_work, sim_figures)
from workloads.trace import read_trace

# make test-long: the shared demo run is six Spark applications (7-8 min of make test's 20)
pytestmark = [pytest.mark.integration, pytest.mark.long]


def _eq(got: float | None, expected: float) -> bool:
    """``got`` from JSON (null for NaN) or a CSV against a recomputed figure."""
    got = math.nan if got is None else float(got)
    return math.isnan(got) if math.isnan(expected) else got == pytest.approx(expected)


def _same(got: dict[str, dict[str, float]], expected: dict[str, dict[str, float]]) -> bool:
    return all(_eq(got[c][k], e) for c in expected for k, e in expected[c].items())


@pytest.mark.parametrize(("comparison", "policies", "cutoff"), [("placement", PLACEMENT, PLACEMENT_CUTOFF),
                                                               ("preemption", PREEMPTION, PREEMPTION_CUTOFF)])
def test_results_and_table_match_the_replay_and_the_simulation(demo_run: DemoRun, comparison: str,
                                                               policies: tuple[str, str], cutoff: float) -> None:
    result = demo_run.results(comparison)
    assert result["reporting_cutoff_s"] == cutoff
    assert [(r["policy"], r["repeat"]) for r in result["runs"]] == [(p, 1) for p in policies]
    table = pd.read_csv(demo_run.out / comparison / "table.csv")
    long = long_jobs(demo_run, comparison)
    for run in result["runs"]:
        live, sim = live_figures(demo_run, comparison, run["policy"]), sim_figures(demo_run, comparison, run["policy"])
        assert _same(run["live"], live) and _same(run["sim"], sim), (run["live"], live, run["sim"], sim)
        simulated = pd.read_csv(run["sim_file"])
        assert dict(zip(simulated["job_id"], simulated["class"] == "long")) == long
        mine = table[table["policy"] == run["policy"]].set_index(["class", "JCT"])
        for cls in ("short", "long"):
            for stat in ("p50", "p90", "p99"):
                row = mine.loc[(cls, stat)]
                assert _eq(row["live (s)"], live[cls][stat]) and _eq(row["sim (s)"], sim[cls][stat]), row
                if not math.isnan(sim[cls][stat]):
                    assert row["live/sim"] == pytest.approx(live[cls][stat] / sim[cls][stat])


def test_a_trace_is_simulated_as_the_trace_with_the_measured_overheads(demo_run: DemoRun) -> None:
    """Every task of the trace calibrates; a sleeping task cannot end before its duration, so the live
    path adds time to each, and the delays the simulator used are the measured ones."""
    result = demo_run.results("placement")
    assert (result["executors"], result["executor_cores"], result["slots"]) == (2, 2, 4)
    assert [(r["policy"], r["sim_policy"]) for r in result["runs"]] == [("stock-fair", "fair"), ("eagle", "eagle")]
    for run in result["runs"]:
        cal = run["calibration"]
        assert cal["samples"]["tasks"] == TRACE_TASKS and cal["samples"]["job_starts"] == len(MEANS)
        assert 0 < cal["task_overhead_s"] < 5 and cal["decision_s"] >= 0
        assert cal["applied"] == pytest.approx({"task_overhead_s": cal["task_overhead_s"],
                                                "network_delay_s": cal["decision_s"] / 2,
                                                "job_overhead_s": cal["job_start_s"] + cal["job_end_s"],
                                                "driver_gaps_s": 0.0,    # a trace job is one Spark job
                                                "offslot_share": 0.0})   # and nothing preempts
        assert set(cal["driver_s"].values()) == {0.0} and len(cal["driver_s"]) == len(MEANS)
        tasks = pd.read_csv(Path(run["live_dir"]) / "tasks.csv")
        assert len(tasks) == TRACE_TASKS and (tasks["finish_s"] - tasks["launch_s"]).min() >= 1.0  # slept
    text = (demo_run.out / "placement" / "table.txt").read_text()
    assert "stock-fair repeat 1: task overhead" in text and "eagle repeat 1: task overhead" in text


def test_stock_fair_is_sparks_fair_scheduler_with_a_pool_per_replayed_job(demo_run: DemoRun) -> None:
    """What Spark itself recorded: the FAIR scheduling mode, and each replayed job's Spark jobs in
    the pool named after it."""
    logs = demo_run.live_dir("placement", "stock-fair") / "eventlogs"
    events = [json.loads(line) for log in logs.iterdir() for line in log.read_text().splitlines()]
    [environment] = [e for e in events if e["Event"] == "SparkListenerEnvironmentUpdate"]
    assert environment["Spark Properties"]["spark.scheduler.mode"] == "FAIR"
    pools = {e["Properties"]["spark.jobGroup.id"]: e["Properties"].get("spark.scheduler.pool")
             for e in events if e["Event"] == "SparkListenerJobStart"
             and e["Properties"].get("spark.jobGroup.id", "").startswith("schedbridge-job-")}
    assert pools == {f"schedbridge-job-{j}": f"schedbridge-pool-{j:06d}" for j in range(len(MEANS))}


def test_wordcount_jobs_are_simulated_from_each_runs_measured_work(demo_run: DemoRun) -> None:
    result = demo_run.results("preemption")
    assert result["sim_durations"].startswith("measured from each live run (critical-path)")
    assert "simulated durations: measured from each live run" in (demo_run.out / "preemption" / "table.txt").read_text()
    for run in result["runs"]:
        live_dir = Path(run["live_dir"])
        played = read_trace(Path(run["sim_file"]).with_name("sim.trace"))
        assert {j.job_id: j.durations[0] for j in played} == pytest.approx(measured_work(live_dir), abs=1e-6)
        assert (live_dir / "preemption.json").exists() == (run["policy"] == "kairos")
        if run["policy"] == "kairos":   # queued and suspended tasks worked at the agents' 0.1 core, as simulated
            commands = json.loads((live_dir / "preemption.json").read_text())
            assert {c["share"] for c in commands if c["action"] == "suspend" and c["status"] == "ok"} == {0.1}
        assert run["calibration"]["offslot_share"] == (0.1 if run["policy"] == "kairos" else 0.0)
        assert run["calibration"]["samples"]["tasks"] == 0  # the measured work holds the task overhead
    long = long_jobs(demo_run, "preemption")
    assert len(long) == 4 and any(long.values()) and not all(long.values())  # both classes, as measured


def test_the_mission_policies_are_told_the_estimates_built_from_stocks_history(demo_run: DemoRun) -> None:
    """Under Hawk each replayed job is told its recurring job's mean task time in stock's
    run (the estimates file sim-vs-live built from stock's event logs), recomputed here from stock's
    jobs.csv and tasks.csv."""
    stock = demo_run.live_dir("mission", "stock")
    built = json.loads((stock.parent / "estimates.json").read_text())["jobs"]
    jobs, tasks = pd.read_csv(stock / "jobs.csv"), pd.read_csv(stock / "tasks.csv")
    key = {j: f"job:{c}" + (f"/q{json.loads(p)['query']}" if k == "tpch" else "")
           for j, c, k, p in zip(jobs["job_id"], jobs["category"], jobs["kind"], jobs["params"])}
    ok = tasks[tasks["status"] == "succeeded"]
    took = (ok["finish_s"] - ok["launch_s"]).groupby(ok["job_id"].map(key)).mean()
    assert {k: v["mean_s"] for k, v in built.items() if k.startswith("job:")} == pytest.approx(took.to_dict(),
                                                                                                abs=0.002)
    told = pd.read_csv(demo_run.live_dir("mission", "hawk") / "user-jobs.csv")
    replayed = told[told["occurrence"].str.startswith("schedbridge-job-")]
    assert sorted(replayed["key"]) == sorted(key.values()) and set(replayed["source"]) == {"file"}, told
    assert list(replayed["estimate_s"]) == pytest.approx([built[k]["mean_s"] for k in replayed["key"]])


def test_the_mission_runs_at_the_rate_fitted_to_the_offered_load(demo_run: DemoRun) -> None:
    """`offered_load`: stock Spark ran the mix at the file's rate (one job every 2 s), then at the
    rate its work called for, until a run offered the load asked (its tasks' slot-seconds over
    2 slots x 3 jobs x its interarrival) within 0.05 or three ran; both compared runs submitted
    their jobs at the rate fitted."""
    fitted = demo_run.out / "mission" / "offered-load"
    fit = json.loads((fitted / "fit.json").read_text())
    runs = fit["runs"]
    assert 1 <= len(runs) <= 3 and runs[0]["interarrival_s"] == 2.0, fit
    for n, run in enumerate(runs, 1):
        live = fitted / f"live-{n}"
        tasks = pd.read_csv(live / "tasks.csv")
        work = float((tasks["finish_s"] - tasks["launch_s"]).sum())
        assert run["work_s"] == pytest.approx(work, rel=1e-9) and work > 0
        assert run["offered"] == pytest.approx(work / (2 * 3 * run["interarrival_s"]), rel=1e-9)
        step = run["interarrival_s"]
        assert list(pd.read_csv(live / "jobs.csv")["arrival_s"]) == pytest.approx([0, step, 2 * step], abs=1e-5)
    if len(runs) > 1:
        assert runs[1]["interarrival_s"] == pytest.approx(runs[0]["work_s"] / (2 * 3 * MISSION_LOAD), rel=1e-9)
    if fit["measured_at_that_rate"]:
        assert abs(runs[-1]["offered"] - MISSION_LOAD) <= 0.05 and fit["interarrival_s"] == runs[-1]["interarrival_s"]
    else:
        assert len(runs) == 3
    seconds = fit["interarrival_s"]
    for policy in ("stock", "hawk"):
        arrivals = pd.read_csv(demo_run.live_dir("mission", policy) / "jobs.csv")["arrival_s"]
        assert list(arrivals) == pytest.approx([0, seconds, 2 * seconds], abs=1e-5), policy
    assert f"arrivals: one job every {seconds:.3g} s on average, fitted to offer 0.5" in demo_run.stdout
