#!/usr/bin/env bash
# Install the workspace (and uv, if missing) and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v uv >/dev/null 2>&1 || python3 -m pip install -q uv
uv sync --all-packages --quiet
# A workspace environment's shell runs the host's bash, git, sqlite3 and python3 (process runner).
ws_missing=(); for t in git sqlite3; do command -v "$t" >/dev/null 2>&1 || ws_missing+=("$t"); done
[ -x /usr/bin/python3 ] || ws_missing+=(python3)
if [ ${#ws_missing[@]} -gt 0 ] && [ "$(id -u)" = 0 ]; then
  apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${ws_missing[@]}" >/dev/null
fi
# iproute2 (`ip netns`, veth, bridge): the multi-host tests start their hosts as network namespaces (root).
if [ "$(id -u)" = 0 ] && ! command -v ip >/dev/null 2>&1 && [ ! -x /usr/sbin/ip ] && [ ! -x /sbin/ip ]; then
  apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends iproute2 >/dev/null
fi
export PATH="$PATH:/usr/sbin:/sbin"
# Podman and the sandbox image (installed and built once; cached after that). Needs root.
bash scripts/install-podman.sh && export ENVKERNEL_REQUIRE_PODMAN=1
# Chromium, for rendering the run report (plugins/report/tests). Needs root when missing.
bash scripts/install-chromium.sh
# The Swagger 2.0 converter (npm's swagger2openapi) for the two Swagger specs of the real corpus.
bash scripts/install-swagger2openapi.sh
# TRL and verl (torch from the CPU wheel on disk) in their own venv, .venv-trainers, for tests/test_trainers.py.
bash scripts/install-trainers.sh
# Format, lint and types first (seconds): ruff over the tree, mypy strict over the five libraries.
uv run --no-sync ruff format --check --quiet .
uv run --no-sync ruff check --quiet .
uv run --no-sync mypy
# Two worker processes (one per core here), a test file at a time, so module fixtures are shared;
# ENVKERNEL_TEST_WORKERS=0 runs everything in this process. The files go longest first, in the
# order conftest.py gives them (the times of the last run, in .test-times/times.json), not
# xdist's by number of tests; the run ends with the slowest files' wall and CPU times.
export ENVKERNEL_TEST_TIMES="${ENVKERNEL_TEST_TIMES:-.test-times}"
uv run --no-sync pytest -q -n "${ENVKERNEL_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder "$@"
