"""The local testbed: real Hadoop 3.5.0 daemons (HDFS + YARN) as processes on this host."""
