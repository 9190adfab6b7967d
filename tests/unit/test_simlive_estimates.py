"""The stages model tells the simulated policy what the live one was told: each replayed job's
stages one user job (one unit) with the estimate the run recorded in ``user-jobs.csv``."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

from bridge.apps.simlive import session
from bridge.apps.simlive.compare import CompareError
from bridge.apps.simlive.predict import simulated, split_params
from bridge.apps.simlive.session import Comparison
from bridge.apps.simlive.stages import LIVE_ESTIMATE, stage_play
from bridge.drivers.estimates import Estimates
from tests.unit.test_simlive import wordcount_workload, write_staged_run
from workloads.spec import Submission, WordCountJob

SUBS = [Submission(0, 0.0, "wc", WordCountJob("in", 1)), Submission(1, 1.0, "wc", WordCountJob("in", 1))]


def test_stages_share_their_replayed_jobs_unit_and_recorded_estimate(tmp_path: Path) -> None:
    live = write_staged_run(tmp_path)
    pd.DataFrame({"app": ["a", "a", "a"], "occurrence": ["schedbridge-job-0", "schedbridge-warm-up", "spark-job-9"],
                  "key": ["job:wc", "", ""], "unit": [0, 5, 9], "estimate_s": [30.0, 1.0, 1.0],
                  "source": ["file", "default", "default"]}).to_csv(live / "user-jobs.csv", index=False)
    play = stage_play(live, SUBS)
    assert [j.unit_id for j in play.jobs] == [0, 0, 0, 0, 4]
    assert [j.estimate for j in play.jobs] == [30.0] * 4 + [LIVE_ESTIMATE]
    assert {s.estimate for s in play.jobs[0].successors} == {30.0}


def test_a_run_without_a_record_tells_the_engines_default(tmp_path: Path) -> None:
    play = stage_play(write_staged_run(tmp_path), SUBS, estimate=2.0)
    assert {j.estimate for j in play.jobs} == {2.0}


def stock_log(folder: Path, jobs: dict[str, list[float]]) -> None:
    """A stock run's event log: per recurring job, one replayed job with tasks of these seconds."""
    events: list[dict[str, object]] = [{"Event": "SparkListenerLogStart", "Spark Version": "4.0.0"},
                                       {"Event": "SparkListenerApplicationStart", "App ID": "app-1", "Timestamp": 0}]
    for job, (name, seconds) in enumerate(jobs.items()):
        events.append({"Event": "SparkListenerJobStart", "Job ID": job, "Submission Time": 0, "Stage IDs": [job],
                       "Stage Infos": [{"Stage ID": job, "Stage Name": "count", "Number of Tasks": len(seconds)}],
                       "Properties": {"schedbridge.job": name, "spark.jobGroup.id": f"schedbridge-job-{job}"}})
        events += [{"Event": "SparkListenerTaskEnd", "Stage ID": job, "Stage Attempt ID": 0,
                    "Task End Reason": {"Reason": "Success"},
                    "Task Info": {"Task ID": 10 * job + i, "Index": i, "Launch Time": 1000,
                                  "Finish Time": 1000 + s * 1000, "Executor ID": "1", "Host": "h", "Failed": False,
                                  "Killed": False}}
                   for i, s in enumerate(seconds)]
        events.append({"Event": "SparkListenerJobEnd", "Job ID": job, "Completion Time": 9000,
                       "Job Result": {"Result": "JobSucceeded"}})
    folder.mkdir(parents=True)
    (folder / "app-1").write_text("".join(json.dumps(e, separators=(",", ":")) + "\n" for e in events))


def comparison_of(tmp_path: Path, policies: list[str]) -> Comparison:
    return Comparison.prepare(wordcount_workload(tmp_path), policies, 1, 2, None, None, {}, False, None)


def test_each_repeats_estimates_come_from_the_stand_ins_run_of_that_repeat(tmp_path: Path,
                                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    comparison = comparison_of(tmp_path, ["stock", "hawk"])
    comparison.use_estimates(None, "stock")
    out = tmp_path / "out"
    stock_log(out / "stock" / "repeat-2" / "live" / "eventlogs", {"wc": [2.0, 4.0], "query/q3": [0.5]})
    built = comparison._estimates_of(2, out)
    assert built == out / "stock" / "repeat-2" / "estimates.json"
    table = Estimates.load(built)
    assert (table["job:wc"].mean_s, table["job:query/q3"].mean_s) == (3.0, 0.5)
    commands: list[list[str]] = []
    monkeypatch.setattr(session.subprocess, "Popen",
                        lambda command, **kwargs: commands.append(command) or SimpleNamespace(wait=lambda: 0, pid=-1))
    for policy in ("stock", "hawk"):
        with pytest.raises(CompareError):
            comparison._live(policy, 5, out / policy / "repeat-2", 2)
    stock, hawk = (" ".join(c[c.index("replay"):]) for c in commands)
    assert "--estimates" not in stock and f"--estimates {built}" in hawk


@pytest.mark.parametrize("policies, file, source, message", [
    (["stock", "hawk"], "e.json", "stock", "not both"),
    (["stock", "hawk"], None, "hawk", "must be a compared stand-in"),
    (["hawk", "stock"], None, "stock", "list it first"),
    (["stock", "hawk"], None, "stock-fair", "must be a compared stand-in"),
])
def test_estimates_from_a_stand_in_is_checked_before_any_run(tmp_path: Path, policies: list[str], file: str | None,
                                                            source: str, message: str) -> None:
    with pytest.raises(CompareError, match=message):
        comparison_of(tmp_path, policies).use_estimates(None if file is None else tmp_path / file, source)


def test_a_stand_ins_run_without_recurring_jobs_is_said(tmp_path: Path) -> None:
    comparison = comparison_of(tmp_path, ["stock", "hawk"])
    comparison.use_estimates(None, "stock")
    (tmp_path / "out" / "stock" / "repeat-1" / "live" / "eventlogs").mkdir(parents=True)
    with pytest.raises(CompareError, match="estimates from stock's repeat 1: .*no Spark event log"):
        comparison._estimates_of(1, tmp_path / "out")


def test_learn_goes_to_every_live_policy_and_never_to_the_simulator() -> None:
    split = split_params(["stock", "hawk", "fifo"], {"learn": "true", "cutoff": "5"})
    assert split == {"stock": {}, "hawk": {"learn": "true", "cutoff": "5"}, "fifo": {"learn": "true"}}
    _, hawk = simulated("hawk", split["hawk"], 2, 1, 1)
    assert hawk.cfg.cutoff == 5.0
