"""The Python side of the Spark plugin: policy hosts (daemon, in-process, local) that answer
the plugin's offer rounds through a planner."""
