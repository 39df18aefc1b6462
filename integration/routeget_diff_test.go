package integration

// Raw netlink differential steps for routes: route dumps (every family,
// strict-check filters), RTM_GETROUTE replies (`ip route get` without the
// printing: IPv4 and IPv6, through rules, fibmatch, errors) and the
// notifications of route changes, compared byte for byte with a kernel
// namespace by RunDiff (diff_runner.go):
//
//	go test ./integration -run 'TestDiffRoutes' -v
//
// TestDiffRoutesKernelVsKernel runs the same steps on two kernel namespaces:
// it must pass, or the steps are not deterministic.
//
// Links and addresses are made with raw RTM_NEWLINK / RTM_NEWADDR steps (their
// ACKs are compared too). The kernel defers part of that work (linkwatch,
// IPv6 DAD; see ipcSettle): rdSettleStep waits for it on the kernel side, and
// the route listeners subscribe only after the setup, so that notifications
// the kernel sends late and nlemu sends at once are never compared.

import (
	"encoding/binary"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/mdlayher/netlink"
	"github.com/nlemu/nlemu/integration/kernelns"
)

const (
	rdRtmNewLink  = 16
	rdRtmNewAddr  = 20
	rdRtmNewRoute = 24
	rdRtmDelRoute = 25
	rdRtmGetRoute = 26

	rdRtaDst      = 1
	rdRtaSrc      = 2
	rdRtaIif      = 3
	rdRtaOif      = 4
	rdRtaGateway  = 5
	rdRtaPriority = 6
	rdRtaPrefsrc  = 7
	rdRtaMetrics  = 8
	rdRtaMultipth = 9
	rdRtaTable    = 15
	rdRtaMark     = 16
	rdRtaUID      = 25
	rdRtaIPProto  = 27
	rdRtaSport    = 28
	rdRtaDport    = 29

	rdRtaxMTU    = 2
	rdRtaxAdvMSS = 8

	rdRtmFLookupTable = 0x1000
	rdRtmFFibMatch    = 0x2000

	rdRtnUnicast     = 1
	rdRtnLocal       = 2
	rdRtnBlackhole   = 6
	rdRtnUnreachable = 7
	rdRtnProhibit    = 8
	rdRtnThrow       = 9

	rdRtProtBoot   = 3
	rdRtProtStatic = 4

	rdRtScopeUniverse = 0
	rdRtScopeLink     = 253

	rdIflaAddress  = 1
	rdIflaIfname   = 3
	rdIflaLinkinfo = 18
	rdIflaAFSpec   = 26
	rdIflaInfoKind = 1
	rdIflaInfoData = 2
	rdVethInfoPeer = 1
	rdIflaInet6AGM = 8 // IFLA_INET6_ADDR_GEN_MODE
	rdIn6AGMNone   = 1 // IN6_ADDR_GEN_MODE_NONE

	rdIfaAddress = 1
	rdIfaLocal   = 2
	rdIfaFlags   = 8
	rdIfaFNodad  = 0x02

	rdIffUp = 0x1

	rdRtnlgrpIPv4Route = 7
	rdRtnlgrpIPv6Route = 11

	rdRdTableMainDump = 254
)

// rdAttrs encodes attributes with netlink.AttributeEncoder; fn adds them.
func rdAttrs(fn func(ae *netlink.AttributeEncoder)) []byte {
	ae := netlink.NewAttributeEncoder()
	fn(ae)
	b, err := ae.Encode()
	if err != nil {
		panic(fmt.Sprintf("route diff: encoding attributes: %v", err))
	}
	return b
}

// rdRtmsg is struct rtmsg (12 bytes).
type rdRtmsg struct {
	Family, DstLen, SrcLen, TOS, Table, Protocol, Scope, Type uint8
	Flags                                                     uint32
}

func (h rdRtmsg) bytes() []byte {
	b := []byte{h.Family, h.DstLen, h.SrcLen, h.TOS, h.Table, h.Protocol, h.Scope, h.Type, 0, 0, 0, 0}
	binary.NativeEndian.PutUint32(b[8:], h.Flags)
	return b
}

// rdIfinfo is struct ifinfomsg (16 bytes).
func rdIfinfo(index int32, flags, change uint32) []byte {
	b := make([]byte, 16)
	binary.NativeEndian.PutUint32(b[4:], uint32(index))
	binary.NativeEndian.PutUint32(b[8:], flags)
	binary.NativeEndian.PutUint32(b[12:], change)
	return b
}

// rdIfaddr is struct ifaddrmsg (8 bytes).
func rdIfaddr(family, plen uint8, index uint32) []byte {
	b := []byte{family, plen, 0, 0, 0, 0, 0, 0}
	binary.NativeEndian.PutUint32(b[4:], index)
	return b
}

func rdMAC(last byte) []byte { return []byte{2, 0, 0, 0, 0, last} }

func rdStep(name string, typ, flags uint16, body []byte) Step {
	return Step{Name: name, NoStateDump: true, Build: func(seq uint32) []byte { return Msg(typ, flags, seq, 0, body) }}
}

// rdVethAdd is `ip link add NAME address MAC type veth peer name PEER
// address PMAC` (the peer registers first: lower ifindex).
func rdVethAdd(name string, mac byte, peer string, pmac byte) Step {
	peerBody := append(rdIfinfo(0, 0, 0), rdAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(rdIflaIfname, peer)
		ae.Bytes(rdIflaAddress, rdMAC(pmac))
	})...)
	body := append(rdIfinfo(0, 0, 0), rdAttrs(func(ae *netlink.AttributeEncoder) {
		ae.String(rdIflaIfname, name)
		ae.Bytes(rdIflaAddress, rdMAC(mac))
		ae.Nested(rdIflaLinkinfo, func(nae *netlink.AttributeEncoder) error {
			nae.String(rdIflaInfoKind, "veth")
			nae.Nested(rdIflaInfoData, func(dae *netlink.AttributeEncoder) error {
				dae.Bytes(rdVethInfoPeer, peerBody)
				return nil
			})
			return nil
		})
	})...)
	return rdStep("link add "+name+" type veth peer "+peer, rdRtmNewLink, fAckExcl, body)
}

// rdAddrGenNone is `ip link set dev INDEX addrgenmode none`.
func rdAddrGenNone(index int32) Step {
	body := append(rdIfinfo(index, 0, 0), rdAttrs(func(ae *netlink.AttributeEncoder) {
		ae.Nested(rdIflaAFSpec, func(nae *netlink.AttributeEncoder) error {
			nae.Nested(afInet6, func(i6 *netlink.AttributeEncoder) error {
				i6.Uint8(rdIflaInet6AGM, rdIn6AGMNone)
				return nil
			})
			return nil
		})
	})...)
	return rdStep(fmt.Sprintf("link set %d addrgenmode none", index), rdRtmNewLink, fAck, body)
}

// rdLinkUp is `ip link set dev INDEX up`.
func rdLinkUp(index int32) Step {
	return rdStep(fmt.Sprintf("link set %d up", index), rdRtmNewLink, fAck, rdIfinfo(index, rdIffUp, rdIffUp))
}

// rdAddrAdd is `ip addr add ADDR/PLEN dev INDEX [nodad]`.
func rdAddrAdd(addr string, plen uint8, index uint32, nodad bool) Step {
	a := ipb(addr)
	fam := uint8(afInet)
	if len(a) == 16 {
		fam = afInet6
	}
	body := append(rdIfaddr(fam, plen, index), rdAttrs(func(ae *netlink.AttributeEncoder) {
		ae.Bytes(rdIfaLocal, a)
		ae.Bytes(rdIfaAddress, a)
		if nodad {
			ae.Uint32(rdIfaFlags, rdIfaFNodad)
		}
	})...)
	return rdStep(fmt.Sprintf("addr add %s/%d dev %d", addr, plen, index), rdRtmNewAddr, fAckExcl, body)
}

// rdRoute is a route request: header plus attributes.
type rdRoute struct {
	hdr   rdRtmsg
	attrs func(ae *netlink.AttributeEncoder)
}

func (r rdRoute) body() []byte {
	b := r.hdr.bytes()
	if r.attrs != nil {
		b = append(b, rdAttrs(r.attrs)...)
	}
	return b
}

func rdFam(addr []byte) uint8 {
	if len(addr) == 16 {
		return afInet6
	}
	return afInet
}

// rdUnicast is a unicast route to dst/plen in main with the extra attributes
// of fn (gateway, oif, ...), as `ip route add` builds it (proto boot, scope
// universe; scope link when there is no gateway).
func rdUnicast(dst string, plen uint8, fn func(ae *netlink.AttributeEncoder)) rdRoute {
	d := ipb(dst)
	return rdRoute{hdr: rdRtmsg{Family: rdFam(d), DstLen: plen, Table: rtTableMain, Protocol: rdRtProtBoot, Type: rdRtnUnicast},
		attrs: func(ae *netlink.AttributeEncoder) {
			ae.Bytes(rdRtaDst, d)
			if fn != nil {
				fn(ae)
			}
		}}
}

func rdTyped(typ uint8, dst string, plen uint8, table uint32) rdRoute {
	d := ipb(dst)
	return rdRoute{hdr: rdRtmsg{Family: rdFam(d), DstLen: plen, Table: rtTableMain, Protocol: rdRtProtBoot, Type: typ},
		attrs: func(ae *netlink.AttributeEncoder) {
			ae.Bytes(rdRtaDst, d)
			if table != rtTableMain {
				ae.Uint32(rdRtaTable, table)
			}
		}}
}

func rdRouteStep(name string, typ, flags uint16, r rdRoute) Step {
	return rdStep(name, typ, flags, r.body())
}

// rdGet is RTM_GETROUTE (no dump) for dst with rtm_flags and attributes.
func rdGet(name, dst string, flags uint32, fn func(ae *netlink.AttributeEncoder)) Step {
	d := ipb(dst)
	r := rdRoute{hdr: rdRtmsg{Family: rdFam(d), DstLen: uint8(8 * len(d)), Flags: flags},
		attrs: func(ae *netlink.AttributeEncoder) {
			ae.Bytes(rdRtaDst, d)
			if fn != nil {
				fn(ae)
			}
		}}
	return rdStep(name, rdRtmGetRoute, nlmFRequest, r.body())
}

// rdDump is an RTM_GETROUTE dump with the given header and attributes.
func rdDump(name string, hdr rdRtmsg, fn func(ae *netlink.AttributeEncoder)) Step {
	return rdStep(name, rdRtmGetRoute, nlmFRequest|nlmFDump, rdRoute{hdr: hdr, attrs: fn}.body())
}

// rdKernelNS names the kernel namespace of the scenario running now, for
// rdSettleStep (the scenarios of one test run one after the other).
var rdKernelNS string

// rdSettleStep waits, on the kernel side only, for the work the kernel does
// after a request has been answered (ipcSettle). It sends nothing.
func rdSettleStep() Step {
	return Step{Name: "settle (kernel side)", NoStateDump: true, Setup: func(s Socket) error {
		if ns, ok := s.(rdSocket); !ok || !ns.kernel {
			return nil
		}
		for _, ns := range strings.Fields(rdKernelNS) {
			if err := rdSettleNS(ns); err != nil {
				return err
			}
		}
		return nil
	}}
}

// rdSettleNS polls kernel namespace ns until ipcSettled holds.
func rdSettleNS(ns string) error {
	deadline := time.Now().Add(ipcSettleTimeout)
	out := func(args ...string) string {
		b, _ := exec.Command("ip", append([]string{"-n", ns}, args...)...).Output()
		return string(b)
	}
	for {
		if ipcSettled(out("-o", "link", "show"), out("-6", "-o", "addr", "show"), out("-6", "route", "show", "table", "local")) {
			time.Sleep(20 * time.Millisecond)
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("kernel namespace %s did not settle", ns)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rdSetup is lo up, a veth pair v0 (index 3) / v1 (index 2) with fixed MACs
// and no IPv6 link-local addresses, both up, 10.0.0.1/24 and 2001:db8::1/64
// on v0, and a second pair w0 (5) / w1 (4) with 10.9.0.1/24 and
// 2001:db8:9::1/64 on w0.
func rdSetup() []Step {
	return []Step{
		rdLinkUp(1),
		rdVethAdd("v0", 1, "v1", 2),
		rdVethAdd("w0", 0x11, "w1", 0x12),
		rdAddrGenNone(2), rdAddrGenNone(3), rdAddrGenNone(4), rdAddrGenNone(5),
		rdLinkUp(3), rdLinkUp(2), rdLinkUp(5), rdLinkUp(4),
		rdSettleStep(),
		rdAddrAdd("10.0.0.1", 24, 3, false),
		rdAddrAdd("10.9.0.1", 24, 5, false),
		rdAddrAdd("2001:db8::1", 64, 3, true),
		rdAddrAdd("2001:db8:9::1", 64, 5, true),
		rdSettleStep(),
	}
}

func rdGw(gw string) func(ae *netlink.AttributeEncoder) {
	return func(ae *netlink.AttributeEncoder) { ae.Bytes(rdRtaGateway, ipb(gw)) }
}

// rdRoutes adds routes of several kinds in both families and tables.
func rdRoutes() []Step {
	u32 := func(t uint16, v uint32) func(ae *netlink.AttributeEncoder) {
		return func(ae *netlink.AttributeEncoder) { ae.Uint32(t, v) }
	}
	both := func(fs ...func(ae *netlink.AttributeEncoder)) func(ae *netlink.AttributeEncoder) {
		return func(ae *netlink.AttributeEncoder) {
			for _, f := range fs {
				f(ae)
			}
		}
	}
	metrics := func(ae *netlink.AttributeEncoder) {
		ae.Nested(rdRtaMetrics, func(m *netlink.AttributeEncoder) error {
			m.Uint32(rdRtaxMTU, 1400)
			m.Uint32(rdRtaxAdvMSS, 1360)
			return nil
		})
	}
	multipath := func(gws ...string) func(ae *netlink.AttributeEncoder) {
		return func(ae *netlink.AttributeEncoder) {
			var mp []byte
			for i, gw := range gws {
				attrs := rdAttrs(func(a *netlink.AttributeEncoder) { a.Bytes(rdRtaGateway, ipb(gw)) })
				nh := make([]byte, 8) // struct rtnexthop: len, flags, hops (weight-1), ifindex
				binary.NativeEndian.PutUint16(nh, uint16(8+len(attrs)))
				nh[3] = byte(i)
				mp = append(mp, append(nh, attrs...)...)
			}
			ae.Bytes(rdRtaMultipth, mp)
		}
	}
	table := func(r rdRoute, t uint32) rdRoute {
		inner := r.attrs
		r.attrs = func(ae *netlink.AttributeEncoder) { inner(ae); ae.Uint32(rdRtaTable, t) }
		return r
	}
	add := func(name string, r rdRoute) Step { return rdRouteStep("route add "+name, rdRtmNewRoute, fAckExcl, r) }
	return []Step{
		add("192.168.1.0/24 via 10.0.0.2", rdUnicast("192.168.1.0", 24, rdGw("10.0.0.2"))),
		add("192.168.2.0/24 via 10.0.0.2 metric 7 mtu 1400 advmss 1360", rdUnicast("192.168.2.0", 24, both(rdGw("10.0.0.2"), u32(rdRtaPriority, 7), metrics))),
		add("192.168.3.0/24 multipath", rdUnicast("192.168.3.0", 24, multipath("10.0.0.2", "10.9.0.2"))),
		add("blackhole 192.168.4.0/24", rdTyped(rdRtnBlackhole, "192.168.4.0", 24, rtTableMain)),
		add("unreachable 192.168.5.0/24 table 100", rdTyped(rdRtnUnreachable, "192.168.5.0", 24, 100)),
		add("prohibit 192.168.6.0/24 table 100", rdTyped(rdRtnProhibit, "192.168.6.0", 24, 100)),
		add("throw 192.168.7.0/24 table 100", rdTyped(rdRtnThrow, "192.168.7.0", 24, 100)),
		add("default via 10.9.0.254 table 100", table(rdUnicast("0.0.0.0", 0, rdGw("10.9.0.254")), 100)),
		add("172.16.0.0/12 dev w0 src 10.9.0.1 table 200", table(rdUnicast("172.16.0.0", 12, both(u32(rdRtaOif, 5), func(ae *netlink.AttributeEncoder) { ae.Bytes(rdRtaPrefsrc, ipb("10.9.0.1")) })), 200)),
		add("2001:db8:1::/48 via 2001:db8::2", rdUnicast("2001:db8:1::", 48, rdGw("2001:db8::2"))),
		add("2001:db8:2::/48 via 2001:db8::2 metric 7 mtu 1400", rdUnicast("2001:db8:2::", 48, both(rdGw("2001:db8::2"), u32(rdRtaPriority, 7), metrics))),
		add("2001:db8:3::/48 multipath", rdUnicast("2001:db8:3::", 48, multipath("2001:db8::2", "2001:db8:9::2"))),
		add("unreachable 2001:db8:4::/48", rdTyped(rdRtnUnreachable, "2001:db8:4::", 48, rtTableMain)),
		add("blackhole 2001:db8:5::/48 table 100", rdTyped(rdRtnBlackhole, "2001:db8:5::", 48, 100)),
		add("default via 2001:db8:9::254 table 100", table(rdUnicast("::", 0, rdGw("2001:db8:9::254")), 100)),
		add("192.168.1.0/24 via 10.0.0.2 again (EEXIST)", rdUnicast("192.168.1.0", 24, rdGw("10.0.0.2"))),
		add("192.168.8.0/24 via 10.99.0.1 (no route to the gateway)", rdUnicast("192.168.8.0", 24, rdGw("10.99.0.1"))),
		add("2001:db8:8::/48 via 2001:db8:99::1 (no route to the gateway)", rdUnicast("2001:db8:8::", 48, rdGw("2001:db8:99::1"))),
	}
}

// routeDumpScenario dumps the routes every way a client asks for them.
func routeDumpScenario() []Step {
	steps := append(rdSetup(), rdRoutes()...)
	u32 := func(t uint16, v uint32) func(ae *netlink.AttributeEncoder) {
		return func(ae *netlink.AttributeEncoder) { ae.Uint32(t, v) }
	}
	for _, sock := range []string{"main", "strict"} {
		steps = append(steps,
			onSock(sock, rdDump(sock+": dump AF_UNSPEC", rdRtmsg{}, nil)),
			onSock(sock, rdDump(sock+": dump AF_INET", rdRtmsg{Family: afInet}, nil)),
			onSock(sock, rdDump(sock+": dump AF_INET6", rdRtmsg{Family: afInet6}, nil)),
			onSock(sock, rdDump(sock+": dump AF_INET table 100 (RTA_TABLE)", rdRtmsg{Family: afInet}, u32(rdRtaTable, 100))),
			onSock(sock, rdDump(sock+": dump AF_INET6 table 100 (RTA_TABLE)", rdRtmsg{Family: afInet6}, u32(rdRtaTable, 100))),
			onSock(sock, rdDump(sock+": dump AF_INET rtm_table 255", rdRtmsg{Family: afInet, Table: rtTableLocal}, nil)),
			onSock(sock, rdDump(sock+": dump AF_INET oif 5 (RTA_OIF)", rdRtmsg{Family: afInet}, u32(rdRtaOif, 5))),
			onSock(sock, rdDump(sock+": dump AF_INET table 4242 (missing)", rdRtmsg{Family: afInet}, u32(rdRtaTable, 4242))),
			onSock(sock, rdDump(sock+": dump AF_INET6 table 4242 (missing)", rdRtmsg{Family: afInet6}, u32(rdRtaTable, 4242))),
			onSock(sock, rdDump(sock+": dump AF_INET oif 99 (missing device)", rdRtmsg{Family: afInet}, u32(rdRtaOif, 99))),
			onSock(sock, rdDump(sock+": dump AF_INET with rtm_dst_len 24", rdRtmsg{Family: afInet, DstLen: 24}, nil)),
			onSock(sock, rdDump(sock+": dump AF_INET with RTA_DST (not a filter)", rdRtmsg{Family: afInet}, func(ae *netlink.AttributeEncoder) { ae.Bytes(rdRtaDst, ipb("192.168.1.0")) })),
			onSock(sock, rdDump(sock+": dump AF_INET RTM_F_CLONED", rdRtmsg{Family: afInet, Flags: 0x200}, nil)),
			onSock(sock, rdDump(sock+": dump AF_INET6 RTM_F_CLONED", rdRtmsg{Family: afInet6, Flags: 0x200}, nil)),
		)
	}
	return steps
}

// routeGetScenario asks RTM_GETROUTE for single routes, first with the
// local and main tables merged, then through custom rules.
func routeGetScenario() []Step {
	steps := append(rdSetup(), rdRoutes()...)
	lt := uint32(rdRtmFLookupTable)
	fm := uint32(rdRtmFLookupTable | rdRtmFFibMatch)
	u32 := func(t uint16, v uint32) func(ae *netlink.AttributeEncoder) {
		return func(ae *netlink.AttributeEncoder) { ae.Uint32(t, v) }
	}
	queries := func(tag string) []Step {
		return []Step{
			rdGet(tag+"get 10.0.0.1 (local)", "10.0.0.1", lt, nil),
			rdGet(tag+"get 10.0.0.5 (connected)", "10.0.0.5", lt, nil),
			rdGet(tag+"get 192.168.1.5 (gateway)", "192.168.1.5", lt, nil),
			rdGet(tag+"get 192.168.2.5 (metrics)", "192.168.2.5", lt, nil),
			rdGet(tag+"get 192.168.4.5 (blackhole)", "192.168.4.5", lt, nil),
			rdGet(tag+"get 8.8.8.8 (no route)", "8.8.8.8", lt, nil),
			rdGet(tag+"get 10.0.0.255 (broadcast)", "10.0.0.255", lt, nil),
			rdGet(tag+"get 127.0.0.1", "127.0.0.1", lt, nil),
			rdGet(tag+"fibmatch 10.0.0.1", "10.0.0.1", fm, nil),
			rdGet(tag+"fibmatch 192.168.2.5", "192.168.2.5", fm, nil),
			rdGet(tag+"fibmatch 192.168.3.5 (multipath)", "192.168.3.5", fm, nil),
			rdGet(tag+"fibmatch 8.8.8.8", "8.8.8.8", fm, nil),
			rdGet(tag+"get 192.168.1.5 no RTM_F_LOOKUP_TABLE", "192.168.1.5", 0, nil),
			rdGet(tag+"get 192.168.1.5 mark 5 uid 1000", "192.168.1.5", lt, func(ae *netlink.AttributeEncoder) {
				ae.Uint32(rdRtaMark, 5)
				ae.Uint32(rdRtaUID, 1000)
			}),
			rdGet(tag+"get 192.168.1.5 oif 5", "192.168.1.5", lt, u32(rdRtaOif, 5)),
			rdGet(tag+"get 192.168.1.5 from 10.0.0.1", "192.168.1.5", lt, func(ae *netlink.AttributeEncoder) { ae.Bytes(rdRtaSrc, ipb("10.0.0.1")) }),
			rdGet(tag+"get 10.0.0.1 iif 2 from 10.0.0.9", "10.0.0.1", lt, func(ae *netlink.AttributeEncoder) {
				ae.Bytes(rdRtaSrc, ipb("10.0.0.9"))
				ae.Uint32(rdRtaIif, 2)
			}),
			rdGet(tag+"get 8.8.8.8 ipproto tcp dport 80", "8.8.8.8", lt, func(ae *netlink.AttributeEncoder) {
				ae.Uint8(rdRtaIPProto, 6)
				ae.Bytes(rdRtaSport, binary.BigEndian.AppendUint16(nil, 1000))
				ae.Bytes(rdRtaDport, binary.BigEndian.AppendUint16(nil, 80))
			}),
			rdGet(tag+"get6 2001:db8::1 (local)", "2001:db8::1", 0, nil),
			rdGet(tag+"get6 2001:db8::5 (connected)", "2001:db8::5", 0, nil),
			rdGet(tag+"get6 2001:db8:1::5 (gateway)", "2001:db8:1::5", 0, nil),
			rdGet(tag+"get6 2001:db8:4::5 (unreachable)", "2001:db8:4::5", 0, nil),
			rdGet(tag+"get6 2001:db8:77::5 (no route)", "2001:db8:77::5", 0, nil),
			rdGet(tag+"fibmatch6 2001:db8:2::5", "2001:db8:2::5", rdRtmFFibMatch, nil),
			rdGet(tag+"get6 2001:db8:1::5 mark 7", "2001:db8:1::5", 0, u32(rdRtaMark, 7)),
		}
	}
	steps = append(steps, queries("merged: ")...)
	steps = append(steps,
		ruleAdd("rule from 10.0.0.0/8 fwmark 5 table 100 pref 100", v4().Src(ipb("10.0.0.0"), 8).Mark(5).Table(100).Pref(100)),
		ruleAdd("rule fwmark 5 table 100 pref 101", v4().Mark(5).Table(100).Pref(101)),
		ruleAdd("rule to 192.168.7.0/24 table 100 pref 102", v4().Dst(ipb("192.168.7.0"), 24).Table(100).Pref(102)),
		ruleAdd("rule to 172.16.0.0/12 table 200 pref 103", v4().Dst(ipb("172.16.0.0"), 12).Table(200).Pref(103)),
		ruleAdd("rule to 10.200.0.0/16 unreachable pref 104", v4().Dst(ipb("10.200.0.0"), 16).Act(frActUnreachable).Pref(104)),
		ruleAdd("rule to 10.201.0.0/16 prohibit pref 105", v4().Dst(ipb("10.201.0.0"), 16).Act(frActProhibit).Pref(105)),
		ruleAdd("rule6 fwmark 7 table 100 pref 100", v6().Mark(7).Table(100).Pref(100)),
	)
	steps = append(steps, queries("rules: ")...)
	steps = append(steps,
		rdGet("rules: get 8.8.8.8 mark 5", "8.8.8.8", lt, u32(rdRtaMark, 5)),
		rdGet("rules: fibmatch 8.8.8.8 mark 5", "8.8.8.8", fm, u32(rdRtaMark, 5)),
		rdGet("rules: get 192.168.7.5 (throw, then main)", "192.168.7.5", lt, nil),
		rdGet("rules: get 172.16.1.1 (table 200)", "172.16.1.1", lt, nil),
		rdGet("rules: get 10.200.1.1 (unreachable rule)", "10.200.1.1", lt, nil),
		rdGet("rules: get 10.201.1.1 (prohibit rule)", "10.201.1.1", lt, nil),
		rdGet("rules: get6 2001:db8:77::5 mark 7", "2001:db8:77::5", 0, u32(rdRtaMark, 7)),
		rdGet("rules: fibmatch6 2001:db8:77::5 mark 7", "2001:db8:77::5", rdRtmFFibMatch, u32(rdRtaMark, 7)),
		// Malformed requests.
		rdStep("get: rtmsg only, no RTA_DST", rdRtmGetRoute, nlmFRequest, rdRtmsg{Family: afInet}.bytes()),
		rdStep("get: short body", rdRtmGetRoute, nlmFRequest, []byte{afInet, 32}),
		rdStep("get: RTA_DST of 3 bytes", rdRtmGetRoute, nlmFRequest, append(rdRtmsg{Family: afInet, DstLen: 32}.bytes(), rdAttrs(func(ae *netlink.AttributeEncoder) { ae.Bytes(rdRtaDst, []byte{10, 0, 0}) })...)),
		onSock("strict", rdGet("strict: get 10.0.0.5", "10.0.0.5", lt, nil)),
		onSock("strict", rdStep("strict: get with rtm_dst_len 24", rdRtmGetRoute, nlmFRequest, append(rdRtmsg{Family: afInet, DstLen: 24}.bytes(), rdAttrs(func(ae *netlink.AttributeEncoder) { ae.Bytes(rdRtaDst, ipb("10.0.0.5")) })...))),
		onSock("strict", rdGet("strict: get with RTA_PRIORITY (not allowed)", "10.0.0.5", lt, u32(rdRtaPriority, 1))),
	)
	return steps
}

// routeNotifyScenario: route listeners subscribe after the setup, then
// route changes of both families are made; every listener's messages are
// compared (the sender's own port id normalized).
func routeNotifyScenario() []Step {
	steps := rdSetup()
	steps = append(steps,
		onSock("rmon", Step{Name: "rmon joins IPv4 and IPv6 routes", NoStateDump: true, Setup: func(s Socket) error {
			if err := s.SetSockopt(solNetlink, netlinkAddMember, rdRtnlgrpIPv4Route); err != nil {
				return err
			}
			return s.SetSockopt(solNetlink, netlinkAddMember, rdRtnlgrpIPv6Route)
		}}),
		onSock("rmon4", Step{Name: "rmon4 joins IPv4 routes (legacy bind mask)", NoStateDump: true, Setup: func(s Socket) error {
			return s.Bind(1 << (rdRtnlgrpIPv4Route - 1))
		}}),
	)
	steps = append(steps, rdRoutes()...)
	replace := func(name string, r rdRoute) Step {
		return rdRouteStep(name, rdRtmNewRoute, nlmFRequest|nlmFAck|nlmFCreate|nlmFReplace, r)
	}
	appendR := func(name string, r rdRoute) Step {
		return rdRouteStep(name, rdRtmNewRoute, nlmFRequest|nlmFAck|nlmFCreate|nlmFAppend, r)
	}
	del := func(name string, r rdRoute) Step {
		return rdRouteStep(name, rdRtmDelRoute, fAck, r)
	}
	steps = append(steps,
		replace("route replace 192.168.1.0/24 via 10.0.0.3", rdUnicast("192.168.1.0", 24, rdGw("10.0.0.3"))),
		appendR("route append 192.168.1.0/24 via 10.0.0.4", rdUnicast("192.168.1.0", 24, rdGw("10.0.0.4"))),
		replace("route replace 2001:db8:1::/48 via 2001:db8::3", rdUnicast("2001:db8:1::", 48, rdGw("2001:db8::3"))),
		appendR("route append 2001:db8:1::/48 via 2001:db8::4 (sibling)", rdUnicast("2001:db8:1::", 48, rdGw("2001:db8::4"))),
		rdRouteStep("route add 192.168.9.0/24 via 10.0.0.2 with NLM_F_ECHO", rdRtmNewRoute, fAckExcl|nlmFEcho, rdUnicast("192.168.9.0", 24, rdGw("10.0.0.2"))),
		rdRouteStep("route add 2001:db8:9:1::/64 via 2001:db8::2 with NLM_F_ECHO", rdRtmNewRoute, fAckExcl|nlmFEcho, rdUnicast("2001:db8:9:1::", 64, rdGw("2001:db8::2"))),
		del("route del 192.168.1.0/24 (first alias)", rdRoute{hdr: rdRtmsg{Family: afInet, DstLen: 24, Table: rtTableMain}, attrs: func(ae *netlink.AttributeEncoder) { ae.Bytes(rdRtaDst, ipb("192.168.1.0")) }}),
		del("route del 2001:db8:1::/48 via 2001:db8::4", rdRoute{hdr: rdRtmsg{Family: afInet6, DstLen: 48, Table: rtTableMain}, attrs: func(ae *netlink.AttributeEncoder) {
			ae.Bytes(rdRtaDst, ipb("2001:db8:1::"))
			ae.Bytes(rdRtaGateway, ipb("2001:db8::4"))
		}}),
		del("route del 192.168.99.0/24 (ESRCH)", rdRoute{hdr: rdRtmsg{Family: afInet, DstLen: 24, Table: rtTableMain}, attrs: func(ae *netlink.AttributeEncoder) { ae.Bytes(rdRtaDst, ipb("192.168.99.0")) }}),
		del("route del unreachable 192.168.5.0/24 table 100", rdRoute{hdr: rdRtmsg{Family: afInet, DstLen: 24, Table: 100, Type: rdRtnUnreachable}, attrs: func(ae *netlink.AttributeEncoder) { ae.Bytes(rdRtaDst, ipb("192.168.5.0")) }}),
		rdDump("dump AF_UNSPEC after the changes", rdRtmsg{}, nil),
	)
	return steps
}

// rdSockets are the sockets of the route scenarios: the rule scenarios'
// senders plus route listeners that subscribe by a step.
var rdSockets = []SockSpec{
	{Name: "main", ExtAck: true},
	{Name: "strict", ExtAck: true, StrictCheck: true},
	{Name: "rmon", Listener: true},
	{Name: "rmon4", Listener: true},
}

// TestRouteDiffZeroLastuse checks the one normalization of the route steps.
func TestRouteDiffZeroLastuse(t *testing.T) {
	ci := make([]byte, 32) // struct rta_cacheinfo
	binary.NativeEndian.PutUint32(ci[0:], 2)
	binary.NativeEndian.PutUint32(ci[4:], 13)
	binary.NativeEndian.PutUint32(ci[12:], 7)
	body := append(rdRtmsg{Family: afInet, DstLen: 32}.bytes(), rdAttrs(func(ae *netlink.AttributeEncoder) {
		ae.Bytes(rdRtaDst, ipb("10.0.0.5"))
		ae.Bytes(rdRtaCacheinfo, ci)
	})...)
	route := Msg(rdRtmNewRoute, 0, 1, 0, body)
	other := Msg(rtmNewRule, 0, 2, 0, body)
	d := append(append([]byte(nil), route...), other...)
	rdZeroLastuse(d)
	want := append([]byte(nil), route...)
	clear(want[len(want)-32+4 : len(want)-32+8])
	if got := d[:len(route)]; string(got) != string(want) {
		t.Errorf("route message\n% x\nwant\n% x", got, want)
	}
	if got := d[len(route):]; string(got) != string(other) {
		t.Errorf("a rule message was changed:\n% x", got)
	}
	if binary.NativeEndian.Uint32(want[len(want)-32:]) != 2 || binary.NativeEndian.Uint32(want[len(want)-32+12:]) != 7 {
		t.Error("fields other than rta_lastuse changed")
	}
}

func rdScenarios() []diffScenario {
	return []diffScenario{
		{"route-dumps", routeDumpScenario()},
		{"route-get", routeGetScenario()},
		{"route-notify", routeNotifyScenario()},
	}
}

// rdSocket wraps a side's socket and zeroes rta_lastuse in the
// RTA_CACHEINFO of every RTM_NEWROUTE it receives: the kernel reports there
// the clock ticks since the cached dst of the answer was last used
// (rtnl_put_cacheinfo()), which depends on when the earlier lookups ran.
// It is the only normalization of the route steps.
type rdSocket struct {
	Socket
	kernel bool
}

func (s rdSocket) Recv() ([]byte, error) {
	b, err := s.Socket.Recv()
	if err == nil {
		rdZeroLastuse(b)
	}
	return b, err
}

// SetRecvTimeout forwards to the wrapped socket (both kinds have it).
func (s rdSocket) SetRecvTimeout(d time.Duration) error {
	return s.Socket.(interface{ SetRecvTimeout(time.Duration) error }).SetRecvTimeout(d)
}

const rdRtaCacheinfo = 12

// rdZeroLastuse zeroes, in place, rta_lastuse (the second u32 of struct
// rta_cacheinfo) of every RTM_NEWROUTE message of datagram b.
func rdZeroLastuse(b []byte) {
	ne := binary.NativeEndian
	for off := 0; off+16 <= len(b); {
		l := int(ne.Uint32(b[off:]))
		if l < 16 || off+l > len(b) {
			return
		}
		if ne.Uint16(b[off+4:]) == rdRtmNewRoute && l >= 16+12 {
			for a := off + 16 + 12; a+4 <= off+l; {
				al := int(ne.Uint16(b[a:]))
				if al < 4 || a+al > off+l {
					break
				}
				if ne.Uint16(b[a+2:])&0x3fff == rdRtaCacheinfo && al >= 4+8 {
					clear(b[a+8 : a+12])
				}
				a += (al + 3) &^ 3
			}
		}
		off += (l + 3) &^ 3
	}
}

// rdWrap makes side's sockets rdSockets.
func rdWrap(side *Side, kernel bool) *Side {
	dial := side.Dial
	side.Dial = func(spec SockSpec) (Socket, error) {
		s, err := dial(spec)
		if err != nil {
			return nil, err
		}
		return rdSocket{Socket: s, kernel: kernel}, nil
	}
	return side
}

// rdKernelSide is kernelSide that also records the namespace name for
// rdSettleStep.
func rdKernelSide(t *testing.T, name string) *Side {
	t.Helper()
	ns := kernelns.NewForTest(t, "nlemu-rdiff")
	rdKernelNS = ns.Name()
	t.Cleanup(func() { rdKernelNS = "" })
	return rdWrap(&Side{
		Name:   name,
		Timing: Timing{Wait: 5 * time.Second, Settle: 2 * time.Millisecond},
		Dial: func(spec SockSpec) (Socket, error) {
			return ns.Dial(kernelns.Options{ExtAck: spec.ExtAck, CapAck: spec.CapAck, StrictCheck: spec.StrictCheck, Groups: spec.Groups})
		},
	}, true)
}

// TestDiffRoutesKernelVsKernel runs the route scenarios on two kernel
// namespaces: a difference here is a nondeterministic step, not an nlemu bug.
func TestDiffRoutesKernelVsKernel(t *testing.T) {
	requireKernelNS(t)
	for _, sc := range rdScenarios() {
		t.Run(sc.name, func(t *testing.T) {
			a := rdKernelSide(t, "kernelA")
			nsA := rdKernelNS
			b := rdKernelSide(t, "kernelB")
			nsB := rdKernelNS
			// rdSettleStep settles one namespace per step run; RunDiff runs
			// each step on a then on b, so settle both every time.
			rdKernelNS = nsA + " " + nsB
			RunDiff(t, rdSockets, sc.steps, a, b)
		})
	}
}

// TestDiffRoutes is the route differential test: kernel (-) versus nlemu (+).
func TestDiffRoutes(t *testing.T) {
	requireKernelNS(t)
	var summary []string
	n := 0
	for _, sc := range rdScenarios() {
		n += len(sc.steps)
		t.Run(sc.name, func(t *testing.T) {
			k := rdKernelSide(t, "kernel")
			nl := rdWrap(nlemuSide(t, "nlemu"), false)
			for _, d := range RunDiff(t, rdSockets, sc.steps, k, nl) {
				summary = append(summary, fmt.Sprintf("%s step %d %q: %s", sc.name, d.Index, d.Step, d.What))
			}
		})
	}
	if len(summary) > 0 {
		t.Errorf("%d differences in %d steps:\n  %s", len(summary), n, strings.Join(summary, "\n  "))
	}
}
