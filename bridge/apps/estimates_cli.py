"""`schedbridge estimates build SOURCE... --out FILE`: recurring jobs' runtime estimates
(`bridge.drivers.estimates`) from Spark's history.

A SOURCE is one application's event log (a file, plain or zstd-compressed, or a rolled
`eventlog_v2_*` folder) or a folder searched for them at any depth: Spark's event log folder, a
`replay` results folder (`eventlogs/`), a `sim-vs-live` or `demo` output
(`POLICY/repeat-R/live/eventlogs/`), local or in the cluster's HDFS (`hdfs:///PATH`); a History
Server gives its applications' logs too (`bridge.apps.history_sources`). An application found
twice (one id in two logs) counts once.

A run of a recurring job is its Spark jobs in one application with the same key and job group
(`run_id`: with no group, one Spark job). It counts when every Spark job of it succeeded before the
log ends: a run cut short by the end of its application, or with a failed job, would under-state
the job. Its durations are its successful tasks', launch to finish.
"""
from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import click

from bridge.apps.history_sources import EventLogSource, has_hdfs, history_server_option, history_sources
from bridge.common.options import OutputPath, output_dir
from bridge.common.tables import cell, text
from bridge.drivers.estimates import Estimates, EstimatesError, Learner, job_key, run_id
from bridge.history.events import Event, JobEnd, JobStart, TaskEnd, need
from bridge.history.logs import EventLogError, feed
from bridge.history.sources import Applications, RemoteSource, SourceLog, source_logs
from bridge.target.config import hadoop_conf_dir_option
from yarnclient.errors import YarnError

SHOWN_JOBS, SHOWN_STAGES = 40, 8  # rows and stage means printed; the file holds them all
PROGRESS_AFTER_S = 2.0  # the progress bar's delay: none for a read that ends before
_Run = tuple[str, tuple[str, str]]  # (job key, (application, run id))


@dataclass
class _Application:
    """One application's Spark jobs as runs of recurring jobs, fed to the learner as they end."""

    label: str
    learner: Learner
    runs: dict[int, _Run] = field(default_factory=dict)  # Spark job id -> its run
    stage_job: dict[int, int] = field(default_factory=dict)  # stage -> the first Spark job that lists it
    open_jobs: Counter[_Run] = field(default_factory=Counter)
    failed: set[_Run] = field(default_factory=set)

    def add(self, event: Event) -> None:
        if isinstance(event, JobStart):
            self.job_started(event)
        elif isinstance(event, JobEnd):
            self.job_ended(event)
        elif isinstance(event, TaskEnd):
            self.task_ended(event)

    def job_started(self, job: JobStart) -> None:
        need(job.submission_ms, "Submission Time")  # a job's start without it is no event Spark wrote
        for stage in job.stage_ids:
            self.stage_job.setdefault(stage, job.job_id)
        key = job_key(job.properties, job.stages[0].name if job.stages else "")
        if key:
            run = (key, (self.label, run_id(job.properties, job.job_id)))
            self.runs[job.job_id] = run
            self.open_jobs[run] += 1

    def job_ended(self, end: JobEnd) -> None:
        if (run := self.runs.get(end.job_id)) is not None:
            self.open_jobs[run] -= 1
            if not end.succeeded:
                self.failed.add(run)

    def task_ended(self, task: TaskEnd) -> None:
        run = self.runs.get(self.stage_job.get(task.stage_id, -1))
        launch, finish = task.launch_ms / 1000.0, task.finish_ms / 1000.0
        if run is not None and task.succeeded and 0 < launch <= finish:
            self.learner.task_ended(*run, task.stage_id, finish - launch)

    def close(self) -> Counter[str]:
        """End the runs the log saw end; the others are discarded. How many of each."""
        outcomes: Counter[str] = Counter()
        for run, still_open in self.open_jobs.items():
            outcome = "unfinished" if still_open else "failed" if run in self.failed else "counted"
            (self.learner.run_ended if outcome == "counted" else self.learner.discard)(*run)
            outcomes[outcome] += 1
        return outcomes


@dataclass
class _Reading:
    """Every log read so far: one learner, the applications already read, what became of the runs."""

    learner: Learner = field(default_factory=Learner)
    applications: Applications = field(default_factory=Applications)
    runs: Counter[str] = field(default_factory=Counter)
    read_logs: int = 0   # logs read (one per application)

    @property
    def notes(self) -> list[str]:
        return self.applications.notes

    @property
    def logs(self) -> int:
        """The logs found in the sources, those skipped as read already included."""
        return self.read_logs + len(self.notes)

    def read(self, app_id: str, log: SourceLog) -> None:
        """Feed one application's log to the learner (its id "" when it has none)."""
        app = _Application(app_id or log.name, self.learner)
        with log.named_errors():
            feed(log.path, app.add)
        self.runs += app.close()
        self.read_logs += 1


def read_history(sources: Sequence[Path | RemoteSource], progress: bool = False) -> _Reading:
    """Every application's log in ``sources`` (`bridge.history.sources`), read once each, with a
    progress bar on a terminal if ``progress``. EventLogError (a source holds no log, or a
    malformed one), YarnError or OSError."""
    from tqdm import tqdm

    reading = _Reading()
    logs = source_logs(sources, reading.applications)  # found as they are read: a bar once reading takes a while
    shown = progress and sys.stderr.isatty()
    for app_id, log in tqdm(logs, unit="log", desc="estimates", file=sys.stderr, disable=not shown, leave=False,
                            delay=PROGRESS_AFTER_S):
        reading.read(app_id, log)
    return reading


@click.group()
def estimates() -> None:
    """Runtime estimates of recurring jobs (Hawk's and Eagle's short/long class), from history."""


@estimates.command("build")
@click.argument("sources", nargs=-1, type=EventLogSource())
@history_server_option
@hadoop_conf_dir_option
@click.option("--out", type=OutputPath(dir_okay=False), required=True,
              help="The estimates file to write (JSON).")
def build(sources: tuple[Path | str, ...], history_servers: tuple[str, ...], hadoop_conf_dir: Path | None,
          out: Path) -> None:
    """Estimate each recurring job's mean task duration, and per stage, from SOURCES: Spark event
    logs (files or rolled eventlog_v2_* folders), or folders holding them at any depth (Spark's event
    log folder, replay or sim-vs-live results), local or in the cluster's HDFS (hdfs:///PATH, the
    cluster of --hadoop-conf-dir, else $HADOOP_CONF_DIR, else $YARN_CONF_DIR, else the local
    testbed), and History Servers' applications. A job recurs under what its application sets: the
    schedbridge.job property, else its job group, its job tags, its description, its call site."""
    if not sources and not history_servers:
        raise click.UsageError("give SOURCES or --from-history-server URL")
    if hadoop_conf_dir is not None and not has_hdfs(sources):
        raise click.UsageError("--hadoop-conf-dir names the cluster of hdfs:// sources")
    try:
        reading = read_history(history_sources(sources, history_servers, hadoop_conf_dir, "estimates build"),
                               progress=True)
    except (EventLogError, EstimatesError, YarnError) as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"cannot read {exc.filename or 'an event log'}: {exc.strerror or exc}") from None
    _report(reading, reading.logs)
    found = reading.learner.estimates()
    if not found:
        raise click.ClickException("no run of any job ended with a successful task: nothing written")
    try:
        with output_dir(out.parent):
            found.save(out)
    except OSError as exc:
        raise click.ClickException(f"cannot write {out}: {exc.strerror or exc}") from None
    click.echo(_table(found))
    click.echo(f"wrote {out} ({len(found)} jobs)")


def _report(reading: _Reading, logs: int) -> None:
    for note in reading.notes:
        click.echo(note)
    runs = reading.runs
    click.echo(f"read {logs} event log{'' if logs == 1 else 's'}: {runs['counted']} runs of recurring jobs ended")
    if runs["unfinished"] or runs["failed"]:
        click.echo(f"left out: {runs['unfinished']} runs still running when their log ends, "
                   f"{runs['failed']} runs with a failed Spark job")


def _table(found: Estimates) -> str:
    rows = [{"job": key, "runs": e.runs, "tasks": e.tasks, "mean task (s)": e.mean_s,
             "stage means (s)": " ".join(cell(s) for s in e.stages[:SHOWN_STAGES])
             + (" ..." if len(e.stages) > SHOWN_STAGES else "")}
            for key, e in sorted(found.items())[:SHOWN_JOBS]]
    more = len(found) - SHOWN_JOBS
    return text(rows) + (f"\n... and {more} more jobs in the file" if more > 0 else "")
