"""The simulator benchmark's fixed traces and the figures it reports (the benchmark asserts no
speed; these tests check that what it prints is what happened: event counts from the trace, the
percentiles against numpy on an independent run, RSS against the kernel's /proc accounting, the
speedups as quotients of the printed times)."""
from pathlib import Path

import numpy as np
import pytest

from bridge.sim.bench import run_one, trace_jobs
from workloads.synthetic import generate, get_kind


def test_traces_come_from_the_trace_generator_seeded():
    google = trace_jobs("google", 40)
    assert len(google) == 40 and [j.job_id for j in google] == list(range(40))
    assert all(j.submit >= 0 and j.n_tasks >= 1 for j in google)
    assert trace_jobs("google", 40) == google                                   # seeded
    assert trace_jobs("google", 40, load=0.1) == google                         # native arrival rate
    yahoo = trace_jobs("yahoo", 30, nodes=20, load=0.5)
    assert [j.durations for j in yahoo] == [j.durations for j in generate("yahoo", jobs=30, seed=1).jobs]
    offered = sum(j.work for j in yahoo) / (20 * yahoo[-1].submit)
    assert offered == pytest.approx(0.5, rel=0.5)                               # the load sets the rate
    assert trace_jobs("yahoo", 30, nodes=20, load=1.0)[-1].submit < yahoo[-1].submit
    assert get_kind("yahoo").default_jobs == 24_262                             # the full trace by default


def peak_rss_mb() -> float:
    """This process' peak resident set so far (VmHWM), read from /proc rather than getrusage."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            kb, unit = line.split()[1:]
            assert unit == "kB"
            return int(kb) / 1024
    raise AssertionError("no VmHWM in /proc/self/status")


def independent_run(policy, jobs, nodes, settings):
    """The same simulation through the simulator's API, and each job's completion time and mean
    task duration computed here from the raw log and trace."""
    from bridge.sim.engine import Simulation
    from policies.framework.api import ClusterSpec, PolicyEnv
    from policies.framework.registry import config_for, create

    spec = ClusterSpec(nodes)
    res = Simulation(jobs, create(policy, PolicyEnv(spec, 1), config_for(policy, settings)), spec).run()
    jct = np.array([res.log.job_finish[j.job_id] - j.submit for j in jobs])
    mean_duration = np.array([sum(j.durations) / len(j.durations) for j in jobs])
    return res.events, jct, mean_duration


def numpy_percentiles(jct, mean_duration, cutoff):
    long = mean_duration > cutoff
    return {c: {f"p{p}": float(np.percentile(jct[m], p)) for p in (50, 90, 99)}
            for c, m in (("short", ~long), ("long", long))}


def test_run_one_counts_the_events_the_trace_implies():
    """FIFO on a hand-made trace: per job one arrival, per task an Assign reaching its node, the
    run segment's end and the TaskFinished the scheduler hears, nothing else."""
    from workloads.model import Job

    jobs = [Job(0, 0.0, (2.0, 3.0)), Job(1, 1.0, (1.0,)), Job(2, 1.5, (4.0, 1.0, 1.0))]
    row = run_one("fifo", jobs, 2)
    assert (row["jobs"], row["tasks"], row["nodes"], row["unfinished"]) == (3, 6, 2, 0)
    assert row["events"] == 3 + 3 * 6


def test_measure_runs_the_policy_in_a_child_of_its_own():
    """`measure` (what `bench sim` and `bench sim-growth` run per point): the same simulation as
    here, its figures from a fresh process whose peak RSS is not this one's."""
    from bridge.sim.bench import measure
    from workloads.synthetic import trace_settings

    row = measure("sparrow", 30, 20, 0.85)
    jobs = trace_jobs("yahoo", 30, 20, 0.85)
    events, _, _ = independent_run("sparrow", jobs, 20, trace_settings("yahoo", "sparrow"))
    assert (row["policy"], row["jobs"], row["nodes"], row["trace"]) == ("sparrow", 30, 20, "yahoo")
    assert row["unfinished"] == 0
    assert row["events"] == events and row["tasks"] == sum(j.n_tasks for j in jobs)
    assert 10 < row["peak_rss_mb"] < 4096 and row["kernel_floor_us_per_event"] > 0


@pytest.mark.parametrize("code, how", [(-15, "killed by signal 15"), (1, "exit status 1")])
def test_a_failed_child_is_one_error_saying_how_it_ended(monkeypatch, code, how):
    import subprocess

    import click

    from bridge.sim.bench import measure

    monkeypatch.setattr(subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, code, "", "boom"))
    with pytest.raises(click.ClickException, match=rf"eagle: benchmark failed \({how}\):\nboom"):
        measure("eagle", 30, 20, 0.9)


def test_run_one_reports_the_figures():
    jobs = trace_jobs("yahoo", 30, nodes=20)
    rss_before = peak_rss_mb()
    row = run_one("hawk", jobs, 20, settings={"cutoff": 50.0})
    rss_after = peak_rss_mb()
    n_tasks = sum(len(j.durations) for j in jobs)
    assert (row["policy"], row["jobs"], row["tasks"], row["nodes"], row["unfinished"]) == ("hawk", 30, n_tasks, 20, 0)
    events, _, _ = independent_run("hawk", jobs, 20, {"cutoff": 50.0})
    assert row["events"] == events >= len(jobs) + n_tasks          # at least an arrival per job, an end per task
    # getrusage's peak RSS in MB: the kernel's high-water mark of this process, read before and after
    # (the two accountings may lag each other by a few pages: 1 MB of slack)
    assert 10 < rss_before - 1 <= row["peak_rss_mb"] <= rss_after + 1 < 4096
    # the rates are the event count over the times (printed rounded to 10 ms): events / rate gives
    # back each time to within that rounding
    wall, cpu = row["wall_s"], row["cpu_s"]
    assert 0 <= cpu <= wall + 0.01
    assert row["events"] / row["events_per_s"] == pytest.approx(wall, abs=0.0051, rel=1e-3)
    assert row["events"] / row["events_per_cpu_s"] == pytest.approx(cpu, abs=0.0051, rel=1e-3)


def test_side_by_side_runs_each_tree_and_checks_the_percentiles(tmp_path):
    """`bench sim --baseline`: the child imports the tree it is given (here this tree twice, the
    new side with a link to the old side's policies), and the percentile check flags a change."""
    from bridge.sim.sidebyside import Side, compare, differing_policy_files, percentile_check, policies_only
    from workloads.synthetic import trace_settings

    here = Path(__file__).resolve().parents[2]
    link = tmp_path / "pol"
    link.mkdir()
    # 400 jobs: each side's simulation CPU time, printed rounded to 10 ms, must not round to 0 (the
    # speedups divide by it; 40 jobs take under 5 ms with the compiled core)
    rows = compare((Side("old", here), Side("new", here, policies_only(here, link))), ["sparrow"],
                   400, 20, 0.9, "yahoo", 1, 0.05, lambda line: None)
    (row,) = rows
    assert row["percentiles_ok"] and row["percentiles_worst_rel_diff"] == 0.0
    # both sides ran the simulation this process runs through the API, and report its figures
    events, jct, mean_duration = independent_run("sparrow", trace_jobs("yahoo", 400, 20, 0.9), 20,
                                                 trace_settings("yahoo", "sparrow"))
    expected = numpy_percentiles(jct, mean_duration, get_kind("yahoo").policy_parameters()["cutoff"])
    for side in ("old", "new"):
        assert row[f"{side}_events"] == events
        assert row[f"{side}_jct"] == {c: pytest.approx(expected[c], rel=1e-12) for c in expected}
        # the child's peak at the simulation's end is part of the whole process' peak (wait4)
        assert 10 < row[f"{side}_sim_peak_rss_mb"] <= row[f"{side}_peak_rss_mb"] < 4096
        (sim_cpu,), (proc_cpu,) = row[f"{side}_sim_cpu_s"], row[f"{side}_proc_cpu_s"]
        assert 0 < sim_cpu <= proc_cpu + 0.01
    # one run per side: each speedup is the quotient of the two printed CPU times
    (old_cpu,), (new_cpu,) = row["old_sim_cpu_s"], row["new_sim_cpu_s"]
    assert row["speedup_sim_cpu"] == pytest.approx(old_cpu / new_cpu, abs=0.0051)
    assert row["speedup_per_pair"] == [pytest.approx(old_cpu / new_cpu, abs=0.0051)]
    (old_proc,), (new_proc,) = row["old_proc_cpu_s"], row["new_proc_cpu_s"]
    assert row["speedup_proc_cpu"] == pytest.approx(old_proc / new_proc, abs=0.0051)
    assert row["new_code"][1].startswith(str(link)) and row["old_code"][1].startswith(str(here))
    moved = {"jct": {c: dict(row["old_jct"][c]) for c in ("short", "long")}}
    moved["jct"]["long"]["p90"] *= 1.06
    worst, over = percentile_check({"jct": row["old_jct"]}, moved, 0.05)
    assert worst == pytest.approx(0.06) and len(over) == 1 and over[0].startswith("long p90")
    assert differing_policy_files(here, here) == []


def test_the_side_by_side_child_measures_without_pandas_and_names_its_core():
    """Its peak RSS is the simulation's: the percentiles come from numpy, pandas is never
    imported; and it says whether the compiled core ran. Its events and percentiles are those of
    the same simulation run here, the percentiles computed by numpy from each job's finish."""
    from bridge.sim.sidebyside import Side, run_child
    from policies.framework.compiled import check
    from workloads.synthetic import trace_settings

    here = Path(__file__).resolve().parents[2]
    row = run_child(Side("new", here), "kairos", 40, 20, 0.9, "yahoo")
    assert row["pandas"] is False and row["unfinished"] == 0
    events, jct, mean_duration = independent_run("kairos", trace_jobs("yahoo", 40, 20, 0.9), 20,
                                                 trace_settings("yahoo", "kairos"))
    assert row["events"] == events
    expected = numpy_percentiles(jct, mean_duration, get_kind("yahoo").policy_parameters()["cutoff"])
    assert row["jct"] == {c: pytest.approx(expected[c], rel=1e-12) for c in expected}
    assert 10 < row["sim_peak_rss_mb"] <= row["proc_peak_rss_mb"] < 4096
    assert 0 <= row["cpu_s"] <= row["proc_cpu_s"] + 0.01 and row["wall_s"] <= row["proc_wall_s"]
    files, reason = check()
    assert row["core"].startswith("simulator core: compiled") if files else row["core"].endswith(f"({reason})")


def test_a_side_by_side_run_too_short_to_time_is_an_error_naming_jobs():
    """A run with no measurable CPU time gives no speedup: one error naming --jobs, not a
    ZeroDivisionError (the child reports CPU to 0.1 ms; 40 jobs compiled once took under 5 ms)."""
    from bridge.sim.sidebyside import _summary

    jct = {c: {p: 1.0 for p in ("p50", "p90", "p99")} for c in ("short", "long")}
    row = {"side": "new", "jct": jct, "cpu_s": 0.0, "proc_cpu_s": 0.3, "unfinished": 0, "events": 10,
           "sim_peak_rss_mb": 50.0, "proc_peak_rss_mb": 60.0, "engine": "e", "policies": "p", "core": "c"}
    with pytest.raises(RuntimeError, match=r"sparrow: a run took no measurable CPU time.*give more --jobs"):
        _summary("sparrow", [{**row, "side": "old", "cpu_s": 0.01}], [row], 0.01)
