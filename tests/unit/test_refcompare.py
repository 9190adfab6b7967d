"""The side-by-side tool against the authors' simulator: its trace generator and output readers."""
from __future__ import annotations

import sys
from pathlib import Path

import click
import pytest

from bridge.sim.refcompare import (
    CUTOFF, NODES, TraceSpec, _partial, _run, generate, long_jobs, percentiles, read_jct,
)


def test_generated_trace_is_thesis_format_at_the_asked_load(tmp_path: Path) -> None:
    path = tmp_path / "t.trace"
    generate(TraceSpec(400, 0.9, 7), path)
    lines = path.read_text().splitlines()
    assert len(lines) == 400
    submits, work = [], 0
    for line in lines:
        p = line.split()
        n = int(p[1])
        durations = [int(d) for d in p[3:]]          # whole seconds, as the reference reads them
        assert len(durations) == n >= 1
        assert float(p[2]) == pytest.approx(sum(durations) / n, abs=1e-5)
        submits.append(float(p[0]))
        work += sum(durations)
    assert submits == sorted(submits) and submits[0] == 0.0
    # offered load on 4,000 nodes, up to the last inter-arrival draw
    assert work / (NODES * submits[-1]) == pytest.approx(0.9, rel=0.25)
    assert 0 < sum(long_jobs(path)) < 400
    generate(TraceSpec(400, 0.9, 7), tmp_path / "again.trace")
    assert (tmp_path / "again.trace").read_text() == path.read_text()      # a seed fixes the trace


def test_both_sides_outputs_are_read_and_classed_alike(tmp_path: Path) -> None:
    trace = tmp_path / "t.trace"
    trace.write_text("0 1 90.9 90\n1 1 91.9 91\n2 1 5 5\n")   # int(90.9) = 90, not above the cutoff: short
    assert 90 < CUTOFF < 91
    assert long_jobs(trace) == [False, True, False]
    ref = tmp_path / "r.txt"
    ref.write_text("".join(f"{e}  estimated_task_duration:  1  by_def:  0  total_job_running_time:  {j} {i}\n"
                           for i, (e, j) in enumerate([(9.0, 9.0), (93.0, 92.0), (8.0, 6.0)], start=1)))
    ours = tmp_path / "o.csv"
    ours.write_text("job_id,submit,finish,completion_time,slowdown\n0,0,9,9.0,1\n1,1,93,92.0,1\n2,2,8,6.0,1\n")
    assert read_jct(ref, reference=True) == read_jct(ours, reference=False) == {0: 9.0, 1: 92.0, 2: 6.0}
    p = percentiles(read_jct(ours, reference=False), long_jobs(trace))
    assert p["long"] == [92.0, 92.0, 92.0]
    assert p["short"][0] == pytest.approx(7.5)


def test_a_run_counts_as_finished_only_once_it_has_exited_cleanly(tmp_path: Path) -> None:
    done, log = tmp_path / "x.ref.txt", tmp_path / "x.log"
    write = "import sys; open(sys.argv[1], 'w').write('half'); sys.exit(int(sys.argv[2]))"
    with pytest.raises(click.ClickException):           # cut short: its output stays a .part file
        _run([sys.executable, "-c", write, str(_partial(done)), "1"], {}, done, log)
    assert not done.exists() and _partial(done).exists()
    _run([sys.executable, "-c", write, str(_partial(done)), "0"], {}, done, log)
    assert done.read_text() == "half" and not _partial(done).exists()
    _run([sys.executable, "-c", "raise SystemExit(3)"], {}, done, log)   # finished: not run again
