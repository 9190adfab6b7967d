"""The measures of a run (`bridge.common.metrics`, computed once on numpy columns) and
`simulate`'s outputs made from them without pandas (`bridge.sim.output`, `bridge.common.tables`,
shared durations in `workloads.trace`): by hand on small runs with unfinished, rejected,
zero-length and suspended work; fed from a table as from the simulation log; and `simulate`'s
figures read back by `report`."""
from __future__ import annotations

import json
import math
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from bridge.apps.report.load import load_run
from bridge.apps.report.table import build
from bridge.common import tables
from bridge.cluster.measure import SegmentLog
from bridge.common.metrics import Jobs, Segments, summarize, summary, with_completion
from bridge.sim.cli import simulate
from bridge.sim.engine import Simulation
from bridge.sim.output import PerJob, _csv_cells, segments
from policies.framework.api import ClusterSpec, PolicyEnv
from policies.framework.registry import config_for, create
from workloads.model import Job
from workloads.synthetic import generate, simulator_jobs
from workloads.trace import SHARED_DURATIONS, iter_trace, parse_thesis_line, read_trace, write_trace

CUTOFF = 90.5811
ROOT = Path(__file__).resolve().parents[2]
NAN = math.nan

# Six jobs (cutoff 5 s on the mean task duration): 0, 1 short and finished; 2 long and finished;
# 3 never finished; 4 rejected; 5 of zero-length tasks (runtime alone 0: no slowdown).
JOBS = pd.DataFrame({
    "job_id": [10, 11, 12, 13, 14, 15],
    "submit": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0],
    "finish": [4.0, 3.0, 22.0, NAN, NAN, 5.5],
    "n_tasks": [2, 1, 1, 1, 3, 2],
    "rejected": [False, False, False, False, True, False],
    "ideal": [2.0, 1.0, 10.0, 1.0, 10.0, 0.0],
    "mean_duration": [1.0, 1.0, 10.0, 1.0, 10.0, 0.0],
})
# Job 10's task 0 suspended twice before it completed; 17 busy slot-seconds in all.
TASKS = pd.DataFrame({
    "job_id": [10, 10, 10, 10, 11, 12, 15, 15],
    "task": [0, 0, 0, 1, 0, 0, 0, 1],
    "start": [0.0, 2.0, 3.0, 0.0, 2.0, 12.0, 5.5, 5.5],
    "end": [2.0, 3.0, 4.0, 2.0, 3.0, 22.0, 5.5, 5.5],
    "done": [False, False, True, True, True, True, True, True],
})
COUNTERS = {"probes_behind_long": 3, "short_tasks_after_long": 1, "stolen_entries": 2, "rejected_probes": 1}
BY_HAND = {
    "reporting_cutoff": 5.0, "jobs": 6, "tasks": 10, "finished_jobs": 4, "unfinished_jobs": 1, "rejected_jobs": 1,
    # short JCTs 4, 2, 0.5 -> sorted 0.5 2 4: p90 at rank 1.8 = 2 + 0.8 x 2; p99 at 1.98
    "jct": {"short": {"count": 3, "p50": 2.0, "p90": 3.6, "p99": 3.96, "mean": 6.5 / 3, "max": 4.0},
            "long": {"count": 1, "p50": 20.0, "p90": 20.0, "p99": 20.0, "mean": 20.0, "max": 20.0}},
    "slowdown": {"short": {"count": 2, "p50": 2.0, "p90": 2.0, "p99": 2.0, "mean": 2.0, "max": 2.0},
                 "long": {"count": 1, "p50": 2.0, "p90": 2.0, "p99": 2.0, "mean": 2.0, "max": 2.0}},
    "makespan": 22.0,                 # first submission 0 to last finish 22
    "utilization": 17.0 / (2 * 22),   # on 2 slots, from the first submission to the last segment end
    "suspensions": 2, "tasks_preempted": 1,
    "head_of_line": {"probes_behind_long": 3, "short_tasks_after_long": 1, "rescheduled_probes": 3},
    "counters": COUNTERS,
}


def arrays(jobs: pd.DataFrame, tasks: pd.DataFrame) -> tuple[Jobs, Segments]:
    return (Jobs(*(jobs[c].to_numpy() for c in ("submit", "finish", "n_tasks", "rejected", "ideal", "mean_duration"))),
            Segments(*(tasks[c].to_numpy() for c in ("job_id", "task", "start", "end", "done"))))


def close(found, expected):
    """``found == expected`` with floats to 1e-12 (the hand figures are decimal), NaN equal to NaN."""
    if isinstance(expected, dict):
        return list(found) == list(expected) and all(close(found[k], v) for k, v in expected.items())
    if isinstance(expected, float):
        return isinstance(found, float) and (math.isnan(found) if math.isnan(expected)
                                             else found == pytest.approx(expected, rel=1e-12))
    return type(found) is type(expected) and found == expected


def test_summary_by_hand_on_arrays_and_on_tables():
    """The one summary, on numpy columns (as `simulate` gives it) and on pandas tables (as the
    other commands do), against figures worked out by hand; the caller's own keys come first."""
    expected = {"policy": "x", **BY_HAND}
    found = summary(*arrays(JOBS, TASKS), cutoff=5.0, n_slots=2, counters=COUNTERS, extra={"policy": "x"})
    assert close(found, expected), found
    assert close(summarize(JOBS, TASKS, cutoff=5.0, n_slots=2, counters=COUNTERS, extra={"policy": "x"}), expected)
    without = summary(*arrays(JOBS, TASKS), cutoff=5.0, n_slots=2)
    assert "head_of_line" not in without and "counters" not in without


def test_a_table_names_its_columns_its_own_way():
    """Slowdown's denominator falls back to max_duration, then mean_duration; no ``rejected``
    column means no job was rejected (job 14 counts as unfinished)."""
    jobs = JOBS.drop(columns=["rejected", "ideal"]).assign(max_duration=[4.0, 1.0, 10.0, 1.0, 10.0, 0.0])
    found = summarize(jobs, TASKS, cutoff=5.0, n_slots=2)
    assert (found["unfinished_jobs"], found["rejected_jobs"]) == (2, 0)
    assert found["slowdown"]["short"]["p50"] == 1.5          # 4 / 4 and 2 / 1
    found = summarize(jobs.drop(columns=["max_duration"]), TASKS, cutoff=5.0, n_slots=2)
    assert found["slowdown"]["short"]["max"] == 4.0           # 4 / 1


def test_missing_values_are_left_out():
    """A missing submission, segment end or length adds nothing and is no extreme (pandas'
    skipna, as the tables always had it); no finished job: no makespan; no segment: no span."""
    jobs = JOBS.assign(submit=[NAN, 1.0, 2.0, 3.0, 4.0, 5.0])
    tasks = pd.concat([TASKS, pd.DataFrame({"job_id": [13], "task": [0], "start": [3.0], "end": [NAN],
                                            "done": [True]})], ignore_index=True)
    found = summary(*arrays(jobs, tasks), cutoff=5.0, n_slots=2)
    assert found["makespan"] == 21.0                          # from the first known submission, 1
    assert found["utilization"] == 17.0 / (2 * 21)
    assert found["jct"]["short"]["count"] == 2                # job 10 has no submission, so no JCT
    unfinished = JOBS.assign(finish=NAN)
    found = summary(*arrays(unfinished, TASKS.iloc[:0]), cutoff=5.0, n_slots=2)
    assert math.isnan(found["makespan"]) and math.isnan(found["utilization"])
    assert found["jct"]["long"]["count"] == 0                 # a class without a finished job: NaN figures
    assert all(math.isnan(v) for k, v in found["jct"]["long"].items() if k != "count")
    empty = summarize(JOBS.iloc[:0], TASKS.iloc[:0], cutoff=5.0, n_slots=2)
    assert (empty["jobs"], empty["tasks"], empty["suspensions"]) == (0, 0, 0) and math.isnan(empty["utilization"])


def test_with_completion_keeps_the_columns_types():
    """jct in the table's own dtype (whole seconds stay integers, as pandas' subtraction keeps
    them); a column holding None counts as missing; the class label as text."""
    whole = pd.DataFrame({"submit": [0, 5], "finish": [4, 9], "mean_duration": [1, 9], "ideal": [2, 0]})
    j = with_completion(whole, cutoff=5)
    assert j["jct"].dtype == np.int64 and list(j["jct"]) == [4, 4]
    assert j["slowdown"].iloc[0] == 2.0 and math.isnan(j["slowdown"].iloc[1])
    assert list(j["cls"]) == ["short", "long"] and list(j.columns[:4]) == list(whole.columns)
    unknown = whole.astype({"finish": object})
    unknown.loc[1, "finish"] = None
    assert math.isnan(with_completion(unknown, cutoff=5)["jct"].iloc[1])


def test_the_per_job_file_by_hand(tmp_path):
    """Each column as `DataFrame.to_csv` writes it: floats in numpy's shortest form, a missing
    value as an empty field, integers and booleans by str."""
    per_job = PerJob(np.array([7, 8]), Jobs(np.array([0.0, 1e-7]), np.array([2.5, NAN]), np.array([2, 1]),
                                            np.array([False, True]), np.array([2.0, 1.0]), np.array([1.0, 9.0])),
                     np.array([1.0, 0.1]), cutoff=4.0, cluster_slots=3)
    per_job.write(tmp_path / "o.csv")
    assert (tmp_path / "o.csv").read_text() == (
        "job_id,submit,finish,completion_time,slowdown,class,n_tasks,mean_duration,estimate,rejected,"
        "reporting_cutoff,cluster_slots\n"
        "7,0.0,2.5,2.5,1.25,short,2,1.0,1.0,False,4.0,3\n"
        "8,1e-07,,,,long,1,9.0,0.1,True,4.0,3\n")
    assert (tmp_path / "o.csv").read_text() == per_job.frame().to_csv(index=False)   # what pandas would write
    per_job.write(tmp_path / "o.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "o.parquet"), per_job.frame())
    assert per_job.infinite_at() is None
    per_job.columns["estimate"][1] = math.inf
    assert per_job.infinite_at() == "estimate"


def test_float_cells_are_numpys_text():
    """A float column's cells as numpy's ``astype(str)`` gives them (what pandas writes), at every
    magnitude and bit pattern, NaN as an empty field."""
    rng = np.random.default_rng(5)
    bits = rng.integers(0, 2**64, size=50_000, dtype=np.uint64).view(np.float64)
    values = np.concatenate([bits[np.isfinite(bits)], rng.random(1000) * 10.0 ** rng.integers(-9, 18, 1000),
                             [1e-4, 9.999999999999999e-05, 1e16, 9999999999999998.0, 0.0, -0.0, NAN, 5e-324]])
    expected = values.astype(str).astype(object)
    expected[np.isnan(values)] = ""
    assert _csv_cells(values) == expected.tolist()


def run(policy: str, jobs: list[Job], nodes: int):
    spec = ClusterSpec(nodes, slots_per_node=2 if policy == "kairos" else 1)
    pol = create(policy, PolicyEnv(spec, 3), config_for(policy, {}))
    return Simulation(jobs, pol, spec, report_long=lambda j: j.mean_duration > CUTOFF).run()


def from_log_and_from_tables(result, cutoff=CUTOFF):
    """(per-job CSV, summary) fed from the log's arrays as `simulate` feeds them, and fed from the
    run's pandas job and task tables as every other command feeds them."""
    n_slots = result.spec.n_nodes * result.spec.slots_per_node
    dump = lambda s: json.dumps(s, sort_keys=True, default=str)  # noqa: E731  (NaN prints as NaN)
    outputs = []
    for per_job, segs in ((PerJob.of_run(result, cutoff, n_slots), segments(result.log)),
                          (PerJob.of_table(result.job_table(), cutoff, n_slots), None)):
        found = summary(per_job.jobs, segs, cutoff=cutoff, n_slots=n_slots, counters=result.log.counters) \
            if segs is not None else summarize(result.job_table(), result.task_table(), cutoff=cutoff,
                                               n_slots=n_slots, counters=result.log.counters)
        outputs.append((per_job.frame().to_csv(index=False), dump(found)))
    return outputs


@pytest.mark.parametrize("policy", ["fifo", "sparrow", "hawk", "eagle", "kairos", "bigc", "lwl"])
def test_the_log_and_the_tables_give_one_result(policy):
    """`simulate`'s inputs (the log's arrays, each job read as `SimResult.job_table` reads it) and
    the engine's tables feed the measures the same values."""
    result = run(policy, simulator_jobs(generate("yahoo", jobs=150, seed=2, load=0.9, nodes=40).jobs), 40)
    from_log, from_tables = from_log_and_from_tables(result)
    assert from_log == from_tables
    assert from_log[0].count("\n") == 151


def test_unfinished_rejected_zero_length_and_suspended_work_from_the_log():
    jobs = simulator_jobs(generate("yahoo", jobs=60, seed=5, load=0.8, nodes=20).jobs)
    jobs[7] = Job(jobs[7].job_id, jobs[7].submit, (0.0, 0.0), 0.0)
    result = run("hawk", jobs, 20)
    lg = result.log
    del lg.job_finish[jobs[3].job_id]
    lg.rejected_jobs[jobs[4].job_id] = None
    del lg.job_finish[jobs[4].job_id]
    for i in (5, 9):
        lg.seg_done[i] = 0
    from_log, from_tables = from_log_and_from_tables(result, cutoff=4.0)
    assert from_log == from_tables
    found = json.loads(from_log[1].replace("NaN", "null"))
    assert (found["unfinished_jobs"], found["rejected_jobs"], found["suspensions"]) == (1, 1, 2)
    assert found["slowdown"]["short"]["count"] + found["slowdown"]["long"]["count"] == 60 - 3  # nor the 0 s job


def test_a_run_without_segments():
    result = run("fifo", simulator_jobs(generate("yahoo", jobs=30, seed=1, load=0.5, nodes=10).jobs), 10)
    result.log = SegmentLog(result.log.counts)   # no segment, no finished job
    from_log, from_tables = from_log_and_from_tables(result)
    assert from_log == from_tables
    found = json.loads(from_log[1].replace("NaN", "null"))
    assert found["utilization"] is None and found["makespan"] is None and found["suspensions"] == 0


def test_simulate_does_not_import_pandas_for_a_csv(tmp_path):
    """The command in a fresh interpreter: pandas stays unloaded unless a Parquet file is asked."""
    import subprocess
    import sys

    trace = tmp_path / "t.txt"
    write_trace(trace, simulator_jobs(generate("yahoo", jobs=40, seed=1, load=0.5, nodes=20).jobs))
    code = ("import sys; from bridge.sim.cli import simulate; "
            "simulate.main(sys.argv[1:], standalone_mode=False); print('pandas' in sys.modules)")
    for out, loaded in (("o.csv", "False"), ("o.parquet", "True")):
        proc = subprocess.run([sys.executable, "-c", code, "--trace", str(trace), "--policy", "hawk", "--nodes", "20",
                               "--out", str(tmp_path / out)], capture_output=True, text=True, check=True, cwd=ROOT)
        assert proc.stdout.strip().splitlines()[-1] == loaded, proc.stdout


def test_report_reads_back_what_simulate_measured(tmp_path):
    """`report` over `simulate`'s per-job file gives the command's own figures: JCTs (recomputed
    from the file's times), slowdowns (from its runtime alone, recovered from the file's slowdown),
    makespan, and utilization from the jobs' task-seconds (the same figure where every job
    finished and none was suspended). To 1e-12: pandas' default CSV float parser can read a
    number one unit in the last place off."""
    trace = tmp_path / "t.txt"
    write_trace(trace, simulator_jobs(generate("yahoo", jobs=120, seed=4, load=0.9, nodes=30).jobs))
    res = CliRunner().invoke(simulate, ["--trace", str(trace), "--policy", "hawk", "--nodes", "30", "--json",
                                        "--out", str(tmp_path / "hawk.csv")])
    assert res.exit_code == 0, res.output
    measured = json.loads(res.output.strip().splitlines()[-1])
    run_ = load_run(tmp_path / "hawk.csv")
    table = build([run_], run_.cutoff)[run_.label]
    assert measured["finished_jobs"] == 120 and measured["suspensions"] == 0
    for cls in ("short", "long"):
        assert table[f"{cls} jobs finished"] == measured["jct"][cls]["count"] > 0
        assert table[f"{cls} mean JCT (s)"] == pytest.approx(measured["jct"][cls]["mean"], rel=1e-12)
        for p in ("p50", "p90", "p99"):
            assert table[f"{cls} JCT {p} (s)"] == pytest.approx(measured["jct"][cls][p], rel=1e-12)
            assert table[f"{cls} slowdown {p}"] == pytest.approx(measured["slowdown"][cls][p], rel=1e-12)
    assert table["makespan (s)"] == pytest.approx(measured["makespan"], rel=1e-12)
    assert table["utilization"] == pytest.approx(measured["utilization"], rel=1e-12)


def random_cell(rnd: random.Random) -> object:
    return rnd.choice([None, math.nan, 0, 1, -3, 12345, 0.5, 1234.5, 1e-7, 3.14159, True, False, "", "x", "long",
                       "é", "a b", "-", 2 ** 40, float("1e20")])


def test_text_of_rows_is_pandas_to_string():
    rnd = random.Random(7)
    for _ in range(150):
        keys = [rnd.choice(["class", "jobs", "p50 JCT", "a", "averyveryverylongheader", "x y", "ü"])
                for _ in range(rnd.randint(1, 5))]
        rows = [{k: random_cell(rnd) for k in keys if rnd.random() < 0.85} for _ in range(rnd.randint(1, 6))]
        columns = None if rnd.random() < 0.6 else list(dict.fromkeys(rnd.sample(keys, rnd.randint(1, len(keys)))))
        laid_out = tables._text_of_rows(rows, columns)
        if laid_out is None:
            continue
        assert laid_out == tables._frame(rows, columns).to_string(index=False), (rows, columns)
    assert tables._text_of_rows([], None) is None and tables._text_of_rows([{}], None) is None
    assert tables.text([]) == pd.DataFrame([]).to_string(index=False)   # pandas' own way


def test_shared_durations_are_the_same_values(tmp_path):
    p = tmp_path / "t.txt"
    p.write_text("0 4 1 2 -0 2.0 2\n1 3 5 2 7 0\n")
    a, b = read_trace(p)
    assert a.durations == (2.0, -0.0, 2.0, 2.0) and math.copysign(1, a.durations[1]) == -1
    assert a.durations[0] is a.durations[3] is b.durations[0]          # the text "2", once
    assert a.durations[2] is not a.durations[0]                       # "2.0" is its own text
    assert b.durations[2] == 0.0 and math.copysign(1, b.durations[2]) == 1
    assert parse_thesis_line(p, 1, "0 2 1 3 3", 0).durations == (3.0, 3.0)   # without a cache


def test_shared_durations_stop_growing(tmp_path, monkeypatch):
    import workloads.trace as trace

    monkeypatch.setattr(trace, "SHARED_DURATIONS", 3)
    p = tmp_path / "t.txt"
    p.write_text("0 3 1 1 2 3\n1 3 1 4 5 1\n")
    a, b = iter_trace(p)
    assert b.durations == (4.0, 5.0, 1.0) and b.durations[2] is a.durations[0]
    assert SHARED_DURATIONS == 1 << 16
