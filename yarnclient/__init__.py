"""A typed Python client for the YARN ResourceManager and NodeManager REST APIs.

    from yarnclient import ResourceManagerClient
    rm = ResourceManagerClient("http://rm-host:8088")          # or .from_conf_dir(HADOOP_CONF_DIR)
    for node in rm.nodes():
        print(node.node_id, node.state, node.vcores_total)

`from_conf_dir` reads the directory as Hadoop does (`yarnclient.hadoopconf`); with ResourceManager
HA the client talks to the active RM and fails over (`yarnclient.ha`).

Every call has a connect/read timeout and bounded retries on connection errors; failures raise
the typed errors in `yarnclient.errors`, carrying the server's own message.
"""
from yarnclient.errors import (YarnBadRequest, YarnConnectionError, YarnError, YarnForbidden,
                               YarnNoActiveResourceManager, YarnNotFound, YarnServerError,
                               YarnUnexpectedReply)
from yarnclient.models import Application, ClusterMetrics, Container, Node
from yarnclient.nodemanager import NodeManagerClient
from yarnclient.resourcemanager import ResourceManagerClient

__all__ = [
    "Application", "ClusterMetrics", "Container", "Node", "NodeManagerClient",
    "ResourceManagerClient", "YarnBadRequest", "YarnConnectionError", "YarnError", "YarnForbidden",
    "YarnNoActiveResourceManager", "YarnNotFound", "YarnServerError", "YarnUnexpectedReply",
]
