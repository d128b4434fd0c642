#!/usr/bin/env bash
# Install what the `podman` sandbox runner needs, and build its image, each only when missing.
#
#   scripts/install-podman.sh            (as root; idempotent: a second run takes well under 1 s)
#
# Rootful Podman on Debian bookworm: podman (brings conmon and containers-common), runc (the
# default crun 1.8 fails on cgroup v1 hybrid hosts; containers/containers.conf selects runc) and
# debootstrap (the image is built offline from the Debian mirror). uidmap, fuse-overlayfs and
# slirp4netns are only for rootless Podman and are not installed. The image is kept in Podman's
# own storage (/var/lib/containers), which is the cache.
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v podman >/dev/null 2>&1 || missing+=(podman)
command -v runc >/dev/null 2>&1 || [ -x /usr/sbin/runc ] || missing+=(runc)
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || missing+=(debootstrap)

if [ "$(id -u)" != 0 ]; then
  echo "install-podman.sh: run as root (rootful Podman; debootstrap needs root)" >&2
  exit 1
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "installing ${missing[*]} ..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null
fi

export PATH="$PATH:/usr/sbin:/sbin"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/containers/containers.conf}"
bash containers/build-image.sh
