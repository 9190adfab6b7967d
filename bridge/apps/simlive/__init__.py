"""`schedbridge sim-vs-live`: one workload run live and simulated on the same shape, side by side."""
