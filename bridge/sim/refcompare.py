"""Hawk and Eagle side by side with the authors' own simulator, on fresh thesis-format traces.

``python -m bridge.sim.refcompare --reference eagle_simulation3.py --trace 3000:0.9:101 ...``
(``docs/reproduction.md`` section 8 has the py3 port recipe; the port is not in this repository).
For each trace it writes a fresh Yahoo-like trace from its own generator (below, independent of
``schedbridge trace generate``, so the traces are ones neither simulator was tuned on), runs our
``simulate`` and the reference over the seeds, and prints one table: per policy and class (the
reference's rule, ``int(mean) > cutoff``) the mean over the seeds of p50 / p90 / p99 JCT on each
side, the reference's range over its own seeds, and our mean over its mean. Runs already in
``--workdir`` are reused, so an interrupted table resumes (a run cut short leaves only its
``.part`` file, and is run again).
"""
from __future__ import annotations

import math
import os
import random
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import click
import numpy as np

from bridge.common.atomic import write_text

ROOT = Path(__file__).resolve().parents[2]   # our simulate runs from this tree
CUTOFF = 90.5811
NODES = 4000
# policy -> (our simulate arguments, the reference's 22 arguments after the trace, its environment)
RUNS: dict[str, tuple[list[str], list[str], dict[str, str]]] = {
    "hawk": (["--policy", "hawk"],
             "yes yes {c} {c} 100 98 1 2 100 MEAN 0 0 ATC 10000 10 {n} no 0 0 no Hawk".split(), {}),
    # our default (the thesis' Algorithm 1) against the reference with its SRPT misspelling fixed
    "eagle": (["--policy", "eagle"],
              "no yes {c} {c} 100 98 1 2 5 MEAN 0 0 ATC 10000 10 {n} yes 0 20 yes Eagle".split(),
              {"REFSIM_FIX_SRPT": "1"}),
    # what the unmodified reference does (docs/reproduction.md section 8)
    "eagle-last_fit": (["--policy", "eagle", "--param", "queue_pick=last_fit"],
                       "no yes {c} {c} 100 98 1 2 5 MEAN 0 0 ATC 10000 10 {n} yes 0 20 yes Eagle".split(), {}),
}
CLASSES = ("short", "long")
PCTS = (50, 90, 99)


@dataclass(frozen=True)
class TraceSpec:
    jobs: int
    load: float
    seed: int

    @property
    def name(self) -> str:
        return f"y{self.jobs}-l{self.load:g}-s{self.seed}"


def generate(spec: TraceSpec, path: Path) -> None:
    """A thesis-format Yahoo-like trace (``submit n_tasks mean d1 .. dn``, whole-second durations,
    as the reference reads them): 9.5% long jobs (mean task duration 91 s plus a log-normal of
    median 400 s, up to 3,000 tasks), the rest short (mean log-normal, median 12 s, below 90 s);
    task durations half exponential, half uniform in 0.3-1.7x the job's mean; Poisson arrivals
    at the rate that offers ``load`` of 4,000 single-slot nodes."""
    r = random.Random(spec.seed)
    jobs: list[list[int]] = []
    for _ in range(spec.jobs):
        if r.random() < 0.095:
            mean = min(20_000.0, 91 + r.lognormvariate(math.log(400), 0.9))
            k = max(1, min(3000, int(r.lognormvariate(math.log(60), 1.3))))
        else:
            mean = min(90.0, r.lognormvariate(math.log(12), 1.0))
            k = max(1, min(1000, int(r.lognormvariate(math.log(15), 1.1))))
        jobs.append([int(mean * r.expovariate(1.0) if r.random() < 0.5 else mean * r.uniform(0.3, 1.7))
                     for _ in range(k)])
    rate = spec.load * NODES * spec.jobs / sum(sum(d) for d in jobs)
    t, lines = 0.0, []
    for d in jobs:
        mean = sum(d) / len(d) if sum(d) else 0.0
        lines.append(f"{t:.6f} {len(d)} {mean:.6f} " + " ".join(map(str, d)))
        t += r.expovariate(rate)
    write_text(path, "\n".join(lines) + "\n")


def long_jobs(trace: Path) -> list[bool]:
    """Per job (line order), the reference's class: ``int(mean) > cutoff``."""
    with trace.open() as f:
        return [int(float(line.split()[2])) > CUTOFF for line in f if line.strip()]


def read_jct(out: Path, reference: bool) -> dict[int, float]:
    """Job index (0-based, the trace's line order) -> JCT, from either side's output."""
    jct: dict[int, float] = {}
    with out.open() as f:
        if reference:   # "end estimated_task_duration: E by_def: C total_job_running_time: JCT id"
            for line in f:
                p = line.split()
                jct[int(p[-1]) - 1] = float(p[-2])
        else:           # our per-job CSV
            header = f.readline().rstrip("\n").split(",")
            i, c = header.index("job_id"), header.index("completion_time")
            for line in f:
                p = line.rstrip("\n").split(",")
                jct[int(p[i])] = float(p[c])
    return jct


def percentiles(jct: dict[int, float], is_long: list[bool]) -> dict[str, list[float]]:
    out = {}
    for cls in CLASSES:
        v = [t for j, t in jct.items() if is_long[j] == (cls == "long")]
        out[cls] = [float(x) for x in np.percentile(v, PCTS)] if v else [math.nan] * 3
    return out


def _partial(done: Path) -> Path:
    """Where a run writes until it has finished: the reference appends to its output as jobs end,
    so a run cut short must not leave a file that a resumed table would take as finished."""
    return done.with_name(f"{done.stem}.part{done.suffix}")


def _run(cmd: list[str], env: dict[str, str], done: Path, log: Path) -> None:
    if done.exists():
        return
    part = _partial(done)
    with log.open("w") as f:
        rc = subprocess.run(cmd, env={**os.environ, **env}, stdout=f, stderr=subprocess.STDOUT, cwd=ROOT).returncode
    if rc != 0 or not part.exists():
        raise click.ClickException(f"failed ({rc}): {' '.join(cmd)}; see {log}")
    part.replace(done)


@click.command()
@click.option("--reference", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True,
              help="the py3 port of the authors' eagle_simulation.py (REFSIM_SEED sets its seed)")
@click.option("--trace", "traces", multiple=True, required=True, metavar="JOBS:LOAD:SEED",
              help="a fresh trace to generate and compare on (repeatable)")
@click.option("--seeds", default="1,2,3", show_default=True, help="seeds of both simulators")
@click.option("--policies", default="hawk,eagle", show_default=True, help=f"of {', '.join(RUNS)}")
@click.option("--workdir", type=click.Path(file_okay=False, path_type=Path), required=True)
@click.option("--workers", type=click.IntRange(1, 64), default=2, show_default=True)
def main(reference: Path, traces: tuple[str, ...], seeds: str, policies: str, workdir: Path, workers: int) -> None:
    """Generate the traces, run both simulators over the seeds, print the side-by-side table."""
    try:
        specs = [TraceSpec(int(j), float(load), int(s)) for j, load, s in (t.split(":") for t in traces)]
        seed_list = [int(s) for s in seeds.split(",")]
    except ValueError:
        raise click.BadParameter("use JOBS:LOAD:SEED and comma-separated integer seeds") from None
    pols = policies.split(",")
    if unknown := [p for p in pols if p not in RUNS]:
        raise click.BadParameter(f"unknown {unknown}; known: {', '.join(RUNS)}", param_hint="--policies")
    workdir.mkdir(parents=True, exist_ok=True)
    jobs: list[tuple[list[str], dict[str, str], Path, Path]] = []
    for spec in specs:
        trace = workdir / f"{spec.name}.trace"
        if not trace.exists():
            generate(spec, trace)
        for pol in pols:
            ours_args, ref_args, ref_env = RUNS[pol]
            for s in seed_list:
                stem = workdir / f"{spec.name}.{pol}.{s}"
                ours_out, ref_out = Path(f"{stem}.ours.csv"), Path(f"{stem}.ref.txt")
                ours = [sys.executable, "-c", "from bridge.cli import main; main()", "simulate", "--trace", str(trace),
                        *ours_args,
                        "--nodes", str(NODES), "--report-cutoff", str(CUTOFF), "--seed", str(s),
                        "--out", str(_partial(ours_out))]
                ref = [sys.executable, str(reference), str(trace),
                       *[a.format(c=CUTOFF, n=NODES) for a in ref_args], str(_partial(ref_out))]
                jobs.append((ours, {}, ours_out, Path(f"{stem}.ours.log")))
                jobs.append((ref, {**ref_env, "REFSIM_SEED": str(s)}, ref_out, Path(f"{stem}.ref.log")))
    with ThreadPoolExecutor(workers) as pool:
        for f in [pool.submit(_run, *j) for j in jobs]:
            f.result()
    click.echo(f"| Trace | Policy | Class | Ours p50 / p90 / p99 | Reference p50 / p90 / p99 | "
               f"Reference range over seeds {seeds} (p50; p90; p99) | Ours / reference |")
    click.echo("|---|---|---|---|---|---|---|")
    for spec in specs:
        is_long = long_jobs(workdir / f"{spec.name}.trace")
        for pol in pols:
            side = {ref: [percentiles(read_jct(workdir / f"{spec.name}.{pol}.{s}.{'ref.txt' if ref else 'ours.csv'}",
                                               ref), is_long) for s in seed_list] for ref in (False, True)}
            for cls in CLASSES:
                o = np.mean([p[cls] for p in side[False]], axis=0)
                r_all = np.array([p[cls] for p in side[True]])
                r = r_all.mean(axis=0)
                spread = "; ".join(f"{lo:.4g}-{hi:.4g}" for lo, hi in zip(r_all.min(axis=0), r_all.max(axis=0)))
                click.echo(f"| {spec.jobs:,} jobs, load {spec.load:g} | {pol} | {cls} | "
                           + " / ".join(f"{x:.4g}" for x in o) + " | " + " / ".join(f"{x:.4g}" for x in r)
                           + f" | {spread} | " + " / ".join(f"{a / b:.2f}" for a, b in zip(o, r)) + " |")


if __name__ == "__main__":
    main()
