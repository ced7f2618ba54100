#!/usr/bin/env bash
# Builds strfry (hoytech/strfry, the C++/LMDB relay) from its source, for the
# read-path scenario's optional comparison (issue 16):
#
#   go run ./bench -only 8 -strfry "$(bash bench/strfry.sh /path/to/strfry)"
#
# Optional: CI neither runs this nor needs strfry. SRC is a strfry checkout;
# its submodules (golpe, external/negentropy, and golpe's own external/*) are
# fetched with git where they are missing, which needs GitHub. Installs the
# Debian packages strfry's README lists, builds with at most two jobs, and
# prints the binary's path (make's output goes to stderr). APPS reaches
# strfry's Makefile: APPS="dbutils relay" leaves out the mesh commands (sync,
# router), which the benchmark does not run.
set -euo pipefail

src=${1:?usage: bench/strfry.sh STRFRY_SOURCE_DIR}
cd "$src"
[[ -f src/apps/relay/RelayWebsocket.cpp ]] || { echo "strfry.sh: $src is no strfry checkout" >&2; exit 1; }

# strfry's README's list, and Perl for golpe's code generators (golpe
# vendors the modules they use).
pkgs=(git g++ make libssl-dev zlib1g-dev liblmdb-dev libflatbuffers-dev libsecp256k1-dev libzstd-dev perl)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
done
if ((${#missing[@]})); then
  sudo=$([[ $(id -u) == 0 ]] || echo sudo)
  $sudo apt-get update -qq >&2
  $sudo apt-get install -y -qq "${missing[@]}" >&2
fi

# make setup-golpe is strfry's own step: golpe's submodules, once golpe is there.
if [[ ! -f golpe/rules.mk || ! -f external/negentropy/cpp/negentropy.h ]]; then
  git submodule update --init >&2
fi
[[ -f golpe/external/hoytech-cpp/README.md ]] || make setup-golpe >&2

# NPROC: golpe builds uWebSockets with make -j$(NPROC), which is unbounded
# when it is empty.
make -j2 NPROC=2 >&2
echo "$PWD/strfry"
