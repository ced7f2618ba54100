#!/usr/bin/env bash
# Only the storage layer, package kv, imports badger (or eventstore's badger
# backend, which hands out badger's types): every other package reads and
# writes through kv's types, so no badger type crosses a package boundary.
# The files below may still, each for the reason given.
set -euo pipefail
cd "$(dirname "$0")/.."

allowed=$(sed -e 's/[[:space:]]*#.*//' -e '/^$/d' <<'LIST'
# file                  reason
bench/khatru.go         # the benchmarks' baseline: a bare khatru relay on eventstore's own badger backend
internal/storage/events/bench_test.go    # compares with eventstore v0.17.8's badger backend, which opens its own badger database
LIST
)

bad=0
while read -r file; do
	case "$file" in internal/storage/kv/*) continue ;; esac
	ok=0
	for a in $allowed; do # a file, or a directory (ending in /) and all below it
		if [[ $file == "$a" || ($a == */ && $file == "$a"*) ]]; then ok=1; fi
	done
	if ((!ok)); then
		echo "$file imports badger: use package kv (or add it to .ci/badger-imports.sh with a reason)"
		bad=1
	fi
done < <(grep -rlE --include='*.go' '"github.com/(dgraph-io/badger|fiatjaf/eventstore/badger)' . | sed 's|^\./||' | sort)
exit $bad
