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
  test that uses the local testbed's ports or a Spark JVM in the test process runs in one worker,
  in file order (one testbed, one demo run, one PySpark gateway); the compose cluster, which has
  its own Docker network and free host ports, runs in the other worker beside the unit tests, so
  its minutes of image and container start-up overlap with the testbed's Spark applications.
"""
from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

INTEGRATION_TIMEOUT_S = 900.0
# Integration modules that start nothing on the local testbed's ports and no Spark JVM in the test
# process: they may run beside the testbed lane.
BESIDE_THE_TESTBED = {"test_compose_cluster.py": "compose", "test_compose_services.py": "compose"}
_TRUE = {"1", "true", "yes", "on"}


def strict_skips() -> bool:
    """Whether a skip fails the run (CI)."""
    return any(os.environ.get(name, "").strip().lower() in _TRUE for name in ("CI", "SCHEDBRIDGE_STRICT_SKIPS"))


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups to name the items
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if not item.get_closest_marker("integration"):
            continue
        if not item.get_closest_marker("timeout"):
            item.add_marker(pytest.mark.timeout(INTEGRATION_TIMEOUT_S))
        item.add_marker(pytest.mark.xdist_group(BESIDE_THE_TESTBED.get(item.path.name, "testbed")))


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
