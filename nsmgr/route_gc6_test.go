package nsmgr

import (
	"net/netip"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/rtnl"
)

func rtExpires(s uint32) func(*rtnl.RouteMsg) {
	return func(m *rtnl.RouteMsg) { m.Expires = s; m.Set(rtnl.RTA_EXPIRES) }
}

func rtDev(idx int32) func(*rtnl.RouteMsg) {
	return func(m *rtnl.RouteMsg) { m.OIF = uint32(idx); m.Set(rtnl.RTA_OIF) }
}

// expiries6 lists main's routes of p as (dev, metric, expires?) triples.
func expiries6(ns *Namespace, p string) [][3]uint32 {
	v, _ := ns.v6.Snapshot().Table(rtnl.RT_TABLE_MAIN)
	e, _ := v.Get(netip.MustParsePrefix(p))
	var out [][3]uint32
	for r := range e.All() {
		x := uint32(0)
		if r.Expires != 0 {
			x = 1
		}
		out = append(out, [3]uint32{uint32(r.Nexthops[0].Dev), r.Priority, x})
	}
	return out
}

// TestQuirkIPv6DuplicateAddRefreshesExpiry: a request refused with EEXIST
// because its route is already there (prepend or append: no NLM_F_EXCL, no
// NLM_F_REPLACE) still changes the stored route's expiry when that route
// expires (fib6_add_rt2node() before its -EEXIST): the new one, or none; a
// stored route without expiry is left alone
// (route_ipv6_expires_shared_prefix.batch on the kernel).
func TestQuirkIPv6DuplicateAddRefreshesExpiry(t *testing.T) {
	ns, _ := addrNS(t)
	steps := []struct {
		r     routeTestReq
		errno syscall.Errno
	}{
		{rtIP("add", "2001:db8:1::/64", rtDev(3), rtMetric(1)), 0},
		{rtIP("prepend", "2001:db8:1::/64", rtDev(3), rtMetric(1), rtExpires(400)), syscall.EEXIST},
		{rtIP("add", "2001:db8:2::/64", rtDev(3), rtMetric(1), rtExpires(500)), 0},
		{rtIP("append", "2001:db8:2::/64", rtDev(3), rtMetric(1)), syscall.EEXIST},
		{rtIP("add", "2001:db8:3::/64", rtDev(3), rtMetric(1), rtExpires(500)), 0},
		{rtIP("prepend", "2001:db8:3::/64", rtDev(3), rtMetric(1), rtExpires(20)), syscall.EEXIST},
		{rtIP("add", "2001:db8:3::/64", rtDev(3), rtMetric(1)), syscall.EEXIST}, // NLM_F_EXCL: untouched
	}
	for _, s := range steps {
		err := rtDo(t, ns, nil, s.r)
		if got := errnoOf(err); got != s.errno {
			t.Fatalf("%+v: errno %v, want %v", s.r.m, got, s.errno)
		}
	}
	for p, want := range map[string][][3]uint32{
		"2001:db8:1::/64": {{3, 1, 0}},
		"2001:db8:2::/64": {{3, 1, 0}},
		"2001:db8:3::/64": {{3, 1, 1}},
	} {
		if d := cmp.Diff(want, expiries6(ns, p)); d != "" {
			t.Errorf("%s (dev, metric, expires) (-kernel +nlemu):\n%s", p, d)
		}
	}
	v, _ := ns.v6.Snapshot().Table(rtnl.RT_TABLE_MAIN)
	e, _ := v.Get(netip.MustParsePrefix("2001:db8:3::/64"))
	if left := int32(e.At(0).Expires - routeClock()); left > 2000 || left < 1500 {
		t.Errorf("2001:db8:3::/64 expires in %d cs, want the prepend's 20 s", left)
	}
}

func errnoOf(err *rtnl.Error) syscall.Errno {
	if err == nil {
		return 0
	}
	return err.Errno
}

// TestQuirkIPv6ExpiredRouteListedUntilGC: an IPv6 route whose expiry has
// passed stays in the table (dumps show a negative countdown) until the
// collector runs (fib6_gc_all(), every net.ipv6.route.gc_interval, armed by
// the first expiring route), which deletes the expired routes newest
// first, each with RTM_DELROUTE, and leaves the other routes of the prefix.
// runGC6 takes the clock as an argument: no sleeping.
func TestQuirkIPv6ExpiredRouteListedUntilGC(t *testing.T) {
	ns, mon := addrNS(t)
	for _, r := range []routeTestReq{
		rtIP("add", "2001:db8::/64", rtDev(2)),
		rtIP("add", "2001:db8::/64", rtDev(3), rtMetric(1), rtExpires(4)),
		rtIP("add", "2001:db8:4::/64", rtDev(3), rtMetric(1), rtExpires(4)),
		rtIP("add", "2001:db8:2::/64", rtDev(3), rtMetric(1), rtExpires(600)),
	} {
		if err := rtDo(t, ns, nil, r); err != nil {
			t.Fatal(err)
		}
	}
	ns.gc6.mu.Lock()
	armed := ns.gc6.armed
	ns.gc6.mu.Unlock()
	if !armed {
		t.Errorf("no collector armed after adding routes that expire")
	}
	now := routeClock()
	mon.got = nil
	if !ns.runGC6(now+100) || len(mon.got) != 0 {
		t.Errorf("a run before the expiries removed %d routes or reported none left", len(mon.got))
	}
	if got := expiries6(ns, "2001:db8::/64"); len(got) != 2 {
		t.Errorf("before the run 2001:db8::/64 has %v, want both routes (the expired one is listed)", got)
	}
	if !ns.runGC6(now + 500) {
		t.Errorf("the run reported no route with an expiry left; 2001:db8:2::/64 has 600 s")
	}
	want := []string{
		"delroute table 254 type 1 2001:db8:4::/64 dev 3",
		"delroute table 254 type 1 2001:db8::/64 dev 3",
	}
	if d := cmp.Diff(want, describe(t, mon.got)); d != "" {
		t.Errorf("collector's notifications (-kernel +nlemu):\n%s", d)
	}
	if d := cmp.Diff([][3]uint32{{2, 1024, 0}}, expiries6(ns, "2001:db8::/64")); d != "" {
		t.Errorf("2001:db8::/64 after the run (-kernel +nlemu):\n%s", d)
	}
	mon.got = nil
	if ns.runGC6(now+70000) || len(mon.got) != 1 {
		t.Errorf("the last run: %d notifications, want 1 and nothing left to collect", len(mon.got))
	}
}
