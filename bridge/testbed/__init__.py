"""The local testbed: real Hadoop 3.5.0 daemons (HDFS + YARN) as processes on this host, its
layout, the node agents started for it, and the target (this testbed or a real cluster) a run uses."""
