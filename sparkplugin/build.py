"""Build the JVM plugin jar from source with javac against pyspark's bundled jars.

Deterministic (sorted entries, fixed timestamps) and incremental: the jar is rebuilt only when a
source, the JDK or pyspark's jar set changes. Run by the project's set-up (``make setup``), or by
hand: ``python sparkplugin/build.py``.
"""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SOURCES = HERE / "src" / "main"
BUILD = HERE / "build"
JAR = BUILD / "schedbridge-sparkplugin.jar"
STAMP = BUILD / "schedbridge-sparkplugin.sha256"
FIXED_TIME = (2026, 1, 1, 0, 0, 0)
MANIFEST = "Manifest-Version: 1.0\r\nCreated-By: schedbridge sparkplugin/build.py\r\n\r\n"


def pyspark_jars() -> Path:
    """The ``jars/`` directory of the installed pyspark (Spark's own classpath)."""
    import pyspark

    jars = Path(pyspark.__file__).resolve().parent / "jars"
    if not jars.is_dir():
        raise SystemExit(f"pyspark at {jars.parent} has no jars/ directory; reinstall pyspark")
    return jars


def _inputs() -> list[Path]:
    return sorted(p for p in SOURCES.rglob("*") if p.is_file())


def fingerprint(jars: Path) -> str:
    """Hash of the sources, the javac version and pyspark's jar names: what the jar depends on."""
    h = hashlib.sha256()
    for p in _inputs():
        h.update(str(p.relative_to(HERE)).encode() + b"\0" + p.read_bytes() + b"\0")
    javac = subprocess.run(["javac", "-version"], capture_output=True, text=True, check=True, timeout=60)
    h.update((javac.stdout + javac.stderr).encode())
    h.update("\n".join(sorted(j.name for j in jars.glob("*.jar"))).encode())
    return h.hexdigest()


def compile_to(classes: Path, jars: Path) -> None:
    """javac every source into ``classes``; warnings are errors."""
    java = [str(p) for p in _inputs() if p.suffix == ".java"]
    cmd = ["javac", "--release", "17", "-encoding", "UTF-8", "-Xlint:all,-classfile,-serial,-processing,-path",
           "-Werror", "-cp", str(jars / "*"), "-d", str(classes), *java]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if result.returncode != 0:
        raise SystemExit(f"javac failed:\n{result.stdout}{result.stderr}")


def write_jar(classes: Path, resources: Path, out: Path) -> None:
    """A jar with sorted entries and fixed timestamps, so equal inputs give equal bytes."""
    files = {p.relative_to(classes).as_posix(): p for p in classes.rglob("*") if p.is_file()}
    files |= {p.relative_to(resources).as_posix(): p for p in resources.rglob("*") if p.is_file()}
    tmp = out.with_suffix(".tmp")
    with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as jar:
        jar.writestr(zipfile.ZipInfo("META-INF/MANIFEST.MF", FIXED_TIME), MANIFEST)
        for name in sorted(files):
            info = zipfile.ZipInfo(name, FIXED_TIME)
            info.compress_type = zipfile.ZIP_DEFLATED
            jar.writestr(info, files[name].read_bytes())
    tmp.replace(out)


def build(force: bool = False) -> Path:
    """Builds the jar if its inputs changed (or ``force``); returns its path."""
    jars = pyspark_jars()
    digest = fingerprint(jars)
    if not force and JAR.is_file() and STAMP.is_file() and STAMP.read_text().strip() == digest:
        return JAR
    if shutil.which("javac") is None:
        raise SystemExit("javac not found: install a JDK 17 to build the Spark plugin")
    BUILD.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=BUILD) as tmp:
        classes = Path(tmp)
        compile_to(classes, jars)
        write_jar(classes, SOURCES / "resources", JAR)
    STAMP.write_text(digest + "\n")
    return JAR


if __name__ == "__main__":
    print(build(force="--force" in sys.argv[1:]))
