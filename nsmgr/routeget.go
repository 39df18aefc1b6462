package nsmgr

// RTM_GETROUTE without NLM_F_DUMP: `ip route get`. The handler decodes the
// request (rtnl.DecodeRouteGet: inet_rtm_valid_getroute_req() and its IPv6
// twin), builds the flow key, runs the one lookup function (fib.FIB.Lookup,
// the rule walk over the tables) on the output or the input path the kernel
// would take, and answers with one RTM_NEWROUTE in the layout of
// rt_fill_info() / fib_dump_info() (IPv4) or rt6_fill_node() (IPv6).

import (
	"net/netip"
	"syscall"

	"github.com/nlemu/nlemu/fib"
	"github.com/nlemu/nlemu/flow"
	"github.com/nlemu/nlemu/netdev"
	"github.com/nlemu/nlemu/rtnl"
)

// RTCF_* route cache flags, reported in the upper half of rtm_flags of an
// IPv4 route-get reply (include/uapi/linux/in_route.h).
const (
	rtcfNotify    = 0x00010000
	rtcfBroadcast = 0x10000000
	rtcfMulticast = 0x20000000
	rtcfLocal     = 0x80000000
)

const (
	ipprotoICMP   = 1
	ipprotoTCP    = 6
	ipprotoUDP    = 17
	ipprotoICMPv6 = 58
	uidInvalid    = 0xFFFFFFFF
	loIndex       = 1
)

// devGroups is the namespace's devices as the lookup's GroupSource
// (suppress_ifgroup): the group of the device in the current snapshot.
type devGroups struct{ d *netdev.Devices }

func (g devGroups) Group(i int32) uint32 {
	if l, ok := g.d.ByIndex(i); ok {
		return l.Group
	}
	return 0
}

// routeGetRows registers the route-get doits: inet_rtm_getroute() and
// inet6_rtm_getroute() are RTNL_FLAG_DOIT_UNLOCKED, so the dispatcher takes
// no lock (lookups never lock).
func routeGetRows() []row {
	return []row{
		{family: rtnl.AF_INET, typ: rtnl.RTM_GETROUTE, doit: (*Namespace).getRoute},
		{family: rtnl.AF_INET6, typ: rtnl.RTM_GETROUTE, doit: (*Namespace).getRoute},
	}
}

// getRoute is inet_rtm_getroute() / inet6_rtm_getroute().
func (ns *Namespace) getRoute(req *Request) *rtnl.Error {
	var q rtnl.RouteMsg
	if err := q.DecodeGet(req.Msg, req.Strict); err != nil {
		return err
	}
	var reply rtnl.RouteMsg
	var err *rtnl.Error
	if q.Family == rtnl.AF_INET6 {
		err = ns.routeGet6(&q, &reply, req.UID)
	} else {
		err = ns.routeGet4(&q, &reply, req.UID)
	}
	if err != nil {
		return withWarning(q.Warning, err)
	}
	if req.Self != nil {
		// Into the requester's lent buffer, else one allocation of the
		// reply's usual size (an IPv6 reply with cacheinfo is 172 bytes)
		// instead of a chain of appends.
		buf := req.Reply[:0]
		if cap(buf) < routeGetReplyLen {
			buf = make([]byte, 0, routeGetReplyLen)
		}
		req.Self.Deliver(rtnl.AppendRoute(buf, rtnl.RTM_NEWROUTE, 0, req.Msg.Header.Sequence, req.PortID, &reply))
	}
	return withWarning(q.Warning, nil)
}

// routeGetReplyLen is the buffer a route-get reply is encoded into when the
// requester lends none.
const routeGetReplyLen = 192

// RouteGet answers one route-get request in q (decoded) into reply, the way
// the handler does for a requester of uid 0; benchmarks and tests call it
// without the wire.
func (ns *Namespace) RouteGet(q *rtnl.RouteMsg, reply *rtnl.RouteMsg) *rtnl.Error {
	*reply = rtnl.RouteMsg{} // the fill functions set only what they put
	if q.Family == rtnl.AF_INET6 {
		return ns.routeGet6(q, reply, 0)
	}
	return ns.routeGet4(q, reply, 0)
}

// parseIPProto is rtm_getroute_parse_ip_proto().
func parseIPProto(p uint8, v6 bool) *rtnl.Error {
	switch p {
	case ipprotoTCP, ipprotoUDP:
		return nil
	case ipprotoICMP:
		if !v6 {
			return nil
		}
	case ipprotoICMPv6:
		if v6 {
			return nil
		}
	}
	return rtnl.Errorf(syscall.EOPNOTSUPP, "Unsupported ip proto")
}

// requestKey fills k, zero, with the flow key common to both families'
// getroute (through a pointer: returning the 96-byte key cost a copy).
func requestKey(k *flow.Key, q *rtnl.RouteMsg, uid uint32) {
	k.Mark, k.TOS = q.Mark, q.Tos&^3
	if q.Has(rtnl.RTA_DST) {
		k.Dst = q.Dst
	}
	if q.Has(rtnl.RTA_SRC) {
		k.Src = q.Src
	}
	// inet_rtm_getroute(): RTA_UID, else INVALID_UID on the input path and
	// the caller's uid on the output path.
	switch {
	case q.Has(rtnl.RTA_UID):
		k.UID = q.UID
	case q.Has(rtnl.RTA_IIF) && q.IIF != 0:
		k.UID = uidInvalid
	default:
		k.UID = uid
	}
	// inet_rtm_getroute() builds a fake UDP packet unless told otherwise.
	k.Proto = ipprotoUDP
	if q.Has(rtnl.RTA_IP_PROTO) {
		k.Proto = q.IPProto
	}
	k.Sport, k.Dport = q.Sport, q.Dport
}

func (ns *Namespace) link(i int32) (netdev.Link, bool) { return ns.devs.ByIndex(i) }

func isUp(l netdev.Link) bool { return l.Flags&netdev.IFF_UP != 0 }

// inetSelectAddr is inet_select_addr(): the first primary address of dev
// whose scope is within scope, preferring one whose subnet holds dst; if
// the device has none, the first fitting primary of any device in ifindex
// order (lo first).
func (ns *Namespace) inetSelectAddr(dev int32, dst netip.Addr, scope uint8) netip.Addr {
	// One snapshot for both walks, as the kernel's one RCU section.
	set := ns.addrSet()
	var addr netip.Addr
	for _, a := range set.OfDevice(rtnl.AF_INET, dev) {
		if a.Flags&netdev.IFA_F_SECONDARY != 0 || min(a.Scope, rtnl.RT_SCOPE_HOST) > scope {
			continue
		}
		if !dst.IsValid() || dst.IsUnspecified() || a.Matches4(dst) {
			return a.Local
		}
		if !addr.IsValid() {
			addr = a.Local
		}
	}
	if addr.IsValid() {
		return addr
	}
	for _, a := range set.V4 {
		if a.Flags&netdev.IFA_F_SECONDARY == 0 && min(a.Scope, rtnl.RT_SCOPE_HOST) <= scope {
			return a.Local
		}
	}
	return netip.IPv4Unspecified()
}

// isLocal4 reports whether a is an address of the namespace
// (__ip_dev_find()).
func (ns *Namespace) isLocal4(a netip.Addr) bool {
	return ns.devOf4(a) != 0
}

// devOf4 is __ip_dev_find(): the device that has address a, else the
// device of a local route for it in table local (localRouteDev4: `ip route
// get X from 127.0.0.5`, or any source beside `local default dev lo`), 0
// for none.
func (ns *Namespace) devOf4(a netip.Addr) int32 {
	for _, x := range ns.addrSet().V4 {
		if x.Local == a {
			return x.Index
		}
	}
	return ns.localRouteDev4(a)
}

func isLbcast(a netip.Addr) bool { return a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) }

func isZeronet(a netip.Addr) bool { return !a.IsValid() || a.As4()[0] == 0 }

func isLocalMulticast4(a netip.Addr) bool {
	b := a.As4()
	return b[0] == 224 && b[1] == 0 && b[2] == 0
}

// routeGet4 is inet_rtm_getroute() after the request checks.
func (ns *Namespace) routeGet4(q *rtnl.RouteMsg, reply *rtnl.RouteMsg, uid uint32) *rtnl.Error {
	if q.Has(rtnl.RTA_IP_PROTO) {
		if err := parseIPProto(q.IPProto, false); err != nil {
			return err
		}
	}
	var k flow.Key
	requestKey(&k, q, uid)
	if !k.Dst.IsValid() {
		k.Dst = netip.IPv4Unspecified()
	}
	src := k.Src
	if !src.IsValid() {
		k.Src = netip.IPv4Unspecified()
	}
	if q.Has(rtnl.RTA_OIF) {
		k.OIF = int32(q.OIF)
	}
	iif := int32(0)
	if q.Has(rtnl.RTA_IIF) {
		iif = int32(q.IIF)
	}
	var (
		o   out4
		err syscall.Errno
	)
	if iif != 0 {
		if _, ok := ns.link(iif); !ok {
			return rtnl.Errno(syscall.ENODEV)
		}
		k.IIF = iif
		err = ns.input4(&k, &o)
	} else {
		k.IIF = loIndex
		err = ns.output4(&k, &o)
	}
	if err != 0 {
		return rtnl.Errno(err)
	}
	if q.Flags&rtnl.RTM_F_NOTIFY != 0 {
		o.flags |= rtcfNotify
	}
	if q.Flags&rtnl.RTM_F_FIB_MATCH != 0 {
		if !o.hasFIB {
			if e := fib.TypeError(o.typ); e != 0 {
				return rtnl.Errno(e)
			}
			return rtnl.Errno(syscall.EHOSTUNREACH)
		}
		r := o.res.Route()
		fillFIBRoute(reply, &r, o.res.Table)
		return nil
	}
	table := uint32(rtnl.RT_TABLE_MAIN)
	if q.Flags&rtnl.RTM_F_LOOKUP_TABLE != 0 {
		table = 0
		if o.hasFIB {
			table = o.res.Table
		}
	}
	ns.fill4(reply, q, &k, src, iif, table, &o)
	return nil
}

// out4 is what the IPv4 route resolution produced: the rtable of
// ip_route_output_key_hash_rcu() / ip_route_input_slow().
type out4 struct {
	res    fib.Result
	hasFIB bool // res holds a FIB entry (res->fi)
	typ    uint8
	dev    int32
	gw     netip.Addr
	flags  uint32 // RTCF_*
	err    syscall.Errno
}

// output4 is ip_route_output_key_hash_rcu() for a route-get flow.
func (ns *Namespace) output4(k *flow.Key, o *out4) syscall.Errno {
	if !k.Src.IsUnspecified() {
		if k.Src.IsMulticast() || isLbcast(k.Src) || isZeronet(k.Src) {
			return syscall.EINVAL
		}
		// "Special hack": a multicast or limited broadcast destination
		// with no oif leaves through the device that owns the source
		// (ip_route_output_key_hash_rcu()).
		if k.OIF == 0 && (k.Dst.IsMulticast() || isLbcast(k.Dst)) {
			dev := ns.devOf4(k.Src)
			if dev == 0 {
				return syscall.ENETUNREACH
			}
			k.OIF = dev
			o.typ, o.dev = rtnl.RTN_UNICAST, dev
			return ns.mkrouteOutput(k, o)
		}
		if !ns.isLocal4(k.Src) {
			return syscall.ENETUNREACH
		}
	}
	devOut := int32(0)
	if k.OIF != 0 {
		l, ok := ns.link(k.OIF)
		if !ok {
			return syscall.ENODEV
		}
		if !isUp(l) {
			return syscall.ENETUNREACH
		}
		devOut = k.OIF
		if isLocalMulticast4(k.Dst) || isLbcast(k.Dst) || k.Proto == 2 /* IGMP */ {
			if k.Src.IsUnspecified() {
				k.Src = ns.inetSelectAddr(devOut, netip.Addr{}, rtnl.RT_SCOPE_LINK)
			}
			o.typ, o.dev = rtnl.RTN_UNICAST, devOut
			return ns.mkrouteOutput(k, o)
		}
		if k.Src.IsUnspecified() {
			if k.Dst.IsMulticast() {
				k.Src = ns.inetSelectAddr(devOut, netip.Addr{}, k.Scope)
			} else if k.Dst.IsUnspecified() {
				k.Src = ns.inetSelectAddr(devOut, netip.Addr{}, rtnl.RT_SCOPE_HOST)
			}
		}
	}
	if k.Dst.IsUnspecified() {
		k.Dst = k.Src
		if k.Dst.IsUnspecified() {
			k.Dst = netip.AddrFrom4([4]byte{127, 0, 0, 1})
			k.Src = k.Dst
		}
		k.OIF = loIndex
		o.typ, o.dev, o.flags = rtnl.RTN_LOCAL, loIndex, rtcfLocal
		return ns.mkrouteOutput(k, o)
	}
	res, err := ns.fib4.Lookup(*k)
	if err != 0 {
		if k.OIF != 0 {
			// "Apparently, routing tables are wrong. Assume, that the
			// destination is on link."
			if k.Src.IsUnspecified() {
				k.Src = ns.inetSelectAddr(devOut, netip.Addr{}, rtnl.RT_SCOPE_LINK)
			}
			o.typ, o.dev = rtnl.RTN_UNICAST, devOut
			return ns.mkrouteOutput(k, o)
		}
		return err
	}
	o.res, o.hasFIB, o.typ = res, true, res.Entry.Type
	if res.Entry.Type == rtnl.RTN_LOCAL {
		if k.Src.IsUnspecified() {
			if res.Entry.Prefsrc.IsValid() {
				k.Src = res.Entry.Prefsrc
			} else {
				k.Src = k.Dst
			}
		}
		k.OIF = loIndex
		o.dev, o.flags = loIndex, rtcfLocal
		return ns.mkrouteOutput(k, o)
	}
	// fib_select_path()
	if k.OIF == 0 {
		o.res.SelectPath(k)
	}
	nh := o.res.Nexthop()
	if k.Src.IsUnspecified() {
		k.Src = ns.fibResultPrefsrc(&o.res)
	}
	o.dev = nh.Dev
	return ns.mkrouteOutput(k, o)
}

// fibResultPrefsrc is fib_result_prefsrc(): the route's prefsrc, else the
// address inet_select_addr() picks on the nexthop device for the
// nexthop's scope (link for a gateway, host otherwise... as
// fib_info_update_nhc_saddr() is called with the route's scope).
func (ns *Namespace) fibResultPrefsrc(r *fib.Result) netip.Addr {
	if r.Entry.Prefsrc.IsValid() {
		return r.Entry.Prefsrc
	}
	nh := r.Nexthop()
	return ns.inetSelectAddr(nh.Dev, nh.Gateway, r.Entry.Scope)
}

// mkrouteOutput is __mkroute_output(): the route type from the destination
// and the RTCF flags.
func (ns *Namespace) mkrouteOutput(k *flow.Key, o *out4) syscall.Errno {
	if k.Src.IsLoopback() && o.dev != loIndex {
		return syscall.EINVAL
	}
	switch {
	case isLbcast(k.Dst):
		o.typ = rtnl.RTN_BROADCAST
	case k.Dst.IsMulticast():
		o.typ = rtnl.RTN_MULTICAST
	case isZeronet(k.Dst):
		return syscall.EINVAL
	}
	if o.dev == loIndex {
		o.flags |= rtcfLocal
	}
	switch o.typ {
	case rtnl.RTN_BROADCAST:
		o.flags |= rtcfBroadcast | rtcfLocal
	case rtnl.RTN_MULTICAST:
		// ip_check_mc_rcu(): nlemu's devices join no group but
		// 224.0.0.1 while up; a group not joined clears RTCF_LOCAL,
		// lo's included (__mkroute_output()).
		o.flags |= rtcfMulticast
		o.flags &^= rtcfLocal
		if k.Dst == netip.AddrFrom4([4]byte{224, 0, 0, 1}) {
			o.flags |= rtcfLocal
		}
	}
	if o.hasFIB {
		if nh := o.res.Nexthop(); nh.Gateway.IsValid() && o.typ == rtnl.RTN_UNICAST {
			o.gw = nh.Gateway
		}
	}
	return 0
}

// input4 is ip_route_input_slow() for a route-get flow arriving on k.IIF.
func (ns *Namespace) input4(k *flow.Key, o *out4) syscall.Errno {
	saddr, daddr := k.Src, k.Dst
	if daddr.IsMulticast() {
		return ns.inputMC4(k, o)
	}
	if saddr.IsMulticast() || isLbcast(saddr) {
		return syscall.EINVAL
	}
	if isLbcast(daddr) || (saddr.IsUnspecified() && daddr.IsUnspecified()) {
		o.typ, o.dev, o.flags = rtnl.RTN_BROADCAST, loIndex, rtcfBroadcast|rtcfLocal
		return 0
	}
	if isZeronet(saddr) || isZeronet(daddr) {
		return syscall.EINVAL
	}
	// route_localnet is 0: loopback addresses are martians on input.
	if daddr.IsLoopback() || saddr.IsLoopback() {
		return syscall.EINVAL
	}
	k.OIF = 0
	// fib4_rules_early_flow_dissect(): the ports and protocol reach the
	// lookup only when some rule selects on them.
	if !ns.rulesNeedL4(rtnl.AF_INET) {
		k.Proto, k.Sport, k.Dport = 0, 0, 0
	}
	forwarding := ns.forwarding4(k.IIF)
	res, err := ns.fib4.Lookup(*k)
	if err != 0 {
		if !forwarding {
			err = syscall.EHOSTUNREACH
		}
		return err
	}
	o.res, o.hasFIB, o.typ = res, true, res.Entry.Type
	switch res.Entry.Type {
	case rtnl.RTN_BROADCAST:
		o.dev, o.flags = loIndex, rtcfBroadcast|rtcfLocal
		return 0
	case rtnl.RTN_LOCAL:
		if e := ns.validateSource4(k); e != 0 {
			return e
		}
		o.dev, o.flags = loIndex, rtcfLocal
		return 0
	}
	if !forwarding {
		return syscall.EHOSTUNREACH
	}
	if res.Entry.Type != rtnl.RTN_UNICAST {
		return syscall.EINVAL
	}
	o.res.SelectPath(k)
	nh := o.res.Nexthop()
	o.dev = nh.Dev
	if nh.Gateway.IsValid() {
		o.gw = nh.Gateway
	}
	return 0
}

// inputMC4 is ip_route_input_rcu()'s multicast branch: a group the input
// device has joined (ip_check_mc_rcu(); nlemu's devices join 224.0.0.1
// while up and nothing else) is delivered locally (ip_route_input_mc():
// type multicast through lo, no FIB entry); any other group is EINVAL, as
// nlemu does no multicast forwarding.
func (ns *Namespace) inputMC4(k *flow.Key, o *out4) syscall.Errno {
	l, _ := ns.link(k.IIF)
	if k.Dst != netip.AddrFrom4([4]byte{224, 0, 0, 1}) || !isUp(l) {
		return syscall.EINVAL
	}
	saddr := k.Src
	if saddr.IsMulticast() || isLbcast(saddr) || saddr.IsLoopback() {
		return syscall.EINVAL
	}
	if isZeronet(saddr) {
		if !isLocalMulticast4(k.Dst) && k.Proto != 2 /* IGMP */ {
			return syscall.EINVAL
		}
	} else if e := ns.validateSource4(k); e != 0 {
		return e
	}
	o.typ, o.dev, o.flags = rtnl.RTN_MULTICAST, loIndex, rtcfMulticast|rtcfLocal
	return 0
}

// validateSource4 is fib_validate_source() with rp_filter 0 and
// accept_local 0: a local source address is a martian; with custom rules
// the kernel looks the source up instead and wants a unicast answer.
func (ns *Namespace) validateSource4(k *flow.Key) syscall.Errno {
	if !ns.Rules(rtnl.AF_INET).HasCustomRules() {
		if ns.isLocal4(k.Src) {
			return syscall.EINVAL
		}
		return 0
	}
	rk := flow.Key{Dst: k.Src, Src: k.Dst, IIF: k.IIF, Mark: k.Mark, TOS: k.TOS}
	if r, err := ns.fib4.Lookup(rk); err == 0 && r.Entry.Type != rtnl.RTN_UNICAST {
		return syscall.EINVAL
	}
	return 0
}

// forwarding4 is IN_DEV_FORWARD(): the device's IPv4 forwarding devconf.
func (ns *Namespace) forwarding4(dev int32) bool {
	c, ok := ns.devs.Inet4Conf(dev)
	// IPV4_DEVCONF_FORWARDING is the first devconf entry.
	return ok && len(c) > 0 && c[0] != 0
}

// rulesNeedL4 is fib4_rules_early_flow_dissect()'s condition
// (fib_rules_require_fldissect): some rule of the family selects on
// ip_proto or ports and is not bound to lo (fib_rule_requires_fldissect()).
func (ns *Namespace) rulesNeedL4(fam uint8) bool {
	s := ns.Rules(fam).Snapshot()
	for i := 0; i < s.Len(); i++ {
		_, x := s.Rule(i)
		if x.IIFIndex() != loIndex && (x.IPProto != 0 || x.Sport != [2]uint16{} || x.Dport != [2]uint16{}) {
			return true
		}
	}
	return false
}

// clntref4 is the route's reference count that rt_fill_info() reports: 2
// for an output route __mkroute_output() caches in its nexthop (the cache's
// reference and the reply's), 1 for one it does not cache — no FIB entry
// (daddr 0, an oif-forced lookup that found no route, the limited
// broadcast; a subnet broadcast from table local is cached), a
// multicast group the device joined or a short multicast prefix, or a
// local route looked up for another device than the one it leaves by
// (the "particular output interface" case). Input routes keep 2.
func clntref4(o *out4, iif int32) uint32 {
	if iif != 0 {
		return 2
	}
	cache := o.hasFIB
	switch o.typ {
	case rtnl.RTN_MULTICAST:
		if o.flags&rtcfLocal != 0 || (o.hasFIB && o.res.Dst.Bits() < 4) {
			cache = false
		}
	case rtnl.RTN_LOCAL:
		if o.hasFIB && o.res.Nexthop().Dev != o.dev {
			cache = false
		}
	}
	if cache {
		return 2
	}
	return 1
}

// fill4 is rt_fill_info(). m is zero (getRoute's reply, or the one
// RouteGet cleared): clearing its 664 bytes once more was a tenth of fill4.
func (ns *Namespace) fill4(m *rtnl.RouteMsg, q *rtnl.RouteMsg, k *flow.Key, src netip.Addr, iif int32, table uint32, o *out4) {
	m.Family, m.DstLen, m.Type = rtnl.AF_INET, 32, o.typ
	m.SetTable(table)
	if o.hasFIB {
		m.Tos = o.res.Entry.Tos
	}
	m.Flags = o.flags&^0xFFFF | rtnl.RTM_F_CLONED
	if o.flags&rtcfNotify != 0 {
		m.Flags |= rtnl.RTM_F_NOTIFY
	}
	m.Dst = q.Dst
	if !m.Dst.IsValid() {
		m.Dst = netip.IPv4Unspecified()
	}
	m.Set(rtnl.RTA_DST)
	if src.IsValid() && !src.IsUnspecified() {
		m.SrcLen = 32
		m.Src = src
		m.Set(rtnl.RTA_SRC)
	}
	if o.dev != 0 {
		m.OIF = uint32(o.dev)
		m.Set(rtnl.RTA_OIF)
	}
	if o.hasFIB {
		nh := o.res.Nexthop()
		if nh.Realm != 0 {
			m.Flow = nh.Realm
			m.Set(rtnl.RTA_FLOW)
		}
		if !nh.Encap.IsZero() {
			// rt_fill_info(): the dst's lwtstate (rt_set_nexthop()
			// takes the hop's).
			m.EncapType, m.Encap = nh.Encap.Type(), nh.Encap.Attrs()
			m.Set(rtnl.RTA_ENCAP)
			m.Set(rtnl.RTA_ENCAP_TYPE)
		}
	}
	// rt_fill_info(): fl4->saddr != src, both 0 when no address could be
	// selected (an invalid src is the request's 0).
	if iif == 0 && k.Src != src && !(k.Src.IsUnspecified() && (!src.IsValid() || src.IsUnspecified())) {
		m.PrefSrc = k.Src
		m.Set(rtnl.RTA_PREFSRC)
	}
	if o.gw.IsValid() {
		if o.gw.Is4() {
			m.Gateway = o.gw
			m.Set(rtnl.RTA_GATEWAY)
		} else {
			m.ViaFamily, m.ViaAddr = rtnl.AF_INET6, o.gw
			m.Set(rtnl.RTA_VIA)
		}
	}
	if o.hasFIB && o.res.Entry.Metrics.Len() > 0 {
		putMetrics(&m.Metrics, o.res.Entry.Metrics)
		m.Set(rtnl.RTA_METRICS)
	}
	if k.Mark != 0 {
		m.Mark = k.Mark
		m.Set(rtnl.RTA_MARK)
	}
	if k.UID != uidInvalid {
		m.UID = k.UID
		m.Set(rtnl.RTA_UID)
	}
	if iif != 0 {
		m.IIF = uint32(iif)
		m.Set(rtnl.RTA_IIF)
	}
	m.CacheInfo = rtnl.CacheInfo{ClntRef: clntref4(o, iif)}
	if o.typ == rtnl.RTN_UNREACHABLE {
		m.CacheInfo.Error = uint32(syscall.EHOSTUNREACH)
	}
	m.Set(rtnl.RTA_CACHEINFO)
}

// putMetrics copies a stored metric set into a message's RTA_METRICS.
// RTAX_CC_ALGO is stored as a key, which a reply does not print by name.
func putMetrics(dst *rtnl.Metrics, src fib.Metrics) {
	for i := 0; i < src.Len(); i++ {
		t, v := src.At(i)
		if int(t) == rtnl.RTAX_CC_ALGO {
			// rtnetlink_put_metrics(): the algorithm by name.
			dst.Set |= 1 << rtnl.RTAX_CC_ALGO
			dst.CCAlgo = fib.CCAlgoName(v)
			continue
		}
		if int(t) <= rtnl.RTAX_MAX && v != 0 {
			dst.Put(int(t), v)
		}
	}
}

// fillFIBRoute fills m with route r in dump format (fib_dump_info() for
// IPv4, rt6_fill_node() without a dst for IPv6: the fibmatch replies), with
// the table the lookup answered from (a local route while local and main
// are merged reports main).
func fillFIBRoute(m *rtnl.RouteMsg, r *fib.Route, table uint32) {
	fillRoute(m, r)
	m.SetTable(table)
}

// routeGet6 is inet6_rtm_getroute() after the request checks.
func (ns *Namespace) routeGet6(q *rtnl.RouteMsg, reply *rtnl.RouteMsg, uid uint32) *rtnl.Error {
	var k flow.Key
	requestKey(&k, q, uid)
	k.Proto = 0
	if q.Has(rtnl.RTA_IP_PROTO) {
		if err := parseIPProto(q.IPProto, true); err != nil {
			return err
		}
		k.Proto = q.IPProto
	}
	// ip6_make_flowinfo(): flowinfo = rtm_tos << 20 | RTA_FLOWLABEL, with
	// no check of the label's upper bits (Linux 6.18 accepts any value),
	// so label bits 20–27 land in the traffic class the rules' DSCP
	// selectors see (ip6_dscp()), and only the low 20 bits are the label
	// (ip6_flowlabel()).
	info := uint32(q.Tos)<<20 | q.FlowLabel
	k.TOS = uint8(info >> 20)
	k.FlowLabel = info & 0x000FFFFF
	if !k.Dst.IsValid() {
		k.Dst = netip.IPv6Unspecified()
	}
	if !k.Src.IsValid() {
		k.Src = netip.IPv6Unspecified()
	}
	iif := int32(0)
	if q.Has(rtnl.RTA_IIF) {
		iif = int32(q.IIF)
	}
	if iif != 0 {
		if _, ok := ns.link(iif); !ok {
			return rtnl.Errno(syscall.ENODEV)
		}
		k.IIF = iif
		// fib6_rules_early_flow_dissect(), as on the IPv4 input path.
		if !ns.rulesNeedL4(rtnl.AF_INET6) {
			k.Proto, k.Sport, k.Dport = 0, 0, 0
		}
	} else {
		k.IIF = loIndex
		if q.Has(rtnl.RTA_OIF) {
			k.OIF = int32(q.OIF)
		}
	}
	res, err := ns.fib6.Lookup(k)
	if err != 0 {
		return rtnl.Errno(err)
	}
	if iif != 0 && res.Dst.Addr().IsMulticast() {
		// rt6_fill_node() asks ip6mr_get_route() for an input route to a
		// multicast prefix; with no multicast routing it fails and the
		// fill reports -EMSGSIZE ("Message too long"), fibmatch too.
		return rtnl.Errno(syscall.EMSGSIZE)
	}
	if q.Flags&rtnl.RTM_F_FIB_MATCH != 0 {
		r := res.Route()
		fillFIBRoute(reply, &r, res.Table)
		return nil
	}
	res.SelectPath(&k)
	ns.fill6(reply, &k, iif, &res)
	return nil
}

// fill6 is rt6_fill_node() for a looked-up destination (dst, src given).
// m is zero, as for fill4.
func (ns *Namespace) fill6(m *rtnl.RouteMsg, k *flow.Key, iif int32, res *fib.Result) {
	r := res.Entry
	m.Family, m.DstLen, m.SrcLen, m.Protocol, m.Type = rtnl.AF_INET6, 128, 128, r.Protocol, r.Type
	m.SetTable(res.Table)
	m.Dst, m.Src = k.Dst, k.Src
	m.Set(rtnl.RTA_DST)
	m.Set(rtnl.RTA_SRC)
	nh := res.Nexthop()
	dev := nh.Dev
	// ip6_rt_get_dev_rcu(): copies of local and anycast routes use the
	// loopback device.
	if r.Type == rtnl.RTN_LOCAL || r.Type == rtnl.RTN_ANYCAST || dev == 0 {
		dev = loIndex
	}
	if iif != 0 {
		m.IIF = uint32(iif)
		m.Set(rtnl.RTA_IIF)
	} else if !r.Prefsrc.IsValid() {
		if s, ok := ns.ipv6DevGetSaddr(nh.Dev, k.Dst); ok {
			m.SelSrc = s
		}
	} else {
		m.SelSrc = r.Prefsrc
	}
	if r.Prefsrc.IsValid() {
		m.PrefSrc = r.Prefsrc
		m.Set(rtnl.RTA_PREFSRC)
	}
	if r.Metrics.Len() > 0 {
		putMetrics(&m.Metrics, r.Metrics)
		m.Set(rtnl.RTA_METRICS)
	}
	m.Priority = r.Priority
	m.Set(rtnl.RTA_PRIORITY)
	if nh.Gateway.IsValid() {
		m.Gateway = nh.Gateway
		m.Set(rtnl.RTA_GATEWAY)
	}
	m.OIF = uint32(dev)
	m.Set(rtnl.RTA_OIF)
	// ip6_rt_init_dst(): the copy takes the hop's lwtstate, except when
	// fib6_is_reject() (given the route type as its addr_type) sends it to
	// ip6_rt_init_dst_reject() first: a route on lo that is not local or
	// anycast.
	if !nh.Encap.IsZero() && !(nh.Dev == loIndex && r.Type != rtnl.RTN_LOCAL && r.Type != rtnl.RTN_ANYCAST) {
		m.EncapType, m.Encap = nh.Encap.Type(), nh.Encap.Attrs()
		m.Set(rtnl.RTA_ENCAP)
		m.Set(rtnl.RTA_ENCAP_TYPE)
	}
	m.CacheInfo = rtnl.CacheInfo{ClntRef: 2, Expires: int32(r.Expires)}
	m.Set(rtnl.RTA_CACHEINFO)
	m.Pref = r.Pref
	m.Set(rtnl.RTA_PREF)
}

// ipv6Scope is ipv6_addr_scope() in the kernel's scope numbering
// (IPV6_ADDR_SCOPE_*: node-local 1, link 2, site 5, global 14).
func ipv6Scope(a netip.Addr) int {
	switch {
	case a.IsUnspecified():
		// __ipv6_addr_src_scope(IPV6_ADDR_ANY): invalid, below every
		// scope, so `ip -6 route get ::` picks a link-local source.
		return -1
	case a.IsLoopback() || a.IsInterfaceLocalMulticast():
		return 1
	case a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast():
		return 2
	case a.IsMulticast():
		return int(a.As16()[1] & 0x0f)
	}
	b := a.As16()
	if b[0] == 0xfe && b[1]&0xc0 == 0xc0 {
		return 5
	}
	return 14
}

func commonPrefix(a, b netip.Addr) int {
	x, y := a.As16(), b.As16()
	n := 0
	for i := range x {
		d := x[i] ^ y[i]
		if d == 0 {
			n += 8
			continue
		}
		for d&0x80 == 0 {
			n++
			d <<= 1
		}
		break
	}
	return n
}

// ipv6DevGetSaddr is a reduced ipv6_dev_get_saddr(): the RFC 6724 rules
// the kernel applies, in its order, to the usable addresses (not tentative,
// not failed DAD) of the output device — only that device for multicast and
// link-local destinations — else of every device: the destination itself,
// then the scope (the smallest scope at least the destination's, else the
// largest), then a non-deprecated address, then one on the output device,
// then the longest common prefix; the first of equals wins.
func (ns *Namespace) ipv6DevGetSaddr(dev int32, dst netip.Addr) (netip.Addr, bool) {
	set := ns.addrSet()
	dscope := ipv6Scope(dst)
	onlyDev := dev != 0 && (dst.IsMulticast() || dscope <= 2)
	var (
		best      netip.Addr
		bestScore [5]int
		found     bool
	)
	for _, a := range set.V6 {
		if onlyDev && a.Index != dev {
			continue
		}
		if a.Flags&(netdev.IFA_F_TENTATIVE|netdev.IFA_F_DADFAILED) != 0 && a.Flags&netdev.IFA_F_OPTIMISTIC == 0 {
			continue
		}
		s := ipv6Scope(a.Local)
		var sc [5]int
		if a.Local == dst {
			sc[0] = 1
		}
		if s >= dscope {
			sc[1] = 1000 - s
		} else {
			sc[1] = s - 1000
		}
		if a.Preferred != 0 {
			sc[2] = 1
		}
		if a.Index == dev {
			sc[3] = 1
		}
		sc[4] = min(commonPrefix(a.Local, dst), int(a.PrefixLen))
		if !found || better(sc, bestScore) {
			best, bestScore, found = a.Local, sc, true
		}
	}
	return best, found
}

func better(a, b [5]int) bool {
	for i := range a {
		if a[i] != b[i] {
			return a[i] > b[i]
		}
	}
	return false
}
