"""WordCount (the Kairos workload): random 100-character lines, a Spark job with extra float work."""
