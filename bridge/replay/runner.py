"""The replay loop: submit every job at its arrival time, record what happens, clean up.

Everything that can be checked is checked before the first submission (workload file, policy,
cluster reachable, inputs in HDFS). Jobs run on their own threads; a failed job is recorded and
the replay goes on. On Ctrl-C the running jobs are cancelled, any YARN application tagged with
this run is killed, and the results gathered so far are written.
"""
from __future__ import annotations

import signal
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from tqdm import tqdm

import sparkplugin
from bridge.nodes.cluster_agents import NodeAgents
from bridge.replay import answers
from bridge.replay.answers import AnswerBook
from bridge.replay.alone import measure, with_alone
from bridge.replay.eventlog import logging_conf, read_logs
from bridge.replay.launchers import Launcher, PerJobApplications, SharedApplication, runs_sql
from bridge.replay.results import (
    USER_JOBS,
    Ledger,
    plugin_counters,
    preemption_commands,
    tasks_frame,
    write_frame,
    write_meta,
)
from bridge.replay.sampler import UtilizationSampler
from bridge.target.config import ClusterTarget
from policies.framework.registry import stand_in
from workloads.spec import Input, Submission
from yarnclient.errors import YarnError
from yarnclient.resourcemanager import ResourceManagerClient

MODES = ("shared", "per-job")
_LIVE_STATES = ("NEW", "NEW_SAVING", "SUBMITTED", "ACCEPTED", "RUNNING")


@dataclass(frozen=True)
class ReplayPlan:
    """Everything a replay needs, resolved and validated."""

    workload: str
    seed: int
    policy: str
    mode: str
    submissions: tuple[Submission, ...]
    inputs: dict[str, str]
    target: ClusterTarget
    results: Path
    extra_conf: dict[str, str]
    agents: NodeAgents | None = None  # `--preempt`: the policy's node scheduler on real containers, through these
    measure_alone: bool = False  # `--measure-alone`: time each category alone before time 0 (`bridge.replay.alone`)
    input_specs: tuple[Input, ...] = ()  # the inputs' definitions: their local copies check the answers

    @property
    def preempt(self) -> bool:
        return self.agents is not None


def spark_conf(plan: ReplayPlan, run_tag: str) -> dict[str, str]:
    """Conf shared by both modes, then the mode's executor model, then the user's overrides."""
    conf = {"spark.app.name": f"schedbridge-{plan.workload}-{plan.policy}",
            "spark.yarn.tags": f"schedbridge,{run_tag}",
            "spark.ui.showConsoleProgress": "false",
            "spark.ui.enabled": "false",
            **logging_conf(plan.results / "eventlogs")}
    if plan.mode == "shared":
        conf["spark.executor.instances"] = "4"
    else:  # Ursa's Y+S baseline: executors come and go with demand (idle timeout 2 s)
        conf.update({"spark.dynamicAllocation.enabled": "true",
                     "spark.dynamicAllocation.shuffleTracking.enabled": "true",
                     "spark.dynamicAllocation.minExecutors": "0",
                     "spark.dynamicAllocation.maxExecutors": "4",
                     "spark.dynamicAllocation.executorIdleTimeout": "2s"})
    if stand_in(plan.policy) is None:  # the plugin's counters, per application, for meta.json's "plugin"
        conf["spark.schedbridge.stats.file"] = str(plan.results / "plugin" / "shared.json")
    return {**conf, **plan.extra_conf}


def kill_tagged_apps(rm: ResourceManagerClient, run_tag: str) -> list[str]:
    """Kill this run's YARN applications that are still alive (no orphans); returns their ids."""
    killed = []
    for app in rm.apps(states=_LIVE_STATES):
        if run_tag in app.raw.get("applicationTags", "").split(","):
            rm.kill(app.app_id)
            killed.append(app.app_id)
    return killed


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@contextmanager
def _terminate_as_interrupt() -> Iterator[None]:
    """SIGTERM (e.g. from `timeout` or a CI runner) cleans up like Ctrl-C does."""
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def _sleep_until(deadline: float) -> None:
    """Sleep in short steps: a signal caught on another thread is only acted on between them."""
    while (remaining := deadline - time.time()) > 0:
        time.sleep(min(remaining, 0.5))


@contextmanager
def _no_interrupts() -> Iterator[None]:
    """Finish clean-up even if Ctrl-C is pressed again (or SIGTERM arrives)."""
    previous = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def make_launcher(plan: ReplayPlan, conf: dict[str, str]) -> Launcher:
    """The launcher of the plan's mode (a shared application starts here, before time 0)."""
    if plan.mode == "shared":
        return SharedApplication(plan.policy, conf, plan.target.env, plan.inputs, runs_sql(plan.submissions),
                                 None if plan.agents is None else (plan.agents, plan.results))
    return PerJobApplications(plan.policy, conf, plan.target.env, plan.inputs, plan.results / "logs")


class Replay:
    def __init__(self, plan: ReplayPlan, rm: ResourceManagerClient,
                 launcher_factory: Callable[[ReplayPlan, dict[str, str]], Launcher] = make_launcher) -> None:
        self.plan, self.rm, self._make_launcher = plan, rm, launcher_factory
        self.run_tag = f"replay-{uuid.uuid4().hex[:12]}"
        self.t0 = 0.0
        self.alone: dict[str, float] | None = None  # category -> seconds alone, once measured
        self.estimates: dict[str, int] | None = None  # user jobs per estimate source (this process hosted the policy)
        self.demand_faults: dict[str, int] = {}       # stages whose declared demands were not used as given
        # Before jobs.csv: a folder killed before Spark starts (SIGKILL, no clean-up) says "running", never complete.
        write_meta(plan.results, self._meta("running"))
        self.ledger = Ledger(plan.results, plan.submissions)
        self.answers = AnswerBook(plan.input_specs)
        self._threads: list[threading.Thread] = []
        self._progress: tqdm | None = None

    def _meta(self, state: str) -> dict[str, object]:
        p = self.plan
        return {"source": "live", "workload": p.workload, "seed": p.seed, "policy": p.policy,
                "mode": p.mode, "preempt": p.preempt, "jobs": len(p.submissions), "t0_epoch": self.t0, "state": state,
                "run_tag": self.run_tag, "rm_url": p.target.rm_url, "inputs": p.inputs,
                "params": sparkplugin.policy_params(p.extra_conf), "alone_s": self.alone,
                "plugin": plugin_counters(p.results / "plugin"), "estimates": self.estimates,
                "demand_faults": self.demand_faults,
                "preemption_commands": preemption_commands(p.results)}

    def _measure_alone(self, launcher: Launcher) -> None:
        """Every category's runtime alone, into every job's ``duration_alone_s`` (before time 0)."""
        self.alone = measure(lambda sub: launcher.run(sub, alone=True), self.plan.submissions, tqdm.write)
        for sub in self.plan.submissions:
            self.ledger.update(sub.job_id, submission=with_alone(sub, self.alone))

    def _run_one(self, launcher: Launcher, submission: Submission) -> None:
        self.ledger.update(submission.job_id, submit_s=time.time() - self.t0, status="running")
        outcome = launcher.run(submission)
        if outcome.status == "succeeded":
            self.answers.keep(submission.job_id, outcome.answer)
        self.ledger.update(submission.job_id, end_s=time.time() - self.t0, status=outcome.status,
                           error=outcome.error)
        if self._progress is not None:
            self._progress.update(1)

    def _submit_all(self, launcher: Launcher) -> None:
        for submission in self.plan.submissions:
            _sleep_until(self.t0 + submission.time_s)
            thread = threading.Thread(target=self._run_one, args=(launcher, submission),
                                      name=f"job-{submission.job_id}", daemon=True)
            thread.start()
            self._threads.append(thread)
        for thread in self._threads:
            while thread.is_alive():
                thread.join(0.5)

    def run(self) -> str:
        """Replay every submission; returns the final state (complete or interrupted)."""
        for sub in ("eventlogs", "logs"):
            (self.plan.results / sub).mkdir(parents=True, exist_ok=True)
        state, launcher, sampler = "complete", None, UtilizationSampler(self.rm, self.run_tag)
        with _terminate_as_interrupt():
            try:
                tqdm.write(f"replay: starting Spark ({self.plan.mode} mode, policy {self.plan.policy})")
                launcher = self._make_launcher(self.plan, spark_conf(self.plan, self.run_tag))
                if self.plan.measure_alone:
                    self._measure_alone(launcher)
                self.t0 = time.time()
                write_meta(self.plan.results, self._meta("running"))
                sampler.start(self.t0)
                with tqdm(total=len(self.plan.submissions), unit="job",
                          desc=self.plan.policy) as self._progress:
                    self._submit_all(launcher)
            except KeyboardInterrupt:
                state = "interrupted"
                with _no_interrupts():
                    self._cancel(launcher)
        with _no_interrupts():
            self._finish(launcher, sampler, state)
        return state

    def _record_estimates(self, rows: list[dict[str, object]]) -> None:
        """``user-jobs.csv``: each user job's estimate as the policy was told it (the simulator of
        this run tells it the same); meta.json counts them by source, and a default is said."""
        if not rows:
            return
        write_frame(self.plan.results / USER_JOBS, pd.DataFrame(rows))
        self.estimates = dict(Counter(str(r["source"]) for r in rows))
        if self.estimates.get("default"):
            tqdm.write(f"replay: {self.estimates['default']} of {len(rows)} user job(s) had no runtime estimate "
                       "and were told the default (see user-jobs.csv)")

    def _record_demand_faults(self, faults: Mapping[str, int]) -> None:
        """meta.json counts the stages whose declared demands the policy could not use as given, by
        kind; any is said (the policy host's log names each stage)."""
        self.demand_faults = {kind: n for kind, n in sorted(faults.items()) if n}
        if self.demand_faults:
            said = ", ".join(f"{n} {kind}" for kind, n in self.demand_faults.items())
            tqdm.write(f"replay: declared task demands not used as given: {said} (malformed: one slot's share "
                       "instead; cut: to an executor's size; see the policy host's log)")

    def _cancel(self, launcher: Launcher | None) -> None:
        if launcher is not None:
            launcher.cancel_all()
        for thread in self._threads:
            thread.join(60.0)

    def _finish(self, launcher: Launcher | None, sampler: UtilizationSampler, state: str) -> None:
        if launcher is not None:
            launcher.close()
            self._record_estimates(launcher.estimates_used())
            self._record_demand_faults(launcher.demand_faults())
        try:
            kill_tagged_apps(self.rm, self.run_tag)
        except YarnError as exc:
            tqdm.write(f"replay: could not check for leftover applications: {exc}")
        write_frame(self.plan.results / "utilization.csv", sampler.stop())
        tasks = read_logs(self.plan.results / "eventlogs")
        write_frame(self.plan.results / "tasks.csv", tasks_frame(tasks, self.t0))
        self.ledger.finish(tasks, self.t0)
        verdicts = self.answers.check(self.plan.submissions, self.ledger.succeeded())
        checked = answers.write(self.plan.results / "answers.csv", verdicts)
        if checked["correct"] + checked["wrong"]:
            tqdm.write(answers.summary(checked, verdicts))
        meta = {**self._meta(state), "answers": checked}
        write_meta(self.plan.results, meta)
        plugin = meta["plugin"]
        if isinstance(plugin, dict) and (plugin["fallback_rounds"] or plugin["failed_reports"]):
            tqdm.write(f"replay: {plugin['fallback_rounds']} offer round(s) fell back to Spark's own scheduling "
                       f"({plugin['fallback_tasks']} of {plugin['placed_tasks'] + plugin['fallback_tasks']} "
                       f"tasks) and {plugin['failed_reports']} report(s) failed (last: {plugin['last_failure']}); "
                       "see meta.json")
        if isinstance(plugin, dict) and plugin["late_rounds"]:
            tqdm.write(f"replay: {plugin['late_rounds']} offer round(s) launched nothing while a late policy answer "
                       "was awaited (the process hosting the policy was slow to answer; see meta.json)")
