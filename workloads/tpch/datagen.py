"""TPC-H data at a chosen scale factor: Parquet files from `tpchgen-cli` (offline, seconds at SF 0.1).

`workloads.hdfsio.upload` copies a generated directory into HDFS for the cluster.

Generated directories are cached by scale factor and written to a temporary name first, so an
interrupted generation never leaves a directory that looks complete.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bridge.common.extras import install_hint

TABLES = ("customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier")
TIMEOUT_S = 3600.0


def tpchgen_binary() -> str:
    """`tpchgen-cli` from the virtualenv that runs us, else from PATH."""
    beside = Path(sys.executable).with_name("tpchgen-cli")
    found = str(beside) if beside.is_file() else shutil.which("tpchgen-cli")
    if found is None:
        raise FileNotFoundError(f"tpchgen-cli not found: {install_hint('tpch')}")
    return found


def dataset_name(scale_factor: float) -> str:
    """A directory name per scale factor, e.g. `sf0.01`."""
    return f"sf{scale_factor:g}"


def generate(scale_factor: float, root: Path) -> Path:
    """`root/sf<SF>/<table>.parquet` for the eight tables; reuses a complete earlier run."""
    if scale_factor <= 0:
        raise ValueError(f"scale factor must be positive, got {scale_factor}")
    target = root / dataset_name(scale_factor)
    if target.is_dir():
        return target
    root.mkdir(parents=True, exist_ok=True)
    temp = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=root))
    try:
        command = [tpchgen_binary(), "parquet", "--scale-factor", f"{scale_factor:g}",
                   "--output-dir", str(temp), "--num-threads", "2"]
        subprocess.run(command, check=True, capture_output=True, timeout=TIMEOUT_S)
        temp.rename(target)
    finally:
        shutil.rmtree(temp, ignore_errors=True)
    return target


def table_paths(data_dir: str) -> dict[str, str]:
    """Table name -> Parquet path under a local or `hdfs://` data directory."""
    return {table: f"{data_dir.rstrip('/')}/{table}.parquet" for table in TABLES}

