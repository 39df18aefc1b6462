package fib

import "github.com/nlemu/nlemu/rtnl"

// RefreshExpires6 is what fib6_add_rt2node() does before the EEXIST it
// returns for a route that duplicates one already stored
// (rt6_duplicate_nexthop(): same table, prefix, source, metric and hop) when
// the request had neither NLM_F_EXCL nor NLM_F_REPLACE (`ip -6 route
// prepend` or `append`): the request fails, yet an existing route that
// expires takes the request's expiry (r.Expires, a deadline; 0 clears it),
// without a notification. One without expiry is left alone. It reports
// whether a route changed and, if so, whether it still expires.
//
// The insert path returns the EEXIST; this runs after it, on that error
// only, so that the insert itself stays as it is. ECMP sets are skipped:
// nlemu keeps one expiry per set where the kernel keeps one per sibling.
func (t *Tables) RefreshExpires6(r Route) (changed bool) {
	if t.family != rtnl.AF_INET6 || len(r.Nexthops) > 1 {
		return false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.set.Load().get(r.Table) == nil {
		return false
	}
	s := t.getLeaf(r.Table, r.Dst).slice()
	lo, hi := group6(s, r.Src)
	for i := lo; i < hi; i++ {
		e := &s[i].r
		if e.Priority != r.Priority || !dupHop6(e, &r) {
			continue
		}
		if e.Expires == 0 || len(e.Nexthops) > 1 || e.Expires == r.Expires {
			return false
		}
		old := s[i]
		n := old.r
		n.Expires = r.Expires
		s[i] = t.intern(n)
		t.setLeaf(r.Table, r.Dst, s)
		t.release(old)
		return true
	}
	return false
}
