"""Spark's history: applications' event logs found (`sources`), read line by line within bounds
(`logs`) and into typed events (`events`), for every command that reads what Spark recorded."""
