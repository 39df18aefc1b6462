package fib

import (
	"net/netip"
	"syscall"

	"github.com/nlemu/nlemu/flow"
	"github.com/nlemu/nlemu/rtnl"
)

// ip6RtPrioUser is IP6_RT_PRIO_USER, the metric of a user route given none.
const ip6RtPrioUser = 1024

// loopbackIfindex is LOOPBACK_IFINDEX: reject routes are bound to lo.
const loopbackIfindex = 1

// parse6 is rtm_to_fib6_config() with the multipath pre-check, then, for
// RTM_NEWROUTE, inet6_rtm_newroute()'s default metric and the generic
// checks ip6_route_info_create() makes before it creates the table.
func parse6(m *rtnl.RouteMsg, typ, nlFlags uint16) (Config, *rtnl.Error) {
	c := Config{Family: rtnl.AF_INET6, Msg: m, NlFlags: nlFlags}
	if m.Tos != 0 {
		return c, einval("Invalid dsfield (tos): option not available for IPv6")
	}
	if m.Has(rtnl.RTA_FLOWLABEL) {
		return c, rtnl.AttrError(syscall.EINVAL, "Flow label cannot be specified for this operation", m.Off(rtnl.RTA_FLOWLABEL))
	}
	// rtm_scope is ignored: IPv6 routes have no scope.
	c.Table = uint32(m.Table)
	if m.Has(rtnl.RTA_NH_ID) {
		if m.Has(rtnl.RTA_GATEWAY) || m.Has(rtnl.RTA_OIF) || m.Has(rtnl.RTA_MULTIPATH) || m.Has(rtnl.RTA_ENCAP) {
			return c, einval("Nexthop specification and nexthop id are mutually exclusive")
		}
		c.NhID = m.NHID
	}
	if m.Has(rtnl.RTA_GATEWAY) {
		c.Gateway = m.Gateway
	}
	if m.Has(rtnl.RTA_VIA) {
		return c, einval("IPv6 does not support RTA_VIA attribute")
	}
	// RTA_DST / RTA_SRC must hold the prefix's bytes (nla_memcpy() of
	// (len+7)/8 bytes); a longer prefix length than 128 with a full
	// attribute fails here, without extack [ROUTES-SPEC E9].
	dst := netip.IPv6Unspecified()
	if m.Has(rtnl.RTA_DST) {
		if m.Len(rtnl.RTA_DST) < (int(m.DstLen)+7)/8 {
			return c, rtnl.Errno(syscall.EINVAL)
		}
		dst = m.Dst
	}
	src := netip.IPv6Unspecified()
	if m.Has(rtnl.RTA_SRC) {
		if m.Len(rtnl.RTA_SRC) < (int(m.SrcLen)+7)/8 {
			return c, rtnl.Errno(syscall.EINVAL)
		}
		src = m.Src
	}
	if m.Has(rtnl.RTA_PREFSRC) {
		c.Prefsrc = m.PrefSrc
	}
	c.Oif = int32(m.OIF)
	c.Priority = m.Priority
	if m.Has(rtnl.RTA_TABLE) {
		c.Table = m.Table32
	}
	if m.Has(rtnl.RTA_MULTIPATH) {
		if err := rtnl.ValidMultipathEncap(m.Multipath); err != nil {
			return c, err
		}
		if err := multipathPrecheck6(m, c.Gateway.IsValid(), typ == rtnl.RTM_NEWROUTE); err != nil {
			return c, err
		}
	}
	if m.Has(rtnl.RTA_PREF) {
		// Anything but high or low is medium.
		if p := m.Pref; p == 1 || p == 3 {
			c.Pref = p
		}
	}
	if m.Has(rtnl.RTA_ENCAP_TYPE) {
		if err := rtnl.ValidEncapType(m.EncapType); err != nil {
			return c, err
		}
	}
	// addrconf_timeout_fixup() / addrconf_finite_timeout(): an infinite
	// lifetime (0xffffffff) does not expire.
	if m.Has(rtnl.RTA_EXPIRES) && m.Expires != ^uint32(0) {
		c.Expires = m.Expires
	}
	if typ != rtnl.RTM_NEWROUTE {
		c.Dst = netip.PrefixFrom(dst, min(int(m.DstLen), 128)).Masked()
		if m.SrcLen != 0 {
			c.Src = netip.PrefixFrom(src, min(int(m.SrcLen), 128)).Masked()
		}
		if c.NhID != 0 {
			return c, einval("Nexthop id does not exist")
		}
		if c.Table == 0 {
			c.Table = rtnl.RT_TABLE_MAIN
		}
		return c, nil
	}
	if c.Priority == 0 {
		c.Priority = ip6RtPrioUser
	}
	// ip6_route_info_create(), before the table.
	if m.Type > rtnl.RTN_MAX {
		return c, einval("Invalid route type")
	}
	if m.DstLen > 128 {
		return c, einval("Invalid prefix length")
	}
	if m.SrcLen > 128 {
		return c, einval("Invalid source address length")
	}
	if c.NhID != 0 {
		if m.SrcLen != 0 {
			return c, einval("Nexthops can not be used with source routing")
		}
		return c, einval("Nexthop id does not exist")
	}
	// The prefixes are masked: host bits are cleared silently.
	c.Dst = netip.PrefixFrom(dst, int(m.DstLen)).Masked()
	if m.SrcLen != 0 {
		c.Src = netip.PrefixFrom(src, int(m.SrcLen)).Masked()
	}
	if c.Table == 0 {
		c.Table = rtnl.RT_TABLE_MAIN
	}
	return c, nil
}

// multipathPrecheck6 is rtm_to_fib6_multipath_config(): at least one whole
// rtnexthop, 16-byte gateways, and for a new route a gateway on every hop
// (its own or the top-level one).
func multipathPrecheck6(m *rtnl.RouteMsg, topGw, newroute bool) *rtnl.Error {
	if len(m.Multipath) == 0 {
		return einval("Invalid nexthop configuration - no valid nexthops")
	}
	for _, h := range m.Multipath {
		if h.Has(rtnl.RTA_GATEWAY) && h.GatewayLen < 16 {
			return rtnl.AttrError(syscall.EINVAL, "Invalid IPv6 address in RTA_GATEWAY", 0)
		}
		if newroute && !h.Has(rtnl.RTA_GATEWAY) && !topGw {
			return einval("Device only routes can not be added for IPv6 using the multipath API.")
		}
	}
	return nil
}

// build6 is ip6_route_info_create() after the table: metrics, the nexthop
// (fib6_nh_init()), the prefsrc; for RTA_MULTIPATH one hop per rtnexthop
// (ip6_route_multipath_add()), kept in one Route as an ECMP sibling set.
func (c *Config) build6(env Env) (Route, *rtnl.Error) {
	m := c.Msg
	r := Route{
		Family: rtnl.AF_INET6, Table: c.Table, Dst: c.Dst, Src: c.Src, Type: m.Type,
		Protocol: m.Protocol, Priority: c.Priority, Pref: c.Pref, Expires: c.Expires,
	}
	if r.Type == rtnl.RTN_UNSPEC {
		r.Type = rtnl.RTN_UNICAST
	}
	if r.Protocol == rtnl.RTPROT_UNSPEC {
		r.Protocol = rtnl.RTPROT_BOOT
	}
	metrics, err := convertMetrics(m)
	if err != nil {
		return r, err
	}
	r.Metrics = metrics
	if !m.Has(rtnl.RTA_MULTIPATH) {
		nh, err := c.nhInit6(env, r.Type)
		if err != nil {
			return r, err
		}
		if !isReject6(r.Type) {
			// fib6_nh_init() ends with fib_nh_common_init(): the
			// lwtunnel state (a reject route skips it).
			if nh.Encap, err = msgEncap(m); err != nil {
				return r, err
			}
		}
		r.Flags = uint32(nh.Flags & rtnl.RTNH_F_ONLINK)
		if err := c.checkPrefsrc6(env, nh.Dev); err != nil {
			return r, err
		}
		r.Nexthops = c.oneHop(nh)
		r.Prefsrc = c.Prefsrc
		if isRejectOrLo6(env, r.Type, c.Dst, nh.Dev) {
			// ip6_route_info_create() overwrites fib6_flags with
			// RTF_REJECT|RTF_NONEXTHOP for these (fib6_is_reject()),
			// dropping RTF_EXPIRES and the RTF_PREF bits: they never
			// expire nor report it, and dump pref medium.
			r.Expires = 0
			r.Pref = 0
		}
		return r, nil
	}
	for _, h := range m.Multipath {
		hc := *c
		if h.IfIndex != 0 {
			hc.Oif = h.IfIndex
		}
		if h.Has(rtnl.RTA_GATEWAY) {
			hc.Gateway = h.Gateway
		}
		hm := *m
		hm.Flags |= uint32(h.Flags & rtnl.RTNH_F_ONLINK)
		hc.Msg = &hm
		nh, err := hc.nhInit6(env, r.Type)
		if err != nil {
			return r, err
		}
		if !isReject6(r.Type) {
			if nh.Encap, err = mpEncap(m, &h); err != nil {
				return r, err
			}
		}
		if err := hc.checkPrefsrc6(env, nh.Dev); err != nil {
			return r, err
		}
		nh.Weight = uint16(h.Hops) + 1
		// ip6_route_info_append(): a hop given twice is EEXIST before
		// anything is inserted.
		for _, o := range r.Nexthops {
			if o.Dev == nh.Dev && o.Gateway == nh.Gateway && o.Encap == nh.Encap {
				return r, rtnl.Errno(syscall.EEXIST)
			}
		}
		r.Nexthops = append(r.Nexthops, nh)
	}
	r.Prefsrc = c.Prefsrc
	return r, nil
}

// checkPrefsrc6 is ip6_route_info_create()'s prefsrc check: the address
// must be configured (not tentative) on the nexthop's device, or be a
// global address of any device.
func (c *Config) checkPrefsrc6(env Env, dev int32) *rtnl.Error {
	if !c.Prefsrc.IsValid() || c.Prefsrc.IsUnspecified() {
		return nil
	}
	if !env.Devs.HasAddr6(c.Prefsrc, dev, false, true) {
		return einval("Invalid source address")
	}
	return nil
}

// isReject6 reports RTF_REJECT: the reject types of rtm_to_fib6_config().
func isReject6(typ uint8) bool {
	switch typ {
	case rtnl.RTN_UNREACHABLE, rtnl.RTN_BLACKHOLE, rtnl.RTN_PROHIBIT, rtnl.RTN_THROW:
		return true
	}
	return false
}

// nhInit6 is fib6_nh_init(): the device, onlink, reject routes bound to lo,
// the gateway (ip6_validate_gw()), IPv6 on the device, its state.
func (c *Config) nhInit6(env Env, typ uint8) (Nexthop, *rtnl.Error) {
	nh := Nexthop{Weight: 1, Gateway: c.Gateway}
	var dev Device
	haveDev := false
	if c.Oif != 0 {
		d, ok := env.Devs.Device(c.Oif)
		if !ok {
			return nh, rtnl.Errno(syscall.ENODEV)
		}
		dev, haveDev = d, true
	}
	onlink := c.Msg.Flags&rtnl.RTNH_F_ONLINK != 0
	if onlink {
		if !haveDev {
			return nh, errf(syscall.ENODEV, "Nexthop device required for onlink")
		}
		if !dev.Up {
			return nh, errf(syscall.ENETDOWN, "Nexthop device is not up")
		}
		nh.Flags |= rtnl.RTNH_F_ONLINK
	}
	// Reject routes skip every further check and sit on lo (6.18 keeps a
	// unicast route `dev lo` a normal route [ROUTES-SPEC E18]).
	if isReject6(typ) {
		nh.Gateway = netip.Addr{}
		nh.Dev = loopbackIfindex
		nh.Flags = 0
		return nh, nil
	}
	if c.Gateway.IsValid() {
		d, err := c.validateGw6(env, dev, haveDev)
		if err != nil {
			return nh, err
		}
		dev, haveDev = d, true
	}
	if !haveDev {
		return nh, rtnl.Errno(syscall.ENODEV)
	}
	if dev.NoIPv6 {
		return nh, errf(syscall.EACCES, "IPv6 is disabled on nexthop device")
	}
	if !dev.Up {
		return nh, errf(syscall.ENETDOWN, "Nexthop device is not up")
	}
	// fib6_nh_init() tests RTF_LOCAL|RTF_ANYCAST, and a request's
	// RTN_ANYCAST sets no RTF_ANYCAST (rtm_to_fib6_config(): only
	// addrconf's anycast routes have it), so an anycast route is linkdown.
	if typ != rtnl.RTN_LOCAL && !dev.Carrier {
		nh.Flags |= rtnl.RTNH_F_LINKDOWN
	}
	nh.Dev = dev.Index
	return nh, nil
}

// validateGw6 is ip6_validate_gw(): a gateway that is not a local address,
// unicast (or v4-mapped) unless link-local, resolved through a connected
// route (ip6_route_check_nh()) or, with onlink, not contradicted by one
// (ip6_route_check_nh_onlink()); the egress device it yields.
func (c *Config) validateGw6(env Env, dev Device, haveDev bool) (Device, *rtnl.Error) {
	gw := c.Gateway
	linkLocal := gw.IsLinkLocalUnicast()
	needAddrCheck := !haveDev
	if haveDev && env.Devs.HasAddr6(gw, dev.Index, !linkLocal, false) {
		return dev, einval("Gateway can not be a local address")
	}
	if !linkLocal {
		if gw.IsMulticast() || gw.IsUnspecified() {
			if !gw.Is4In6() {
				return dev, einval("Invalid gateway address")
			}
		}
		if c.Msg.Flags&rtnl.RTNH_F_ONLINK != 0 {
			if err := c.checkNhOnlink6(env, dev); err != nil {
				return dev, err
			}
		} else {
			d, err := c.checkNh6(env, dev, haveDev)
			if err != nil {
				return dev, err
			}
			dev, haveDev = d, true
		}
	}
	if !haveDev {
		return dev, einval("Egress device not specified")
	}
	if dev.Loopback {
		return dev, einval("Egress device can not be loopback device for this route")
	}
	if needAddrCheck && env.Devs.HasAddr6(gw, dev.Index, !linkLocal, false) {
		return dev, einval("Gateway can not be a local address")
	}
	return dev, nil
}

// checkNh6 is ip6_route_check_nh(): the gateway looked up in the route's
// table, then through the rules; the hit must be a connected, non-reject
// route, through the given device if any.
func (c *Config) checkNh6(env Env, dev Device, haveDev bool) (Device, *rtnl.Error) {
	unreach := rtnl.Errno(syscall.EHOSTUNREACH)
	k := flow.Key{Dst: c.Gateway, OIF: c.Oif}
	good := func(res Result, errno syscall.Errno) bool {
		if errno != 0 || resReject6(env, res) || res.NH < 0 {
			return false
		}
		nh := res.Nexthop()
		return !nh.Gateway.IsValid() && (!haveDev || nh.Dev == dev.Index)
	}
	var res Result
	ok := false
	if c.Table != 0 && env.FIB.tables.Exists(c.Table) {
		var errno syscall.Errno
		res, errno = env.FIB.lookupTable(c.Table, &k)
		ok = good(res, errno)
	}
	if !ok {
		var errno syscall.Errno
		res, errno = env.FIB.Lookup(k)
		if errno != 0 || resReject6(env, res) || res.NH < 0 || res.Nexthop().Gateway.IsValid() {
			return dev, unreach
		}
		res.SelectPath(&k)
	}
	nhDev := res.Nexthop().Dev
	if haveDev {
		if nhDev != dev.Index {
			return dev, unreach
		}
		return dev, nil
	}
	d, found := env.Devs.Device(nhDev)
	if !found {
		return dev, unreach
	}
	return d, nil
}

// checkNhOnlink6 is ip6_route_check_nh_onlink(): a route of the main table
// covering the gateway, other than a reject or the default route, must be
// a unicast route through the same device. The lookup prefers no device
// (the kernel's oif there is a preference only, which matters when one
// prefix has routes through several devices).
func (c *Config) checkNhOnlink6(env Env, dev Device) *rtnl.Error {
	res, errno := env.FIB.lookupTable(rtnl.RT_TABLE_MAIN, &flow.Key{Dst: c.Gateway})
	if errno != 0 || resReject6(env, res) || res.Dst.Bits() == 0 && res.Dst.Addr().IsUnspecified() {
		return nil
	}
	if res.Entry.Type != rtnl.RTN_UNICAST || res.Nexthop().Dev != dev.Index {
		return einval("Nexthop has invalid gateway or device mismatch")
	}
	return nil
}

// resReject6 is a lookup result's fib6_flags & RTF_REJECT, which the
// gateway checks test: a reject type, or a route ip6_route_info_create()
// promoted to reject (isRejectOrLo6: `ip -6 route add ::/0 dev lo` makes a
// gateway behind it unreachable, EHOSTUNREACH, on Linux 6.18).
func resReject6(env Env, res Result) bool {
	if isReject6(res.Entry.Type) {
		return true
	}
	return res.NH >= 0 && isRejectOrLo6(env, res.Entry.Type, res.Dst, res.Nexthop().Dev)
}

// isRejectOrLo6 is fib6_is_reject() on the resolved nexthop: a reject
// type, or a route through a loopback device to a non-loopback
// destination without RTF_LOCAL or RTF_ANYCAST (a request's RTN_ANYCAST
// sets no RTF_ANYCAST: `ip -6 route add anycast P dev lo expires 600`
// reports neither expiry nor pref on Linux 6.18).
func isRejectOrLo6(env Env, typ uint8, dst netip.Prefix, dev int32) bool {
	if isReject6(typ) {
		return true
	}
	d, ok := env.Devs.Device(dev)
	return ok && d.Loopback && !dst.Addr().IsLoopback() && typ != rtnl.RTN_LOCAL
}
