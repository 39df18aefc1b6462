package nsmgr

import (
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/fib"
	"github.com/nlemu/nlemu/rtnl"
)

// TestIPv6PermanentAddrPrefixRouteAtUpWithoutCarrier:
// addrconf_notify(NETDEV_UP) runs addrconf_permanent_addr() before it asks
// addrconf_link_ready(), so an IPv6 address configured on a device that is
// down gets its prefix route when the device goes up even without carrier
// (flagged linkdown), and on lo before init_loopback()'s ::1. Captured
// with `ip monitor route address` on Linux 6.18 (found by TestDiffRand).
func TestIPv6PermanentAddrPrefixRouteAtUpWithoutCarrier(t *testing.T) {
	ns := startupNS(t)
	ns.SetDADDelay(0)
	mon := &recorder{}
	ns.SetGroups(mon, 1<<(rtnl.RTNLGRP_IPV6_IFADDR-1)|1<<(rtnl.RTNLGRP_IPV6_ROUTE-1))
	ifi := make([]byte, rtnl.IfInfoLen)
	veth := append(append([]byte(nil), ifi...), nla(rtnl.IFLA_IFNAME, cstr("v0"))...)
	veth = append(veth, nla(rtnl.IFLA_LINKINFO, nla(1, cstr("veth")), nla(2, nla(1, ifi, nla(rtnl.IFLA_IFNAME, cstr("v1")))))...)
	doReq(t, ns, rtnl.RTM_NEWLINK, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, veth)
	nodad := nla(rtnl.IFA_FLAGS, []byte{rtnl.IFA_F_NODAD, 0, 0, 0})
	for _, a := range []struct {
		pfx string
		idx byte
	}{{"2001:db8::1/64", 1}, {"2001:db8:7::1/64", 3}} {
		if err := doReq(t, ns, rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, addrReq(rtnl.AF_INET6, a.pfx, a.idx, nodad)); err != nil {
			t.Fatalf("addr add %s: %v", a.pfx, err)
		}
	}
	mon.got = nil
	for _, idx := range []byte{1, 3} { // lo up, then v0 up with its peer v1 down
		up := make([]byte, rtnl.IfInfoLen)
		up[4], up[8], up[12] = idx, 1, 1
		if err := doReq(t, ns, rtnl.RTM_NEWLINK, 0, up); err != nil {
			t.Fatal(err)
		}
	}
	want := []string{
		"route table 254 type 1 2001:db8::/64 dev 1",
		"addr ::1/128 dev 1 flags 0x80",
		"route table 255 type 2 ::1/128 dev 1",
		"route table 254 type 1 2001:db8:7::/64 dev 3",
	}
	if d := cmp.Diff(want, describe(t, mon.got)); d != "" {
		t.Errorf("lo up, v0 up without carrier (-kernel +nlemu):\n%s", d)
	}
}

// TestLoUpInsertsLoopbackAgainAfterDelete: inetdev_event(NETDEV_UP) runs
// inet_insert_ifa(127.0.0.1/8) on every up of lo, so 127.0.0.1 deleted
// while lo keeps another address comes back at the next up, and is
// refused silently when it is still there (Linux 6.18, ipcases
// addr_lo_up_inserts_loopback; found by TestDiffRand).
func TestLoUpInsertsLoopbackAgainAfterDelete(t *testing.T) {
	ns := startupNS(t)
	mon := &recorder{}
	ns.SetGroups(mon, 1<<(rtnl.RTNLGRP_IPV4_IFADDR-1))
	link := func(up byte) {
		b := make([]byte, rtnl.IfInfoLen)
		b[4], b[8], b[12] = 1, up, 1
		if err := doReq(t, ns, rtnl.RTM_NEWLINK, 0, b); err != nil {
			t.Fatal(err)
		}
	}
	link(1)
	if err := doReq(t, ns, rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, addrReq(rtnl.AF_INET, "10.1.3.1/24", 1)); err != nil {
		t.Fatal(err)
	}
	if err := doReq(t, ns, rtnl.RTM_DELADDR, 0, addrReq(rtnl.AF_INET, "127.0.0.1/8", 1)); err != nil {
		t.Fatal(err)
	}
	mon.got = nil
	link(0)
	link(1)
	link(0)
	link(1)
	want := []string{"addr 127.0.0.1/8 dev 1 flags 0x80"}
	if d := cmp.Diff(want, describe(t, mon.got)); d != "" {
		t.Errorf("two ups of lo after 127.0.0.1 was deleted (-kernel +nlemu):\n%s", d)
	}
}

// TestIPv6AddrAddAddsMulticastRouteFirst: inet6_addr_add() calls
// addrconf_add_dev(), which adds the device's ff00::/8 multicast route
// before ipv6_add_addr() checks the address, so a refused address leaves
// the route, and a device up without carrier gets it linkdown (Linux 6.18,
// ipcases route_addr_multicast_route_on_add; found by TestDiffRand).
func TestIPv6AddrAddAddsMulticastRouteFirst(t *testing.T) {
	ns := startupNS(t)
	mon := &recorder{}
	ns.SetGroups(mon, 1<<(rtnl.RTNLGRP_IPV6_ROUTE-1))
	ifi := make([]byte, rtnl.IfInfoLen)
	veth := append(append([]byte(nil), ifi...), nla(rtnl.IFLA_IFNAME, cstr("v0"))...)
	veth = append(veth, nla(rtnl.IFLA_LINKINFO, nla(1, cstr("veth")), nla(2, nla(1, ifi, nla(rtnl.IFLA_IFNAME, cstr("v1")))))...)
	doReq(t, ns, rtnl.RTM_NEWLINK, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, veth)
	// The multicast address is refused on v1 while it is down: no route.
	if err := doReq(t, ns, rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, addrReq(rtnl.AF_INET6, "ff02::5/64", 2)); err == nil {
		t.Fatal("ff02::5 accepted")
	}
	up := make([]byte, rtnl.IfInfoLen)
	up[4], up[8], up[12] = 3, 1, 1 // v0 up, its peer down: no carrier
	doReq(t, ns, rtnl.RTM_NEWLINK, 0, up)
	mon.got = nil
	err := doReq(t, ns, rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, addrReq(rtnl.AF_INET6, "ff02::5/64", 3))
	if err == nil || err.Errno != syscall.EADDRNOTAVAIL {
		t.Fatalf("ff02::5 on v0: %v, kernel EADDRNOTAVAIL", err)
	}
	want := []string{"route table 255 type 5 ff00::/8 dev 3"}
	if d := cmp.Diff(want, describe(t, mon.got)); d != "" {
		t.Errorf("refused address on v0 up without carrier (-kernel +nlemu):\n%s", d)
	}
}

// TestIPv6DelAddrKeepsPrefixRouteUnlessPermanent: ipv6_del_addr() cleans
// up the prefix route only of a permanent address, and
// check_cleanup_prefix_route() keeps it for another address of the same
// prefix and length even when that one is noprefixroute (Linux 6.18,
// ipcases route_addr_prefix_route_cleanup_v6; found by TestDiffRand).
func TestIPv6DelAddrKeepsPrefixRouteUnlessPermanent(t *testing.T) {
	ns, mon := addrNS(t)
	nodad := nla(rtnl.IFA_FLAGS, []byte{rtnl.IFA_F_NODAD, 0, 0, 0})
	noprefix := nla(rtnl.IFA_FLAGS, []byte{rtnl.IFA_F_NODAD, 0x02, 0, 0}) // | IFA_F_NOPREFIXROUTE
	life := nla(rtnl.IFA_CACHEINFO, []byte{100, 0, 0, 0, 0xf4, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0})
	ce := uint16(rtnl.NLM_F_CREATE | rtnl.NLM_F_EXCL)
	for _, a := range []struct {
		pfx   string
		extra [][]byte
	}{{"2001:db8::1/64", [][]byte{nodad}}, {"2001:db8::2/64", [][]byte{noprefix}}, {"2001:db8:5::1/64", [][]byte{nodad, life}}} {
		if err := doReq(t, ns, rtnl.RTM_NEWADDR, ce, addrReq(rtnl.AF_INET6, a.pfx, 3, a.extra...)); err != nil {
			t.Fatalf("addr add %s: %v", a.pfx, err)
		}
	}
	mon.got = nil
	for _, pfx := range []string{"2001:db8::1/64", "2001:db8:5::1/64"} {
		if err := doReq(t, ns, rtnl.RTM_DELADDR, 0, addrReq(rtnl.AF_INET6, pfx, 3)); err != nil {
			t.Fatalf("addr del %s: %v", pfx, err)
		}
	}
	for _, l := range describe(t, mon.got) {
		if strings.HasPrefix(l, "delroute table 254") {
			t.Errorf("%s: the kernel keeps both prefix routes", l)
		}
	}
}

// TestSecondaryAddrRoutesNeedLocalPrefsrc: fib_magic()'s routes go through
// fib_valid_prefsrc(), so with table local flushed a secondary address
// (whose routes have its primary as prefsrc) gets none (Linux 6.18,
// ipcases route_addr_secondary_needs_local_prefsrc; found by TestDiffRand).
func TestSecondaryAddrRoutesNeedLocalPrefsrc(t *testing.T) {
	ns, mon := addrNS(t)
	ce := uint16(rtnl.NLM_F_CREATE | rtnl.NLM_F_EXCL)
	if err := doReq(t, ns, rtnl.RTM_NEWADDR, ce, addrReq(rtnl.AF_INET, "10.1.2.1/24", 3)); err != nil {
		t.Fatal(err)
	}
	ns.NotifyRouteEvents(ns.v4.RemoveIf(func(r *fib.Route) bool { return r.Table == rtnl.RT_TABLE_LOCAL }, false))
	mon.got = nil
	if err := doReq(t, ns, rtnl.RTM_NEWADDR, ce, addrReq(rtnl.AF_INET, "10.1.2.2/24", 3)); err != nil {
		t.Fatal(err)
	}
	want := []string{"addr 10.1.2.2/24 dev 3 flags 0x81"}
	if d := cmp.Diff(want, describe(t, mon.got)); d != "" {
		t.Errorf("secondary after table local was flushed (-kernel +nlemu):\n%s", d)
	}
}

// TestIPv6AddrReplaceRestoresDeletedPrefixRoute: inet6_addr_modify()'s
// modify_prefix_route() finds no prefix route after `ip route del` and
// adds it again, with the address's own prefix length, after announcing
// the address (`ip monitor route address` on Linux 6.18, ipcases
// route_addr_replace_restores_prefix_route; found by TestDiffRand).
func TestIPv6AddrReplaceRestoresDeletedPrefixRoute(t *testing.T) {
	ns, mon := addrNS(t)
	nodad := nla(rtnl.IFA_FLAGS, []byte{rtnl.IFA_F_NODAD, 0, 0, 0})
	if err := doReq(t, ns, rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, addrReq(rtnl.AF_INET6, "2001:db8:1::1/64", 3, nodad)); err != nil {
		t.Fatal(err)
	}
	ns.NotifyRouteEvents(ns.v6.RemoveIf(func(r *fib.Route) bool { return r.Table == rtnl.RT_TABLE_MAIN }, false))
	mon.got = nil
	if err := doReq(t, ns, rtnl.RTM_NEWADDR, rtnl.NLM_F_CREATE|rtnl.NLM_F_REPLACE, addrReq(rtnl.AF_INET6, "2001:db8:1::1/48", 3, nodad)); err != nil {
		t.Fatal(err)
	}
	want := []string{"addr 2001:db8:1::1/64 dev 3 flags 0x82", "route table 254 type 1 2001:db8:1::/64 dev 3"}
	if d := cmp.Diff(want, describe(t, mon.got)); d != "" {
		t.Errorf("replace after the prefix route was deleted (-kernel +nlemu):\n%s", d)
	}
}
