"""`schedbridge demo`: the main job on the local testbed, end to end.

Brings the testbed up, runs a WordCount on YARN over an HDFS input, checks the counts against
a count made in Python, prints the result, and stops the testbed if it started it.
"""
from __future__ import annotations

import subprocess
import tempfile
import time
from collections import Counter
from pathlib import Path

import click

from bridge.testbed.cluster import Testbed, TestbedError
from bridge.testbed.layout import default_layout
from bridge.testbed.spark import spark_env, spark_submit
from workloads.hdfsio import upload
from workloads.wordcount import submit as wordcount_submit
from workloads.wordcount.inputgen import write_input
from yarnclient.hdfs import hdfs_client


def _say(message: str) -> None:
    click.echo(f"demo: {message}", err=True)


def _read_counts(bed: Testbed, path: str) -> Counter[str]:
    hdfs = hdfs_client(bed.layout.webhdfs_url, user=bed.layout.user)
    counts: Counter[str] = Counter()
    for name in sorted(hdfs.list(path)):
        if name.startswith("part-"):
            with hdfs.read(f"{path}/{name}", encoding="utf-8") as reader:
                for line in reader.read().splitlines():
                    word, count = line.strip("()").rsplit(", ", 1)
                    counts[word.strip("'")] += int(count)
    return counts


def run_wordcount(bed: Testbed, size_mb: int, workdir: Path) -> None:
    local = write_input(workdir / "input.txt", size_mb * 1024 * 1024, seed=42)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    hdfs_in = upload(local, bed.layout.webhdfs_url, f"/schedbridge/demo/input-{size_mb}mb.txt",
                     block_size=4 * 1024 * 1024)
    hdfs_out = f"/schedbridge/demo/wordcount-{stamp}"
    fs = bed.layout.fs_default
    _say(f"WordCount on YARN over {fs}{hdfs_in} ({size_mb} MB, 4 MB blocks)")
    started = time.monotonic()
    result = subprocess.run(
        [str(spark_submit()), "--master", "yarn", "--deploy-mode", "client", "--num-executors", "2",
         str(Path(wordcount_submit.__file__)), f"{fs}{hdfs_in}", f"{fs}{hdfs_out}"],
        env=spark_env(bed.layout), capture_output=True, text=True, timeout=900)
    elapsed = time.monotonic() - started
    if result.returncode != 0:
        raise click.ClickException("spark-submit failed; the end of its output:\n"
                                   + result.stderr[-3000:])
    counts = _read_counts(bed, hdfs_out)
    expected = Counter(local.read_text().split())
    verdict = "equal to" if counts == expected else "DIFFERENT FROM"
    click.echo(f"WordCount on YARN: {sum(counts.values())} words, {len(counts)} distinct, "
               f"{elapsed:.1f} s; counts {verdict} a Python count of the same input")
    for word, count in counts.most_common(5):
        click.echo(f"  {word:<12} {count}")
    click.echo(f"output: {fs}{hdfs_out}")
    if counts != expected:
        raise click.ClickException("WordCount gave wrong counts")


@click.command()
@click.option("--size-mb", default=16, show_default=True, help="WordCount input size.")
@click.option("--keep-testbed", is_flag=True, help="Leave the testbed running afterwards.")
def demo(size_mb: int, keep_testbed: bool) -> None:
    """Start the local testbed and run the main job on it."""
    bed = Testbed(default_layout())
    was_running = all(bed.running().values())
    try:
        bed.up(progress=_say)
        with tempfile.TemporaryDirectory(prefix="schedbridge-demo-") as workdir:
            run_wordcount(bed, size_mb, Path(workdir))
    except TestbedError as exc:
        raise click.ClickException(str(exc)) from exc
    finally:
        if not (was_running or keep_testbed):
            bed.down(progress=_say)
