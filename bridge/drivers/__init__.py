"""Drivers that adapt the one cluster state to a live cluster: Spark's executors as nodes
(``spark_engine``) or NodeManagers as nodes (``node_engine``), and the planners a host picks from."""
