#!/usr/bin/env bash
# Checks the deployment files with the operators' own tools, each skipped
# with a message where this machine lacks it (.ci/ops-tools.sh installs
# promtool): the alert rules and their tests (promtool), and the systemd
# unit (systemd-analyze verify, against a freshly built binary in place of
# /usr/local/bin/outpost, since the unit names a binary that is not
# installed here).
set -euo pipefail
cd "$(dirname "$0")"

if command -v promtool >/dev/null 2>&1; then
  promtool check rules prometheus/alerts.yml
  (cd prometheus && promtool test rules alerts_test.yml)
else
  echo "deploy/check.sh: no promtool: the alert rules are not checked" >&2
fi

if command -v systemd-analyze >/dev/null 2>&1; then
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  go build -o "$tmp/outpost" ../cmd/outpost
  sed "s|^ExecStart=/usr/local/bin/outpost|ExecStart=$tmp/outpost|" systemd/outpost.service >"$tmp/outpost.service"
  if out=$(systemd-analyze verify --man=no "$tmp/outpost.service" 2>&1); then
    [ -z "$out" ] || { echo "$out"; exit 1; }
    echo "systemd/outpost.service: systemd-analyze verify found nothing"
  elif grep -q -e "System has not been booted with systemd" -e "Failed to connect to bus" -e "Failed to initialize manager" <<<"$out"; then
    echo "deploy/check.sh: systemd-analyze cannot verify units on this machine ($out): skipped" >&2
  else
    echo "$out"
    exit 1
  fi
else
  echo "deploy/check.sh: no systemd-analyze: the unit is not verified" >&2
fi
