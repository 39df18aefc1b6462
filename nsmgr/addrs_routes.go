package nsmgr

// The routes the kernel derives from addresses and link state, applied to
// the namespace's fib.Tables: fib_magic() (IPv4 fib_add_ifaddr() /
// fib_del_ifaddr()), fib_disable_ip() / fib_sync_down_dev() / fib_flush(),
// addrconf_prefix_route(), the IPv6 local routes of __ipv6_ifa_notify(),
// addrconf_add_mroute() and rt6_sync_down_dev(). Called under RTNL.

import (
	"net/netip"

	"github.com/nlemu/nlemu/fib"
	"github.com/nlemu/nlemu/netdev"
	"github.com/nlemu/nlemu/rtnl"
)

// ip6RtPrioAddrconf is IP6_RT_PRIO_ADDRCONF, the metric of addrconf's
// routes when the address has none.
const ip6RtPrioAddrconf = 256

// hopFlags are the flags fib_create_info() / fib6_nh_init() give a new
// hop: RTNH_F_LINKDOWN on a device without carrier, except for scope-host
// (IPv4) and local (IPv6) routes.
func hopFlags(l netdev.Link, host bool) uint8 {
	if !host && !(l.Flags&netdev.IFF_UP != 0 && l.Carrier) {
		return rtnl.RTNH_F_LINKDOWN
	}
	return 0
}

// magicRoute4 is the route fib_magic() builds: protocol kernel, prefsrc
// the primary address, the device as the only hop; type unicast in main,
// every other type in local, scope host for local routes, link otherwise.
func magicRoute4(typ uint8, dst netip.Addr, plen int, prim netdev.Addr, prio uint32, l netdev.Link) fib.Route {
	r := fib.Route{
		Family: rtnl.AF_INET, Table: rtnl.RT_TABLE_LOCAL, Dst: netip.PrefixFrom(dst, plen).Masked(),
		Type: typ, Scope: rtnl.RT_SCOPE_LINK, Protocol: rtnl.RTPROT_KERNEL, Priority: prio,
		Prefsrc: prim.Local,
	}
	if typ == rtnl.RTN_UNICAST {
		r.Table = rtnl.RT_TABLE_MAIN
	}
	if typ == rtnl.RTN_LOCAL {
		r.Scope = rtnl.RT_SCOPE_HOST
	}
	r.Nexthops = []fib.Nexthop{{Dev: l.Index, Weight: 1, Flags: hopFlags(l, r.Scope == rtnl.RT_SCOPE_HOST)}}
	return r
}

// magicAdd is fib_magic(RTM_NEWROUTE): NLM_F_CREATE|NLM_F_APPEND; a route
// already there (EEXIST) is left alone without a message.
func (ns *Namespace) magicAdd(r fib.Route) {
	if r.Family == rtnl.AF_INET && r.Prefsrc.IsValid() &&
		!(r.Type == rtnl.RTN_LOCAL && r.Dst.Addr() == r.Prefsrc && !r.Dst.Addr().IsUnspecified()) &&
		!ns.localRoute4(r.Prefsrc) {
		// fib_create_info() -> fib_valid_prefsrc(): a prefsrc other than
		// the local route's own address needs a local route in table
		// local; after `ip route flush table local` a secondary address
		// (prefsrc: its primary) gets no routes at all (EINVAL, ignored).
		return
	}
	ch, err := ns.tables(r.Family).Insert(r, rtnl.NLM_F_CREATE|rtnl.NLM_F_APPEND)
	if err != nil {
		return
	}
	ns.NotifyRouteEvents(ch)
}

// magicDel is fib_magic(RTM_DELROUTE): the route of that type, prefix,
// scope, prefsrc and device, any priority; a missing one is ignored.
func (ns *Namespace) magicDel(r fib.Route) {
	m := fib.Match{
		Family: r.Family, Table: r.Table, Dst: r.Dst, Type: r.Type, Scope: r.Scope,
		Protocol: r.Protocol, Prefsrc: r.Prefsrc,
	}
	if len(r.Nexthops) > 0 {
		m.Oif = r.Nexthops[0].Dev
	}
	if r.Family == rtnl.AF_INET6 {
		m.Scope, m.Prefsrc = 0, netip.Addr{}
		m.Priority = r.Priority
	}
	if !ns.tables(r.Family).Exists(m.Table) {
		return
	}
	ch, err := ns.tables(r.Family).Delete(m)
	if err != nil {
		return
	}
	ns.NotifyRouteEvents(ch)
}

func (ns *Namespace) tables(family uint8) *fib.Tables {
	if family == rtnl.AF_INET6 {
		return ns.v6
	}
	return ns.v4
}

// primaryOf is inet_ifa_byprefix(): the first address of the list with
// a's mask whose subnet holds a's address.
func primaryOf(a netdev.Addr, list []netdev.Addr) (netdev.Addr, bool) {
	for _, b := range list {
		if b.PrefixLen == a.PrefixLen && b.Matches4(a.Address) {
			return b, true
		}
	}
	return netdev.Addr{}, false
}

// fibAddIfaddr is fib_add_ifaddr(): the local route always; with the
// device up the explicit broadcast, and for a primary the prefix route
// (unless noprefixroute; type local on a loopback device) and the
// subnet broadcast below /31.
func (ns *Namespace) fibAddIfaddr(a netdev.Addr, list []netdev.Addr, l netdev.Link) {
	prim := a
	mask := netdev.Mask4(a.PrefixLen)
	prefix := netdev.U32(a.Address) & mask
	secondary := a.Flags&netdev.IFA_F_SECONDARY != 0
	if secondary {
		p, ok := primaryOf(a, list)
		if !ok {
			return // "bug: prim == NULL"
		}
		prim = p
	}
	ns.magicAdd(magicRoute4(rtnl.RTN_LOCAL, a.Local, 32, prim, 0, l))
	if l.Flags&netdev.IFF_UP == 0 {
		return
	}
	if brd := netdev.U32(a.Broadcast); brd != 0 && brd != 0xffffffff {
		ns.magicAdd(magicRoute4(rtnl.RTN_BROADCAST, a.Broadcast, 32, prim, 0, l))
	}
	if prefix != 0 && !secondary && (prefix != netdev.U32(a.Local) || a.PrefixLen < 32) {
		if a.Flags&netdev.IFA_F_NOPREFIXROUTE == 0 {
			typ := uint8(rtnl.RTN_UNICAST)
			if l.Flags&netdev.IFF_LOOPBACK != 0 {
				typ = rtnl.RTN_LOCAL
			}
			ns.magicAdd(magicRoute4(typ, netdev.FromU32(prefix), int(a.PrefixLen), prim, a.RtPriority, l))
		}
		if a.PrefixLen < 31 {
			ns.magicAdd(magicRoute4(rtnl.RTN_BROADCAST, netdev.FromU32(prefix|^mask), 32, prim, 0, l))
		}
	}
}

// fibDelIfaddr is fib_del_ifaddr(ifa, NULL) for an address already
// unlinked (list is what is left on the device): it removes the routes the
// address made unless another address of the device still needs them, and
// when the local address is gone from the local table flushes the main
// table's routes that used it as prefsrc (fib_sync_down_addr()).
func (ns *Namespace) fibDelIfaddr(a netdev.Addr, list []netdev.Addr, l netdev.Link) {
	const (
		localOK = 1 << iota
		brdOK
		brd0OK
		brd1OK
	)
	prim := a
	mask := netdev.Mask4(a.PrefixLen)
	brd := netdev.U32(a.Address) | ^mask
	anyNet := netdev.U32(a.Address) & mask
	subnet := false
	if a.Flags&netdev.IFA_F_SECONDARY != 0 {
		p, ok := primaryOf(a, list)
		if !ok {
			return
		}
		prim = p
	} else if anyNet != 0 && (anyNet != netdev.U32(a.Local) || a.PrefixLen < 32) {
		if a.Flags&netdev.IFA_F_NOPREFIXROUTE == 0 {
			typ := uint8(rtnl.RTN_UNICAST)
			if l.Flags&netdev.IFF_LOOPBACK != 0 {
				typ = rtnl.RTN_LOCAL
			}
			ns.magicDel(magicRoute4(typ, netdev.FromU32(anyNet), int(a.PrefixLen), prim, 0, l))
		}
		subnet = true
	}
	ok := 0
	samePrefsrc := false
	var prim1 *netdev.Addr
	ifaBrd := netdev.U32(a.Broadcast)
	for i := range list {
		b := &list[i]
		if b.Flags&netdev.IFA_F_SECONDARY != 0 {
			if b.PrefixLen == prim.PrefixLen && prim.Matches4(b.Address) {
				prim1 = &prim
			} else {
				if !samePrefsrc {
					continue
				}
				if prim1 == nil || b.PrefixLen != prim1.PrefixLen || !prim1.Matches4(b.Address) {
					p, found := primaryOf(*b, list)
					if !found {
						continue
					}
					prim1 = &p
				}
				if prim1.Local != prim.Local {
					continue
				}
			}
		} else {
			if prim.Local != b.Local {
				continue
			}
			prim1 = b
			if prim != *b {
				samePrefsrc = true
			}
		}
		bb := netdev.U32(b.Broadcast)
		if a.Local == b.Local {
			ok |= localOK
		}
		if ifaBrd == bb {
			ok |= brdOK
		}
		if brd == bb {
			ok |= brd1OK
		}
		if anyNet == bb {
			ok |= brd0OK
		}
		if prim1 == b && b.PrefixLen < 31 {
			m1 := netdev.Mask4(b.PrefixLen)
			brd1 := netdev.U32(b.Address) | ^m1
			any1 := netdev.U32(b.Address) & m1
			if any1 != 0 {
				if ifaBrd == brd1 || ifaBrd == any1 {
					ok |= brdOK
				}
				if brd == brd1 || brd == any1 {
					ok |= brd1OK
				}
				if anyNet == brd1 || anyNet == any1 {
					ok |= brd0OK
				}
			}
		}
	}
	if ok&brdOK == 0 && ifaBrd != 0 {
		ns.magicDel(magicRoute4(rtnl.RTN_BROADCAST, a.Broadcast, 32, prim, 0, l))
	}
	if subnet && a.PrefixLen < 31 {
		if ok&brd1OK == 0 {
			ns.magicDel(magicRoute4(rtnl.RTN_BROADCAST, netdev.FromU32(brd), 32, prim, 0, l))
		}
		if ok&brd0OK == 0 {
			ns.magicDel(magicRoute4(rtnl.RTN_BROADCAST, netdev.FromU32(anyNet), 32, prim, 0, l))
		}
	}
	if ok&localOK == 0 {
		ns.magicDel(magicRoute4(rtnl.RTN_LOCAL, a.Local, 32, prim, 0, l))
		// "Check, that this local address finally disappeared."
		if !ns.localRoute4(a.Local) {
			ns.flushPrefsrc4(a.Local)
		}
	}
}

// fibDelIfaddrDead is fib_del_ifaddr() on a dead in_device (the device is
// going away): no promotion scan, so the broadcast and local routes of the
// address go (most went already with fib_disable_ip() at NETDEV_DOWN); a
// secondary, whose primary is gone, is skipped.
func (ns *Namespace) fibDelIfaddrDead(a netdev.Addr, l netdev.Link) {
	if a.Flags&netdev.IFA_F_SECONDARY != 0 {
		return
	}
	mask := netdev.Mask4(a.PrefixLen)
	anyNet := netdev.U32(a.Address) & mask
	subnet := false
	if anyNet != 0 && (anyNet != netdev.U32(a.Local) || a.PrefixLen < 32) {
		if a.Flags&netdev.IFA_F_NOPREFIXROUTE == 0 {
			typ := uint8(rtnl.RTN_UNICAST)
			if l.Flags&netdev.IFF_LOOPBACK != 0 {
				typ = rtnl.RTN_LOCAL
			}
			ns.magicDel(magicRoute4(typ, netdev.FromU32(anyNet), int(a.PrefixLen), a, 0, l))
		}
		subnet = true
	}
	if netdev.U32(a.Broadcast) != 0 {
		ns.magicDel(magicRoute4(rtnl.RTN_BROADCAST, a.Broadcast, 32, a, 0, l))
	}
	if subnet && a.PrefixLen < 31 {
		ns.magicDel(magicRoute4(rtnl.RTN_BROADCAST, netdev.FromU32(anyNet|^mask), 32, a, 0, l))
		ns.magicDel(magicRoute4(rtnl.RTN_BROADCAST, netdev.FromU32(anyNet), 32, a, 0, l))
	}
	ns.magicDel(magicRoute4(rtnl.RTN_LOCAL, a.Local, 32, a, 0, l))
}

// localRoute4 is inet_addr_type_dev_table() == RTN_LOCAL: the local table's
// longest match for addr is a local route.
func (ns *Namespace) localRoute4(addr netip.Addr) bool {
	v, ok := ns.v4.Snapshot().Table(rtnl.RT_TABLE_LOCAL)
	if !ok {
		return false
	}
	e, ok := v.Lookup(addr)
	return ok && e.Len() > 0 && e.At(0).Type == rtnl.RTN_LOCAL
}

// localRouteDev4 is __ip_dev_find()'s fallback for an address no device
// holds: the device of table local's longest match for addr when that is
// a local route ("so that communication over loopback subnets work"), 0
// otherwise.
func (ns *Namespace) localRouteDev4(addr netip.Addr) int32 {
	v, ok := ns.v4.Snapshot().Table(rtnl.RT_TABLE_LOCAL)
	if !ok {
		return 0
	}
	e, ok := v.Lookup(addr)
	if !ok || e.Len() == 0 || e.At(0).Type != rtnl.RTN_LOCAL || len(e.At(0).Nexthops) == 0 {
		return 0
	}
	return e.At(0).Nexthops[0].Dev
}

// flushPrefsrc4 is fib_sync_down_addr() and fib_flush(): the main table's
// routes with prefsrc addr are removed. Unlike the routes a device going
// down takes, these are announced: Linux 6.18 prints "Deleted 10.211.0.0/16
// dev v0 scope link src 10.50.0.2" in `ip monitor route` (fib_table_flush()
// notifies a route whose prefsrc was removed, fi->pfsrc_removed).
func (ns *Namespace) flushPrefsrc4(addr netip.Addr) {
	ns.NotifyRouteEvents(ns.v4.RemoveIf(func(r *fib.Route) bool {
		return r.Table == rtnl.RT_TABLE_MAIN && r.Prefsrc == addr
	}, true))
}

// flushDevRoutes4 is fib_disable_ip(): fib_sync_down_dev() then
// fib_flush(). Without force the scope-host routes (whose hops have scope
// nowhere) survive; with force (the device lost its last address, or is
// going away) every route through the device goes. The kernel sends no
// RTM_DELROUTE for them.
func (ns *Namespace) flushDevRoutes4(dev int32, force bool) {
	ev := fib.DevDown
	if force {
		ev = fib.DevUnregister
	}
	ns.v4.SyncDownDev(dev, ev)
}

// flushDevRoutes6 is rt6_disable_ip() → rt6_sync_down_dev(NETDEV_DOWN):
// every IPv6 route through the device, each with its RTM_DELROUTE.
func (ns *Namespace) flushDevRoutes6(dev int32, unregister bool) {
	ev := fib.DevDown
	if unregister {
		ev = fib.DevUnregister
	}
	ns.NotifyRouteEvents(ns.v6.SyncDownDev(dev, ev))
}

// setLinkdown is fib_sync_down_dev(NETDEV_CHANGE) / fib_sync_up() and
// rt6_sync_down_dev(NETDEV_CHANGE) / rt6_sync_up(): the hops through dev
// gain or lose RTNH_F_LINKDOWN, without a message.
func (ns *Namespace) setLinkdown(dev int32, down bool) {
	if down {
		ns.v4.SyncDownDev(dev, fib.DevCarrierDown)
		ns.v6.SyncDownDev(dev, fib.DevCarrierDown)
		return
	}
	ns.v4.SyncUpDev(dev, rtnl.RTNH_F_LINKDOWN)
	ns.v6.SyncUpDev(dev, rtnl.RTNH_F_LINKDOWN)
}

// exactMatch is the Match that selects exactly r.
func exactMatch(r fib.Route) fib.Match {
	m := fib.Match{
		Family: r.Family, Table: r.Table, Dst: r.Dst, Src: r.Src, Tos: r.Tos, Type: r.Type,
		Scope: r.Scope, Protocol: r.Protocol, Priority: r.Priority, Prefsrc: r.Prefsrc, NhID: r.NhID,
	}
	if len(r.Nexthops) == 1 {
		m.Oif, m.Gateway = r.Nexthops[0].Dev, r.Nexthops[0].Gateway
	}
	return m
}

// modifyPrefixMetric4 is fib_modify_prefix_metric(): the prefix route of
// a primary address moves to the new metric (a new route, then the old
// one's removal, as the kernel's fib_magic() pair does).
func (ns *Namespace) modifyPrefixMetric4(old, n netdev.Addr, l netdev.Link) {
	mask := netdev.Mask4(n.PrefixLen)
	prefix := netdev.U32(n.Address) & mask
	if n.Flags&netdev.IFA_F_SECONDARY != 0 || l.Flags&netdev.IFF_UP == 0 || prefix == 0 ||
		(prefix == netdev.U32(n.Local) && n.PrefixLen == 32) || n.Flags&netdev.IFA_F_NOPREFIXROUTE != 0 {
		return
	}
	typ := uint8(rtnl.RTN_UNICAST)
	if l.Flags&netdev.IFF_LOOPBACK != 0 {
		typ = rtnl.RTN_LOCAL
	}
	ns.magicAdd(magicRoute4(typ, netdev.FromU32(prefix), int(n.PrefixLen), n, n.RtPriority, l))
	r := magicRoute4(typ, netdev.FromU32(prefix), int(n.PrefixLen), old, old.RtPriority, l)
	m := exactMatch(r)
	if ch, err := ns.v4.Delete(m); err == nil {
		ns.NotifyRouteEvents(ch)
	}
}

// route6 is a route addrconf installs: protocol kernel, the device as the
// only hop.
func route6(table uint32, typ uint8, dst netip.Prefix, metric uint32, l netdev.Link, local bool) fib.Route {
	return fib.Route{
		Family: rtnl.AF_INET6, Table: table, Dst: dst.Masked(), Type: typ, Protocol: rtnl.RTPROT_KERNEL,
		Priority: metric, Nexthops: []fib.Nexthop{{Dev: l.Index, Weight: 1, Flags: hopFlags(l, local)}},
	}
}

// addrconfPrefixRoute is addrconf_prefix_route(): the address's prefix in
// main with its metric (256 by default). ip6_route_add() refuses a device
// that is down (ENETDOWN), which addrconf ignores.
func (ns *Namespace) addrconfPrefixRoute(a netdev.Addr, l netdev.Link) {
	if l.Flags&netdev.IFF_UP == 0 {
		return
	}
	metric := a.RtPriority
	if metric == 0 {
		metric = ip6RtPrioAddrconf
	}
	r := route6(rtnl.RT_TABLE_MAIN, rtnl.RTN_UNICAST, netip.PrefixFrom(a.Local, int(a.PrefixLen)), metric, l, false)
	if a.Valid != netdev.InfinityLife && !(l.Flags&netdev.IFF_LOOPBACK != 0 && !a.Local.IsLoopback()) {
		// inet6_addr_add(): a finite valid lifetime expires the route
		// with the address (RTF_EXPIRES; stored as a deadline). Not on
		// lo: ip6_route_info_create() promotes a route through lo to
		// reject (fib6_is_reject()), which drops RTF_EXPIRES.
		r.Expires = routeClock() + a.Valid*100
	}
	ch, err := ns.v6.Insert(r, rtnl.NLM_F_CREATE)
	if err == nil {
		ns.NotifyRouteEvents(ch)
		ns.gc6Added(r)
	}
}

// prefixRoute6 is addrconf_get_prefix_route(pfx, plen, dev, 0,
// RTF_DEFAULT, true): the first route of exactly the address's prefix in
// main (not source-specific, not a nexthop object's) through the device
// without a gateway, whatever its metric and protocol. nlemu has no
// RTF_DEFAULT routes (no router advertisements) and skips ECMP sets.
func (ns *Namespace) prefixRoute6(a netdev.Addr, l netdev.Link) (fib.Route, bool) {
	v, ok := ns.v6.Snapshot().Table(rtnl.RT_TABLE_MAIN)
	if !ok {
		return fib.Route{}, false
	}
	e, ok := v.Get(netip.PrefixFrom(a.Local, int(a.PrefixLen)).Masked())
	if !ok {
		return fib.Route{}, false
	}
	for r := range e.All() {
		if r.Src.Bits() > 0 || r.NhID != 0 || len(r.Nexthops) != 1 {
			continue
		}
		if h := r.Nexthops[0]; h.Dev == l.Index && !h.Gateway.IsValid() {
			return r, true
		}
	}
	return fib.Route{}, false
}

// delPrefixRoute6 is cleanup_prefix_route(): the route prefixRoute6 finds
// goes, which need not be the address's own: a route of the prefix through
// the device added by hand with a lower metric is found first and deleted
// instead (TestQuirkDelAddr6DeletesFirstPrefixRouteOfDevice).
func (ns *Namespace) delPrefixRoute6(a netdev.Addr, l netdev.Link) {
	r, ok := ns.prefixRoute6(a, l)
	if !ok {
		return
	}
	m := fib.Match{Family: rtnl.AF_INET6, Table: rtnl.RT_TABLE_MAIN, Dst: r.Dst, Protocol: r.Protocol,
		Priority: r.Priority, Oif: l.Index}
	ch, err := ns.v6.Delete(m)
	if err == nil {
		ns.NotifyRouteEvents(ch)
	}
}

// addLocalRoute6 is the local route __ipv6_ifa_notify(RTM_NEWADDR) inserts
// (addrconf_f6i_alloc(): table local, metric 0, even on a device that is
// down).
func (ns *Namespace) addLocalRoute6(a netdev.Addr) {
	l := netdev.Link{Index: a.Index, Flags: netdev.IFF_UP, Carrier: true}
	r := route6(rtnl.RT_TABLE_LOCAL, rtnl.RTN_LOCAL, netip.PrefixFrom(a.Local, 128), 0, l, true)
	ch, err := ns.v6.Insert(r, rtnl.NLM_F_CREATE)
	if err == nil {
		ns.NotifyRouteEvents(ch)
	}
}

// delLocalRoute6 is the local route's removal in __ipv6_ifa_notify(
// RTM_DELADDR).
func (ns *Namespace) delLocalRoute6(a netdev.Addr) {
	l := netdev.Link{Index: a.Index, Flags: netdev.IFF_UP, Carrier: true}
	ns.magicDel(route6(rtnl.RT_TABLE_LOCAL, rtnl.RTN_LOCAL, netip.PrefixFrom(a.Local, 128), 0, l, true))
}

// addMulticastRoute6 is addrconf_add_mroute(): ff00::/8 in local, metric
// 256, type multicast.
func (ns *Namespace) addMulticastRoute6(l netdev.Link) {
	r := route6(rtnl.RT_TABLE_LOCAL, rtnl.RTN_MULTICAST, netip.MustParsePrefix("ff00::/8"), ip6RtPrioAddrconf, l, false)
	ch, err := ns.v6.Insert(r, rtnl.NLM_F_CREATE)
	if err == nil {
		ns.NotifyRouteEvents(ch)
	}
}

// addPeerRoute6 is __ipv6_ifa_notify(RTM_NEWADDR)'s route to the peer of a
// point-to-point address: addrconf_prefix_route(peer, 128) with the
// address's metric.
func (ns *Namespace) addPeerRoute6(a netdev.Addr) {
	l, ok := ns.devs.ByIndex(a.Index)
	if !ok {
		return
	}
	p := a
	p.Local, p.PrefixLen = a.Address, 128
	ns.addrconfPrefixRoute(p, l)
}

// delPeerRoute6 removes the route addPeerRoute6 made.
func (ns *Namespace) delPeerRoute6(a netdev.Addr) {
	l, ok := ns.devs.ByIndex(a.Index)
	if !ok {
		return
	}
	p := a
	p.Local, p.PrefixLen = a.Address, 128
	ns.delPrefixRoute6(p, l)
}
