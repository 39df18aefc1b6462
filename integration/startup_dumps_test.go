package integration

// The dumps and gets a daemon or library makes when it starts (pyroute2's
// IPRoute/NDB, vishvananda/netlink, FRR zebra's startup inventory, bird,
// `ip monitor`, iproute2's show commands) must get the kernel's answer for
// the same namespace: an empty dump (NLMSG_DONE only) where the kernel has
// nothing to show, the kernel's messages where it has some (netconf of lo,
// "all" and "default"; the IPv6 address-label defaults; lo's qdisc once up;
// lo's stats), and the kernel's errno where it refuses. Before this test,
// nlemu answered EOPNOTSUPP to every one of them but link, rule, address and
// route dumps, and pyroute2's startup retried its neighbour dump forever.
//
// Each request is sent on a fresh kernel namespace and a fresh nlemu
// namespace, with lo down and after `ip link set lo up`, on a socket without
// and with NETLINK_GET_STRICT_CHK; the replies (NLMSG_DONE included) are
// compared byte for byte, port ids normalized as in the rule tests.
//
// Known gap, on purpose: once lo is up the kernel adds 127.0.0.1/8 and ::1
// and their local routes, which nlemu does not have yet (issue 8 items 2-3),
// so address and route dumps are compared with lo down only.

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nlemu/nlemu/integration/kernelns"
)

// Message types of the startup requests (include/uapi/linux/rtnetlink.h).
const (
	sdGetAddr      = 22
	sdGetRoute     = 26
	sdGetNeigh     = 30
	sdGetQdisc     = 38
	sdGetTclass    = 42
	sdGetTfilter   = 46
	sdGetAction    = 50
	sdGetMulticast = 58
	sdGetAnycast   = 62
	sdGetNeighTbl  = 66
	sdGetAddrLabel = 74
	sdGetDCB       = 78
	sdGetNetconf   = 82
	sdGetMDB       = 86
	sdGetNSID      = 90
	sdGetStats     = 94
	sdGetChain     = 102
	sdGetNexthop   = 106
	sdGetLinkProp  = 110
	sdGetVlan      = 114
	sdGetNHBucket  = 118
	sdGetTunnel    = 122

	sdAFInet   = 2
	sdAFBridge = 7
	sdAFInet6  = 10
	sdAFMPLS   = 28
	sdIPMR     = 128
	sdIP6MR    = 129
)

// sdHeaderLen is the fixed header of each reply type, so that the rendering
// lists attributes one per line.
var sdHeaderLen = map[uint16]int{
	16: 16, 20: 8, 24: 12, 28: 12, 36: 20, 40: 20, 44: 20, 48: 4, 56: 8, 60: 8, 64: 4,
	58: 8, 72: 12, 80: 4, 84: 8, 88: 4, 92: 12, 100: 20, 104: 8, 112: 8, 116: 8,
}

// sdRender shows a reply as one line per message header, one for its fixed
// header and one per top-level attribute. The join times in the
// IFA_CACHEINFO of multicast addresses (cstamp, tstamp: 1/100 s since boot)
// are not reproducible: they are zeroed and returned.
func sdRender(r Reply) ([]string, []uint32) {
	var out []string
	var stamps []uint32
	if r.Problem != "" {
		out = append(out, "PROBLEM: "+r.Problem)
	}
	ne := binary.NativeEndian
	for _, dg := range r.Datagrams {
		msgs, rest := splitMsgs(dg.B)
		for _, m := range msgs {
			switch m.Type {
			case nlmsgError, nlmsgDone:
				out = append(out, renderMsg(m, false)...)
				continue
			}
			out = append(out, fmt.Sprintf("%s flags=%#x seq=%d pid=%d len=%d", typeName(m.Type), m.Flags, m.Seq, m.Pid, nlmsgHdrLen+len(m.Payload)))
			h := sdHeaderLen[m.Type]
			if h > len(m.Payload) {
				h = len(m.Payload)
			}
			out = append(out, fmt.Sprintf("  header %x", m.Payload[:h]))
			b := m.Payload[h:]
			for len(b) >= 4 {
				l := int(ne.Uint16(b))
				if l < 4 || l > len(b) {
					break
				}
				data := append([]byte(nil), b[4:l]...)
				if m.Type == sdGetMulticast && ne.Uint16(b[2:]) == 6 && len(data) == 16 {
					stamps = append(stamps, ne.Uint32(data[8:]), ne.Uint32(data[12:]))
					clear(data[8:])
				}
				out = append(out, fmt.Sprintf("  attr %#x len %d: %x", ne.Uint16(b[2:]), l-4, data))
				b = b[min(nlmsgAlign(l), len(b)):]
			}
			if len(b) > 0 {
				out = append(out, fmt.Sprintf("  leftover %x", b))
			}
		}
		if len(rest) > 0 {
			out = append(out, fmt.Sprintf("trailing %x", rest))
		}
	}
	return out, stamps
}

// Fixed headers of the requests.
func sdNdmsg(family uint8, ifindex int32, state uint16, flags uint8) []byte {
	b := make([]byte, 12)
	b[0] = family
	binary.NativeEndian.PutUint32(b[4:], uint32(ifindex))
	binary.NativeEndian.PutUint16(b[8:], state)
	b[10] = flags
	return b
}

func sdFamily(family uint8, n int) []byte {
	b := make([]byte, n)
	b[0] = family
	return b
}

func sdTcmsg(ifindex int32, handle, parent uint32) []byte {
	b := make([]byte, 20)
	binary.NativeEndian.PutUint32(b[4:], uint32(ifindex))
	binary.NativeEndian.PutUint32(b[8:], handle)
	binary.NativeEndian.PutUint32(b[12:], parent)
	return b
}

func sdStatsMsg(family uint8, ifindex int32, mask uint32) []byte {
	b := make([]byte, 12)
	b[0] = family
	binary.NativeEndian.PutUint32(b[4:], uint32(ifindex))
	binary.NativeEndian.PutUint32(b[8:], mask)
	return b
}

func sdI32(v int32) []byte { return binary.NativeEndian.AppendUint32(nil, uint32(v)) }

// sdRequest is one startup request.
type sdRequest struct {
	name  string
	typ   uint16
	dump  bool
	body  []byte
	loUp  bool // compared after lo is up too (false: known gap)
	flags uint16
}

func startupRequests() []sdRequest {
	const (
		ntfProxy    = 0x08
		ndaIfindex  = 8
		ndaMaster   = 9
		netconfaIf  = 1
		nhaID       = 1
		nhaGroups   = 9
		ifalAddress = 1
		ifaLabel    = 3
	)
	d := func(name string, typ uint16, body []byte) sdRequest {
		return sdRequest{name: name, typ: typ, dump: true, body: body, loUp: true}
	}
	g := func(name string, typ uint16, body []byte) sdRequest {
		return sdRequest{name: name, typ: typ, body: body, loUp: true, flags: nlmFAck}
	}
	down := func(r sdRequest) sdRequest { r.loUp = false; return r }
	return []sdRequest{
		// Neighbours: neigh_dump_info() (ip neigh, pyroute2, netlink.NeighList,
		// zebra) and, for AF_BRIDGE, rtnl_fdb_dump() (bridge fdb, zebra's
		// macfdb). lo has neither.
		d("neigh unspec", sdGetNeigh, sdNdmsg(0, 0, 0, 0)),
		d("neigh rtgenmsg", sdGetNeigh, []byte{0, 0, 0, 0}),
		d("neigh inet", sdGetNeigh, sdNdmsg(sdAFInet, 0, 0, 0)),
		d("neigh inet6", sdGetNeigh, sdNdmsg(sdAFInet6, 0, 0, 0)),
		d("neigh inet proxy", sdGetNeigh, sdNdmsg(sdAFInet, 0, 0, ntfProxy)),
		d("neigh inet6 proxy", sdGetNeigh, sdNdmsg(sdAFInet6, 0, 0, ntfProxy)),
		d("neigh inet ifindex attr", sdGetNeigh, nlAttr(sdNdmsg(sdAFInet, 0, 0, 0), ndaIfindex, u32Bytes(1))),
		d("neigh inet master attr", sdGetNeigh, nlAttr(sdNdmsg(sdAFInet, 0, 0, 0), ndaMaster, u32Bytes(1))),
		d("neigh inet state", sdGetNeigh, sdNdmsg(sdAFInet, 0, 0x80, 0)),
		d("neigh inet ifindex header", sdGetNeigh, sdNdmsg(sdAFInet, 1, 0, 0)),
		d("neigh short", sdGetNeigh, []byte{sdAFInet6}),
		d("neigh bridge (fdb)", sdGetNeigh, sdNdmsg(sdAFBridge, 0, 0, 0)),
		d("neigh bridge ifinfomsg (bridge fdb show)", sdGetNeigh, ifinfo(sdAFBridge, 0, 0, 0)),
		d("neigh bridge ifindex", sdGetNeigh, sdNdmsg(sdAFBridge, 1, 0, 0)),
		d("neigh bridge master attr", sdGetNeigh, nlAttr(sdNdmsg(sdAFBridge, 0, 0, 0), ndaMaster, u32Bytes(1))),
		d("neigh mpls", sdGetNeigh, sdNdmsg(sdAFMPLS, 0, 0, 0)),
		d("neigh inet bad flags", sdGetNeigh, sdNdmsg(sdAFInet, 0, 0, 0x10)),
		d("neigh inet dst attr", sdGetNeigh, nlAttr(sdNdmsg(sdAFInet, 0, 0, 0), 1, []byte{127, 0, 0, 1})),
		d("neigh bridge state", sdGetNeigh, sdNdmsg(sdAFBridge, 0, 0x80, 0)),
		d("neigh bridge unknown master", sdGetNeigh, nlAttr(sdNdmsg(sdAFBridge, 0, 0, 0), ndaMaster, u32Bytes(9))),
		d("neigh bridge dst attr", sdGetNeigh, nlAttr(sdNdmsg(sdAFBridge, 0, 0, 0), 1, []byte{127, 0, 0, 1})),
		g("neigh get 127.0.0.1 on lo", sdGetNeigh, nlAttr(sdNdmsg(sdAFInet, 1, 0, 0), 1, []byte{127, 0, 0, 1})),
		g("neigh get no address", sdGetNeigh, sdNdmsg(sdAFInet, 1, 0, 0)),
		g("neigh get inet6 ::1 on lo", sdGetNeigh, nlAttr(sdNdmsg(sdAFInet6, 1, 0, 0), 1, append(make([]byte, 15), 1))),
		g("neigh get no device", sdGetNeigh, nlAttr(sdNdmsg(sdAFInet, 0, 0, 0), 1, []byte{127, 0, 0, 1})),
		g("neigh get unknown device", sdGetNeigh, nlAttr(sdNdmsg(sdAFInet, 7, 0, 0), 1, []byte{127, 0, 0, 1})),
		g("neigh get proxy", sdGetNeigh, nlAttr(sdNdmsg(sdAFInet, 0, 0, ntfProxy), 1, []byte{127, 0, 0, 1})),
		g("neigh get bad address length", sdGetNeigh, nlAttr(sdNdmsg(sdAFInet, 1, 0, 0), 1, []byte{127, 0, 0, 1, 0, 0})),
		g("neigh get state set", sdGetNeigh, nlAttr(sdNdmsg(sdAFInet, 1, 2, 0), 1, []byte{127, 0, 0, 1})),
		g("neigh get family unspec", sdGetNeigh, nlAttr(sdNdmsg(0, 1, 0, 0), 1, []byte{127, 0, 0, 1})),
		g("neigh get short", sdGetNeigh, []byte{sdAFInet, 0, 0, 0}),
		// Neighbour tables: neightbl_dump_info() (ip ntable).
		// Bridge links: rtnl_bridge_getlink() (bridge link, zebra).
		d("link bridge", rtmGetLink, ifinfo(sdAFBridge, 0, 0, 0)),
		d("link bridge brvlan", rtmGetLink, nlAttr(ifinfo(sdAFBridge, 0, 0, 0), iflaExtMask, u32Bytes(2))),
		// Netconf: inet_netconf_dump_devconf(), inet6_netconf_dump_devconf(),
		// and rtnl_dump_all() for AF_UNSPEC (ip netconf, zebra).
		d("netconf inet", sdGetNetconf, sdFamily(sdAFInet, 4)),
		d("netconf inet6", sdGetNetconf, sdFamily(sdAFInet6, 4)),
		d("netconf unspec", sdGetNetconf, sdFamily(0, 4)),
		d("netconf mpls (no module: rtnl_dump_all)", sdGetNetconf, sdFamily(sdAFMPLS, 4)),
		d("netconf inet 1 byte", sdGetNetconf, sdFamily(sdAFInet, 1)),
		d("netconf inet6 with attribute", sdGetNetconf, nlAttr(sdFamily(sdAFInet6, 4), netconfaIf, sdI32(1))),
		g("netconf get inet lo", sdGetNetconf, nlAttr(sdFamily(sdAFInet, 4), netconfaIf, sdI32(1))),
		g("netconf get inet all", sdGetNetconf, nlAttr(sdFamily(sdAFInet, 4), netconfaIf, sdI32(-1))),
		g("netconf get inet default", sdGetNetconf, nlAttr(sdFamily(sdAFInet, 4), netconfaIf, sdI32(-2))),
		g("netconf get inet6 lo", sdGetNetconf, nlAttr(sdFamily(sdAFInet6, 4), netconfaIf, sdI32(1))),
		g("netconf get inet6 all", sdGetNetconf, nlAttr(sdFamily(sdAFInet6, 4), netconfaIf, sdI32(-1))),
		g("netconf get inet6 default", sdGetNetconf, nlAttr(sdFamily(sdAFInet6, 4), netconfaIf, sdI32(-2))),
		g("netconf get inet no ifindex", sdGetNetconf, sdFamily(sdAFInet, 4)),
		g("netconf get inet6 unknown ifindex", sdGetNetconf, nlAttr(sdFamily(sdAFInet6, 4), netconfaIf, sdI32(7))),
		g("netconf get inet unknown ifindex", sdGetNetconf, nlAttr(sdFamily(sdAFInet, 4), netconfaIf, sdI32(7))),
		g("netconf get unspec", sdGetNetconf, nlAttr(sdFamily(0, 4), netconfaIf, sdI32(1))),
		// Nexthops: rtm_dump_nexthop(), rtm_dump_nexthop_bucket() (ip nexthop,
		// zebra, netlink.NexthopList?).
		d("nexthop unspec", sdGetNexthop, sdFamily(0, 8)),
		d("nexthop inet", sdGetNexthop, sdFamily(sdAFInet, 8)),
		d("nexthop inet6", sdGetNexthop, sdFamily(sdAFInet6, 8)),
		d("nexthop groups", sdGetNexthop, nlAttr(sdFamily(0, 8), nhaGroups, nil)),
		d("nexthop short", sdGetNexthop, sdFamily(0, 4)),
		d("nexthop scope set", sdGetNexthop, []byte{0, 1, 0, 0, 0, 0, 0, 0}),
		g("nexthop get id 1", sdGetNexthop, nlAttr(sdFamily(0, 8), nhaID, u32Bytes(1))),
		g("nexthop get no id", sdGetNexthop, sdFamily(0, 8)),
		g("nexthop get id 0", sdGetNexthop, nlAttr(sdFamily(0, 8), nhaID, u32Bytes(0))),
		g("nexthop get scope set", sdGetNexthop, nlAttr([]byte{0, 1, 0, 0, 0, 0, 0, 0}, nhaID, u32Bytes(1))),
		d("nexthop bucket", sdGetNHBucket, sdFamily(0, 8)),
		d("nexthop oif lo", sdGetNexthop, nlAttr(sdFamily(0, 8), 5, u32Bytes(1))),
		d("nexthop oif unknown", sdGetNexthop, nlAttr(sdFamily(0, 8), 5, u32Bytes(9))),
		d("nexthop oif too big", sdGetNexthop, nlAttr(sdFamily(0, 8), 5, u32Bytes(1<<31))),
		d("nexthop master unknown", sdGetNexthop, nlAttr(sdFamily(0, 8), 10, u32Bytes(9))),
		d("nexthop fdb", sdGetNexthop, nlAttr(sdFamily(0, 8), 11, nil)),
		d("nexthop id attr", sdGetNexthop, nlAttr(sdFamily(0, 8), 1, u32Bytes(1))),
		d("nexthop unknown attr", sdGetNexthop, nlAttr(sdFamily(0, 8), 60, u32Bytes(1))),
		d("nexthop bucket id", sdGetNHBucket, nlAttr(sdFamily(0, 8), 1, u32Bytes(1))),
		d("nexthop bucket scope", sdGetNHBucket, []byte{0, 1, 0, 0, 0, 0, 0, 0}),
		down(d("route mpls (no module: rtnl_dump_all)", sdGetRoute, sdFamily(sdAFMPLS, 12))),
		g("fdb get on lo", sdGetNeigh, nlAttr(sdNdmsg(sdAFBridge, 1, 0, 0), 2, []byte{0, 0x11, 0x22, 0x33, 0x44, 0x55})),
		g("fdb get self on lo", sdGetNeigh, nlAttr(sdNdmsg(sdAFBridge, 1, 0, 0x02), 2, []byte{0, 0x11, 0x22, 0x33, 0x44, 0x55})),
		g("fdb get master lo", sdGetNeigh, nlAttr(nlAttr(sdNdmsg(sdAFBridge, 0, 0, 0), 2, []byte{0, 0x11, 0x22, 0x33, 0x44, 0x55}), ndaMaster, u32Bytes(1))),
		g("fdb get unknown device", sdGetNeigh, nlAttr(sdNdmsg(sdAFBridge, 9, 0, 0), 2, []byte{0, 0x11, 0x22, 0x33, 0x44, 0x55})),
		g("fdb get no address", sdGetNeigh, sdNdmsg(sdAFBridge, 1, 0, 0)),
		g("fdb get no device", sdGetNeigh, nlAttr(sdNdmsg(sdAFBridge, 0, 0, 0), 2, []byte{0, 0x11, 0x22, 0x33, 0x44, 0x55})),
		// Addresses and routes: empty while lo is down.
		down(d("addr unspec", sdGetAddr, sdFamily(0, 8))),
		down(d("addr rtgenmsg", sdGetAddr, sdFamily(0, 4))),
		down(d("addr inet", sdGetAddr, sdFamily(sdAFInet, 8))),
		down(d("addr inet6", sdGetAddr, sdFamily(sdAFInet6, 8))),
		down(d("addr inet label attr", sdGetAddr, nlAttr(sdFamily(sdAFInet, 8), ifaLabel, []byte("lo\x00")))),
		down(d("addr inet prefixlen", sdGetAddr, []byte{sdAFInet, 8, 0, 0, 0, 0, 0, 0})),
		down(d("addr mpls", sdGetAddr, sdFamily(sdAFMPLS, 8))),
		down(d("route unspec", sdGetRoute, sdFamily(0, 12))),
		down(d("route rtgenmsg", sdGetRoute, sdFamily(0, 4))),
		down(d("route inet", sdGetRoute, sdFamily(sdAFInet, 12))),
		down(d("route inet6", sdGetRoute, sdFamily(sdAFInet6, 12))),
		down(d("route ipmr", sdGetRoute, sdFamily(sdIPMR, 12))),
		down(d("route ip6mr", sdGetRoute, sdFamily(sdIP6MR, 12))),
		down(d("route inet table main", sdGetRoute, nlAttr(sdFamily(sdAFInet, 12), 15, u32Bytes(254)))),
		down(d("route inet table local", sdGetRoute, nlAttr(sdFamily(sdAFInet, 12), 15, u32Bytes(255)))),
		down(d("route inet table default", sdGetRoute, nlAttr(sdFamily(sdAFInet, 12), 15, u32Bytes(253)))),
		down(d("route inet table 100", sdGetRoute, nlAttr(sdFamily(sdAFInet, 12), 15, u32Bytes(100)))),
		down(d("route inet6 table local", sdGetRoute, nlAttr(sdFamily(sdAFInet6, 12), 15, u32Bytes(255)))),
		down(d("route inet6 table 100", sdGetRoute, nlAttr(sdFamily(sdAFInet6, 12), 15, u32Bytes(100)))),
		down(d("route unspec table 100", sdGetRoute, nlAttr(sdFamily(0, 12), 15, u32Bytes(100)))),
		down(d("route inet header table 100", sdGetRoute, []byte{sdAFInet, 0, 0, 0, 100, 0, 0, 0, 0, 0, 0, 0})),
		down(d("route inet protocol", sdGetRoute, []byte{sdAFInet, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0})),
		down(d("route inet oif lo", sdGetRoute, nlAttr(sdFamily(sdAFInet, 12), 4, u32Bytes(1)))),
		down(d("route inet oif unknown", sdGetRoute, nlAttr(sdFamily(sdAFInet, 12), 4, u32Bytes(9)))),
		down(d("route inet6 oif lo", sdGetRoute, nlAttr(sdFamily(sdAFInet6, 12), 4, u32Bytes(1)))),
		down(d("route inet dst attr", sdGetRoute, nlAttr(sdFamily(sdAFInet, 12), 1, []byte{10, 0, 0, 0}))),
		down(d("route inet cloned", sdGetRoute, []byte{sdAFInet, 0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0})),
		down(d("addr inet ifindex lo", sdGetAddr, []byte{sdAFInet, 0, 0, 0, 1, 0, 0, 0})),
		down(d("addr inet6 ifindex lo", sdGetAddr, []byte{sdAFInet6, 0, 0, 0, 1, 0, 0, 0})),
		down(d("addr inet ifindex unknown", sdGetAddr, []byte{sdAFInet, 0, 0, 0, 9, 0, 0, 0})),
		down(d("addr unspec ifindex lo", sdGetAddr, []byte{0, 0, 0, 0, 1, 0, 0, 0})),
		d("multicast inet6 ifindex lo", sdGetMulticast, []byte{sdAFInet6, 0, 0, 0, 1, 0, 0, 0}),
		d("multicast inet ifindex unknown", sdGetMulticast, []byte{sdAFInet, 0, 0, 0, 9, 0, 0, 0}),
		down(d("route inet flags", sdGetRoute, []byte{sdAFInet, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0})),
		down(d("route inet6 scope", sdGetRoute, []byte{sdAFInet6, 0, 0, 0, 0, 0, 200, 0, 0, 0, 0, 0})),
		down(d("addr inet6 short", sdGetAddr, sdFamily(sdAFInet6, 4))),
		down(d("addr inet6 flags", sdGetAddr, []byte{sdAFInet6, 0, 1, 0, 0, 0, 0, 0})),
		down(d("addr inet6 label attr", sdGetAddr, nlAttr(sdFamily(sdAFInet6, 8), ifaLabel, []byte("lo\x00")))),
		down(d("route inet6 dst_len", sdGetRoute, []byte{sdAFInet6, 64, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})),
		// IPv6 address labels: ip6addrlbl_dump() (ip addrlabel): the
		// kernel's default policy table (RFC 6724).
		d("addrlabel inet6", sdGetAddrLabel, sdFamily(sdAFInet6, 12)),
		d("addrlabel unspec", sdGetAddrLabel, sdFamily(0, 12)),
		d("addrlabel inet", sdGetAddrLabel, sdFamily(sdAFInet, 12)),
		d("addrlabel inet6 prefixlen", sdGetAddrLabel, []byte{sdAFInet6, 0, 64, 0, 0, 0, 0, 0, 0, 0, 0, 0}),
		d("addrlabel inet6 attr", sdGetAddrLabel, nlAttr(sdFamily(sdAFInet6, 12), ifalAddress, make([]byte, 16))),
		g("addrlabel get ::1 prefixlen 0", sdGetAddrLabel, nlAttr(sdFamily(sdAFInet6, 12), ifalAddress, append(make([]byte, 15), 1))),
		g("addrlabel get ::1", sdGetAddrLabel, nlAttr([]byte{sdAFInet6, 0, 128, 0, 0, 0, 0, 0, 0, 0, 0, 0}, ifalAddress, append(make([]byte, 15), 1))),
		g("addrlabel get 2001:db8::1", sdGetAddrLabel, nlAttr([]byte{sdAFInet6, 0, 128, 0, 0, 0, 0, 0, 0, 0, 0, 0}, ifalAddress, []byte{0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})),
		g("addrlabel get ::ffff:1.2.3.4", sdGetAddrLabel, nlAttr([]byte{sdAFInet6, 0, 128, 0, 0, 0, 0, 0, 0, 0, 0, 0}, ifalAddress, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4})),
		g("addrlabel get fe80::1 on lo", sdGetAddrLabel, nlAttr([]byte{sdAFInet6, 0, 128, 0, 1, 0, 0, 0, 0, 0, 0, 0}, ifalAddress, []byte{0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})),
		g("addrlabel get unknown device", sdGetAddrLabel, nlAttr([]byte{sdAFInet6, 0, 128, 0, 7, 0, 0, 0, 0, 0, 0, 0}, ifalAddress, make([]byte, 16))),
		g("addrlabel get no address", sdGetAddrLabel, []byte{sdAFInet6, 0, 128, 0, 0, 0, 0, 0, 0, 0, 0, 0}),
		// Multicast and anycast addresses: inet6_dump_ifmcaddr(),
		// inet_dump_ifmcaddr(), inet6_dump_ifacaddr().
		d("multicast inet6", sdGetMulticast, sdFamily(sdAFInet6, 8)),
		d("multicast inet", sdGetMulticast, sdFamily(sdAFInet, 8)),
		d("multicast unspec", sdGetMulticast, sdFamily(0, 8)),
		d("multicast inet6 short", sdGetMulticast, sdFamily(sdAFInet6, 4)),
		d("multicast inet prefixlen", sdGetMulticast, []byte{sdAFInet, 1, 0, 0, 0, 0, 0, 0}),
		d("anycast inet6", sdGetAnycast, sdFamily(sdAFInet6, 8)),
		d("anycast inet", sdGetAnycast, sdFamily(sdAFInet, 8)),
		// Stats: rtnl_stats_dump() and rtnl_stats_get() (ip stats, ip -s link
		// with newer iproute2).
		d("stats no filter", sdGetStats, sdStatsMsg(0, 0, 0)),
		d("stats link64", sdGetStats, sdStatsMsg(0, 0, 1)),
		d("stats xstats", sdGetStats, sdStatsMsg(0, 0, 2)),
		d("stats xstats slave", sdGetStats, sdStatsMsg(0, 0, 4)),
		d("stats offload", sdGetStats, sdStatsMsg(0, 0, 8)),
		d("stats af spec", sdGetStats, sdStatsMsg(0, 0, 16)),
		d("stats all", sdGetStats, sdStatsMsg(0, 0, 31)),
		d("stats ifindex", sdGetStats, sdStatsMsg(0, 1, 1)),
		g("stats get lo link64", sdGetStats, sdStatsMsg(0, 1, 1)),
		g("stats get lo all", sdGetStats, sdStatsMsg(0, 1, 31)),
		g("stats get no filter", sdGetStats, sdStatsMsg(0, 1, 0)),
		g("stats get unknown", sdGetStats, sdStatsMsg(0, 7, 1)),
		// Traffic control: tc_dump_qdisc(), tc_dump_tclass(),
		// tc_dump_tfilter(), tc_dump_action(), tc_dump_chain().
		d("qdisc", sdGetQdisc, sdTcmsg(0, 0, 0)),
		d("qdisc lo", sdGetQdisc, sdTcmsg(1, 0, 0)),
		d("tclass lo", sdGetTclass, sdTcmsg(1, 0, 0)),
		d("tclass all", sdGetTclass, sdTcmsg(0, 0, 0)),
		d("tfilter lo", sdGetTfilter, sdTcmsg(1, 0, 0)),
		d("tfilter none", sdGetTfilter, sdTcmsg(0, 0, 0)),
		d("tfilter lo ingress", sdGetTfilter, sdTcmsg(1, 0, 0xfffffff1)),
		d("chain lo", sdGetChain, sdTcmsg(1, 0, 0)),
		d("action", sdGetAction, sdFamily(0, 4)),
		// Namespace ids: rtnl_net_dumpid() (ip netns list-id, ip monitor).
		d("nsid", sdGetNSID, sdFamily(0, 4)),
		d("nsid with attribute", sdGetNSID, nlAttr(sdFamily(0, 4), 1, sdI32(1))),
		d("mdb bridge ifindex", sdGetMDB, []byte{sdAFBridge, 0, 0, 0, 1, 0, 0, 0}),
		d("mdb bridge short", sdGetMDB, sdFamily(sdAFBridge, 4)),
		d("stats bad mask", sdGetStats, sdStatsMsg(0, 0, 64)),
		d("stats short", sdGetStats, sdFamily(0, 8)),
		d("qdisc short", sdGetQdisc, sdFamily(0, 8)),
		// Bridge objects: rtnl_mdb_dump(), br_vlan_rtm_dump().
		d("mdb bridge", sdGetMDB, sdFamily(sdAFBridge, 8)),
		d("mdb unspec", sdGetMDB, sdFamily(0, 8)),
		d("vlan bridge", sdGetVlan, sdFamily(sdAFBridge, 8)),
		d("vlan unspec", sdGetVlan, sdFamily(0, 8)),
		d("linkprop", sdGetLinkProp, ifinfo(0, 0, 0, 0)),
		g("linkprop get lo", sdGetLinkProp, ifinfo(0, 1, 0, 0)),
		d("dcb", sdGetDCB, sdFamily(0, 4)),
	}
}

// TestStartupDumpsMatchKernel sends every startup request to both sides,
// lo down and then up, with and without strict checking, and compares the
// replies byte for byte.
func TestStartupDumpsMatchKernel(t *testing.T) {
	requireKernelNS(t)
	before := monotonicCentis(t)
	sides := []*Side{kernelSide(t, "kernel"), nlemuSide(t, "nlemu")}
	var socks [2][2]Socket // [side][strict]
	var rcv [2][2]*Receiver
	for i, s := range sides {
		for j, strict := range []bool{false, true} {
			m, err := s.Dial(SockSpec{Name: "main", ExtAck: true, StrictCheck: strict})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { m.Close() })
			socks[i][j], rcv[i][j] = m, NewReceiver(m)
		}
	}
	seq := uint32(1000)
	// NLEMU_STARTUP_PRINT=1 logs the kernel's replies instead of comparing.
	printKernel := os.Getenv("NLEMU_STARTUP_PRINT") != ""
	for _, phase := range []string{"lo down", "lo up", "lo down again"} {
		if phase != "lo down" {
			flags := uint32(iffUp)
			if phase == "lo down again" {
				flags = 0
			}
			seq++
			for i, s := range sides {
				r := Exchange(socks[i][0], rcv[i][0], Msg(rtmNewLink, nlmFRequest|nlmFAck, seq, 0, ifinfo(0, 1, flags, iffUp)), s.Timing)
				if got := RenderReply(r, false); len(got) < 2 || !strings.Contains(got[1], "error 0 (OK)") {
					t.Fatalf("%s: ip link set lo up: %v", s.Name, got)
				}
			}
		}
		for _, c := range startupRequests() {
			if phase != "lo down" && !c.loUp {
				continue
			}
			for j, strict := range []string{"", " strict"} {
				seq++
				flags := nlmFRequest | c.flags
				if c.dump {
					flags |= nlmFDump
				}
				var got [2][]string
				for i, s := range sides {
					r := Exchange(socks[i][j], rcv[i][j], Msg(c.typ, flags, seq, 0, c.body), s.Timing)
					var stamps []uint32
					got[i], stamps = sdRender(r)
					// nlemu's join times must be real ones: between the
					// test's start and now.
					if now := monotonicCentis(t); i == 1 {
						for _, st := range stamps {
							if st < before || st > now {
								t.Errorf("%s: %s%s: multicast join time %d, want within [%d, %d]", phase, c.name, strict, st, before, now)
							}
						}
					}
				}
				if printKernel {
					t.Logf("%s: %s%s:\n%s", phase, c.name, strict, strings.Join(got[0], "\n"))
					continue
				}
				if d := cmp.Diff(got[0], got[1]); d != "" {
					t.Errorf("%s: %s%s: reply differs (-kernel +nlemu):\n%s", phase, c.name, strict, d)
				}
			}
		}
	}
}

// sdRun runs tool (ip, bridge, tc) with args against side s: on the kernel
// side inside its namespace (`ip netns exec`), on the nlemu side under
// `nlemu exec` inside the side's host guard.
func sdRun(s *ipcSide, tool string, args ...string) ipcResult {
	ctx, cancel := context.WithTimeout(context.Background(), ipcTimeout)
	defer cancel()
	var cmd *exec.Cmd
	if s.kernel {
		cmd = exec.CommandContext(ctx, s.env.ip, append([]string{"netns", "exec", s.ns, tool}, args...)...)
	} else {
		full := append([]string{s.env.nlemu, "exec", "--socket", s.env.sock, "-n", s.ns, "--", tool}, args...)
		cmd = s.guard.command(ctx, s.env.ip, full...)
	}
	return ipcWait(ctx, cmd)
}

// TestStartupShowCommandsMatchKernel runs the show commands of iproute2's
// ip, bridge and tc that list what the startup dumps return, on a fresh
// kernel namespace and a fresh nlemu namespace, lo down, up and down again:
// identical stdout, stderr and exit codes. (`ip maddr` reads /proc/net/igmp
// and `ip ntable` the neighbour tables, neither emulated yet; address and
// route listings are compared with lo down only, see the file comment.)
func TestStartupShowCommandsMatchKernel(t *testing.T) {
	env := newIPCEnv(t)
	k, n := env.pair(t)
	type command struct {
		tool string
		args []string
		loUp bool
	}
	c := func(tool string, args ...string) command { return command{tool, args, true} }
	downOnly := func(tool string, args ...string) command { return command{tool, args, false} }
	cmds := []command{
		c("ip", "neigh", "show"),
		c("ip", "-4", "neigh", "show"),
		c("ip", "-6", "neigh", "show"),
		c("ip", "neigh", "show", "proxy"),
		c("ip", "-s", "neigh", "show", "dev", "lo"),
		c("ip", "-j", "neigh", "show"),
		c("ip", "neigh", "get", "127.0.0.1", "dev", "lo"),
		c("ip", "neigh", "get", "::1", "dev", "lo"),
		c("bridge", "fdb", "show"),
		c("bridge", "link", "show"),
		c("bridge", "mdb", "show"),
		c("bridge", "vlan", "show"),
		c("ip", "netconf", "show"),
		c("ip", "-4", "netconf", "show"),
		c("ip", "-6", "netconf", "show"),
		c("ip", "netconf", "show", "dev", "lo"),
		c("ip", "-6", "netconf", "show", "dev", "lo"),
		c("ip", "-j", "netconf", "show"),
		c("ip", "nexthop", "show"),
		c("ip", "nexthop", "show", "id", "1"),
		c("ip", "nexthop", "bucket", "show"),
		c("ip", "nexthop", "show", "dev", "lo"),
		c("ip", "nexthop", "show", "groups"),
		c("ip", "nexthop", "show", "fdb"),
		c("ip", "nexthop", "show", "protocol", "kernel"),
		c("ip", "nexthop", "bucket", "show", "id", "1"),
		c("bridge", "fdb", "get", "00:11:22:33:44:55", "dev", "lo"),
		c("bridge", "fdb", "show", "dev", "lo"),
		c("bridge", "fdb", "show", "br", "lo"),
		c("ip", "addrlabel", "list"),
		c("ip", "-j", "addrlabel", "list"),
		c("ip", "stats", "show", "dev", "lo", "group", "link"),
		c("ip", "stats", "show", "dev", "lo", "group", "offload"),
		c("ip", "stats", "show", "group", "afstats"),
		c("ip", "stats", "show"),
		c("tc", "qdisc", "show"),
		c("tc", "-s", "qdisc", "show", "dev", "lo"),
		c("tc", "class", "show", "dev", "lo"),
		c("tc", "filter", "show", "dev", "lo"),
		c("tc", "-j", "qdisc", "show"),
		c("ip", "netns", "list-id"),
		// Monitors: what they ask at startup must not fail; they print
		// nothing in a second without changes (timeout ends them: 124).
		c("timeout", "1", "ip", "monitor", "all"),
		c("timeout", "1", "ip", "-t", "monitor", "neigh", "netconf", "nexthop", "nsid"),
		c("timeout", "1", "bridge", "monitor"),
		c("timeout", "1", "tc", "monitor"),
		downOnly("ip", "addr", "show"),
		downOnly("ip", "-6", "addr", "show"),
		downOnly("ip", "route", "show"),
		downOnly("ip", "-6", "route", "show"),
		downOnly("ip", "route", "show", "table", "all"),
		downOnly("ip", "-6", "route", "show", "table", "all"),
		downOnly("ip", "route", "show", "table", "main"),
		downOnly("ip", "route", "show", "table", "local"),
		downOnly("ip", "-6", "route", "show", "table", "main"),
		downOnly("ip", "-6", "route", "show", "table", "local"),
		downOnly("ip", "route", "show", "table", "100"),
		downOnly("ip", "route", "show", "dev", "lo"),
		downOnly("ip", "-6", "route", "show", "dev", "lo"),
		downOnly("ip", "addr", "show", "dev", "lo"),
		downOnly("ip", "-4", "addr", "show", "dev", "lo"),
		downOnly("ip", "-6", "addr", "show", "dev", "lo"),
		downOnly("ip", "route", "show", "proto", "kernel"),
		downOnly("ip", "route", "show", "type", "local", "table", "all"),
		downOnly("ip", "route", "list", "cache"),
		downOnly("ip", "-6", "route", "list", "cache"),
	}
	steps := [][]string{nil, {"link", "set", "lo", "up"}, {"link", "set", "lo", "down"}}
	for _, step := range steps {
		label := "fresh"
		if step != nil {
			label = strings.Join(step, " ")
			ipcCompare(t, label, k.run(nil, step...), n.run(nil, step...), nil)
		}
		for _, cmd := range cmds {
			if step != nil && !cmd.loUp {
				continue
			}
			render := ipcLines
			if slices.Contains(cmd.args, "-j") {
				render = ipcJSONLines
			}
			what := cmd.tool + " " + strings.Join(cmd.args, " ")
			if d := ipcDifference(sdRun(k, cmd.tool, cmd.args...), sdRun(n, cmd.tool, cmd.args...), render); d != "" {
				t.Errorf("`%s` (after %s) differs:\n%s", what, label, d)
			}
		}
	}
}

// sdPyroute2Script is what a pyroute2 program does when it starts: the
// IPRoute inventory calls, then an NDB, whose startup dumps links,
// addresses, neighbours, routes and more and, on a dump that fails,
// retries it forever (before the startup dumps existed nlemu answered its
// neighbour dump EOPNOTSUPP and NDB never came up).
const sdPyroute2Script = `
from pyroute2 import IPRoute, NDB
ip = IPRoute()
for name, f in [("links", ip.get_links), ("addr", ip.get_addr), ("routes", ip.get_routes),
                ("neigh", ip.get_neighbours), ("rules", ip.get_rules), ("qdiscs", ip.get_qdiscs)]:
    try:
        print(name, len(f()))
    except Exception as e:
        print(name, "error", e)
ip.close()
ndb = NDB(log="off")
print("ndb interfaces", sorted((r.ifname, r.index) for r in ndb.interfaces.summary()))
print("ndb neighbours", len(list(ndb.neighbours.summary())))
print("ndb routes", len(list(ndb.routes.summary())))
print("ndb addresses", len(list(ndb.addresses.summary())))
ndb.close()
`

// TestPyroute2StartupMatchesKernel runs pyroute2's startup (IPRoute
// inventory, then NDB) on a fresh kernel namespace and under nlemu: same
// output, and NDB comes up instead of retrying forever. It needs the
// distribution's pyroute2 (python3-pyroute2), and says so when it is
// missing.
func TestPyroute2StartupMatchesKernel(t *testing.T) {
	const py = "/usr/bin/python3"
	if err := exec.Command(py, "-c", "import pyroute2").Run(); err != nil {
		kernelns.Unavailable(t, "pyroute2 is not installed for %s (apt-get install python3-pyroute2): %v", py, err)
	}
	env := newIPCEnv(t)
	k, n := env.pair(t)
	script := t.TempDir() + "/startup.py"
	if err := os.WriteFile(script, []byte(sdPyroute2Script), 0o644); err != nil {
		t.Fatal(err)
	}
	kr, nr := sdRun(k, py, script), sdRun(n, py, script)
	if d := ipcDifference(kr, nr, ipcLines); d != "" {
		t.Errorf("pyroute2 startup differs:\n%s", d)
	}
	if !bytes.Contains(nr.Stdout, []byte("ndb addresses")) {
		t.Errorf("nlemu: NDB did not come up: %q %q", nr.Stdout, nr.Stderr)
	}
}
