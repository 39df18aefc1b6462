#!/usr/bin/env bash
# Runs every fuzz target of the module for SECONDS each, one after the
# other with one worker (-parallel 1), and prints per target the execs,
# the new interesting inputs and the coverage (Go's coverage bits, from
# GODEBUG=fuzzdebug=1: at the start, seeds and cached corpus, and at the
# end). Fails if any target fails; Go then writes the crashing input to
# PKG/testdata/fuzz/FuzzX/, to be fixed and committed as a corpus entry.
#
#   hack/fuzz.sh SECONDS [REGEX]    # REGEX: only the targets it matches
#
# FUZZ_LOGDIR keeps each target's full output (default: a temporary dir).
# FUZZ_PARALLEL sets -parallel (default 1).
set -uo pipefail

secs=${1:-}
case "$secs" in ''|*[!0-9]*) echo "usage: $0 SECONDS [REGEX]" >&2; exit 2;; esac
only=${2:-.}
par=${FUZZ_PARALLEL:-1}
cd "$(dirname "$0")/.."
logdir=${FUZZ_LOGDIR:-$(mktemp -d)}
mkdir -p "$logdir"

# Every "func FuzzX(f *testing.F)" in a _test.go file, as "PKGDIR NAME".
targets=$(grep -rHo --include='*_test.go' '^func Fuzz[A-Za-z0-9_]*(f \*testing\.F)' . |
	sed -E 's|^\./(.*)/[^/]*_test\.go:func (Fuzz[A-Za-z0-9_]*)\(.*|\1 \2|' | sort -u | grep -E "$only" || true)
[ -n "$targets" ] || { echo "$0: no fuzz target matches $only" >&2; exit 2; }
n=$(echo "$targets" | wc -l)
echo "fuzzing $n targets for ${secs}s each (-parallel $par), logs in $logdir"
printf '%-32s %-10s %12s %10s %8s %8s %s\n' TARGET PACKAGE EXECS EXECS/S NEW BITS RESULT

failed=0
start=$(date +%s)
while read -r pkg name; do
	log=$logdir/$name.log
	t0=$(date +%s)
	GODEBUG=fuzzdebug=1 go test -run '^$' -fuzz "^$name\$" -fuzztime "${secs}s" \
		-parallel "$par" "./$pkg" >"$log" 2>&1
	rc=$?
	t=$(( $(date +%s) - t0 ))
	last=$(grep -E '^fuzz: elapsed: .*execs: [0-9]+' "$log" | tail -1)
	execs=$(sed -nE 's/.*execs: ([0-9]+).*/\1/p' <<<"$last")
	new=$(sed -nE 's/.*new interesting: ([0-9]+).*/\1/p' <<<"$last")
	bits0=$(sed -nE 's/.*initial coverage bits: ([0-9]+).*/\1/p' "$log" | tail -1)
	bits=$(sed -nE 's/.*new interesting input.*total bits: ([0-9]+).*/\1/p' "$log" | tail -1)
	bits=${bits:-$bits0}
	result=ok
	if [ $rc -ne 0 ]; then
		failed=$((failed + 1))
		crasher=$(sed -nE 's/.*Failing input written to (testdata\/fuzz\/[^ ]*).*/\1/p' "$log" | head -1)
		result="FAIL${crasher:+ (input: $pkg/$crasher)}"
	fi
	printf '%-32s %-10s %12s %10s %8s %8s %s\n' "$name" "$pkg" "${execs:-0}" \
		"$(( ${execs:-0} / (secs > 0 ? secs : 1) ))" "${new:-0}" "${bits0:-?}->${bits:-?}" "$result"
	if [ $rc -ne 0 ]; then
		grep -E -- '--- FAIL|panic:|fuzz_test.go|_test.go:[0-9]+' "$log" | head -20 | sed 's/^/    /'
	fi
done <<<"$targets"
echo "total $(( $(date +%s) - start ))s, $failed of $n targets failed"
[ $failed -eq 0 ]
