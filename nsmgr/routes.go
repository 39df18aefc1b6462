package nsmgr

// Routes: RTM_NEWROUTE / RTM_DELROUTE (inet_rtm_newroute(),
// inet_rtm_delroute(), inet6_rtm_newroute(), inet6_rtm_delroute()), the
// route dumps (inet_dump_fib(), inet6_dump_fib()) and the route
// notifications (rtmsg_fib(), inet6_rt_notify()).
//
// Locking: IPv4 changes run under RTNL (their rows carry lockRTNL, as
// ip_fib_init() registers them without RTNL_FLAG_DOIT_UNLOCKED), which
// serializes them with the local/main unmerge; IPv6 changes are
// registered unlocked (ip6_route_init()) and take only the IPv6 FIB writer
// lock inside fib.Tables. Dumps take no lock: they walk an immutable
// snapshot and resume from a key.

import (
	"net/netip"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/nlemu/nlemu/fib"
	"github.com/nlemu/nlemu/netdev"
	"github.com/nlemu/nlemu/rtnl"
)

// RouteChanges counts the route changes of every namespace by the lock they
// took: IPv4 under RTNL, IPv6 under the IPv6 FIB writer lock alone (for
// `nlemu stats`).
var RouteChanges struct {
	IPv4RTNL, IPv6Writer atomic.Uint64
}

// routeRows are the route handlers' dispatch rows.
func routeRows() []row {
	return []row{
		{family: rtnl.AF_INET, typ: rtnl.RTM_NEWROUTE, doit: (*Namespace).changeRoute, flags: lockRTNL},
		{family: rtnl.AF_INET, typ: rtnl.RTM_DELROUTE, doit: (*Namespace).changeRoute, flags: lockRTNL},
		{family: rtnl.AF_INET6, typ: rtnl.RTM_NEWROUTE, doit: (*Namespace).changeRoute},
		{family: rtnl.AF_INET6, typ: rtnl.RTM_DELROUTE, doit: (*Namespace).changeRoute},
		{family: rtnl.AF_INET, typ: rtnl.RTM_GETROUTE, dumpit: dumpRoutesRow(rtnl.AF_INET)},
		{family: rtnl.AF_INET6, typ: rtnl.RTM_GETROUTE, dumpit: dumpRoutesRow(rtnl.AF_INET6)},
	}
}

// routeTables returns the tables of family.
func (ns *Namespace) routeTables(family uint8) *fib.Tables {
	if family == rtnl.AF_INET6 {
		return ns.v6
	}
	return ns.v4
}

// routeFIB returns the FIB of family, whose lookups (through the rules)
// the gateway checks make.
func (ns *Namespace) routeFIB(family uint8) *fib.FIB {
	if family == rtnl.AF_INET6 {
		return ns.fib6
	}
	return ns.fib4
}

// Tidy does the work the namespace's last route changes left for after
// their replies: the folds of the route tables' lists of changes
// (fib.Tables.Tidy), which no reader can observe. A server calls it once a
// request's reply is sent and before it reads that connection's next
// request, so that the client prepares its next request meanwhile; a
// caller that never calls it sees the same results (the next change
// folds). With nothing to do it is two atomic loads.
func (ns *Namespace) Tidy() {
	ns.v4.Tidy()
	ns.v6.Tidy()
}

// routeScratch is what changeRoute reuses from one request to the next:
// the decoded request, its configuration (whose storage holds the built
// route's hop) and the change's notifications.
type routeScratch struct {
	msg rtnl.RouteMsg
	cfg fib.Config
	ch  fib.Change
}

// routeScratchPool holds the scratch changeRoute reuses.
var routeScratchPool = sync.Pool{New: func() any { return new(routeScratch) }}

// release empties sc's change for the next request, keeping its slices
// (the routes it held cleared, so that they are not kept alive), and
// returns sc to the pool.
func (sc *routeScratch) release() {
	ch := &sc.ch
	clear(ch.Events)
	clear(ch.Replaced)
	clear(ch.Silent)
	ch.Events, ch.Replaced, ch.Silent = ch.Events[:0], ch.Replaced[:0], ch.Silent[:0]
	sc.cfg = fib.Config{}
	routeScratchPool.Put(sc)
}

// changeRoute is inet_rtm_newroute() / inet_rtm_delroute() /
// inet6_rtm_newroute() / inet6_rtm_delroute() up to the notification.
func (ns *Namespace) changeRoute(req *Request) *rtnl.Error {
	m := req.Msg
	typ, nlFlags := uint16(m.Header.Type), uint16(m.Header.Flags)
	// The decoded request is a 460-byte struct: a fresh one per request
	// was a quarter of hack/routeload.sh's allocated bytes. Nothing keeps
	// it past the handler (fib interns copies of what it stores, the
	// notifications are encoded before the return), so it is reused, and
	// so is the slice of the insert's notifications (fib.InsertTo).
	sc := routeScratchPool.Get().(*routeScratch)
	defer sc.release()
	rm := &sc.msg
	*rm = rtnl.RouteMsg{}
	if err := rm.DecodeRequest(m); err != nil {
		return err
	}
	if rm.Family == rtnl.AF_INET {
		RouteChanges.IPv4RTNL.Add(1)
	} else {
		RouteChanges.IPv6Writer.Add(1)
	}
	c := &sc.cfg
	var err *rtnl.Error
	*c, err = fib.Parse(rm, typ, nlFlags)
	if err == nil {
		ch := &sc.ch
		if typ == rtnl.RTM_NEWROUTE {
			err = ns.newRoute(c, ch)
			if err == nil && rm.Family == rtnl.AF_INET6 && rm.Has(rtnl.RTA_MULTIPATH) {
				multipathAddFlags(m)
			}
		} else {
			*ch, err = ns.delRoute(c)
		}
		ns.notifyRoutes(req, ch)
	}
	if err != nil {
		if rm.Warning != "" && err.Msg == "" {
			err.Msg = rm.Warning
		}
		return err
	}
	if rm.Warning != "" {
		return &rtnl.Error{Msg: rm.Warning}
	}
	return nil
}

// multipathAddFlags is what ip6_route_multipath_add() does to the request
// header once its first nexthop is in: it clears NLM_F_EXCL and
// NLM_F_REPLACE and sets NLM_F_CREATE, for the hops after it — and the ACK
// echoes the header so changed (measured: a multipath add with flags 0x605
// is acknowledged with 0x405). The request's bytes may be the caller's
// (in-process), so the change goes into a copy.
func multipathAddFlags(m *rtnl.Message) {
	m.RewriteFlags(uint16(m.Header.Flags)&^(rtnl.NLM_F_EXCL|rtnl.NLM_F_REPLACE) | rtnl.NLM_F_CREATE)
}

// newRoute creates the table (fib_new_table() / fib6_new_table(): even a
// request that fails later leaves it behind [ROUTES-SPEC E19]), builds the
// route against the devices and inserts it, appending the change to *ch.
func (ns *Namespace) newRoute(c *fib.Config, ch *fib.Change) *rtnl.Error {
	if err := ns.checkRouteAdd(); err != nil {
		return err
	}
	t := ns.routeTables(c.Family)
	if err := t.Create(c.Table); err != nil {
		return rtnl.Errno(syscall.ENOBUFS)
	}
	r, err := c.Build(fib.Env{Devs: routeDevices{ns}, FIB: ns.routeFIB(c.Family), FIB6: ns.fib6})
	if err != nil {
		return err
	}
	if r.Expires != 0 {
		// The route keeps its deadline (fib6_set_expires()); dumps and
		// notifications report the time left.
		r.Expires = routeClock() + r.Expires*100
	}
	if c.Family == rtnl.AF_INET6 && c.Msg.Has(rtnl.RTA_MULTIPATH) {
		return t.InsertMultipathTo(ch, r, c.NlFlags)
	}
	err = t.InsertTo(ch, r, c.NlFlags)
	if c.Family == rtnl.AF_INET6 && (r.Expires != 0 || err != nil) {
		ns.expires6(r, c.NlFlags, err) // route_gc6.go
	}
	return err
}

// routeEpoch is the origin of routeClock.
var routeEpoch = time.Now()

// routeClock is the route expiry clock in 1/100 s (clock_t, USER_HZ 100):
// what an IPv6 route's Expires holds once stored, as a deadline.
func routeClock() uint32 { return uint32(time.Since(routeEpoch)/(10*time.Millisecond)) + 1 }

// delRoute is the delete half: the table must exist (ESRCH "FIB table does
// not exist"), then fib_table_delete() / ip6_route_del(). An IPv6
// RTA_MULTIPATH deletes hop by hop (ip6_route_multipath_del()): hops deleted
// before a failing one stay deleted, and the last failure is the answer.
func (ns *Namespace) delRoute(c *fib.Config) (fib.Change, *rtnl.Error) {
	t := ns.routeTables(c.Family)
	if c.Family == rtnl.AF_INET && c.NhID != 0 {
		return fib.Change{}, rtnl.Errorf(syscall.EINVAL, "Nexthop id does not exist")
	}
	if !t.Exists(c.Table) {
		return fib.Change{}, rtnl.Errorf(syscall.ESRCH, "FIB table does not exist")
	}
	m := c.Msg
	if c.Family == rtnl.AF_INET6 && m.Flags&rtnl.RTM_F_CLONED != 0 {
		// ip6_route_del() of a cached route (RTF_CACHE): nlemu has no
		// exceptions, so there is nothing to find.
		return fib.Change{}, rtnl.Errno(syscall.ESRCH)
	}
	base := fib.Match{
		Family: c.Family, Table: c.Table, Dst: c.Dst, Src: c.Src, Tos: m.Tos, Type: m.Type,
		Scope: m.Scope, Protocol: m.Protocol, Priority: c.Priority, Prefsrc: c.Prefsrc,
		Oif: c.Oif, Gateway: c.Gateway, Realm: c.Flow,
	}
	if c.Family == rtnl.AF_INET6 {
		base.Prefsrc = netip.Addr{}
	}
	if m.Has(rtnl.RTA_METRICS) {
		base.Metrics = c.Metrics
	}
	if c.Family == rtnl.AF_INET && (c.Oif != 0 || c.Gateway.IsValid()) {
		// fib_nh_match() compares the encapsulation only beside a
		// device or gateway (fib_encap_match()).
		base.Encap = fib.MatchEncap(m)
	}
	if !m.Has(rtnl.RTA_MULTIPATH) {
		return t.Delete(base)
	}
	if c.Family == rtnl.AF_INET {
		for _, h := range m.Multipath {
			nh := fib.Nexthop{Dev: h.IfIndex, Weight: uint16(h.Hops) + 1, Flags: h.Flags, Realm: h.Flow}
			if h.Has(rtnl.RTA_GATEWAY) && !h.Gateway.IsUnspecified() {
				nh.Gateway = h.Gateway
			} else if h.Has(rtnl.RTA_VIA) {
				nh.Gateway = h.ViaAddr
			}
			base.Multipath = append(base.Multipath, nh)
		}
		return t.Delete(base)
	}
	var (
		all  fib.Change
		last *rtnl.Error
	)
	for _, h := range m.Multipath {
		hm := base
		if h.IfIndex != 0 {
			hm.Oif = h.IfIndex
		}
		if h.Has(rtnl.RTA_GATEWAY) {
			hm.Gateway = h.Gateway
		}
		ch, err := t.Delete(hm)
		if err != nil {
			last = err
			continue
		}
		all.Events = append(all.Events, ch.Events...)
	}
	return all, last
}

// routeGroup is the notification group of family's routes.
func routeGroup(family uint8) uint32 {
	if family == rtnl.AF_INET6 {
		return rtnl.RTNLGRP_IPV6_ROUTE
	}
	return rtnl.RTNLGRP_IPV4_ROUTE
}

// notifyRoutes sends ch's notifications (rtmsg_fib(), inet6_rt_notify()):
// nlmsg_pid and seq of the request, to the family's group and, with
// NLM_F_ECHO, to the requester too (nlmsg_notify() / rtnl_notify()).
func (ns *Namespace) notifyRoutes(req *Request, ch *fib.Change) {
	if len(ch.Events) == 0 {
		return
	}
	m := req.Msg
	echo := uint16(m.Header.Flags)&rtnl.NLM_F_ECHO != 0
	var skip Listener
	if echo {
		skip = req.Self
	}
	for _, ev := range ch.Events {
		group := routeGroup(ev.Route.Family)
		bcast := ns.hasListeners(group, skip)
		if !bcast && !echo {
			continue
		}
		b := AppendRoute(nil, ev.Type, ev.Flags, m.Header.Sequence, req.PortID, &ev.Route)
		if bcast {
			ns.notify(group, b, skip)
		}
		if echo && req.Self != nil {
			deliverGroup(req.Self, b, group)
		}
	}
}

// NotifyRouteEvents sends kernel-originated route changes (address and link
// events: fib_add_ifaddr(), addrconf_prefix_route(), ...) with nlmsg_pid
// and seq 0.
func (ns *Namespace) NotifyRouteEvents(ch fib.Change) {
	for _, ev := range ch.Events {
		group := routeGroup(ev.Route.Family)
		if !ns.hasListeners(group, nil) {
			continue
		}
		ns.notify(group, AppendRoute(nil, ev.Type, ev.Flags, 0, 0, &ev.Route), nil)
	}
}

// AppendRoute appends r as a route message of type typ: the layout of
// fib_dump_info() for IPv4 and rt6_fill_node() for IPv6, which dumps and
// notifications share.
func AppendRoute(dst []byte, typ, flags uint16, seq, pid uint32, r *fib.Route) []byte {
	var m rtnl.RouteMsg
	fillRoute(&m, r)
	return rtnl.AppendRoute(dst, typ, flags, seq, pid, &m)
}

// hopFlagsMask are the nexthop flags fib_nexthop_info() reports.
const hopFlagsMask = rtnl.RTNH_F_DEAD | rtnl.RTNH_F_LINKDOWN | rtnl.RTNH_F_ONLINK | rtnl.RTNH_F_OFFLOAD | rtnl.RTNH_F_TRAP

// fillRoute is fib_dump_info() / rt6_fill_node() for a FIB entry.
func fillRoute(m *rtnl.RouteMsg, r *fib.Route) {
	*m = rtnl.RouteMsg{
		Family: r.Family, DstLen: uint8(r.Dst.Bits()), SrcLen: uint8(max(r.Src.Bits(), 0)),
		Tos: r.Tos, Protocol: r.Protocol, Scope: r.Scope, Type: r.Type, Flags: r.Flags,
	}
	v6 := r.Family == rtnl.AF_INET6
	if v6 {
		m.Scope = rtnl.RT_SCOPE_UNIVERSE
		m.Flags = 0
	}
	m.SetTable(r.Table)
	if r.Dst.Bits() > 0 {
		m.Dst = r.Dst.Addr()
		m.Set(rtnl.RTA_DST)
	}
	if v6 && r.Src.IsValid() && r.Src.Bits() > 0 {
		m.Src = r.Src.Addr()
		m.Set(rtnl.RTA_SRC)
	}
	if r.Priority != 0 || v6 {
		m.Priority = r.Priority
		m.Set(rtnl.RTA_PRIORITY)
	}
	if n := r.Metrics.Len(); n > 0 {
		for i := 0; i < n; i++ {
			t, v := r.Metrics.At(i)
			if int(t) == rtnl.RTAX_CC_ALGO {
				m.Metrics.Set |= 1 << rtnl.RTAX_CC_ALGO
				m.Metrics.CCAlgo = fib.CCAlgoName(v)
				continue
			}
			m.Metrics.Put(int(t), v)
		}
		m.Set(rtnl.RTA_METRICS)
	}
	if r.Prefsrc.IsValid() {
		m.PrefSrc = r.Prefsrc
		m.Set(rtnl.RTA_PREFSRC)
	}
	if r.NhID != 0 {
		m.NHID = r.NhID
		m.Set(rtnl.RTA_NH_ID)
	}
	switch len(r.Nexthops) {
	case 0:
	case 1:
		h := &r.Nexthops[0]
		if v6 {
			m.Flags |= uint32(h.Flags & hopFlagsMask)
		} else {
			m.Flags = uint32(h.Flags & hopFlagsMask)
		}
		switch {
		case h.Gateway.IsValid() && h.Gateway.Is4() == (r.Family == rtnl.AF_INET):
			m.Gateway = h.Gateway
			m.Set(rtnl.RTA_GATEWAY)
		case h.Gateway.IsValid():
			m.ViaFamily, m.ViaAddr = rtnl.AF_INET6, h.Gateway
			m.Set(rtnl.RTA_VIA)
		}
		if h.Dev != 0 {
			m.OIF = uint32(h.Dev)
			m.Set(rtnl.RTA_OIF)
		}
		if h.Realm != 0 {
			m.Flow = h.Realm
			m.Set(rtnl.RTA_FLOW)
		}
		if !h.Encap.IsZero() {
			// lwtunnel_fill_encap(): RTA_ENCAP (no NLA_F_NESTED), then
			// RTA_ENCAP_TYPE.
			m.EncapType, m.Encap = h.Encap.Type(), h.Encap.Attrs()
			m.Set(rtnl.RTA_ENCAP)
			m.Set(rtnl.RTA_ENCAP_TYPE)
		}
	default:
		for i := range r.Nexthops {
			h := &r.Nexthops[i]
			nh := rtnl.Nexthop{Flags: h.Flags & hopFlagsMask, Hops: uint8(max(h.Weight, 1) - 1), IfIndex: h.Dev}
			switch {
			case h.Gateway.IsValid() && h.Gateway.Is4() == (r.Family == rtnl.AF_INET):
				nh.Gateway = h.Gateway
				nh.Set(rtnl.RTA_GATEWAY)
			case h.Gateway.IsValid():
				nh.ViaFamily, nh.ViaAddr = rtnl.AF_INET6, h.Gateway
				nh.Set(rtnl.RTA_VIA)
			}
			if h.Realm != 0 {
				nh.Flow = h.Realm
				nh.Set(rtnl.RTA_FLOW)
			}
			if !h.Encap.IsZero() {
				nh.EncapType, nh.Encap = h.Encap.Type(), h.Encap.Attrs()
				nh.Set(rtnl.RTA_ENCAP)
				nh.Set(rtnl.RTA_ENCAP_TYPE)
			}
			m.Multipath = append(m.Multipath, nh)
		}
		m.Set(rtnl.RTA_MULTIPATH)
	}
	if v6 {
		if r.Expires != 0 {
			// rt6_fill_node(): rt->expires - jiffies, negative once
			// past (nlemu has no fib6_gc() to remove it).
			m.CacheInfo.Expires = int32(int64(r.Expires) - int64(routeClock()))
		}
		m.Set(rtnl.RTA_CACHEINFO)
		m.Pref = r.Pref
		m.Set(rtnl.RTA_PREF)
	}
}

// routeDevices is the namespace's devices as fib.DeviceView.
type routeDevices struct{ ns *Namespace }

// Device returns the state of device idx.
func (d routeDevices) Device(idx int32) (fib.Device, bool) {
	if idx == 0 {
		return fib.Device{}, false
	}
	l, ok := d.ns.devs.ByIndex(idx)
	if !ok {
		return fib.Device{}, false
	}
	return fib.Device{
		Index: l.Index, Up: l.Flags&netdev.IFF_UP != 0, Carrier: l.Carrier,
		Loopback: l.Flags&netdev.IFF_LOOPBACK != 0,
	}, true
}

// HasAddr6 is ipv6_chk_addr_and_flags() over the address store.
func (d routeDevices) HasAddr6(a netip.Addr, dev int32, anyDev, noTentative bool) bool {
	for _, x := range d.ns.addrSet().Family(rtnl.AF_INET6) {
		if x.Local != a {
			continue
		}
		if noTentative && x.Flags&netdev.IFA_F_TENTATIVE != 0 {
			continue
		}
		linkScope := x.Scope == rtnl.RT_SCOPE_LINK || x.Scope == rtnl.RT_SCOPE_HOST
		if anyDev || x.Index == dev || !linkScope {
			return true
		}
	}
	return false
}

// dumpRoutesRow is the route dumpit of family's row: the dispatcher calls
// it for a request of that family, rtnl_dump_all() for each family in
// turn.
func dumpRoutesRow(family uint8) dumpitFunc {
	return func(ns *Namespace, req *Request) (Dumper, *rtnl.Error) {
		return ns.dumpRoutes(req, family), nil
	}
}

// dumpRoutes is inet_dump_fib() / inet6_dump_fib() for family: the request
// checks (ip_valid_fib_dump_req()), the device and table filters, then the
// tables of one snapshot in dump order.
func (ns *Namespace) dumpRoutes(req *Request, family uint8) Dumper {
	m := req.Msg
	// ip_valid_fib_dump_req() looks the RTA_OIF device up as it meets the
	// attribute (ENODEV, in attribute order with the other checks), before
	// any answer flag is set: the failed dump's NLMSG_DONE carries
	// NLM_F_MULTI alone.
	f, err := rtnl.DecodeRouteDumpDev(m, req.Strict, ns.hasDevice)
	if err != nil {
		return errDump{err}
	}
	d := &routeDump{seq: m.Header.Sequence, pid: req.PortID, f: f}
	if f.Filtered {
		d.answer = rtnl.NLM_F_DUMP_FILTERED
	}
	if req.Strict {
		// Every message of a strict dump is filtered: it returns routes
		// or exceptions, never both (fib_dump_info()'s NLM_F_DUMP_FILTERED
		// from cb->answer_flags... set per message by filter->dump_routes).
		d.msgFlags = rtnl.NLM_F_DUMP_FILTERED
	}
	// Exceptions (cached routes) do not exist in nlemu; an RTM_F_PREFIX
	// legacy dump asks for RA prefix routes (IPv6) or nothing (IPv4).
	if !f.Routes || f.Flags&rtnl.RTM_F_PREFIX != 0 {
		return d
	}
	snap := ns.routeTables(family).Snapshot()
	if f.Table != 0 {
		v, ok := snap.Table(f.Table)
		if !ok {
			if rtnl.RouteFamily(m) == family {
				prefix := "ipv4: "
				if family == rtnl.AF_INET6 {
					prefix = "ipv6: "
				}
				d.err = rtnl.Errorf(syscall.ENOENT, prefix+"FIB table does not exist")
			}
			return d
		}
		d.views = []fib.View{v}
		return d
	}
	for v := range snap.Tables() {
		d.views = append(d.views, v)
	}
	return d
}

// routeDump walks a snapshot's tables, resuming each datagram at the key of
// the first route it could not send (cb->args of fib_table_dump()).
type routeDump struct {
	views    []fib.View
	ti       int        // the table being dumped
	cur      fib.Cursor // first route not sent yet in views[ti]
	f        rtnl.RouteDump
	seq, pid uint32
	msgFlags uint16
	answer   uint16
	err      *rtnl.Error
}

func (d *routeDump) Err() *rtnl.Error { return d.err }

// AnswerFlags is cb->answer_flags for the NLMSG_DONE.
func (d *routeDump) AnswerFlags() uint16 { return d.answer }

func (d *routeDump) match(r *fib.Route) bool {
	f := &d.f
	if f.Protocol != 0 && r.Protocol != f.Protocol {
		return false
	}
	if f.Type != 0 && r.Type != f.Type {
		return false
	}
	if f.OIF != 0 {
		for i := range r.Nexthops {
			if r.Nexthops[i].Dev == int32(f.OIF) {
				return true
			}
		}
		return false
	}
	return true
}

func (d *routeDump) Fill(dst []byte, limit int) ([]byte, bool) {
	if d.err != nil && d.err.Errno != 0 {
		return dst, true
	}
	for ; d.ti < len(d.views); d.ti++ {
		full := false
		for c, r := range d.views[d.ti].Walk(d.cur) {
			if !d.match(&r) {
				continue
			}
			n := len(dst)
			dst = AppendRoute(dst, rtnl.RTM_NEWROUTE, rtnl.NLM_F_MULTI|d.msgFlags, d.seq, d.pid, &r)
			if len(dst) > limit && n > 0 {
				dst, full = dst[:n], true
				d.cur = c
				break
			}
		}
		if full {
			return dst, false
		}
		d.cur = fib.Cursor{}
	}
	return dst, true
}

// IPv6Tables returns the IPv6 table registry (for tests and stats).
func (ns *Namespace) IPv6Tables() *fib.Tables { return ns.v6 }
