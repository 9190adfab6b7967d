"""Falcon: dependency-aware scheduling with complementary packing and Selective Preemption, and
the baselines of its paper (``natjam``, ``amoeba``, ``srpt_preemptive``, ``snb``)."""
