#!/usr/bin/env bash
# The seed's IPv4 loop (N namespaces, 1,024 `rule add from all table i`
# each, one `ip -batch` per namespace, all at once) against `nlemu serve`
# once per event-loop scheduling mode (docs/PROTOCOL.md, "Loop
# scheduling"), the modes alternating for R rounds, a fresh server each
# time:
#
#   hack/loopsched-ab.sh [-n N] [-r R] [MODE...]   (default: -n 64 -r 2 off fifo)
#
# Per run: wall time, the clients' user and system CPU per rule and their
# voluntary (blocked in a receive) and involuntary (preempted) context
# switches per rule, each client's own getrusage through GNU time (no perf
# counters on the clients: they make every context switch dearer), and the
# server's CPU per rule (/proc/<pid>/stat). Every namespace's last one is
# checked for its 1,027 rules.
set -euo pipefail
N=64 R=2
while getopts n:r: o; do
	case $o in
	n) N=$OPTARG ;;
	r) R=$OPTARG ;;
	*) echo "usage: $0 [-n N] [-r R] [MODE...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
modes=("$@")
[ ${#modes[@]} -gt 0 ] || modes=(off fifo)
[ -x /usr/bin/time ] || { echo "$0: needs GNU time (/usr/bin/time)" >&2; exit 2; }
cd "$(dirname "$0")/.."
work=$(mktemp -d)
bin=$work/nlemu
go build -o "$bin" ./cmd/nlemu
export NLEMU_SOCKET=$work/nlemu.sock
printf 'rule add from all table %d\n' $(seq 1024) >"$work/rules.txt"
server=
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
rules=$((N * 1024))
for round in $(seq "$R"); do
	for mode in "${modes[@]}"; do
		rm -f "$NLEMU_SOCKET"
		"$bin" serve --socket "$NLEMU_SOCKET" --loop-sched "$mode" 2>"$work/serve.log" &
		server=$!
		for _ in $(seq 50); do [ -S "$NLEMU_SOCKET" ] && break; sleep 0.1; done
		"$bin" exec -- true
		for i in $(seq "$N"); do "$bin" netns add "ns-$i"; done
		rm -f "$work"/ru.*
		s0=$(awk '{print $14 + $15}' "/proc/$server/stat")
		t0=$(date +%s.%N)
		for i in $(seq "$N"); do
			/usr/bin/time -f '%U %S %w %c' -o "$work/ru.$i" "$bin" exec -n "ns-$i" -- ip -4 -batch "$work/rules.txt" &
		done
		wait $(jobs -p | grep -vx "$server")
		t1=$(date +%s.%N)
		s1=$(awk '{print $14 + $15}' "/proc/$server/stat")
		ok=$("$bin" exec -n "ns-$N" -- ip rule show | wc -l)
		[ "$ok" = 1027 ] || echo "ns-$N: $ok rules, want 1027" >&2
		cat "$work"/ru.* | awk -v m="$mode" -v r="$round" -v R="$rules" -v w="$(echo "$t1 - $t0" | bc)" \
			-v s="$(echo "($s1 - $s0) / $(getconf CLK_TCK)" | bc -l)" -v load="$(cut -d' ' -f1 /proc/loadavg)" \
			'{u += $1; y += $2; v += $3; c += $4}
			END {printf "round %d %-5s wall %7.2f s | clients usr %5.1f sys %5.1f us/rule, blocked %.3f preempted %.3f per rule | server %5.1f us/rule | total %5.1f us/rule | load %s\n",
				r, m, w, u * 1e6 / R, y * 1e6 / R, v / R, c / R, s * 1e6 / R, (u + y + s) * 1e6 / R, load}'
		kill "$server"
		wait "$server" 2>/dev/null || true
		server=
	done
done
