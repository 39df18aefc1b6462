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
#
# It runs the one-CPU SEQPACKET round-trip floor first (hack/floor.sh) and
# gives each time per route as a ratio to it, with the server's CPU
# (/proc/<pid>/stat) and system calls per route (perf stat -e
# raw_syscalls:sys_enter around `nlemu serve`, when there is perf), and the
# client's CPU per route (the user and system time of `ip -batch`: on the
# kernel side that includes the kernel's own work, done in ip's sendmsg).
#
#   PROFILE=1 hack/routeload.sh [N]
#
# also records the server with perf record -g during each nlemu load and
# prints where its CPU goes: the route handler (nsmgr's Namespace.Do), the
# receive and the send of the transport, the Go runtime's collector and
# sysmon; the recordings stay in PROFILE_DIR (default /tmp) for perf report.
set -euo pipefail

N=${1:-40000}
case "$N" in ''|*[!0-9]*|0*) echo "usage: $0 [N]   (N: routes per family, 1..65536)" >&2; exit 2;; esac
[ "$N" -le 65536 ] || { echo "$0: N at most 65536" >&2; exit 2; }

cd "$(dirname "$0")/.."
work=$(mktemp -d)
export NLEMU_SOCKET=$work/nlemu.sock
bin=$work/nlemu
go build -o "$bin" ./cmd/nlemu
floor=$(hack/floor.sh -n 100000 -p 1 | awk '/one CPU/ {print $5}')
echo "floor (hack/floor.sh, one pair on one CPU): $floor us per round trip"
perf=0
profile=${PROFILE:-0}
profdir=${PROFILE_DIR:-/tmp}
if [ "$profile" = 1 ] && ! command -v perf >/dev/null 2>&1; then
	echo "$0: PROFILE=1 needs perf" >&2
	exit 2
fi
if command -v perf >/dev/null 2>&1 && perf stat -x, -e raw_syscalls:sys_enter -o /dev/null -- true 2>/dev/null; then
	perf=1
	perf stat -x, -e raw_syscalls:sys_enter -I 200 -o "$work/server.perf" -- "$bin" serve --socket "$NLEMU_SOCKET" 2>"$work/serve.log" &
	perf0=$(date +%s.%N)
	for _ in $(seq 50); do server=$(pgrep -P $! -x nlemu || true); [ -n "$server" ] && break; sleep 0.1; done
else
	"$bin" serve --socket "$NLEMU_SOCKET" 2>"$work/serve.log" &
	server=$!
fi
kns=rl-kernel-$$
cleanup() {
	kill "$server" 2>/dev/null || true
	wait 2>/dev/null || true
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
declare -A result count scpu ssc
cputicks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
serversyscalls() {
	[ "$perf" = 1 ] || { echo -; return; }
	sleep 0.5
	awk -F, -v a="$(echo "$1 - $perf0" | bc)" -v b="$(echo "$2 - $perf0 + 0.2" | bc)" \
		'/raw_syscalls/ && $1 > a && $1 <= b && $2 ~ /^[0-9]+$/ {s += $2} END {printf "%.2f", s / '"$N"'}' "$work/server.perf"
}

"$bin" netns add rl
"$bin" exec -n rl -- ip -batch "$setup"
# split prints the share of the server's samples in perf recording $1 under
# each part of the request path (inclusive: a part's callees count in it).
split() {
	perf report -i "$1" --children --sort sym -g none 2>/dev/null | awk '
		/^#/ || NF < 4 {next}
		{pct = $1 + 0; sym = $NF}
		sym ~ /nsmgr\.\(\*Namespace\)\.Do$/ {h += pct}
		sym ~ /server\.\(\*fdConn\)\.recvBusy$/ {r += pct}
		sym ~ /server\.\(\*loopConn\)\.readLoop$/ {r += pct}
		sym ~ /server\.\(\*fdConn\)\.send$/ {w += pct}
		sym ~ /runtime\.gcBgMarkWorker$/ {g += pct}
		sym ~ /runtime\.sysmon$/ {m += pct}
		END {printf "handler (nsmgr Do) %.0f%%, receive %.0f%%, send %.0f%%, GC workers %.0f%%, sysmon %.0f%%", h, r, w, g, m}'
}
declare -A ccpu prof
for v in 4 6; do
	s0=$(cputicks "$server"); t0=$(date +%s.%N)
	if [ "$profile" = 1 ]; then
		perf record -q -F 4000 -g -p "$server" -o "$profdir/routeload-v$v.perf" 2>/dev/null &
		precord=$!
		sleep 2 # perf record takes a while to attach on a busy machine
	fi
	result[nlemu$v]=$( { time "$bin" exec -n rl -- ip -batch "$work/v$v.txt" ; } 2>&1 )
	if [ "$profile" = 1 ]; then
		kill -INT "$precord"
		wait "$precord" || true
		prof[$v]=$(split "$profdir/routeload-v$v.perf")
	fi
	t1=$(date +%s.%N); s1=$(cputicks "$server")
	scpu[$v]=$(echo "scale=2; ($s1 - $s0) * 1000000 / $hz / $N" | bc)
	ssc[$v]=$(serversyscalls "$t0" "$t1")
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
for v in 4 6; do
	w=${result[nlemu$v]%% *}
	k=${result[kernel$v]:-}
	k=${k%% *}
	printf 'IPv%s nlemu: %s us per route = %sx floor; server %s us CPU and %s system calls per route' "$v" \
		"$(echo "scale=2; $w * 1000000 / $N" | bc)" "$(echo "scale=2; $w * 1000000 / $N / $floor" | bc)" "${scpu[$v]}" "${ssc[$v]}"
	printf '; client (ip) %s us CPU per route' "$(echo "${result[nlemu$v]}" | awk -v n="$N" '{printf "%.2f", ($2 + $3) * 1000000 / n}')"
	if [ -n "$k" ]; then
		printf '; kernel %s us per route = %sx floor' "$(echo "scale=2; $k * 1000000 / $N" | bc)" "$(echo "scale=2; $k * 1000000 / $N / $floor" | bc)"
		printf ', ip + kernel %s us CPU per route' "$(echo "${result[kernel$v]}" | awk -v n="$N" '{printf "%.2f", ($2 + $3) * 1000000 / n}')"
	fi
	echo
	if [ "$profile" = 1 ]; then
		echo "IPv$v server CPU (perf record, $profdir/routeload-v$v.perf): ${prof[$v]}"
	fi
done
