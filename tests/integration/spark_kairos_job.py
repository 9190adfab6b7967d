"""A PySpark driver running one CPU-bound job under Kairos live (in-process policy host, YARN).

    python spark_kairos_job.py APP_NAME WORK_DIR EXECUTORS

The test that runs it starts the node agents once the application exists (they manage only its
containers), so the handshake goes through WORK_DIR: this driver writes ``app_id``, then waits for
``agents.json`` (NodeManager web address -> agent URL; the token is in $SCHEDBRIDGE_AGENT_TOKEN).
Every node is Kairos' N = 1 core with Q = 1 (two executors admitted per node) and a 2 s quantum, so
tasks sharing a node take turns by container resize. It prints ``RESULT <value>`` and writes
``commands.json`` (the preemption commands applied) and ``nodes.json`` (the vcores it saw raised).
"""
from __future__ import annotations

import json
import logging
import os
import sys
import time
from pathlib import Path

from bridge.agent.client import AgentClient
from bridge.live import spark_inprocess
from bridge.live.node_engine import node_preemption
from bridge.live.preemption import ContainerPreemptor
from bridge.live.spark_host import PolicyHost
from bridge.testbed.layout import default_layout
from bridge.testbed.spark import spark_defaults
from yarnclient import ResourceManagerClient

WORK = 2_000_000  # float steps per task: a few CPU seconds


def burn(index: int) -> float:
    x = 0.5 + index
    for _ in range(WORK):
        x = (x * 1.000001 + 0.1) % 7.0
    return round(x, 6)


def _wait_for_file(path: Path, timeout_s: float) -> str:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise SystemExit(f"no {path} after {timeout_s}s")
        time.sleep(0.2)
    return path.read_text()


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    name, work, executors = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    layout = default_layout()
    rm = ResourceManagerClient(layout.rm_url, user=layout.user)
    nodes = sorted(n.http_address for n in rm.nodes(states=["RUNNING"]))
    preemptor = ContainerPreemptor({})
    conf = {**spark_defaults(layout), "spark.executor.instances": str(executors),
            "spark.dynamicAllocation.enabled": "false", "spark.locality.wait": "0s"}
    params = {"q": "1", "w": "2.0"}
    with node_preemption(rm, preemptor, nodes, 1, "kairos", params, work / "vcores.json") as planner:
        (work / "nodes.json").write_text(json.dumps({n.http_address: n.vcores_total for n in rm.nodes()}))
        spark = spark_inprocess.session("yarn", PolicyHost(planner), conf=conf, app_name=name,
                                        params=params)  # the planner's own, or refused
        sc = spark.sparkContext
        (work / "app_id").write_text(sc.applicationId)
        token = os.environ["SCHEDBRIDGE_AGENT_TOKEN"]
        for nm, url in json.loads(_wait_for_file(work / "agents.json", 300)).items():
            preemptor.agents[nm] = AgentClient(url, token, timeout_s=10)
        deadline = time.monotonic() + 300
        while sc._jsc.sc().getExecutorIds().size() < executors and time.monotonic() < deadline:
            time.sleep(0.5)
        values = sc.parallelize(range(executors), executors).map(burn).collect()
        print(f"RESULT {json.dumps(values)}", flush=True)
        (work / "plugin_stats.json").write_text(json.dumps(spark_inprocess.stats()))
        spark.stop()
    commands = [{"container": c.ref.container, "action": c.action, "status": c.status.code.value,
                 "seconds": c.seconds} for c in preemptor.commands]
    (work / "commands.json").write_text(json.dumps(commands))


if __name__ == "__main__":
    main()
