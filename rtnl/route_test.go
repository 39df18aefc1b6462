package rtnl

import (
	"net/netip"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRouteRoundTripSmoke encodes a typed route and decodes it again.
func TestRouteRoundTripSmoke(t *testing.T) {
	r := &RouteMsg{Family: AF_INET, DstLen: 24, Protocol: RTPROT_BOOT, Type: RTN_UNICAST}
	r.SetTable(254)
	r.Dst = netip.MustParseAddr("10.1.2.0")
	r.Set(RTA_DST)
	r.Gateway = netip.MustParseAddr("10.0.0.2")
	r.Set(RTA_GATEWAY)
	r.OIF = 3
	r.Set(RTA_OIF)
	b := AppendRoute(nil, RTM_NEWROUTE, 0, 1, 2, r)
	msgs := SplitDatagram(b)
	if len(msgs) != 1 {
		t.Fatalf("framing: %d messages", len(msgs))
	}
	got, err := DecodeRouteRequest(&msgs[0])
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(AppendRoute(nil, RTM_NEWROUTE, 0, 1, 2, got), b); d != "" {
		t.Fatal(d)
	}
}
