#!/usr/bin/env bash
# Which packages may import what. Each rule names the packages allowed to
# import a library; any other package that imports it (in its non-test
# files: go list's .Imports) fails the check. Test files are free: they may
# drive a relay with fasthttp/websocket as an independent raw-frame client.
set -euo pipefail
cd "$(dirname "$0")/.."

module=$(go list -m)
imports=$(go list -f '{{.ImportPath}} {{join .Imports " "}}' ./...)
failed=0

# only PKGS IMPORT REASON: only the packages PKGS (an extended regex of
# paths inside the module, such as 'a|b/c') may import a package matching
# IMPORT (an extended regex of import paths).
only() {
	# (regexes reach awk through the environment: -v would eat backslashes)
	if PKGS="^$module/($1)\$" IMP="^($2)\$" WHY="only ${1//|/, } may import it: $3" awk '
		$1 !~ ENVIRON["PKGS"] { for (i = 2; i <= NF; i++) if ($i ~ ENVIRON["IMP"]) { print $1 " imports " $i "; " ENVIRON["WHY"]; bad = 1 } }
		END { exit !bad }' <<<"$imports" >&2; then
		failed=1
	fi
}

# One websocket client: nostrclient. The exceptions:
# - relay is the server side (its own Upgrader), not a client;
# - internal/testkit/relaytest hands relay tests and bench a client that reads slowly
#   (ReadSlowly), which a well-behaved client such as nostrclient is not;
# - bench is a load tool: it times raw frames and stalls connections on
#   purpose, under the relay's limits, where a client would get in its way.
only 'internal/nostr/nostrclient|relay|internal/testkit/relaytest|bench' \
	'github\.com/(fasthttp|coder|gorilla)/websocket|nhooyr\.io/websocket|golang\.org/x/net/websocket' \
	'outbound Nostr connections go through nostrclient (one dialer, read limit, ping, back-off)'

exit "$failed"
