#!/usr/bin/env bash
# Regenerates the committed fuzz seeds (testdata/fuzz/FuzzX/ip-* and
# shim-*) from real traffic: the requests `ip` sends to the kernel for a
# list of link, address, route and rule commands (in a scratch kernel
# namespace, captured with strace -e write=FD), and the datagrams the
# preload shim sends to nlemu for `nlemu exec -- ip ...` and the nlemu
# control commands (HELLO, socket options, bind, netns, stats). Needs root,
# strace and python3:
#
#   hack/fuzz-seeds.sh
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
work=$(mktemp -d)
kns=fz-seed-$$
server=
cleanup() {
	[ -n "$server" ] && kill "$server" 2>/dev/null && wait "$server" 2>/dev/null
	ip netns del "$kns" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT

cat >"$work/cmds.txt" <<'CMDS'
link add v0 type veth peer name v1
link set v0 up
link set v1 up
link set v0 mtu 1400
link add br0 type bridge
link set v1 master br0
link set v1 nomaster
link set dev v0 address 02:00:00:00:00:01
link set v0 txqueuelen 500
link show
link show dev v0
-d link show type veth
addr add 10.0.0.1/24 dev v0
addr add 10.0.0.2/24 brd + dev v0 label v0:1
addr add 2001:db8::1/64 dev v0
-6 addr add 2001:db8:1::1/64 dev v0 valid_lft 100 preferred_lft 50 nodad
addr add 10.7.0.1 peer 10.7.0.2 dev v0
addr show
-4 addr show dev v0
addr replace 10.0.0.1/24 dev v0 metric 10
addr del 10.0.0.2/24 dev v0
route add 10.1.0.0/16 via 10.0.0.254
route add 10.2.0.0/16 nexthop via 10.0.0.253 weight 1 nexthop via 10.0.0.252 weight 2
-6 route add 2001:db8:2::/48 dev v0 metric 10
route add blackhole 10.9.0.0/16 table 100
route add 10.5.0.0/16 dev v0 mtu 1300 proto static scope link
route add prohibit 10.6.0.0/16 metric 7
route replace 10.1.0.0/16 via 10.0.0.250 src 10.0.0.1
-6 route add 2001:db8:3::/48 nexthop via 2001:db8::2 dev v0 nexthop via 2001:db8::3 dev v0
route get 10.1.2.3
route get 10.1.2.3 from 10.0.0.1 iif v0
-6 route get 2001:db8:2::5
route get fibmatch 10.1.2.3
route show
route show table all
-6 route show
route del 10.5.0.0/16 dev v0
route flush table 100
rule add from 10.3.0.0/16 table 6 pref 100
-6 rule add to 2001:db8::/32 table 7 pref 200
rule add fwmark 0x10/0xff lookup 7 pref 300
rule add iif lo uidrange 100-200 lookup 8
rule add sport 1000-2000 dport 80 ipproto tcp table 9
rule add pref 50 goto 100
rule add not from all tos 0x10 prohibit
rule show
-6 rule show
rule del pref 100
link set v0 name v9
link set v9 down
addr flush dev v9
link del br0
link del v9
CMDS

# The kernel's side: what ip sends (ip's own failures, e.g. a route get
# with no route, still sent their request).
ip netns add "$kns"
i=0
while read -r line; do
	i=$((i + 1))
	# shellcheck disable=SC2086
	strace -e trace=sendmsg,sendto -e write=3,4,5 -o "$work/ip-$(printf %02d $i).strace" \
		ip -n "$kns" $line >/dev/null 2>&1 || true
done <"$work/cmds.txt"

# nlemu's side: what the shim sends, the same commands through nlemu exec.
bin=$work/nlemu
go build -o "$bin" ./cmd/nlemu
export NLEMU_SOCKET=$work/n.sock
"$bin" serve --socket "$NLEMU_SOCKET" 2>"$work/serve.log" &
server=$!
for _ in $(seq 50); do [ -S "$NLEMU_SOCKET" ] && break; sleep 0.1; done
"$bin" netns add fzs
tr='-f -e trace=sendmsg,sendto,write -e write=all'
i=0
while read -r line; do
	i=$((i + 1))
	case $i in 1|2|13|15|22|23|29|33|38|41|46) ;; *) continue ;; esac
	# shellcheck disable=SC2086
	strace $tr -o "$work/shim-$(printf %02d $i).strace" "$bin" exec -n fzs -- ip $line >/dev/null 2>&1 || true
done <"$work/cmds.txt"
# shellcheck disable=SC2086
strace $tr -o "$work/shim-netns-add.strace" "$bin" netns add fzt >/dev/null
# shellcheck disable=SC2086
strace $tr -o "$work/shim-netns-list.strace" "$bin" netns list >/dev/null
# shellcheck disable=SC2086
strace $tr -o "$work/shim-stats.strace" "$bin" stats >/dev/null
# shellcheck disable=SC2086
strace $tr -o "$work/shim-netns-del.strace" "$bin" netns del fzt >/dev/null
# shellcheck disable=SC2086
timeout 1 strace $tr -o "$work/shim-monitor.strace" "$bin" exec -n fzs -- ip monitor link >/dev/null 2>&1 || true

python3 "$root/hack/fuzz-seeds.py" "$root" "$work"
