"""The ResourceManager's applications (`ws/v1/cluster/apps`, through `yarnclient`) -> imported
jobs, one per application that finished successfully: a YARN-level trace.

Our reading of what the RM gives: an application is submitted at ``startedTime`` (when the RM
accepted it) and lasts until ``finishedTime``; the RM keeps no per-container history, only the
vcore-seconds the application held. So a job is either one task of the application's duration
(``one``), or (``vcores``, the default) ``round(vcoreSeconds / duration)`` tasks of that duration
(at least one): the average number of vcores it held, each for its whole run, which keeps its
vcore-seconds and its span when alone. Failed, killed and unfinished applications are left out.
"""
from __future__ import annotations

from bridge.apps.traceimport.imported import ImportedJob, Skipped
from bridge.common.magnitudes import MAX_TIME_MS
from bridge.common.options import MAX_TOTAL_SLOTS
from yarnclient.models import Application
from yarnclient.resourcemanager import ResourceManagerClient

TASK_READINGS = ("vcores", "one")


def _tasks(app: Application, duration_s: float, reading: str) -> int | None:
    """The job's task count; None when its vcore-seconds are no number or more than any cluster holds."""
    try:
        vcore_seconds = float(app.raw.get("vcoreSeconds") or 0)
    except (TypeError, ValueError, OverflowError):
        return None
    if reading == "one" or duration_s <= 0 or vcore_seconds <= 0:
        return 1
    vcores = vcore_seconds / duration_s
    return max(1, round(vcores)) if vcores <= MAX_TOTAL_SLOTS else None


def _job(app: Application, reading: str, skipped: Skipped) -> ImportedJob | None:
    if app.state in ("FAILED", "KILLED") or (app.state == "FINISHED" and app.final_status != "SUCCEEDED"):
        skipped.add(f"{(app.final_status if app.state == 'FINISHED' else app.state).lower()} applications",
                    app.app_id)
        return None
    if not app.is_done:
        skipped.add("unfinished applications", f"{app.app_id} {app.state}")
        return None
    if not 0 < app.started_ms <= app.finished_ms <= MAX_TIME_MS:
        skipped.add(f"applications without valid start and finish times (within (0, {MAX_TIME_MS:g}] ms)",
                    f"{app.app_id}: startedTime {app.started_ms}, finishedTime {app.finished_ms}")
        return None
    duration = (app.finished_ms - app.started_ms) / 1000.0
    if (tasks := _tasks(app, duration, reading)) is None:
        skipped.add(f"applications whose vcoreSeconds are no number or more than {MAX_TOTAL_SLOTS} vcores "
                    "on average", f"{app.app_id}: vcoreSeconds {str(app.raw.get('vcoreSeconds'))[:40]}")
        return None
    name = " ".join(part for part in (app.app_id, app.application_type, app.name) if part)
    return ImportedJob(float(app.started_ms), (duration,) * tasks, name)


def read_applications(client: ResourceManagerClient, reading: str, skipped: Skipped) -> tuple[list[ImportedJob], str]:
    """Every application the RM lists as a job, or counted in ``skipped``, and a line saying what
    was read. Raises `yarnclient.errors.YarnError` when the RM cannot be read."""
    apps = client.apps()
    jobs = [job for app in apps if (job := _job(app, reading, skipped)) is not None]
    return jobs, f"{client.url}/ws/v1/cluster/apps: {len(apps)} applications"
