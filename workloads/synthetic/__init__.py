"""Seeded generators of the thesis' synthetic traces (see `kinds.KINDS`)."""
from workloads.synthetic.base import TraceJob, TraceStats, trace_lines, trace_stats, write_trace
from workloads.synthetic.kinds import KINDS, GeneratedTrace, TraceKind, generate, get_kind

__all__ = [
    "KINDS",
    "GeneratedTrace",
    "TraceJob",
    "TraceKind",
    "TraceStats",
    "generate",
    "get_kind",
    "trace_lines",
    "trace_stats",
    "write_trace",
]
