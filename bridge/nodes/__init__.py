"""Control of YARN nodes: node agents and their clients, container preemption commands and the
NodeManagers' advertised vcores."""
