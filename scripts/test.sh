#!/usr/bin/env bash
# Install the workspace (and uv, if missing) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null 2>&1 || python3 -m pip install -q uv
uv sync --all-packages --quiet
# Podman and the sandbox image (installed and built once; cached after that). Needs root.
bash scripts/install-podman.sh && export ENVKERNEL_REQUIRE_PODMAN=1
# The Swagger 2.0 converter (npm's swagger2openapi) for the two Swagger specs of the real corpus.
bash scripts/install-swagger2openapi.sh
uv run --no-sync pytest -q "$@"
