package nsmgr

import (
	"net/netip"
	"strings"
	"syscall"
	"testing"

	"github.com/nlemu/nlemu/flow"
	"github.com/nlemu/nlemu/rtnl"
)

// rgQuery is an IPv4 RTM_GETROUTE request with the options.
func rgQuery(opts ...rgOpt) rtnl.RouteMsg {
	q := rtnl.RouteMsg{Family: rtnl.AF_INET}
	for _, o := range opts {
		o(&q)
	}
	return q
}

// TestRouteGetSourceOnlyTableLocalHoldsIsLocal: __ip_dev_find() falls back
// to table local for a source no device holds, so `ip route get X from
// 127.0.0.5` leaves through lo instead of ENETUNREACH (Linux 6.18, ipcases
// routeget_source_local_route; found by TestDiffRand).
func TestRouteGetSourceOnlyTableLocalHoldsIsLocal(t *testing.T) {
	ns := rgNS(t)
	out, err := rgGet(t, ns, rgQuery(rgDst("10.0.0.1"), rgSrc("127.0.0.5")), false)
	if err != nil {
		t.Fatalf("get 10.0.0.1 from 127.0.0.5: %v; the kernel answers", err)
	}
	if !strings.Contains(out, " OIF=1 ") {
		t.Errorf("get 10.0.0.1 from 127.0.0.5: %s; the kernel's leaves through lo (oif 1)", out)
	}
	if _, err := rgGet(t, ns, rgQuery(rgDst("10.0.0.9"), rgSrc("10.99.0.5")), false); err == nil || err.Errno != syscall.ENETUNREACH {
		t.Errorf("get from 10.99.0.5 (no local route): %v, kernel ENETUNREACH", err)
	}
}

// TestRouteGetMulticastGroupNotJoinedClearsLocal: __mkroute_output() sets
// RTCF_MULTICAST|RTCF_LOCAL for a multicast destination and clears
// RTCF_LOCAL when the device has not joined the group, even on lo, whose
// RTCF_LOCAL it replaces: `ip route get 224.0.0.5 from 127.0.0.1` prints
// "cache <mc>", 224.0.0.1 "cache <local,mc>" (Linux 6.18).
func TestRouteGetMulticastGroupNotJoinedClearsLocal(t *testing.T) {
	ns := rgNS(t)
	for _, tc := range []struct {
		dst   string
		local bool
	}{{"224.0.0.5", false}, {"239.1.1.1", false}, {"224.0.0.1", true}} {
		o := out4{}
		k := flow.Key{Dst: netip.MustParseAddr(tc.dst), Src: netip.MustParseAddr("127.0.0.1")}
		if errno := ns.output4(&k, &o); errno != 0 {
			t.Fatalf("%s: %v", tc.dst, errno)
		}
		if got := o.flags&rtcfLocal != 0; got != tc.local {
			t.Errorf("%s from 127.0.0.1 through lo: RTCF_LOCAL %v, kernel %v", tc.dst, got, tc.local)
		}
	}
}

// TestRouteGetNoAddressToSelectHasNoPrefsrc: rt_fill_info() puts
// RTA_PREFSRC only when the selected source differs from the request's,
// so with no address to select (0.0.0.0) `ip route get` prints no "src"
// (Linux 6.18: "10.1.3.254 dev lo uid 0" once 127.0.0.1 is deleted; found
// by TestDiffRand).
func TestRouteGetNoAddressToSelectHasNoPrefsrc(t *testing.T) {
	ns := startupNS(t)
	up := make([]byte, rtnl.IfInfoLen)
	up[4], up[8], up[12] = 1, 1, 1
	doReq(t, ns, rtnl.RTM_NEWLINK, 0, up)
	if err := doReq(t, ns, rtnl.RTM_DELADDR, 0, addrReq(rtnl.AF_INET, "127.0.0.1/8", 1)); err != nil {
		t.Fatal(err)
	}
	body := []byte{rtnl.AF_INET, 8, 0, 0, 254, 4, 0, rtnl.RTN_UNICAST, 0, 0, 0, 0}
	body = append(body, nla(rtnl.RTA_DST, []byte{10, 0, 0, 0})...)
	body = append(body, nla(rtnl.RTA_OIF, []byte{1, 0, 0, 0})...)
	if err := doReq(t, ns, rtnl.RTM_NEWROUTE, rtnl.NLM_F_CREATE|rtnl.NLM_F_EXCL, body); err != nil {
		t.Fatalf("route 10.0.0.0/8 dev lo: %v", err)
	}
	out, err := rgGet(t, ns, rgQuery(rgDst("10.1.3.254")), false)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(out, "PREFSRC") {
		t.Errorf("reply %s: the kernel's has no RTA_PREFSRC", out)
	}
}
