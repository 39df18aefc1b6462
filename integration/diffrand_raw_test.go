package integration

// Raw requests as the Go netlink libraries build them, which iproute2 never
// sends (github.com/vishvananda/netlink, github.com/jsimonetti/rtnetlink):
// rtm_table and RTA_TABLE both set (and disagreeing), RTA_TABLE 0, routes
// with RTA_PRIORITY / RTA_PREFSRC / RTNH_F_ONLINK in rtm_flags and a
// one-hop RTA_MULTIPATH, addresses with only IFA_LOCAL or only IFA_ADDRESS,
// IFA_FLAGS beside the header's ifa_flags, IFA_CACHEINFO lifetimes, and the
// dumps those libraries make (a table in the dump's rtmsg, an address dump
// of one device). Each reply and each dump after it is compared byte for
// byte with the kernel's, over the route scenarios' harness
// (routeget_diff_test.go: rdSetup, rdSocket's rta_lastuse normalization).
// One more normalization (glSocket): the cstamp and tstamp of every
// address's IFA_CACHEINFO, the times (in hundredths of a second since
// boot) the address was created and last changed; its lifetimes are
// compared.

import (
	"encoding/binary"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mdlayher/netlink"

	"github.com/nlemu/nlemu/integration/kernelns"
)

const (
	glRtmGetAddr   = 22
	glRtmGetLink   = 18
	glIfaLabel     = 3
	glIfaBroadcast = 4
	glIfaCacheinfo = 6
	glIflaExtMask  = 29
	glRtnhFOnlink  = 0x4
	glIfaFNoprefix = 0x200
	glIfaFPerm     = 0x80
)

// glCacheinfo is struct ifa_cacheinfo with the given lifetimes (what
// vishvananda's AddrAdd sends when ValidLft is set).
func glCacheinfo(preferred, valid uint32) []byte {
	b := make([]byte, 16)
	binary.NativeEndian.PutUint32(b[0:], preferred)
	binary.NativeEndian.PutUint32(b[4:], valid)
	return b
}

// glAddr is an RTM_NEWADDR with header flags hflags and the attributes of fn.
func glAddr(name string, flags uint16, fam, plen, hflags uint8, index uint32, fn func(ae *netlink.AttributeEncoder)) Step {
	body := rdIfaddr(fam, plen, index)
	body[2] = hflags
	return rdStep(name, rdRtmNewAddr, flags, append(body, rdAttrs(fn)...))
}

// glDumps are the state dumps after a change: routes and addresses of both
// families (AF_UNSPEC).
func glDumps(what string) []Step {
	return []Step{
		rdDump(what+": route dump", rdRtmsg{}, nil),
		rdStep(what+": addr dump", glRtmGetAddr, nlmFRequest|nlmFDump, rdIfaddr(0, 0, 0)),
	}
}

func goLibScenario() []Step {
	steps := rdSetup()
	add := func(name string, flags uint16, r rdRoute) {
		steps = append(steps, rdRouteStep(name, rdRtmNewRoute, flags, r))
		steps = append(steps, glDumps(name)...)
	}
	dst := func(a string) func(ae *netlink.AttributeEncoder) {
		return func(ae *netlink.AttributeEncoder) { ae.Bytes(rdRtaDst, ipb(a)) }
	}
	all := func(fs ...func(ae *netlink.AttributeEncoder)) func(ae *netlink.AttributeEncoder) {
		return func(ae *netlink.AttributeEncoder) {
			for _, f := range fs {
				f(ae)
			}
		}
	}
	u32 := func(t uint16, v uint32) func(ae *netlink.AttributeEncoder) {
		return func(ae *netlink.AttributeEncoder) { ae.Uint32(t, v) }
	}
	hdr := func(fam, plen, table uint8) rdRtmsg {
		return rdRtmsg{Family: fam, DstLen: plen, Table: table, Protocol: rdRtProtStatic, Type: rdRtnUnicast}
	}
	ce := uint16(fAckExcl)
	// vishvananda: table < 256 in the header only; jsimonetti: both.
	add("route 172.16.1.0/24 dev 3 rtm_table 100 + RTA_TABLE 100", ce, rdRoute{hdr(afInet, 24, 100), all(dst("172.16.1.0"), u32(rdRtaOif, 3), u32(rdRtaTable, 100))})
	add("route 172.16.2.0/24 dev 3 rtm_table 100 + RTA_TABLE 200 (RTA_TABLE wins)", ce, rdRoute{hdr(afInet, 24, 100), all(dst("172.16.2.0"), u32(rdRtaOif, 3), u32(rdRtaTable, 200))})
	add("route 172.16.3.0/24 dev 3 rtm_table 100 + RTA_TABLE 0", ce, rdRoute{hdr(afInet, 24, 100), all(dst("172.16.3.0"), u32(rdRtaOif, 3), u32(rdRtaTable, 0))})
	add("route6 2001:db8:31::/48 dev 3 rtm_table 100 + RTA_TABLE 0", ce, rdRoute{hdr(afInet6, 48, 100), all(dst("2001:db8:31::"), u32(rdRtaOif, 3), u32(rdRtaTable, 0))})
	add("route6 2001:db8:32::/48 dev 3 rtm_table 0 + RTA_TABLE 1000000", ce, rdRoute{hdr(afInet6, 48, 0), all(dst("2001:db8:32::"), u32(rdRtaOif, 3), u32(rdRtaTable, 1000000))})
	add("route 172.16.4.0/24 rtm_table 0, no RTA_TABLE", ce, rdRoute{hdr(afInet, 24, 0), all(dst("172.16.4.0"), u32(rdRtaOif, 3))})
	// vishvananda's attribute set: dst, prefsrc, gateway, oif, priority.
	add("route 172.16.5.0/24 src 10.0.0.1 via 10.0.0.2 dev 3 metric 50 scope universe", ce, rdRoute{hdr(afInet, 24, rtTableMain), all(dst("172.16.5.0"), func(ae *netlink.AttributeEncoder) { ae.Bytes(rdRtaPrefsrc, ipb("10.0.0.1")) }, rdGw("10.0.0.2"), u32(rdRtaOif, 3), u32(rdRtaPriority, 50))})
	add("route6 2001:db8:35::/48 src 2001:db8::1 via 2001:db8::2 dev 3 metric 50", ce, rdRoute{hdr(afInet6, 48, rtTableMain), all(dst("2001:db8:35::"), func(ae *netlink.AttributeEncoder) { ae.Bytes(rdRtaPrefsrc, ipb("2001:db8::1")) }, rdGw("2001:db8::2"), u32(rdRtaOif, 3), u32(rdRtaPriority, 50))})
	// RTNH_F_ONLINK in rtm_flags (vishvananda's FLAG_ONLINK).
	onlink := func(fam uint8, plen uint8, table uint8) rdRtmsg {
		h := hdr(fam, plen, table)
		h.Flags = glRtnhFOnlink
		return h
	}
	add("route 172.16.6.0/24 via 192.0.2.1 dev 3 onlink (rtm_flags)", ce, rdRoute{onlink(afInet, 24, rtTableMain), all(dst("172.16.6.0"), rdGw("192.0.2.1"), u32(rdRtaOif, 3))})
	add("route6 2001:db8:36::/48 via 2001:db8:77::1 dev 3 onlink (rtm_flags)", ce, rdRoute{onlink(afInet6, 48, rtTableMain), all(dst("2001:db8:36::"), rdGw("2001:db8:77::1"), u32(rdRtaOif, 3))})
	add("route 172.16.7.0/24 onlink without a device", ce, rdRoute{onlink(afInet, 24, rtTableMain), all(dst("172.16.7.0"), rdGw("192.0.2.1"))})
	// One-hop RTA_MULTIPATH (vishvananda's MultiPath with one NexthopInfo).
	mp := func(gw string, dev uint32) func(ae *netlink.AttributeEncoder) {
		return func(ae *netlink.AttributeEncoder) {
			g := rdAttrs(rdGw(gw))
			h := make([]byte, 8, 8+len(g))
			binary.NativeEndian.PutUint16(h[0:], uint16(8+len(g)))
			binary.NativeEndian.PutUint32(h[4:], dev)
			ae.Bytes(rdRtaMultipth, append(h, g...))
		}
	}
	add("route 172.16.8.0/24 multipath of one hop via 10.0.0.2 dev 3", ce, rdRoute{hdr(afInet, 24, rtTableMain), all(dst("172.16.8.0"), mp("10.0.0.2", 3))})
	add("route6 2001:db8:38::/48 multipath of one hop via 2001:db8::2 dev 3", ce, rdRoute{hdr(afInet6, 48, rtTableMain), all(dst("2001:db8:38::"), mp("2001:db8::2", 3))})
	// RouteReplace: CREATE|REPLACE, onto an existing route and a new one.
	rep := uint16(nlmFRequest | nlmFAck | nlmFCreate | nlmFReplace)
	add("replace 172.16.5.0/24 via 10.0.0.3 dev 3 metric 50", rep, rdRoute{hdr(afInet, 24, rtTableMain), all(dst("172.16.5.0"), rdGw("10.0.0.3"), u32(rdRtaOif, 3), u32(rdRtaPriority, 50))})
	add("replace6 2001:db8:35::/48 via 2001:db8::3 dev 3 metric 50", rep, rdRoute{hdr(afInet6, 48, rtTableMain), all(dst("2001:db8:35::"), rdGw("2001:db8::3"), u32(rdRtaOif, 3), u32(rdRtaPriority, 50))})
	// Dumps the libraries make: a table in a non-strict dump's rtmsg
	// (ignored by the kernel), and RTA_TABLE.
	steps = append(steps,
		rdDump("dump AF_INET rtm_table 100", rdRtmsg{Family: afInet, Table: 100}, nil),
		rdDump("dump AF_INET6 with RTA_TABLE 1000000 (non-strict)", rdRtmsg{Family: afInet6}, u32(rdRtaTable, 1000000)),
		onSock("strict", rdDump("strict dump AF_INET rtm_table 100", rdRtmsg{Family: afInet, Table: 100}, nil)),
		onSock("strict", rdDump("strict dump AF_INET6 RTA_TABLE 1000000", rdRtmsg{Family: afInet6}, u32(rdRtaTable, 1000000))),
		onSock("strict", rdDump("strict dump AF_INET RTA_OIF 3", rdRtmsg{Family: afInet}, u32(rdRtaOif, 3))),
	)
	// Addresses.
	addr := func(name string, flags uint16, fam, plen, hflags uint8, index uint32, fn func(ae *netlink.AttributeEncoder)) {
		steps = append(steps, glAddr(name, flags, fam, plen, hflags, index, fn))
		steps = append(steps, glDumps(name)...)
	}
	local := func(a string) func(ae *netlink.AttributeEncoder) {
		return func(ae *netlink.AttributeEncoder) { ae.Bytes(rdIfaLocal, ipb(a)) }
	}
	address := func(a string) func(ae *netlink.AttributeEncoder) {
		return func(ae *netlink.AttributeEncoder) { ae.Bytes(rdIfaAddress, ipb(a)) }
	}
	addr("addr 10.30.0.1/24 IFA_LOCAL only", ce, afInet, 24, 0, 3, local("10.30.0.1"))
	addr("addr 10.31.0.1/24 IFA_ADDRESS only", ce, afInet, 24, 0, 3, address("10.31.0.1"))
	addr("addr 10.32.0.1/24 local 10.32.0.1 address 10.32.0.9 (a peer)", ce, afInet, 24, 0, 3, all(local("10.32.0.1"), address("10.32.0.9")))
	addr("addr6 2001:db8:40::1/64 IFA_ADDRESS only, IFA_FLAGS nodad", ce, afInet6, 64, 0, 3, all(address("2001:db8:40::1"), u32(rdIfaFlags, rdIfaFNodad)))
	addr("addr6 2001:db8:41::1/64 IFA_LOCAL only, nodad in the header", ce, afInet6, 64, rdIfaFNodad, 3, local("2001:db8:41::1"))
	addr("addr 10.33.0.1/24 header permanent, IFA_FLAGS noprefixroute", ce, afInet, 24, glIfaFPerm, 3, all(local("10.33.0.1"), address("10.33.0.1"), u32(rdIfaFlags, glIfaFNoprefix)))
	addr("addr 10.34.0.1/24 label, broadcast, cacheinfo 300/600", ce, afInet, 24, 0, 3, all(local("10.34.0.1"), address("10.34.0.1"),
		func(ae *netlink.AttributeEncoder) {
			ae.String(glIfaLabel, "v0:lib")
			ae.Bytes(glIfaBroadcast, ipb("10.34.0.255"))
			ae.Bytes(glIfaCacheinfo, glCacheinfo(300, 600))
		}))
	addr("addr6 2001:db8:42::1/64 nodad cacheinfo preferred > valid", ce, afInet6, 64, 0, 3, all(local("2001:db8:42::1"), u32(rdIfaFlags, rdIfaFNodad),
		func(ae *netlink.AttributeEncoder) { ae.Bytes(glIfaCacheinfo, glCacheinfo(900, 600)) }))
	addr("addr 10.35.0.1/24 cacheinfo valid 0", ce, afInet, 24, 0, 3, all(local("10.35.0.1"),
		func(ae *netlink.AttributeEncoder) { ae.Bytes(glIfaCacheinfo, glCacheinfo(0, 0)) }))
	addr("addr replace 10.30.0.1/24 with IFA_FLAGS noprefixroute", uint16(nlmFRequest|nlmFAck|nlmFCreate|nlmFReplace), afInet, 24, 0, 3, all(local("10.30.0.1"), u32(rdIfaFlags, glIfaFNoprefix)))
	steps = append(steps,
		onSock("strict", rdStep("strict addr dump of ifindex 3", glRtmGetAddr, nlmFRequest|nlmFDump, rdIfaddr(afInet, 0, 3))),
		onSock("strict", rdStep("strict addr6 dump of ifindex 5", glRtmGetAddr, nlmFRequest|nlmFDump, rdIfaddr(afInet6, 0, 5))),
		rdStep("addr dump AF_INET of ifindex 3 (non-strict: every device)", glRtmGetAddr, nlmFRequest|nlmFDump, rdIfaddr(afInet, 0, 3)),
	)
	return steps
}

// glSocket zeroes cstamp and tstamp in the IFA_CACHEINFO of every
// RTM_NEWADDR it receives.
type glSocket struct{ Socket }

func (s glSocket) Recv() ([]byte, error) {
	b, err := s.Socket.Recv()
	if err == nil {
		glZeroStamps(b)
	}
	return b, err
}

// SetRecvTimeout forwards to the wrapped socket.
func (s glSocket) SetRecvTimeout(d time.Duration) error {
	return s.Socket.(interface{ SetRecvTimeout(time.Duration) error }).SetRecvTimeout(d)
}

// glZeroStamps zeroes, in place, the last two u32 of struct ifa_cacheinfo
// (cstamp, tstamp) of every RTM_NEWADDR of datagram b.
func glZeroStamps(b []byte) {
	ne := binary.NativeEndian
	for off := 0; off+16 <= len(b); {
		l := int(ne.Uint32(b[off:]))
		if l < 16 || off+l > len(b) {
			return
		}
		if ne.Uint16(b[off+4:]) == rdRtmNewAddr && l >= 16+8 {
			m := b[off+16+8 : off+l]
			for a := 0; a+4 <= len(m); {
				al := int(ne.Uint16(m[a:]))
				if al < 4 || a+al > len(m) {
					break
				}
				if ne.Uint16(m[a+2:]) == glIfaCacheinfo && al == 4+16 {
					clear(m[a+4+8 : a+4+16])
				}
				a += (al + 3) &^ 3
			}
		}
		off += (l + 3) &^ 3
	}
}

func TestDiffGoLibZeroStamps(t *testing.T) {
	body := append(rdIfaddr(afInet, 24, 3), rdAttrs(func(ae *netlink.AttributeEncoder) {
		ae.Bytes(rdIfaLocal, ipb("10.0.0.1"))
		ci := glCacheinfo(300, 600)
		binary.NativeEndian.PutUint32(ci[8:], 77)
		binary.NativeEndian.PutUint32(ci[12:], 88)
		ae.Bytes(glIfaCacheinfo, ci)
	})...)
	m := Msg(rdRtmNewAddr, 0, 1, 0, body)
	glZeroStamps(m)
	ci := m[len(m)-16:]
	if got := [4]uint32{binary.NativeEndian.Uint32(ci), binary.NativeEndian.Uint32(ci[4:]), binary.NativeEndian.Uint32(ci[8:]), binary.NativeEndian.Uint32(ci[12:])}; got != [4]uint32{300, 600, 0, 0} {
		t.Errorf("cacheinfo after glZeroStamps = %v, want [300 600 0 0]", got)
	}
}

// glWrap is rdWrap with glSocket inside rdSocket (rdSettleStep asks for
// rdSocket).
func glWrap(side *Side, kernel bool) *Side {
	dial := side.Dial
	side.Dial = func(spec SockSpec) (Socket, error) {
		s, err := dial(spec)
		if err != nil {
			return nil, err
		}
		return rdSocket{Socket: glSocket{s}, kernel: kernel}, nil
	}
	return side
}

// TestDiffGoLibRequests is kernel (-) versus nlemu (+) over goLibScenario.
func TestDiffGoLibRequests(t *testing.T) {
	requireKernelNS(t)
	steps := goLibScenario()
	ns := kernelns.NewForTest(t, "nlemu-rdiff")
	rdKernelNS = ns.Name()
	t.Cleanup(func() { rdKernelNS = "" })
	k := glWrap(&Side{
		Name:   "kernel",
		Timing: Timing{Wait: 5 * time.Second, Settle: 2 * time.Millisecond},
		Dial: func(spec SockSpec) (Socket, error) {
			return ns.Dial(kernelns.Options{ExtAck: spec.ExtAck, CapAck: spec.CapAck, StrictCheck: spec.StrictCheck, Groups: spec.Groups})
		},
	}, true)
	nl := glWrap(nlemuSide(t, "nlemu"), false)
	var summary []string
	for _, d := range RunDiff(t, rdSockets, steps, k, nl) {
		summary = append(summary, fmt.Sprintf("step %d %q: %s", d.Index, d.Step, d.What))
	}
	if len(summary) > 0 {
		t.Errorf("%d differences in %d steps:\n  %s", len(summary), len(steps), strings.Join(summary, "\n  "))
	}
}
