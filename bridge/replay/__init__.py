"""Replaying a workload against a live YARN cluster and recording what happened."""
