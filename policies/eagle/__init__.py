"""Eagle and the schedulers its evaluation compares it with: Sparrow (batch probing, late
binding), Hawk (its hybrid predecessor), centralized Least-Work-Left (``lwl``) and distributed
LWL with SRPT queues (``dlwl``)."""
