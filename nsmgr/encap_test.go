package nsmgr

import (
	"encoding/binary"
	"encoding/hex"
	"net/netip"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/rtnl"
)

// encAttr is one nested attribute, padded.
func encAttr(t uint16, payload []byte) []byte {
	b := binary.NativeEndian.AppendUint16(nil, uint16(4+len(payload)))
	b = binary.NativeEndian.AppendUint16(b, t)
	b = append(b, payload...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// rtEncap adds RTA_ENCAP (nest) and RTA_ENCAP_TYPE (typ) to a request.
func rtEncap(typ uint16, nest []byte) func(*rtnl.RouteMsg) {
	return func(m *rtnl.RouteMsg) {
		m.EncapType, m.Encap = typ, nest
		m.Set(rtnl.RTA_ENCAP)
		m.Set(rtnl.RTA_ENCAP_TYPE)
	}
}

func encIPDst(a string) []byte {
	v := netip.MustParseAddr(a).As4()
	return encAttr(rtnl.LWTUNNEL_IP_DST, v[:])
}

func encIP6Dst(a string) []byte {
	v := netip.MustParseAddr(a).As16()
	return encAttr(rtnl.LWTUNNEL_IP_DST, v[:])
}

// rtScopeUniverse is the rtm_scope a raw request leaves at 0.
func rtScopeUniverse(m *rtnl.RouteMsg) { m.Scope = rtnl.RT_SCOPE_UNIVERSE }

// encDump returns the main-table routes of family fam as the probe printed
// them (the rtmsg and attributes in hex).
func encDump(t *testing.T, ns *Namespace, fam uint8) []string {
	t.Helper()
	msgs, err, _, _ := rtDump(t, ns, rtnl.RouteMsg{Family: fam}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range msgs {
		if uint16(m.Header.Type) != rtnl.RTM_NEWROUTE || m.Data[4] != rtnl.RT_TABLE_MAIN {
			continue
		}
		out = append(out, hex.EncodeToString(m.Data))
	}
	return out
}

// TestEncapDumpMatchesKernel: vishvananda/netlink's IP6tnlEncap on an IPv4
// route of lo (TestIP6tnlRouteAddDel's request: a 5-byte HOPLIMIT last)
// and an ip encapsulation with an id on an IPv6 route, dumped
// byte for byte as Linux 6.18 dumped them (RTA_ENCAP without
// NLA_F_NESTED after RTA_OIF, then RTA_ENCAP_TYPE).
func TestEncapDumpMatchesKernel(t *testing.T) {
	ns := routeTestNS(t)
	hop := binary.NativeEndian.AppendUint16(nil, 5)
	hop = append(binary.NativeEndian.AppendUint16(hop, rtnl.LWTUNNEL_IP_TTL), 0)
	vnl := append(append(encAttr(rtnl.LWTUNNEL_IP_ID, make([]byte, 8)), encIP6Dst("2001:db8::")...), encAttr(rtnl.LWTUNNEL_IP_SRC, make([]byte, 16))...)
	vnl = append(vnl, hop...)
	if err := rtDo(t, ns, nil, rtIP("add", "192.168.99.0/24", rtDevLo, rtScopeUniverse, rtEncap(rtnl.LWTUNNEL_ENCAP_IP6, vnl))); err != nil {
		t.Fatal(err)
	}
	ipv4 := append(encAttr(rtnl.LWTUNNEL_IP_ID, []byte{0, 0, 0, 0, 0, 0, 0, 5}), encIPDst("10.0.0.1")...)
	if err := rtDo(t, ns, nil, rtIP("add", "2001:db8:2::/64", rtDevLo, rtEncap(rtnl.LWTUNNEL_ENCAP_IP, ipv4))); err != nil {
		t.Fatal(err)
	}
	want4 := []string{"02180000fe0300010000000008000f00fe00000008000100c0a863000800040001000000500016000c00010000000000000000001400020020010db800000000000000000000000014000300000000000000000000000000000000000500050000000000050004000000000006000600000000000600150004000000"}
	if d := cmp.Diff(want4, encDump(t, ns, rtnl.AF_INET)); d != "" {
		t.Errorf("IPv4 dump (-kernel +nlemu):\n%s", d)
	}
	got6 := encDump(t, ns, rtnl.AF_INET6)
	want6 := "0a400000fe0300010000000008000f00fe0000001400010020010db800020000000000000000000008000600000400000800040001000000380016000c0001000000000000000005080002000a0000010800030000000000050005000000000005000400000000000600060000000000060015000200000024000c0000000000000000000000000000000000000000000000000000000000000000000500140000000000"
	found := false
	for _, g := range got6 {
		found = found || g == want6
	}
	if !found {
		t.Errorf("IPv6 dump %q lacks the kernel's\n%s", got6, want6)
	}
}

// TestEncapDeleteComparesOnlyBesideDevice: an IPv4 delete compares the
// encapsulation only when it names a device or gateway (fib_nh_match()
// calls fib_encap_match() there), and one whose state cannot be built
// matches any route (fib_encap_match() returns 0 when
// lwtunnel_build_state() fails); measured on Linux 6.18.
func TestEncapDeleteComparesOnlyBesideDevice(t *testing.T) {
	a := rtEncap(rtnl.LWTUNNEL_ENCAP_IP, encIPDst("1.1.1.1"))
	b := rtEncap(rtnl.LWTUNNEL_ENCAP_IP, encIPDst("2.2.2.2"))
	bad := rtEncap(rtnl.LWTUNNEL_ENCAP_IP, encAttr(rtnl.LWTUNNEL_IP_ID, []byte{1}))
	other := rtEncap(rtnl.LWTUNNEL_ENCAP_IP6, encIP6Dst("::1"))
	noType := func(m *rtnl.RouteMsg) {
		b(m)
		m.Present &^= 1 << rtnl.RTA_ENCAP_TYPE
	}
	for _, tc := range []struct {
		name  string
		opts  []func(*rtnl.RouteMsg)
		errno syscall.Errno
	}{
		{"other_encap_with_dev", []func(*rtnl.RouteMsg){b, rtDevLo}, syscall.ESRCH},
		{"other_encap_without_dev", []func(*rtnl.RouteMsg){b}, 0},
		{"other_type_with_dev", []func(*rtnl.RouteMsg){other, rtDevLo}, syscall.ESRCH},
		{"no_encap_type_with_dev", []func(*rtnl.RouteMsg){noType, rtDevLo}, 0},
		{"unbuildable_with_dev", []func(*rtnl.RouteMsg){bad, rtDevLo}, 0},
		{"no_encap_with_dev", []func(*rtnl.RouteMsg){rtDevLo}, 0},
		{"same_with_dev", []func(*rtnl.RouteMsg){a, rtDevLo}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := routeTestNS(t)
			if err := rtDo(t, ns, nil, rtIP("add", "10.8.0.0/24", rtDevLo, a)); err != nil {
				t.Fatal(err)
			}
			var got syscall.Errno
			if err := rtDo(t, ns, nil, rtIP("del", "10.8.0.0/24", tc.opts...)); err != nil {
				got = err.Errno
			}
			if got != tc.errno {
				t.Errorf("delete: errno %v, want %v", got, tc.errno)
			}
		})
	}
	// A route without an encapsulation does not match a delete that
	// has one beside the device (lwtunnel_cmp_encap() of none and one).
	ns := routeTestNS(t)
	if err := rtDo(t, ns, nil, rtIP("add", "10.7.0.0/24", rtDevLo)); err != nil {
		t.Fatal(err)
	}
	if err := rtDo(t, ns, nil, rtIP("del", "10.7.0.0/24", rtDevLo, a)); err == nil || err.Errno != syscall.ESRCH {
		t.Errorf("delete of a plain route with an encapsulation: %v, want ESRCH", err)
	}
}

// TestEncapTellsIPv4AppendsApart: fib_find_info() compares the hops'
// lwtunnel states (nh_comp()), so an append of the same route with another
// encapsulation is a second entry and one with the same is EEXIST.
func TestEncapTellsIPv4AppendsApart(t *testing.T) {
	ns := routeTestNS(t)
	a := rtEncap(rtnl.LWTUNNEL_ENCAP_IP, encIPDst("1.1.1.1"))
	b := rtEncap(rtnl.LWTUNNEL_ENCAP_IP, encIPDst("2.2.2.2"))
	for i, tc := range []struct {
		cmd   string
		enc   func(*rtnl.RouteMsg)
		errno syscall.Errno
	}{{"add", a, 0}, {"append", b, 0}, {"append", a, syscall.EEXIST}} {
		var got syscall.Errno
		if err := rtDo(t, ns, nil, rtIP(tc.cmd, "10.6.0.0/24", rtDevLo, tc.enc)); err != nil {
			got = err.Errno
		}
		if got != tc.errno {
			t.Errorf("step %d (%s): errno %v, want %v", i, tc.cmd, got, tc.errno)
		}
	}
	if n := len(encDump(t, ns, rtnl.AF_INET)); n != 2 {
		t.Errorf("%d routes, want 2", n)
	}
}

// TestEncapIPv6DuplicatesAndDeletes: rt6_duplicate_nexthop() compares the
// encapsulation, so a dev route with another one is a second route, while
// ip6_route_del() ignores it and removes the first.
func TestEncapIPv6DuplicatesAndDeletes(t *testing.T) {
	ns := routeTestNS(t)
	e1 := rtEncap(rtnl.LWTUNNEL_ENCAP_IP6, encIP6Dst("2001:db8::1"))
	e2 := rtEncap(rtnl.LWTUNNEL_ENCAP_IP6, encIP6Dst("2001:db8::2"))
	e3 := rtEncap(rtnl.LWTUNNEL_ENCAP_IP6, encIP6Dst("2001:db8::3"))
	if err := rtDo(t, ns, nil, rtIP("add", "2001:db8:7::/64", rtDevLo, e1)); err != nil {
		t.Fatal(err)
	}
	if err := rtDo(t, ns, nil, rtIP("prepend", "2001:db8:7::/64", rtDevLo, e2)); err != nil {
		t.Fatalf("second encapsulation: %v", err)
	}
	if err := rtDo(t, ns, nil, rtIP("prepend", "2001:db8:7::/64", rtDevLo, e2)); err == nil || err.Errno != syscall.EEXIST {
		t.Errorf("same encapsulation again: %v, want EEXIST", err)
	}
	if err := rtDo(t, ns, nil, rtIP("del", "2001:db8:7::/64", e3)); err != nil {
		t.Fatalf("delete with a third encapsulation: %v", err)
	}
	got := encDump(t, ns, rtnl.AF_INET6)
	if len(got) != 1 {
		t.Fatalf("%d routes left, want 1", len(got))
	}
	if v := netip.MustParseAddr("2001:db8::2").As16(); !containsHex(got[0], v[:]) {
		t.Errorf("left %s, want the route with 2001:db8::2", got[0])
	}
}

func containsHex(h string, b []byte) bool {
	x := hex.EncodeToString(b)
	for i := 0; i+len(x) <= len(h); i += 2 {
		if h[i:i+len(x)] == x {
			return true
		}
	}
	return false
}

// TestEncapRejectRoutes: an IPv4 blackhole builds and dumps its
// encapsulation (fib_nh_init() runs for every type, fib_nexthop_info()
// dumps the state of a hop without a device), a bad one fails; an IPv6
// blackhole skips fib_nh_common_init() (fib6_nh_init()'s reject path):
// even a bad encapsulation is accepted and none is dumped.
func TestEncapRejectRoutes(t *testing.T) {
	ns := routeTestNS(t)
	bad := rtEncap(rtnl.LWTUNNEL_ENCAP_IP, encAttr(rtnl.LWTUNNEL_IP_TTL, nil))
	if err := rtDo(t, ns, nil, rtIP("add", "10.1.0.0/24", rtType(rtnl.RTN_BLACKHOLE), bad)); err == nil || err.Errno != syscall.ERANGE {
		t.Errorf("IPv4 blackhole with a bad encapsulation: %v, want ERANGE", err)
	}
	if err := rtDo(t, ns, nil, rtIP("add", "10.1.0.0/24", rtType(rtnl.RTN_BLACKHOLE), rtEncap(rtnl.LWTUNNEL_ENCAP_IP, encIPDst("1.1.1.1")))); err != nil {
		t.Fatal(err)
	}
	want4 := []string{"02180000fe0300060000000008000f00fe000000080001000a010000380016000c0001000000000000000000080002000101010108000300000000000500050000000000050004000000000006000600000000000600150002000000"}
	if d := cmp.Diff(want4, encDump(t, ns, rtnl.AF_INET)); d != "" {
		t.Errorf("IPv4 blackhole (-kernel +nlemu):\n%s", d)
	}
	if err := rtDo(t, ns, nil, rtIP("add", "2001:db8:6::/64", rtType(rtnl.RTN_BLACKHOLE), bad)); err != nil {
		t.Fatalf("IPv6 blackhole with a bad encapsulation: %v", err)
	}
	want6 := []string{"0a400000fe0300060000000008000f00fe0000001400010020010db80006000000000000000000000800060000040000080004000100000024000c0000000000000000000000000000000000000000000000000000000000000000000500140000000000"}
	if d := cmp.Diff(want6, encDump(t, ns, rtnl.AF_INET6)); d != "" {
		t.Errorf("IPv6 blackhole (-kernel +nlemu):\n%s", d)
	}
}
