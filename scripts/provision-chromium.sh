#!/usr/bin/env bash
# Installs Debian's Chromium for the real-browser tests (test/browser). Idempotent and quiet: does
# nothing when chromium is already on PATH. Never uses playwright's own browser download, which needs
# network access outside the Debian mirrors and pins a build we do not test against.
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then
  exit 0
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium >/dev/null
