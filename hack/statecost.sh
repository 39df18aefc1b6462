#!/usr/bin/env bash
# What durable state costs under the load test: runs `nlemu load` without
# --state and then with it under every --fsync policy (one fresh state
# directory per run, on the disk that holds $TMPDIR), back to back, ROUNDS
# times, and prints each run's wall time and its ratio to the run without,
# per family:
#
#   hack/statecost.sh [ROUNDS] [LOAD FLAGS...]     e.g. hack/statecost.sh 3 --netns 512
#
# Each line also gives the server's CPU per rule in both runs (user and
# system, the load's server_*_us_per_rule: every thread of the embedded
# server, the journal's flusher and page faults included), which depends
# less than the wall time on what else the machine runs.
#
# Extra flags go to every run. POLICIES (default "default group none
# always") chooses the policies; `default` gives no --fsync at all, so
#
#   POLICIES=default hack/statecost.sh 3 --netns 512
#
# is issue 10's acceptance line exactly (`nlemu load --netns 512` with
# `--state DIR` against without, at the default policy), three times. Each
# line ends with the 1-minute load average when the pair finished: on a
# busy machine the figures are indicative only. `always` makes every change wait for its
# own fdatasync, one at a time across the whole server (512 x 1,024 rules
# would take about 525,000 fdatasync latencies: minutes to an hour), so it
# runs with --rules $ALWAYS_RULES (default 16) against a run without state
# of the same size, printed on its own line.
set -euo pipefail

rounds=${1:-3}
case "$rounds" in ''|*[!0-9]*|0) echo "usage: $0 [ROUNDS] [nlemu load flags...]" >&2; exit 2;; esac
shift || true
policies=${POLICIES:-default group none always}
always_rules=${ALWAYS_RULES:-16}
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=$work/nlemu
go build -o "$bin" ./cmd/nlemu

# report ROUND LABEL WITHOUT_JSON WITH_JSON: one line per family.
report() {
	python3 - "$@" <<'PY'
import json, sys
r, label, a, b = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
load = open("/proc/loadavg").read().split()[0]
for x, y in zip(a["runs"], b["runs"]):
    cpu = lambda z: z.get("server_user_us_per_rule", 0) + z.get("server_sys_us_per_rule", 0)
    print(f"round {r} IPv{x['family']} {label:>8} ({b['netns']} x {b['rules']}): without {x['wall_s']:.3f}s, with --state {y['wall_s']:.3f}s: {y['wall_s']/x['wall_s']:.2f}x"
          f" (server CPU {cpu(x):.2f} / {cpu(y):.2f} us per rule; load {load})")
PY
}

for r in $(seq "$rounds"); do
	without=$("$bin" load --json "$@")
	small=""
	for p in $policies; do
		extra=()
		base=$without
		if [ "$p" = always ]; then
			extra=(--rules "$always_rules")
			if [ -z "$small" ]; then
				small=$("$bin" load --json "$@" "${extra[@]}")
			fi
			base=$small
		fi
		fsync=(--fsync "$p")
		if [ "$p" = default ]; then
			fsync=() # the acceptance's command: the policy nlemu load defaults to
		fi
		with=$("$bin" load --json "$@" "${extra[@]}" --state "$work/state-$r-$p" "${fsync[@]}" 2>"$work/stderr-$r-$p")
		rm -rf "$work/state-$r-$p"
		report "$r" "$p" "$base" "$with"
		grep '^state ' "$work/stderr-$r-$p" | sed "s/^/    /" || true
	done
done
