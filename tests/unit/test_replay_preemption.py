"""`replay --preempt` refuses what it cannot do before anything starts, naming the reason."""
from __future__ import annotations

from pathlib import Path

import pytest

from bridge.replay import preemption
from bridge.target.config import ClusterTarget
from bridge.testbed.layout import default_layout
from bridge.testbed.local_agents import LocalTestbedAgents


def target(rm_url: str | None = None) -> ClusterTarget:
    """The local testbed's target (agents of its own), or another cluster's at ``rm_url``."""
    layout = default_layout()
    own = None if rm_url else (lambda label, min_share: LocalTestbedAgents(layout, label, min_share))
    return ClusterTarget(Path("/nonexistent"), rm_url or layout.rm_url, layout.webhdfs_url,
                         layout.fs_default, {}, own_agents=own)


def test_a_policy_that_does_not_preempt_is_refused() -> None:
    with pytest.raises(ValueError, match=r"'sparrow' does not preempt .*preempting policies: .*bigc.*falcon.*kairos"):
        preemption.check("sparrow", "shared", target(), {})


def test_per_job_mode_is_refused() -> None:
    with pytest.raises(ValueError, match="--mode shared"):
        preemption.check("kairos", "per-job", target(), {})


def test_a_cluster_other_than_the_local_testbed_needs_an_agents_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SCHEDBRIDGE_AGENTS", raising=False)
    with pytest.raises(ValueError, match=r"http://rm.example:8088 needs its node agents.*--agents FILE"):
        preemption.check("kairos", "shared", target("http://rm.example:8088"), {})


def test_bad_policy_parameters_are_refused_by_name() -> None:
    with pytest.raises(ValueError, match="no_such"):
        preemption.check("kairos", "shared", target(), {"spark.schedbridge.policy.no_such": "1"})
    with pytest.raises(ValueError, match="node_cores"):
        preemption.check("kairos", "shared", target(), {"spark.schedbridge.policy.node_cores": "0"})
    with pytest.raises(ValueError, match="node_cores must be a whole number of at least 1, got 'two'"):
        preemption.check("kairos", "shared", target(), {"spark.schedbridge.policy.node_cores": "two"})


def test_settings_are_the_live_defaults_overridden_by_spark_conf() -> None:
    conf = {"spark.schedbridge.policy.w": "2", "spark.executor.instances": "4"}
    assert preemption.policy_settings("kairos", conf) == {"q": "1", "w": "2"}
    assert preemption.policy_settings("bigc", conf) == {"w": "2"}  # Big-C has no live defaults


@pytest.mark.parametrize("policy", ["bigc", "falcon", "natjam"])
def test_every_preempting_policy_passes_the_checks(policy: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0)
    preemption.check(policy, "shared", target(), {"spark.schedbridge.policy.node_cores": "2"})


def test_not_root_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    with pytest.raises(PermissionError, match="run as root"):
        preemption.check("kairos", "shared", target(), {})


def test_the_agents_a_run_starts_keep_the_share_given_and_an_agents_file_refuses_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("os.geteuid", lambda: 0)
    agents = preemption.check("kairos", "shared", target(), {}, min_share=0.02)
    assert isinstance(agents, LocalTestbedAgents) and agents.min_share == 0.02
    (tmp_path / "agent.token").write_text("t" * 32)
    (tmp_path / "agents.toml").write_text('token_file = "agent.token"\nurl = "http://{host}:8478"\n')
    with pytest.raises(ValueError, match="--min-share is for node agents a run starts itself"):
        preemption.check("kairos", "shared", target(), {}, tmp_path / "agents.toml", min_share=0.02)
