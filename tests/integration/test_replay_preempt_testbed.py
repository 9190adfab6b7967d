"""`schedbridge replay --policy kairos --preempt` on the real testbed: Kairos' node scheduler
time-slices real executor containers through node agents it starts, every job finishes, and the
cluster is left as it was (vcores restored, agents stopped, no application running)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tests.integration.process_output import failure_excerpt
from yarnclient.resourcemanager import ResourceManagerClient

pytestmark = pytest.mark.integration

# Three CPU-stretched WordCount jobs close together: 2 map + 2 reduce tasks each, so the six
# executors (N = 2 per NodeManager, Q = 1) hold more tasks than N per node and Kairos suspends.
WORKLOAD = """
name = "it-preempt"
seed = 3
jobs = 3
arrival = "fixed"
mean_interarrival_s = 1.0

[inputs.wc]
kind = "wordcount"
size_mb = 2
block_mb = 1

[categories.wc]
kind = "wordcount"
input = "wc"
reduces = 2
extra_flops = 200
probability = 1.0
"""


def test_kairos_preempts_real_containers_and_leaves_the_cluster_clean(testbed, tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.fail("node agents need root (cgroups); CI runs as root")
    rm = ResourceManagerClient(testbed.rm_url)
    vcores_before = {n.node_id: n.vcores_total for n in rm.nodes()}
    workload, results = tmp_path / "it-preempt.toml", tmp_path / "results"
    workload.write_text(WORKLOAD)
    command = [sys.executable, "-c", "from bridge.cli import main; main()", "replay", str(workload),
               "--policy", "kairos", "--preempt", "--conf", "spark.schedbridge.w=2", "--results", str(results)]
    done = subprocess.run(command, env=testbed.spark_env(), capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, failure_excerpt(done.stderr)

    jobs = pd.read_csv(results / "jobs.csv")
    assert len(jobs) == 3 and (jobs["status"] == "succeeded").all()
    meta = json.loads((results / "meta.json").read_text())
    assert meta["state"] == "complete" and meta["preempt"] is True
    commands = json.loads((results / "preemption.json").read_text())
    suspended = {c["container"] for c in commands if c["action"] == "suspend" and c["status"] == "ok"}
    resumed = {c["container"] for c in commands if c["action"] == "resume" and c["status"] == "ok"}
    assert suspended, commands
    assert suspended <= resumed  # every suspended container got its CPU back
    assert {n.node_id: n.vcores_total for n in rm.nodes()} == vcores_before
    assert not [a for a in rm.apps(states=["RUNNING", "ACCEPTED"]) if "it-preempt" in a.raw.get("name", "")]
    states = list(results.glob("agent-*.json"))
    assert len(states) == 2  # one agent per NodeManager
    for state in states:  # each agent restored its containers before it stopped
        containers = json.loads(state.read_text())["containers"].values()
        assert all(c["share"] is None and not c["frozen"] for c in containers), state
