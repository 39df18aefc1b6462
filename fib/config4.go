package fib

import (
	"net/netip"
	"syscall"

	"github.com/nlemu/nlemu/flow"
	"github.com/nlemu/nlemu/rtnl"
)

// fibProps is the kernel's fib_props[]: per route type, the smallest scope
// a route of that type may have and the error a lookup hitting it returns.
var fibProps = [rtnl.RTN_MAX + 1]struct {
	scope uint8
	err   syscall.Errno
}{
	rtnl.RTN_UNSPEC:      {rtnl.RT_SCOPE_NOWHERE, 0},
	rtnl.RTN_UNICAST:     {rtnl.RT_SCOPE_UNIVERSE, 0},
	rtnl.RTN_LOCAL:       {rtnl.RT_SCOPE_HOST, 0},
	rtnl.RTN_BROADCAST:   {rtnl.RT_SCOPE_LINK, 0},
	rtnl.RTN_ANYCAST:     {rtnl.RT_SCOPE_LINK, 0},
	rtnl.RTN_MULTICAST:   {rtnl.RT_SCOPE_UNIVERSE, 0},
	rtnl.RTN_BLACKHOLE:   {rtnl.RT_SCOPE_UNIVERSE, syscall.EINVAL},
	rtnl.RTN_UNREACHABLE: {rtnl.RT_SCOPE_UNIVERSE, syscall.EHOSTUNREACH},
	rtnl.RTN_PROHIBIT:    {rtnl.RT_SCOPE_UNIVERSE, syscall.EACCES},
	rtnl.RTN_THROW:       {rtnl.RT_SCOPE_UNIVERSE, syscall.EAGAIN},
	rtnl.RTN_NAT:         {rtnl.RT_SCOPE_NOWHERE, syscall.EINVAL},
	rtnl.RTN_XRESOLVE:    {rtnl.RT_SCOPE_NOWHERE, syscall.EINVAL},
}

// TypeError returns the error a lookup hitting a route of type typ returns:
// fib_props[typ].error for IPv4, the same as the dst.error of an IPv6
// reject route (ip6_route_info_create()); EAGAIN for throw, 0 for the
// forwarding types.
func TypeError(typ uint8) syscall.Errno {
	if int(typ) < len(fibProps) {
		return fibProps[typ].err
	}
	return syscall.EINVAL
}

// parse4 is rtm_to_fib_config(): the policy was applied by the decoder;
// here the header and attribute checks in the kernel's order.
func parse4(m *rtnl.RouteMsg, nlFlags uint16) (Config, *rtnl.Error) {
	c := Config{Family: rtnl.AF_INET, Msg: m, NlFlags: nlFlags}
	// inet_validate_dscp(): the two ECN bits must be clear.
	if m.Tos&0x3 != 0 {
		return c, einval("Invalid dsfield (tos): ECN bits must be 0")
	}
	if m.Type > rtnl.RTN_MAX {
		return c, einval("Invalid route type")
	}
	// The attribute loop: RTA_VIA is converted as it is met
	// (fib_gw_from_via()); a 0.0.0.0 RTA_GATEWAY is no gateway.
	hasGw, hasVia := m.Has(rtnl.RTA_GATEWAY), m.Has(rtnl.RTA_VIA)
	// The attributes that can fail inside the loop fail in message order,
	// each occurrence checked: RTA_VIA (fib_gw_from_via()), RTA_MULTIPATH's
	// encapsulations and RTA_ENCAP_TYPE (lwtunnel_valid_encap_type[_attr]());
	// a bad RTA_VIA fails even when a later one is good.
	if err := m.CheckAttrLoop4(); err != nil {
		return c, err
	}
	if hasVia {
		// The last RTA_VIA is the gateway (each one overwrites it).
		gw, err := gwFromVia(m.Len(rtnl.RTA_VIA), m.ViaFamily, m.ViaAddr)
		if err != nil {
			return c, err
		}
		c.Gateway = gw
	}
	if hasGw && !m.Gateway.IsUnspecified() {
		c.Gateway = m.Gateway
	} else if hasGw && !hasVia {
		c.Gateway = netip.Addr{}
	}
	c.Oif = int32(m.OIF)
	c.Priority = m.Priority
	if m.Has(rtnl.RTA_PREFSRC) {
		c.Prefsrc = m.PrefSrc
	}
	c.Flow = m.Flow
	c.NhID = m.NHID
	c.Table = m.TableID()
	if m.DstLen > 32 {
		return c, einval("Invalid prefix length")
	}
	dst := netip.IPv4Unspecified()
	if m.Has(rtnl.RTA_DST) {
		dst = m.Dst
	}
	p := netip.PrefixFrom(dst, int(m.DstLen))
	if p.Masked().Addr() != dst {
		return c, einval("Invalid prefix for given prefix length")
	}
	c.Dst = p
	if c.NhID != 0 && (c.Oif != 0 || c.Gateway.IsValid() || m.Has(rtnl.RTA_ENCAP) || m.Has(rtnl.RTA_MULTIPATH)) {
		return c, einval("Nexthop specification and nexthop id are mutually exclusive")
	}
	if hasGw && hasVia {
		return c, einval("Nexthop configuration can not contain both GATEWAY and VIA")
	}
	if c.Table == 0 {
		c.Table = rtnl.RT_TABLE_MAIN
	}
	return c, nil
}

// gwFromVia is fib_gw_from_via(): RTA_VIA's family and address length.
func gwFromVia(n int, family uint16, a netip.Addr) (netip.Addr, *rtnl.Error) {
	if n < 2 {
		return netip.Addr{}, einval("Invalid attribute length for RTA_VIA")
	}
	switch family {
	case rtnl.AF_INET:
		if n-2 != 4 {
			return netip.Addr{}, einval("Invalid IPv4 address in RTA_VIA")
		}
	case rtnl.AF_INET6:
		if n-2 != 16 {
			return netip.Addr{}, einval("Invalid IPv6 address in RTA_VIA")
		}
	default:
		return netip.Addr{}, einval("Unsupported address family in RTA_VIA")
	}
	return a, nil
}

// build4 is fib_create_info() up to fib_find_info(): type and scope, flags,
// nexthops (fib_get_nhs() / fib_nh_init() and fib_check_nh()), prefsrc.
func (c *Config) build4(env Env) (Route, *rtnl.Error) {
	m := c.Msg
	r := Route{
		Family: rtnl.AF_INET, Table: c.Table, Dst: c.Dst, Tos: m.Tos, Type: m.Type,
		Scope: m.Scope, Protocol: m.Protocol, Priority: c.Priority, Prefsrc: c.Prefsrc,
		Flags: m.Flags,
	}
	if fibProps[m.Type].scope > m.Scope {
		return r, einval("Invalid scope")
	}
	if m.Flags&(rtnl.RTNH_F_DEAD|rtnl.RTNH_F_LINKDOWN) != 0 {
		return r, einval("Invalid rtm_flags - can not contain DEAD or LINKDOWN")
	}
	if c.NhID != 0 {
		// No nexthop objects exist in nlemu (nexthop_find_by_id()).
		return r, einval("Nexthop id does not exist")
	}
	if m.Has(rtnl.RTA_MULTIPATH) {
		// fib_count_nexthops().
		if m.MultipathRest > 0 {
			return r, einval("Invalid nexthop configuration - extra data after nexthops")
		}
		if len(m.Multipath) == 0 {
			return r, rtnl.Errno(syscall.EINVAL)
		}
	}
	metrics, err := convertMetrics(m)
	if err != nil {
		return r, err
	}
	r.Metrics = metrics
	// The nexthops as configured (fib_nh_init(): the hop's flags are
	// the request's rtm_flags, its rtnh_flags in the low byte for a
	// multipath hop).
	if m.Has(rtnl.RTA_MULTIPATH) {
		hops, err := c.multipath4()
		if err != nil {
			return r, err
		}
		r.Nexthops = hops
	} else {
		// fib_nh_init() → fib_nh_common_init(): the lwtunnel state, for
		// every route type (a reject route's bad RTA_ENCAP fails too).
		encap, err := msgEncap(m)
		if err != nil {
			return r, err
		}
		r.Nexthops = c.oneHop(Nexthop{Gateway: c.Gateway, Dev: c.Oif, Weight: 1, Flags: uint8(m.Flags), Realm: c.Flow, Encap: encap})
	}
	if fibProps[m.Type].err != 0 {
		if c.Gateway.IsValid() || c.Oif != 0 || m.Has(rtnl.RTA_MULTIPATH) {
			return r, einval("Gateway, device and multipath can not be specified for this route type")
		}
		// A reject route has no nexthop to dump (fib_dump_info() of a
		// fib_info whose only nh has no device) but its lwtunnel state:
		// fib_nexthop_info() still dumps RTA_ENCAP (measured), so a hop
		// without a device carries it.
		if e := r.Nexthops[0].Encap; !e.IsZero() {
			r.Nexthops = c.oneHop(Nexthop{Weight: 1, Encap: e})
			return r, nil
		}
		r.Nexthops = nil
		return r, nil
	}
	switch m.Type {
	case rtnl.RTN_UNICAST, rtnl.RTN_LOCAL, rtnl.RTN_BROADCAST, rtnl.RTN_ANYCAST, rtnl.RTN_MULTICAST:
	default:
		return r, einval("Invalid route type")
	}
	if m.Scope > rtnl.RT_SCOPE_HOST {
		return r, einval("Invalid scope")
	}
	if m.Scope == rtnl.RT_SCOPE_HOST {
		if len(r.Nexthops) != 1 {
			return r, einval("Route with host scope can not have multiple nexthops")
		}
		if r.Nexthops[0].Gateway.IsValid() {
			return r, einval("Route with host scope can not have a gateway")
		}
		// The device may be down: local routes of addresses on a
		// down link exist.
		d, ok := env.Devs.Device(r.Nexthops[0].Dev)
		if !ok || r.Nexthops[0].Dev == 0 {
			return r, rtnl.Errno(syscall.ENODEV)
		}
		_ = d
	} else {
		linkdown := 0
		for i := range r.Nexthops {
			if err := c.checkNh4(env, &r.Nexthops[i]); err != nil {
				return r, err
			}
			if r.Nexthops[i].Flags&rtnl.RTNH_F_LINKDOWN != 0 {
				linkdown++
			}
		}
		if linkdown == len(r.Nexthops) {
			r.Flags |= rtnl.RTNH_F_LINKDOWN
		}
	}
	if r.Prefsrc.IsValid() && !c.validPrefsrc4(env, r.Prefsrc) {
		return r, einval("Invalid prefsrc address")
	}
	return r, nil
}

// multipath4 is fib_get_nhs(): each rtnexthop as a nexthop, then the
// consistency of the first hop with the top-level attributes.
func (c *Config) multipath4() ([]Nexthop, *rtnl.Error) {
	m := c.Msg
	hops := make([]Nexthop, 0, len(m.Multipath))
	for _, h := range m.Multipath {
		if h.Flags&(rtnl.RTNH_F_DEAD|rtnl.RTNH_F_LINKDOWN) != 0 {
			return nil, einval("Invalid flags for nexthop - can not contain DEAD or LINKDOWN")
		}
		nh := Nexthop{Dev: h.IfIndex, Weight: uint16(h.Hops) + 1, Flags: h.Flags}
		if h.Has(rtnl.RTA_GATEWAY) && h.Has(rtnl.RTA_VIA) {
			return nil, einval("Nexthop configuration can not contain both GATEWAY and VIA")
		}
		if h.Has(rtnl.RTA_GATEWAY) {
			if h.GatewayLen < 4 {
				return nil, einval("Invalid IPv4 address in RTA_GATEWAY")
			}
			if !h.Gateway.IsUnspecified() {
				nh.Gateway = h.Gateway
			}
		} else if h.Has(rtnl.RTA_VIA) {
			gw, err := gwFromVia(h.ViaLen, h.ViaFamily, h.ViaAddr)
			if err != nil {
				return nil, err
			}
			nh.Gateway = gw
		}
		if h.Has(rtnl.RTA_FLOW) {
			if h.FlowLen < 4 {
				return nil, einval("Invalid RTA_FLOW")
			}
			nh.Realm = h.Flow
		}
		encap, err := mpEncap(m, &h)
		if err != nil {
			return nil, err
		}
		nh.Encap = encap
		hops = append(hops, nh)
	}
	first := hops[0]
	if c.Oif != 0 && first.Dev != c.Oif {
		return nil, einval("Nexthop device index does not match RTA_OIF")
	}
	if c.Gateway.IsValid() && first.Gateway != c.Gateway {
		return nil, einval("Nexthop gateway does not match RTA_GATEWAY or RTA_VIA")
	}
	if c.Flow != 0 && first.Realm != c.Flow {
		return nil, einval("Nexthop class id does not match RTA_FLOW")
	}
	return hops, nil
}

// checkNh4 is fib_check_nh() for one inline nexthop: the gateway checks of
// fib_check_nh_v4_gw() / fib_check_nh_v6_gw(), or fib_check_nh_nongw().
func (c *Config) checkNh4(env Env, nh *Nexthop) *rtnl.Error {
	switch {
	case nh.Gateway.Is4():
		return c.checkGw4(env, nh)
	case nh.Gateway.Is6():
		// fib_check_nh_v6_gw(): the IPv6 nexthop checks (fib6_nh_init()
		// of an IPv6 gateway) on the device given.
		return c.checkGw6OfV4(env, nh)
	}
	if nh.Flags&(rtnl.RTNH_F_PERVASIVE|rtnl.RTNH_F_ONLINK) != 0 {
		return einval("Invalid flags for nexthop - PERVASIVE and ONLINK can not be set")
	}
	d, ok := env.Devs.Device(nh.Dev)
	if nh.Dev == 0 || !ok {
		return rtnl.Errno(syscall.ENODEV) // inetdev_by_index()
	}
	if !d.Up {
		return errf(syscall.ENETDOWN, "Device for nexthop is not up")
	}
	if !d.Carrier {
		nh.Flags |= rtnl.RTNH_F_LINKDOWN
	}
	return nil
}

// checkGw4 is fib_check_nh_v4_gw().
func (c *Config) checkGw4(env Env, nh *Nexthop) *rtnl.Error {
	scope := c.Msg.Scope
	if nh.Flags&rtnl.RTNH_F_ONLINK != 0 {
		if scope >= rtnl.RT_SCOPE_LINK {
			return einval("Nexthop has invalid scope")
		}
		d, ok := env.Devs.Device(nh.Dev)
		if nh.Dev == 0 || !ok {
			return errf(syscall.ENODEV, "Nexthop device required for onlink")
		}
		if !d.Up {
			return errf(syscall.ENETDOWN, "Nexthop device is not up")
		}
		if env.addrType4(nh.Gateway, nh.Dev) != rtnl.RTN_UNICAST {
			return einval("Nexthop has invalid gateway")
		}
		if !d.Carrier {
			nh.Flags |= rtnl.RTNH_F_LINKDOWN
		}
		return nil
	}
	k := flow.Key{Dst: nh.Gateway, OIF: nh.Dev, IIF: 1, Scope: scope + 1}
	if k.Scope < rtnl.RT_SCOPE_LINK {
		k.Scope = rtnl.RT_SCOPE_LINK
	}
	var (
		res   Result
		errno syscall.Errno = syscall.ENETUNREACH
	)
	// The route's own table first when it is not main; on failure the
	// full lookup ("needed for example when nexthops are in the local
	// table rather than the given table"). Link state is ignored
	// (FIB_LOOKUP_IGNORE_LINKSTATE), as nlemu's lookups always do.
	if c.Table != rtnl.RT_TABLE_MAIN && env.FIB.tables.Exists(c.Table) {
		res, errno = env.FIB.lookupTable(c.Table, &k)
	}
	if errno != 0 {
		res, errno = env.FIB.Lookup(k)
	}
	if errno != 0 {
		return errf(errno, "Nexthop has invalid gateway")
	}
	if res.Entry.Type != rtnl.RTN_UNICAST && res.Entry.Type != rtnl.RTN_LOCAL {
		return einval("Nexthop has invalid gateway")
	}
	nh.Dev = res.Nexthop().Dev
	if nh.Dev == 0 {
		return einval("No egress device for nexthop gateway")
	}
	d, _ := env.Devs.Device(nh.Dev)
	if !d.Carrier {
		nh.Flags |= rtnl.RTNH_F_LINKDOWN
	}
	if !d.Up {
		return rtnl.Errno(syscall.ENETDOWN)
	}
	return nil
}

// checkGw6OfV4 is fib_check_nh_v6_gw() → ipv6_stub->fib6_nh_init() for an
// IPv4 route with an IPv6 gateway (RTA_VIA).
func (c *Config) checkGw6OfV4(env Env, nh *Nexthop) *rtnl.Error {
	if env.FIB6 == nil {
		return rtnl.Errno(syscall.EAFNOSUPPORT)
	}
	// The IPv6 config: the IPv4 route's table, the hop's flags and device.
	c6 := Config{Family: rtnl.AF_INET6, Gateway: nh.Gateway, Oif: nh.Dev, Table: c.Table,
		Msg: &rtnl.RouteMsg{Family: rtnl.AF_INET6, Flags: uint32(nh.Flags)}}
	h, err := c6.nhInit6(Env{Devs: env.Devs, FIB: env.FIB6}, rtnl.RTN_UNICAST)
	if err != nil {
		return err
	}
	// fib_check_nh_v6_gw() takes the device and nothing else: no
	// linkdown flag for a hop without carrier.
	nh.Dev = h.Dev
	return nil
}

// validPrefsrc4 is fib_valid_prefsrc(): a local route's own address, or an
// address of type local in the route's table or the local table.
func (c *Config) validPrefsrc4(env Env, src netip.Addr) bool {
	if c.Msg.Type == rtnl.RTN_LOCAL && c.Dst.Bits() != 0 && src == c.Dst.Addr() {
		return true
	}
	tb := c.Table
	if tb == rtnl.RT_TABLE_MAIN {
		tb = rtnl.RT_TABLE_LOCAL
	}
	if env.addrTypeTable4(src, tb, 0) == rtnl.RTN_LOCAL {
		return true
	}
	return tb != rtnl.RT_TABLE_LOCAL && env.addrTypeTable4(src, rtnl.RT_TABLE_LOCAL, 0) == rtnl.RTN_LOCAL
}

// addrType4 is inet_addr_type_dev_table(): the type of a in the local
// table (dev only picks an l3mdev's table; __inet_dev_addr_type() is
// called without it), so an onlink gateway that is a local address of any
// device, or 127.0.0.1, is "Nexthop has invalid gateway" (Linux 6.18).
func (env Env) addrType4(a netip.Addr, dev int32) uint8 {
	_ = dev // no l3mdev devices
	return env.addrTypeTable4(a, rtnl.RT_TABLE_LOCAL, 0)
}

// addrTypeTable4 is __inet_dev_addr_type(): zeronet and limited broadcast
// are broadcast, class D multicast, else the type of the route table tb
// holds for a (unicast when none, or when dev is given and the route is
// through another device).
func (env Env) addrTypeTable4(a netip.Addr, tb uint32, dev int32) uint8 {
	b := a.As4()
	if b[0] == 0 || a == netip.AddrFrom4([4]byte{255, 255, 255, 255}) {
		return rtnl.RTN_BROADCAST
	}
	if b[0]&0xf0 == 0xe0 {
		return rtnl.RTN_MULTICAST
	}
	if !env.FIB.tables.Exists(tb) {
		return rtnl.RTN_UNICAST
	}
	res, errno := env.FIB.lookupTable(tb, &flow.Key{Dst: a, IIF: 1})
	if errno != 0 || (dev != 0 && res.Nexthop().Dev != dev) {
		return rtnl.RTN_UNICAST
	}
	return res.Entry.Type
}
