"""Drivers that adapt the one cluster state to a live cluster: Spark's executors as nodes
(``spark``: its ``engine``) or NodeManagers as nodes (``node_engine``), and the planners a host picks from."""
