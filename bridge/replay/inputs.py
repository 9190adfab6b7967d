"""Making a workload's inputs exist on the cluster before the first job is submitted.

Inputs are generated once into the local cache and uploaded under `/schedbridge/inputs/`,
named by what determines their content, so later replays (and other workloads) reuse them.
"""
from __future__ import annotations

from pathlib import Path

from bridge.common.paths import cache_dir
from workloads import hdfsio
from workloads.spec import Input, TpchInput, WordCountInput
from workloads.tpch.datagen import dataset_name, generate
from workloads.wordcount.inputgen import write_input

HDFS_ROOT = "/schedbridge/inputs"
MB = 1024 * 1024


def local_wordcount(spec: WordCountInput, local_root: Path | None = None) -> Path:
    """The local copy of a WordCount input (generated if missing): what is uploaded, and what its
    reference count reads."""
    local = (local_root or default_local_root()) / "wordcount" / f"wc-{spec.size_mb:g}mb-seed{spec.seed}.txt"
    if not local.is_file():
        write_input(local, int(spec.size_mb * MB), spec.seed)
    return local


def local_copy(spec: Input, local_root: Path | None = None) -> Path:
    """The local copy of any input (generated if missing)."""
    if isinstance(spec, WordCountInput):
        return local_wordcount(spec, local_root)
    return local_tpch(spec.scale_factor, local_root)


def _wordcount(spec: WordCountInput, local_root: Path, webhdfs_url: str) -> str:
    local = local_wordcount(spec, local_root)
    hdfs_path = f"{HDFS_ROOT}/wordcount/block{spec.block_mb}mb/{local.name}"
    return hdfsio.upload(local, webhdfs_url, hdfs_path, block_size=spec.block_mb * MB)


def default_local_root() -> Path:
    """Where inputs are generated before upload, and cached for later runs."""
    return cache_dir() / "workloads"


def local_tpch(scale_factor: float, local_root: Path | None = None) -> Path:
    """The local copy of a TPC-H input (generated if missing): what is uploaded, and what the
    DuckDB reference answers read."""
    return generate(scale_factor, (local_root or default_local_root()) / "tpch")


def _tpch(spec: TpchInput, local_root: Path, webhdfs_url: str) -> str:
    local = local_tpch(spec.scale_factor, local_root)
    return hdfsio.upload(local, webhdfs_url, f"{HDFS_ROOT}/tpch/{dataset_name(spec.scale_factor)}")


def prepare_inputs(inputs: tuple[Input, ...], webhdfs_url: str, fs_default: str,
                   local_root: Path | None = None) -> dict[str, str]:
    """Input name -> its full `hdfs://` URI, generating and uploading what is missing."""
    root = local_root or default_local_root()
    paths = {}
    for spec in inputs:
        if isinstance(spec, WordCountInput):
            path = _wordcount(spec, root, webhdfs_url)
        else:
            path = _tpch(spec, root, webhdfs_url)
        paths[spec.name] = fs_default.rstrip("/") + path
    return paths
