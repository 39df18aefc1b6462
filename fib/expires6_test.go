package fib

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/rtnl"
)

// TestQuirkRefreshExpires6OnlyChangesAnExpiringDuplicate: the expiry a
// refused duplicate hands over (fib6_add_rt2node() before its -EEXIST)
// reaches only the stored route the request duplicates (same metric, same
// hop) and only when that route expires; the first such route is the one.
func TestQuirkRefreshExpires6OnlyChangesAnExpiringDuplicate(t *testing.T) {
	withExp := func(desc string, exp uint32) Route { r := rt(desc); r.Expires = exp; return r }
	tb := NewIPv6()
	for _, r := range []Route{
		withExp("2001:db8::/64 metric 1 dev 3", 500),
		withExp("2001:db8::/64 metric 1024 dev 3", 0),
		withExp("2001:db8::/64 metric 1 dev 2", 700),
	} {
		if _, err := tb.Insert(r, rtnl.NLM_F_CREATE); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		r    Route
		want bool
	}{
		{withExp("2001:db8::/64 metric 1 dev 3", 40), true},    // the duplicate, expiring: takes 40
		{withExp("2001:db8::/64 metric 1 dev 3", 40), false},   // already 40
		{withExp("2001:db8::/64 metric 1024 dev 3", 9), false}, // no expiry stored: untouched
		{withExp("2001:db8::/64 metric 5 dev 3", 9), false},    // no duplicate
		{withExp("2001:db8::/64 metric 1 dev 2", 0), true},     // cleared
		{withExp("2001:db8:1::/64 metric 1 dev 2", 9), false},  // no such prefix
	} {
		if got := tb.RefreshExpires6(c.r); got != c.want {
			t.Errorf("RefreshExpires6(%s, %d) = %v, want %v", brief(c.r), c.r.Expires, got, c.want)
		}
	}
	v, _ := tb.Snapshot().Table(tableMain)
	e, _ := v.Get(pf("2001:db8::/64"))
	var got [][2]uint32
	for r := range e.All() {
		got = append(got, [2]uint32{uint32(r.Nexthops[0].Dev), r.Expires})
	}
	if d := cmp.Diff([][2]uint32{{3, 40}, {2, 0}, {3, 0}}, got); d != "" {
		t.Errorf("(dev, expires) after (-want +got):\n%s", d)
	}
	if tb.Routes() != 3 {
		t.Errorf("%d routes, want 3", tb.Routes())
	}
}
