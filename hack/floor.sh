#!/usr/bin/env bash
# Builds and runs hack/floor/floor.c: the AF_UNIX SOCK_SEQPACKET
# request/response floor on this machine (one pair on one CPU, then 4, 16
# and 64 pairs on all CPUs, aggregate µs per round trip). Every load figure
# (hack/loadtest.sh, hack/routeload.sh, `nlemu load --driver ip`) is given
# as a ratio to it, measured in the same run.
#
#   hack/floor.sh [-n ROUNDS] [-p PAIRS]...
#   hack/floor.sh --us        one number: µs per round trip with 16 pairs
set -euo pipefail
cd "$(dirname "$0")"
out=${FLOOR_BIN:-${TMPDIR:-/tmp}/nlemu-floor-$(id -u)}
if [ ! -x "$out" ] || [ floor/floor.c -nt "$out" ]; then
	${CC:-cc} -O2 -Wall -o "$out.tmp" floor/floor.c && mv "$out.tmp" "$out"
fi
if [ "${1:-}" = "--us" ]; then
	"$out" -n 100000 -p 16 | awk '/^pairs 16/ {print $5}'
	exit
fi
exec "$out" "$@"
