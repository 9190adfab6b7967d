"""``schedbridge bench idle-slots``: idle slot-seconds while tasks wait, stock Spark vs each policy.

Spark's own example programs (shipped in the pinned pyspark wheel, under
``pyspark/examples/src/main/python``; pagerank's input is pyspark's ``data/mllib/pagerank_data.txt``)
run on the running local testbed as users run them: stock with ``spark-submit --master yarn``, and
through the engine with ``schedbridge submit --master spark-schedbridge://yarn --conf
spark.schedbridge.policy=P`` (the policy hosted beside the driver). Runs are interleaved (every
program under stock and every policy once, then again) so drift in machine load reaches all
alike. Each run writes its own plain event log; ``bridge.apps.report.idle_slots`` integrates it.

Why ``spark.default.parallelism`` is set (default 4, the testbed's ``spark.sql.shuffle.partitions``):
without it, PySpark's ``join``/``distinct`` give each iteration's RDD the sum of its parents'
partitions, so ``transitive_closure.py`` doubles its task count in each of its 14 iterations
(stage 48 already had 254 tasks after 110 s on the testbed) and would not end in hours.

The plugin's counters (``spark.schedbridge.stats.file``) give the rounds in which the policy held
free slots back (``held_rounds``) and the watchdog's rounds. Why a slot was held is the host's to
say: each round it counts the free slots the policy's own state also saw free and left unused
while tasks waited (its rule: a partition, a reservation; ``Placement.held``), as opposed to slots
a stale view still saw busy, and logs their slot-seconds when the application detaches. The table
shows that part of the idle slot-seconds apart and compares the rest with stock's idle.
"""
from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

import click

from bridge.common import atomic
from bridge.apps.report.idle_slots import EventLogError, read
from bridge.common.metrics import median
from bridge.common.options import EXECUTORS, REPEATS, OutputPath, renamed_option
from bridge.common.tables import text
from policies.framework.registry import STOCK, stand_in

DEFAULT_POLICIES = ("fifo", "sparrow", "hawk", "eagle", "falcon")
PROGRAMS = ("transitive_closure", "pagerank")
PAGERANK_ITERATIONS = 10  # the iteration count in pagerank.py's own usage example
RUN_TIMEOUT_S = 1800
RULE_HELD = re.compile(r"detached; the policy's own rule held ([0-9.]+) free slot-s")
STATS_KEYS = ("placed_tasks", "policy_rounds", "held_rounds", "watchdog_rounds", "fallback_rounds")


@dataclass(frozen=True)
class Run:
    """One application's figures; ``stats`` is the plugin's counters (empty for stock)."""

    program: str
    kind: str  # "stock" or a policy name
    repeat: int
    ok: bool
    wall_s: float
    runtime_s: float
    idle_slot_s: float
    busy_slot_s: float
    tasks: int
    stats: dict
    log: str
    rule_held_s: float = 0.0  # of idle_slot_s, held by the policy's own rule (its host's log)


def program_args(program: str) -> list[str]:
    """The example's file and arguments, from the installed pyspark (the pinned version)."""
    import pyspark

    home = Path(pyspark.__file__).resolve().parent
    script = home / "examples" / "src" / "main" / "python" / f"{program}.py"
    if not script.is_file():
        raise click.ClickException(f"{script} not found: the pyspark wheel no longer ships Spark's examples")
    if program == "pagerank":
        data = home / "data" / "mllib" / "pagerank_data.txt"
        return [str(script), data.as_uri(), str(PAGERANK_ITERATIONS)]  # file://: the NMs share this host
    return [str(script)]


def command(kind: str, logs: Path, stats: Path, executors: int, parallelism: int, host_log: Path) -> list[str]:
    """spark-submit for stock, ``schedbridge submit`` with the policy's conf otherwise."""
    conf = {"spark.eventLog.enabled": "true", "spark.eventLog.dir": logs.resolve().as_uri(),
            "spark.eventLog.compress": "false", "spark.eventLog.rolling.enabled": "false",
            "spark.default.parallelism": str(parallelism)}
    if stand_in(kind):
        from bridge.target.spark import spark_submit

        head = [str(spark_submit()), "--master", "yarn", "--num-executors", str(executors)]
    else:
        conf |= {"spark.schedbridge.policy": kind, "spark.schedbridge.stats.file": str(stats),
                 "spark.schedbridge.host.log": str(host_log)}
        head = [str(Path(sys.executable).parent / "schedbridge"), "submit", "--master",
                "spark-schedbridge://yarn", "--num-executors", str(executors)]
    return [*head, *(arg for key, value in conf.items() for arg in ("--conf", f"{key}={value}"))]


def run_one(program: str, kind: str, repeat: int, out: Path, env: dict[str, str], executors: int,
            parallelism: int) -> Run:
    """One application in its own directory (its event log, stats, driver output)."""
    where = out / program / f"{kind}-{repeat}"
    (where / "eventlog").mkdir(parents=True, exist_ok=True)
    stats_file = where / "stats.json"
    host_log = where / "host.log"
    cmd = [*command(kind, where / "eventlog", stats_file, executors, parallelism, host_log), *program_args(program)]
    start = time.monotonic()
    with (where / "driver.out").open("w") as stdout, (where / "driver.err").open("w") as stderr:
        done = subprocess.run(cmd, env=env, stdout=stdout, stderr=stderr, timeout=RUN_TIMEOUT_S, check=False)
    wall = time.monotonic() - start
    logs = sorted((where / "eventlog").iterdir())
    if done.returncode != 0 or len(logs) != 1:
        return Run(program, kind, repeat, False, wall, 0.0, 0.0, 0.0, 0, {}, str(where / "driver.err"))
    try:
        figures = read(logs[0])
    except EventLogError as e:
        (where / "driver.err").open("a").write(f"\nidle-slots: {e}\n")
        return Run(program, kind, repeat, False, wall, 0.0, 0.0, 0.0, 0, {}, str(where / "driver.err"))
    stats = json.loads(stats_file.read_text()) if stats_file.exists() else {}
    return Run(program, kind, repeat, True, wall, figures.runtime_s, figures.idle_slot_s, figures.busy_slot_s,
               figures.tasks, {k: stats[k] for k in STATS_KEYS if k in stats}, str(logs[0]),
               rule_held(host_log) if host_log.exists() else 0.0)


def rule_held(host_log: Path) -> float:
    """The slot-seconds the policy's own rule held free while tasks waited (a partition, a
    reservation: ``Placement.held``), which its host logs when the application detaches."""
    found = RULE_HELD.findall(host_log.read_text(errors="replace"))
    return sum(float(x) for x in found)


def _cell(values: list[float]) -> str:
    return "/".join(f"{v:.1f}" for v in values)


def table(runs: list[Run]) -> list[str]:
    """One line per program and kind (`bridge.common.tables`): every run's runtime, idle slot-seconds
    and the part of them the policy's own rule held, the median of what remains over stock's
    median idle, and the policy's held rounds per run."""
    rows = []
    for program in dict.fromkeys(r.program for r in runs):
        ok = [r for r in runs if r.program == program and r.ok]
        stock = [r.idle_slot_s for r in ok if stand_in(r.kind)]
        base = median(stock) if stock else None
        for kind in dict.fromkeys(r.kind for r in runs if r.program == program):
            mine = [r for r in ok if r.kind == kind]
            failed = sum(1 for r in runs if r.program == program and r.kind == kind and not r.ok)
            idle = [r.idle_slot_s for r in mine]
            rest = [r.idle_slot_s - r.rule_held_s for r in mine]
            policy = not stand_in(kind)
            rows.append({
                "program": program, "policy": kind + (f" ({failed} failed)" if failed else ""),
                "runtime s": _cell([r.runtime_s for r in mine]), "idle slot-s": _cell(idle),
                "rule-held slot-s": _cell([r.rule_held_s for r in mine]) if policy else "-",
                "x stock (idle - rule-held)": f"{median(rest) / base:.2f}" if rest and base else "-",
                "held rounds": (_cell([r.stats.get("held_rounds", 0) for r in mine]).replace(".0", "")
                                if policy else "-"),
                "fallback": str(sum(r.stats.get("fallback_rounds", 0) for r in mine)) if policy else "-"})
    return text(rows).splitlines()


def testbed_env() -> dict[str, str]:
    """The Spark environment of the running testbed; stops the command if it is not running."""
    from bridge.testbed.cluster import Testbed
    from bridge.testbed.layout import default_layout
    from bridge.testbed.spark import spark_env

    layout = default_layout()
    down = [name for name, pid in Testbed(layout).running().items() if pid is None]
    if down:
        raise click.ClickException(f"the testbed is not running ({', '.join(down)} down): "
                                   "`schedbridge testbed up` first")
    return spark_env(layout)


@click.command("idle-slots")
@click.option("--program", "programs", type=click.Choice(PROGRAMS), multiple=True,
              help="Spark example to run (repeatable; default both)")
@click.option("--policy", "policies", multiple=True, help=f"policy (repeatable; default {', '.join(DEFAULT_POLICIES)})")
@click.option("--repeats", type=REPEATS, default=2, show_default=True, help="interleaved rounds")
@click.option("--executors", type=EXECUTORS, default=2, show_default=True,
              help="executors per application (1 core each on the testbed)")
@click.option("--parallelism", type=click.IntRange(1, 10_000_000), default=4, show_default=True,
              help="spark.default.parallelism (see the module docstring)")
@click.option("--out", type=OutputPath(file_okay=False), default=None,
              help="where event logs, driver output and runs.json go (default results/idle-slots-TIME)")
@renamed_option("--results", "--out")
def idle_slots(programs: tuple[str, ...], policies: tuple[str, ...], repeats: int, executors: int,
               parallelism: int, out: Path | None) -> None:
    """Idle slot-seconds while tasks wait: Spark's examples, stock vs policies, on the testbed."""
    from policies.framework.registry import default_registry

    known = default_registry().names()
    for p in policies:
        if p not in known:
            raise click.BadParameter(f"unknown policy {p!r}; known policies: {', '.join(known)}", param_hint="--policy")
    env = testbed_env()
    out = out or Path("results") / time.strftime("idle-slots-%Y%m%d-%H%M%S")
    out.mkdir(parents=True, exist_ok=True)
    runs: list[Run] = []
    for repeat in range(1, repeats + 1):
        for program in programs or PROGRAMS:
            for kind in (STOCK.name, *(policies or DEFAULT_POLICIES)):
                runs.append(run_one(program, kind, repeat, out, env, executors, parallelism))
                last = runs[-1]
                click.echo(f"{program} {kind} #{repeat}: " + (f"{last.runtime_s:.1f} s, idle {last.idle_slot_s:.2f} "
                           f"slot-s, {last.stats}" if last.ok else f"FAILED, see {last.log}"), err=True)
                atomic.write_text(out / "runs.json", json.dumps([asdict(r) for r in runs], indent=1))
    click.echo(f"{len(runs)} runs, {executors} executors x 1 slot, spark.default.parallelism={parallelism}; "
               f"runtime = application start to end (event log); results: {out}")
    for line in table(runs):
        click.echo(line)
    if not all(r.ok for r in runs):
        raise click.ClickException("some runs failed (see the table)")
