"""Trace-driven discrete-event simulator: ``kernel`` (clock + heap), ``engine`` (cluster model
applying policy decisions), ``cli`` (``schedbridge simulate``)."""
import policies  # noqa: F401  # first: its finder decides compiled or pure core before this package's modules load
