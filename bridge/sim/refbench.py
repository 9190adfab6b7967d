"""``schedbridge bench sim-vs-reference``: ``simulate`` as a user runs it, side by side with the
authors' simulator on the same trace: peak RSS and CPU time of each whole process, and ratios.

The reference is the Python 3 port of the authors' ``eagle_simulation.py`` that
``docs/reproduction.md`` section 8 describes; it is not part of this repository, so its path is
an argument (``--reference``). For each policy (``sparrow``, ``hawk``, ``eagle``, with section
8's arguments for the reference) and repetition, both commands start at the same moment, each
pinned to a core of its own (``--cores``), under ``/usr/bin/time -v`` (the kernel's rusage of the
process and its children, as ``wait4`` returns it; without ``/usr/bin/time``, ``wait4`` here):
peak RSS is unaffected by other load, CPU time is, so only the ratio within one run means
anything. Ours is ``schedbridge`` (its entry point, through this interpreter) running section 8's
command, ``simulate --trace T --policy P --nodes N --report-cutoff C --seed S --out ours.csv``,
with its progress bar and table as a user gets them, and the CPU time of the simulation alone
noted besides the whole process' (:data:`OURS`), on the code of ``--tree`` (first on its
``PYTHONPATH``; by default the tree this module is in): ``--tree`` of an older checkout gives the
figures before a change.

``--trace`` is a thesis-format trace; without it one is made: ``trace generate yahoo`` with
``--jobs``, ``--load`` and ``--trace-seed`` on ``--nodes`` nodes, task durations then truncated to
whole seconds (what the reference reads) so both run the same tasks. Benchmarks print figures;
nothing is asserted.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from bridge.common.options import JOBS, NODES, REPEATS, FiniteFloat

TIME = "/usr/bin/time"
CUTOFF = 90.5811

# docs/reproduction.md section 8: the reference's 22 arguments after the trace, by policy
# (stealing, centralized long placement, cutoffs, short and long partitions, slots per node, probe
# ratio, monitor interval, estimation, off-mean bounds, stealing strategy, limit and attempts,
# nodes, SRPT, heartbeat delay, minimum probes, SBP, system).
REFERENCE_ARGS: dict[str, str] = {
    "sparrow": "no no {c} {c} 100 100 1 2 100 MEAN 0 0 ATC 10000 10 {n} no 0 0 no Hawk",
    "hawk": "yes yes {c} {c} 100 98 1 2 100 MEAN 0 0 ATC 10000 10 {n} no 0 0 no Hawk",
    "eagle": "no yes {c} {c} 100 98 1 2 5 MEAN 0 0 ATC 10000 10 {n} yes 0 20 yes Eagle",
}


def whole_seconds(src: Path, dst: Path) -> int:
    """``src`` (thesis format) with every task duration truncated to whole seconds, as the
    reference reads it (``int(float(d))``); the mean field is kept as written. Returns the jobs."""
    n = 0
    with open(src) as fin, open(dst, "w") as fout:
        for line in fin:
            parts = line.split()
            if not parts or parts[0].startswith("#"):
                continue
            fout.write(" ".join(parts[:3] + [str(int(float(d))) for d in parts[3:]]) + "\n")
            n += 1
    return n


def make_trace(dst: Path, jobs: int, load: float, nodes: int, seed: int) -> int:
    """A Yahoo-like trace of the trace generator, in whole seconds (see :func:`whole_seconds`)."""
    from workloads.synthetic import generate, write_trace

    raw = dst.with_suffix(".raw")  # what `trace generate yahoo --out` writes
    write_trace(generate("yahoo", jobs=jobs, seed=seed, load=load, nodes=nodes).jobs, raw)
    try:
        return whole_seconds(raw, dst)
    finally:
        raw.unlink()


# Ours: what the `schedbridge` console script runs (`bridge.cli:main`), with one addition: the CPU
# time of `Simulation.run` alone is written to $SCHEDBRIDGE_SIM_CPU, so the simulation's share of
# the process is known too (the figure the CPU ratio is about). `simulate` imports the
# class from its module when it runs, so wrapping the module's name reaches it; the compiled class
# itself is untouched.
OURS = """
import os, sys, time
import bridge.sim.engine as engine
Simulation = engine.Simulation
class Timed:
    def __init__(self, *args, **kwargs):
        self.__dict__["sim"] = Simulation(*args, **kwargs)
    def __getattr__(self, name):
        return getattr(self.sim, name)
    def run(self, *args, **kwargs):
        c0 = time.process_time()
        try:
            return self.sim.run(*args, **kwargs)
        finally:
            with open(os.environ["SCHEDBRIDGE_SIM_CPU"], "w") as fh:
                fh.write(repr(time.process_time() - c0))
engine.Simulation = Timed
from bridge.cli import main
sys.argv[0] = "schedbridge"
sys.exit(main())
"""


def ours_command() -> list[str]:
    """``schedbridge`` as a user runs it, through this interpreter (see :data:`OURS`)."""
    return [sys.executable, "-c", OURS]


def parse_time_v(text: str) -> dict[str, float]:
    """Peak RSS (MB), user + system CPU (s) and wall time (s) from ``/usr/bin/time -v``'s report."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.strip().rpartition(": ")
        if sep:
            fields[key] = value.strip()
    wall = 0.0
    for part in fields["Elapsed (wall clock) time (h:mm:ss or m:ss)"].split(":"):
        wall = wall * 60 + float(part)
    return {"peak_rss_mb": int(fields["Maximum resident set size (kbytes)"]) / 1024,
            "cpu_s": float(fields["User time (seconds)"]) + float(fields["System time (seconds)"]),
            "wall_s": wall}


class Run:
    """One command started pinned to ``core``, measured by ``/usr/bin/time -v`` when present."""

    def __init__(self, label: str, cmd: Sequence[str], core: int | None, work: Path, env: dict[str, str]) -> None:
        self.label, self.work = label, work
        self.report = work / f"{label}.time"
        self.timed = Path(TIME).exists()
        full = [TIME, "-v", "-o", str(self.report), *cmd] if self.timed else list(cmd)
        self.out, self.err = open(work / f"{label}.out", "wb"), open(work / f"{label}.err", "wb")
        pin = (lambda: os.sched_setaffinity(0, {core})) if core is not None else None
        self.t0 = time.perf_counter()
        self.proc = subprocess.Popen(full, stdout=self.out, stderr=self.err, cwd=work, env=env, preexec_fn=pin)

    def wait(self) -> None:
        _, status, usage = os.wait4(self.proc.pid, 0)
        self.wall = time.perf_counter() - self.t0
        self.proc.returncode = os.waitstatus_to_exitcode(status)
        self.usage = usage
        self.out.close()
        self.err.close()

    def figures(self) -> dict[str, Any]:
        """Peak RSS (MB), CPU and wall time (s), after :meth:`wait`; a failed command is a
        ``ClickException`` with the end of its stderr."""
        if self.proc.returncode:
            tail = (self.work / f"{self.label}.err").read_text(errors="replace")[-2000:]
            raise click.ClickException(f"{self.label} failed (exit {self.proc.returncode}):\n{tail}")
        if self.timed:
            return parse_time_v(self.report.read_text())
        u = self.usage
        return {"peak_rss_mb": u.ru_maxrss / 1024, "cpu_s": u.ru_utime + u.ru_stime, "wall_s": self.wall}


def finished_jobs(path: Path) -> int:
    """Lines of the reference's finished-jobs file: one per finished job."""
    with open(path) as fh:
        return sum(1 for line in fh if line.strip())


HERE = Path(__file__).resolve().parents[2]


def pair(policy: str, trace: Path, nodes: int, seed: int, cutoff: float, reference: Path, ref_python: str,
         cores: tuple[int | None, int | None], work: Path, tree: Path = HERE) -> dict[str, Any]:
    """Both simulators on ``trace`` at once; the figures and ratios of the pair."""
    work.mkdir(parents=True, exist_ok=True)
    ref_cmd = [ref_python, str(reference), str(trace),
               *REFERENCE_ARGS[policy].format(c=cutoff, n=nodes).split(), str(work / "ref.txt")]
    ours_cmd = [*ours_command(), "simulate", "--trace", str(trace), "--policy", policy, "--nodes", str(nodes),
                "--report-cutoff", str(cutoff), "--seed", str(seed), "--out", str(work / "ours.csv")]
    env = dict(os.environ, REFSIM_SEED=str(seed))
    ours_env = dict(env, PYTHONPATH=os.pathsep.join(filter(None, (str(tree), os.environ.get("PYTHONPATH")))),
                    SCHEDBRIDGE_SIM_CPU=str(work / "ours.sim_cpu"))
    ref = Run("ref", ref_cmd, cores[0], work, env)
    ours = Run("ours", ours_cmd, cores[1], work, ours_env)
    ref.wait()
    ours.wait()                      # both have ended before either's failure is reported
    r, o = ref.figures(), ours.figures()
    sim_cpu = float((work / "ours.sim_cpu").read_text())
    out = (work / "ours.out").read_text()
    core = next((line for line in (work / "ours.err").read_text().splitlines() if "simulator core" in line), "")
    return {"policy": policy, "seed": seed, "tree": str(tree),
            "ref_peak_rss_mb": round(r["peak_rss_mb"], 1), "ours_peak_rss_mb": round(o["peak_rss_mb"], 1),
            "rss_ours_over_ref": round(o["peak_rss_mb"] / r["peak_rss_mb"], 2),
            "ref_cpu_s": round(r["cpu_s"], 2), "ours_cpu_s": round(o["cpu_s"], 2),
            "cpu_ref_over_ours": round(r["cpu_s"] / o["cpu_s"], 2) if o["cpu_s"] else None,
            "ours_sim_cpu_s": round(sim_cpu, 2),
            "cpu_ref_over_ours_sim": round(r["cpu_s"] / sim_cpu, 2) if sim_cpu else None,
            "ref_wall_s": round(r["wall_s"], 1), "ours_wall_s": round(o["wall_s"], 1),
            "ref_finished_jobs": finished_jobs(work / "ref.txt"),
            "ours_jobs_line": next((line for line in out.splitlines() if line.startswith("jobs ")), ""),
            "ours_core": core.strip()}


def _cores(value: str | None) -> tuple[int | None, int | None]:
    if value == "none":
        return None, None
    if value is None:
        free = sorted(os.sched_getaffinity(0))
        return (free[0], free[1]) if len(free) >= 2 else (None, None)
    try:
        a, b = (int(x) for x in value.split(","))
    except ValueError:
        raise click.BadParameter(f"expected two core numbers as A,B (or 'none'), got {value!r}",
                                 param_hint="--cores") from None
    return a, b


@click.command("sim-vs-reference")
@click.option("--reference", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="the Python 3 port of the authors' eagle_simulation.py (docs/reproduction.md section 8)")
@click.option("--trace", type=click.Path(exists=True, dir_okay=False, path_type=Path), default=None,
              help="thesis-format trace in whole seconds (default: a Yahoo-like one made from the options below)")
@click.option("--jobs", "n_jobs", type=JOBS, default=12_000, show_default=True, help="without --trace: jobs")
@click.option("--load", type=FiniteFloat(0.01, 10), default=0.85, show_default=True,
              help="without --trace: offered load on --nodes nodes")
@click.option("--trace-seed", type=int, default=7, show_default=True, help="without --trace: the generator's seed")
@click.option("--nodes", type=NODES, default=4000, show_default=True)
@click.option("--policy", "policies", multiple=True, type=click.Choice(sorted(REFERENCE_ARGS)),
              help="repeatable (default: sparrow, hawk, eagle)")
@click.option("--seed", "seeds", multiple=True, type=int, help="simulation seed of both, repeatable (default: 1)")
@click.option("--cutoff", type=FiniteFloat(0, 1e9), default=CUTOFF, show_default=True,
              help="the reference's cutoffs and our --report-cutoff")
@click.option("--repeat", type=REPEATS, default=1, show_default=True, help="pairs per policy and seed")
@click.option("--cores", default=None,
              help="A,B: the reference on core A, ours on core B (default: the first two this process may use; "
                   "'none': unpinned)")
@click.option("--tree", type=click.Path(exists=True, file_okay=False, path_type=Path), default=HERE,
              show_default="this module's tree", help="the checkout whose `simulate` runs (e.g. an older commit)")
@click.option("--reference-python", default=sys.executable, show_default="this interpreter",
              help="the interpreter that runs the reference")
@click.option("--keep", type=click.Path(file_okay=False, path_type=Path), default=None,
              help="keep every run's outputs and reports in this directory")
@click.option("--json", "as_json", is_flag=True, help="one JSON object per pair")
def sim_vs_reference(reference: Path, trace: Path | None, n_jobs: int, load: float, trace_seed: int, nodes: int,
                     policies: tuple[str, ...], seeds: tuple[int, ...], cutoff: float, repeat: int,
                     cores: str | None, tree: Path, reference_python: str, keep: Path | None, as_json: bool) -> None:
    """Peak RSS and CPU time of `simulate` and of the authors' simulator, both at once on one trace."""
    pinned = _cores(cores)
    work = keep.resolve() if keep is not None else Path(tempfile.mkdtemp(prefix="schedbridge-vs-ref-"))
    try:
        if trace is None:
            trace = work / f"yahoo-{n_jobs}-load{load}-seed{trace_seed}.txt"
            work.mkdir(parents=True, exist_ok=True)
            made = make_trace(trace, n_jobs, load, nodes, trace_seed)
            click.echo(f"trace: {trace} ({made} jobs, Yahoo-like, load {load} on {nodes} nodes, whole seconds)",
                       err=True)
        trace = trace.resolve()
        click.echo(f"reference: {reference_python} {reference}\nours: schedbridge simulate ... (bridge.cli:main "
                   f"through {sys.executable}, Simulation.run timed; code of {tree.resolve()})\n"
                   f"cores: reference {pinned[0]}, ours {pinned[1]}; measured by "
                   f"{TIME + ' -v' if Path(TIME).exists() else 'wait4 (no ' + TIME + ')'}", err=True)
        for policy in policies or ("sparrow", "hawk", "eagle"):
            for seed in seeds or (1,):
                for k in range(repeat):
                    row = pair(policy, trace, nodes, seed, cutoff, reference.resolve(), reference_python, pinned,
                               work / f"{policy}-seed{seed}-{k + 1}", tree.resolve())
                    if as_json:
                        click.echo(json.dumps(row))
                        continue
                    click.echo(f"{policy:8} seed {seed}  peak RSS ours {row['ours_peak_rss_mb']:6.1f} MB, reference "
                               f"{row['ref_peak_rss_mb']:6.1f} MB: {row['rss_ours_over_ref']:.2f}x   CPU ours "
                               f"{row['ours_cpu_s']:6.2f} s (simulation {row['ours_sim_cpu_s']:6.2f} s), reference "
                               f"{row['ref_cpu_s']:6.2f} s: {row['cpu_ref_over_ours']}x less "
                               f"({row['cpu_ref_over_ours_sim']}x the simulation's)")
                    click.echo(f"         wall ours {row['ours_wall_s']} s, reference {row['ref_wall_s']} s; finished "
                               f"jobs: reference {row['ref_finished_jobs']}, ours {row['ours_jobs_line']!r}\n"
                               f"         {row['ours_core']}")
    finally:
        if keep is None:
            shutil.rmtree(work, ignore_errors=True)
