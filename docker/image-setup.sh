#!/bin/sh
# Set-up steps the image's two stages share; docker/Dockerfile copies this script into both.
#   image-setup.sh apt PACKAGE...   install Debian packages (from $APT_MIRROR when set), lists dropped
#   image-setup.sh trust FILE       add the PEM certificates in FILE (if it exists) to the system's
#                                   and Java's trust stores: a TLS-intercepting proxy's authority
#   image-setup.sh maven-mirror     route Maven through $MAVEN_MIRROR_URL when set
# $APT_MIRROR and $MAVEN_MIRROR_URL are the Dockerfile's build arguments (docker/README.md).
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

command=$1
shift
case $command in
  apt) apt_install "$@" ;;
  trust) trust "$@" ;;
  maven-mirror) maven_mirror ;;
  *) echo "image-setup.sh: unknown step '$command' (apt, trust, maven-mirror)" >&2; exit 2 ;;
esac
