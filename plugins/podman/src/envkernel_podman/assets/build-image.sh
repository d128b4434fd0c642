#!/usr/bin/env bash
# Build envkernel's sandbox image offline: debootstrap a minimal Debian with python3 and import it
# into Podman's storage. No image registry is needed, only a Debian mirror.
#
#   build-image.sh [--image NAME] [--mirror URL] [--suite SUITE] [--force]
#
# The image holds a Debian minbase with python3 (the executor is standard-library only),
# coreutils' `timeout` (the hard lifetime), bash, git and sqlite3 (a workspace environment's shell), a user envk (1000:1000) and the mount points /work,
# /envk and /opt/envk. The executor itself is not in the image: the runner bind-mounts the
# installed one read-only, so the image never goes stale when envkernel is upgraded.
# A second run with the image present exits at once (Podman's storage is the cache).
set -euo pipefail

IMAGE="${ENVKERNEL_IMAGE:-localhost/envkernel-sandbox:latest}"
SUITE="bookworm"
MIRROR=""
FORCE=0
IMAGE_VERSION=2  # 2: git and sqlite3 for workspace environments' shell

while [ $# -gt 0 ]; do
  case "$1" in
    --image) IMAGE="$2"; shift 2 ;;
    --mirror) MIRROR="$2"; shift 2 ;;
    --suite) SUITE="$2"; shift 2 ;;
    --force) FORCE=1; shift ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-image.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

here="$(cd "$(dirname "$(readlink -f "$0")")" && pwd)"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$here/containers.conf}"

for tool in podman debootstrap tar; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "build-image.sh: '$tool' is not installed; run scripts/install-podman.sh (or: apt-get install podman runc debootstrap)" >&2
    exit 1
  fi
done
if [ "$(id -u)" != 0 ]; then
  echo "build-image.sh: debootstrap needs root" >&2
  exit 1
fi

if [ "$FORCE" = 0 ] && podman image exists "$IMAGE"; then
  have="$(podman image inspect --format '{{ index .Labels "envkernel.image" }}' "$IMAGE" 2>/dev/null || echo 0)"
  if [ "${have:-0}" -ge "$IMAGE_VERSION" ] 2>/dev/null; then
    echo "image $IMAGE is already built (use --force to rebuild)"
    exit 0
  fi
  echo "image $IMAGE is version ${have:-0}, older than $IMAGE_VERSION: rebuilding it"
fi

# The Debian mirror this machine's apt uses (first non-security http(s) URI), else the default.
detect_mirror() {
  local f uri
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources; do
    [ -r "$f" ] || continue
    uri="$( (grep -hE '^[[:space:]]*(deb[[:space:]]|URIs:)' "$f" || true) | grep -oE 'https?://[^[:space:]]+' \
      | grep -v security | grep -E '/debian/?$' | head -n1 || true)"
    if [ -n "$uri" ]; then echo "${uri%/}"; return; fi
  done
  echo "http://deb.debian.org/debian"
}
[ -n "$MIRROR" ] || MIRROR="$(detect_mirror)"

rootfs="$(mktemp -d /var/tmp/envkernel-rootfs.XXXXXX)"
trap 'rm -rf "$rootfs"' EXIT

start=$(date +%s)
echo "debootstrap $SUITE (minbase + python3, git, sqlite3) from $MIRROR ..."
debootstrap --variant=minbase --include=python3,git,sqlite3 "$SUITE" "$rootfs" "$MIRROR" >"$rootfs.log" 2>&1 || {
  tail -n 20 "$rootfs.log" >&2
  echo "build-image.sh: debootstrap failed (full log: $rootfs.log)" >&2
  exit 1
}
rm -f "$rootfs.log"

# Trim what a sandbox never needs (about half the size).
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
  "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/* "$rootfs"/usr/share/locale/*
grep -q '^envk:' "$rootfs/etc/passwd" || echo 'envk:x:1000:1000:envkernel sandbox:/work:/usr/sbin/nologin' >>"$rootfs/etc/passwd"
grep -q '^envk:' "$rootfs/etc/group" || echo 'envk:x:1000:' >>"$rootfs/etc/group"
mkdir -p "$rootfs/work" "$rootfs/envk" "$rootfs/opt/envk"
echo "$IMAGE_VERSION" >"$rootfs/etc/envkernel-image"

echo "podman import -> $IMAGE ..."
tar --numeric-owner -C "$rootfs" -c . | podman import \
  --change "LABEL=envkernel.image=$IMAGE_VERSION" \
  --change "USER=1000:1000" \
  --change "WORKDIR=/work" \
  --change 'CMD=["python3"]' \
  --message "envkernel sandbox: Debian $SUITE minbase + python3, git, sqlite3" \
  --quiet - "$IMAGE" >/dev/null

podman run --rm --network=none --user 1000:1000 "$IMAGE" \
  timeout 60 python3 -c 'import json, sqlite3, sys; print("python", sys.version.split()[0], "sqlite", sqlite3.sqlite_version)'
echo "built $IMAGE in $(( $(date +%s) - start )) s"
