"""How the testbed runs Java: the JDK, the module flags Hadoop needs on Java 17, heap sizes."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import click

# Hadoop's reflection into the JDK (Guice in the web apps, Kryo, the security utilities) needs
# these on Java 17 (platform-facts §11.2); unknown ones are ignored by older JVMs.
ADD_OPENS = (
    "-XX:+IgnoreUnrecognizedVMOptions",
    *(f"--add-opens=java.base/{pkg}=ALL-UNNAMED" for pkg in (
        "java.io", "java.lang", "java.lang.reflect", "java.math", "java.net", "java.nio",
        "java.text", "java.util", "java.util.concurrent", "java.util.zip",
        "sun.nio.ch", "sun.security.util", "sun.security.x509")),
)


def java_executable() -> Path:
    """`$JAVA_HOME/bin/java` or the `java` on PATH, with a clear error if neither exists."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "java").is_file():
        return Path(home) / "bin" / "java"
    found = shutil.which("java")
    if not found:
        raise click.ClickException("no Java found: install a JDK 17 or set JAVA_HOME")
    return Path(found)
