#!/usr/bin/env bash
# Install the workspace (and uv, if missing) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null 2>&1 || python3 -m pip install -q uv
uv sync --all-packages --quiet
# iproute2 (`ip netns`, veth, bridge): the multi-host tests start their hosts as network namespaces (root).
if [ "$(id -u)" = 0 ] && ! command -v ip >/dev/null 2>&1 && [ ! -x /usr/sbin/ip ] && [ ! -x /sbin/ip ]; then
  apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends iproute2 >/dev/null
fi
export PATH="$PATH:/usr/sbin:/sbin"
# Podman and the sandbox image (installed and built once; cached after that). Needs root.
bash scripts/install-podman.sh && export ENVKERNEL_REQUIRE_PODMAN=1
uv run --no-sync pytest -q "$@"
