#!/usr/bin/env bash
# Runs one `ip -batch` file against a fresh nlemu namespace and against a fresh
# kernel network namespace, and shows where the two differ.
#
# usage: hack/compare-kernel.sh [-v] BATCHFILE
#
#   -v   also print both sides' `ip rule show` / `ip -6 rule show` in full
#
# Needs root (for `ip netns add`), iproute2's ip, Go and a C compiler (nlemu
# builds its LD_PRELOAD shim on first use). Set NLEMU_BIN to an already built
# nlemu binary to skip the build. Everything it creates (server, socket,
# namespaces, temp files) is removed on exit.
#
# Compared: the batch's own stdout, stderr and exit code (`ip -force -batch`),
# then `ip rule show` and `ip -6 rule show` afterwards. Exit status: 0 when all
# of it is identical, 1 when something differs, 2 on usage or setup errors.
#
# Case files of integration/testdata/ipcases may contain "# ip-options: OPTS"
# lines (iproute2 6.1 takes -6 only on the command line, not on a batch line):
# the lines after one run as a separate `ip OPTS -force -batch` in the same
# namespaces, exactly as TestIPCases runs them (from a copy of the file in
# which the other segments' lines are blank, so line numbers stay right).
set -euo pipefail

usage() {
	echo "usage: $0 [-v] BATCHFILE" >&2
	exit 2
}

verbose=0
if [[ ${1:-} == -v ]]; then
	verbose=1
	shift
fi
[[ $# -eq 1 ]] || usage
case $1 in -h | --help) usage ;; esac
batch=$1
[[ -f $batch && -r $batch ]] || {
	echo "$0: cannot read batch file '$batch'" >&2
	exit 2
}

IP=${IP:-$(command -v ip || true)}
[[ -n $IP ]] || {
	echo "$0: iproute2 'ip' is not installed" >&2
	exit 2
}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

tmp=$(mktemp -d "${TMPDIR:-/tmp}/nlemu-compare.XXXXXX")
server_pid=
kns=
cleanup() {
	local rc=$?
	if [[ -n $server_pid ]]; then
		kill -TERM "$server_pid" 2>/dev/null || true
		wait "$server_pid" 2>/dev/null || true
	fi
	if [[ -n $kns ]]; then
		"$IP" netns del "$kns" 2>/dev/null || true
	fi
	rm -rf "$tmp"
	exit "$rc"
}
trap cleanup EXIT
trap 'exit 2' INT TERM HUP

# nlemu binary
nlemu=${NLEMU_BIN:-}
if [[ -z $nlemu ]]; then
	echo "building nlemu..." >&2
	(cd "$root" && go build -o "$tmp/nlemu" ./cmd/nlemu) || {
		echo "$0: go build ./cmd/nlemu failed" >&2
		exit 2
	}
	nlemu=$tmp/nlemu
fi

# private server
sock=$tmp/nlemu.sock
"$nlemu" serve --socket "$sock" >"$tmp/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do
	[[ -S $sock ]] && break
	kill -0 "$server_pid" 2>/dev/null || break
	sleep 0.05
done
if [[ ! -S $sock ]]; then
	echo "$0: nlemu serve did not start:" >&2
	cat "$tmp/serve.log" >&2
	exit 2
fi
nns=compare
"$nlemu" netns --socket "$sock" add "$nns" || {
	echo "$0: nlemu netns add failed" >&2
	exit 2
}

# fresh kernel namespace
kns=nlemu-cmp-$$
if ! "$IP" netns add "$kns" 2>"$tmp/netns.err"; then
	echo "$0: ip netns add $kns failed (root needed): $(cat "$tmp/netns.err")" >&2
	kns=
	exit 2
fi

on_kernel() { "$IP" -n "$kns" "$@"; }
on_nlemu() { "$nlemu" exec --socket "$sock" -n "$nns" -- "$IP" "$@"; }

# run SIDE NAME ARGS...: stdout, stderr and exit code into $tmp/SIDE.NAME.*
run() {
	local side=$1 name=$2 rc=0
	shift 2
	"on_$side" "$@" >"$tmp/$side.$name.out" 2>"$tmp/$side.$name.err" </dev/null || rc=$?
	echo "$rc" >"$tmp/$side.$name.rc"
}

same=1
compare() { # compare NAME WHAT
	local name=$1 what=$2
	if diff -u --label "kernel: $what" --label "nlemu: $what" \
		"$tmp/kernel.$name" "$tmp/nlemu.$name" >"$tmp/diff" 2>&1; then
		echo "== $what: identical"
	else
		same=0
		echo "== $what: DIFFERENT"
		cat "$tmp/diff"
	fi
}

# Segments: "OPTS|FIRST|LAST" per line; one segment without options
# when the file has no "# ip-options:" line.
awk -v OFS='|' '
	/^[ \t]*# ip-options:/ {
		if (NR > first) print opts, first, NR - 1
		opts = $0; sub(/^[ \t]*# ip-options:[ \t]*/, "", opts); sub(/[ \t]+$/, "", opts)
		first = NR; seen = 1; next
	}
	END { if (NR >= first) print opts, first, NR; if (!seen) print "PLAIN" > "/dev/stderr" }
' first=1 "$batch" >"$tmp/segments" 2>"$tmp/plain"

nseg=0
while IFS='|' read -r opts first last; do
	nseg=$((nseg + 1))
	read -r -a optv <<<"$opts" || true
	if [[ -s $tmp/plain ]]; then
		dir=. file=$batch
	else
		dir=$tmp/seg$nseg file=$(basename "$batch")
		mkdir -p "$dir"
		awk -v a="$first" -v b="$last" '{ print (NR >= a && NR <= b) ? $0 : "" }' "$batch" >"$dir/$file"
	fi
	label="ip ${opts:+$opts }-force -batch $file"
	[[ -s $tmp/plain ]] || label="$label (lines $first-$last)"
	for side in kernel nlemu; do
		rc=0
		(cd "$dir" && "on_$side" "${optv[@]}" -force -batch "$file") \
			>"$tmp/$side.batch.out" 2>"$tmp/$side.batch.err" </dev/null || rc=$?
		echo "$rc" >"$tmp/$side.batch.rc"
	done
	echo "== $label"
	for side in kernel nlemu; do
		printf -- '-- %s: exit %s\n' "$side" "$(cat "$tmp/$side.batch.rc")"
		if [[ -s $tmp/$side.batch.out ]]; then
			echo "   stdout:"
			sed 's/^/   | /' "$tmp/$side.batch.out"
		fi
		if [[ -s $tmp/$side.batch.err ]]; then
			echo "   stderr:"
			sed 's/^/   | /' "$tmp/$side.batch.err"
		fi
	done
	compare batch.rc "exit code of $label"
	compare batch.out "stdout of $label"
	compare batch.err "stderr of $label"
done <"$tmp/segments"

for side in kernel nlemu; do
	run "$side" show4 rule show
	run "$side" show6 -6 rule show
done
for n in show4 show6; do
	for side in kernel nlemu; do
		rc=$(cat "$tmp/$side.$n.rc")
		[[ $rc == 0 ]] || echo "[exit status $rc]" >>"$tmp/$side.$n.err"
		cat "$tmp/$side.$n.err" >>"$tmp/$side.$n.out"
	done
done
if ((verbose)); then
	echo "== kernel: ip rule show; ip -6 rule show"
	cat "$tmp/kernel.show4.out" "$tmp/kernel.show6.out"
	echo "== nlemu: ip rule show; ip -6 rule show"
	cat "$tmp/nlemu.show4.out" "$tmp/nlemu.show6.out"
fi
compare show4.out "ip rule show"
compare show6.out "ip -6 rule show"

if ((same)); then
	echo "IDENTICAL"
	exit 0
fi
echo "DIFFERENT"
exit 1
