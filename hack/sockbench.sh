#!/bin/sh
# sockbench.sh [N] [RUNS]: what one vishvananda/netlink package-level call
# costs in socket() terms (hack/sockbench: a static Go program), side by
# side in each run:
#   socket  socket(AF_NETLINK, NETLINK_ROUTE) + close, N times
#   call    socket, bind, one RTM_GETLINK request for lo and its answer, close
# each on the kernel (a fresh kernel namespace, ip netns exec) and under
# nlemu exec --seccomp (the supervisor answers every socket()). Each figure
# is the best of RUNS runs (default 5) of N (default 2000). Needs root and
# go. BEFORE=/path/to/nlemu adds "seccomp-before": that binary's exec in
# the same runs, to compare a change side by side.
set -eu
N=${1:-2000}
RUNS=${2:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
ns=h-sockbench-$$
cleanup() {
	[ -n "${srv:-}" ] && kill "$srv" 2>/dev/null || true
	ip netns del "$ns" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM
(cd "$root" && go build -o "$tmp/nlemu" ./cmd/nlemu && CGO_ENABLED=0 go build -o "$tmp/sockbench" ./hack/sockbench)
chmod 700 "$tmp"
"$tmp/nlemu" serve --socket "$tmp/nlemu.sock" >"$tmp/serve.log" 2>&1 &
srv=$!
i=0
while [ ! -S "$tmp/nlemu.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
ip netns add "$ns"
best() { tr ' ' '\n' | grep . | sort -n | head -1; }
each() { sed -n 's/.*: \([0-9]*\) ns each/\1/p'; }
for mode in socket call; do
	k=""; s=""; b=""
	r=0
	while [ $r -lt "$RUNS" ]; do
		k="$k $(ip netns exec "$ns" "$tmp/sockbench" $mode "$N" | each)"
		s="$s $("$tmp/nlemu" exec --seccomp --socket "$tmp/nlemu.sock" -- "$tmp/sockbench" $mode "$N" | each)"
		if [ -n "${BEFORE:-}" ]; then
			b="$b $("$BEFORE" exec --seccomp --socket "$tmp/nlemu.sock" -- "$tmp/sockbench" $mode "$N" | each)"
		fi
		r=$((r + 1))
	done
	printf '%s, best of %s runs of %s (ns each):\n' "$mode" "$RUNS" "$N"
	printf '  kernel   %s\n' "$(echo $k | best)"
	printf '  seccomp  %s\n' "$(echo $s | best)"
	if [ -n "${BEFORE:-}" ]; then printf '  seccomp-before  %s\n' "$(echo $b | best)"; fi
done
