"""The README's quick start, run as written: its commands work in an empty directory with the
installed `schedbridge` on PATH, no cluster and no root, and write what the README says.

Its first block (the install into a virtual environment) is what `tests/integration/test_packaging.py`
does for real from a copy of the tree; here it is held to that command. Every later block is run
line by line, each under bash in a temporary directory where the paths of the clone the commands
read (the committed event log) are linked, with this tree first on PYTHONPATH.
"""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
HEADING = "## Quick start"
FENCE = re.compile(r"^```\n(?P<body>.*?)^```$", re.MULTILINE | re.DOTALL)


def quick_start_blocks(readme: Path = README) -> list[str]:
    """The fenced blocks of the quick-start section, in order."""
    text = readme.read_text()
    start = text.index(HEADING)
    end = text.find("\n## ", start + len(HEADING))
    return [m["body"] for m in FENCE.finditer(text[start:end if end >= 0 else len(text)])]


def commands(block: str) -> list[str]:
    """The block's command lines, a trailing backslash joining a line to the next."""
    return [line for line in block.replace("\\\n", " ").splitlines() if line.strip()]


def outputs(command: str) -> list[str]:
    """What a command names with --out."""
    words = shlex.split(command)
    return [words[i + 1] for i, word in enumerate(words[:-1]) if word == "--out"]


def test_the_quick_start_is_in_the_first_60_lines_and_installs_the_core_from_the_clone() -> None:
    install, *runs = quick_start_blocks()
    assert README.read_text().splitlines().index(HEADING.rstrip() + ": no cluster, no root") < 60
    assert runs and all(line.startswith("schedbridge ") for block in runs for line in commands(block))
    assert commands(install) == ["python3 -m venv venv && . venv/bin/activate", "pip install -c constraints.txt ."]
    assert (ROOT / "constraints.txt").is_file() and (ROOT / "pyproject.toml").is_file()


@pytest.mark.timeout(180)  # about 13 s on a quiet 2-core machine; a loaded one (make test's lanes) takes longer
def test_the_quick_start_runs_as_written(tmp_path: Path) -> None:
    bin_dir = Path(sys.executable).parent
    assert (bin_dir / "schedbridge").is_file(), f"no schedbridge beside {sys.executable}: install the project"
    env = {**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    lines = [line for block in quick_start_blocks()[1:] for line in commands(block)]
    for word in {w for line in lines for w in shlex.split(line) if "/" in w and (ROOT / w).exists()}:
        (tmp_path / word).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / word).symlink_to(ROOT / word)
    for line in lines:
        done = subprocess.run(["bash", "-euo", "pipefail", "-c", line], cwd=tmp_path, env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, f"{line}\n{done.stderr[-3000:]}"
        for out in outputs(line):
            assert (tmp_path / out).exists(), f"{line}: wrote no {out}"
    report = (tmp_path / "runs" / "report" / "report.txt").read_text()
    assert "sparrow" in report and "eagle" in report
    ranking = (tmp_path / "runs" / "rank" / "ranking.csv").read_text()
    assert all(policy in ranking for policy in ("fifo", "sparrow", "hawk", "eagle"))
    assert (tmp_path / "runs" / "rank" / "jct_cdf.png").stat().st_size > 0
