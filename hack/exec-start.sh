#!/bin/sh
# exec-start.sh: what `nlemu exec` adds to the start of a process, measured
# against a plain exec of the same program in the same run.
#
#   hack/exec-start.sh [-N COUNT] [--nlemu PATH] [--before PATH] [--cmd PROG]
#
# Starts a throwaway server (nlemu serve on a private socket) with one
# namespace, then starts PROG (default /bin/true) COUNT times (default 1000)
# per variant, in rounds of 100 that alternate between the variants so that
# machine noise hits all alike:
#   plain:      PROG
#   env:        PROG with the environment `nlemu env` prints (the shim
#               loaded, no nlemu process: the shim's own start cost)
#   exec:       nlemu exec -n x -- PROG (the fast path, execfast_cgo.go)
#   execgo:    nlemu exec --preload -n x -- PROG (an argument the fast path
#               leaves to Go: the Go path, for comparison)
#   before:     --before PATH: another nlemu binary's exec (e.g. one built
#               from an older commit), same arguments as exec
# and prints the mean wall time per start and the difference to plain.
# With perf installed it also prints CPU time per start (perf stat
# task-clock: the process and its children, user and system), which a
# loaded machine disturbs much less than wall time.
# The figure the issue asks for is exec - plain (target: 0.5 ms or less).
set -eu
N=1000
NLEMU=
BEFORE=
CMD=/bin/true
while [ $# -gt 0 ]; do
	case "$1" in
	-N) N=$2; shift 2 ;;
	--nlemu) NLEMU=$2; shift 2 ;;
	--before) BEFORE=$2; shift 2 ;;
	--cmd) CMD=$2; shift 2 ;;
	*) echo "usage: $0 [-N COUNT] [--nlemu PATH] [--before PATH] [--cmd PROG]" >&2; exit 2 ;;
	esac
done
dir=$(mktemp -d)
spid=
trap '[ -z "$spid" ] || kill "$spid" 2>/dev/null; rm -rf "$dir"' EXIT INT TERM
if [ -z "$NLEMU" ]; then
	(cd "$(dirname "$0")/.." && go build -o "$dir/nlemu" ./cmd/nlemu)
	NLEMU=$dir/nlemu
fi
sock=$dir/s.sock
"$NLEMU" serve --socket "$sock" >"$dir/serve.log" 2>&1 &
spid=$!
i=0
until "$NLEMU" netns --socket "$sock" list >/dev/null 2>&1; do
	i=$((i + 1)); [ $i -lt 100 ] || { echo "server did not start" >&2; exit 1; }
	sleep 0.05
done
"$NLEMU" netns --socket "$sock" add x
"$NLEMU" env --socket "$sock" -n x >"$dir/env"
# the first exec builds/verifies the shim and writes the fast path's record
"$NLEMU" exec --socket "$sock" -n x -- "$CMD"
[ -z "$BEFORE" ] || "$BEFORE" exec --socket "$sock" -n x -- "$CMD"

variants="plain env exec execgo"
[ -z "$BEFORE" ] || variants="$variants before"
run1() {
	case "$1" in
	plain) "$CMD" ;;
	env) (. "$dir/env"; exec "$CMD") ;;
	exec) "$NLEMU" exec --socket "$sock" -n x -- "$CMD" ;;
	execgo) "$NLEMU" exec --preload --socket "$sock" -n x -- "$CMD" ;;
	before) "$BEFORE" exec --socket "$sock" -n x -- "$CMD" ;;
	esac
}
now() { date +%s%N; }
rounds=$(( (N + 99) / 100 ))
for v in $variants; do eval "t_$v=0"; done
r=0
while [ $r -lt $rounds ]; do
	for v in $variants; do
		t0=$(now); j=0; while [ $j -lt 100 ]; do run1 "$v"; j=$((j + 1)); done; t1=$(now)
		eval "t_$v=\$((t_$v + t1 - t0))"
	done
	r=$((r + 1))
done
n=$((rounds * 100))
echo "wall time per start ($n starts per variant; env includes a subshell):"
for v in $variants; do
	eval "t=\$t_$v"
	awk -v v="$v" -v n=$n -v t="$t" -v p="$t_plain" 'BEGIN { printf "  %-8s %8.1f us  (%+.1f us over plain)\n", v, t / n / 1000, (t - p) / n / 1000 }'
done
if command -v perf >/dev/null 2>&1; then
	echo "CPU time per start (perf stat -r $n -e task-clock):"
	. "$dir/env"
	for v in $variants; do
		case "$v" in
		plain) set -- env -u LD_PRELOAD -u NLEMU_SOCKET -u NLEMU_NETNS "$CMD" ;;
		env) set -- env "$CMD" ;;
		exec) set -- env -u LD_PRELOAD "$NLEMU" exec --socket "$sock" -n x -- "$CMD" ;;
		execgo) set -- env -u LD_PRELOAD "$NLEMU" exec --preload --socket "$sock" -n x -- "$CMD" ;;
		before) set -- env -u LD_PRELOAD "$BEFORE" exec --socket "$sock" -n x -- "$CMD" ;;
		esac
		perf stat -r "$n" -x, -e task-clock "$@" 2>&1 >/dev/null | awk -F, -v v="$v" '$3 == "task-clock" { printf "  %-8s %8.1f us (+-%s; each includes env(1))\n", v, $1 * 1000, $4 }'
	done
fi
