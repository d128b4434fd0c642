#!/usr/bin/env bash
# Install Debian's headless-capable Chromium (for the report's rendering tests), only when missing.
#
#   scripts/install-chromium.sh            (as root; idempotent: a second run takes well under 1 s)
#
# The tests run it as `chromium --headless --no-sandbox --disable-gpu ... --screenshot=... / --dump-dom`
# (see docs/report.md); no display server is needed.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
if [ "$(id -u)" != 0 ]; then
  echo "install-chromium.sh: chromium is missing; run this as root (apt-get install chromium)" >&2
  exit 1
fi
echo "installing chromium ..."
export DEBIAN_FRONTEND=noninteractive
apt-get update -q >/dev/null
apt-get install -y -q --no-install-recommends chromium >/dev/null
