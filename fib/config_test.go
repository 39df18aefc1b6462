package fib

import (
	"net/netip"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/rtnl"
	"github.com/nlemu/nlemu/rulesops"
)

// stubDevs is the device set of the spec's rs_4 namespace: lo (1) up, v1
// (2) and v0 (3) up with carrier, w0 (5) down; v0 holds 2001:db8::1/64 and
// a link-local address.
type stubDevs struct {
	devs  map[int32]Device
	addr6 []Addr6
}

func (s stubDevs) Device(i int32) (Device, bool) { d, ok := s.devs[i]; return d, ok }

func (s stubDevs) HasAddr6(a netip.Addr, dev int32, anyDev, noTentative bool) bool {
	for _, x := range s.addr6 {
		if x.Addr != a || (noTentative && x.Tentative) {
			continue
		}
		if anyDev || x.Dev == dev || !x.LinkScope {
			return true
		}
	}
	return false
}

func rs4Devs() stubDevs {
	return stubDevs{
		devs: map[int32]Device{
			1: {Index: 1, Up: true, Carrier: true, Loopback: true},
			2: {Index: 2, Up: true, Carrier: true},
			3: {Index: 3, Up: true, Carrier: true},
			5: {Index: 5},
		},
		addr6: []Addr6{
			{Dev: 1, Addr: netip.MustParseAddr("::1"), LinkScope: true},
			{Dev: 3, Addr: netip.MustParseAddr("2001:db8::1")},
			{Dev: 3, Addr: netip.MustParseAddr("fe80::1078:26ff:fedf:c03d"), LinkScope: true},
		},
	}
}

func cpfx(s string) netip.Prefix { return netip.MustParsePrefix(s) }
func cip(s string) netip.Addr    { return netip.MustParseAddr(s) }

// rs4 returns the IPv4 and IPv6 FIBs of rs_4 with the kernel's address
// routes ([ROUTES-SPEC E5]) and 192.168.1.0/24 via 10.0.0.2, 2001:db8:1::/64
// via 2001:db8::2.
func rs4(t *testing.T) (*FIB, *FIB) {
	t.Helper()
	cfg := &rtnl.LockConfig{RTNL: &rtnl.RTNL{}}
	v4, v6 := NewIPv4(), NewIPv6()
	f4 := NewFIB(v4, rulesops.NewOps(rtnl.AF_INET, rulesops.Env{Config: cfg, Tables: v4}))
	f6 := NewFIB(v6, rulesops.NewOps(rtnl.AF_INET6, rulesops.Env{Config: cfg, Tables: v6}))
	const create = rtnl.NLM_F_CREATE | rtnl.NLM_F_EXCL
	hop := func(dev int32, gw string) []Nexthop {
		h := Nexthop{Dev: dev, Weight: 1}
		if gw != "" {
			h.Gateway = cip(gw)
		}
		return []Nexthop{h}
	}
	for _, r := range []Route{
		{Table: 255, Dst: cpfx("127.0.0.1/32"), Type: rtnl.RTN_LOCAL, Scope: rtnl.RT_SCOPE_HOST, Protocol: 2, Prefsrc: cip("127.0.0.1"), Nexthops: hop(1, "")},
		{Table: 255, Dst: cpfx("127.0.0.0/8"), Type: rtnl.RTN_LOCAL, Scope: rtnl.RT_SCOPE_HOST, Protocol: 2, Prefsrc: cip("127.0.0.1"), Nexthops: hop(1, "")},
		{Table: 255, Dst: cpfx("10.0.0.1/32"), Type: rtnl.RTN_LOCAL, Scope: rtnl.RT_SCOPE_HOST, Protocol: 2, Prefsrc: cip("10.0.0.1"), Nexthops: hop(3, "")},
		{Table: 255, Dst: cpfx("10.0.0.255/32"), Type: rtnl.RTN_BROADCAST, Scope: rtnl.RT_SCOPE_LINK, Protocol: 2, Prefsrc: cip("10.0.0.1"), Nexthops: hop(3, "")},
		{Table: 254, Dst: cpfx("10.0.0.0/24"), Type: rtnl.RTN_UNICAST, Scope: rtnl.RT_SCOPE_LINK, Protocol: 2, Prefsrc: cip("10.0.0.1"), Nexthops: hop(3, "")},
		{Table: 254, Dst: cpfx("192.168.1.0/24"), Type: rtnl.RTN_UNICAST, Protocol: 3, Nexthops: hop(3, "10.0.0.2")},
	} {
		r.Family = rtnl.AF_INET
		if _, err := v4.Insert(r, create); err != nil {
			t.Fatalf("insert %v: %v", r.Dst, err)
		}
	}
	for _, r := range []Route{
		{Table: 255, Dst: cpfx("2001:db8::1/128"), Type: rtnl.RTN_LOCAL, Protocol: 2, Nexthops: hop(3, "")},
		{Table: 254, Dst: cpfx("2001:db8::/64"), Type: rtnl.RTN_UNICAST, Protocol: 2, Priority: 256, Nexthops: hop(3, "")},
		{Table: 254, Dst: cpfx("fe80::/64"), Type: rtnl.RTN_UNICAST, Protocol: 2, Priority: 256, Nexthops: hop(3, "")},
		{Table: 254, Dst: cpfx("2001:db8:1::/64"), Type: rtnl.RTN_UNICAST, Protocol: 3, Priority: 1024, Nexthops: hop(3, "2001:db8::2")},
	} {
		r.Family = rtnl.AF_INET6
		if _, err := v6.Insert(r, create); err != nil {
			t.Fatalf("insert %v: %v", r.Dst, err)
		}
	}
	return f4, f6
}

// req builds a request the way the wire carries it and decodes it.
func req(t *testing.T, hdr rtnl.RouteMsg, set func(m *rtnl.RouteMsg)) *rtnl.RouteMsg {
	t.Helper()
	m := hdr
	if set != nil {
		set(&m)
	}
	b := rtnl.AppendRoute(nil, rtnl.RTM_NEWROUTE, rtnl.NLM_F_REQUEST, 1, 0, &m)
	msgs := rtnl.SplitDatagram(b)
	if len(msgs) != 1 {
		t.Fatalf("parse: %d messages", len(msgs))
	}
	rm, rerr := rtnl.DecodeRouteRequest(&msgs[0])
	if rerr != nil {
		t.Fatalf("decode: %v", rerr)
	}
	return rm
}

type cOutcome struct {
	Errno syscall.Errno
	Msg   string
}

func result(err *rtnl.Error) cOutcome {
	if err == nil {
		return cOutcome{}
	}
	return cOutcome{err.Errno, err.Msg}
}

// add runs a NEWROUTE through Parse, the table creation, Build and Insert,
// as the handler does.
func add(env Env, m *rtnl.RouteMsg, flags uint16) (Route, *rtnl.Error) {
	c, err := Parse(m, rtnl.RTM_NEWROUTE, flags)
	if err != nil {
		return Route{}, err
	}
	env.FIB.tables.Create(c.Table)
	r, err := c.Build(env)
	if err != nil {
		return r, err
	}
	_, err = env.FIB.tables.Insert(r, flags)
	return r, err
}

func v4hdr(dst string, plen uint8) rtnl.RouteMsg {
	return rtnl.RouteMsg{Family: rtnl.AF_INET, DstLen: plen, Table: 254, Protocol: 3, Type: rtnl.RTN_UNICAST}
}

func withDst(a string) func(*rtnl.RouteMsg) {
	return func(m *rtnl.RouteMsg) { m.Dst = cip(a); m.Set(rtnl.RTA_DST) }
}

// Test4NewRouteValidation replays the IPv4 NEWROUTE validation transcripts
// of ROUTES-SPEC E7, E7b, E7c (rs_4): errno and extack text, in the
// kernel's order of checks.
func TestNewRoute4ValidationMatchesKernel(t *testing.T) {
	const ce = rtnl.NLM_F_CREATE | rtnl.NLM_F_EXCL
	type attrs struct {
		dst, gw, prefsrc string
		oif              uint32
	}
	tests := []struct {
		name             string
		plen, tos, scope uint8
		typ              uint8
		flags            uint32
		a                attrs
		table            uint32
		want             cOutcome
	}{
		{name: "N1 dst_len 33", plen: 33, a: attrs{dst: "10.1.0.0", oif: 3}, want: cOutcome{syscall.EINVAL, "Invalid prefix length"}},
		{name: "N2 host bits", plen: 16, a: attrs{dst: "10.1.2.3", oif: 3}, scope: 253, want: cOutcome{syscall.EINVAL, "Invalid prefix for given prefix length"}},
		{name: "N3 oif 999", plen: 16, a: attrs{dst: "10.1.0.0", oif: 999}, want: cOutcome{syscall.ENODEV, ""}},
		{name: "N4 no dev no via", plen: 16, a: attrs{dst: "10.50.0.0"}, want: cOutcome{syscall.ENODEV, ""}},
		{name: "N5 unreachable gw", plen: 16, a: attrs{dst: "10.60.0.0", gw: "192.0.2.1"}, want: cOutcome{syscall.ENETUNREACH, "Nexthop has invalid gateway"}},
		{name: "N6 gw via another gw", plen: 16, a: attrs{dst: "10.61.0.0", gw: "192.168.1.1"}, want: cOutcome{syscall.ENETUNREACH, "Nexthop has invalid gateway"}},
		{name: "N7 gw own address", plen: 16, a: attrs{dst: "10.62.0.0", gw: "10.0.0.1"}},
		{name: "N8 onlink", plen: 16, flags: rtnl.RTNH_F_ONLINK, a: attrs{dst: "10.63.0.0", gw: "192.0.2.1", oif: 3}},
		{name: "N9 onlink without dev", plen: 16, flags: rtnl.RTNH_F_ONLINK, a: attrs{dst: "10.64.0.0", gw: "192.0.2.1"}, want: cOutcome{syscall.ENODEV, "Nexthop device required for onlink"}},
		{name: "N10 onlink broadcast gw", plen: 16, flags: rtnl.RTNH_F_ONLINK, a: attrs{dst: "10.65.0.0", gw: "10.0.0.255", oif: 3}, want: cOutcome{syscall.EINVAL, "Nexthop has invalid gateway"}},
		{name: "N11 onlink scope link", plen: 16, scope: 253, flags: rtnl.RTNH_F_ONLINK, a: attrs{dst: "10.66.0.0", gw: "192.0.2.1", oif: 3}, want: cOutcome{syscall.EINVAL, "Nexthop has invalid scope"}},
		{name: "N12 gw dev lo", plen: 16, a: attrs{dst: "10.67.0.0", gw: "10.0.0.2", oif: 1}, want: cOutcome{syscall.ENETUNREACH, "Nexthop has invalid gateway"}},
		{name: "N12 gw dev v1", plen: 16, a: attrs{dst: "10.68.0.0", gw: "10.0.0.2", oif: 2}, want: cOutcome{syscall.ENETUNREACH, "Nexthop has invalid gateway"}},
		{name: "N13 local scope link", plen: 32, scope: 253, typ: rtnl.RTN_LOCAL, a: attrs{dst: "10.69.0.1", oif: 3}, want: cOutcome{syscall.EINVAL, "Invalid scope"}},
		{name: "N14 unicast scope 255", plen: 16, scope: 255, a: attrs{dst: "10.70.0.0", oif: 3}, want: cOutcome{syscall.EINVAL, "Invalid scope"}},
		{name: "N15 unicast scope host", plen: 16, scope: 254, a: attrs{dst: "10.71.0.0", oif: 3}},
		{name: "N16 gw scope host", plen: 16, scope: 254, a: attrs{dst: "10.72.0.0", gw: "10.0.0.2"}, want: cOutcome{syscall.EINVAL, "Route with host scope can not have a gateway"}},
		{name: "N17 gw scope link", plen: 16, scope: 253, a: attrs{dst: "10.73.0.0", gw: "10.0.0.2"}, want: cOutcome{syscall.ENETUNREACH, "Nexthop has invalid gateway"}},
		{name: "N18 broadcast scope global", plen: 32, typ: rtnl.RTN_BROADCAST, a: attrs{dst: "10.74.0.255", oif: 3}, want: cOutcome{syscall.EINVAL, "Invalid scope"}},
		{name: "N19 type 12", plen: 16, typ: 12, a: attrs{dst: "10.75.0.0", oif: 3}, want: cOutcome{syscall.EINVAL, "Invalid route type"}},
		{name: "N19 type 0 scope 255", plen: 16, typ: 0, scope: 255, a: attrs{dst: "10.75.0.0", oif: 3}, want: cOutcome{syscall.EINVAL, "Invalid route type"}},
		{name: "type 0 scope 0", plen: 16, typ: 0, a: attrs{dst: "10.75.0.0", oif: 3}, want: cOutcome{syscall.EINVAL, "Invalid scope"}},
		{name: "N20 flags DEAD", plen: 16, flags: rtnl.RTNH_F_DEAD, a: attrs{dst: "10.75.0.0", oif: 3}, want: cOutcome{syscall.EINVAL, "Invalid rtm_flags - can not contain DEAD or LINKDOWN"}},
		{name: "N20 flags LINKDOWN", plen: 16, flags: rtnl.RTNH_F_LINKDOWN, a: attrs{dst: "10.75.0.0", oif: 3}, want: cOutcome{syscall.EINVAL, "Invalid rtm_flags - can not contain DEAD or LINKDOWN"}},
		{name: "N21 existing prefix route", plen: 24, scope: 253, a: attrs{dst: "10.0.0.0", oif: 3}, want: cOutcome{syscall.EEXIST, ""}},
		{name: "N24 tos ECN", plen: 16, tos: 0x11, a: attrs{dst: "10.80.0.0", oif: 3}, want: cOutcome{syscall.EINVAL, "Invalid dsfield (tos): ECN bits must be 0"}},
		{name: "N26 prefsrc not local", plen: 16, scope: 253, a: attrs{dst: "10.83.0.0", oif: 3, prefsrc: "10.0.0.99"}, want: cOutcome{syscall.EINVAL, "Invalid prefsrc address"}},
		{name: "N26 prefsrc 127.0.0.1", plen: 16, scope: 253, a: attrs{dst: "10.84.0.0", oif: 3, prefsrc: "127.0.0.1"}},
		{name: "E19 prefsrc 127.0.0.1 table 557", plen: 16, scope: 253, table: 557, a: attrs{dst: "10.232.0.0", oif: 3, prefsrc: "127.0.0.1"}},
		{name: "N27 blackhole dev", plen: 16, typ: rtnl.RTN_BLACKHOLE, a: attrs{dst: "10.90.0.0", oif: 3}, want: cOutcome{syscall.EINVAL, "Gateway, device and multipath can not be specified for this route type"}},
		{name: "N27 blackhole gw", plen: 16, typ: rtnl.RTN_BLACKHOLE, a: attrs{dst: "10.90.0.0", gw: "10.0.0.2"}, want: cOutcome{syscall.EINVAL, "Gateway, device and multipath can not be specified for this route type"}},
		{name: "blackhole", plen: 16, typ: rtnl.RTN_BLACKHOLE, a: attrs{dst: "10.90.0.0"}},
		{name: "N28 nat scope host", plen: 16, typ: rtnl.RTN_NAT, scope: 254, a: attrs{dst: "10.96.0.0", gw: "10.0.0.2"}, want: cOutcome{syscall.EINVAL, "Invalid scope"}},
		{name: "N29 dev down", plen: 16, scope: 253, a: attrs{dst: "10.100.0.0", oif: 5}, want: cOutcome{syscall.ENETDOWN, "Device for nexthop is not up"}},
		{name: "N29 onlink dev down", plen: 16, flags: rtnl.RTNH_F_ONLINK, a: attrs{dst: "10.101.0.0", gw: "192.0.2.1", oif: 5}, want: cOutcome{syscall.ENETDOWN, "Nexthop device is not up"}},
		{name: "E19 failed add in table 555", plen: 16, table: 555, a: attrs{dst: "10.230.0.0", gw: "192.0.2.99"}, want: cOutcome{syscall.ENETUNREACH, "Nexthop has invalid gateway"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f4, _ := rs4(t)
			h := v4hdr(tc.a.dst, tc.plen)
			h.Tos, h.Scope, h.Type, h.Flags = tc.tos, tc.scope, tc.typ, tc.flags
			if tc.typ == 0 && tc.name != "type 0 scope 0" && tc.name != "N19 type 0 scope 255" {
				h.Type = rtnl.RTN_UNICAST
			}
			m := req(t, h, func(m *rtnl.RouteMsg) {
				withDst(tc.a.dst)(m)
				if tc.a.gw != "" {
					m.Gateway = cip(tc.a.gw)
					m.Set(rtnl.RTA_GATEWAY)
				}
				if tc.a.oif != 0 {
					m.OIF = tc.a.oif
					m.Set(rtnl.RTA_OIF)
				}
				if tc.a.prefsrc != "" {
					m.PrefSrc = cip(tc.a.prefsrc)
					m.Set(rtnl.RTA_PREFSRC)
				}
				if tc.table != 0 {
					m.Table32 = tc.table
					m.Set(rtnl.RTA_TABLE)
				}
			})
			_, err := add(Env{Devs: rs4Devs(), FIB: f4}, m, ce)
			if diff := cmp.Diff(tc.want, result(err)); diff != "" {
				t.Errorf("cOutcome (-want +got):\n%s", diff)
			}
			if tc.table != 0 && !f4.tables.Exists(tc.table) {
				t.Errorf("table %d does not exist after the request (fib_new_table() runs before the checks)", tc.table)
			}
		})
	}
}

// TestNewRoute6ValidationMatchesKernel replays the IPv6 NEWROUTE
// validation transcripts of ROUTES-SPEC E9, E9b and E18 (rs_4): errno and
// extack text in the order of rtm_to_fib6_config(), ip6_route_info_create(),
// fib6_nh_init() and ip6_validate_gw().
func TestNewRoute6ValidationMatchesKernel(t *testing.T) {
	const ce = rtnl.NLM_F_CREATE | rtnl.NLM_F_EXCL
	hop := func(gw string, dev int32) rtnl.Nexthop {
		h := rtnl.Nexthop{IfIndex: dev}
		if gw != "" {
			h.Gateway = cip(gw)
			h.Set(rtnl.RTA_GATEWAY)
		}
		return h
	}
	tests := []struct {
		name      string
		plen, tos uint8
		noDst     bool
		dst, gw   string
		oif       uint32
		typ       uint8
		scope     uint8
		flags     uint32
		nlFlags   uint16
		prefsrc   string
		via       bool
		table     uint32
		mp        []rtnl.Nexthop
		want      cOutcome
		wantDev   int32
	}{
		{name: "6-1 dst_len 129 with RTA_DST", plen: 129, dst: "2001:db8:1::", oif: 3, want: cOutcome{syscall.EINVAL, ""}},
		{name: "dst_len 129 without RTA_DST", plen: 129, noDst: true, oif: 3, want: cOutcome{syscall.EINVAL, "Invalid prefix length"}},
		{name: "6-2 host bits are masked", plen: 64, dst: "2001:db8:5::1", oif: 3, wantDev: 3},
		{name: "6-3 unreachable gateway", plen: 64, dst: "2001:db8:6::", gw: "2001:db9::1", want: cOutcome{syscall.EHOSTUNREACH, ""}},
		{name: "6-3 gateway only via another gateway", plen: 64, dst: "2001:db8:7::", gw: "2001:db8:1::5", want: cOutcome{syscall.EHOSTUNREACH, ""}},
		{name: "gateway on the connected prefix", plen: 64, dst: "2001:db8:3::", gw: "2001:db8::2", wantDev: 3},
		{name: "6-4 link-local gateway without dev", plen: 64, dst: "2001:db8:8::", gw: "fe80::1", want: cOutcome{syscall.EINVAL, "Egress device not specified"}},
		{name: "link-local gateway dev v0", plen: 64, dst: "2001:db8:8::", gw: "fe80::1", oif: 3, wantDev: 3},
		{name: "6-5 own address as gateway", plen: 64, dst: "2001:db8:9::", gw: "2001:db8::1", want: cOutcome{syscall.EINVAL, "Gateway can not be a local address"}},
		{name: "6-5 own address as gateway dev v0", plen: 64, dst: "2001:db8:9::", gw: "2001:db8::1", oif: 3, want: cOutcome{syscall.EINVAL, "Gateway can not be a local address"}},
		{name: "6-6 gateway dev lo", plen: 64, dst: "2001:db8:9::", gw: "fe80::1", oif: 1, want: cOutcome{syscall.EINVAL, "Egress device can not be loopback device for this route"}},
		{name: "6-7 multicast gateway", plen: 64, dst: "2001:db8:9::", gw: "ff02::1", oif: 3, want: cOutcome{syscall.EINVAL, "Invalid gateway address"}},
		{name: "6-8 device down", plen: 64, dst: "2001:db8:9::", oif: 5, want: cOutcome{syscall.ENETDOWN, "Nexthop device is not up"}},
		{name: "unknown device", plen: 64, dst: "2001:db8:9::", oif: 999, want: cOutcome{syscall.ENODEV, ""}},
		{name: "no device no gateway", plen: 64, dst: "2001:db8:9::", want: cOutcome{syscall.ENODEV, ""}},
		{name: "6-9 tos", plen: 64, tos: 0x10, dst: "2001:db8:9::", oif: 3, want: cOutcome{syscall.EINVAL, "Invalid dsfield (tos): option not available for IPv6"}},
		{name: "6-10 RTA_VIA", plen: 64, dst: "2001:db8:9::", oif: 3, via: true, want: cOutcome{syscall.EINVAL, "IPv6 does not support RTA_VIA attribute"}},
		{name: "6-11 prefsrc not configured", plen: 64, dst: "2001:db8:9::", oif: 3, prefsrc: "2001:db8::99", want: cOutcome{syscall.EINVAL, "Invalid source address"}},
		{name: "prefsrc configured", plen: 64, dst: "2001:db8:9::", oif: 3, prefsrc: "2001:db8::1", wantDev: 3},
		{name: "type 12", plen: 64, dst: "2001:db8:9::", oif: 3, typ: 12, want: cOutcome{syscall.EINVAL, "Invalid route type"}},
		{name: "scope is ignored", plen: 64, dst: "2001:db8:9::", oif: 3, scope: 200, wantDev: 3},
		{name: "6-14 replace without a match", plen: 64, dst: "2001:db8:77::", oif: 3, nlFlags: rtnl.NLM_F_REPLACE, want: cOutcome{syscall.ENOENT, "Can not replace route - no match found"}},
		{name: "6-15 no NLM_F_CREATE still creates", plen: 64, dst: "2001:db8:77::", oif: 3, nlFlags: 0, wantDev: 3},
		{name: "6-16 multipath device-only hops", plen: 64, dst: "2001:db8:5::", mp: []rtnl.Nexthop{hop("", 3), hop("", 2)}, want: cOutcome{syscall.EINVAL, "Device only routes can not be added for IPv6 using the multipath API."}},
		{name: "6-17 multipath duplicate hops", plen: 64, dst: "2001:db8:6::", mp: []rtnl.Nexthop{hop("2001:db8::2", 0), hop("2001:db8::2", 0)}, want: cOutcome{syscall.EEXIST, ""}},
		{name: "multipath", plen: 64, dst: "2001:db8:4::", mp: []rtnl.Nexthop{hop("2001:db8::2", 0), hop("2001:db8::3", 0)}, wantDev: 3},
		{name: "blackhole dev v0 sits on lo", plen: 64, dst: "2001:db8:b::", oif: 3, typ: rtnl.RTN_BLACKHOLE, wantDev: 1},
		{name: "unicast dev lo stays unicast", plen: 64, dst: "2001:db8:f::", oif: 1, wantDev: 1},
		{name: "E18 onlink gateway off any prefix", plen: 64, dst: "2001:db8:ee::", gw: "2001:db9::7", oif: 3, flags: rtnl.RTNH_F_ONLINK, wantDev: 3},
		{name: "E18 onlink gateway on another device's prefix", plen: 64, dst: "2001:db8:ef::", gw: "2001:db8::7", oif: 2, flags: rtnl.RTNH_F_ONLINK, want: cOutcome{syscall.EINVAL, "Nexthop has invalid gateway or device mismatch"}},
		{name: "E18 gateway on another device's prefix", plen: 64, dst: "2001:db8:ed::", gw: "2001:db8::7", oif: 2, want: cOutcome{syscall.EHOSTUNREACH, ""}},
		{name: "E18 gateway dev v0", plen: 64, dst: "2001:db8:ec::", gw: "2001:db8::7", oif: 3, wantDev: 3},
		{name: "E18 gateway in a new table resolves through the rules", plen: 64, dst: "2001:db8:eb::", gw: "2001:db8::7", table: 400, wantDev: 3},
		{name: "onlink without device", plen: 64, dst: "2001:db8:ea::", gw: "2001:db9::7", flags: rtnl.RTNH_F_ONLINK, want: cOutcome{syscall.ENODEV, "Nexthop device required for onlink"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, f6 := rs4(t)
			h := rtnl.RouteMsg{Family: rtnl.AF_INET6, DstLen: tc.plen, Tos: tc.tos, Table: 254, Protocol: 3, Scope: tc.scope, Type: rtnl.RTN_UNICAST, Flags: tc.flags}
			if tc.typ != 0 {
				h.Type = tc.typ
			}
			m := req(t, h, func(m *rtnl.RouteMsg) {
				if !tc.noDst {
					m.Dst = cip(tc.dst)
					m.Set(rtnl.RTA_DST)
				}
				if tc.gw != "" {
					m.Gateway = cip(tc.gw)
					m.Set(rtnl.RTA_GATEWAY)
				}
				if tc.oif != 0 {
					m.OIF = tc.oif
					m.Set(rtnl.RTA_OIF)
				}
				if tc.prefsrc != "" {
					m.PrefSrc = cip(tc.prefsrc)
					m.Set(rtnl.RTA_PREFSRC)
				}
				if tc.table != 0 {
					m.Table32 = tc.table
					m.Set(rtnl.RTA_TABLE)
				}
				if tc.mp != nil {
					m.Multipath = tc.mp
					m.Set(rtnl.RTA_MULTIPATH)
				}
			})
			if tc.via {
				// The IPv6 encoder has no RTA_VIA; the decoded
				// request carries it as the kernel's tb[] would.
				m.Set(rtnl.RTA_VIA)
			}
			flags := uint16(ce)
			if tc.nlFlags != 0 || tc.name == "6-15 no NLM_F_CREATE still creates" {
				flags = tc.nlFlags
			}
			r, err := add(Env{Devs: rs4Devs(), FIB: f6}, m, flags)
			if diff := cmp.Diff(tc.want, result(err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s", diff)
			}
			if err == nil {
				if len(r.Nexthops) == 0 || r.Nexthops[0].Dev != tc.wantDev {
					t.Errorf("nexthops %+v, want the first on dev %d", r.Nexthops, tc.wantDev)
				}
				if r.Dst != r.Dst.Masked() || r.Scope != 0 {
					t.Errorf("stored %v scope %d: want a masked prefix and scope 0", r.Dst, r.Scope)
				}
			}
		})
	}
}

// TestNewRoute4WithIPv6GatewayUsesIPv6FIB: `ip route add P via inet6 GW`
// (RTA_VIA) checks the gateway as an IPv6 nexthop in the IPv6 FIB
// (fib_check_nh_v6_gw() → fib6_nh_init()), taking its device from there.
func TestNewRoute4WithIPv6GatewayUsesIPv6FIB(t *testing.T) {
	tests := []struct {
		name, gw string
		want     cOutcome
		wantDev  int32
	}{
		{name: "on the connected IPv6 prefix", gw: "2001:db8::2", wantDev: 3},
		{name: "unreachable", gw: "2001:db9::2", want: cOutcome{syscall.EHOSTUNREACH, ""}},
		{name: "link-local without device", gw: "fe80::2", want: cOutcome{syscall.EINVAL, "Egress device not specified"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f4, f6 := rs4(t)
			h := v4hdr("192.168.5.0", 24)
			m := req(t, h, func(m *rtnl.RouteMsg) {
				withDst("192.168.5.0")(m)
				m.ViaFamily, m.ViaAddr = rtnl.AF_INET6, cip(tc.gw)
				m.Set(rtnl.RTA_VIA)
			})
			r, err := add(Env{Devs: rs4Devs(), FIB: f4, FIB6: f6}, m, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL)
			if diff := cmp.Diff(tc.want, result(err)); diff != "" {
				t.Fatalf("outcome (-want +got):\n%s", diff)
			}
			if err == nil && (len(r.Nexthops) != 1 || r.Nexthops[0].Dev != tc.wantDev || r.Nexthops[0].Gateway != cip(tc.gw)) {
				t.Errorf("nexthops %+v, want %s on dev %d", r.Nexthops, tc.gw, tc.wantDev)
			}
		})
	}
}
