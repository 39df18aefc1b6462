#!/bin/sh
# Regenerates routes.golden from the running kernel (root; veth and bridge
# modules). Usage: sh capture_routes.sh > routes.golden
set -e
NS=h-rtwire-cap
here=$(dirname "$0")
ip netns del $NS 2>/dev/null || true
ip netns add $NS
trap 'ip netns del $NS' EXIT
n() { ip -n $NS "$@"; }
n link set lo up
n link add v0 type veth peer name v1     # v1 = 2, v0 = 3
n link add br0 type bridge               # 4, no ports: no carrier
n link set v0 up; n link set v1 up; n link set br0 up
ip netns exec $NS sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
n addr add 10.0.0.1/24 dev v0
n addr add 10.9.0.1/24 dev br0
n addr add 2001:db8::1/64 dev v0 nodad
n addr add 2001:db8:7::1/64 dev v1 nodad
n route add default via 10.0.0.2
n route add 10.1.0.0/16 via 10.0.0.2 metric 5 mtu 1400 advmss 1360 realm 5 src 10.0.0.1 proto static
n route add 10.2.0.0/16 dev v0 scope link table 100
n route add 10.3.0.0/16 via 10.0.0.2 table 100000
n route add blackhole 10.4.0.0/16
n route add unreachable 10.5.0.0/16 metric 7
n route add prohibit 10.6.0.0/16
n route add throw 10.7.0.0/16 table 100
n route add 10.8.0.0/16 nexthop via 10.0.0.2 weight 2 nexthop via 10.0.0.3 realm 7 nexthop dev v1
n route add 10.10.0.0/16 via 10.0.0.2 tos 0x10
n route add 10.11.0.0/16 via 10.99.0.1 dev v0 onlink
n route add 10.12.0.0/16 dev br0
n route add 10.14.0.0/16 via inet6 2001:db8::2 dev v0
n route add 10.15.0.0/16 via 10.0.0.2 mtu lock 1280 window 9000 rtt 20ms rttvar 5ms ssthresh 10 cwnd 7 hoplimit 33 initcwnd 11 initrwnd 12 features ecn quickack 1 congctl reno fastopen_no_cookie 1 rto_min 30ms reordering 4
n route add local 10.16.0.1 dev v0
n route add broadcast 10.16.0.255 dev v0 table local
n route add multicast 239.1.0.0/16 dev v0 table local
n route add anycast 10.17.0.0/16 dev v0 table local
n route add 10.18.0.0/16 via 10.0.0.2 proto 0 table 300
n -6 route add 2001:db8:1::/64 via 2001:db8::2 metric 100 mtu 1300 pref high
n -6 route add 2001:db8:2::/64 dev v0 proto static
n -6 route add 2001:db8:3::/64 nexthop via 2001:db8::2 weight 3 nexthop via 2001:db8::3
n -6 route add 2001:db8:4::/64 from 2001:db8:aa::/64 dev v0
n -6 route add blackhole 2001:db8:5::/64
n -6 route add unreachable 2001:db8:5:1::/64
n -6 route add prohibit 2001:db8:5:2::/64
n -6 route add 2001:db8:6::/64 dev v0 expires 3000
n -6 route add 2001:db8:8::/64 via fe80::1 dev v0 table 300 pref low
n -6 route add 2001:db8:9::/64 via 2001:db8::2 src 2001:db8::1 hoplimit 9 congctl reno
n -6 route add 2001:db8:a::/64 dev br0
n nexthop add id 5 via 10.0.0.2 dev v0
n nexthop add id 9 via 10.0.0.3 dev v0
n nexthop add id 8 group 5,2/9
n nexthop add id 6 via 2001:db8::2 dev v0
n nexthop add id 10 via 2001:db8::3 dev v0
n nexthop add id 11 group 6/10
n route add 10.40.0.0/16 nhid 5
n route add 10.41.0.0/16 nhid 8
n -6 route add 2001:db8:40::/64 nhid 6
n -6 route add 2001:db8:41::/64 nhid 11
n link add v2 type veth peer name v3     # v3 down: v2 has no carrier
n link set v2 up
n addr add 10.44.0.1/24 dev v2
n -6 addr add 2001:db8:44::1/64 dev v2 nodad
n route add 10.43.0.0/16 dev v2
n route add 10.45.0.0/16 nexthop via 10.44.0.2 nexthop via 10.0.0.2
n -6 route add 2001:db8:43::/64 dev v2
n route add 10.42.0.0/16 encap ip id 5 dst 10.0.0.9 dev v0
n route add 10.46.0.0/16 nexthop encap ip id 7 dst 10.0.0.8 via 10.0.0.2 nexthop via 10.0.0.3 realm 2
n -6 route add 2001:db8:42::/64 encap ip6 id 5 dst 2001:db8::9 dev v0
sleep 3 # IPv6 link-local addresses and their routes settle (DAD) before the notification cases
ip netns exec $NS python3 "$here/capture_routes.py"
