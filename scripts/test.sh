#!/usr/bin/env bash
# Install the workspace (and uv, if missing) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null 2>&1 || python3 -m pip install -q uv
uv sync --all-packages --quiet
# Podman and the sandbox image (installed and built once; cached after that). Needs root.
bash scripts/install-podman.sh && export ENVKERNEL_REQUIRE_PODMAN=1
# Chromium, for rendering the run report (plugins/report/tests). Needs root when missing.
bash scripts/install-chromium.sh
# Two worker processes (one per core here), a test file at a time, so module fixtures are shared;
# ENVKERNEL_TEST_WORKERS=0 runs everything in this process.
uv run --no-sync pytest -q -n "${ENVKERNEL_TEST_WORKERS:-2}" --dist loadfile "$@"
