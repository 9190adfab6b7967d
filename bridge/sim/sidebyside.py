"""Side-by-side simulator benchmark: this tree against another (an older commit), one run.

``schedbridge bench sim --baseline DIR`` runs each policy on the bench trace in a fresh child
process per tree, alternating the two trees (old, new; then new, old on the next repetition) so
both see the same machine load. Per child it records the whole process' user + system CPU time
and peak RSS from ``os.wait4`` (the kernel's accounting of that child alone), and the child
reports the CPU time of the simulation alone, its peak RSS when the simulation ends (before
pandas is imported for the percentiles) and the jobs' short/long p50/p90/p99 completion times.
The trees' results may differ bit for bit (same-instant ordering is not part of the contract);
the check is that every percentile stays within ``--tolerance`` of the baseline's.

The child is ``sidebyside_child.py`` run as a script with the tree's root first on ``sys.path``, so it imports
that tree's simulator, policies and trace generator; it uses only interfaces both trees have
(``bridge.sim.bench.trace_jobs``, ``bridge.sim.engine.Simulation``, ``policies.registry``,
``bridge.common.metrics.completion_summary``). ``policies_from`` runs a tree with another tree's
``policies`` package, to compare two engines on the same policy code.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bridge.common.metrics import CLASSES
from bridge.common.metrics import PERCENTILES as LEVELS

PERCENTILES = tuple(f"p{p}" for p in LEVELS)  # the keys of the child's rows

# The child script (a file of its own, run by path, so it imports nothing of this tree).
CHILD = Path(__file__).resolve().with_name("sidebyside_child.py")


@dataclass
class Side:
    """One tree to run: its root, a label, and optionally a directory (:func:`policies_only`)
    whose ``policies`` package it uses instead of its own."""

    label: str
    root: Path
    policies_from: Path | None = None
    rows: list[dict[str, Any]] = field(default_factory=list)


def run_child(side: Side, policy: str, n_jobs: int, nodes: int, load: float, trace: str) -> dict[str, Any]:
    """Run one policy of one tree in a fresh process; its JSON row plus the process' rusage."""
    cmd = [sys.executable, str(CHILD), str(side.root), str(side.policies_from or ""),
           policy, str(n_jobs), str(nodes), str(load), trace]
    w0 = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=err, cwd=side.root)
        assert proc.stdout is not None
        out = proc.stdout.read()
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            err.seek(0)
            raise RuntimeError(f"{side.label} {policy}: child failed (exit {proc.returncode}):\n"
                               f"{err.read().decode(errors='replace')[-2000:]}")
    row: dict[str, Any] = json.loads(out.decode().strip().splitlines()[-1])
    row.update(side=side.label, proc_cpu_s=round(usage.ru_utime + usage.ru_stime, 2),
               proc_wall_s=round(time.perf_counter() - w0, 2), proc_peak_rss_mb=round(usage.ru_maxrss / 1024, 1))
    return row


def differing_policy_files(a: Path, b: Path) -> list[str]:
    """``policies/**/*.py`` files whose content differs between two trees (or exist in one only)."""
    def digests(root: Path) -> dict[str, str]:
        return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
                for p in sorted((root / "policies").rglob("*.py"))}
    da, db = digests(a), digests(b)
    return sorted(k for k in da.keys() | db.keys() if da.get(k) != db.get(k))


def percentile_check(old: dict[str, Any], new: dict[str, Any], tolerance: float) -> tuple[float, list[str]]:
    """Largest relative difference of new vs old over short/long p50/p90/p99, and the ones over
    ``tolerance`` (``class pNN old -> new``)."""
    worst, over = 0.0, []
    for c in CLASSES:
        for p in PERCENTILES:
            a, b = old["jct"][c][p], new["jct"][c][p]
            rel = abs(b - a) / a if a else (0.0 if a == b else float("inf"))
            worst = max(worst, rel)
            if rel > tolerance:
                over.append(f"{c} {p} {a:.2f} -> {b:.2f} s ({rel:+.1%})")
    return worst, over


def compare(sides: Sequence[Side], policies: Sequence[str], n_jobs: int, nodes: int, load: float,
            trace: str, repeat: int, tolerance: float, echo: Any) -> list[dict[str, Any]]:
    """Run every policy ``repeat`` times per side, alternating the sides' order; one summary
    row per policy (medians of the CPU times, the largest RSS, the percentile check)."""
    old, new = sides
    for r in range(repeat):
        for p in policies:
            for side in (sides if r % 2 == 0 else tuple(reversed(sides))):
                row = run_child(side, p, n_jobs, nodes, load, trace)
                side.rows.append(row)
                echo(f"  run {r + 1}/{repeat} {p:8} {side.label:8} sim CPU {row['cpu_s']:7.2f} s  "
                     f"process CPU {row['proc_cpu_s']:7.2f} s  peak RSS {row['proc_peak_rss_mb']:6.1f} MB  "
                     f"events {row['events']}  {row['core']}")
    return [_summary(p, [x for x in old.rows if x["policy"] == p], [x for x in new.rows if x["policy"] == p],
                     tolerance) for p in policies]


def _median(xs: Sequence[float]) -> float:
    s = sorted(xs)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def _summary(policy: str, old: list[dict[str, Any]], new: list[dict[str, Any]], tolerance: float) -> dict[str, Any]:
    """One policy's figures: each run's CPU, medians, ratios, RSS, and the percentile check."""
    for rows in (old, new):
        if any(r["jct"] != rows[0]["jct"] for r in rows):
            raise RuntimeError(f"{policy}: {rows[0]['side']} gave different percentiles across repetitions")
    worst, over = percentile_check(old[0], new[0], tolerance)
    if any(r["cpu_s"] <= 0 or r["proc_cpu_s"] <= 0 for r in (*old, *new)):
        raise RuntimeError(f"{policy}: a run took no measurable CPU time, so no speedup can be computed; "
                           "give more --jobs")
    o_cpu, n_cpu = _median([r["cpu_s"] for r in old]), _median([r["cpu_s"] for r in new])
    o_proc, n_proc = _median([r["proc_cpu_s"] for r in old]), _median([r["proc_cpu_s"] for r in new])
    # the ratio of each adjacent (old, new) pair, so a load change between pairs does not enter
    pair_ratios = [round(o["cpu_s"] / n["cpu_s"], 2) for o, n in zip(old, new)]
    return {"policy": policy,
            "old_sim_cpu_s": [r["cpu_s"] for r in old], "new_sim_cpu_s": [r["cpu_s"] for r in new],
            "old_proc_cpu_s": [r["proc_cpu_s"] for r in old], "new_proc_cpu_s": [r["proc_cpu_s"] for r in new],
            "speedup_sim_cpu": round(o_cpu / n_cpu, 2), "speedup_proc_cpu": round(o_proc / n_proc, 2),
            "speedup_per_pair": pair_ratios,
            "old_sim_peak_rss_mb": max(r["sim_peak_rss_mb"] for r in old),
            "new_sim_peak_rss_mb": max(r["sim_peak_rss_mb"] for r in new),
            "old_peak_rss_mb": max(r["proc_peak_rss_mb"] for r in old),
            "new_peak_rss_mb": max(r["proc_peak_rss_mb"] for r in new),
            "old_events": old[0]["events"], "new_events": new[0]["events"],
            "old_jct": old[0]["jct"], "new_jct": new[0]["jct"],
            "old_code": [old[0]["engine"], old[0]["policies"]], "new_code": [new[0]["engine"], new[0]["policies"]],
            "old_core": old[0]["core"], "new_core": new[0]["core"],
            "percentiles_worst_rel_diff": round(worst, 4), "percentiles_over_tolerance": over,
            "percentiles_ok": not over and not old[0]["unfinished"] and not new[0]["unfinished"]}


def policies_only(root: Path, into: Path) -> Path:
    """``into`` made to hold only a link to ``root``'s ``policies`` package: put first on a child's
    path, it makes that child use those policies with its own tree's engine."""
    (into / "policies").symlink_to(root / "policies", target_is_directory=True)
    return into

