"""Suite-wide rules: a time limit on every test, no silent skips in CI, and which tests share a
process when the suite runs in parallel.

- **Time limits** (pytest-timeout, signal method: a hung test fails alone, with its name, and the
  run goes on). Unit tests get `timeout` from pyproject.toml; an integration test, whose limit
  also covers the setup of the module and session fixtures it is the first to use (a testbed
  start, a shared Spark run), gets INTEGRATION_TIMEOUT_S unless it sets its own
  `@pytest.mark.timeout`.
- **Strict skips.** With `CI` set (`.ci/run` sets it; most CI systems do) or
  `SCHEDBRIDGE_STRICT_SKIPS=1`, a skipped test is reported as failed with its reason: CI must
  exercise every real component. Elsewhere a skip stays a skip and `make test` lists the reasons
  (`-rs`), so a user without root, Docker or cgroups can still run the suite and read why.
- **Two lanes** (pytest-xdist, `-n 2 --dist loadgroup`, as `make test` runs it): every integration
  test that uses the local testbed (its `testbed` fixture, directly or through another) runs in
  one worker, in file order: one testbed, one demo run. Every other integration test (the compose
  cluster with its own Docker network and free host ports, the local-master Spark tests, the
  agent on this host's cgroups, the core install) runs in the other worker, in file order too
  (one PySpark gateway there, started by the first module that needs the plugin's jar in it), so
  the compose cluster's minutes of start-up overlap the testbed's Spark applications. Unit tests
  go to whichever worker is free.
"""
from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

INTEGRATION_TIMEOUT_S = 900.0
TESTBED_LANE, OTHER_LANE = "testbed", "beside-the-testbed"
_TRUE = {"1", "true", "yes", "on"}


def strict_skips() -> bool:
    """Whether a skip fails the run (CI)."""
    return any(os.environ.get(name, "").strip().lower() in _TRUE for name in ("CI", "SCHEDBRIDGE_STRICT_SKIPS"))


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups to name the items
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if "integration" not in item.path.parts:
            continue
        if not item.get_closest_marker("integration"):  # a local-master Spark test is one too (-m integration)
            item.add_marker(pytest.mark.integration)
        if not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(INTEGRATION_TIMEOUT_S))
        item.add_marker(pytest.mark.xdist_group(TESTBED_LANE if "testbed" in item.fixturenames else OTHER_LANE))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    outcome = yield
    report: pytest.TestReport = outcome.get_result()
    if report.skipped and strict_skips() and not hasattr(report, "wasxfail"):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
        report.outcome = "failed"
        report.longrepr = f"skipped in strict mode (CI / SCHEDBRIDGE_STRICT_SKIPS): {reason}"


def pytest_report_header() -> str:
    return f"skips: {'fail the run (strict: CI)' if strict_skips() else 'listed with their reasons (-rs)'}"
