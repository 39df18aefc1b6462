package nsmgr

// The IPv6 route garbage collector: fib6_run_gc() / fib6_gc_all() removing
// the routes whose expiry (RTF_EXPIRES, `ip -6 route add ... expires N`, a
// prefix route of an address with a finite lifetime) has passed.
//
// The kernel does not remove a route when it expires: a dump keeps listing
// it with a negative countdown ("expires -3sec") until the collector runs.
// fib6_start_gc() arms its timer, net.ipv6.route.gc_interval (30 s) ahead,
// when a route with an expiry is inserted and the timer is not pending;
// each run deletes the expired routes, each announced with RTM_DELROUTE,
// newest first (tb6_gc_hlist: fib6_add_gc_list() adds at the head), and
// re-arms the timer while routes with an expiry remain (measured on 6.18:
// four routes of expires 4 added at t=0 were listed as expired until t=30
// and gone at t=35, deleted in the reverse order of their adds).
//
// The timer is a time.AfterFunc (no goroutine while it waits). A run takes
// only the IPv6 tables' own lock, as an IPv6 route change does.

import (
	"cmp"
	"net/netip"
	"slices"
	"sync"
	"syscall"
	"time"

	"github.com/nlemu/nlemu/fib"
	"github.com/nlemu/nlemu/rtnl"
)

// gc6Interval is net.ipv6.route.gc_interval (ip6_rt_gc_interval, 30 s).
const gc6Interval = 30 * time.Second

// gc6State is one namespace's collector.
type gc6State struct {
	mu    sync.Mutex
	timer *time.Timer
	armed bool // ip6_fib_timer pending
	kick  bool // a route was added while a run was under way
	// order is each expiring route's place on the kernel's gc list: the
	// sequence number of when it got there (newest is collected first).
	order map[gc6Key]uint64
	seq   uint64
}

// gc6Key identifies a route on the gc list.
type gc6Key struct {
	table    uint32
	dst, src netip.Prefix
	priority uint32
	dev      int32
	gw       netip.Addr
}

func gc6KeyOf(r *fib.Route) gc6Key {
	k := gc6Key{table: r.Table, dst: r.Dst.Masked(), src: r.Src, priority: r.Priority}
	if len(r.Nexthops) > 0 {
		k.dev, k.gw = r.Nexthops[0].Dev, r.Nexthops[0].Gateway
	}
	return k
}

// gc6Added is fib6_add_gc_list() and fib6_start_gc() for a route just
// inserted (or replaced) with an expiry: it goes to the head of the gc list
// and the timer is armed unless pending.
func (ns *Namespace) gc6Added(r fib.Route) {
	if r.Expires == 0 || r.Family != rtnl.AF_INET6 {
		return
	}
	g := &ns.gc6
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.order == nil {
		g.order = map[gc6Key]uint64{}
	}
	g.seq++
	g.order[gc6KeyOf(&r)] = g.seq
	if g.armed {
		g.kick = true
		return
	}
	g.armed = true
	if g.timer == nil {
		g.timer = time.AfterFunc(gc6Interval, ns.gc6Fire)
	} else {
		g.timer.Reset(gc6Interval)
	}
}

// gc6Cleared is fib6_may_remove_gc_list(): a route whose expiry a request
// cleared leaves the gc list.
func (ns *Namespace) gc6Cleared(r fib.Route) {
	g := &ns.gc6
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.order, gc6KeyOf(&r))
}

// gc6Fire is the timer: one run, then the timer again while routes with an
// expiry remain (fib6_run_gc(): gc_args.more).
func (ns *Namespace) gc6Fire() {
	more := ns.runGC6(routeClock())
	g := &ns.gc6
	g.mu.Lock()
	defer g.mu.Unlock()
	if more || g.kick {
		g.kick = false
		g.timer.Reset(gc6Interval)
		return
	}
	g.armed = false
}

// runGC6 is fib6_gc_all() at routeClock() now: every route whose expiry
// has passed (time_after(now, expires)) is deleted and announced, newest
// on the gc list first. It reports whether routes with an expiry remain.
func (ns *Namespace) runGC6(now uint32) (more bool) {
	alive := map[gc6Key]bool{}
	ch := ns.v6.RemoveIf(func(r *fib.Route) bool {
		if r.Expires == 0 {
			return false
		}
		if int32(now-r.Expires) > 0 {
			return true
		}
		more = true
		alive[gc6KeyOf(r)] = true
		return false
	}, true)
	g := &ns.gc6
	g.mu.Lock()
	seq := func(r *fib.Route) uint64 { return g.order[gc6KeyOf(r)] }
	slices.SortStableFunc(ch.Events, func(a, b fib.Event) int { return cmp.Compare(seq(&b.Route), seq(&a.Route)) })
	for k := range g.order {
		if !alive[k] {
			delete(g.order, k)
		}
	}
	g.mu.Unlock()
	for i := range ch.Events {
		// The RTM_DELROUTE of a collected route carries no expiry
		// (measured: `ip monitor` prints no "expires").
		ch.Events[i].Route.Expires = 0
	}
	ns.NotifyRouteEvents(ch)
	return more
}

// expires6 is the expiry bookkeeping after an IPv6 insert of r (its
// Expires a deadline) returned err: a route stored with an expiry joins the
// gc list; a duplicate refused with EEXIST by a request without NLM_F_EXCL
// or NLM_F_REPLACE still hands its expiry, or its lack of one, to the
// stored route if that one expires (fib6_add_rt2node(); fib.RefreshExpires6,
// TestQuirkIPv6DuplicateAddRefreshesExpiry).
func (ns *Namespace) expires6(r fib.Route, nlFlags uint16, err *rtnl.Error) {
	switch {
	case err == nil:
		ns.gc6Added(r)
	case err.Errno == syscall.EEXIST && nlFlags&(rtnl.NLM_F_EXCL|rtnl.NLM_F_REPLACE) == 0:
		if ns.v6.RefreshExpires6(r) && r.Expires == 0 {
			ns.gc6Cleared(r)
		}
	}
}
