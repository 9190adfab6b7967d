"""The stages model tells the simulated policy what the live one was told: each replayed job's
stages one user job (one unit) with the estimate the run recorded in ``user-jobs.csv``."""
from __future__ import annotations

from pathlib import Path

import pandas as pd

from bridge.apps.simlive.stages import LIVE_ESTIMATE, stage_play
from tests.unit.test_simlive import write_staged_run
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
