package fib

import (
	"net/netip"
	"slices"
	"syscall"

	"github.com/nlemu/nlemu/rtnl"
)

// IPv6 keeps, per destination prefix, the routes of every source prefix
// (the kernel's per-node source subtree) in one leaf: source-specific
// groups first (in source dump order), then the plain routes; inside a
// group metric ascending, equal metrics in insertion order. An entry with
// several hops is an ECMP sibling set (the kernel links the siblings of
// one metric in fib6_siblings; a dump prints them as one multipath route
// at the first sibling's place).

// group6 returns the range [lo, hi) of the entries of source prefix src
// in s (hi == lo: none, the group would start at lo).
func group6(s []*attrs, src netip.Prefix) (lo, hi int) {
	for lo < len(s) && srcBefore(s[lo].r.Src, src) {
		lo++
	}
	hi = lo
	for hi < len(s) && s[hi].r.Src == src {
		hi++
	}
	return lo, hi
}

// srcBefore reports whether source group a sorts before group b: source
// routes before the plain ones (zero Prefix), sources in dump order.
func srcBefore(a, b netip.Prefix) bool {
	switch {
	case a == b:
		return false
	case !a.IsValid():
		return false
	case !b.IsValid():
		return true
	}
	return dumpLess(a, b)
}

// ecmp6 mirrors rt6_qualify_for_ecmp(): a route with a gateway, no
// nexthop object, and not learned from a router advertisement.
func ecmp6(r *Route) bool {
	return r.NhID == 0 && r.Protocol != rtnl.RTPROT_RA && len(r.Nexthops) > 0 && r.Nexthops[0].Gateway.IsValid()
}

// dupHop6 mirrors rt6_duplicate_nexthop() for each sibling of e: the same
// device and gateway as hop h (or the same nexthop object).
func dupHop6(e *Route, r *Route) bool {
	if e.NhID != 0 || r.NhID != 0 {
		return e.NhID == r.NhID
	}
	var h Nexthop
	if len(r.Nexthops) > 0 {
		h = r.Nexthops[0]
	}
	if len(e.Nexthops) == 0 {
		return h.Dev == 0 && !h.Gateway.IsValid()
	}
	for _, x := range e.Nexthops {
		if x.Dev == h.Dev && x.Gateway == h.Gateway && x.Encap == h.Encap {
			return true
		}
	}
	return false
}

// rotate returns r with its hops starting at hop k: the kernel fills a
// sibling set's message from the sibling it was given, then the others
// in list order (rt6_fill_node()).
func rotate(r Route, k int) Route {
	if k == 0 || len(r.Nexthops) < 2 {
		return r
	}
	n := make([]Nexthop, 0, len(r.Nexthops))
	n = append(append(n, r.Nexthops[k:]...), r.Nexthops[:k]...)
	r.Nexthops = n
	return r
}

// insert6 inserts r; a route with several hops is added hop by hop as
// ip6_route_multipath_add() does, with one notification at the end, and
// the hops already added removed again when one fails. Two equal hops in
// the request fail before anything is added (ip6_route_info_append()).
// The change is appended to *c.
func (t *Tables) insert6(c *Change, r Route, nlFlags uint16, mp bool) *rtnl.Error {
	if len(r.Nexthops) <= 1 && !mp {
		return t.add6(c, r, nlFlags)
	}
	replace := nlFlags&rtnl.NLM_F_REPLACE != 0
	notify := uint16(rtnl.NLM_F_CREATE)
	if replace {
		notify = rtnl.NLM_F_REPLACE
	}
	if nlFlags&rtnl.NLM_F_APPEND != 0 {
		notify |= rtnl.NLM_F_APPEND
	}
	for i := range r.Nexthops {
		for j := range i {
			if r.Nexthops[i].Dev == r.Nexthops[j].Dev && r.Nexthops[i].Gateway == r.Nexthops[j].Gateway && r.Nexthops[i].Encap == r.Nexthops[j].Encap {
				return rtnl.Errno(syscall.EEXIST)
			}
		}
	}
	var done []Route
	flags := nlFlags
	for i := range r.Nexthops {
		one := r
		one.Nexthops = r.Nexthops[i : i+1]
		if err := t.add6(nil, one, flags); err != nil {
			// Linux 6.18 removes the hops already added and notifies
			// nothing, neither their add nor their removal (measured:
			// "prepend nexthop via A nexthop via B" over an existing
			// "via B" is EEXIST with no RTM_NEWROUTE/RTM_DELROUTE).
			for _, d := range done {
				t.delete6(Match{Family: afInet6, Table: d.Table, Dst: d.Dst, Src: d.Src,
					Priority: d.Priority, Oif: d.Nexthops[0].Dev, Gateway: d.Nexthops[0].Gateway})
			}
			return err
		}
		done = append(done, one)
		// After the first hop a collision has already failed it, and a
		// replace has already replaced: the rest are appended.
		flags = rtnl.NLM_F_CREATE | rtnl.NLM_F_APPEND
	}
	// ip6_route_mpath_notify(): an append is announced from the sibling
	// set's first hop (siblings are added at the end of the list), any
	// other add from the first hop it added, the others following it
	// around the list.
	if e, ok := t.entryOf(done[0]); ok {
		if nlFlags&rtnl.NLM_F_APPEND == 0 {
			for k := range e.Nexthops {
				if h := e.Nexthops[k]; h.Dev == done[0].Nexthops[0].Dev && h.Gateway == done[0].Nexthops[0].Gateway {
					e = rotate(e, k)
					break
				}
			}
		}
		c.add(rtnl.RTM_NEWROUTE, notify, e)
	}
	return nil
}

// entryOf returns the stored entry holding r's first hop, its hops in the
// sibling list's order.
func (t *Tables) entryOf(r Route) (Route, bool) {
	s := t.getLeaf(r.Table, r.Dst).slice()
	lo, hi := group6(s, r.Src)
	for _, a := range s[lo:hi] {
		if a.r.Priority == r.Priority && dupHop6(&a.r, &r) {
			e := a.r
			e.Dst = r.Dst
			return e, true
		}
	}
	return Route{}, false
}

// add6 is fib6_add_rt2node() for a single-hop (or hopless) route,
// appending the change to *c; c nil skips the notification and the
// replaced route (a multipath add sends one notification at the end).
func (t *Tables) add6(c *Change, r Route, nlFlags uint16) *rtnl.Error {
	notify := c != nil
	s := t.getLeaf(r.Table, r.Dst).slice()
	lo, hi := group6(s, r.Src)
	replace := nlFlags&rtnl.NLM_F_REPLACE != 0
	canECMP := ecmp6(&r)
	nl := uint16(rtnl.NLM_F_EXCL)
	if nlFlags&rtnl.NLM_F_APPEND != 0 {
		nl |= rtnl.NLM_F_APPEND
	}
	ins, found, fallback, sibling := hi, -1, -1, -1
	for i := lo; i < hi; i++ {
		e := &s[i].r
		if e.Priority == r.Priority {
			if nlFlags&rtnl.NLM_F_EXCL != 0 {
				return rtnl.Errno(syscall.EEXIST)
			}
			nl &^= rtnl.NLM_F_EXCL
			if replace {
				if canECMP == ecmp6(e) {
					found = i
					break
				}
				if fallback < 0 {
					fallback = i
				}
				continue
			}
			if dupHop6(e, &r) {
				return rtnl.Errno(syscall.EEXIST)
			}
			if canECMP && ecmp6(e) && sibling < 0 {
				sibling = i
			}
		}
		if e.Priority > r.Priority {
			ins = i
			break
		}
	}
	if replace && found < 0 && fallback >= 0 {
		found = fallback
	}
	if !replace || found < 0 {
		if replace && nlFlags&rtnl.NLM_F_CREATE == 0 {
			// fib6_add_1() says so only when it finds no node for the
			// prefix; a node that exists (one with routes, or the
			// root, which holds the null entry) reaches
			// fib6_add_rt2node(), whose ENOENT has no message.
			plain := !r.Src.IsValid() || r.Src.Bits() == 0
			if lo < hi || plain && (len(s) > 0 || r.Dst.Bits() == 0) {
				return rtnl.Errno(syscall.ENOENT)
			}
			return rtnl.Errorf(syscall.ENOENT, "Can not replace route - no match found")
		}
		nl |= rtnl.NLM_F_CREATE
		if sibling >= 0 {
			old := s[sibling]
			n := old.r
			n.Nexthops = append(slices.Clone(old.r.Nexthops), r.Nexthops[0])
			s[sibling] = t.intern(n)
			t.release(old)
			t.setLeaf(r.Table, r.Dst, s)
			if notify {
				n.Dst = r.Dst
				c.add(rtnl.RTM_NEWROUTE, nl, rotate(n, len(n.Nexthops)-1))
			}
			return nil
		}
		s = slices.Insert(s, ins, t.intern(r))
		t.setLeaf(r.Table, r.Dst, s)
		t.routes.Add(1)
		if notify {
			c.add(rtnl.RTM_NEWROUTE, nl, r)
		}
		return nil
	}
	old := s[found]
	s[found] = t.intern(r)
	t.setLeaf(r.Table, r.Dst, s)
	if notify {
		od := old.r
		od.Dst = r.Dst
		c.Replaced = append(c.Replaced, od)
		c.add(rtnl.RTM_NEWROUTE, rtnl.NLM_F_REPLACE, r)
	}
	t.release(old)
	return nil
}

// delete6 is ip6_route_del(): the first route of the exact dst (and src)
// node matching metric, protocol, device and gateway; type and scope are
// ignored. With a gateway only that hop leaves an ECMP set, otherwise the
// whole set goes (__ip6_del_rt_siblings()).
func (t *Tables) delete6(m Match) (Change, *rtnl.Error) {
	dst := m.Dst.Masked()
	src := m.Src
	if src.IsValid() {
		src = src.Masked()
	}
	s := t.getLeaf(m.Table, dst).slice()
	lo, hi := group6(s, src)
	if lo == hi {
		if dst.Bits() == 0 && !src.IsValid() && nullEntryMatches6(m) {
			// The root node always exists and holds the null entry
			// when there is no default route: fib6_del() says ENOENT.
			// ip6_route_del() filters it like any route first
			// (fib6_null_entry_template: dev lo, no gateway, metric
			// ~0, proto kernel), so a filter it fails is ESRCH.
			return Change{}, rtnl.Errno(syscall.ENOENT)
		}
		return Change{}, rtnl.Errno(syscall.ESRCH)
	}
	for i := lo; i < hi; i++ {
		e := &s[i].r
		for k := 0; k < max(1, len(e.Nexthops)); k++ {
			var h Nexthop
			if k < len(e.Nexthops) {
				h = e.Nexthops[k]
			}
			if m.NhID != 0 {
				if e.NhID != m.NhID {
					break
				}
			} else {
				if m.Oif != 0 && h.Dev != m.Oif {
					continue
				}
				if m.Gateway.IsValid() && h.Gateway != m.Gateway {
					continue
				}
			}
			if m.Priority != 0 && m.Priority != e.Priority {
				continue
			}
			if m.Protocol != 0 && m.Protocol != e.Protocol {
				continue
			}
			return t.remove6(s, i, k, m.Gateway.IsValid() && len(e.Nexthops) > 1, dst), nil
		}
	}
	return Change{}, rtnl.Errno(syscall.ESRCH)
}

// nullEntryMatches6 reports whether ip6_route_del()'s filters pass the
// null entry (net->ipv6.fib6_null_entry: no nexthop object, dev lo at
// ifindex 1, no gateway, metric 0xffffffff, RTPROT_KERNEL).
func nullEntryMatches6(m Match) bool {
	return m.NhID == 0 && (m.Oif == 0 || m.Oif == 1) && !m.Gateway.IsValid() &&
		(m.Priority == 0 || m.Priority == 0xffffffff) && (m.Protocol == 0 || m.Protocol == rtnl.RTPROT_KERNEL)
}

// remove6 removes entry i of s (the leaf of dst), or only its hop k when
// oneHop, and returns the notification.
func (t *Tables) remove6(s []*attrs, i, k int, oneHop bool, dst netip.Prefix) Change {
	a := s[i]
	var c Change
	if oneHop {
		n := a.r
		n.Nexthops = slices.Delete(slices.Clone(a.r.Nexthops), k, k+1)
		s[i] = t.intern(n)
		t.setLeaf(a.r.Table, dst, s)
		gone := a.r
		gone.Dst = dst
		gone.Nexthops = []Nexthop{a.r.Nexthops[k]}
		t.release(a)
		c.add(rtnl.RTM_DELROUTE, 0, gone)
		return c
	}
	s = slices.Delete(s, i, i+1)
	t.setLeaf(a.r.Table, dst, s)
	t.routes.Add(-1)
	gone := a.r
	gone.Dst = dst
	t.release(a)
	c.add(rtnl.RTM_DELROUTE, 0, rotate(gone, k))
	return c
}
