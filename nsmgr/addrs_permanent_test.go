package nsmgr

import (
	"testing"

	"github.com/google/go-cmp/cmp"
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
