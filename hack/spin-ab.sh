#!/usr/bin/env bash
# Spin then block, A/B (docs/SHIM.md, docs/PROTOCOL.md "Spin then block"):
# one client doing N round trips through the shim (hack/spin/rt.c,
# NLMSG_NOOP with NLM_F_ACK: the transport alone) against a fresh `nlemu
# serve`, once per combination of the client's spin (NLEMU_SPIN_US) and the
# server's (NLEMU_LOOP_SPIN_US), the combinations alternating for R rounds:
#
#   hack/spin-ab.sh [-n N] [-r R] [-s US] [-a]    (default: -n 20000 -r 2 -s 50)
#
# -s is the window of the "on" side; -a sets NLEMU_SPIN_ALWAYS=1 (spin even
# when /proc/loadavg shows no CPU to spare: what the spin does on a shared
# machine). Per run: wall and CPU per round trip, the client's voluntary
# (blocked) and involuntary (preempted) context switches per round trip,
# the shim's spin statistics, the server's CPU per round trip
# (/proc/PID/stat) and the load average. With P clients at once (-p P) the
# figures are the clients' averages.
set -euo pipefail
N=20000 R=2 S=50 P=1 always=0
while getopts n:r:s:p:a o; do
	case $o in
	n) N=$OPTARG ;;
	r) R=$OPTARG ;;
	s) S=$OPTARG ;;
	p) P=$OPTARG ;;
	a) always=1 ;;
	*) echo "usage: $0 [-n N] [-r R] [-s US] [-p P] [-a]" >&2; exit 2 ;;
	esac
done
cd "$(dirname "$0")/.."
work=$(mktemp -d)
bin=$work/nlemu
go build -o "$bin" ./cmd/nlemu
${CC:-cc} -O2 -Wall -o "$work/rt" hack/spin/rt.c
export NLEMU_SOCKET=$work/nlemu.sock
[ "$always" = 1 ] && export NLEMU_SPIN_ALWAYS=1
server=
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null || true
	wait 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
hz=$(getconf CLK_TCK)
for round in $(seq "$R"); do
	for c in 0 "$S"; do
		for s in 0 "$S"; do
			rm -f "$NLEMU_SOCKET"
			NLEMU_LOOP_SPIN_US=$s "$bin" serve --socket "$NLEMU_SOCKET" 2>"$work/serve.log" &
			server=$!
			for _ in $(seq 50); do [ -S "$NLEMU_SOCKET" ] && break; sleep 0.1; done
			"$bin" netns add t
			s0=$(awk '{print $14 + $15}' "/proc/$server/stat")
			for i in $(seq "$P"); do
				NLEMU_SPIN_US=$c "$bin" exec -n t -- "$work/rt" "$N" >"$work/out.$i" &
			done
			wait $(jobs -p | grep -vx "$server")
			s1=$(awk '{print $14 + $15}' "/proc/$server/stat")
			cat "$work"/out.* | awk -v r="$round" -v c="$c" -v s="$s" -v P="$P" -v srv="$(echo "($s1 - $s0) * 1000000 / $hz / $N / $P" | bc -l)" \
				-v load="$(cut -d' ' -f1 /proc/loadavg)" '
				{w += $2; u += $5; v += $8; iv += $10; h += $16; m += $18; k += $20}
				END {printf "round %d client spin %3s server spin %3s | wall %7.2f us cpu %6.2f us vcsw %.3f ivcsw %.3f per rt | spin hits %d misses %d skips %d | server %6.2f us/rt | load %s\n",
					r, c, s, w / P, u / P, v / P, iv / P, h, m, k, srv, load}'
			rm -f "$work"/out.*
			kill "$server"
			wait "$server" 2>/dev/null || true
			server=
		done
	done
done
