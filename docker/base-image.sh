#!/bin/sh
# Build a local stand-in for debian:bookworm-slim where Docker Hub cannot be reached: a minimal
# Debian bookworm root file system from the Debian archive (debootstrap, as root) imported as an
# image. Then build with `--build-arg BASE_IMAGE=TAG` (SCHEDBRIDGE_BASE_IMAGE=TAG for compose).
# Idempotent: nothing to do when TAG already exists.
# Usage: sh docker/base-image.sh [TAG]   (default schedbridge-base:bookworm)
#   DEBIAN_MIRROR  the archive to bootstrap from (default http://deb.debian.org/debian)
#   DOCKER         the docker client to use (default docker)
set -eu
tag=${1:-schedbridge-base:bookworm}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
docker=${DOCKER:-docker}
if "$docker" image inspect "$tag" >/dev/null 2>&1; then exit 0; fi
command -v debootstrap >/dev/null || { echo "base-image: debootstrap is needed (apt-get install debootstrap)" >&2; exit 1; }
work=$(mktemp -d)
cleanup() {
  # debootstrap may leave /proc (and /sys) mounted in the root it made: unmount before removing.
  for dir in proc sys; do
    if mountpoint -q "$work/rootfs/$dir"; then umount "$work/rootfs/$dir"; fi
  done
  rm -rf "$work"
}
trap cleanup EXIT
debootstrap --variant=minbase bookworm "$work/rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
  || { tail -20 "$work/debootstrap.log" >&2; echo "base-image: debootstrap from $mirror failed" >&2; exit 1; }
# The suites debian:bookworm-slim lists too, so images built on it get the same updates.
cat > "$work/rootfs/etc/apt/sources.list" <<LIST
deb $mirror bookworm main
deb $mirror bookworm-updates main
deb ${mirror%/debian}/debian-security bookworm-security main
LIST
rm -rf "$work/rootfs/var/cache/apt/archives/"*.deb "$work/rootfs/var/lib/apt/lists/"*
tar -C "$work/rootfs" --exclude=./proc/* --exclude=./sys/* -c . | "$docker" import --change 'CMD ["bash"]' - "$tag" >/dev/null
echo "$tag"
