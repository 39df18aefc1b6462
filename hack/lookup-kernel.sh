#!/usr/bin/env bash
# The kernel beside nlemu for issue 9's lookup fast paths: builds the same
# N-route main table per family (default 40,000 random prefixes, each
# `dev lo`) in a fresh kernel namespace and in nlemu, and measures the
# RTM_GETROUTE rate on one socket (one request, one reply at a time) with
# no custom rule and with K non-matching rules (default 10: `fwmark i table
# 1000+i pref 100+i`; route gets carry mark 0) -- the part of the lookup a
# user-space client can time. nlemu answers over an in-process client and
# over its Unix socket (hack/lookupget). Prints one table:
#
#   sudo hack/lookup-kernel.sh [N [K]]
#
# Kernel namespaces are named h-lk-<family>-<pid> and deleted on exit,
# failure included. Each rate is the median of three runs of 200,000 gets;
# the runs interleave (kernel, in-process, Unix, three times), so that a
# change of the machine's load moves the kernel's figure and nlemu's alike
# and the ratios keep their meaning. The load average is printed at the
# start and the end.
set -euo pipefail

N=${1:-40000}
K=${2:-10}
case "$N$K" in *[!0-9]*) echo "usage: $0 [N [K]]" >&2; exit 2;; esac
[ "$(id -u)" = 0 ] || { echo "$0: needs root (ip netns add)" >&2; exit 2; }

cd "$(dirname "$0")/.."
work=$(mktemp -d)
made=()
cleanup() {
	for ns in "${made[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT INT TERM

go build -o "$work/lookupget" ./hack/lookupget

# The routes: IPv4 /16-/32 (mostly /24) in 1.0.0.0-223.255.255.255 without
# 10/8 and 127/8; IPv6 /32-/64 (mostly /48) under 2001::/16; one address
# inside each of the first 4,096 routes as the destinations, shuffled.
python3 - "$N" "$work" <<'PY'
import ipaddress, random, sys
n, work = int(sys.argv[1]), sys.argv[2]
for fam in (4, 6):
    rng = random.Random(fam)
    seen, dsts = set(), []
    with open(f"{work}/routes{fam}", "w") as f:
        while len(seen) < n:
            x = rng.randrange(20)
            if fam == 4:
                bits = 16 + rng.randrange(8) if x < 5 else 25 + rng.randrange(8) if x < 8 else 24
                first = rng.choice([o for o in range(1, 224) if o not in (10, 127)])
                a = ipaddress.IPv4Address(bytes([first] + [rng.randrange(256) for _ in range(3)]))
            else:
                bits = 32 + rng.randrange(16) if x < 5 else 49 + rng.randrange(16) if x < 8 else 48
                a = ipaddress.IPv6Address(bytes([0x20, 0x01] + [rng.randrange(256) for _ in range(14)]))
            p = ipaddress.ip_network(f"{a}/{bits}", strict=False)
            if p in seen:
                continue
            seen.add(p)
            f.write(f"route add {p} dev lo\n")
            if len(dsts) < 4096:
                dsts.append(str(a))
    rng.shuffle(dsts)
    with open(f"{work}/dsts{fam}", "w") as f:
        f.write("\n".join(dsts) + "\n")
PY

median3() { printf '%s\n' "$@" | sort -n | sed -n 2p; }
# rates FAMILY RULES KERNELCMD -- NLEMUARGS...: three rounds of one kernel,
# one in-process and one Unix run each, interleaved; the medians go to R.
rates() {
	local fam=$1 k=$2 i kr=() ir=() ur=()
	shift 2
	local kcmd=()
	while [ "$1" != -- ]; do kcmd+=("$1"); shift; done
	shift
	for i in 1 2 3; do
		kr+=("$("${kcmd[@]}" -mode kernel)")
		ir+=("$("${get[@]}" -mode inproc "$@")")
		ur+=("$("${get[@]}" -mode unix "$@")")
	done
	R[$fam,kernel,$k]=$(median3 "${kr[@]}")
	R[$fam,inproc,$k]=$(median3 "${ir[@]}")
	R[$fam,unix,$k]=$(median3 "${ur[@]}")
}

load0=$(cut -d' ' -f1-3 /proc/loadavg)

declare -A R
for fam in 4 6; do
	ns=h-lk-$fam-$$
	ip netns add "$ns"
	made+=("$ns")
	ip -n "$ns" link set lo up
	ip -n "$ns" -batch "$work/routes$fam"
	get=("$work/lookupget" -routes "$work/routes$fam" -dsts "$work/dsts$fam")
	rates "$fam" 0 ip netns exec "$ns" "${get[@]}" --
	for i in $(seq 0 $((K - 1))); do
		ip -n "$ns" -"$fam" rule add fwmark $((i + 1)) table $((1000 + i)) pref $((100 + i))
	done
	rates "$fam" "$K" ip netns exec "$ns" "${get[@]}" -- -rules "$K"
	ip netns del "$ns"
done

printf '\nRTM_GETROUTE on one socket, %d routes in main, gets per second (median of 3 x 200,000, interleaved)\n' "$N"
printf 'load average at the start %s, at the end %s\n' "$load0" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf '%-6s %-6s %12s %16s %14s %12s %12s\n' family rules kernel "nlemu in-proc" "nlemu unix" "inproc/kern" "unix/kern"
for fam in 4 6; do
	for k in 0 "$K"; do
		kr=${R[$fam,kernel,$k]} ir=${R[$fam,inproc,$k]} ur=${R[$fam,unix,$k]}
		printf '%-6s %-6s %12s %16s %14s %12.2f %12.2f\n' "IPv$fam" "$k" "$kr" "$ir" "$ur" \
			"$(echo "$ir / $kr" | bc -l)" "$(echo "$ur / $kr" | bc -l)"
	done
done
