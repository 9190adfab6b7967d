"""Node agent: preempts YARN containers on one NodeManager host by resizing their CPU through cgroups.

One agent runs per NodeManager. It learns the node's containers from the NodeManager REST API, finds
each container's process tree in /proc, and throttles (or freezes) it in a cgroup it owns; memory is
never touched. The bridge drives it over a small authenticated HTTP API (`bridge.agent.client`).
"""
