package nsmgr

import (
	"net/netip"
	"testing"

	"github.com/nlemu/nlemu/fib"
	"github.com/nlemu/nlemu/rtnl"
)

// TestRouteGetClntrefIsOneForUncachedOutputRoutes: the rta_clntref of an
// IPv4 route get is 2 for an output route __mkroute_output() caches in its
// nexthop and 1 for one it does not (measured on Linux 6.18 by
// TestDiffRoutes: `get 10.0.0.1` of a local address on v0 and an oif-forced
// lookup without a route answer 1; 127.0.0.1, a unicast route and the
// subnet broadcast answer 2). nlemu said 2 for all of them.
func TestRouteGetClntrefIsOneForUncachedOutputRoutes(t *testing.T) {
	local := func(dev int32) fib.Result {
		r := fib.Route{Type: rtnl.RTN_LOCAL, Dst: netip.MustParsePrefix("10.0.0.1/32"), Nexthops: []fib.Nexthop{{Dev: dev}}}
		return fib.Result{Entry: &r, Dst: r.Dst, NH: 0}
	}
	mc := fib.Result{Entry: &fib.Route{Type: rtnl.RTN_MULTICAST, Nexthops: []fib.Nexthop{{Dev: 3}}}, Dst: netip.MustParsePrefix("224.0.0.0/3")}
	for _, tc := range []struct {
		name string
		o    out4
		iif  int32
		want uint32
	}{
		{"local address of v0 leaves by lo", out4{res: local(3), hasFIB: true, typ: rtnl.RTN_LOCAL, dev: loIndex}, 0, 1},
		{"127.0.0.1 on lo", out4{res: local(loIndex), hasFIB: true, typ: rtnl.RTN_LOCAL, dev: loIndex}, 0, 2},
		{"oif-forced without a route", out4{typ: rtnl.RTN_UNICAST, dev: 5}, 0, 1},
		{"unicast route", out4{res: fib.Result{Entry: &fib.Route{Type: rtnl.RTN_UNICAST, Nexthops: []fib.Nexthop{{Dev: 3}}}}, hasFIB: true, typ: rtnl.RTN_UNICAST, dev: 3}, 0, 2},
		{"subnet broadcast from table local", out4{res: local(3), hasFIB: true, typ: rtnl.RTN_BROADCAST, dev: 3}, 0, 2},
		{"limited broadcast", out4{typ: rtnl.RTN_BROADCAST, dev: 3}, 0, 1},
		{"multicast prefix shorter than /4", out4{res: mc, hasFIB: true, typ: rtnl.RTN_MULTICAST, dev: 3}, 0, 1},
		{"joined group", out4{typ: rtnl.RTN_MULTICAST, dev: 3, flags: rtcfMulticast | rtcfLocal}, 0, 1},
		{"input path", out4{res: local(3), hasFIB: true, typ: rtnl.RTN_LOCAL, dev: loIndex}, 3, 2},
	} {
		if got := clntref4(&tc.o, tc.iif); got != tc.want {
			t.Errorf("%s: clntref %d, want %d", tc.name, got, tc.want)
		}
	}
}
