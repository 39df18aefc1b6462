#!/usr/bin/env bash
# What durable state costs under the load test: runs `nlemu load` without
# and with --state (one fresh state directory per run, on the disk that
# holds $TMPDIR) back to back, ROUNDS times, and prints each pair's wall
# times and their ratio, per family:
#
#   hack/statecost.sh [ROUNDS] [LOAD FLAGS...]     e.g. hack/statecost.sh 3 --netns 512
#
# Extra flags go to both runs (--fsync goes to the second only if given as
# FSYNC=always). Every ACK waits for an fdatasync, so the cost is about
# (rules per namespace) x (one to two fdatasync latencies) against
# (namespaces x rules) / (change rate) without: measure on a quiet machine.
set -euo pipefail

rounds=${1:-3}
case "$rounds" in ''|*[!0-9]*|0) echo "usage: $0 [ROUNDS] [nlemu load flags...]" >&2; exit 2;; esac
shift || true
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
bin=$work/nlemu
go build -o "$bin" ./cmd/nlemu
for r in $(seq "$rounds"); do
	without=$("$bin" load --json "$@")
	with=$("$bin" load --json "$@" --state "$work/state-$r" --fsync "${FSYNC:-group}" 2>"$work/stderr-$r")
	rm -rf "$work/state-$r"
	python3 - "$without" "$with" "$r" <<'PY'
import json, sys
a, b, r = json.loads(sys.argv[1]), json.loads(sys.argv[2]), sys.argv[3]
for x, y in zip(a["runs"], b["runs"]):
    print(f"round {r} IPv{x['family']}: without {x['wall_s']:.3f}s, with --state {y['wall_s']:.3f}s: {y['wall_s']/x['wall_s']:.2f}x")
PY
	grep '^state ' "$work/stderr-$r" || true
done
