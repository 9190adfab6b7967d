"""Run inside the compose cluster's client container by tests/integration/test_compose_cluster.py
(`python -m tests.integration.compose_client STEP ...`), which reads the JSON it prints.

    put PATH          stdin -> HDFS file PATH
    counts DIR        the (word, count) pairs a WordCount wrote to HDFS directory DIR
    agents            every NodeManager's agent (from $SCHEDBRIDGE_AGENTS): its containers' share and freeze
    agent-nodes       every NodeManager's agent: its own status (host, pid, throttled containers, ...)
    throttling SECS   polls every 0.2 s (up to SECS) for an agent holding a container throttled: its status
    mkdir PATH        an HDFS directory, open to every user (Spark's event-log directories are)
    placements DIR    per Spark event log in HDFS directory DIR: its application, the tasks Spark
                      started and the plugin's placement records
"""
from __future__ import annotations

import ast
import json
import os
import sys
import time
from pathlib import Path

from bridge.agent.client import AgentClient
from bridge.agent.errors import AgentError
from bridge.nodes.cluster_agents import connect, load
from yarnclient import ResourceManagerClient
from yarnclient.hadoopconf import rm_webapp_urls
from yarnclient.hdfs import hdfs_client


def put(path: str) -> dict[str, int]:
    data = sys.stdin.buffer.read()
    hdfs_client(os.environ["HADOOP_CONF_DIR"]).write(path, data=data, overwrite=True)
    return {"bytes": len(data)}


def counts(directory: str) -> dict[str, int]:
    hdfs = hdfs_client(os.environ["HADOOP_CONF_DIR"])
    found: dict[str, int] = {}
    for name in sorted(hdfs.list(directory)):
        if name.startswith("part-"):
            with hdfs.read(f"{directory}/{name}", encoding="utf-8") as reader:
                for line in reader.read().splitlines():
                    word, count = ast.literal_eval(line)
                    found[word] = found.get(word, 0) + count
    return found


def agents() -> dict[str, list[dict[str, object]]]:
    config = load(Path(os.environ["SCHEDBRIDGE_AGENTS"]))
    rm = ResourceManagerClient(rm_webapp_urls(Path(os.environ["HADOOP_CONF_DIR"])), timeout=(5, 20))
    return {node: agent.containers() for node, agent in connect(config, rm).items()}


def agent_nodes() -> dict[str, dict[str, object]]:
    """Unlike `agents`, an agent that does not answer (killed, restarting) is a row, not a failure."""
    config = load(Path(os.environ["SCHEDBRIDGE_AGENTS"]))
    rm = ResourceManagerClient(rm_webapp_urls(Path(os.environ["HADOOP_CONF_DIR"])), timeout=(5, 20))
    found: dict[str, dict[str, object]] = {}
    for node, url in sorted(config.urls(rm.nodes()).items()):
        try:
            found[node] = AgentClient(url, config.token(), timeout_s=5, ca=config.ca).node()
        except AgentError as exc:
            found[node] = {"error": str(exc)}
    return found


def throttling(timeout_s: str) -> dict[str, object]:
    """The first agent seen holding a throttled container (polled here, not across `docker exec`,
    so that a short suspension is not missed); {} if none within the time."""
    deadline = time.monotonic() + float(timeout_s)
    while time.monotonic() < deadline:
        for node, status in agent_nodes().items():
            if status.get("throttled_containers"):
                return dict(status, node=node)
        time.sleep(0.2)
    return {}


def mkdir(path: str) -> dict[str, str]:
    hdfs = hdfs_client(os.environ["HADOOP_CONF_DIR"])
    hdfs.makedirs(path, permission="1777")
    return {"made": path}


def _part_number(name: str) -> int:
    return int(name.split("_")[1]) if name.startswith("events_") else -1


def placements(directory: str) -> list[dict[str, object]]:
    hdfs = hdfs_client(os.environ["HADOOP_CONF_DIR"])
    found: list[dict[str, object]] = []
    for name in sorted(hdfs.list(directory)):
        path = f"{directory}/{name}"
        # a rolled log is a folder of parts (events_1_..., events_2_...), read in their order
        parts = [path] if hdfs.status(path)["type"] == "FILE" else \
            [f"{path}/{part}" for part in sorted(hdfs.list(path), key=_part_number) if part.startswith("events_")]
        events = []
        for part in parts:
            with hdfs.read(part, encoding="utf-8") as reader:
                events += [json.loads(line) for line in reader.read().splitlines() if line.strip()]
        apps = [e["App ID"] for e in events if e["Event"] == "SparkListenerApplicationStart"]
        found.append({"app": apps[0] if apps else None,
                      "started": sorted(e["Task Info"]["Task ID"] for e in events
                                        if e["Event"] == "SparkListenerTaskStart"),
                      "placed": [[e["taskId"], e["policy"], e["by"]] for e in events
                                 if e["Event"] == "org.schedbridge.spark.PlacementEvent"]})
    return found


if __name__ == "__main__":
    step, *args = sys.argv[1:]
    steps = {"put": put, "counts": counts, "agents": agents, "agent-nodes": agent_nodes, "throttling": throttling,
             "mkdir": mkdir, "placements": placements}
    print(json.dumps(steps[step](*args)))
