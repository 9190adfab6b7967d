"""`schedbridge agent` refuses bad setups with a clear message, not a traceback."""
from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from bridge.agent.cli import TOKEN_ENV, agent
from tests.unit.test_agent_cgroups import v1_root


def run(tmp_path: Path, *args: str, token: str | None = "s3cret-token-0123456789"):
    env = {TOKEN_ENV: token} if token else {TOKEN_ENV: ""}
    base = ["--nm-url", "http://127.0.0.1:9", "--state-file", str(tmp_path / "s.json"),
            "--cgroup-root", str(v1_root(tmp_path)), "--proc-root", str(tmp_path)]
    return CliRunner().invoke(agent, base + list(args), env=env)


def test_missing_token_is_a_usage_error(tmp_path: Path) -> None:
    result = run(tmp_path, token=None)
    assert result.exit_code == 2 and "no shared token" in result.output


def test_wildcard_listen_address_is_refused(tmp_path: Path) -> None:
    result = run(tmp_path, "--host", "0.0.0.0")
    assert result.exit_code == 1 and "refusing to listen on wildcard address" in result.output


def test_missing_cgroup_controller_is_named(tmp_path: Path) -> None:
    result = CliRunner().invoke(agent, ["--nm-url", "http://127.0.0.1:9", "--cgroup-root", str(tmp_path / "none"),
                                        "--state-file", str(tmp_path / "s.json")],
                                env={TOKEN_ENV: "s3cret-token-0123456789"})
    assert result.exit_code == 1 and "no usable cgroup CPU controller" in result.output
