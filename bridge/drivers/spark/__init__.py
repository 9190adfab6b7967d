"""The Spark-facing side of the live drivers: Spark's state per application (``state``), its stage
DAG (``dag``), the engine planner that serves a policy's decisions as grants (``engine``), how a
task the cluster state starts becomes a grant on an executor (``slots``), and ``spark-fifo``."""
