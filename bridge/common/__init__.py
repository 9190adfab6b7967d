"""Utilities every layer shares: command-line option types, paths, optional extras, atomic writes,
the one percentile definition (metrics), text tables and plots. Imports nothing else of bridge."""
