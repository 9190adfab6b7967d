"""Falcon: dependency-aware scheduling with complementary packing and Selective Preemption."""
