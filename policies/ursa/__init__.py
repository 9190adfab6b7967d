"""Ursa: per-resource load-balanced, stage-aware placement with EJF/SRJF job ordering."""
