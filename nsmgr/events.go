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
		ns.rulesLinkEvent(ev)
		addrLinkEvent(ns, ev)
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
