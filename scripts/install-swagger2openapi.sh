#!/usr/bin/env bash
# Install the Swagger 2.0 -> OpenAPI 3 converter the `openapi` synthesizer uses on Swagger 2.0
# specs (swagger2openapi, from npm; Node.js and npm from Debian when missing). Idempotent.
#
#   scripts/install-swagger2openapi.sh   (as root, or with a writable npm prefix)
set -euo pipefail
VERSION=7.0.8
if command -v swagger2openapi >/dev/null 2>&1; then
  exit 0
fi
if ! command -v npm >/dev/null 2>&1; then
  echo "installing nodejs npm ..."
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -q >/dev/null
  apt-get install -y -q --no-install-recommends nodejs npm >/dev/null
fi
echo "installing swagger2openapi@$VERSION ..."
npm install -g --no-fund --no-audit "swagger2openapi@$VERSION" >/dev/null
command -v swagger2openapi >/dev/null
