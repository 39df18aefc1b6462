package fib

import (
	"slices"

	"github.com/nlemu/nlemu/rtnl"
)

// DevEvent is the device change a bulk route update reacts to.
type DevEvent uint8

const (
	// DevCarrierDown is NETDEV_CHANGE with the carrier lost.
	DevCarrierDown DevEvent = iota + 1
	// DevDown is NETDEV_DOWN (IFF_UP cleared).
	DevDown
	// DevUnregister is NETDEV_UNREGISTER (the device is deleted).
	DevUnregister
)

// edit visits every stored entry of every table (mu held) in dump order —
// tables in hash order, prefixes in the table's walk order, as the
// kernel's fib6_clean_all() and fib_table_flush() visit them, so that the
// events come out in the kernel's order. f returns the route to store
// instead and whether it changed; keep false removes the entry. Merged
// IPv4 main/local storage is visited once, through main.
func (t *Tables) edit(f func(r Route) (nr Route, keep, changed bool)) {
	lm := t.lm.Load()
	for tb := range t.set.Load().all {
		if t.family == afInet && tb.id == tableLocal && lm.merged {
			continue // same storage as main
		}
		root := t.root(tb.id)
		if root == nil {
			continue
		}
		v := View{family: t.family, id: tb.id, bt: root, all: true}
		for e := range v.WalkEntries() {
			p, l := e.dst, e.l
			var s []*attrs
			dirty := false
			for i := range l.len() {
				a := l.at(i)
				r := a.r
				r.Dst = p
				nr, keep, changed := f(r)
				if !keep || changed {
					if !dirty {
						s = make([]*attrs, 0, l.len())
						for j := range i {
							s = append(s, l.at(j))
						}
						dirty = true
					}
					if keep {
						s = append(s, t.intern(nr))
					} else {
						t.routes.Add(-1)
					}
					t.release(a)
					continue
				}
				if dirty {
					s = append(s, a)
				}
			}
			if dirty {
				t.setLeaf(tb.id, p, s)
			}
		}
	}
}

// SyncDownDev updates the routes through device dev after ev, as the
// kernel does. IPv4 (fib_sync_down_dev() + fib_flush()): each hop on dev
// gets RTNH_F_LINKDOWN (carrier loss) or RTNH_F_DEAD|RTNH_F_LINKDOWN
// (down, unregister) — host-scope routes are spared unless the device is
// unregistered — and a route whose hops are all dead is removed without a
// notification (Change.Silent); unregistering kills a multipath route
// with any hop on dev. IPv6 (rt6_sync_down_dev(), fib6_ifdown()): down
// and unregister remove every single-path route on dev, and flag the hop
// of a sibling set dead unless all its hops are, then the set goes (one
// RTM_DELROUTE per removed hop); carrier loss flags hops on dev
// RTNH_F_LINKDOWN except on local and anycast routes.
// IPv4 callers must hold RTNL.
func (t *Tables) SyncDownDev(dev int32, ev DevEvent) Change {
	t.assertRTNL()
	t.mu.Lock()
	defer t.mu.Unlock()
	var c Change
	if t.family == afInet {
		t.edit(func(r Route) (Route, bool, bool) { return syncDown4(&c, r, dev, ev) })
	} else {
		t.edit(func(r Route) (Route, bool, bool) { return syncDown6(&c, r, dev, ev) })
	}
	return c
}

func usesDev(r *Route, dev int32) bool {
	return slices.ContainsFunc(r.Nexthops, func(h Nexthop) bool { return h.Dev == dev })
}

func syncDown4(c *Change, r Route, dev int32, ev DevEvent) (Route, bool, bool) {
	if !usesDev(&r, dev) {
		return r, true, false
	}
	force := ev == DevUnregister
	hops := slices.Clone(r.Nexthops)
	dead, changed := 0, false
	for i := range hops {
		h := &hops[i]
		if h.Flags&rtnl.RTNH_F_DEAD != 0 {
			dead++
		} else if h.Dev == dev && (force || r.Scope != rtnl.RT_SCOPE_HOST) {
			// fib_nh_scope is RT_SCOPE_NOWHERE for host-scope routes,
			// which a non-forced sync skips.
			if ev == DevCarrierDown {
				h.Flags |= rtnl.RTNH_F_LINKDOWN
			} else {
				h.Flags |= rtnl.RTNH_F_DEAD | rtnl.RTNH_F_LINKDOWN
			}
			dead++
			changed = true
		}
		if ev == DevUnregister && h.Dev == dev {
			dead = len(hops)
			break
		}
	}
	if dead == len(hops) && ev != DevCarrierDown {
		c.Silent = append(c.Silent, r)
		return r, false, true
	}
	r.Nexthops = hops
	return r, true, changed
}

func syncDown6(c *Change, r Route, dev int32, ev DevEvent) (Route, bool, bool) {
	if !usesDev(&r, dev) {
		return r, true, false
	}
	if ev == DevCarrierDown {
		if r.Type == rtnl.RTN_LOCAL { // fib6_ifdown(): RTF_LOCAL; a request's anycast has no RTF_ANYCAST
			return r, true, false
		}
		hops := slices.Clone(r.Nexthops)
		for i := range hops {
			if hops[i].Dev == dev {
				hops[i].Flags |= rtnl.RTNH_F_LINKDOWN
			}
		}
		r.Nexthops = hops
		return r, true, true
	}
	if len(r.Nexthops) <= 1 {
		c.add(rtnl.RTM_DELROUTE, 0, r)
		return r, false, true
	}
	if ev == DevUnregister {
		// Each sibling on dev goes on its own.
		var keep []Nexthop
		for _, h := range r.Nexthops {
			if h.Dev == dev {
				one := r
				one.Nexthops = []Nexthop{h}
				c.add(rtnl.RTM_DELROUTE, 0, one)
			} else {
				keep = append(keep, h)
			}
		}
		if len(keep) == 0 {
			return r, false, true
		}
		r.Nexthops = keep
		return r, true, true
	}
	// rt6_multipath_dead_count(): hops on dev or already dead.
	dead := 0
	for _, h := range r.Nexthops {
		if h.Dev == dev || h.Flags&rtnl.RTNH_F_DEAD != 0 {
			dead++
		}
	}
	if dead == len(r.Nexthops) {
		for _, h := range r.Nexthops {
			one := r
			one.Nexthops = []Nexthop{h}
			c.add(rtnl.RTM_DELROUTE, 0, one)
		}
		return r, false, true
	}
	hops := slices.Clone(r.Nexthops)
	for i := range hops {
		if hops[i].Dev == dev {
			hops[i].Flags |= rtnl.RTNH_F_DEAD | rtnl.RTNH_F_LINKDOWN
		}
	}
	r.Nexthops = hops
	return r, true, true
}

// SyncUpDev clears flags (RTNH_F_DEAD and/or RTNH_F_LINKDOWN) from the hops
// on device dev (fib_sync_up(), rt6_sync_up()): the caller passes
// RTNH_F_DEAD|RTNH_F_LINKDOWN when dev came up with a carrier,
// RTNH_F_DEAD alone without one, RTNH_F_LINKDOWN when the carrier came
// back. The kernel notifies nothing. IPv4 callers must hold RTNL.
func (t *Tables) SyncUpDev(dev int32, flags uint8) {
	t.assertRTNL()
	t.mu.Lock()
	defer t.mu.Unlock()
	t.edit(func(r Route) (Route, bool, bool) {
		changed := false
		for i, h := range r.Nexthops {
			if h.Dev == dev && h.Flags&flags != 0 {
				if !changed {
					r.Nexthops = slices.Clone(r.Nexthops)
					changed = true
				}
				r.Nexthops[i].Flags &^= flags
			}
		}
		return r, true, changed
	})
}

// RemoveIf removes every route for which remove returns true, in every
// table, and returns them: as RTM_DELROUTE events when notify, else in
// Change.Silent (the kernel's fib_flush() after fib_sync_down_addr()
// notifies nothing). IPv4 callers must hold RTNL.
func (t *Tables) RemoveIf(remove func(r *Route) bool, notify bool) Change {
	t.assertRTNL()
	t.mu.Lock()
	defer t.mu.Unlock()
	var c Change
	t.edit(func(r Route) (Route, bool, bool) {
		if !remove(&r) {
			return r, true, false
		}
		if notify {
			c.add(rtnl.RTM_DELROUTE, 0, r)
		} else {
			c.Silent = append(c.Silent, r)
		}
		return r, false, true
	})
	return c
}
