package nsmgr

import (
	"github.com/nlemu/nlemu/netdev"
	"github.com/nlemu/nlemu/rtnl"
)

// Link events: a device change in netdev returns the steps the kernel goes
// through (netdev.Event, in order); applyLinkEvents sends each step's
// RTNLGRP_LINK messages and then hands the step to the rules (the
// kernel's fib_rules_event(): attach_rules / detach_rules) and to the
// addresses and routes (addrLinkEvent: fib_netdev_event(),
// addrconf_notify()), so that the messages of all three go out in the
// kernel's order. It runs with RTNL held, after netdev has published the
// change, as the kernel's notifier chain runs under RTNL.

// addrLinkEvent applies one link event to the namespace's addresses and
// routes, sending their notifications. It is nsmgr/addrs.go's hook: that
// file sets it in an init function (addrLinkEvent = (*Namespace).xxx); until
// then link events leave addresses and routes alone.
var addrLinkEvent = func(ns *Namespace, ev netdev.Event) {}

// applyLinkEvents applies evs in order.
func (ns *Namespace) applyLinkEvents(evs []netdev.Event) {
	for _, ev := range evs {
		for _, n := range ev.Msgs {
			ns.sendLinkNotify(n)
		}
		if ev.Kind == netdev.EvRegister {
			ns.sendNetconfNotify(ev)
		}
		ns.rulesLinkEvent(ev)
		addrLinkEvent(ns, ev)
		if ev.Kind == netdev.EvUnregister {
			ns.sendNetconfNotify(ev)
		}
	}
}

// rulesLinkEvent is fib_rules_event() for every rule family.
func (ns *Namespace) rulesLinkEvent(ev netdev.Event) {
	name := []byte(ev.Link.Name)
	for _, o := range ns.rules {
		switch ev.Kind {
		case netdev.EvRegister:
			o.DevRegistered(name, ev.Link.Index)
		case netdev.EvRename:
			o.DevRenamed(name, ev.Link.Index)
		case netdev.EvUnregister:
			o.DevUnregistered(ev.Link.Index)
		}
	}
}

const (
	rtnlgrpIPv4Netconf = 24 // RTNLGRP_IPV4_NETCONF
	rtnlgrpIPv6Netconf = 25 // RTNLGRP_IPV6_NETCONF
)

// sendNetconfNotify sends the netconf messages of a device's registration
// and unregistration, before its RTM_NEWLINK / RTM_DELLINK as the kernel's
// netdev notifiers do (and, going, after its addresses and routes: the
// families' NETDEV_UNREGISTER handlers remove those first): an RTM_NEWNETCONF with every attribute for each
// family the device has state in (devinet_sysctl_register() and
// addrconf_sysctl_register() → inet_netconf_notify_devconf(NETCONFA_ALL)),
// and an RTM_DELNETCONF of the ifindex alone when it goes
// (devinet_sysctl_unregister(), addrconf_sysctl_unregister()). IPv4 first,
// then IPv6; a family without state (an MTU below its minimum) sends
// nothing.
func (ns *Namespace) sendNetconfNotify(ev netdev.Event) {
	if ev.Kind != netdev.EvRegister && ev.Kind != netdev.EvUnregister {
		return
	}
	for _, f := range [...]struct {
		family uint8
		group  uint32
		conf   []int32
	}{
		{rtnl.AF_INET, rtnlgrpIPv4Netconf, ev.Link.Inet4Conf},
		{rtnl.AF_INET6, rtnlgrpIPv6Netconf, ev.Link.Inet6.Conf},
	} {
		if f.conf == nil || !ns.hasListeners(f.group, nil) {
			continue
		}
		var b []byte
		if ev.Kind == netdev.EvRegister {
			b = rtnl.AppendNetconf(nil, 0, 0, 0, netconfOf(f.family, ev.Link.Index, f.conf))
		} else {
			b = rtnl.AppendDelNetconf(nil, f.family, ev.Link.Index)
		}
		ns.notify(f.group, b, nil)
	}
}

// sendLinkNotify sends one RTNLGRP_LINK message (rtmsg_ifinfo() and
// friends: no requester, nlmsg_pid and nlmsg_seq 0).
func (ns *Namespace) sendLinkNotify(n netdev.Notify) {
	if !ns.hasListeners(rtnlgrpLink, nil) {
		return
	}
	var b []byte
	switch n.Kind {
	case netdev.NotifyNewLink:
		m := linkMsg(n.Link)
		m.Change = n.Change
		if n.Features {
			m.Event = rtnl.IFLA_EVENT_FEATURES
		}
		b = rtnl.AppendLink(nil, 0, 0, 0, m, 0)
	case netdev.NotifyDelLink:
		m := linkMsg(n.Link)
		m.Change = n.Change
		// NETDEV_UNREGISTER freed the inet and inet6 state: the
		// families have nothing to fill (an empty IFLA_AF_SPEC).
		m.Inet4Conf, m.Inet6, m.EmptyAFSpec = nil, nil, true
		b = rtnl.AppendDelLink(nil, 0, 0, 0, m)
	case netdev.NotifyBridge:
		b = rtnl.AppendBridgeLink(nil, 0, 0, 0, linkMsg(n.Link), n.Del)
	default:
		return
	}
	ns.notify(rtnlgrpLink, b, nil)
}
