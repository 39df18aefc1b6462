#!/usr/bin/env bash
# Loads N IPv4 and N IPv6 routes (default 40,000 each) into one namespace
# with one `ip -batch` per family, through `nlemu exec` and, as root, into a
# fresh kernel namespace, and prints both times side by side:
#
#   hack/routeload.sh [N]
#
# The routes are 10.(k>>8).(k&255).0/24 and 2001:db8:(k>>8):(k&255)::/64,
# each `dev rl0`, a veth end that is up (its peer rl1 too), in table main.
# Each `ip` line is one RTM_NEWROUTE round trip: a latency race in which the
# kernel answers inside the sendmsg system call.
set -euo pipefail

N=${1:-40000}
case "$N" in ''|*[!0-9]*|0*) echo "usage: $0 [N]   (N: routes per family, 1..65536)" >&2; exit 2;; esac
[ "$N" -le 65536 ] || { echo "$0: N at most 65536" >&2; exit 2; }

cd "$(dirname "$0")/.."
work=$(mktemp -d)
export NLEMU_SOCKET=$work/nlemu.sock
bin=$work/nlemu
go build -o "$bin" ./cmd/nlemu
"$bin" serve --socket "$NLEMU_SOCKET" 2>"$work/serve.log" &
server=$!
kns=rl-kernel-$$
cleanup() {
	kill "$server" 2>/dev/null || true
	wait "$server" 2>/dev/null || true
	ip netns del "$kns" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 50); do [ -S "$NLEMU_SOCKET" ] && break; sleep 0.1; done

setup=$work/setup.txt
cat >"$setup" <<EOF
link add rl0 type veth peer name rl1
link set rl0 up
link set rl1 up
EOF
for k in $(seq 0 $((N - 1))); do
	echo "route add 10.$((k >> 8)).$((k & 255)).0/24 dev rl0"
done >"$work/v4.txt"
for k in $(seq 0 $((N - 1))); do
	printf 'route add 2001:db8:%x:%x::/64 dev rl0\n' $((k >> 8)) $((k & 255))
done >"$work/v6.txt"

TIMEFORMAT='%R %U %S'
declare -A result count

"$bin" netns add rl
"$bin" exec -n rl -- ip -batch "$setup"
for v in 4 6; do
	result[nlemu$v]=$( { time "$bin" exec -n rl -- ip -batch "$work/v$v.txt" ; } 2>&1 )
done
count[nlemu4]=$("$bin" exec -n rl -- ip route show | grep -c '^10\.' || true)
count[nlemu6]=$("$bin" exec -n rl -- ip -6 route show | grep -c '^2001:db8:' || true)

if [ "$(id -u)" = 0 ] && ip netns add "$kns" 2>/dev/null; then
	ip -n "$kns" -batch "$setup"
	for v in 4 6; do
		result[kernel$v]=$( { time ip -n "$kns" -batch "$work/v$v.txt" ; } 2>&1 )
	done
	count[kernel4]=$(ip -n "$kns" route show | grep -c '^10\.' || true)
	count[kernel6]=$(ip -n "$kns" -6 route show | grep -c '^2001:db8:' || true)
fi

printf '%-6s %8s  %-24s %-24s\n' family routes "nlemu real/user/sys (s)" "kernel real/user/sys (s)"
for v in 4 6; do
	printf 'IPv%-3s %8s  %-24s %-24s\n' "$v" "$N" "${result[nlemu$v]} (${count[nlemu$v]})" "${result[kernel$v]:--} (${count[kernel$v]:--})"
done
echo "(in brackets: routes the table shows afterwards)"
