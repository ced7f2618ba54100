# Sourced by .ci/run: puts a Node.js of at least 22.4 (what cashu-ts needs)
# first on PATH. When the machine's node is older, Node's own binary comes
# from the npm registry (the package node-linux-<arch>), kept in
# ~/.cache/outpost so that it is fetched once per machine.
node_want=22.4.0
node_pin=22.23.3
node_have=$(node --version 2>/dev/null | tr -d v || true)
if [ -z "$node_have" ] || [ "$(printf '%s\n%s\n' "$node_want" "$node_have" | sort -V | head -n1)" != "$node_want" ]; then
	case "$(uname -m)" in
	x86_64) node_arch=x64 ;;
	aarch64) node_arch=arm64 ;;
	*) node_arch=$(uname -m) ;;
	esac
	node_dir="${XDG_CACHE_HOME:-$HOME/.cache}/outpost/node-$node_pin"
	if [ ! -x "$node_dir/node_modules/node-linux-$node_arch/bin/node" ]; then
		echo "node ${node_have:-(none)} is older than $node_want: installing node-linux-$node_arch@$node_pin from npm into $node_dir" >&2
		npm install --prefix "$node_dir" --no-audit --no-fund --no-save "node-linux-$node_arch@$node_pin" >&2
	fi
	export PATH="$node_dir/node_modules/node-linux-$node_arch/bin:$PATH"
fi
echo "interop suites run on node $(node --version)" >&2
