"""Drivers that connect the policy engine to the world: the simulator, the live cluster, the CLI."""
import policies  # noqa: F401  # first: it decides compiled or pure core before bridge.cluster is imported
