// Package netdev holds a namespace's network devices. For now every
// namespace has exactly one: the loopback device "lo" with ifindex 1, which
// rules bind to by name (`ip rule add iif lo ...`) and which can be set up
// and down. Full links and addresses come with their own issue.
//
// Concurrency: Devices publishes an immutable snapshot of its links through
// an atomic pointer; readers (name lookups on the rule path, dumps, gets)
// never lock. Changes serialize on a writer mutex and publish a new
// snapshot, the pattern rulesops.Ops uses for rule lists.
package netdev

import (
	"math/rand/v2"
	"sync"
	"sync/atomic"

	"github.com/nlemu/nlemu/rtnl"
	"golang.org/x/sys/unix"
)

// Link is one network device as rtnl_fill_ifinfo() reports it. A Link is a
// value: the slices it holds are shared and never modified.
type Link struct {
	Index int32
	Name  string
	Type  uint16 // ARPHRD_*
	// Flags is dev->flags (IFF_UP and the configurable bits). What the
	// wire carries is WireFlags() (dev_get_flags()).
	Flags      uint32
	MTU        uint32
	MinMTU     uint32
	MaxMTU     uint32
	TxQueueLen uint32
	// OperState is dev->operstate (RFC 2863); the wire reports IF_OPER_DOWN
	// while the device is not running (rtnl_fill_ifinfo()).
	OperState   uint8
	NumTxQueues uint32
	NumRxQueues uint32
	// Offload limits (netif_set_tso_max_size() and friends).
	GSOMaxSegs, GSOMaxSize, GROMaxSize uint32
	GSOIPv4MaxSize, GROIPv4MaxSize     uint32
	TSOMaxSize, TSOMaxSegs             uint32
	NetnsImmutable                     bool // NETIF_F_NETNS_LOCAL / dev->netns_immutable
	Carrier                            bool
	Address, Broadcast                 []byte
	Qdisc                              string // root qdisc's ops->id
	Inet4Conf                          []int32
	Inet6                              Inet6Dev
	// Inet4MCStamp is when the device joined 224.0.0.1 (ip_mc_up() on its
	// last up), in 1/100 s since boot; it is a member only while up.
	Inet4MCStamp uint32

	// Kind is the rtnl_link_ops kind ("veth", "bridge", "dummy"); lo has
	// none (it cannot be created or deleted).
	Kind string
	// Peer is a veth's peer ifindex (IFLA_LINK), 0 while it has none.
	Peer int32
	// Master is the ifindex of the bridge this device is a port of.
	Master int32
	// Group is dev->group (IFLA_GROUP).
	Group uint32
	// GFlags is dev->gflags: the IFF_PROMISC / IFF_ALLMULTI the user set
	// (`ip link set DEV promisc on`), which dev_get_flags() reports.
	GFlags uint32
	// Alias is dev->ifalias (IFLA_IFALIAS).
	Alias string
	// Promiscuity and Allmulti are the dev_set_promiscuity() /
	// dev_set_allmulti() counters (a bridge port holds one of each).
	Promiscuity, Allmulti uint32
	// CarrierUp and CarrierDown count netif_carrier_on() / _off() changes
	// (IFLA_CARRIER_UP_COUNT / _DOWN_COUNT; IFLA_CARRIER_CHANGES is their
	// sum).
	CarrierUp, CarrierDown uint32
	// AddrSet is addr_assign_type NET_ADDR_SET: the address was given by
	// the user (a bridge then stops following its ports' addresses).
	AddrSet bool
	// MTUSet is a bridge's BROPT_MTU_SET_BY_USER.
	MTUSet bool
	// Bridge is a bridge's state (br_fill_info()); Port a bridge port's.
	Bridge *rtnl.BridgeInfo
	Port   *rtnl.BridgePortInfo
}

// Inet6Dev is the IPv6 state of a device (struct inet6_dev) that
// inet6_fill_ifla6_attrs() reports.
type Inet6Dev struct {
	Flags uint32 // idev->if_flags (IF_READY, IF_RA_RCVD, ...)
	// Tstamp is idev->tstamp as cstamp_delta() reports it: 1/100 s since
	// boot, of the device's last up or down.
	Tstamp uint32
	// ReachableTime and RetransTime are the neighbour parameters in ms.
	ReachableTime, RetransTime uint32
	Conf                       []int32 // DEVCONF_* (ipv6_store_devconf())
	AddrGenMode                uint8
	// MCStamp is when ipv6_add_dev() joined ff02::1 and ff01::1 (the
	// inet6_dev's creation), in 1/100 s since boot.
	MCStamp uint32
}

// Device flags, as in <linux/if.h>.
const (
	IFF_UP       = 0x1
	IFF_LOOPBACK = 0x8
	IFF_ALLMULTI = 0x200
	IFF_RUNNING  = 0x40
	IFF_LOWER_UP = 0x10000

	// ifReady is addrconf's IF_READY: the inet6_dev is up.
	ifReady = 0x80000000
)

// Operational states (IF_OPER_*).
const (
	OperUnknown = 0
	OperDown    = 2
	OperUp      = 6
)

// WireFlags returns the flags the wire carries (dev_get_flags()): dev->flags
// with IFF_PROMISC / IFF_ALLMULTI as the user set them (gflags, not the
// counters' bits), and IFF_RUNNING and IFF_LOWER_UP added while the device is up, its
// operstate is UP or UNKNOWN (netif_oper_up()) and it has carrier.
func (l Link) WireFlags() uint32 {
	f := l.Flags&^(IFF_RUNNING|IFF_LOWER_UP|IFF_PROMISC|IFF_ALLMULTI) | l.GFlags&(IFF_PROMISC|IFF_ALLMULTI)
	if l.Flags&IFF_UP != 0 {
		if l.OperState == OperUnknown || l.OperState == OperUp {
			f |= IFF_RUNNING
		}
		if l.Carrier {
			f |= IFF_LOWER_UP
		}
	}
	return f
}

// WireOperState is IFLA_OPERSTATE: dev->operstate while the device is
// running, else IF_OPER_DOWN (rtnl_fill_ifinfo()).
func (l Link) WireOperState() uint8 {
	if l.Flags&IFF_UP == 0 {
		return OperDown
	}
	return l.OperState
}

// Loopback constants, as a fresh kernel namespace has them (lo is down).
const (
	LoopbackIndex  = 1
	arphrdLoopback = 772
	iffLoopback    = IFF_LOOPBACK
)

// inet4Defaults is lo's IFLA_INET_CONF (IPV4_DEVCONF_* 1..33, in order).
// A new namespace copies net.ipv4.conf.default from the initial namespace
// (net.core.devconf_inherit_init_net = 0); these are the kernel's built-in
// defaults (ipv4_devconf_dflt), which is what an untuned host has. lo then
// gets NOXFRM and NOPOLICY (inetdev_init()).
var inet4Defaults = []int32{
	0, 0, 0, 1, 1, 1, 1, 0, // FORWARDING MC_FORWARDING PROXY_ARP ACCEPT_REDIRECTS SECURE_REDIRECTS SEND_REDIRECTS SHARED_MEDIA RP_FILTER
	1, 0, 0, 0, 0, 0, 1, 1, // ACCEPT_SOURCE_ROUTE BOOTP_RELAY LOG_MARTIANS TAG ARPFILTER MEDIUM_ID NOXFRM NOPOLICY
	0, 0, 0, 0, 0, 0, 0, 0, // FORCE_IGMP_VERSION ARP_ANNOUNCE ARP_IGNORE PROMOTE_SECONDARIES ARP_ACCEPT ARP_NOTIFY ACCEPT_LOCAL SRC_VMARK
	0, 0, 10000, 1000, 0, 0, 0, 0, // PROXY_ARP_PVLAN ROUTE_LOCALNET IGMPV2/IGMPV3_UNSOLICITED_REPORT_INTERVAL IGNORE_ROUTES_WITH_LINKDOWN DROP_UNICAST_IN_L2_MULTICAST DROP_GRATUITOUS_ARP BC_FORWARDING
	1, // ARP_EVICT_NOCARRIER
}

// inet6Defaults is lo's IFLA_INET6_CONF (DEVCONF_* 0..59): a new namespace
// resets IPv6 to the built-in defaults (ipv6_devconf_dflt), and addrconf
// gives lo mtu6 = its MTU and use_tempaddr = -1.
var inet6Defaults = []int32{
	0, 64, 65536, 1, 1, 1, 1, -1, // FORWARDING HOPLIMIT MTU6 ACCEPT_RA ACCEPT_REDIRECTS AUTOCONF DAD_TRANSMITS RTR_SOLICITS
	4000, 1000, -1, 604800, 86400, 3, 600, 16, // RTR_SOLICIT_INTERVAL RTR_SOLICIT_DELAY USE_TEMPADDR TEMP_VALID_LFT TEMP_PREFERED_LFT REGEN_MAX_RETRY MAX_DESYNC_FACTOR MAX_ADDRESSES
	0, 1, 1, 1, 60000, 0, 0, 0, // FORCE_MLD_VERSION ACCEPT_RA_DEFRTR ACCEPT_RA_PINFO ACCEPT_RA_RTR_PREF RTR_PROBE_INTERVAL ACCEPT_RA_RT_INFO_MAX_PLEN PROXY_NDP OPTIMISTIC_DAD
	0, 0, 0, -1, 0, 0, 10000, 1000, // ACCEPT_SOURCE_ROUTE MC_FORWARDING DISABLE_IPV6 ACCEPT_DAD FORCE_TLLAO NDISC_NOTIFY MLDV1/MLDV2_UNSOLICITED_REPORT_INTERVAL
	1, 0, 0, 1, 0, 0, 1, 0, // SUPPRESS_FRAG_NDISC ACCEPT_RA_FROM_LOCAL USE_OPTIMISTIC ACCEPT_RA_MTU STABLE_SECRET USE_OIF_ADDRS_ONLY ACCEPT_RA_MIN_HOP_LIMIT IGNORE_ROUTES_WITH_LINKDOWN
	0, 0, 0, 3600000, 0, 0, 1, 0, // DROP_UNICAST_IN_L2_MULTICAST DROP_UNSOLICITED_NA KEEP_ADDR_ON_DOWN RTR_SOLICIT_MAX_INTERVAL SEG6_ENABLED SEG6_REQUIRE_HMAC ENHANCED_DAD ADDR_GEN_MODE
	0, 0, 0, 0, 1024, 0, 65535, -1, // DISABLE_POLICY ACCEPT_RA_RT_INFO_MIN_PLEN NDISC_TCLASS RPL_SEG_ENABLED RA_DEFRTR_METRIC IOAM6_ENABLED IOAM6_ID IOAM6_ID_WIDE
	1, 0, 0, 0, // NDISC_EVICT_NOCARRIER ACCEPT_UNTRACKED_NA ACCEPT_RA_MIN_LFT FORCE_FORWARDING
}

// baseReachableJiffies is BASE_REACHABLE_TIME of nd_tbl (30 s), in jiffies of
// HZ=250, the kernel this emulates (jiffies_to_msecs() then reports
// multiples of 4 ms).
const (
	baseReachableJiffies = 30 * 250
	msPerJiffy           = 4
)

// randReachableTime is neigh_rand_reach_time(): uniform in [base/2,
// 3*base/2). The kernel draws it when the inet6_dev is created and again
// every 300 s (neigh_periodic_work()); nlemu keeps the first draw, which
// is within the same range.
func randReachableTime() uint32 {
	return uint32(rand.N(baseReachableJiffies)+baseReachableJiffies/2) * msPerJiffy
}

// nowCentis is jiffies since boot in 1/100 s (cstamp_delta()), read from
// CLOCK_MONOTONIC.
func nowCentis() uint32 {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) != nil {
		return 0
	}
	return uint32(ts.Sec*100 + ts.Nsec/10_000_000)
}

// zeroMAC is lo's hardware and broadcast address (shared, never modified).
var zeroMAC = make([]byte, 6)

// loopback returns lo as loopback_setup() and a fresh namespace make it.
func loopback() Link {
	now := nowCentis()
	return Link{
		Index: LoopbackIndex, Name: "lo", Type: arphrdLoopback, Flags: iffLoopback,
		MTU: 65536, TxQueueLen: 1000, OperState: OperUnknown,
		NumTxQueues: 1, NumRxQueues: 1,
		GSOMaxSegs: 65535, GSOMaxSize: 65536, GROMaxSize: 65536,
		GSOIPv4MaxSize: 65536, GROIPv4MaxSize: 65536,
		TSOMaxSize: 524280, TSOMaxSegs: 65535, // GSO_LEGACY_MAX_SIZE*8-8 (loopback_setup())
		NetnsImmutable: true, Carrier: true,
		Address: zeroMAC, Broadcast: zeroMAC,
		Qdisc:     "noop", // until the first dev_activate()
		Inet4Conf: inet4Defaults,
		Inet6: Inet6Dev{
			Tstamp: now, ReachableTime: randReachableTime(), RetransTime: 1000,
			Conf: inet6Defaults, MCStamp: now,
		},
	}
}

// Devices is the device table of one namespace.
type Devices struct {
	mu    sync.Mutex             // serializes changes
	links atomic.Pointer[[]Link] // immutable snapshot, in ifindex order
	// lastIndex is the last ifindex handed out (dev_index_reserve():
	// xa_alloc_cyclic() from the one after it); guarded by mu.
	lastIndex int32
	rnd       *source // what the kernel draws at random (rand.go); nil: crypto/rand
}

// New returns the devices of a fresh namespace: lo, down, like the kernel's.
func New() *Devices {
	d := &Devices{lastIndex: LoopbackIndex}
	links := []Link{loopback()}
	d.links.Store(&links)
	return d
}

// IndexByName returns the ifindex of the device called name, or 0.
func (d *Devices) IndexByName(name []byte) int32 {
	for _, l := range *d.links.Load() {
		if l.Name == string(name) {
			return l.Index
		}
	}
	return 0
}

// ByIndex returns the device with ifindex i.
func (d *Devices) ByIndex(i int32) (Link, bool) {
	for _, l := range *d.links.Load() {
		if l.Index == i {
			return l, true
		}
	}
	return Link{}, false
}

// Links returns every device in ifindex order (a snapshot the caller must
// not modify).
func (d *Devices) Links() []Link { return *d.links.Load() }

// FlagChange is the outcome of a ChangeFlags that changed something.
type FlagChange struct {
	// Changed is the dev->flags bits that changed (the ifi_change of the
	// RTM_NEWLINK that __dev_notify_flags() sends).
	Changed uint32
	// Notified is the device as rtmsg_ifinfo() sees it: flags changed and
	// the qdisc attached, before the NETDEV_UP / NETDEV_DOWN notifiers ran.
	Notified Link
	// After is the device once addrconf has handled NETDEV_UP / NETDEV_DOWN.
	After Link
	// Up is true when the device came up (addrconf then announces its
	// inet6 state with inet6_ifinfo_notify()).
	Up bool
}

// ChangeFlags sets the device's IFF_UP to that of flags (other bits are
// ignored), through Set: dev_change_flags(). It returns nil when nothing
// changed (the kernel then sends no notification), and false when there
// is no device with that index. Set's events are dropped: callers that
// announce changes use Set.
func (d *Devices) ChangeFlags(index int32, flags uint32) (*FlagChange, bool) {
	if _, ok := d.ByIndex(index); !ok {
		return nil, false
	}
	evs, err := d.Set(index, &rtnl.LinkConf{Index: index, Flags: flags & IFF_UP, Change: IFF_UP})
	if err != nil {
		return nil, true
	}
	var ch *FlagChange
	for _, ev := range evs {
		for _, n := range ev.Msgs {
			if ch == nil && n.Kind == NotifyNewLink && n.Change&IFF_UP != 0 {
				ch = &FlagChange{Changed: n.Change, Notified: n.Link, Up: n.Link.Flags&IFF_UP != 0}
			}
		}
	}
	if ch == nil {
		return nil, true
	}
	ch.After, _ = d.ByIndex(index)
	return ch, true
}
