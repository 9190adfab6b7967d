"""`bench sim-vs-reference` reports what its two processes did (no figure is asserted: a stand-in
plays the reference here, since the authors' simulator is not in the repository)."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from click.testing import CliRunner

from bridge.sim.refbench import REFERENCE_ARGS, parse_time_v, sim_vs_reference, whole_seconds

# Takes the reference's 23 arguments; checks the trace and the ones section 8 gives it; writes a
# line per job of the trace to the finished-jobs file (the 23rd), and grows its heap by 30 MB.
FAKE_REFERENCE = '''
import os, sys
assert len(sys.argv) == 24, sys.argv
assert sys.argv[2:23] == os.environ["EXPECT"].split(), (sys.argv, os.environ["EXPECT"])
assert os.environ["REFSIM_SEED"] == "3"
ballast = bytearray(30 * 2**20)
with open(sys.argv[1]) as trace, open(sys.argv[23], "w") as out:
    for line in trace:
        out.write(line.split()[0] + " estimated_task_duration: 1 by_def: 0 total_job_running_time: 1\\n")
'''


def test_whole_seconds_truncates_durations_only(tmp_path: Path) -> None:
    src, dst = tmp_path / "a.txt", tmp_path / "b.txt"
    src.write_text("0.000000 2 1.669000 2.089 0.810\n# note\n\n0.451579 1 16.623833 8.999\n")
    assert whole_seconds(src, dst) == 2
    assert dst.read_text() == "0.000000 2 1.669000 2 0\n0.451579 1 16.623833 8\n"


def test_time_v_report_is_read() -> None:
    report = ("\tCommand being timed: \"python3 x.py\"\n\tUser time (seconds): 15.39\n"
              "\tSystem time (seconds): 1.15\n\tElapsed (wall clock) time (h:mm:ss or m:ss): 1:02.50\n"
              "\tMaximum resident set size (kbytes): 116740\n\tExit status: 0\n")
    assert parse_time_v(report) == {"peak_rss_mb": 116740 / 1024, "cpu_s": 15.39 + 1.15, "wall_s": 62.5}


def test_a_pair_reports_both_processes(tmp_path: Path, monkeypatch) -> None:
    fake = tmp_path / "ref.py"
    fake.write_text(FAKE_REFERENCE)
    trace = tmp_path / "t.txt"
    trace.write_text("0 2 5 5 5\n1.5 1 3 3\n4 3 200 100 200 300\n")
    monkeypatch.setenv("EXPECT", REFERENCE_ARGS["eagle"].format(c=90.5811, n=20))
    res = CliRunner().invoke(sim_vs_reference, ["--reference", str(fake), "--trace", str(trace), "--policy", "eagle",
                                                "--nodes", "20", "--seed", "3", "--cores", "none", "--json",
                                                "--reference-python", sys.executable, "--keep", str(tmp_path / "k")])
    assert res.exit_code == 0, res.output
    row = json.loads(res.stdout.strip().splitlines()[-1])
    assert row["policy"] == "eagle" and row["seed"] == 3 and row["ref_finished_jobs"] == 3
    assert row["ours_jobs_line"].startswith("jobs 3 (finished 3, unfinished 0, rejected 0)")
    assert row["ref_peak_rss_mb"] > 30 and row["ours_peak_rss_mb"] > 0 and row["ours_cpu_s"] > 0
    assert 0 <= row["ours_sim_cpu_s"] <= row["ours_cpu_s"]         # the simulation's share of the process
    # the ratio of the unrounded figures: within one rounding step of the printed ones' ratio
    assert abs(row["rss_ours_over_ref"] - row["ours_peak_rss_mb"] / row["ref_peak_rss_mb"]) <= 0.011
    assert "simulator core" in row["ours_core"] and Path(row["tree"]) == Path(__file__).resolve().parents[2]
    assert (tmp_path / "k" / "eagle-seed3-1" / "ours.csv").read_text().startswith("job_id,submit,finish")


def test_a_failing_reference_is_one_clear_error(tmp_path: Path) -> None:
    fake = tmp_path / "ref.py"
    fake.write_text("import sys; sys.exit('no such trace format')\n")
    trace = tmp_path / "t.txt"
    trace.write_text("0 1 5 5\n")
    res = CliRunner().invoke(sim_vs_reference, ["--reference", str(fake), "--trace", str(trace), "--policy", "hawk",
                                                "--nodes", "4", "--cores", "none"])
    assert res.exit_code == 1 and "ref failed" in res.output and "no such trace format" in res.output
    assert "Traceback" not in res.output
