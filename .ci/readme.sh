#!/usr/bin/env bash
# The README's commands as written, so it cannot drift from the program:
# "Run it" (go run on the embedded defaults until /health is ok) and the
# five-minute tour, each in a copy of the tracked files with nothing else on
# 127.0.0.1:8080, checking the answers its comments promise.
set -euo pipefail
cd "$(dirname "$0")/.."

block() { # the first ```sh block after the heading $1
	awk -v h="$1" '$0 == h {f=1} f && /^```sh$/ {c=1; next} c && /^```$/ {exit} c' README.md
}
if curl -s -o /dev/null http://127.0.0.1:8080/; then
	echo "readme.sh: something already listens on 127.0.0.1:8080, which the README's commands use" >&2
	exit 1
fi
copy=$(mktemp -d)
group=
cleanup() { # the script's own status stands, whatever the cleanup meets
	if [ -n "$group" ]; then kill -- -"$group" 2>/dev/null || true; fi
	wait || true
	rm -rf "$copy"
}
trap cleanup EXIT
git ls-files -z | tar --null -T - -c | tar -x -C "$copy"

run=$(block '## Run it')
[ "$run" = "go run ./cmd/outpost" ] || { echo "readme.sh: the Run it block is now: $run" >&2; exit 1; }
# In a session of its own: go run leaves the program it built running when
# it is killed, so the whole group is stopped.
(cd "$copy" && exec setsid $run) >"$copy/run.log" 2>&1 &
group=$!
for _ in $(seq 600); do # a cold build on two cores takes minutes
	curl -sf http://127.0.0.1:8080/health >/dev/null && break
	sleep 0.5
done
curl -sf http://127.0.0.1:8080/health | grep -q '"status":"ok"' || { cat "$copy/run.log" >&2; exit 1; }
kill -TERM -- -"$group"; wait "$group" || true
[ -d "$copy/data" ] || { echo "readme.sh: go run left no ./data" >&2; exit 1; }

block '## A five-minute tour' >"$copy/tour.sh"
out=$(cd "$copy" && bash -euo pipefail tour.sh 2>"$copy/tour.log") || { cat "$copy/tour.log" >&2; exit 1; }
for want in '{"status":"ok"}' '"status":"paid"' '"status":"online"' '"banned"' '"blocked":true'; do
	grep -qF "$want" <<<"$out" || { printf 'readme.sh: the tour printed\n%s\nwithout %s\n' "$out" "$want" >&2; cat "$copy/tour.log" >&2; exit 1; }
done
echo "README: Run it and the tour work as written"
