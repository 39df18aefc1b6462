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
#
# Besides wall time it reports, per rule, the CPU and the system calls of
# each side: the clients (every `nlemu exec`/`nsenter` and `ip` process of
# the loop: bash's `time` of the loop, which waits for them all) and the
# nlemu server (utime+stime from /proc/<pid>/stat; for the kernel the rule
# work is the clients' system time). System calls are counted in the kernel
# by `perf stat -e raw_syscalls:sys_enter` (a counter per task, inherited
# by children: no tracing, no measurable cost), around the loop for the
# clients and around `nlemu serve` for the server (200 ms intervals summed
# over the loop's window); without perf they show as "-". First of all it
# runs the SEQPACKET round-trip floor (hack/floor.sh, 16 pairs) and gives
# every wall time per rule as a ratio to it.
#
# LOADTEST_VIA=env starts each nlemu-side `ip` with no nlemu process in
# between: the environment `nlemu env -n ns-1` prints (LD_PRELOAD,
# NLEMU_SOCKET) set once, and NLEMU_NETNS=ns-$i per process, as a user's
# `eval "$(nlemu env -n ns-$i)"` would; the default, exec, is one
# `nlemu exec -n ns-$i -- ip` per namespace, as the kernel side's nsenter.
set -euo pipefail

kernel=0
if [ "${1:-}" = "--kernel" ]; then kernel=1; shift; fi
N=${1:-4096}
case "$N" in ''|*[!0-9]*|0*) echo "usage: $0 [--kernel] [N]   (N: namespaces, at least 1)" >&2; exit 2;; esac
R=1024
kns=${KNS_PREFIX:-kb-ns-}

cd "$(dirname "$0")/.."
work=$(mktemp -d)
export NLEMU_SOCKET=$work/nlemu.sock
bin=$work/nlemu
go build -o "$bin" ./cmd/nlemu

echo "=== floor (hack/floor.sh: AF_UNIX SOCK_SEQPACKET round trip, 16 pairs) ==="
floor=$(hack/floor.sh --us)
echo "floor ${floor} us per round trip"
# The server's event-loop scheduling (docs/PROTOCOL.md, "Loop scheduling"):
# NLEMU_LOOP_SCHED=fifo|nice|pin|off|auto in the environment reaches
# `nlemu serve`; unset, its default.
echo "nlemu serve loop scheduling: ${NLEMU_LOOP_SCHED:-default ($("$bin" serve -h 2>&1 | sed -n 's/.*else \([a-z]*\);.*/\1/p' | head -1))}"
# Spin then block (docs/PROTOCOL.md): the shim's and the busy reader's
# windows, from the environment that reaches both; unset, their defaults.
echo "spin then block: NLEMU_SPIN_US=${NLEMU_SPIN_US:-default (50)} NLEMU_LOOP_SPIN_US=${NLEMU_LOOP_SPIN_US:-default (50)}${NLEMU_SPIN_ALWAYS:+ NLEMU_SPIN_ALWAYS=$NLEMU_SPIN_ALWAYS}"

perf=0
if command -v perf >/dev/null 2>&1 && perf stat -x, -e raw_syscalls:sys_enter -o /dev/null -- true 2>/dev/null; then
	perf=1
fi
if [ "$perf" = 1 ]; then
	perf stat -I 200 -x, -e raw_syscalls:sys_enter -o "$work/server.perf" -- "$bin" serve --socket "$NLEMU_SOCKET" 2>"$work/serve.log" &
	perfpid=$!
	perf0=$(date +%s.%N)
	for _ in $(seq 50); do server=$(pgrep -P "$perfpid" -x nlemu || true); [ -n "$server" ] && break; sleep 0.1; done
else
	"$bin" serve --socket "$NLEMU_SOCKET" 2>"$work/serve.log" &
	server=$!
fi
cleanup() {
	kill "$server" 2>/dev/null || true
	wait 2>/dev/null || true
	if [ "$kernel" = 1 ]; then
		for i in $(seq "$N"); do ip netns del "$kns$i" 2>/dev/null || true; done
	fi
	rm -rf "$work"
}
trap cleanup EXIT
for _ in $(seq 50); do [ -S "$NLEMU_SOCKET" ] && break; sleep 0.1; done
# One exec first: it verifies the shim for this build and writes the
# record that lets every later `nlemu exec` skip the Go runtime (README,
# "What the shim interposes"); without it every process of the first
# round starts Go, about 10 ms of CPU each.
"$bin" exec -- true

F=$work/rules.txt
printf 'rule add from all table %d\n' $(seq $R) > "$F"
TIMEFORMAT='%R %U %S'
declare -A wall cu cs csc su ssc

# cputicks PID: utime+stime of a process in clock ticks.
cputicks() { awk '{print $14 + $15}' "/proc/$1/stat"; }
hz=$(getconf CLK_TCK)
# clientrun OUT CMD...: runs CMD (the parallel loop) timed, counting its
# processes' system calls with perf when there is perf; prints
# "wall user sys syscalls".
clientrun() {
	local t n=-
	if [ "$perf" = 1 ]; then
		t=$( { time perf stat -x, -e raw_syscalls:sys_enter -o "$work/client.perf" -- bash -c "$1" ; } 2>&1 | tail -1)
		n=$(awk -F, '/raw_syscalls/ {print $1}' "$work/client.perf")
	else
		t=$( { time bash -c "$1" ; } 2>&1 | tail -1)
	fi
	echo "$t $n"
}
# serversyscalls FROM TO: the server's system calls between two times
# (seconds since the epoch), from perf's 200 ms intervals.
serversyscalls() {
	[ "$perf" = 1 ] || { echo -; return; }
	sleep 0.5 # the interval that holds TO
	awk -F, -v a="$(echo "$1 - $perf0" | bc)" -v b="$(echo "$2 - $perf0 + 0.2" | bc)" \
		'/raw_syscalls/ && $1 > a && $1 <= b && $2 ~ /^[0-9]+$/ {s += $2} END {print s + 0}' "$work/server.perf"
}

echo "=== nlemu: $N namespaces ==="
for i in $(seq "$N"); do "$bin" netns add "ns-$i"; done
via=${LOADTEST_VIA:-exec}
case "$via" in
exec) start="'$bin' exec -n ns-\$i --" ;;
env)
	lp=$(eval "$("$bin" env -n ns-1)"; echo "$LD_PRELOAD")
	start="LD_PRELOAD='$lp' NLEMU_NETNS=ns-\$i"
	;;
*) echo "LOADTEST_VIA: exec or env" >&2; exit 2 ;;
esac
echo "nlemu side started through: $via"
for v in 4 6; do
	echo "=== IPv${v} ==="
	s0=$(cputicks "$server"); t0=$(date +%s.%N)
	read -r wall[nlemu$v] cu[nlemu$v] cs[nlemu$v] csc[nlemu$v] < <(clientrun "for i in \$(seq $N); do $start ip -$v -batch '$F' & done; wait")
	t1=$(date +%s.%N); s1=$(cputicks "$server")
	su[nlemu$v]=$(echo "scale=3; ($s1 - $s0) / $hz" | bc)
	ssc[nlemu$v]=$(serversyscalls "$t0" "$t1")
	echo "real ${wall[nlemu$v]}s"
done
# Every namespace verified: its `ip rule show` of both families, hashed,
# must be one and the same text in all N (with --kernel, also the kernel
# namespace's below), and hold 1,027 IPv4 and 1,026 IPv6 rules.
lp=$(eval "$("$bin" env -n ns-1)"; echo "$LD_PRELOAD")
nsum() { for i in $(seq "$N"); do
	{ LD_PRELOAD=$lp NLEMU_NETNS=ns-$i ip rule show; LD_PRELOAD=$lp NLEMU_NETNS=ns-$i ip -6 rule show; } | md5sum
done | sort | uniq -c; }
vsum=$(nsum)
ok=$(LD_PRELOAD=$lp NLEMU_NETNS=ns-1 ip rule show | wc -l)
ok6=$(LD_PRELOAD=$lp NLEMU_NETNS=ns-1 ip -6 rule show | wc -l)
verified=no
if [ "$(echo "$vsum" | wc -l)" = 1 ] && [ "$ok" = 1027 ] && [ "$ok6" = 1026 ]; then verified=yes; fi
echo "nlemu: $(echo "$vsum" | awk '{print $1}' | paste -sd+) namespaces by rule-list hash; ns-1: $ok IPv4 rules, $ok6 IPv6 rules (want 1027, 1026): every namespace the same and complete: $verified"
# The server's own memory (this script and the ip processes are not in it).
"$bin" stats | grep 'peak RSS' | sed 's/^peak RSS */nlemu serve peak RSS /'
for i in $(seq "$N"); do "$bin" netns del "ns-$i"; done

if [ "$kernel" = 1 ]; then
	echo "=== kernel: $N namespaces ==="
	for i in $(seq "$N"); do ip netns add "$kns$i"; done
	for v in 4 6; do
		echo "=== IPv${v} ==="
		read -r wall[kernel$v] cu[kernel$v] cs[kernel$v] csc[kernel$v] < <(clientrun "for i in \$(seq $N); do nsenter --net=/var/run/netns/$kns\$i ip -$v -batch '$F' & done; wait")
		echo "real ${wall[kernel$v]}s"
	done
	ksum=$({ ip -n "${kns}1" rule show; ip -n "${kns}1" -6 rule show; } | md5sum)
	if [ "$(echo "$vsum" | awk '{print $2}')" = "$(echo "$ksum" | awk '{print $1}')" ]; then
		echo "nlemu's rule lists are the kernel's (${kns}1): yes"
	else
		echo "nlemu's rule lists are the kernel's (${kns}1): NO"
	fi
	for i in $(seq "$N"); do ip netns del "$kns$i"; done
fi

rules=$((N * R))
# per X: X (seconds or a count) per rule, in µs or calls.
perus() { [ "${1:--}" = - ] && { echo -; return; }; echo "scale=2; $1 * 1000000 / $rules" | bc; }
percall() { [ "${1:--}" = - ] && { echo -; return; }; echo "scale=2; $1 / $rules" | bc; }
echo
echo "$N namespaces x $R rules; floor $floor us per round trip (hack/floor.sh)"
printf '%-6s %-6s %9s %8s %7s | %-28s | %-28s\n' family side "wall (s)" "us/rule" "x floor" "clients us/rule usr sys sysc" "server us/rule cpu syscalls"
for v in 4 6; do
	for side in nlemu kernel; do
		k=$side$v
		[ -n "${wall[$k]:-}" ] || continue
		w=${wall[$k]}
		wpr=$(perus "$w")
		printf '%-6s %-6s %9s %8s %7s | %9s %9s %8s | %13s %13s\n' "IPv$v" "$side" "$w" "$wpr" \
			"$(echo "scale=2; $wpr / $floor" | bc)" "$(perus "${cu[$k]}")" "$(perus "${cs[$k]}")" "$(percall "${csc[$k]}")" \
			"$(perus "${su[$k]:--}")" "$(percall "${ssc[$k]:--}")"
	done
	if [ -n "${wall[kernel$v]:-}" ]; then
		echo "IPv$v nlemu/kernel wall: $(echo "scale=2; ${wall[nlemu$v]} / ${wall[kernel$v]}" | bc)x"
	fi
done
echo "(clients: every exec/nsenter and ip process of the loop; the kernel's rule work is in its clients' system time)"
