package fib

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/rtnl"
)

// TestIPv6RejectPromotedRouteDropsPrefAndExpires: ip6_route_info_create()
// overwrites fib6_flags with RTF_REJECT|RTF_NONEXTHOP for a reject type
// and for a route through lo that is not RTF_LOCAL (fib6_is_reject()), so
// its RTF_PREF bits and RTF_EXPIRES go (the expiry: ipcases
// route_ipv6_reject_flags): `ip -6 route add unreachable P pref
// high`, `... P dev lo pref high` and `... anycast P dev lo expires 600`
// dump "pref medium" without an expiry on Linux 6.18, while a local route
// on lo and any route on v0 keep both (found by TestDiffRand).
func TestIPv6RejectPromotedRouteDropsPrefAndExpires(t *testing.T) {
	_, f6 := rs4(t)
	env := Env{Devs: rs4Devs(), FIB: f6}
	const high = 1
	type got struct{ Pref bool }
	for i, tc := range []struct {
		name string
		typ  uint8
		oif  uint32
		want got
	}{
		{"unreachable", rtnl.RTN_UNREACHABLE, 0, got{false}},
		{"blackhole dev v0", rtnl.RTN_BLACKHOLE, 3, got{false}},
		{"unicast dev lo", rtnl.RTN_UNICAST, 1, got{false}},
		{"anycast dev lo", rtnl.RTN_ANYCAST, 1, got{false}},
		{"multicast dev lo", rtnl.RTN_MULTICAST, 1, got{false}},
		{"local dev lo", rtnl.RTN_LOCAL, 1, got{true}},
		{"unicast dev v0", rtnl.RTN_UNICAST, 3, got{true}},
		{"anycast dev v0", rtnl.RTN_ANYCAST, 3, got{true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			hdr := rtnl.RouteMsg{Family: rtnl.AF_INET6, DstLen: 48, Table: uint8(100 + i), Protocol: 3, Type: tc.typ}
			m := req(t, hdr, func(m *rtnl.RouteMsg) {
				m.Dst = cip("2001:db8:77::")
				m.Set(rtnl.RTA_DST)
				m.Pref = high
				m.Set(rtnl.RTA_PREF)
				if tc.oif != 0 {
					m.OIF = tc.oif
					m.Set(rtnl.RTA_OIF)
				}
			})
			r, err := add(env, m, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL)
			if err != nil {
				t.Fatalf("add: %v", err)
			}
			if d := cmp.Diff(tc.want, got{r.Pref == high}); d != "" {
				t.Errorf("pref high kept (-kernel +nlemu):\n%s", d)
			}
		})
	}
}

// TestIPv6AnycastRouteIsLinkdown: fib6_nh_init() leaves RTNH_F_LINKDOWN
// off only for RTF_LOCAL|RTF_ANYCAST, and a request's RTN_ANYCAST sets no
// RTF_ANYCAST (rtm_to_fib6_config()), so `ip -6 route add anycast P dev v0`
// on a device without carrier is linkdown, and a carrier loss flags it
// (fib6_ifdown()); a local route stays unflagged (Linux 6.18).
func TestIPv6AnycastRouteIsLinkdown(t *testing.T) {
	_, f6 := rs4(t)
	devs := rs4Devs()
	d := devs.devs[3]
	d.Carrier = false
	devs.devs[3] = d
	env := Env{Devs: devs, FIB: f6}
	for _, tc := range []struct {
		typ  uint8
		want bool
	}{{rtnl.RTN_ANYCAST, true}, {rtnl.RTN_MULTICAST, true}, {rtnl.RTN_LOCAL, false}} {
		hdr := rtnl.RouteMsg{Family: rtnl.AF_INET6, DstLen: 48, Table: 100, Protocol: 3, Type: tc.typ}
		m := req(t, hdr, func(m *rtnl.RouteMsg) {
			m.Dst = cip("2001:db8:7" + string('0'+rune(tc.typ%10)) + "::")
			m.Set(rtnl.RTA_DST)
			m.OIF = 3
			m.Set(rtnl.RTA_OIF)
		})
		r, err := add(env, m, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL)
		if err != nil {
			t.Fatalf("type %d: add: %v", tc.typ, err)
		}
		if got := r.Nexthops[0].Flags&rtnl.RTNH_F_LINKDOWN != 0; got != tc.want {
			t.Errorf("type %d without carrier: linkdown %v, kernel %v", tc.typ, got, tc.want)
		}
	}
	// The carrier goes on a route added with carrier: syncDown6 flags it.
	r := Route{Family: rtnl.AF_INET6, Type: rtnl.RTN_ANYCAST, Nexthops: []Nexthop{{Dev: 3, Weight: 1}}}
	var c Change
	r, _, changed := syncDown6(&c, r, 3, DevCarrierDown)
	if !changed || r.Nexthops[0].Flags&rtnl.RTNH_F_LINKDOWN == 0 {
		t.Errorf("anycast route after carrier loss: changed %v, flags %#x; kernel flags it linkdown", changed, r.Nexthops[0].Flags)
	}
}

// TestIPv6GatewayBehindPromotedLoRouteIsUnreachable: ip6_route_check_nh()
// refuses a gateway whose route has RTF_REJECT in fib6_flags, and a
// unicast route through lo has it (promoted by ip6_route_info_create()),
// so after `ip -6 route add ::/0 dev lo` a gateway only that route covers
// is EHOSTUNREACH "No route to host", with or without `dev lo`, before
// the egress device is checked (Linux 6.18; found by TestDiffRand). The
// same gateway behind a route through v0 is accepted.
func TestIPv6GatewayBehindPromotedLoRouteIsUnreachable(t *testing.T) {
	const ce = rtnl.NLM_F_CREATE | rtnl.NLM_F_EXCL
	route := func(dst string, plen uint8, gw string, oif uint32) *rtnl.RouteMsg {
		return req(t, rtnl.RouteMsg{Family: rtnl.AF_INET6, DstLen: plen, Table: 254, Protocol: 3, Type: rtnl.RTN_UNICAST}, func(m *rtnl.RouteMsg) {
			m.Dst = cip(dst)
			m.Set(rtnl.RTA_DST)
			if gw != "" {
				m.Gateway = cip(gw)
				m.Set(rtnl.RTA_GATEWAY)
			}
			if oif != 0 {
				m.OIF = oif
				m.Set(rtnl.RTA_OIF)
			}
		})
	}
	_, f6 := rs4(t)
	env := Env{Devs: rs4Devs(), FIB: f6}
	if _, err := add(env, route("::", 0, "", 1), ce); err != nil {
		t.Fatalf("::/0 dev lo: %v", err)
	}
	for _, oif := range []uint32{0, 1} {
		_, err := add(env, route("2001:db8:70::", 48, "2001:db8:77::1", oif), ce)
		if d := cmp.Diff(cOutcome{Errno: 113}, result(err)); d != "" {
			t.Errorf("gateway behind ::/0 dev lo, oif %d (-kernel +nlemu):\n%s", oif, d)
		}
	}
	if _, err := add(env, route("2001:db8:77::", 48, "", 3), ce); err != nil {
		t.Fatalf("2001:db8:77::/48 dev v0: %v", err)
	}
	if _, err := add(env, route("2001:db8:70::", 48, "2001:db8:77::1", 0), ce); err != nil {
		t.Errorf("gateway behind a route through v0: %v, kernel accepts it", err)
	}
}

// TestIPv4OnlinkGatewayLocalOnAnyDeviceIsInvalid: fib_check_nh_v4_gw()
// tests an onlink gateway with inet_addr_type_dev_table(), which looks it
// up in table local without the device, so a gateway that is local on
// another device (or 127.0.0.1 on lo) is EINVAL "Nexthop has invalid
// gateway" (`ip route add P via 10.1.2.1 dev v1 onlink` with 10.1.2.1 on
// v0, Linux 6.18; found by TestDiffRand).
func TestIPv4OnlinkGatewayLocalOnAnyDeviceIsInvalid(t *testing.T) {
	f4, _ := rs4(t)
	env := Env{Devs: rs4Devs(), FIB: f4}
	for _, gw := range []string{"10.0.0.1", "127.0.0.1"} {
		m := req(t, rtnl.RouteMsg{Family: rtnl.AF_INET, DstLen: 24, Table: 254, Protocol: 3, Type: rtnl.RTN_UNICAST, Flags: rtnl.RTNH_F_ONLINK}, func(m *rtnl.RouteMsg) {
			m.Dst = cip("198.51.100.0")
			m.Set(rtnl.RTA_DST)
			m.Gateway = cip(gw)
			m.Set(rtnl.RTA_GATEWAY)
			m.OIF = 2
			m.Set(rtnl.RTA_OIF)
		})
		_, err := add(env, m, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL)
		if d := cmp.Diff(cOutcome{22, "Nexthop has invalid gateway"}, result(err)); d != "" {
			t.Errorf("onlink via %s dev v1 (-kernel +nlemu):\n%s", gw, d)
		}
	}
}
