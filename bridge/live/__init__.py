"""Live drivers: the policy engine against a real Spark (and YARN) cluster."""
