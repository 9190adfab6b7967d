"""Trace-driven discrete-event simulator: ``kernel`` (clock + heap), ``engine`` (cluster model
applying policy decisions), ``cli`` (``schedbridge simulate``)."""
