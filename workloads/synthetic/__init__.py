"""Seeded generators of the thesis' synthetic traces (see `kinds.KINDS`)."""
from workloads.synthetic.base import TraceJob, TraceStats, simulator_jobs, trace_lines, trace_stats, write_trace
from workloads.synthetic.kinds import KINDS, GeneratedTrace, TraceKind, generate, get_kind, trace_settings

__all__ = [
    "KINDS",
    "GeneratedTrace",
    "TraceJob",
    "TraceKind",
    "TraceStats",
    "generate",
    "get_kind",
    "simulator_jobs",
    "trace_lines",
    "trace_settings",
    "trace_stats",
    "write_trace",
]
