#!/bin/sh
# exec-overhead.sh [N] [RUNS]: the route-get round trip of one C program
# (integration/testdata/seccomp/nlprog.c, `nlprog bench N 10.0.0.1`) three
# ways, side by side in each run:
#   kernel   the static build in a fresh kernel namespace (ip netns exec)
#   seccomp  the static build under nlemu exec (the seccomp supervisor)
#   preload  the dynamic build under nlemu exec (the LD_PRELOAD shim)
# and, for the supervised run, how many calls entered the supervisor per
# round trip (NLEMU_EXEC_STATS). Each figure is the best of RUNS runs
# (default 5) of N round trips (default 20000). Needs root (the kernel
# namespace), gcc and go. Prints one line per way and the counts.
# BEFORE=/path/to/nlemu adds a fourth way, "seccomp-before": the static
# build under that nlemu binary's exec (an older supervisor, measured in
# the same runs to compare a change side by side).
# Then each system call on its own (hack/execcalls, a static Go program:
# socket, setsockopt at SOL_NETLINK and SOL_SOCKET, bind, getsockname,
# sendto, recvfrom with and without a sender, close; a receive timed once
# its datagram is queued, the wait for it apart as "reply"), on the kernel
# and under nlemu exec --seccomp (and BEFORE), side by side in each run:
# per call the median of CALLS rounds (default N/10), the best of RUNS runs,
# and the largest p90 of the runs.
set -eu
N=${1:-20000}
RUNS=${2:-5}
root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
ns=h-exec-overhead-$$
cleanup() {
	[ -n "${srv:-}" ] && kill "$srv" 2>/dev/null || true
	ip netns del "$ns" 2>/dev/null || true
	rm -rf "$tmp"
}
# A signal (a reader of the output that went away: SIGPIPE; ^C) runs the
# cleanup too and ends the script: the kernel namespace never stays behind.
trap cleanup EXIT
trap 'cleanup; trap - EXIT; exit 1' HUP INT PIPE TERM
(cd "$root" && go build -o "$tmp/nlemu" ./cmd/nlemu && CGO_ENABLED=0 go build -o "$tmp/execcalls" ./hack/execcalls)
src=$root/integration/testdata/seccomp/nlprog.c
gcc -O2 -static -o "$tmp/nlprog-static" "$src" -lpthread
gcc -O2 -o "$tmp/nlprog-dyn" "$src" -lpthread
chmod 700 "$tmp"
"$tmp/nlemu" serve --socket "$tmp/nlemu.sock" >"$tmp/serve.log" 2>&1 &
srv=$!
i=0
while [ ! -S "$tmp/nlemu.sock" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
ip netns add "$ns"
best() { sort -n | head -1; }
each() { sed -n 's/.*: \([0-9]*\) ns each/\1/p'; }
k=""; s=""; p=""; b=""
r=0
while [ $r -lt "$RUNS" ]; do
	k="$k $(ip netns exec "$ns" "$tmp/nlprog-static" bench "$N" 10.0.0.1 | each)"
	s="$s $(NLEMU_EXEC_STATS=$tmp/stats.json "$tmp/nlemu" exec --socket "$tmp/nlemu.sock" -- "$tmp/nlprog-static" bench "$N" 10.0.0.1 | each)"
	if [ -n "${BEFORE:-}" ]; then
		b="$b $("$BEFORE" exec --socket "$tmp/nlemu.sock" -- "$tmp/nlprog-static" bench "$N" 10.0.0.1 | each)"
	fi
	p="$p $(NLEMU_SOCKET=$tmp/nlemu.sock "$tmp/nlemu" exec --socket "$tmp/nlemu.sock" -- "$tmp/nlprog-dyn" bench "$N" 10.0.0.1 | each)"
	r=$((r + 1))
done
printf 'route get round trip, best of %s runs of %s (ns):\n' "$RUNS" "$N"
printf '  kernel   %s\n' "$(echo $k | tr ' ' '\n' | best)"
printf '  seccomp  %s\n' "$(echo $s | tr ' ' '\n' | best)"
printf '  preload  %s\n' "$(echo $p | tr ' ' '\n' | best)"
[ -n "${BEFORE:-}" ] && printf '  seccomp-before  %s\n' "$(echo $b | tr ' ' '\n' | best)"
printf 'supervisor notifications of the last supervised run (%s round trips): %s\n' "$N" "$(cat "$tmp/stats.json")"
CALLS=${CALLS:-$((N / 10))}
r=0
ways="kernel seccomp"
[ -n "${BEFORE:-}" ] && ways="$ways seccomp-before"
while [ $r -lt "$RUNS" ]; do
	ip netns exec "$ns" "$tmp/execcalls" "$CALLS" | sed "s/^/kernel $r /" >>"$tmp/calls"
	"$tmp/nlemu" exec --seccomp --socket "$tmp/nlemu.sock" -- "$tmp/execcalls" "$CALLS" | sed "s/^/seccomp $r /" >>"$tmp/calls"
	if [ -n "${BEFORE:-}" ]; then
		"$BEFORE" exec --seccomp --socket "$tmp/nlemu.sock" -- "$tmp/execcalls" "$CALLS" | sed "s/^/seccomp-before $r /" >>"$tmp/calls"
	fi
	r=$((r + 1))
done
printf 'each call, median of %s rounds: best of %s runs (largest p90 of the runs), ns:\n' "$CALLS" "$RUNS"
awk -v ways="$ways" '
	# "WAY RUN CALL: median M p90 P p99 Q ns"
	{ w = $1; c = $3; sub(/:$/, "", c); m = $5; p = $7
	  if (!(c in seen)) { seen[c] = 1; order[++nc] = c }
	  k = w SUBSEP c
	  if (!(k in med) || m < med[k]) med[k] = m
	  if (!(k in p90) || p > p90[k]) p90[k] = p }
	END {
		nw = split(ways, W, " ")
		printf "  %-20s", "call"; for (i = 1; i <= nw; i++) printf " %22s", W[i]; printf "\n"
		for (j = 1; j <= nc; j++) {
			printf "  %-20s", order[j]
			for (i = 1; i <= nw; i++) { k = W[i] SUBSEP order[j]; printf " %22s", med[k] " (" p90[k] ")" }
			printf "\n"
		}
	}' "$tmp/calls"
uptime
