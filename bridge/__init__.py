"""Drivers that connect the policy engine to the world: the simulator, the live cluster, the CLI."""
