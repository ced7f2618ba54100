#!/usr/bin/env bash
# Installs Debian's chromium for the page tests: playwright-core drives it and
# downloads no browser of its own.
set -euo pipefail
[ -x /usr/bin/chromium ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
