#!/usr/bin/env bash
# Installs what the benchmarks need from Debian: wrk, the HTTP load tool.
set -euo pipefail
command -v wrk >/dev/null && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
$SUDO apt-get update -qq
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq wrk >/dev/null
