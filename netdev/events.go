package netdev

// EventKind is what happened to a device: the netdevice notifier chain's
// NETDEV_* event, or the rtnetlink message the kernel sends for it.
type EventKind uint8

// Event kinds, in the order a device lives through them.
const (
	// EvNone is a step that only sends messages (Event.Msgs): an
	// RTM_NEWLINK of rtnetlink_event() for NETDEV_CHANGEMTU,
	// NETDEV_CHANGEUPPER and the like, whose effects on routes the
	// dedicated kinds below carry.
	EvNone EventKind = iota
	// EvRegister is NETDEV_REGISTER: the device exists and has its name
	// and ifindex (register_netdevice()). Rules bound to its name attach
	// (attach_rules()). No message of its own: rtnl_newlink() announces the
	// device afterwards with an EvNotify of Change ^0.
	EvRegister
	// EvUp is NETDEV_UP: the device was opened (dev_open() /
	// __dev_notify_flags()). Addresses and their routes come up
	// (fib_netdev_event(), addrconf_notify()).
	EvUp
	// EvDown is NETDEV_DOWN: the device was closed. IPv4 routes through it
	// are flushed (fib_disable_ip()), IPv6 addresses and routes removed
	// (addrconf_ifdown()).
	EvDown
	// EvChange is NETDEV_CHANGE: carrier or operstate changed
	// (linkwatch_do_dev() → netdev_state_change()). Link.Carrier tells
	// which way; routes with RTNH_F_LINKDOWN follow it (fib_sync_down_dev()
	// / fib_sync_up()).
	EvChange
	// EvRename is NETDEV_CHANGENAME: Link has the new name, OldName the old
	// one. Rules bound to the ifindex detach, rules naming the new name
	// attach (fib_rules_event()).
	EvRename
	// EvChangeMTU is NETDEV_CHANGEMTU (routes' MTU metrics follow).
	EvChangeMTU
	// EvChangeAddr is NETDEV_CHANGEADDR (the hardware address changed).
	EvChangeAddr
	// EvUnregister is NETDEV_UNREGISTER: the device is going away
	// (unregister_netdevice_many()); Link is its last state. Rules bound to
	// it detach (detach_rules()); its addresses and routes go.
	EvUnregister
)

var kindNames = [...]string{"none", "register", "up", "down", "change", "rename", "changemtu", "changeaddr", "unregister"}

func (k EventKind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "unknown"
}

// Event is one step of a device change, in the kernel's order. A change
// (create, delete, set) returns a list of events; nsmgr applies each in
// turn: it sends the rtnetlink messages the event carries (Notify), then
// hands the event to the rules and to the addresses and routes
// (nsmgr/events.go), so that every notification goes out in the order the
// kernel sends it.
type Event struct {
	Kind EventKind
	// Link is the device as the event sees it (for EvUnregister, its last
	// state before it went).
	Link Link
	// OldName is the name before an EvRename.
	OldName string
	// Msgs are the RTNLGRP_LINK messages this step sends, before the event
	// is applied to rules and addresses.
	Msgs []Notify
}

// NotifyKind is the message a Notify sends.
type NotifyKind uint8

const (
	// NotifyNewLink is rtmsg_ifinfo(RTM_NEWLINK, dev, Change).
	NotifyNewLink NotifyKind = iota + 1
	// NotifyDelLink is the RTM_DELLINK of unregister_netdevice_many()
	// (change ^0, no inet/inet6 state left: an empty IFLA_AF_SPEC).
	NotifyDelLink
	// NotifyBridge is the AF_BRIDGE RTM_NEWLINK / RTM_DELLINK of a bridge
	// port (br_ifinfo_notify()); Del selects RTM_DELLINK.
	NotifyBridge
)

// Notify is one RTNLGRP_LINK message: the device as it was when the kernel
// built the message and the ifi_change it carries.
type Notify struct {
	Kind   NotifyKind
	Link   Link
	Change uint32
	Del    bool // NotifyBridge: RTM_DELLINK
	// Features marks the RTM_NEWLINK of NETDEV_FEAT_CHANGE, which carries
	// IFLA_EVENT_FEATURES (rtmsg_ifinfo_event()).
	Features bool
}
