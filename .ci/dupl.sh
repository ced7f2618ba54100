#!/usr/bin/env bash
# Repeated non-test code fails CI: dupl (pinned) over every tracked .go file
# but the tests, at a threshold of $THRESHOLD tokens (eight to ten lines
# of logic; below it dupl lists the same shape of different list
# formatters and handlers). A clone we decided to keep is listed in .ci/dupl-allow as its two
# files and a reason; anything else dupl reports is an error.
set -euo pipefail
cd "$(dirname "$0")/.."
THRESHOLD=80
allow=.ci/dupl-allow

found=$(git ls-files '*.go' | grep -v '_test\.go$' |
	go run github.com/mibk/dupl@v1.0.0 -files -t "$THRESHOLD" -plumbing)
bad=0
while IFS= read -r line; do
	[ -z "$line" ] && continue
	a=${line%%:*}
	rest=${line#*duplicate of }
	b=${rest%%:*}
	# The allow-list names a pair once, in either order.
	if grep -qE "^($a $b|$b $a) " "$allow" 2>/dev/null; then
		continue
	fi
	echo "dupl: $line" >&2
	bad=1
done <<<"$found"
if [ "$bad" = 1 ]; then
	echo "repeated code above $THRESHOLD tokens: share it, or list the pair in $allow with a reason" >&2
	exit 1
fi
