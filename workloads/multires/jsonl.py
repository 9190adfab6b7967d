"""Write jobs in the rich JSON-lines trace format that :mod:`workloads.trace` reads back
(one object per line: ``id``, ``submit``, ``durations``, and when present ``demands``,
``parents``, ``stage_of``, ``stage_parents``, ``name``), so a generated multi-resource or
DAG workload can be saved, edited and replayed. Floats use ``repr``: a round trip is exact.
"""
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Sequence
from pathlib import Path

from bridge.common import atomic
from workloads.model import Job

OPTIONAL = ("demands", "parents", "stage_of", "stage_parents")


def job_record(job: Job) -> dict[str, object]:
    rec: dict[str, object] = {"id": job.job_id, "submit": job.submit, "durations": list(job.durations)}
    for field in OPTIONAL:
        value = getattr(job, field)
        if value is not None:
            rec[field] = [list(v) if isinstance(v, tuple) else v for v in value]
    if job.name:
        rec["name"] = job.name
    return rec


def write_jsonl(path: str | os.PathLike[str], jobs: Iterable[Job], header: Sequence[str] = ()) -> None:
    """Write atomically (a temporary file renamed into place), after the ``header`` comment lines
    (`workloads.trace.cluster_comment`: the readers skip lines starting with ``#``)."""
    p = Path(path)
    if p.suffix != ".jsonl":
        raise ValueError(f"{p}: the rich trace format needs the .jsonl extension")
    with atomic.replacing(p) as tmp, open(tmp, "w", encoding="utf-8") as fh:
        fh.writelines(line + "\n" for line in header)
        for job in jobs:
            fh.write(json.dumps(job_record(job)) + "\n")
