#!/usr/bin/env bash
# Install the workspace (and uv, if missing) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null 2>&1 || python3 -m pip install -q uv
uv sync --all-packages --quiet
uv run --no-sync pytest -q "$@"
