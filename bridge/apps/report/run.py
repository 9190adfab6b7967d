"""One run to report on, whatever it was read from (`load.py`, `eventlog.py`)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

TASK_COLUMNS = ("job_id", "task", "node", "slot", "start", "end", "done")
_NAMED_AT_MOST = 20


class ResultsError(ValueError):
    """Something that cannot be reported on, with the file at fault."""


@dataclass(frozen=True)
class Run:
    label: str
    path: Path
    jobs: pd.DataFrame
    tasks: pd.DataFrame
    allocation: pd.DataFrame | None = None  # time_s, vcores_allocated, vcores_total (live)
    n_slots: int | None = None
    plugin: dict | None = None  # the Spark plugin's counters (meta.json "plugin"; live, not stock)
    state: str = "complete"  # a replay's meta.json "state": running or interrupted if it did not finish
    unfinished: tuple[str, ...] = ()  # then, the ids of its jobs that never finished
    stopped: str = ""  # then, why in words (default: a replay's meta.json state)
    cutoff: float | None = None  # the reporting cutoff the input recorded (a simulator per-job file)

    @property
    def complete(self) -> bool:
        return self.state == "complete"

    def not_finished(self) -> str:
        """One line saying that this run did not finish and which jobs never did."""
        ids = ", ".join(self.unfinished[:_NAMED_AT_MOST])
        more = f" and {len(self.unfinished) - _NAMED_AT_MOST} more" if len(self.unfinished) > _NAMED_AT_MOST else ""
        jobs = f"job(s) never finished: {ids}{more}" if self.unfinished else "every job ended"
        why = self.stopped or f"the replay did not finish (meta.json state {self.state!r})"
        return (f"{self.path}: {why}; {jobs}; "
                f"{len(self.jobs) - len(self.unfinished)} of {len(self.jobs)} job(s) finished")
