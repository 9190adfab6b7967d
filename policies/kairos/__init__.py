"""Kairos (node-level Least Attained Service, central task-count balancing) and Big-C, the
preemptive baseline of its prototype's evaluation (``bigc``)."""
