#!/usr/bin/env bash
# hack/peer-suite.sh: run a real peer test suite, unmodified, under nlemu
# without root (issue 11): vishvananda/netlink's own rule and route tests
# (`go test -run 'Rule|Route'` of the module at the version go.mod pins),
# built static (CGO_ENABLED=0) and run inside `unshare -r` (its tests want
# uid 0 and call netns.New() per test), once on the kernel (`unshare -r -n`)
# and once under `nlemu exec --seccomp` against a server of the same user.
# As root, both runs (and the server) drop to uid/gid 65534 with setpriv.
# Prints pass/fail/skip counts of both runs (top-level tests and subtests),
# then every top-level test that passes on the kernel and not under nlemu
# (and the reverse), with the lines it logged.
#
#   hack/peer-suite.sh [-run REGEXP] [-count N] [-gomaxprocs N] [-strace-kernel] [-trace] [-keep]
#
# -count N runs the tests N times on each side (go test -count).
# -gomaxprocs N sets GOMAXPROCS for the test binary on both sides (not for
# nlemu's supervisor).
# NLEMU=/path/to/nlemu uses that binary instead of building ./cmd/nlemu.
# -trace runs both sides with -test.trace and prints, per side, how often
# TestRuleListFiltered's goroutines moved to another OS thread (so to
# another network namespace) and how they had left their thread
# (hack/trace-moves.py).
# With /usr/bin/time installed it ends with the context switches (sleeps
# and preemptions) of the supervisor, the test binary and the server while
# the nlemu side ran, in all and per socket().
# -strace-kernel runs the kernel side under `strace -f`, which makes every
# system call slow as nlemu's are: TestRuleListFiltered's subtests then
# fail on the kernel too (they run on goroutines that are not locked to
# the thread setUpNetlinkTest moved into the test's namespace, so a slow
# system call lets them resume on a thread in another namespace).
set -euo pipefail
run='Rule|Route'
keep=0
pin=0
count=1
gmp=()
kstrace=()
trace=0
while [ $# -gt 0 ]; do
	case "$1" in
	-run) run="$2"; shift 2 ;;
	-count) count="$2"; shift 2 ;;
	-gomaxprocs) gmp=(env GOMAXPROCS="$2"); shift 2 ;;
	-strace-kernel) kstrace=(strace -f -qq -o /dev/null); shift ;;
	-keep) keep=1; shift ;;
	-trace) trace=1; shift ;;
	-pin-rule-subtests) pin=1; shift ;;
	*) echo "usage: $0 [-run REGEXP] [-count N] [-gomaxprocs N] [-strace-kernel] [-pin-rule-subtests] [-trace] [-keep]" >&2; exit 2 ;;
	esac
done
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
ver=$(go list -m -f '{{.Version}}' github.com/vishvananda/netlink)
src=$(go env GOMODCACHE)/github.com/vishvananda/netlink@$ver
[ -d "$src" ] || go mod download github.com/vishvananda/netlink
work=$(mktemp -d /tmp/nlemu-peer-XXXXXX)
chmod 755 "$work"
srv=
cleanup() {
	[ -n "$srv" ] && kill "$srv" 2>/dev/null && wait "$srv" 2>/dev/null
	if [ $keep = 1 ]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

cp -r "$src" "$work/netlink"
chmod -R u+w "$work/netlink"
if [ $pin = 1 ]; then
	# For diagnosis only, never the measured run: TestRuleListFiltered's
	# subtest goroutines lock their thread and enter the test's namespace
	# (setUpNetlinkTest's, which only the test's own goroutine is in), so
	# a goroutine moving to another thread cannot change namespace.
	cat >"$work/netlink/zz_pin_test.go" <<'PIN'
package netlink

import (
	"runtime"

	"github.com/vishvananda/netns"
)

var ruleTestNS netns.NsHandle

func pinRuleTest() {
	runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
	if err := netns.Set(ruleTestNS); err != nil {
		panic(err)
	}
}
PIN
	sed -i -e 's/^\tdefer setUpNetlinkTest(t)()$/&; ruleTestNS, _ = netns.Get()/' \
		-e 's/^func runRuleListFiltered(.*{$/&\n\tpinRuleTest()/' \
		-e 's/^\t\tt.Run(tt.name, func(t \*testing.T) {$/&\n\t\t\tpinRuleTest()/' "$work/netlink/rule_test.go"
	sed -i 's#^\t"golang.org/x/sys/unix"$#&\n\t"github.com/vishvananda/netns"#' "$work/netlink/rule_test.go"
	grep -c pinRuleTest "$work/netlink/rule_test.go" | sed 's/^/pinned subtest functions: /'
fi
(cd "$work/netlink" && CGO_ENABLED=0 go test -c -o "$work/netlink.test" .)
if [ -n "${NLEMU:-}" ]; then cp "$NLEMU" "$work/nlemu"; else go build -o "$work/nlemu" ./cmd/nlemu; fi

runas=()
if [ "$(id -u)" = 0 ]; then
	runas=(setpriv --reuid=65534 --regid=65534 --clear-groups --)
	chown 65534:65534 "$work"
fi
mkdir -p "$work/sock"
[ "$(id -u)" = 0 ] && chown 65534:65534 "$work/sock"
chmod 700 "$work/sock"
sock="$work/sock/nlemu.sock"

echo "vishvananda/netlink $ver: go test -run '$run' -count $count inside unshare -r, as $( [ ${#runas[@]} -gt 0 ] && echo 'uid 65534' || id -un)${gmp:+, ${gmp[1]:-}}${kstrace:+, kernel side under strace -f}$( [ $pin = 1 ] && echo ', TestRuleListFiltered subtests pinned (diagnosis)')"
cd "$work"
ktrace=() ntrace=()
if [ $trace = 1 ]; then ktrace=(-test.trace "$work/kernel.trace"); ntrace=(-test.trace "$work/nlemu.trace"); fi
"${runas[@]}" unshare -r -n "${kstrace[@]}" "${gmp[@]}" ./netlink.test -test.run "$run" -test.count "$count" -test.v "${ktrace[@]}" >kernel.txt 2>&1 || true
"${runas[@]}" ./nlemu serve --socket "$sock" 2>server.txt &
srv=$!
for _ in $(seq 200); do [ -S "$sock" ] && break; sleep 0.05; done
mkdir -p "$work/home"
[ "$(id -u)" = 0 ] && chown 65534:65534 "$work/home"
# Inside unshare -r the user is "root" of its own user namespace: nlemu's
# caches go under a home of its own.
# Context switches (how often each side's threads slept, and were
# preempted) while the nlemu side ran: the supervisor's (nlemu exec's own,
# /usr/bin/time's figure of it and its children less the test binary's),
# the test binary's, and the server's (its threads' counts in /proc).
srvcs() { cat /proc/"$srv"/task/*/status 2>/dev/null | awk '/^voluntary_ctxt/ {v += $2} /^nonvoluntary_ctxt/ {n += $2} END {print v + 0, n + 0}'; }
otime=() itime=()
if [ -x /usr/bin/time ]; then
	otime=(/usr/bin/time -f '%w %c' -o "$work/sock/cs-outer")
	itime=(/usr/bin/time -f '%w %c' -o "$work/sock/cs-test")
fi
cs0=$(srvcs)
"${runas[@]}" "${otime[@]}" env NLEMU_SOCKET="$sock" NLEMU_EXEC_STATS="$work/sock/exec-stats.json" HOME="$work/home" XDG_CACHE_HOME="$work/home/.cache" unshare -r ./nlemu exec --seccomp -n default -- "${itime[@]}" "${gmp[@]}" ./netlink.test -test.run "$run" -test.count "$count" -test.v "${ntrace[@]}" >nlemu.txt 2>&1 || true
cs1=$(srvcs)

count() { # file level(top|all) verdict
	local pat='^--- '
	[ "$2" = all ] && pat='^ *--- '
	grep -cE "$pat$3: " "$1" || true
}
printf '%-8s %8s %8s %12s %12s\n' "" kernel nlemu "kernel(all)" "nlemu(all)"
for v in PASS FAIL SKIP; do
	printf '%-8s %8s %8s %12s %12s\n' "$v" "$(count kernel.txt top $v)" "$(count nlemu.txt top $v)" "$(count kernel.txt all $v)" "$(count nlemu.txt all $v)"
done
# Top-level tests only: subtests run on goroutines of their own, on
# whichever OS thread (in whichever namespace an earlier test left it:
# setUpNetlinkTest locks only the test's own thread), so which subtests
# pass varies from run to run on the kernel too.
# With -count N a test is PASS when all its runs passed, SKIP when all
# were skipped, FAIL otherwise; the table shows passes/runs.
verdicts() {
	sed -nE 's/^--- (PASS|FAIL|SKIP): ([^ ]+) .*/\2 \1/p' "$1" | sort -s -k1,1 |
		awk '{n[$1]++; c[$1, $2]++; if (!($1 in o)) {o[$1]; k[++m] = $1}}
		END {for (i = 1; i <= m; i++) {t = k[i]
			v = c[t, "PASS"] == n[t] ? "PASS" : (c[t, "SKIP"] == n[t] ? "SKIP" : "FAIL")
			print t, v, c[t, "PASS"] + 0 "/" n[t]}}'
}
verdicts kernel.txt >kernel.v
verdicts nlemu.txt >nlemu.v
echo "per test (passes/runs):"
join -a1 -a2 -e - -o 0,1.2,1.3,2.2,2.3 kernel.v nlemu.v | awk '{printf "  %-32s kernel %-4s %-6s nlemu %-4s %s\n", $1, $2, $3, $4, $5}'
lost=$(join kernel.v nlemu.v | awk '$2 == "PASS" && $4 != "PASS" {print $1}')
gained=$(join kernel.v nlemu.v | awk '$2 != "PASS" && $4 == "PASS" {print $1}')
echo "pass on the kernel, not under nlemu: $(echo $lost | wc -w)"
for t in $lost; do
	echo "== $t"
	awk -v t="$t" '$0 ~ "^=== (RUN|NAME|CONT) +"t"$" {on=1; next} /^(=== |--- )/ {on=0} on' nlemu.txt | head -5
done
echo "pass under nlemu, not on the kernel: $(echo $gained | wc -w)"
for t in $gained; do
	echo "== $t (kernel: $(grep -m1 -E "^ *--- [A-Z]+: $t " kernel.txt | sed -E 's/ *--- ([A-Z]+).*/\1/'))"
	awk -v t="$t" '$0 ~ "^=== (RUN|NAME|CONT) +"t"$" {on=1; next} /^(=== |--- )/ {on=0} on' kernel.txt | head -3
done
echo "namespaces left on the server: $(NLEMU_SOCKET="$sock" "${runas[@]}" ./nlemu netns list | tr '\n' ' ')"
echo "supervisor notifications (all runs): $(cat "$work/sock/exec-stats.json" 2>/dev/null)"
if [ -s "$work/sock/cs-outer" ] && [ -s "$work/sock/cs-test" ]; then
	# the last line: a failing test adds "Command exited with non-zero status" before it
	read -r ov oc <<<"$(tail -1 "$work/sock/cs-outer")"
	read -r tv tc <<<"$(tail -1 "$work/sock/cs-test")"
	read -r sv0 sn0 <<<"$cs0"
	read -r sv1 sn1 <<<"$cs1"
	socks=$(sed -nE 's/.*"socket":([0-9]+).*/\1/p' "$work/sock/exec-stats.json" 2>/dev/null)
	awk -v s="${socks:-0}" -v ev=$((ov - tv)) -v ec=$((oc - tc)) -v tv="$tv" -v tc="$tc" -v sv=$((sv1 - sv0)) -v sn=$((sn1 - sn0)) 'BEGIN {
		printf "context switches under nlemu, slept/preempted (per socket() of %d): supervisor %d/%d (%.1f/%.1f), test binary %d/%d (%.1f/%.1f), server %d/%d (%.1f/%.1f)\n",
			s, ev, ec, s ? ev / s : 0, s ? ec / s : 0, tv, tc, s ? tv / s : 0, s ? tc / s : 0, sv, sn, s ? sv / s : 0, s ? sn / s : 0}'
fi
if [ $trace = 1 ]; then
	for side in kernel nlemu; do
		echo "$side: TestRuleListFiltered's goroutines (go tool trace)"
		go tool trace -d=parsed "$work/$side.trace" >"$work/$side.parsed" 2>&1
		python3 "$root/hack/trace-moves.py" "$work/$side.parsed" RuleListFiltered | sed 's/^/  /'
		rm -f "$work/$side.parsed"
	done
fi
