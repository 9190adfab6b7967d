"""The simulator benchmark's fixed traces (figures are reported, never asserted)."""
from bridge.sim.bench import google_like, run_one, trace_settings, yahoo_like


def test_google_trace_and_settings():
    jobs = google_like(40)
    assert len(jobs) == 40 and [j.job_id for j in jobs] == list(range(40))
    assert all(j.submit >= 0 and j.n_tasks >= 1 for j in jobs)
    assert google_like(40) == jobs                                  # seeded
    assert trace_settings("google", "hawk") == {"cutoff": 1129.532, "big_partition": 83}
    assert trace_settings("google", "kairos") == {"w": 10000.0}
    assert trace_settings("google", "fifo") == {}
    assert trace_settings("yahoo", "hawk") == {}


def test_run_one_reports_the_figures():
    row = run_one("hawk", yahoo_like(30, 20), 20, settings={"cutoff": 50.0})
    assert row["unfinished"] == 0 and row["events"] > 0 and row["peak_rss_mb"] > 0
