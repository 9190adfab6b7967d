"""`schedbridge trace import`: a cluster's own history as a trace the simulator plays: Spark event
logs (one job per Spark job, with its stages) and the ResourceManager's applications (one job per
application), with an account of what was read and what was left out."""
