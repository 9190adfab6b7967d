"""`simulate`'s outputs made without pandas (`bridge.sim.output`, `bridge.common.tables`, shared
durations in `workloads.trace`) are the ones the pandas tables gave: the same per-job CSV byte
for byte, the same summary value for value, the same printed table, the same jobs."""
from __future__ import annotations

import json
import math
import random
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from bridge.common import tables
from bridge.common.metrics import cutoff_origin
from bridge.common.metrics import summarize as summarize_frames
from bridge.sim.cli import jsonable, per_job_frame, simulate, write_atomic
from bridge.cluster.state import SegmentLog
from bridge.sim.engine import Simulation
from bridge.sim.output import PerJob, summarize
from policies.api import ClusterSpec, PolicyEnv
from policies.registry import config_for, create
from workloads.model import Job
from workloads.synthetic import generate, simulator_jobs
from workloads.trace import SHARED_DURATIONS, iter_trace, parse_thesis_line, read_trace, write_trace

CUTOFF = 90.5811
ROOT = Path(__file__).resolve().parents[2]


def run(policy: str, jobs: list[Job], nodes: int, settings: dict[str, str] | None = None):
    spec = ClusterSpec(nodes, slots_per_node=2 if policy == "kairos" else 1)
    pol = create(policy, PolicyEnv(spec, 3), config_for(policy, settings or {}))
    return Simulation(jobs, pol, spec, report_long=lambda j: j.mean_duration > CUTOFF).run()


def both_ways(result, tmp_path, cutoff=CUTOFF):
    """(CSV bytes, summary JSON) the pandas way and the new way, from the same run."""
    n_slots = result.spec.n_nodes * result.spec.slots_per_node
    job_df, task_df = result.job_table(), result.task_table()
    old = summarize_frames(job_df, task_df, cutoff=cutoff, n_slots=n_slots, counters=result.log.counters,
                           extra={"policy": "x"})
    write_atomic(per_job_frame(job_df, cutoff, n_slots), tmp_path / "old.csv")
    per_job = PerJob(result, cutoff, n_slots)
    new = summarize(result, per_job, cutoff=cutoff, n_slots=n_slots, counters=result.log.counters,
                    extra={"policy": "x"})
    per_job.write(tmp_path / "new.csv")
    dump = lambda s: json.dumps(jsonable(s), sort_keys=True)  # noqa: E731
    return ((tmp_path / "old.csv").read_bytes(), dump(old), list(old)), \
        ((tmp_path / "new.csv").read_bytes(), dump(new), list(new))


@pytest.mark.parametrize("policy", ["fifo", "sparrow", "hawk", "eagle", "kairos", "bigc", "lwl"])
def test_per_job_file_and_summary_are_the_pandas_ones(policy, tmp_path):
    jobs = simulator_jobs(generate("yahoo", jobs=150, seed=2, load=0.9, nodes=40).jobs)
    result = run(policy, jobs, 40)
    old, new = both_ways(result, tmp_path)
    assert new == old
    assert old[0].count(b"\n") == 151


def test_unfinished_rejected_and_zero_length_jobs_come_out_the_same(tmp_path):
    """NaN finish (unfinished), a rejected job, a job of zero-length tasks (ideal 0: slowdown
    NaN), a suspended segment: every special case of the columns, both ways."""
    jobs = simulator_jobs(generate("yahoo", jobs=60, seed=5, load=0.8, nodes=20).jobs)
    jobs[7] = Job(jobs[7].job_id, jobs[7].submit, (0.0, 0.0), 0.0)
    result = run("hawk", jobs, 20)
    lg = result.log
    del lg.job_finish[jobs[3].job_id]
    lg.rejected_jobs[jobs[4].job_id] = None
    del lg.job_finish[jobs[4].job_id]
    lg.seg_done[5] = 0
    lg.seg_done[9] = 0
    old, new = both_ways(result, tmp_path, cutoff=4.0)
    assert new == old
    assert b",,," in new[0]                      # the unfinished job's empty fields
    assert json.loads(new[1])["unfinished_jobs"] == 1 and json.loads(new[1])["rejected_jobs"] == 1


def test_a_run_without_segments_and_a_parquet_file(tmp_path):
    jobs = simulator_jobs(generate("yahoo", jobs=30, seed=1, load=0.5, nodes=10).jobs)
    result = run("fifo", jobs, 10)
    result.log = SegmentLog(result.log.counts)   # no segment, no finished job
    old, new = both_ways(result, tmp_path)
    assert new == old
    PerJob(result, CUTOFF, 10).write(tmp_path / "new.parquet")
    write_atomic(per_job_frame(result.job_table(), CUTOFF, 10), tmp_path / "old.parquet")
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "new.parquet"), pd.read_parquet(tmp_path / "old.parquet"))


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


def test_simulate_prints_and_writes_as_before(tmp_path, monkeypatch):
    """The whole command, against its own outputs made the pandas way from the same run."""
    trace = tmp_path / "t.txt"
    write_trace(trace, simulator_jobs(generate("yahoo", jobs=80, seed=3, load=0.9, nodes=20).jobs))
    seen = {}
    real = PerJob.__init__

    def spy(self, result, cutoff, slots):
        seen["result"], seen["cutoff"] = result, cutoff
        real(self, result, cutoff, slots)

    monkeypatch.setattr(PerJob, "__init__", spy)
    res = CliRunner().invoke(simulate, ["--trace", str(trace), "--policy", "eagle", "--nodes", "20",
                                        "--out", str(tmp_path / "o.csv")])
    assert res.exit_code == 0, res.output
    job_df = seen["result"].job_table()
    write_atomic(per_job_frame(job_df, seen["cutoff"], 20), tmp_path / "old.csv")
    assert (tmp_path / "o.csv").read_bytes() == (tmp_path / "old.csv").read_bytes()
    from bridge.sim.cli import summary_table

    summary = summarize_frames(job_df, seen["result"].task_table(), cutoff=seen["cutoff"], n_slots=20,
                               counters=seen["result"].log.counters,
                               extra={"policy": "eagle", "nodes": 20, "slots_per_node": 1, "seed": 1,
                                      "events": seen["result"].events,
                                      "reporting_cutoff_origin": cutoff_origin(False, False)})
    with monkeypatch.context() as m:   # the table as pandas laid it out
        m.setattr(tables, "_text_of_rows", lambda rows, columns: None)
        expected = summary_table(summary)
    assert expected in res.output


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
