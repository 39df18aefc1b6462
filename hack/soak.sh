#!/usr/bin/env bash
# Runs the fault test (integration/faults_test.go, TestFaultsUnderLoad) in
# rounds for MINUTES: each round loads 512 namespaces with rules and routes
# through `ip -batch` under `nlemu exec` and Go clients while it SIGKILLs ip
# mid-batch, closes sockets mid-dump, deletes namespaces in use, floods a
# listener that never reads and sends garbage; after each round it checks
# that every acknowledged change is there, nothing is half-applied,
# goroutines and descriptors are back to their baseline and the server
# answers. Needs root (the host guard is a kernel namespace), ip and a C
# compiler (the shim).
#
#   hack/soak.sh MINUTES
#
# SOAK_RACE=1 runs it under the race detector; NLEMU_FAULTS_NETNS changes
# the namespaces of a round (default 512).
set -euo pipefail

mins=${1:-}
case "$mins" in ''|*[!0-9]*|0) echo "usage: $0 MINUTES   (a whole number, at least 1)" >&2; exit 2;; esac
cd "$(dirname "$0")/.."
race=()
[ "${SOAK_RACE:-0}" = 1 ] && race=(-race)
# The go test timeout leaves room for the last round to finish.
exec go test "${race[@]}" -count=1 -timeout "$((mins + 15))m" -run '^TestFaultsUnderLoad$' -v ./integration/ \
	-faults.duration="${mins}m"
