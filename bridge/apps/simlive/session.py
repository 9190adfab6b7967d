"""A sim-vs-live comparison from start to end: validate everything, then for each policy and
repeat replay the workload live (`schedbridge replay`, in a child process), calibrate the
simulator from that run (`calibration`), simulate (`predict`), and measure both (`compare`).

Files in the output directory: ``POLICY/repeat-R/live/`` (the replay's results directory),
``POLICY/repeat-R/sim.csv`` (the simulator's per-job file), ``table.txt``/``table.csv`` (one row per
policy, repeat, class and statistic), ``spread.csv`` (over repeats), ``results.json`` (what
``--json`` prints) and ``jct_cdf.png``.
"""
from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
from collections.abc import Sequence
from contextlib import ExitStack
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from bridge.apps.simlive import compare, offered_load
from bridge.apps.simlive.calibration import Calibration, apply, measure
from bridge.apps.simlive.compare import CompareError, Measured
from bridge.apps.simlive.measured import (DEFAULT_JOB_MODEL, JOB_MODELS, STAGED_MODELS, live_tasks, measured_jobs,
                                          offslot_share, replay_t0)
from bridge.apps.simlive.predict import predict, predict_stages, simulated, split_params
from bridge.apps.simlive.stages import stage_play
from bridge.common import atomic, metrics
from bridge.apps.estimates_cli import read_history
from bridge.common.tables import text as render
from bridge.drivers.estimates import EstimatesError
from bridge.drivers.node_engine import live_params, preempting_policies, preempts
from bridge.history.logs import EventLogError
from bridge.nodes.node_capacity import RaisedVcores
from bridge.sim.cli import jsonable
from bridge.testbed.layout import default_layout
from bridge.testbed.spark import favour_driver
from bridge.target.config import choose_conf_dir, resolve
from policies.framework.registry import sim_model, stand_in
from workloads.expand import expand
from workloads.model import Job
from workloads.multires.jsonl import write_jsonl
from workloads.spec import Submission, TasksJob, Workload, declared_demands
from workloads.trace import write_trace
from workloads.workload_file import at_interarrival, check_demands_fit, load_workload
from yarnclient.resourcemanager import ResourceManagerClient

TRACE_DURATIONS = "the trace's task durations, each plus the calibrated task overhead"


def _wait(child: subprocess.Popen[bytes]) -> int:
    """The child's exit status. A Ctrl-C is passed on to the child (in a session of its own, the
    terminal's does not reach it), which cancels its jobs and cleans up: wait for that rather than
    kill it half-way."""
    while True:
        try:
            return child.wait()
        except KeyboardInterrupt:
            child.send_signal(signal.SIGINT)


def _placed(run: Measured) -> str:
    """Who placed the live run's tasks (the plugin's counters; nothing for stock Spark)."""
    if not run.plugin:
        return ""
    return (f"; live: {run.plugin.get('placed_tasks', 0)} task(s) placed by the policy, "
            f"{run.plugin.get('late_rounds', 0)} round(s) waited for a late answer, "
            f"{run.plugin.get('fallback_rounds', 0)} round(s) fell back to Spark's scheduler")


def _estimates(run: Measured) -> str:
    """Where the live policy's runtime estimates came from, per user job (the replay's meta.json)."""
    if not run.estimates:
        return ""
    return "; estimates: " + ", ".join(f"{n} {source}" for source, n in sorted(run.estimates.items()))


def _answers(run: Measured) -> str:
    """How many of the live run's answers were checked correct (`bridge.replay.answers`)."""
    counts = run.answers or {}
    checked = counts.get("correct", 0) + counts.get("wrong", 0)
    if not checked:
        return ""
    wrong = f", {counts['wrong']} WRONG (answers.csv)" if counts.get("wrong") else ""
    return f"; answers: {counts['correct']} of {checked} correct{wrong}"


def _check_demands(spec: Workload, submissions: Sequence[Submission], cores: int, memory_gb: float | None) -> None:
    """A workload whose jobs declare task demands is played on executors of known memory, and each
    demand fits one: CompareError or WorkloadFileError naming the category (nothing is run)."""
    if all(declared_demands(s.params) is None for s in submissions):
        return
    if memory_gb is None:
        raise CompareError(f"{spec.path}: its jobs declare task demands (cores, GB): give --executor-memory, "
                           "the executors' memory they are placed against, live and simulated")
    check_demands_fit(spec, (float(cores), memory_gb))


@dataclass(frozen=True)
class Result:
    """Every run of a comparison, and what is needed to show them."""

    workload: str
    executors: int
    executor_cores: int
    cutoff: float
    runs: list[Measured]
    durations: str = TRACE_DURATIONS  # what the simulator played as task durations
    cutoff_origin: str = "as given"  # how the cutoff was chosen (`bridge.common.metrics.cutoff_origin`)
    driver_share: str = ""  # how the live drivers shared the testbed's CPU (`bridge.testbed.driver_share`)
    executor_memory_gb: float | None = None  # --executor-memory (None: Spark's setting live, 4 GB per core simulated)
    arrivals: str = ""  # the mix's rate when not the file's (--interarrival, --offered-load)

    def as_dict(self) -> dict[str, object]:
        """The one JSON object of ``--json`` (and results.json)."""
        return {"workload": self.workload, "executors": self.executors, "executor_cores": self.executor_cores,
                "executor_memory_gb": self.executor_memory_gb,
                "slots": self.executors * self.executor_cores, "reporting_cutoff_s": self.cutoff,
                "driver_share": self.driver_share, "arrivals": self.arrivals,
                "sim_durations": self.durations, "runs": [r.as_dict() for r in self.runs]}

    def text(self) -> str:
        """The table, headed by the shape and cutoff, followed by each run's calibration (the
        delays the simulation used), and the spread over repeats when there are several."""
        memory = "" if self.executor_memory_gb is None else f" {self.executor_memory_gb:g} GB"
        lines = [f"{self.workload}: {self.executors} executors x {self.executor_cores} cores{memory}, live and "
                 f"simulated; short/long cutoff {self.cutoff:.4g} s (mean task duration; {self.cutoff_origin})",
                 f"simulated durations: {self.durations}",
                 *([f"live: {self.driver_share}"] if self.driver_share else []),
                 *([f"arrivals: {self.arrivals}"] if self.arrivals else []), "",
                 render(compare.table(self.runs)), "", "simulator delays (calibrated from each live run):"]
        lines += [f"  {r.policy} repeat {r.repeat}: {r.calibration.describe()}{_placed(r)}{_estimates(r)}{_answers(r)}"
                  for r in self.runs]
        failed = [r for r in self.runs if r.sim_error]
        if failed:
            lines += ["", "simulations that failed (their live figures stand):"]
            lines += [f"  {r.policy} repeat {r.repeat}: {r.sim_error}" for r in failed]
        if any(r.live_totals for r in self.runs):
            lines += ["", "whole runs (utilization: tasks' full-share work over slots x makespan):",
                      render(compare.totals_table(self.runs))]
        if any(r.repeat > 1 for r in self.runs):
            lines += ["", "over repeats:", render(compare.spread(self.runs))]
        return "\n".join(lines)


class Comparison:
    """A validated comparison, ready to run (nothing submitted yet).

    A trace workload is simulated from its task durations. Any other (WordCount, TPC-H) is
    simulated per run from that run's measured work (`bridge.apps.simlive.measured`, ``job_model``);
    then a job's size for the short/long split, and the default cutoff, come from the first run,
    so that every run and policy of the comparison splits the jobs the same way."""

    def __init__(self, workload: Path, name: str, jobs: list[Job], policies: list[str],
                 params: dict[str, dict[str, str]], shape: tuple[int, int], seed: int, cutoff: float | None,
                 preempt: bool, conf_dir: Path | None, submissions: Sequence[Submission] = (),
                 job_model: str | None = None, cutoff_given: bool = True,
                 executor_memory_gb: float | None = None) -> None:
        """``jobs``: the trace's, or empty with ``job_model`` (jobs measured from each run);
        ``cutoff_given``: whether ``cutoff`` came from the command line, not the default rule;
        ``executor_memory_gb``: each executor's memory, live and simulated (None: Spark's setting
        live, 4 GB per core simulated)."""
        self.workload, self.name, self.jobs, self.policies = workload, name, jobs, policies
        self.params, self.shape, self.seed, self.cutoff = params, shape, seed, cutoff
        self.cutoff_origin = metrics.cutoff_origin(cutoff_given, False)
        self.preempt, self.conf_dir = preempt, conf_dir
        self.resume = False  # reuse complete live runs found in the output directory (`_reused`)
        self.min_share: float | None = None  # cores a shrunk container keeps, with --preempt (None: the agent's)
        self.submissions, self.job_model = list(submissions), job_model
        self.executor_memory_gb = executor_memory_gb
        self.interarrival: float | None = None    # the mix's mean seconds between jobs, if not the file's
        self.arrivals = ""                        # how that rate was chosen, for the table's head
        self.fitted_run: Path | None = None       # the fit's stock run at that rate, stock's first repeat
        self.estimates: Path | None = None        # the runtime-estimates file every live policy gets
        self.estimates_from: str | None = None    # or: a compared stand-in whose run of a repeat gives them
        self.driver_share = ""  # how the live runs' drivers shared the testbed's CPU (bridge.testbed.driver_share)
        self._curves: dict[str, list[tuple[pd.DataFrame, pd.DataFrame]]] = {}  # policy -> (live, sim) per repeat

    @classmethod
    def prepare(cls, workload: Path, policies: list[str], executors: int, cores: int, seed: int | None,
                cutoff: float | None, params: dict[str, str], preempt: bool, conf_dir: Path | None,
                job_model: str | None = None, check: bool = True,
                executor_memory_gb: float | None = None, interarrival: float | None = None) -> Comparison:
        """Load and check the workload, the policies and their parameters; with ``check``, also
        whether each policy can be simulated (:meth:`check_simulatable`, which reads the RM's
        NodeManagers with --preempt: a caller that starts the cluster first checks afterwards).
        ``job_model``: how a workload without trace durations is simulated (None: ``stages``); a
        trace workload plays its trace's durations, whatever the model. A workload that declares
        task demands needs ``executor_memory_gb``, and each demand must fit an executor.
        ``interarrival``: the mix's mean seconds between jobs instead of the file's."""
        spec = load_workload(workload)
        if interarrival is not None:
            spec = at_interarrival(spec, interarrival)
        submissions = expand(spec)
        if not submissions:
            raise CompareError(f"{workload}: the workload has no jobs")
        _check_demands(spec, submissions, cores, executor_memory_gb)
        job_model = DEFAULT_JOB_MODEL if job_model is None else job_model
        if job_model not in JOB_MODELS:
            raise CompareError(f"job model {job_model!r}: one of {', '.join(JOB_MODELS)}")
        seed = spec.seed if seed is None else seed
        split = split_params(policies, params)
        if all(isinstance(s.params, TasksJob) for s in submissions):
            jobs = compare.trace_jobs(submissions, spec.name)
            comparison = cls(workload, spec.name, jobs, policies, split, (executors, cores), seed,
                             compare.default_cutoff(jobs) if cutoff is None else cutoff, preempt, conf_dir,
                             cutoff_given=cutoff is not None, executor_memory_gb=executor_memory_gb)
        else:
            comparison = cls(workload, spec.name, [], policies, split, (executors, cores), seed, cutoff, preempt,
                             conf_dir, submissions, job_model, cutoff_given=cutoff is not None,
                             executor_memory_gb=executor_memory_gb)
        comparison.interarrival = interarrival
        if interarrival is not None:
            comparison.arrivals = f"one job every {interarrival:.3g} s on average (--interarrival)"
        if check:
            comparison.check_simulatable()
        return comparison

    def use_estimates(self, file: Path | None, from_policy: str | None) -> None:
        """Give each live policy (not the stand-ins, which take none) runtime estimates: ``file``,
        or those built from the history of ``from_policy``'s run of the same repeat (a stand-in
        compared first: the papers' estimates come from earlier runs of the jobs). CompareError
        naming what is wrong."""
        if file is not None and from_policy is not None:
            raise CompareError("give an estimates file or a policy to build them from, not both")
        if from_policy is not None:
            if stand_in(from_policy) is None or from_policy not in self.policies:
                raise CompareError(f"estimates from {from_policy!r}: it must be a compared stand-in "
                                   f"({', '.join(p for p in self.policies if stand_in(p)) or 'none compared'})")
            if self.policies[0] != from_policy:
                raise CompareError(f"estimates from {from_policy}: list it first, its runs give the others' estimates")
        self.estimates, self.estimates_from = file, from_policy

    def check_simulatable(self) -> None:
        """Every compared policy can be simulated on the shape it will be simulated on (with
        --preempt, the RM's NodeManagers: a live prerequisite read now), before any live run:
        CompareError naming the first that cannot."""
        for policy in self.policies:
            params, (nodes, slots) = self._simulated(policy)
            try:
                simulated(policy, params, nodes, slots, self.seed, memory_per_core=self.memory_per_core)
            except CompareError as exc:
                raise CompareError(f"{policy} cannot be simulated on {nodes} x {slots} slots ({exc}); "
                                   "nothing was run") from None

    @property
    def durations(self) -> str:
        """What the simulator plays as task durations, for the table."""
        if self.job_model is None:
            return TRACE_DURATIONS
        if self.job_model == "tasks":
            return ("measured from each live run (tasks): every task of a job at its full-share time (launch to "
                    "finish less time shrunk), in its stages with Spark's parents; POLICY/repeat-R/sim.jsonl")
        if self.job_model == "stages":
            return ("measured from each live run (stages): each stage a job of its tasks' full-share times (launch "
                    "to finish less time shrunk), arriving when its parent stages end in the simulation plus the "
                    "driver's gap measured live; POLICY/repeat-R/sim.jsonl (the jobs, stages inside)")
        return (f"measured from each live run ({self.job_model}): a job is one task of its stages' "
                f"{'longest' if self.job_model == 'critical-path' else 'summed'} full-share task times "
                "(launch to finish less time shrunk), stages in sequence; POLICY/repeat-R/sim.trace")

    def _on_testbed(self) -> bool:
        """Whether the live runs go to the local testbed, whose driver shares the executors' host."""
        conf_dir, _ = choose_conf_dir(self.conf_dir)
        return conf_dir is None or conf_dir.resolve() == default_layout().conf_dir.resolve()

    def raise_vcores(self, stack: ExitStack, extra: int) -> None:
        """Every NodeManager advertises `extra` more vcores until `stack` closes (the testbed's
        vcores record, as `replay --preempt` keeps it, so `testbed restore` can undo a killed run)."""
        layout = default_layout()
        if self.preempt:
            raise CompareError("--extra-vcores with --preempt: the preemption path raises the vcores itself")
        if resolve(self.conf_dir).rm_url != layout.rm_url:
            raise CompareError("--extra-vcores changes NodeManager capacity through the RM, which this command "
                               "does only on the local testbed")
        stack.enter_context(RaisedVcores(ResourceManagerClient(layout.rm_url, user=layout.user), extra,
                                         layout.vcores_record))

    def run(self, repeats: int, out: Path) -> Result:
        """Every policy `repeats` times, live then simulated; the files written to `out`."""
        runs = [self._one(policy, repeat, out / policy / f"repeat-{repeat}")
                for policy in self.policies for repeat in range(1, repeats + 1)]
        assert self.cutoff is not None  # set by the first run when the jobs are measured
        result = Result(self.name, *self.shape, self.cutoff, runs, self.durations, self.cutoff_origin,
                        self.driver_share, self.executor_memory_gb, self.arrivals)
        self._write(result, out)
        return result

    def fit_load(self, load: float, out: Path, runs: int = offered_load.RUNS) -> float:
        """Set the mix's rate to offer ``load`` (`offered_load`): run stock Spark at the current rate
        into ``out/offered-load/live-1``, measure its work, and run again at the rate that calls for
        (``live-2``, ...) until a run offers ``load`` within the tolerance or ``runs`` ran; the
        figures in ``out/offered-load/fit.json``. Returns the interarrival every policy then runs at."""
        if self.jobs or not self.submissions:
            raise CompareError("--offered-load: a job mix only (a trace workload's arrivals are the trace's)")
        spec = load_workload(self.workload)
        assert spec.mix is not None
        rate = self.interarrival if self.interarrival is not None else spec.mix.mean_interarrival_s
        directory, slots, jobs = out / "offered-load", self.shape[0] * self.shape[1], len(self.submissions)
        measured: list[offered_load.Measured] = []
        for n in range(1, runs + 1):
            run = offered_load.Measured(rate, self._fit_run(directory / f"live-{n}", rate, load))
            measured.append(run)
            print(f"sim-vs-live: one job every {rate:.3g} s: {run.work_s:.0f} slot-seconds of work, offering "
                  f"{run.offered(slots, jobs):.2f} of the slots' time (aim {load:g})", file=sys.stderr)
            if offered_load.converged(run, slots, jobs, load):
                break
            try:
                rate = offered_load.next_interarrival(measured, slots, jobs, load)
            except ValueError as exc:
                raise CompareError(f"{directory / f'live-{n}'}: {exc}") from None
        fitted = offered_load.converged(measured[-1], slots, jobs, load)
        atomic.write_text(directory / "fit.json", json.dumps(
            {"load": load, "slots": slots, "jobs": jobs, "tolerance": offered_load.TOLERANCE,
             "runs": [{"interarrival_s": r.interarrival_s, "work_s": r.work_s, "offered": r.offered(slots, jobs)}
                      for r in measured],
             "interarrival_s": rate, "measured_at_that_rate": fitted}, indent=2) + "\n")
        how = "measured there" if fitted else f"not within {offered_load.TOLERANCE:g} in {runs} runs: the last call"
        self.fitted_run = directory / f"live-{len(measured)}" if fitted else None
        self.interarrival = rate
        self.arrivals = (f"one job every {rate:.3g} s on average, fitted to offer {load:g} of the slots' time "
                         f"({len(measured)} stock run(s), {how}; {directory / 'fit.json'})")
        print(f"sim-vs-live: {self.arrivals}", file=sys.stderr)
        self.submissions = list(expand(at_interarrival(spec, rate)))
        return rate

    def _fit_run(self, live: Path, rate: float, load: float) -> float:
        """One stock run of the fit at ``rate``: the slot-seconds its tasks held."""
        self.interarrival = rate
        print(f"sim-vs-live: measuring the mix's work under stock Spark at one job every {rate:.3g} s "
              f"(--offered-load {load:g})", file=sys.stderr)
        if not (self.resume and self._reused(live, offered_load.FIT_POLICY, self.seed)):
            self._replay(offered_load.FIT_POLICY, self.seed, live)
        return float(live_tasks(live)["work"].sum())

    def seed_of(self, repeat: int) -> int:
        """The policy seed of repeat ``repeat``, live and simulated: the given seed, then the next ones,
        so that a mean over repeats samples the policy's randomness on both sides alike."""
        return self.seed + repeat - 1

    def _live(self, policy: str, seed: int, directory: Path, repeat: int) -> Path:
        """`schedbridge replay` of the workload under `policy` on the shape, in a child process (Spark's
        JVM is one per process, and the plugin must be on the classpath when it starts); its results
        directory. The child's output goes to stderr, so stdout stays the table or the JSON."""
        results = directory / "live"
        if self.resume and self._reused(results, policy, seed):
            return results
        if policy == offered_load.FIT_POLICY and seed == self.seed and self.fitted_run is not None:
            return self._copied_fit(self.fitted_run, results)
        estimates = None if stand_in(policy) else self._estimates_of(repeat, directory.parent.parent)
        return self._replay(policy, seed, results, estimates)

    def _estimates_of(self, repeat: int, out: Path) -> Path | None:
        """The estimates file of ``repeat``'s live policies: the given one, or built from the history
        of the ``estimates_from`` stand-in's run of that repeat (``POLICY/repeat-R/estimates.json``)."""
        if self.estimates_from is None:
            return self.estimates
        directory = out / self.estimates_from / f"repeat-{repeat}"
        path = directory / "estimates.json"
        if not path.is_file():
            try:
                found = read_history([directory / "live" / "eventlogs"]).learner.estimates()
            except (EventLogError, EstimatesError) as exc:
                raise CompareError(f"estimates from {self.estimates_from}'s repeat {repeat}: {exc}") from None
            if not found:
                raise CompareError(f"{directory / 'live'}: no recurring job ended there to estimate from")
            found.save(path)
            print(f"sim-vs-live: {len(found)} recurring jobs' estimates from {self.estimates_from}'s repeat {repeat} "
                  f"in {path}", file=sys.stderr)
        return path

    def _replay(self, policy: str, seed: int, results: Path, estimates: Path | None = None) -> Path:
        """The replay itself, in its child process (see `_live`)."""
        conf = {"spark.executor.instances": str(self.shape[0]), "spark.executor.cores": str(self.shape[1])}
        if self.executor_memory_gb is not None:
            conf["spark.executor.memory"] = f"{round(self.executor_memory_gb * 1024)}m"
        live_params = dict(self.params[policy]) | ({} if stand_in(policy) else {"seed": str(seed)})
        command = [sys.executable, "-c", "from bridge.cli import main; main()", "replay", str(self.workload),
                   "--policy", policy, "--out", str(results),
                   *(("--interarrival", repr(self.interarrival)) if self.interarrival is not None else ()),
                   *(("--estimates", str(estimates)) if estimates is not None else ()),
                   *(a for k, v in conf.items() for a in ("--conf", f"{k}={v}")),
                   *(a for k, v in live_params.items() for a in ("--param", f"{k}={v}")),
                   *(("--hadoop-conf-dir", str(self.conf_dir)) if self.conf_dir else ()),
                   *(("--preempt",) if self.preempts(policy) else ()),
                   *(("--min-share", str(self.min_share)) if self.preempts(policy) and self.min_share else ())]
        child = subprocess.Popen(command, stdout=sys.stderr, start_new_session=True)
        if self._on_testbed():
            self.driver_share = favour_driver(child.pid)
        code = _wait(child)
        meta = results / "meta.json"
        state = json.loads(meta.read_text()).get("state") if meta.is_file() else "not started"
        if code != 0 or state != "complete":
            raise CompareError(f"the live run of {policy} ended with exit status {code}, state {state}; "
                               f"see {results} and the replay's messages above")
        return results

    @staticmethod
    def _copied_fit(fitted: Path, results: Path) -> Path:
        """Stock's first repeat is the fit's last run ``fitted``, which ran stock at the fitted rate and
        seed: copied to ``results`` rather than run again (a run of the whole mix saved)."""
        shutil.copytree(fitted, results)
        print(f"sim-vs-live: {offered_load.FIT_POLICY}'s run at the fitted rate is the fit's last run, "
              f"{fitted} (copied to {results})", file=sys.stderr)
        return results

    def _reused(self, results: Path, policy: str, seed: int) -> bool:
        """With --resume: whether ``results`` is a complete live run of this workload, policy and
        seed, to simulate again rather than run again; an incomplete one is moved aside (kept as
        evidence) and run again. CompareError if it is another comparison's run."""
        meta_file = results / "meta.json"
        if not results.exists():
            return False
        meta = json.loads(meta_file.read_text()) if meta_file.is_file() else {}
        if meta.get("state") != "complete":
            aside = results.with_name(f"live.incomplete-{sum(1 for _ in results.parent.glob('live.incomplete-*')) + 1}")
            results.rename(aside)
            print(f"sim-vs-live: {results} was not a complete run (moved to {aside.name}); running it again",
                  file=sys.stderr)
            return False
        recorded = (meta.get("workload"), meta.get("policy"), (meta.get("params") or {}).get("seed", str(seed)))
        if recorded != (self.name, policy, str(seed)):
            raise CompareError(f"{meta_file}: a run of workload {recorded[0]}, policy {recorded[1]}, seed "
                               f"{recorded[2]}; --resume needs {self.name}, {policy}, seed {seed} there")
        print(f"sim-vs-live: reusing the complete live run {results}", file=sys.stderr)
        return True

    def _one(self, policy: str, repeat: int, directory: Path) -> Measured:
        """One live run and its simulation. A run that cannot be simulated (its measured jobs or the
        simulation fail) keeps its live figures, the reason in ``sim_error``: the others' stand."""
        live_dir = self._live(policy, self.seed_of(repeat), directory, repeat)
        sim_error, played = None, None
        try:
            played = self._played(live_dir, directory)
        except (CompareError, ValueError) as exc:
            sim_error = f"{sim_model(policy)}: {exc}"
        if not self.jobs:   # the first run sets the jobs' sizes: without them no figure can be classed
            raise CompareError(f"{live_dir}: the first run's jobs could not be measured ({sim_error})")
        nominal = {j.job_id: j for j in self.jobs}
        calibration = self._calibrate(live_dir, None if self.job_model else nominal, self._offslot_played(policy))
        assert self.cutoff is not None
        params, shape = self._simulated(policy)
        live = compare.live_jobs(live_dir, nominal)
        meta = json.loads((live_dir / "meta.json").read_text())
        slots = self.shape[0] * self.shape[1]
        record = {"plugin": meta.get("plugin"), "answers": meta.get("answers"), "seed": self.seed_of(repeat),
                  "estimates": meta.get("estimates"),
                  "live_totals": compare.totals(live, float(live_tasks(live_dir)["work"].sum()), slots)}
        live_stats = compare.class_stats(live, self.cutoff)
        if played is not None:
            try:
                sim = self._predict(live_dir, played, policy, params, shape, repeat, calibration, directory, nominal)
            except CompareError as exc:
                sim_error = str(exc)
        if sim_error is not None or played is None:
            return Measured(policy, repeat, live_stats, compare.no_stats(), calibration, live_dir,
                            directory / "sim.csv", sim_error=sim_error, **record)
        self._curves.setdefault(policy, []).append((live, sim))
        sim_busy = sum(sum(j.durations) for j in apply(played, calibration))
        return Measured(policy, repeat, live_stats, compare.class_stats(sim, self.cutoff), calibration, live_dir,
                        directory / "sim.csv", sim_totals=compare.totals(sim, sim_busy, slots), **record)

    def _predict(self, live_dir: Path, played: list[Job], policy: str, params: dict[str, str], shape: tuple[int, int],
                 repeat: int, calibration: Calibration, directory: Path, nominal: dict[int, Job]) -> pd.DataFrame:
        """The simulated jobs of this run (see :func:`predict`), stage by stage under ``stages``."""
        assert self.cutoff is not None
        seed, out = self.seed_of(repeat), directory / "sim.csv"
        memory, declared = self.memory_per_core, self._declared(policy)
        if self.job_model == "stages":
            return predict_stages(stage_play(live_dir, self.submissions), policy, params, *shape, seed, calibration,
                                  self.cutoff, out, nominal, memory_per_core=memory, declared=declared)
        return predict(played, policy, params, *shape, seed, calibration, self.cutoff, out, nominal=nominal,
                       memory_per_core=memory, declared=declared)

    @property
    def memory_per_core(self) -> float | None:
        """The executors' GB of memory per core, which the simulated nodes have (None: not given)."""
        return None if self.executor_memory_gb is None else self.executor_memory_gb / self.shape[1]

    def _declared(self, policy: str) -> bool:
        """Whether ``policy``'s tasks demand live what their jobs declare: on the live engine's
        executors of (cores, GB), not under Spark's own scheduler (a stand-in) nor on the node
        driver's NodeManagers (--preempt), which place by slots alone."""
        return stand_in(policy) is None and not self.preempts(policy)

    def preempts(self, policy: str) -> bool:
        """Whether `policy` runs with --preempt: given it, for the policies that preempt (a
        baseline such as fifo runs as it is, beside them)."""
        return self.preempt and policy in preempting_policies()

    def _simulated(self, policy: str) -> tuple[dict[str, str], tuple[int, int]]:
        """The simulated policy's parameters and shape (nodes, slots each). With --preempt they are
        the live node driver's: NodeManagers as nodes of N = executors / NodeManagers slots, and
        the policy's live defaults (Kairos: Q = 1, W = 5 s) under the given parameters."""
        if not self.preempts(policy):
            return self.params[policy], self.shape
        nodes = len(resolve(self.conf_dir).rm_client().nodes(states=["RUNNING"]))
        return live_params(policy, self.params[policy]), (nodes, max(1, self.shape[0] // nodes))

    def _played(self, live_dir: Path, directory: Path) -> list[Job]:
        """The jobs the simulator plays for this run: the trace's, or measured from the run (also
        written to ``sim.trace``); the first measured run sets the jobs' sizes and the cutoff."""
        if self.job_model is None:
            return self.jobs
        played = measured_jobs(live_dir, self.submissions, self.job_model)
        if self.job_model in STAGED_MODELS:   # the rich format keeps the stages
            write_jsonl(directory / "sim.jsonl", played)
        else:
            write_trace(directory / "sim.trace", played)
        if not self.jobs:
            self.jobs = played
            self.cutoff = compare.default_cutoff(played) if self.cutoff is None else self.cutoff
        return played

    def _offslot_played(self, policy: str) -> bool:
        """Whether the simulation of ``policy``'s run plays tasks off their slots at the run's
        measured share: for a policy run with --preempt whose nodes never hold more tasks than
        executors (``Preempts.admits_within``). Falcon's workers queue more tasks than they have
        executors, and only those holding one work live: its simulation keeps them all idle, as
        before (docs/sim-to-real.md)."""
        return self.preempts(policy) and preempts(policy).admits_within

    @staticmethod
    def _calibrate(live_dir: Path, nominal: dict[int, Job] | None, offslot: bool) -> Calibration:
        t0 = replay_t0(live_dir)
        jobs = pd.read_csv(live_dir / "jobs.csv")
        times = {int(j): (float(s), float(e)) for j, s, e in zip(jobs["job_id"], jobs["submit_s"], jobs["end_s"])}
        calibration = measure(live_dir, nominal, t0, times)
        return replace(calibration, offslot_share=offslot_share(live_dir)) if offslot else calibration

    def _write(self, result: Result, out: Path) -> None:
        atomic.write_text(out / "table.csv", compare.table(result.runs).to_csv(index=False))
        atomic.write_text(out / "spread.csv", compare.spread(result.runs).to_csv(index=False))
        atomic.write_text(out / "table.txt", result.text() + "\n")
        atomic.write_text(out / "results.json", json.dumps(jsonable(result.as_dict()), indent=1, sort_keys=True))
        pooled = {p: (pd.concat([live for live, _ in pairs]), pd.concat([sim for _, sim in pairs]))
                  for p, pairs in self._curves.items()}
        compare.cdf_plot(pooled, result.cutoff, out / "jct_cdf.png")
