#!/usr/bin/env bash
# The operators' tools the deployment tests run against: nginx and caddy
# (the reverse-proxy recipes, interop/test/proxy.test.js), promtool from
# Debian's prometheus package (`promtool check metrics` on a real scrape,
# `promtool check rules` on deploy/prometheus/alerts.yml, docs/operating.md's
# alert rules).
# Idempotent; without apt-get it says so and the tests that need the tools
# skip with a message.
set -euo pipefail

missing=()
command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || missing+=(nginx)
command -v promtool >/dev/null 2>&1 || missing+=(prometheus)
command -v caddy >/dev/null 2>&1 || missing+=(caddy)
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ops-tools: no apt-get here; ${missing[*]} missing: the proxy and metrics-format tests will be skipped" >&2
  exit 0
fi
sudo=""
if [ "$(id -u)" != 0 ]; then
  if command -v sudo >/dev/null 2>&1; then sudo="sudo -n"; else
    echo "ops-tools: not root and no sudo; ${missing[*]} missing: the proxy and metrics-format tests will be skipped" >&2
    exit 0
  fi
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
# --no-install-recommends: prometheus recommends node-exporter and more we do not need.
# The packages' services are not wanted: policy-rc.d keeps them from starting.
policy=/usr/sbin/policy-rc.d
created_policy=""
if [ ! -e "$policy" ] && [ -z "$sudo" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod +x "$policy" && created_policy=1
fi
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
if [ -n "$created_policy" ]; then rm -f "$policy"; fi
