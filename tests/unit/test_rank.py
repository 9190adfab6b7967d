"""`schedbridge rank`: every listed policy on a trace imported from a real event log (the committed
fixture of test_trace_import), ranked; the ones that cannot run on the cluster are rows saying
why, never dropped; a run over the time limit is stopped and is a row saying so; an interrupted
ranking writes the rows that finished; several seeds give each figure its spread; the ranking rule
and its ties on hand-made outcomes."""
from __future__ import annotations

import contextlib
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import make_dataclass, replace
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner

from bridge.apps.rank import runs
from bridge.apps.rank.runs import MEASURES, Outcome, Point
from bridge.apps.rank.runs import run_point as simulated
from bridge.apps.rank.table import Figure, ranked, row_of, text_rows, tied
from bridge.cli import main
from bridge.sim.shape import uniform
from policies.framework import registry
from policies.framework.registry import PolicyEntry, default_registry
from tests.unit.test_trace_import import FIXTURE

ROOT = Path(__file__).resolve().parents[2]
SLOW = "sleeps-for-test"
PID_FILE = "RANK_TEST_PID_FILE"  # where the slow policy writes its worker's pid


@pytest.mark.timeout(240)  # 23 policies on two spawned workers: over a minute on a loaded machine
def test_every_listed_policy_is_ranked_or_says_why_not(tmp_path: Path) -> None:
    trace, out = tmp_path / "six.trace", tmp_path / "rank"
    imported = CliRunner().invoke(main, ["trace", "import", "--from-eventlog", str(FIXTURE), "--out", str(trace)])
    assert imported.exit_code == 0, imported.output
    result = CliRunner().invoke(main, ["rank", str(trace), "--nodes", "2", "--workers", "2", "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert "6 jobs, 33 tasks" in result.output
    assert "cluster 2 nodes x 1 slots = 2 slots; offered load on it" in result.output
    table = pd.read_csv(out / "ranking.csv")
    assert sorted(table["policy"]) == sorted(default_registry().names())  # all of them, once each
    ran = table[table["rank"] != "-"]
    ranks = list(ran["rank"].astype(int))
    assert ranks == sorted(ranks)  # tied policies share a rank, the next one counts them all
    assert all(r == 1 + sum(other < r for other in ranks) for r in ranks)
    assert {"fifo", "sparrow", "hawk", "eagle"} <= set(ran["policy"])
    finished_all = ran[ran["note"].isna()]  # before those that left jobs unfinished, best score first
    assert finished_all["score"].is_monotonic_increasing and len(finished_all) >= 4
    assert list(ran["note"].notna()) == sorted(ran["note"].notna())
    problems = table[table["rank"] == "-"]
    assert all(str(note).startswith(("not run: ", "failed: ", "timed out after ")) for note in problems["note"])
    for policy, note in zip(problems["policy"], problems["note"]):
        assert policy in result.output and str(note) in result.output
    assert (out / "jct_cdf.png").stat().st_size > 0 and (out / "measures.png").stat().st_size > 0
    assert (out / "summary.txt").read_text() in result.output
    assert "partial" not in (out / "summary.txt").read_text()


def hawk_exits(point: Point) -> Outcome:
    """rank's run, whose worker process dies on hawk (module-level: the workers import it)."""
    if point.policy == "hawk":
        os._exit(3)
    return simulated(point)


def test_a_policy_whose_worker_dies_fails_by_name_and_the_other_rows_are_written(tmp_path: Path,
                                                                                   monkeypatch) -> None:
    trace, out = tmp_path / "t.trace", tmp_path / "rank"
    trace.write_text("0 2 1 1 1\n1 2 5 5 5\n2 1 1 1\n")
    monkeypatch.setattr(runs, "run_point", hawk_exits)
    result = CliRunner().invoke(main, ["rank", str(trace), "--nodes", "2", "--workers", "2", "--out", str(out),
                                       *(a for p in ("fifo", "hawk", "sparrow", "eagle") for a in ("--policy", p))])
    assert result.exit_code == 0, result.output
    table = pd.read_csv(out / "ranking.csv").set_index("policy")
    assert sorted(table.index) == ["eagle", "fifo", "hawk", "sparrow"]
    assert table.loc["hawk", "rank"] == "-"
    assert table.loc["hawk", "note"] == "failed: its worker process died (exit code 3)"
    assert (table.drop(index="hawk")["rank"] != "-").all()


class Sleeper:
    """A policy that never decides: it sleeps on the first job's arrival, after writing its
    process's pid where the test reads it."""

    name = SLOW

    def on_job_arrival(self, ev, view):
        Path(os.environ[PID_FILE]).write_text(str(os.getpid()))
        time.sleep(600)
        return ()


def register_slow_policy() -> None:
    """The slow policy in this process's registry (idempotent: workers run several points)."""
    if SLOW not in default_registry().names():
        default_registry().register(PolicyEntry(SLOW, make_dataclass("SleeperConfig", []), lambda c, e: Sleeper()))


def slow_or_simulated(point: Point, tick: runs.Tick | None = None) -> Outcome:
    """rank's run, with the slow policy known to the worker process (module-level: workers import it)."""
    register_slow_policy()
    return simulated(point, tick)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.timeout(240)  # two workers spawned, stopped and spawned again: a minute on a loaded machine
@pytest.mark.parametrize("workers", [1, 2])
def test_a_run_over_the_time_limit_is_stopped_and_is_a_row_while_the_others_finish(tmp_path: Path, monkeypatch,
                                                                                    workers: int) -> None:
    trace, out, pid_file = tmp_path / "t.trace", tmp_path / "rank", tmp_path / "pid"
    trace.write_text("0 2 1 1 1\n1 2 5 5 5\n2 1 1 1\n")
    monkeypatch.setattr(registry, "_DEFAULT", None)  # a registry of this test's own, dropped after it
    register_slow_policy()
    monkeypatch.setattr(runs, "run_point", slow_or_simulated)
    monkeypatch.setenv(PID_FILE, str(pid_file))
    started = time.monotonic()
    # one worker: in this process, stopped by the alarm; two, under two seeds: both workers run the slow
    # policy, and fifo and sparrow can only run once they have been stopped and replaced
    limit = 3 if workers == 1 else 20  # a worker's start counts: a spawned one takes seconds on a loaded machine
    result = CliRunner().invoke(main, ["rank", str(trace), "--nodes", "2", "--workers", str(workers),
                                       "--seeds", str(workers), "--policy-timeout", str(limit), "--out", str(out),
                                       "--policy", SLOW, "--policy", "fifo", "--policy", "sparrow"])
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started < 120  # the policy sleeps 600 s
    table = pd.read_csv(out / "ranking.csv").set_index("policy")
    assert table.loc[SLOW, "rank"] == "-" and table.loc[SLOW, "note"] == f"timed out after {limit} s"
    assert sorted(table.index[table["rank"] != "-"]) == ["fifo", "sparrow"]
    assert f"timed out after {limit} s" in result.output
    slow_pid = int(pid_file.read_text())
    if workers == 1:
        assert slow_pid == os.getpid()  # in this process
    else:
        assert slow_pid != os.getpid() and not alive(slow_pid)  # its worker process was stopped


def test_the_simulations_tick_stops_a_run_the_alarm_cannot_reach(monkeypatch) -> None:
    """In the compiled core no signal handler runs: the tick's own deadline check stops the run."""
    def busy(point: Point, tick: runs.Tick | None = None) -> Outcome:
        assert tick is not None
        while True:
            tick(0, 0.0)

    monkeypatch.setattr(runs, "run_point", busy)
    monkeypatch.setattr(runs, "_alarm", lambda limit_s: contextlib.nullcontext())
    got: list[Outcome] = []
    point = Point(Path("unused"), "fifo", uniform(1, 1), 0.0, 1, 1.0)
    started = time.monotonic()
    runs.run_all([point, replace(point, seed=2)], 1, 0.3, lambda p, o: got.append(o))
    assert 0.3 <= time.monotonic() - started < 10
    assert [o.problem for o in got] == ["timed out after 0.3 s"]  # its second seed skipped: the row is decided


def test_an_alarm_set_before_a_run_is_set_again_after_it() -> None:
    """The in-process limit borrows SIGALRM; a watchdog armed before (pytest-timeout's) still goes off."""
    fired: list[int] = []
    previous = signal.signal(signal.SIGALRM, lambda signum, frame: fired.append(signum))
    watchdog = signal.setitimer(signal.ITIMER_REAL, 0.5)  # pytest-timeout's, if any: set again below
    try:
        with runs._alarm(5.0):
            time.sleep(0.1)
        assert 0 < signal.getitimer(signal.ITIMER_REAL)[0] <= 0.4 and not fired
        time.sleep(1.0)
        assert fired == [signal.SIGALRM]
    finally:
        signal.signal(signal.SIGALRM, previous)
        signal.setitimer(signal.ITIMER_REAL, *watchdog)


INTERRUPTED = """
import signal
import sys
signal.signal(signal.SIGINT, signal.default_int_handler)  # Ctrl-C's handler even if the caller ignores SIGINT
from bridge.apps.rank import runs
from bridge.cli import main
from tests.unit import test_rank

test_rank.register_slow_policy()
runs.run_point = test_rank.slow_or_simulated
main(sys.argv[1:])
"""


@pytest.mark.parametrize(("signum", "workers"), [(signal.SIGINT, 1), (signal.SIGTERM, 1), (signal.SIGINT, 2)])
def test_an_interrupted_ranking_writes_the_rows_that_finished_says_so_and_fails(tmp_path: Path, signum: signal.Signals,
                                                                                 workers: int) -> None:
    trace, out, pid_file = tmp_path / "t.trace", tmp_path / "rank", tmp_path / "pid"
    trace.write_text("0 2 1 1 1\n1 2 5 5 5\n2 1 1 1\n")
    env = {**os.environ, "PYTHONPATH": str(ROOT), PID_FILE: str(pid_file)}
    command = [sys.executable, "-c", INTERRUPTED, "rank", str(trace), "--nodes", "2", "--workers", str(workers),
               "--out", str(out), "--policy", "fifo", "--policy", "sparrow", "--policy", SLOW]
    with subprocess.Popen(command, env=env, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as rank:
        deadline = time.monotonic() + 120
        while not (pid_file.exists() and (out / "summary.txt").exists()
                   and "partial: 2 of 3" in (out / "summary.txt").read_text()):
            assert rank.poll() is None and time.monotonic() < deadline, "the two quick rows were never written"
            time.sleep(0.2)
        rank.send_signal(signum)
        stdout, stderr = rank.communicate(timeout=60)
    assert rank.returncode == 128 + signum, stderr
    assert f"interrupted by {signum.name}: wrote the 2 finished row(s) of 3" in stderr
    assert "Traceback" not in stderr
    table = pd.read_csv(out / "ranking.csv").set_index("policy")
    assert sorted(table.index[table["rank"] != "-"]) == ["fifo", "sparrow"]
    assert table.loc[SLOW, "note"] == "interrupted before it finished"
    summary = (out / "summary.txt").read_text()
    assert f"interrupted by {signum.name}: 2 of 3 policies finished" in summary and summary in stdout
    slow_pid = int(pid_file.read_text())
    assert (slow_pid == rank.pid) == (workers == 1)  # one worker: in the command's own process
    assert not alive(slow_pid)  # the slow run's worker was stopped with the command


def test_several_seeds_give_each_figure_its_spread_and_the_network_delay_reaches_the_runs(tmp_path: Path) -> None:
    trace, out = tmp_path / "t.trace", tmp_path / "rank"
    trace.write_text("".join(f"{i * 0.5} 3 1 0.5 1 1.5\n" for i in range(12)))
    result = CliRunner().invoke(main, ["rank", str(trace), "--nodes", "2", "--seeds", "3", "--network-delay", "0.25",
                                       "--workers", "1", "--out", str(out), "--policy", "fifo", "--policy", "sparrow"])
    assert result.exit_code == 0, result.output
    assert "seeds 1, 2, 3" in result.output and "network delay 0.25 s one way" in result.output
    table = pd.read_csv(out / "ranking.csv").set_index("policy")
    fifo = [simulated(Point(trace.resolve(), "fifo", uniform(2, 1), 0.25, seed, 1.25)) for seed in (1, 2, 3)]
    assert fifo[0].measures == fifo[2].measures  # fifo draws nothing at random: no spread
    for measure, _, _ in MEASURES:
        if not math.isnan(fifo[0].measures[measure]):
            assert table.loc["fifo", measure] == pytest.approx(fifo[0].measures[measure], rel=1e-5)
            assert table.loc["fifo", f"{measure} std"] == 0
    sparrow = [simulated(Point(trace.resolve(), "sparrow", uniform(2, 1), 0.25, seed, 1.25)) for seed in (1, 2, 3)]
    spread = Figure.of([o.measures["short p90 (s)"] for o in sparrow])
    assert spread.std > 0  # sparrow's probes are random: the seeds differ
    assert table.loc["sparrow", "short p90 (s) std"] == pytest.approx(spread.std, rel=1e-5)
    assert f" {spread.text()} " in result.output and "±" in spread.text()


def test_seeds_are_a_count_or_a_list_and_the_old_option_names_the_new_one(tmp_path: Path) -> None:
    trace = tmp_path / "t.trace"
    trace.write_text("0 1 1 1\n")
    for seeds, error in (("0", "between 1 and 100 seeds"), ("1,1", "names a seed twice"),
                         ("a,b", "neither a number of seeds nor")):
        result = CliRunner().invoke(main, ["rank", str(trace), "--nodes", "1", "--seeds", seeds])
        assert result.exit_code == 2 and error in result.output
    result = CliRunner().invoke(main, ["rank", str(trace), "--nodes", "1", "--seed", "3"])
    assert result.exit_code == 2 and "--seed is now --seeds N or --seeds LIST" in result.output


def test_an_overloaded_cluster_is_called_out(tmp_path: Path) -> None:
    trace = tmp_path / "t.trace"
    trace.write_text("0 4 10 10 10 10 10\n1 4 10 10 10 10 10\n2 1 1 1\n")
    result = CliRunner().invoke(main, ["rank", str(trace), "--nodes", "1", "--policy", "fifo", "--policy", "hawk",
                                       "--workers", "1", "--out", str(tmp_path / "r")])
    assert result.exit_code == 0, result.output
    assert "warning: the trace offers" in result.output and "what 1 slots can run" in result.output


def test_an_unknown_policy_is_refused_before_anything_runs(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["rank", str(tmp_path / "t.trace"), "--nodes", "1", "--policy", "hawkk"])
    assert result.exit_code == 2 and "unknown policy 'hawkk' (did you mean 'hawk'?)" in result.output


def outcome(policy: str, short_p90: float, util: float, unfinished: int = 0) -> Outcome:
    measures = {m: 1.0 for m, _, _ in MEASURES} | {"short p90 (s)": short_p90, "utilization": util,
                                                    "long p50 (s)": math.nan, "long p90 (s)": math.nan}
    return Outcome(policy, measures, unfinished)


def test_the_ranking_rule() -> None:
    rows = ranked([row_of(o.policy, [o]) for o in (
        outcome("a", 5.0, 0.5), outcome("b", 2.0, 0.9), outcome("c", 1.0, 0.1, unfinished=3), outcome("d", 2.0, 0.2),
        Outcome("e", problem="not run: needs capacities"))], tolerance=0.0)
    assert [(r["rank"], r["policy"]) for r in rows] == [(1, "b"), (2, "d"), (3, "a"), (4, "c"), ("-", "e")]
    # scored: short p50 and makespan (equal: rank 1 each), short p90 (c 1, b and d tied at 2, a 4) and
    # utilization (b 1, a 2, d 3, c 4); no long job finished anywhere: the long columns are not scored
    by = {r["policy"]: r for r in rows}
    assert [by[p]["score"] for p in "bdac"] == [(1 + 1 + 2 + 1) / 4, (1 + 1 + 2 + 3) / 4, (1 + 1 + 4 + 2) / 4,
                                                (1 + 1 + 1 + 4) / 4]
    assert by["c"]["note"] == "3 jobs unfinished" and by["e"]["note"] == "not run: needs capacities"


def test_figures_within_the_tolerance_tie_and_so_do_overlapping_spreads() -> None:
    assert tied(Figure(0.9705), Figure(0.9715), 0.01) and not tied(Figure(0.9705), Figure(0.9715), 0.0)
    assert tied(Figure(10.0, 1.0), Figure(11.5, 0.6), 0.0)      # 1.5 apart, bands of 1 and 0.6 overlap
    assert not tied(Figure(10.0, 1.0), Figure(12.0, 0.6), 0.0)
    assert tied(Figure(math.nan), Figure(math.nan), 0.01) and not tied(Figure(1.0), Figure(math.nan), 0.01)
    # a and b tie on every measure (0.1% apart), c is 10% worse on utilization: a and b share rank 1
    rows = ranked([row_of(o.policy, [o]) for o in (outcome("a", 2.0, 0.9705), outcome("b", 2.0, 0.9715),
                                                    outcome("c", 2.0, 0.87))], tolerance=0.01)
    assert [(r["rank"], r["policy"], r["tied"]) for r in rows] == [(1, "a", True), (1, "b", True), (3, "c", False)]
    assert [r["rank"] for r in text_rows(rows)] == ["1=", "1=", "3"]
    # without a tolerance, b's utilization wins
    assert [r["policy"] for r in ranked([row_of(o.policy, [o]) for o in (
        outcome("a", 2.0, 0.9705), outcome("b", 2.0, 0.9715))], tolerance=0.0)] == ["b", "a"]


def test_a_figure_over_seeds_is_its_mean_and_spread_to_their_meaningful_digits() -> None:
    figure = Figure.of([0.9712, 0.9740, 0.9681])
    assert figure.mean == pytest.approx(0.97110) and figure.std == pytest.approx(0.002951, rel=1e-3)
    assert figure.text() == "0.971 ±0.003"
    assert Figure.of([1200.0, 1270.0, 1233.5]).text() == "1230 ±40"
    assert Figure.of([0.83249876543211]).text() == "0.832"               # one seed: 3 significant digits
    assert Figure.of([0.5, 0.5]).text() == "0.5 ±0"
    assert Figure.of([0.971, 0.971 + 1e-15]).text() == "0.9710 ±0.0000"  # float noise: 4 digits at most
    assert Figure.of([math.nan, 2.0, 4.0]).mean == 3.0 and Figure.of([math.nan]).text() == "-"
    rows = [Outcome("p", {m: v for m, _, _ in MEASURES}) for v in (1.0, 3.0)]
    assert row_of("p", rows).figures["makespan (s)"] == Figure(2.0, math.sqrt(2))
