#!/bin/sh
# Set-up steps of the image's two stages; docker/Dockerfile copies this script into both.
#   image-setup.sh apt PACKAGE...   install Debian packages (from $APT_MIRROR when set), lists dropped
#   image-setup.sh trust FILE       add the PEM certificates in FILE (if it exists) to the system's
#                                   and Java's trust stores: a TLS-intercepting proxy's authority
#   image-setup.sh maven-mirror     route Maven through $MAVEN_MIRROR_URL when set
#   image-setup.sh python-deps VENV PIP EXTRAS
#                                   the virtual environment VENV with pip==PIP and the dependencies
#                                   of ./pyproject.toml with EXTRAS (comma-separated; the project's
#                                   references to its own extras followed), pinned by
#                                   ./constraints.txt; the project itself is not installed. The
#                                   Dockerfile passes the Makefile's pip version and extras
#                                   (tests/unit/test_docker_compose.py checks): a warm-up, so that
#                                   `make setup` later finds every dependency in place
# $APT_MIRROR and $MAVEN_MIRROR_URL are the Dockerfile's build arguments (docker/README.md);
# pip reads $PIP_INDEX_URL itself.
set -eu

apt_install() {
  if [ -n "${APT_MIRROR:-}" ]; then
    # Both spellings of apt's sources: the slim image's deb822 file, debootstrap's sources.list.
    for list in /etc/apt/sources.list /etc/apt/sources.list.d/debian.sources; do
      if [ -f "$list" ]; then sed -i "s#http://deb.debian.org/debian#${APT_MIRROR%/}#" "$list"; fi
    done
  fi
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@"
  rm -rf /var/lib/apt/lists/*
}

trust() {
  [ -s "$1" ] || return 0
  # update-ca-certificates takes one certificate per file; its Java hook fills Java's cacerts.
  awk '/-----BEGIN CERTIFICATE-----/ { n++ } n { print > sprintf("/usr/local/share/ca-certificates/build-extra-%03d.crt", n) }' "$1"
  update-ca-certificates
}

maven_mirror() {
  [ -n "${MAVEN_MIRROR_URL:-}" ] || return 0
  cat > /etc/maven/settings.xml <<XML
<settings><mirrors><mirror>
  <id>build-mirror</id><mirrorOf>*</mirrorOf><url>${MAVEN_MIRROR_URL}</url>
</mirror></mirrors></settings>
XML
}

python_deps() {
  venv=$1 pip_version=$2 extras=$3
  [ -x "$venv/bin/python" ] || python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --upgrade "pip==$pip_version"
  # pip's own copy of `packaging` parses the requirements (markers and all).
  "$venv/bin/python" - "$extras" > /tmp/requirements.txt <<'PY'
import sys
import tomllib

from pip._vendor.packaging.requirements import Requirement
from pip._vendor.packaging.utils import canonicalize_name

project = tomllib.load(open("pyproject.toml", "rb"))["project"]
optional = {canonicalize_name(name): reqs for name, reqs in project.get("optional-dependencies", {}).items()}
wanted, seen, requirements = [canonicalize_name(e) for e in sys.argv[1].split(",") if e], set(), []
requirements += project.get("dependencies", [])
while wanted:
    extra = wanted.pop()
    if extra in seen:
        continue
    seen.add(extra)
    if extra not in optional:
        sys.exit(f"image-setup python-deps: pyproject.toml has no extra {extra!r}")
    for text in optional[extra]:
        requirement = Requirement(text)
        if canonicalize_name(requirement.name) == canonicalize_name(project["name"]):
            wanted += [canonicalize_name(e) for e in requirement.extras]  # schedbridge[spark,tpch]
        else:
            requirements.append(text)
print("\n".join(requirements))
PY
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check -c constraints.txt -r /tmp/requirements.txt
  rm /tmp/requirements.txt
}

command=$1
shift
case $command in
  apt) apt_install "$@" ;;
  trust) trust "$@" ;;
  maven-mirror) maven_mirror ;;
  python-deps) python_deps "$@" ;;
  *) echo "image-setup.sh: unknown step '$command' (apt, trust, maven-mirror, python-deps)" >&2; exit 2 ;;
esac
