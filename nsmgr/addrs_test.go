package nsmgr

import (
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/rtnl"
)

// nla builds one attribute.
func nla(typ uint16, data ...[]byte) []byte {
	var d []byte
	for _, x := range data {
		d = append(d, x...)
	}
	b := binary.NativeEndian.AppendUint16(nil, uint16(4+len(d)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, d...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func cstr(s string) []byte { return append([]byte(s), 0) }

// addrNS is a namespace with lo and a veth pair v1 (ifindex 2) / v0 (3),
// all up, and DAD completing at once.
func addrNS(t testing.TB) (*Namespace, *recorder) {
	t.Helper()
	m := NewManager(&rtnl.LockConfig{RTNL: &rtnl.RTNL{}})
	if err := m.Add("t"); err != nil {
		t.Fatal(err)
	}
	ns, _ := m.Get("t")
	ns.SetDADDelay(0)
	mon := &recorder{}
	var mask uint64
	for _, g := range []uint32{rtnlgrpLink, rtnl.RTNLGRP_IPV4_IFADDR, rtnl.RTNLGRP_IPV6_IFADDR, rtnl.RTNLGRP_IPV4_ROUTE, rtnl.RTNLGRP_IPV6_ROUTE, rtnlgrpIPv6Ifinfo} {
		mask |= 1 << (g - 1)
	}
	ns.SetGroups(mon, mask)
	ifi := make([]byte, rtnl.IfInfoLen)
	veth := append(append([]byte(nil), ifi...), nla(rtnl.IFLA_IFNAME, cstr("v0"))...)
	veth = append(veth, nla(rtnl.IFLA_LINKINFO, nla(1, cstr("veth")), nla(2, nla(1, ifi, nla(rtnl.IFLA_IFNAME, cstr("v1")))))...)
	doReq(t, ns, rtnl.RTM_NEWLINK, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, veth)
	for _, idx := range []byte{1, 2, 3} {
		up := make([]byte, rtnl.IfInfoLen)
		up[4], up[8], up[12] = idx, 1, 1
		doReq(t, ns, rtnl.RTM_NEWLINK, 0, up)
	}
	return ns, mon
}

func doReq(t testing.TB, ns *Namespace, typ, flags uint16, body []byte) *rtnl.Error {
	t.Helper()
	msg := startupReq(typ, rtnl.NLM_F_ACK|flags, body)
	_, err := ns.Do(&Request{Msg: msg, PortID: 99, Self: &recorder{}})
	return err
}

// addrReq is what `ip addr add|del` sends: ifaddrmsg, IFA_LOCAL,
// IFA_ADDRESS (the peer, or the address again) and extras.
func addrReq(family uint8, prefix string, idx byte, extra ...[]byte) []byte {
	p := netip.MustParsePrefix(prefix)
	b := []byte{family, byte(p.Bits()), 0, 0, idx, 0, 0, 0}
	b = append(b, nla(rtnl.IFA_LOCAL, p.Addr().AsSlice())...)
	b = append(b, nla(rtnl.IFA_ADDRESS, p.Addr().AsSlice())...)
	for _, e := range extra {
		b = append(b, e...)
	}
	return b
}

// describe renders the notifications of a capture as `ip monitor` lines
// that name what the order checks need.
func describe(t *testing.T, dgs [][]byte) []string {
	t.Helper()
	var out []string
	for _, dg := range dgs {
		for _, m := range rtnl.SplitDatagram(dg) {
			typ := uint16(m.Header.Type)
			switch typ {
			case rtnl.RTM_NEWADDR, rtnl.RTM_DELADDR:
				a, err := rtnl.DecodeAddrRequest(&m)
				if err != nil {
					t.Fatal(err)
				}
				kind := "addr"
				if typ == rtnl.RTM_DELADDR {
					kind = "deladdr"
				}
				out = append(out, fmt.Sprintf("%s %v/%d dev %d flags %#x", kind, a.Address, a.PrefixLen, a.Index, a.Flags))
			case rtnl.RTM_NEWROUTE, rtnl.RTM_DELROUTE:
				r, err := rtnl.DecodeRouteRequest(&m)
				if err != nil {
					t.Fatal(err)
				}
				kind := "route"
				if typ == rtnl.RTM_DELROUTE {
					kind = "delroute"
				}
				out = append(out, fmt.Sprintf("%s table %d type %d %v/%d dev %d", kind, r.TableID(), r.Type, r.Dst, r.DstLen, r.OIF))
			case rtnl.RTM_NEWLINK, rtnl.RTM_DELLINK:
				out = append(out, fmt.Sprintf("link family %d dev %d", m.Data[0], binary.NativeEndian.Uint32(m.Data[4:])))
			}
		}
	}
	return out
}

// TestAddrNotificationOrderMatchesKernel drives `ip addr add/del` and
// link changes through Namespace.Do and checks every notification in
// order against what the kernel sent for the same steps on Linux 6.18
// (captured with a raw socket on RTNLGRP_LINK, IPV4/IPV6_IFADDR,
// IPV4/IPV6_ROUTE and IPV6_IFINFO): rtmsg_ifa() before fib_add_ifaddr()'s
// local, prefix and broadcast routes; secondaries deleted before their
// primary (promote_secondaries 0); inet6_addr_add()'s prefix route before
// the address; nodad's address and local route at once; addrconf_ifdown()
// deleting routes, then addresses, and IPv4 routes going silently.
func TestAddrNotificationOrderMatchesKernel(t *testing.T) {
	ns, mon := addrNS(t)
	steps := []struct {
		name  string
		typ   uint16
		flags uint16
		body  []byte
		want  []string
	}{
		{"ip addr add 10.0.0.1/24 dev v0", rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE | rtnl.NLM_F_EXCL, addrReq(2, "10.0.0.1/24", 3), []string{
			"addr 10.0.0.1/24 dev 3 flags 0x80",
			"route table 255 type 2 10.0.0.1/32 dev 3",
			"route table 254 type 1 10.0.0.0/24 dev 3",
			"route table 255 type 3 10.0.0.255/32 dev 3",
		}},
		{"ip addr add 10.0.0.77/24 dev v0", rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE | rtnl.NLM_F_EXCL, addrReq(2, "10.0.0.77/24", 3), []string{
			"addr 10.0.0.77/24 dev 3 flags 0x81",
			"route table 255 type 2 10.0.0.77/32 dev 3",
		}},
		{"ip addr add 10.6.0.1/25 brd 10.6.0.127 dev v0 label v0:x", rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE | rtnl.NLM_F_EXCL,
			addrReq(2, "10.6.0.1/25", 3, nla(rtnl.IFA_BROADCAST, []byte{10, 6, 0, 127}), nla(rtnl.IFA_LABEL, cstr("v0:x"))), []string{
				"addr 10.6.0.1/25 dev 3 flags 0x80",
				"route table 255 type 2 10.6.0.1/32 dev 3",
				"route table 255 type 3 10.6.0.127/32 dev 3",
				"route table 254 type 1 10.6.0.0/25 dev 3",
			}},
		{"ip addr del 10.0.0.1/24 dev v0", rtnl.RTM_DELADDR, 0, addrReq(2, "10.0.0.1/24", 3), []string{
			"deladdr 10.0.0.77/24 dev 3 flags 0x81",
			"delroute table 255 type 2 10.0.0.77/32 dev 3",
			"deladdr 10.0.0.1/24 dev 3 flags 0x80",
			"delroute table 254 type 1 10.0.0.0/24 dev 3",
			"delroute table 255 type 3 10.0.0.255/32 dev 3",
			"delroute table 255 type 2 10.0.0.1/32 dev 3",
		}},
		{"ip addr add 2001:db8::1/64 dev v0 nodad", rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE | rtnl.NLM_F_EXCL,
			addrReq(10, "2001:db8::1/64", 3, nla(rtnl.IFA_FLAGS, []byte{2, 0, 0, 0})), []string{
				"route table 254 type 1 2001:db8::/64 dev 3",
				"addr 2001:db8::1/64 dev 3 flags 0x82",
				"route table 255 type 2 2001:db8::1/128 dev 3",
			}},
		{"ip addr del 10.6.0.1/25 dev v0", rtnl.RTM_DELADDR, 0, addrReq(2, "10.6.0.1/25", 3), []string{
			"deladdr 10.6.0.1/25 dev 3 flags 0x80",
			"delroute table 254 type 1 10.6.0.0/25 dev 3",
			"delroute table 255 type 3 10.6.0.127/32 dev 3",
			"delroute table 255 type 2 10.6.0.1/32 dev 3",
		}},
	}
	for _, st := range steps {
		mon.got = nil
		if err := doReq(t, ns, st.typ, st.flags, st.body); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		if d := cmp.Diff(st.want, describe(t, mon.got)); d != "" {
			t.Errorf("%s: notifications (-kernel +nlemu):\n%s", st.name, d)
		}
	}
}

// TestLoUpConfiguresLoopbackAddresses checks NETDEV_UP on lo: 127.0.0.1/8
// scope host with its three local-table routes, then ::1 and its local
// route, then addrconf's AF_INET6 ifinfo (as captured on the kernel).
func TestLoUpConfiguresLoopbackAddresses(t *testing.T) {
	ns := startupNS(t)
	mon := &recorder{}
	ns.SetGroups(mon, 1<<(rtnl.RTNLGRP_IPV4_IFADDR-1)|1<<(rtnl.RTNLGRP_IPV6_IFADDR-1)|1<<(rtnl.RTNLGRP_IPV4_ROUTE-1)|1<<(rtnl.RTNLGRP_IPV6_ROUTE-1)|1<<(rtnlgrpIPv6Ifinfo-1))
	up := make([]byte, rtnl.IfInfoLen)
	up[4], up[8], up[12] = 1, 1, 1
	doReq(t, ns, rtnl.RTM_NEWLINK, 0, up)
	want := []string{
		"addr 127.0.0.1/8 dev 1 flags 0x80",
		"route table 255 type 2 127.0.0.1/32 dev 1",
		"route table 255 type 2 127.0.0.0/8 dev 1",
		"route table 255 type 3 127.255.255.255/32 dev 1",
		"addr ::1/128 dev 1 flags 0x80",
		"route table 255 type 2 ::1/128 dev 1",
		"link family 10 dev 1",
	}
	if d := cmp.Diff(want, describe(t, mon.got)); d != "" {
		t.Errorf("lo up (-kernel +nlemu):\n%s", d)
	}
	// lo down: ::1 and its route go (addrconf_ifdown()), 127.0.0.1 stays
	// and its broadcast route goes silently (fib_disable_ip()).
	mon.got = nil
	up[8] = 0
	doReq(t, ns, rtnl.RTM_NEWLINK, 0, up)
	want = []string{"delroute table 255 type 2 ::1/128 dev 1", "deladdr ::1/128 dev 1 flags 0x80"}
	if d := cmp.Diff(want, describe(t, mon.got)); d != "" {
		t.Errorf("lo down (-kernel +nlemu):\n%s", d)
	}
	if n := len(ns.addrSet().V4); n != 1 {
		t.Errorf("lo down left %d IPv4 addresses, want 1", n)
	}
	// Up again: only the broadcast route is new.
	mon.got = nil
	up[8] = 1
	doReq(t, ns, rtnl.RTM_NEWLINK, 0, up)
	want = []string{
		"route table 255 type 3 127.255.255.255/32 dev 1",
		"addr ::1/128 dev 1 flags 0x80",
		"route table 255 type 2 ::1/128 dev 1",
		"link family 10 dev 1",
	}
	if d := cmp.Diff(want, describe(t, mon.got)); d != "" {
		t.Errorf("lo up again (-kernel +nlemu):\n%s", d)
	}
}

// TestAddrErrorsMatchKernel checks the errno and extack of the requests
// `ip addr` makes fail on the kernel (inet_rtm_newaddr(),
// inet_rtm_deladdr(), inet6_rtm_newaddr(), inet6_addr_del()).
func TestAddrErrorsMatchKernel(t *testing.T) {
	ns, _ := addrNS(t)
	if err := doReq(t, ns, rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, addrReq(2, "10.8.0.1/24", 3)); err != nil {
		t.Fatal(err)
	}
	if err := doReq(t, ns, rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, addrReq(10, "2001:db8:6::1/64", 3, nla(rtnl.IFA_FLAGS, []byte{2, 0, 0, 0}))); err != nil {
		t.Fatal(err)
	}
	noLocal := []byte{2, 24, 0, 0, 3, 0, 0, 0}
	for _, tc := range []struct {
		name  string
		typ   uint16
		flags uint16
		body  []byte
		errno syscall.Errno
		msg   string
	}{
		{"v4 duplicate", rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE | rtnl.NLM_F_EXCL, addrReq(2, "10.8.0.1/24", 3), syscall.EEXIST, "ipv4: Address already assigned"},
		{"v4 no device", rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE, addrReq(2, "10.8.0.1/24", 9), syscall.ENODEV, "ipv4: Device not found"},
		{"v4 prefix 33", rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE, func() []byte { b := addrReq(2, "10.8.0.1/24", 3); b[1] = 33; return b }(), syscall.EINVAL, "ipv4: Invalid prefix length"},
		{"v4 no local", rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE, noLocal, syscall.EINVAL, "ipv4: Local address is not supplied"},
		{"v4 scope differs from primary", rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE, func() []byte { b := addrReq(2, "10.8.0.2/24", 3); b[3] = rtnl.RT_SCOPE_LINK; return b }(), syscall.EINVAL, "ipv4: Invalid scope value"},
		{"v4 del missing", rtnl.RTM_DELADDR, 0, addrReq(2, "10.9.9.9/24", 3), syscall.EADDRNOTAVAIL, "ipv4: Address not found"},
		{"v4 del other prefix length", rtnl.RTM_DELADDR, 0, addrReq(2, "10.8.0.1/23", 3), syscall.EADDRNOTAVAIL, "ipv4: Address not found"},
		{"v4 lifetime zero", rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE, addrReq(2, "10.20.0.1/24", 3, nla(rtnl.IFA_CACHEINFO, make([]byte, 16))), syscall.EINVAL, "ipv4: address lifetime invalid"},
		{"v6 duplicate", rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE | rtnl.NLM_F_EXCL, addrReq(10, "2001:db8:6::1/64", 3), syscall.EEXIST, "ipv6: address already assigned"},
		{"v6 no device", rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE, addrReq(10, "2001:db8:6::1/64", 9), syscall.ENODEV, "ipv6: Unable to find the interface"},
		{"v6 del missing", rtnl.RTM_DELADDR, 0, addrReq(10, "2001:db8:9::1/64", 3), syscall.EADDRNOTAVAIL, "ipv6: address not found"},
		{"v6 no address", rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE, []byte{10, 64, 0, 0, 3, 0, 0, 0}, syscall.EINVAL, ""},
		{"v6 loopback on veth", rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE, addrReq(10, "::1/128", 3), syscall.EADDRNOTAVAIL, "ipv6: Cannot assign loopback address on this device"},
	} {
		err := doReq(t, ns, tc.typ, tc.flags, tc.body)
		var got, gotMsg = syscall.Errno(0), ""
		if err != nil {
			got, gotMsg = err.Errno, err.Msg
		}
		if got != tc.errno || gotMsg != tc.msg {
			t.Errorf("%s: got %v %q, want %v %q", tc.name, got, gotMsg, tc.errno, tc.msg)
		}
	}
}

// TestAddrDumpBytesMatchKernel dumps the addresses of v0 and compares
// them with the kernel's bytes for the same configuration (Linux 6.18),
// with the stamps taken from nlemu (they are times since boot).
func TestAddrDumpBytesMatchKernel(t *testing.T) {
	ns, _ := addrNS(t)
	for _, b := range [][]byte{
		addrReq(2, "10.5.0.1/24", 3),
		addrReq(2, "10.7.0.1/24", 3, nla(rtnl.IFA_FLAGS, []byte{0, 2, 0, 0}), nla(rtnl.IFA_RT_PRIORITY, []byte{50, 0, 0, 0})),
		addrReq(10, "2001:db8:6::1/64", 3, nla(rtnl.IFA_FLAGS, []byte{2, 0, 0, 0}), nla(rtnl.IFA_RT_PRIORITY, []byte{77, 0, 0, 0})),
	} {
		if err := doReq(t, ns, rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, b); err != nil {
			t.Fatal(err)
		}
	}
	// 10.5.0.1 peer 10.5.0.2/24.
	peer := []byte{2, 24, 0, 0, 3, 0, 0, 0}
	peer = append(peer, nla(rtnl.IFA_LOCAL, []byte{10, 5, 0, 1})...)
	peer = append(peer, nla(rtnl.IFA_ADDRESS, []byte{10, 5, 0, 2})...)
	if err := doReq(t, ns, rtnl.RTM_DELADDR, 0, addrReq(2, "10.5.0.1/24", 3)); err != nil {
		t.Fatal(err)
	}
	if err := doReq(t, ns, rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, peer); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"10.7.0.1":      "0218800003000000080001000a070001080002000a07000107000300763000000800080080020000080009003200000014000600ffffffffffffffff",
		"10.5.0.1":      "0218800003000000080001000a050002080002000a0500010700030076300000080008008000000014000600ffffffffffffffff",
		"2001:db8:6::1": "0a408200030000001400010020010db8000600000000000000000001080009004d00000014000600ffffffffffffffff0800080082000000",
	}
	for _, fam := range []uint8{rtnl.AF_INET, rtnl.AF_INET6} {
		o := runStartup(t, ns, rtnl.RTM_GETADDR, true, false, []byte{fam, 0, 0, 0, 0, 0, 0, 0})
		for _, h := range o.Msgs {
			raw, _ := hex.DecodeString(h)
			ms := rtnl.SplitDatagram(raw)
			a, err := rtnl.DecodeAddrRequest(&ms[0])
			if err != nil {
				t.Fatal(err)
			}
			key := a.Local.String()
			if fam == rtnl.AF_INET6 {
				key = a.Address.String()
			}
			w, ok := want[key]
			if !ok {
				continue
			}
			delete(want, key)
			// Without cstamp and tstamp (8 bytes: the end of an IPv4
			// message; IPv6 puts IFA_FLAGS after them).
			got := hex.EncodeToString(ms[0].Data)
			if fam == rtnl.AF_INET6 {
				got = got[:len(got)-32] + got[len(got)-16:]
			} else {
				got = got[:len(got)-16]
			}
			if d := cmp.Diff(w, got); d != "" {
				t.Errorf("%s (-kernel +nlemu):\n%s", key, d)
			}
		}
	}
	if len(want) != 0 {
		t.Errorf("not dumped: %v", want)
	}
}

// TestAddrEchoIPv4NotIPv6 checks a quirk measured on Linux 6.18: an IPv4
// RTM_NEWADDR with NLM_F_ECHO gets its notification back with the
// request's seq and port (rtmsg_ifa() → rtnl_notify()), an IPv6 one gets
// nothing (inet6_ifa_notify() names no requester), and IPv6
// notifications carry seq and port 0.
func TestAddrEchoIPv4NotIPv6(t *testing.T) {
	ns, mon := addrNS(t)
	for _, tc := range []struct {
		body     []byte
		wantEcho bool
	}{
		{addrReq(2, "10.77.0.1/24", 3), true},
		{addrReq(10, "2001:db8:77::1/64", 3, nla(rtnl.IFA_FLAGS, []byte{2, 0, 0, 0})), false},
	} {
		mon.got = nil
		self := &recorder{}
		msg := rtnl.SplitDatagram(rtnl.AppendMessage(nil, rtnl.RTM_NEWADDR, rtnl.NLM_F_REQUEST|rtnl.NLM_F_ACK|rtnl.NLM_F_ECHO|rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, 501, 99, tc.body))[0]
		if _, err := ns.Do(&Request{Msg: &msg, PortID: 99, Self: self}); err != nil {
			t.Fatal(err)
		}
		if got := len(self.got) == 1; got != tc.wantEcho {
			t.Errorf("family %d: echo %v, want %v (%d messages)", tc.body[0], got, tc.wantEcho, len(self.got))
		}
		for _, dg := range append(self.got, mon.got...) {
			for _, m := range rtnl.SplitDatagram(dg) {
				if uint16(m.Header.Type) != rtnl.RTM_NEWADDR {
					continue
				}
				wantSeq, wantPID := uint32(501), uint32(99)
				if tc.body[0] == rtnl.AF_INET6 {
					wantSeq, wantPID = 0, 0
				}
				if m.Header.Sequence != wantSeq || m.Header.PID != wantPID {
					t.Errorf("family %d: seq %d pid %d, want %d %d", tc.body[0], m.Header.Sequence, m.Header.PID, wantSeq, wantPID)
				}
			}
		}
	}
}

// TestAddrRequestsSurviveTruncation sends every prefix of real address
// requests, and bodies with every attribute type, as RTM_NEWADDR and
// RTM_DELADDR of both families: each gets an answer and the store stays
// consistent (every stored address is on an existing device).
func TestAddrRequestsSurviveTruncation(t *testing.T) {
	ns, _ := addrNS(t)
	bodies := [][]byte{
		addrReq(2, "10.0.0.1/24", 3, nla(rtnl.IFA_BROADCAST, []byte{10, 0, 0, 255}), nla(rtnl.IFA_LABEL, cstr("v0:a")), nla(rtnl.IFA_CACHEINFO, make([]byte, 16))),
		addrReq(10, "2001:db8::1/64", 3, nla(rtnl.IFA_FLAGS, []byte{2, 0, 0, 0}), nla(rtnl.IFA_RT_PRIORITY, []byte{5, 0, 0, 0})),
	}
	for typ := uint16(1); typ <= rtnl.IFA_MAX+2; typ++ {
		bodies = append(bodies, append([]byte{2, 24, 0, 0, 3, 0, 0, 0}, nla(typ, []byte{1, 2})...))
		bodies = append(bodies, append([]byte{10, 64, 0, 0, 3, 0, 0, 0}, nla(typ, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17})...))
	}
	for _, b := range bodies {
		for n := 1; n <= len(b); n++ {
			for _, typ := range []uint16{rtnl.RTM_NEWADDR, rtnl.RTM_DELADDR} {
				doReq(t, ns, typ, rtnl.NLM_F_CREATE, b[:n])
			}
		}
	}
	set := ns.addrSet()
	for _, a := range append(set.V4, set.V6...) {
		if !ns.hasDevice(a.Index) {
			t.Errorf("address %v on missing device %d", a.Local, a.Index)
		}
	}
}

// TestAddrTentativeUntilDAD checks an address whose DAD has not finished
// (a DAD time longer than the test): inet6_addr_add() announces it
// tentative after its prefix route, it has no local route, and deleting
// it removes the prefix route only (__ipv6_ifa_notify() has no local
// route to remove).
func TestAddrTentativeUntilDAD(t *testing.T) {
	ns, mon := addrNS(t)
	ns.SetDADDelay(time.Hour)
	mon.got = nil
	if err := doReq(t, ns, rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, addrReq(10, "2001:db8:9::1/64", 3)); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"route table 254 type 1 2001:db8:9::/64 dev 3",
		"addr 2001:db8:9::1/64 dev 3 flags 0xc0",
	}
	if d := cmp.Diff(want, describe(t, mon.got)); d != "" {
		t.Errorf("add (-kernel +nlemu):\n%s", d)
	}
	mon.got = nil
	if err := doReq(t, ns, rtnl.RTM_DELADDR, 0, addrReq(10, "2001:db8:9::1/64", 3)); err != nil {
		t.Fatal(err)
	}
	want = []string{
		"deladdr 2001:db8:9::1/64 dev 3 flags 0xc0",
		"delroute table 254 type 1 2001:db8:9::/64 dev 3",
	}
	if d := cmp.Diff(want, describe(t, mon.got)); d != "" {
		t.Errorf("delete (-kernel +nlemu):\n%s", d)
	}
}

// TestAddrGetIPv6AnyDeviceForUnknownIndex checks RTM_GETADDR without
// NLM_F_DUMP as measured on Linux 6.18: IPv6 answers the address
// (inet6_rtm_getaddr()), an ifindex naming no device searches every
// device, another existing device is EADDRNOTAVAIL, no address EINVAL;
// IPv4 has no such handler (EOPNOTSUPP).
func TestAddrGetIPv6AnyDeviceForUnknownIndex(t *testing.T) {
	ns, _ := addrNS(t)
	if err := doReq(t, ns, rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE, addrReq(10, "2001:db8:77::1/64", 3, nla(rtnl.IFA_FLAGS, []byte{2, 0, 0, 0}))); err != nil {
		t.Fatal(err)
	}
	a := nla(rtnl.IFA_ADDRESS, netip.MustParseAddr("2001:db8:77::1").AsSlice())
	for _, tc := range []struct {
		name   string
		body   []byte
		strict bool
		errno  syscall.Errno
		reply  bool
	}{
		{"by device", append([]byte{10, 0, 0, 0, 3, 0, 0, 0}, a...), false, 0, true},
		{"index 0", append([]byte{10, 0, 0, 0, 0, 0, 0, 0}, a...), false, 0, true},
		{"index of no device", append([]byte{10, 0, 0, 0, 99, 0, 0, 0}, a...), false, 0, true},
		{"other device", append([]byte{10, 0, 0, 0, 2, 0, 0, 0}, a...), false, syscall.EADDRNOTAVAIL, false},
		{"no address", []byte{10, 0, 0, 0, 3, 0, 0, 0}, false, syscall.EINVAL, false},
		{"strict prefix length", append([]byte{10, 64, 0, 0, 3, 0, 0, 0}, a...), true, syscall.EINVAL, false},
		{"strict IFA_FLAGS", append(append([]byte{10, 0, 0, 0, 3, 0, 0, 0}, a...), nla(rtnl.IFA_FLAGS, make([]byte, 4))...), true, syscall.EINVAL, false},
		{"IPv4", append([]byte{2, 0, 0, 0, 3, 0, 0, 0}, nla(rtnl.IFA_LOCAL, []byte{10, 5, 0, 1})...), false, syscall.EOPNOTSUPP, false},
	} {
		self := &recorder{}
		_, err := ns.Do(&Request{Msg: startupReq(rtnl.RTM_GETADDR, 0, tc.body), Strict: tc.strict, Self: self})
		var got syscall.Errno
		if err != nil {
			got = err.Errno
		}
		if got != tc.errno || (len(self.got) == 1) != tc.reply {
			t.Errorf("%s: errno %v, %d replies; want %v, reply %v", tc.name, got, len(self.got), tc.errno, tc.reply)
		}
	}
}

// TestRenameLabelsNumberedByPosition checks inetdev_changename()'s quirk,
// measured on Linux 6.18: after a rename the first IPv4 address is
// labelled with the new name, the others keep their ":suffix", and one
// without a suffix gets ":N", N its position counting the first as 1.
func TestRenameLabelsNumberedByPosition(t *testing.T) {
	ns, _ := addrNS(t)
	for _, b := range [][]byte{
		addrReq(2, "10.0.0.1/24", 3),
		addrReq(2, "10.0.0.2/24", 3, nla(rtnl.IFA_LABEL, cstr("v0:a"))),
		addrReq(2, "10.1.0.1/24", 3),
	} {
		if err := doReq(t, ns, rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, b); err != nil {
			t.Fatal(err)
		}
	}
	ifi := make([]byte, rtnl.IfInfoLen)
	ifi[4] = 3
	if err := doReq(t, ns, rtnl.RTM_NEWLINK, 0, append(ifi, nla(rtnl.IFLA_IFNAME, cstr("eth7"))...)); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, a := range ns.addrSet().OfDevice(rtnl.AF_INET, 3) {
		got = append(got, a.Local.String()+" "+a.Label)
	}
	want := []string{"10.0.0.1 eth7", "10.1.0.1 eth7:2", "10.0.0.2 eth7:a"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("labels (-kernel +nlemu):\n%s", d)
	}
}
