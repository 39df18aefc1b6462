#!/bin/sh
# Records the route requests iproute2 sends (strace -e write) for rtnl's
# TestRouteIPRequests and the fuzz seeds. Usage: sh capture_ip_requests.sh > ip_requests.txt
NS=h-rtwire-ipcap
ip netns del $NS 2>/dev/null
ip netns add $NS
trap 'ip netns del $NS' EXIT
n() { ip -n $NS "$@"; }
n link set lo up
n link add v0 type veth peer name v1
n link set v0 up; n link set v1 up
n addr add 10.0.0.1/24 dev v0
n addr add 2001:db8::1/64 dev v0 nodad
while read -r cmd; do
	[ -z "$cmd" ] && continue
	echo "cmd ip $cmd"
	# shellcheck disable=SC2086
	ip netns exec $NS strace -f -e trace=sendmsg,sendto -e write=all ip $cmd 2>&1 >/dev/null |
		awk '/^ \| [0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]  /{ x = substr($0, 11, 49); gsub(/ /, "", x); h = h x; next }
		     { if (h != "") print "raw " h; h = "" }
		     END { if (h != "") print "raw " h }'
done <<'CMDS'
route add 10.5.0.0/16 via 10.0.0.2 metric 5 mtu 1400 advmss 1360 realm 3 src 10.0.0.1 proto static
route add 10.6.0.0/16 dev v0 table 100
route add 10.7.0.0/16 via 10.0.0.2 table 100000
route replace 10.5.0.0/16 via 10.0.0.3 metric 5
route append 10.5.0.0/16 via 10.0.0.4 metric 5
route prepend 10.5.0.0/16 via 10.0.0.5 metric 5
route change 10.5.0.0/16 via 10.0.0.2 metric 5
route test 10.5.0.0/16 via 10.0.0.2
route add blackhole 10.8.0.0/16
route add unreachable 10.9.0.0/16
route add prohibit 10.10.0.0/16
route add throw 10.11.0.0/16 table 100
route add local 10.12.0.1 dev v0
route add broadcast 10.12.0.255 dev v0
route add 10.13.0.0/16 nexthop via 10.0.0.2 weight 2 nexthop via 10.0.0.3 realm 7 nexthop dev v1
route add 10.14.0.0/16 via 10.99.0.1 dev v0 onlink
route add 10.15.0.0/16 via inet6 2001:db8::2 dev v0
route add 10.16.0.0/16 via 10.0.0.2 tos 0x10 mtu lock 1280 window 9000 rtt 20ms rttvar 5ms ssthresh 10 cwnd 7 hoplimit 33 initcwnd 11 initrwnd 12 features ecn quickack 1 congctl reno fastopen_no_cookie 1 rto_min 30ms
route add 10.17.0.0/16 nhid 5
route del 10.5.0.0/16 via 10.0.0.2 metric 5
route del 10.6.0.0/16 table 100
route show
route show table all
route show table 100
route show proto static
route show dev v0
route show cache
route get 8.8.8.8
route get 10.5.1.1 from 10.0.0.1 mark 16 uid 1000 tos 0x10 ipproto tcp sport 1000 dport 80
route get 10.5.1.1 from 10.0.0.9 iif v0
route get 10.5.1.1 oif v0
route get fibmatch 10.5.1.1
route get 10.5.1.1 notify
route flush table 100
route save table main
-6 route add 2001:db8:1::/64 via 2001:db8::2 metric 100 mtu 1300 pref high
-6 route add 2001:db8:2::/64 dev v0 expires 300
-6 route add 2001:db8:3::/64 nexthop via 2001:db8::2 weight 3 nexthop via 2001:db8::3
-6 route add 2001:db8:4::/64 from 2001:db8:aa::/64 dev v0
-6 route add blackhole 2001:db8:5::/64
-6 route add 2001:db8:9::/64 via 2001:db8::2 src 2001:db8::1 hoplimit 9 congctl reno table 300
-6 route replace 2001:db8:1::/64 via 2001:db8::3 metric 100
-6 route append 2001:db8:1::/64 via 2001:db8::4 metric 100
-6 route del 2001:db8:1::/64 via 2001:db8::4 metric 100
-6 route show
-6 route show table all
-6 route get 2001:db8:1::5
-6 route get 2001:db8:1::5 from 2001:db8::1 oif v0 mark 3 uid 7 ipproto udp sport 53 dport 53
-6 route get 2001:db8:1::5 from 2001:db8::9 iif v0
-6 route get fibmatch 2001:db8:1::5
-6 route flush table 300
CMDS
