#!/usr/bin/env bash
# The seed's test.sh (net-next "fib_rules: Only hold RTNL for the first IPv4
# RTM_NEWRULE"), line for line, against nlemu: N namespaces, 1,024
# `rule add from all table i` loaded into all of them in parallel with
# `ip -batch`, one process per namespace, timed per family.
#
#   hack/loadtest.sh [--kernel] [N]     (default N=4096)
#
# With --kernel the same loop also runs against real kernel namespaces
# (`ip netns add`, `nsenter --net=/var/run/netns/ns-$i ip -$v -batch`), as
# root, and both timings are printed side by side.
set -euo pipefail

kernel=0
if [ "${1:-}" = "--kernel" ]; then kernel=1; shift; fi
N=${1:-4096}
case "$N" in ''|*[!0-9]*|0*) echo "usage: $0 [--kernel] [N]   (N: namespaces, at least 1)" >&2; exit 2;; esac

cd "$(dirname "$0")/.."
work=$(mktemp -d)
export NLEMU_SOCKET=$work/nlemu.sock
bin=$work/nlemu
go build -o "$bin" ./cmd/nlemu
"$bin" serve --socket "$NLEMU_SOCKET" 2>"$work/serve.log" &
server=$!
cleanup() {
	kill "$server" 2>/dev/null || true
	wait "$server" 2>/dev/null || true
	if [ "$kernel" = 1 ]; then
		for i in $(seq "$N"); do ip netns del "kb-ns-$i" 2>/dev/null || true; done
	fi
	rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 50); do [ -S "$NLEMU_SOCKET" ] && break; sleep 0.1; done

F=$work/rules.txt
printf 'rule add from all table %d\n' {1..1024} > "$F"
TIMEFORMAT=%R
declare -A result

echo "=== nlemu: $N namespaces ==="
for i in $(seq "$N"); do "$bin" netns add "ns-$i"; done
for v in 4 6; do
	echo "=== IPv${v} ==="
	result[nlemu$v]=$( { time { for i in $(seq "$N"); do "$bin" exec -n "ns-$i" -- ip -"$v" -batch "$F" & done; wait; } ; } 2>&1 )
	echo "real ${result[nlemu$v]}s"
done
ok=$("$bin" exec -n "ns-$N" -- ip rule show | wc -l)
ok6=$("$bin" exec -n "ns-$N" -- ip -6 rule show | wc -l)
echo "ns-$N: $ok IPv4 rules, $ok6 IPv6 rules (want 1027, 1026)"
# The server's own memory (this script and the ip processes are not in it).
"$bin" stats | grep 'peak RSS' | sed 's/^peak RSS */nlemu serve peak RSS /'
for i in $(seq "$N"); do "$bin" netns del "ns-$i"; done

if [ "$kernel" = 1 ]; then
	echo "=== kernel: $N namespaces ==="
	for i in $(seq "$N"); do ip netns add "kb-ns-$i"; done
	for v in 4 6; do
		echo "=== IPv${v} ==="
		result[kernel$v]=$( { time { for i in $(seq "$N"); do nsenter --net=/var/run/netns/kb-ns-$i ip -"$v" -batch "$F" & done; wait; } ; } 2>&1 )
		echo "real ${result[kernel$v]}s"
	done
	for i in $(seq "$N"); do ip netns del "kb-ns-$i"; done
fi

echo
printf '%-8s %12s %12s\n' family "nlemu (s)" "kernel (s)"
for v in 4 6; do
	printf 'IPv%-5s %12s %12s\n' "$v" "${result[nlemu$v]}" "${result[kernel$v]:--}"
done
