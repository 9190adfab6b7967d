"""Run inside the compose cluster's client container by tests/integration/test_compose_cluster.py
(`python -m tests.integration.compose_client STEP ...`), which reads the JSON it prints.

    put PATH          stdin -> HDFS file PATH
    counts DIR        the (word, count) pairs a WordCount wrote to HDFS directory DIR
    agents            every NodeManager's agent (from $SCHEDBRIDGE_AGENTS): its containers' share and freeze
"""
from __future__ import annotations

import ast
import json
import os
import sys
from pathlib import Path

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


if __name__ == "__main__":
    step, *args = sys.argv[1:]
    print(json.dumps({"put": put, "counts": counts, "agents": agents}[step](*args)))
