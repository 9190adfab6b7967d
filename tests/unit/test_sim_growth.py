"""`bench sim-growth`: the sizes it runs, the growth exponents it reads off them, the plot it
writes, and its refusals of bad options (the benchmark asserts no speed)."""
import json
import math

import matplotlib.image
import pytest
from click.testing import CliRunner

from bridge.cli import main
from bridge.sim.growth import Plan, exponent, growth, plot

PLAN = Plan(job_sizes=(100, 300, 1000), node_sizes=(10, 30), at_nodes=30, at_jobs=300)


def row(policy, jobs, nodes, cpu, rss):
    return {"policy": policy, "jobs": jobs, "nodes": nodes, "cpu_s": cpu, "peak_rss_mb": rss}


def power_rows(policy, a_jobs, a_nodes):
    """Rows whose CPU grows exactly as jobs^a_jobs * nodes^a_nodes and RSS linearly in nodes only."""
    return [row(policy, j, n, 0.01 * j ** a_jobs * n ** a_nodes, 2.0 * n) for j, n in PLAN.points()]


def test_the_plan_runs_a_point_both_series_share_once():
    assert PLAN.points() == [(100, 30), (300, 30), (1000, 30), (300, 10)]
    rows = power_rows("hawk", 1, 0)[::-1] + [row("hawk", 1000, 10, 1.0, 1.0)]   # a point in neither series
    assert [(r["jobs"], r["nodes"]) for r in PLAN.series("jobs", rows)] == [(100, 30), (300, 30), (1000, 30)]
    assert [(r["jobs"], r["nodes"]) for r in PLAN.series("nodes", rows)] == [(300, 10), (300, 30)]


def test_the_exponent_is_the_log_log_slope():
    xs = [1_000, 3_000, 10_000, 100_000]
    assert exponent(xs, [5 * x ** 1.25 for x in xs]) == pytest.approx(1.25, abs=1e-3)
    assert exponent(xs, [7.0] * 4) == pytest.approx(0.0, abs=1e-3)
    # noisy points: the least-squares slope through (log x, log y), worked out by hand
    lx = [math.log(x) for x in xs]
    ly = [math.log(y) for y in (1.0, 2.5, 12.0, 90.0)]
    mx, my = sum(lx) / 4, sum(ly) / 4
    slope = sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)
    assert exponent(xs, [1.0, 2.5, 12.0, 90.0]) == pytest.approx(slope, abs=1e-3)
    assert exponent([10], [1.0]) is None and exponent([10, 10], [1.0, 2.0]) is None   # one size: no slope
    assert exponent([10, 20], [0.0, 1.0]) is None                                     # a run too short to time


def test_growth_reads_each_policy_series_and_measure_apart():
    rows = power_rows("hawk", 1.2, 0.1) + power_rows("eagle", 0.9, 0.5)
    hawk, eagle = growth(PLAN, rows, "hawk"), growth(PLAN, rows, "eagle")
    assert hawk == pytest.approx({"cpu_s~jobs": 1.2, "peak_rss_mb~jobs": 0.0, "cpu_s~nodes": 0.1,
                                  "peak_rss_mb~nodes": 1.0}, abs=1e-3)
    assert eagle["cpu_s~jobs"] == pytest.approx(0.9, abs=1e-3) and eagle["cpu_s~nodes"] == pytest.approx(0.5, abs=1e-3)


def test_the_plot_is_written_whole(tmp_path):
    path = tmp_path / "growth.png"
    rows = power_rows("hawk", 1.2, 0.1) + power_rows("eagle", 0.9, 0.5)
    assert plot(PLAN, rows, ("hawk", "eagle"), path, "title") == path
    height, width, _ = matplotlib.image.imread(path).shape      # a PNG that reads back: 2 x 2 panels
    assert width > 1000 and height > 600
    assert [p.name for p in tmp_path.iterdir()] == ["growth.png"]   # no temporary file left beside it
    nested = tmp_path / "img" / "sim-growth" / "growth.png"          # a folder --plot accepts, not there yet
    assert plot(PLAN, rows, ("hawk",), nested, "title") == nested and nested.is_file()


def test_the_command_runs_both_series_and_reports_the_exponents(tmp_path, monkeypatch):
    """Tiny sizes, each run in this process (`bench.measure`'s child is tested with `bench sim`'s):
    each point once, the figures of each run, the exponents computed from the rows printed, the
    plot written."""
    from bridge.sim import growth as module
    from bridge.sim.bench import run_one, trace_jobs
    from workloads.synthetic import trace_settings

    def in_process(policy, n_jobs, nodes, load, trace="yahoo"):
        jobs = trace_jobs(trace, n_jobs, nodes, load)
        return {**run_one(policy, jobs, nodes, settings=trace_settings(trace, policy)), "trace": trace}

    monkeypatch.setattr(module, "measure", in_process)
    out = tmp_path / "g.svg"
    result = CliRunner().invoke(main, [
        "bench", "sim-growth", "--jobs-sizes", "40,20", "--nodes-sizes", "10,20", "--at-nodes", "20",
        "--at-jobs", "40", "--load", "0.85", "--policy", "sparrow", "--json", "--plot", str(out)])
    assert result.exit_code == 0, (result.output, result.stderr)
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    runs, (fit,) = lines[:-1], lines[-1:]
    assert [(r["policy"], r["jobs"], r["nodes"], r["load"]) for r in runs] == [
        ("sparrow", 40, 20, 0.85), ("sparrow", 20, 20, 0.85), ("sparrow", 40, 10, 0.85)]
    assert all(r["unfinished"] == 0 and r["events"] > r["tasks"] and r["peak_rss_mb"] > 10 for r in runs)
    plan = Plan((40, 20), (10, 20), 20, 40)
    assert fit == {"policy": "sparrow", "growth_exponents": growth(plan, runs, "sparrow")}
    assert fit["growth_exponents"]["peak_rss_mb~jobs"] is not None        # RSS is never 0: always a slope
    assert out.read_text().lstrip().startswith("<?xml") and "</svg>" in out.read_text()
    assert "simulator core:" in result.stderr


@pytest.mark.parametrize("args, message", [
    (["--jobs-sizes", "1000"], "give at least two sizes"),
    (["--jobs-sizes", "1000,x"], "'x' is not a valid integer"),
    (["--nodes-sizes", "10,0"], "not in the range"),
    (["--nodes-sizes", "10,20,10"], "gives a size twice"),
    (["--at-jobs", "0"], "--at-jobs"),
    (["--load", "nan"], "--load"),
    (["--plot", "growth.txt"], "suffix must be one of .png, .svg, .pdf"),
    (["--policy", "nope"], "unknown policy 'nope'"),
])
def test_bad_options_are_refused_before_any_run(args, message):
    result = CliRunner().invoke(main, ["bench", "sim-growth", *args])
    assert result.exit_code == 2 and message in result.output, result.output
    assert "Traceback" not in result.output and "sparrow " not in result.output


def test_saved_rows_are_fitted_and_plotted_without_running(tmp_path):
    """`--rows`: the runs of two saved --json outputs, concatenated, fitted as one plan; their
    exponent lines skipped."""
    rows = [{**r, "load": 0.9, "core": "simulator core: compiled (mypyc)"} for r in power_rows("hawk", 1.2, 0.1)]
    saved = tmp_path / "rows.jsonl"
    saved.write_text("\n".join(json.dumps(r) for r in rows[:2]) + '\n{"policy": "hawk", "growth_exponents": {}}\n\n'
                     + "\n".join(json.dumps(r) for r in rows[2:]) + "\n")
    out = tmp_path / "g.png"
    result = CliRunner().invoke(main, ["bench", "sim-growth", "--jobs-sizes", "100,300,1000", "--nodes-sizes", "10,30",
                                       "--at-nodes", "30", "--at-jobs", "300", "--rows", str(saved), "--json",
                                       "--plot", str(out)])
    assert result.exit_code == 0, result.output
    (fit,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert fit["policy"] == "hawk" and fit["growth_exponents"] == pytest.approx(
        {"cpu_s~jobs": 1.2, "peak_rss_mb~jobs": 0.0, "cpu_s~nodes": 0.1, "peak_rss_mb~nodes": 1.0}, abs=1e-3)
    assert matplotlib.image.imread(out).shape[1] > 1000


@pytest.mark.parametrize("text, message", [
    ('{"policy": "hawk"', "rows.jsonl:1: not JSON"),
    ('[1, 2]', "rows.jsonl:1: not a JSON object"),
    ('\n{"policy": "hawk", "jobs": 1, "nodes": 1, "cpu_s": 1, "peak_rss_mb": 1, "load": 0.9}',
     "rows.jsonl:2: a run without 'core'"),
    ('{"policy": "hawk", "jobs": 1, "nodes": 1, "cpu_s": 1, "peak_rss_mb": 1, "load": 0.5, "core": "c"}',
     "rows.jsonl:1: a run at load 0.5, not --load 0.9"),
    ('{"policy": "hawk", "growth_exponents": {}}', "rows.jsonl: no runs in it"),
])
def test_bad_saved_rows_are_refused_naming_the_line(tmp_path, text, message):
    saved = tmp_path / "rows.jsonl"
    saved.write_text(text + "\n")
    result = CliRunner().invoke(main, ["bench", "sim-growth", "--rows", str(saved)])
    assert result.exit_code == 1 and message in result.output, result.output
    assert "Traceback" not in result.output
