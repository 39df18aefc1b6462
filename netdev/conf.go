package netdev

// Per-namespace device configuration that is not a device's: the "all" and
// "default" blocks of net.ipv4.conf and net.ipv6.conf, which netconf dumps
// list after the devices (NETCONFA_IFINDEX_ALL and _DEFAULT), and the
// netconf view of a devconf block.

// Netconf indexes (NETCONFA_IFINDEX_ALL, NETCONFA_IFINDEX_DEFAULT).
const (
	IfindexAll     = -1
	IfindexDefault = -2
)

// IPV4_DEVCONF_* - 1 and DEVCONF_* indexes of the values netconf reports.
const (
	v4Forwarding               = 0  // IPV4_DEVCONF_FORWARDING
	v4MCForwarding             = 1  // IPV4_DEVCONF_MC_FORWARDING
	v4ProxyARP                 = 2  // IPV4_DEVCONF_PROXY_ARP
	v4RPFilter                 = 7  // IPV4_DEVCONF_RP_FILTER
	v4NoXfrm                   = 14 // IPV4_DEVCONF_NOXFRM
	v4NoPolicy                 = 15 // IPV4_DEVCONF_NOPOLICY
	v4IgnoreRoutesWithLinkdown = 28 // IPV4_DEVCONF_IGNORE_ROUTES_WITH_LINKDOWN
	v4BCForwarding             = 31 // IPV4_DEVCONF_BC_FORWARDING

	v6Forwarding               = 0  // DEVCONF_FORWARDING
	v6MTU6                     = 2  // DEVCONF_MTU6
	v6UseTempaddr              = 10 // DEVCONF_USE_TEMPADDR
	v6ProxyNDP                 = 22 // DEVCONF_PROXY_NDP
	v6MCForwarding             = 25 // DEVCONF_MC_FORWARDING
	v6IgnoreRoutesWithLinkdown = 39 // DEVCONF_IGNORE_ROUTES_WITH_LINKDOWN
)

// inet4AllDefaults is net.ipv4.conf.all and .default of a new namespace:
// devinet_init_net() copies them from the initial namespace (see
// inet4Defaults: the built-in ipv4_devconf / ipv4_devconf_dflt of an
// untuned host), without the NOXFRM and NOPOLICY that inetdev_init() gives
// lo.
var inet4AllDefaults = func() []int32 {
	c := append([]int32(nil), inet4Defaults...)
	c[v4NoXfrm], c[v4NoPolicy] = 0, 0
	return c
}()

// inet6AllDefaults is net.ipv6.conf.all and .default of a new namespace:
// addrconf_init_net() starts from the built-in ipv6_devconf and
// ipv6_devconf_dflt, which differ from lo's block in mtu6 (IPV6_MIN_MTU)
// and use_tempaddr (0).
var inet6AllDefaults = func() []int32 {
	c := append([]int32(nil), inet6Defaults...)
	c[v6MTU6], c[v6UseTempaddr] = 1280, 0
	return c
}()

// Netconf is what netconf messages report of one devconf block.
type Netconf struct {
	Forwarding, RPFilter, MCForwarding, BCForwarding int32
	ProxyNeigh, IgnoreRoutesWithLinkdown             int32
}

// Netconf4 reads an IPv4 devconf block (inet_netconf_fill_devconf()).
func Netconf4(c []int32) Netconf {
	return Netconf{
		Forwarding: c[v4Forwarding], RPFilter: c[v4RPFilter], MCForwarding: c[v4MCForwarding],
		BCForwarding: c[v4BCForwarding], ProxyNeigh: c[v4ProxyARP],
		IgnoreRoutesWithLinkdown: c[v4IgnoreRoutesWithLinkdown],
	}
}

// Netconf6 reads an IPv6 devconf block (inet6_netconf_fill_devconf()).
func Netconf6(c []int32) Netconf {
	return Netconf{
		Forwarding: c[v6Forwarding], MCForwarding: c[v6MCForwarding], ProxyNeigh: c[v6ProxyNDP],
		IgnoreRoutesWithLinkdown: c[v6IgnoreRoutesWithLinkdown],
	}
}

// Inet4Conf returns the IPv4 devconf block of ifindex: a device's, or
// IfindexAll / IfindexDefault; false when there is no such device or the
// device has no in_device (an MTU below 68), as __in_dev_get_rtnl()
// returning NULL.
func (d *Devices) Inet4Conf(ifindex int32) ([]int32, bool) {
	switch ifindex {
	case IfindexAll, IfindexDefault:
		return inet4AllDefaults, true
	}
	l, ok := d.ByIndex(ifindex)
	return l.Inet4Conf, ok && l.Inet4Conf != nil
}

// Inet6Conf is Inet4Conf for IPv6 (no inet6_dev: an MTU below 1280, lo
// excepted).
func (d *Devices) Inet6Conf(ifindex int32) ([]int32, bool) {
	switch ifindex {
	case IfindexAll, IfindexDefault:
		return inet6AllDefaults, true
	}
	l, ok := d.ByIndex(ifindex)
	return l.Inet6.Conf, ok && l.Inet6.Conf != nil
}
