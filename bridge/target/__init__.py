"""Which cluster a command talks to: its Hadoop configuration, its node agents and the Spark it
submits with. Any cluster is reached the same way; the local testbed is one of them, which the
command line registers as the default cluster (``bridge.testbed.target``)."""
