package fib

// Route requests turned into routes: the kernel's rtm_to_fib_config() +
// fib_create_info() for IPv4 (config4.go) and rtm_to_fib6_config() +
// ip6_route_info_create() for IPv6 (config6.go). Each check runs in the
// kernel's order with its errno and extack text, because clients (and the
// differential tests) see the first failing one.
//
// A request is handled in two steps with the table creation between them,
// as inet_rtm_newroute() and ip6_route_info_create() do: Parse checks the
// message alone; the caller then creates the table (fib_new_table(), so a
// request that fails later still leaves its table behind [ROUTES-SPEC E19]);
// Build checks the request against devices and tables and returns the
// Route to insert.

import (
	"net/netip"
	"syscall"

	"github.com/nlemu/nlemu/rtnl"
)

// Device is what route validation needs to know about one device.
type Device struct {
	// Index is the ifindex.
	Index int32
	// Up is IFF_UP (administratively up).
	Up bool
	// Carrier is netif_carrier_ok().
	Carrier bool
	// Loopback is IFF_LOOPBACK.
	Loopback bool
	// NoIPv6 is a device without a usable inet6_dev (disable_ipv6).
	NoIPv6 bool
}

// Addr6 is one configured IPv6 address, as ipv6_chk_addr_and_flags() sees
// it.
type Addr6 struct {
	Dev  int32
	Addr netip.Addr
	// LinkScope is an address of scope link or host (IFA_LINK|IFA_HOST):
	// it only counts on its own device.
	LinkScope bool
	// Tentative is IFA_F_TENTATIVE (DAD not finished).
	Tentative bool
}

// DeviceView is the namespace's devices as the route write path reads them
// (nsmgr implements it from netdev). It is consulted under the writer lock;
// implementations return values, never shared mutable state.
type DeviceView interface {
	// Device returns the device with ifindex idx.
	Device(idx int32) (Device, bool)
	// HasAddr6 is ipv6_chk_addr_and_flags(): whether a is configured on
	// dev, or on any device when anyDev (skip_dev_check), a link-scope
	// address counting only on its own device; tentative addresses do
	// not count when noTentative (banned_flags IFA_F_TENTATIVE).
	HasAddr6(a netip.Addr, dev int32, anyDev, noTentative bool) bool
}

// Env is what Build reads besides the request: the namespace's devices and
// the FIB of the request's family, whose tables and rules answer the
// gateway and prefsrc lookups (fib_table_lookup(), fib_lookup(),
// fib6_table_lookup(), fib6_lookup()).
type Env struct {
	Devs DeviceView
	FIB  *FIB
	// FIB6 is the namespace's IPv6 FIB, which checks the IPv6 gateway of
	// an IPv4 route (RTA_VIA, fib_check_nh_v6_gw()); nil refuses those.
	FIB6 *FIB
}

// Config is a parsed route request (struct fib_config / fib6_config).
type Config struct {
	Family uint8
	// Msg is the request.
	Msg *rtnl.RouteMsg
	// Table is the effective table (RTA_TABLE or rtm_table, 0 = main).
	Table uint32
	Dst   netip.Prefix
	Src   netip.Prefix
	// Gateway is the top-level gateway (RTA_GATEWAY or RTA_VIA; IPv4 may
	// carry an IPv6 gateway).
	Gateway  netip.Addr
	Oif      int32
	Priority uint32
	Prefsrc  netip.Addr
	Flow     uint32
	NhID     uint32
	// Pref is the IPv6 router preference after rtm_to_fib6_config()'s
	// mapping.
	Pref uint8
	// Expires is the IPv6 RTA_EXPIRES in seconds (0 = none).
	Expires uint32
	// Metrics are the converted RTA_METRICS (ip_metrics_convert()).
	Metrics Metrics
	// NlFlags are the request's nlmsg_flags.
	NlFlags uint16

	// hop holds the one hop of the route Build returns (oneHop).
	hop [1]Nexthop
}

// oneHop returns a slice of the one hop h in c's own storage, where a
// fresh []Nexthop was an allocation per request: the route Build returns
// shares it, so that route is valid while c is and until the next Build
// from c (Tables.intern stores a copy of the hops; a handler encodes the
// notifications before it drops c).
func (c *Config) oneHop(h Nexthop) []Nexthop {
	c.hop[0] = h
	return c.hop[:1:1]
}

// Parse is the message-only half of a route request: rtm_to_fib_config()
// for AF_INET, rtm_to_fib6_config() (plus inet6_rtm_newroute()'s default
// metric for RTM_NEWROUTE) for AF_INET6.
func Parse(m *rtnl.RouteMsg, typ, nlFlags uint16) (Config, *rtnl.Error) {
	if m.Family == rtnl.AF_INET6 {
		return parse6(m, typ, nlFlags)
	}
	return parse4(m, nlFlags)
}

// Build is the device- and table-dependent half of RTM_NEWROUTE:
// fib_create_info() for IPv4, ip6_route_info_create() (and the multipath
// split of ip6_route_multipath_add()) for IPv6. The caller has created
// c.Table. A single-hop route's Nexthops are c's storage (oneHop): the
// route is valid while c is and until the next Build from c.
func (c *Config) Build(env Env) (Route, *rtnl.Error) {
	if c.Family == rtnl.AF_INET6 {
		return c.build6(env)
	}
	return c.build4(env)
}

// congestionControls are the names tcp_ca_get_key_by_name() finds on the
// reference kernel (its tcp_available_congestion_control once bbr, a
// module, is loaded on demand): reno and cubic built in, bbr.
var congestionControls = []string{"reno", "cubic", "bbr"}

// convertMetrics is ip_fib_metrics_init() over the request's RTA_METRICS.
func convertMetrics(m *rtnl.RouteMsg) (Metrics, *rtnl.Error) {
	if !m.Has(rtnl.RTA_METRICS) {
		return Metrics{}, nil
	}
	x, err := m.ConvertMetrics(func(name string) bool { return CCAlgoName(ccKey(name)) == name })
	if err != nil {
		return Metrics{}, err
	}
	vals := map[uint16]uint32{}
	for t := 1; t <= rtnl.RTAX_MAX; t++ {
		if !x.Has(t) {
			continue
		}
		v := x.Val[t]
		if t == rtnl.RTAX_CC_ALGO {
			v = ccKey(x.CCAlgo)
		}
		vals[uint16(t)] = v
	}
	return MakeMetrics(vals), nil
}

// CCAlgoName returns the congestion control name a stored RTAX_CC_ALGO key
// stands for ("" for none).
func CCAlgoName(key uint32) string {
	for _, n := range congestionControls {
		if ccKey(n) == key {
			return n
		}
	}
	return ""
}

// ccKey is a stable key for a congestion control name (the kernel hashes
// the name with jhash; only equality matters here).
func ccKey(name string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(name); i++ {
		h = (h ^ uint32(name[i])) * 16777619
	}
	return h
}

func errf(errno syscall.Errno, msg string) *rtnl.Error { return rtnl.Errorf(errno, msg) }

func einval(msg string) *rtnl.Error { return rtnl.Errorf(syscall.EINVAL, msg) }
