"""Multi-resource and DAG workloads: the Psychas-Ghaderi examples, Falcon DAG jobs, the Ursa staircase."""
