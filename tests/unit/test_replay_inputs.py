"""Preparing a workload's inputs: generated once locally, uploaded atomically with the block size."""
from __future__ import annotations

import time
from pathlib import Path

import pytest

from bridge.replay import inputs as inputs_module
from bridge.replay.inputs import prepare_inputs
from workloads import hdfsio
from workloads.spec import TpchInput, WordCountInput
from workloads.tasksjob import hold


class FakeHdfs:
    """The WebHDFS calls `hdfsio.upload` makes, on a dict of paths."""

    def __init__(self) -> None:
        self.files: dict[str, tuple[str, int | None]] = {}
        self.calls: list[str] = []

    def status(self, path: str, strict: bool = True):
        return {"type": "FILE"} if path in self.files else None

    def makedirs(self, path: str) -> None:
        self.calls.append(f"makedirs {path}")

    def upload(self, path: str, local: str, blocksize: int | None = None) -> str:
        self.files[path] = (local, blocksize)
        return path

    def rename(self, src: str, dst: str) -> None:
        self.files[dst] = self.files.pop(src)

    def delete(self, path: str, recursive: bool = False) -> bool:
        return self.files.pop(path, None) is not None


@pytest.fixture
def fake_hdfs(monkeypatch: pytest.MonkeyPatch) -> FakeHdfs:
    fake = FakeHdfs()
    monkeypatch.setattr(hdfsio, "hdfs_client", lambda url: fake)
    return fake


def test_upload_goes_through_a_temporary_name(fake_hdfs: FakeHdfs, tmp_path: Path) -> None:
    local = tmp_path / "in.txt"
    local.write_text("x")
    assert hdfsio.upload(local, "http://nn", "/a/b.txt", block_size=1 << 20) == "/a/b.txt"
    assert fake_hdfs.files == {"/a/b.txt": (str(local), 1 << 20)}
    assert fake_hdfs.calls == ["makedirs /a"]


def test_existing_target_is_kept(fake_hdfs: FakeHdfs, tmp_path: Path) -> None:
    fake_hdfs.files["/a/b.txt"] = ("old", None)
    hdfsio.upload(tmp_path, "http://nn", "/a/b.txt")
    assert fake_hdfs.files == {"/a/b.txt": ("old", None)}


def test_prepare_inputs_generates_once_and_names_by_content(fake_hdfs: FakeHdfs, tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    generated: list[float] = []
    monkeypatch.setattr(inputs_module, "generate",
                        lambda sf, root: generated.append(sf) or root / f"sf{sf:g}")
    specs = (WordCountInput("wc", size_mb=0.01, block_mb=2), TpchInput("db", 0.5))
    paths = prepare_inputs(specs, "http://nn", "hdfs://nn:9000/", local_root=tmp_path)
    assert paths == {"wc": "hdfs://nn:9000/schedbridge/inputs/wordcount/block2mb/wc-0.01mb-seed0.txt",
                     "db": "hdfs://nn:9000/schedbridge/inputs/tpch/sf0.5"}
    local, block = fake_hdfs.files["/schedbridge/inputs/wordcount/block2mb/wc-0.01mb-seed0.txt"]
    assert Path(local).stat().st_size > 0 and block == 2 * 1024 * 1024
    assert generated == [0.5]


@pytest.mark.parametrize("mode", ["sleep", "spin"])
def test_trace_tasks_hold_for_their_duration(mode: str) -> None:
    start = time.monotonic()
    hold(0.05, mode)
    assert 0.05 <= time.monotonic() - start < 0.5
