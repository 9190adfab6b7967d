"""`schedbridge rank TRACE`: which policy would have helped this cluster?

Every policy `simulate --list-policies` lists is simulated on the trace (typically one `trace
import` made from the cluster's own history) on the cluster `simulate`'s options describe, under
each seed, each run in a worker process under a time limit (`runs`), and ranked on what a
researcher weighs: short- and long-job JCT (p50 and p90, by the same reporting cutoff as
`simulate`), makespan and utilization, each as its mean and spread over the seeds, ties called
ties (`table`). The table is written as rows finish and when the command is interrupted (`cli`),
and drawn so that every policy stays readable (`figures`). A policy that cannot run on this
cluster, fails (its worker process dying included) or exceeds the time limit is kept in the
table as "not run: <reason>", "failed: <reason>" or "timed out after N s", never dropped.

Policies that take a scheduling cutoff from the trace in the thesis' simulations
(`workloads.synthetic.kinds.TRACE_PARAMETERS`: Hawk, Eagle, DLWL, Big-C) get the trace's reporting
cutoff, so they split short and long jobs where the ranking does; every other parameter keeps its
default. The cluster size and the offered load it makes are printed with the table, and a load
above 1 is called out: such a run measures how fast queues grow, not the policies' steady state.
"""
