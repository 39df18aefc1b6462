package nsmgr

import (
	"syscall"

	"github.com/nlemu/nlemu/netdev"
	"github.com/nlemu/nlemu/rtnl"
)

// Multicast groups of link notifications.
const (
	rtnlgrpLink       = rtnl.RTNLGRP_LINK
	rtnlgrpIPv6Ifinfo = 12 // RTNLGRP_IPV6_IFINFO
	afBridge          = 7  // AF_BRIDGE
)

// linkMsg is the typed message of a device, as rtnl_fill_ifinfo() and
// inet6_fill_ifinfo() see it.
func linkMsg(l netdev.Link) *rtnl.LinkMsg {
	m := &rtnl.LinkMsg{
		Type: l.Type, Index: l.Index, Flags: l.WireFlags(), Name: []byte(l.Name),
		TxQueueLen: l.TxQueueLen, OperState: l.WireOperState(), NetnsImmutable: l.NetnsImmutable,
		MTU: l.MTU, MinMTU: l.MinMTU, MaxMTU: l.MaxMTU,
		NumTxQueues: l.NumTxQueues, NumRxQueues: l.NumRxQueues,
		GSOMaxSegs: l.GSOMaxSegs, GSOMaxSize: l.GSOMaxSize, GROMaxSize: l.GROMaxSize,
		GSOIPv4MaxSize: l.GSOIPv4MaxSize, GROIPv4MaxSize: l.GROIPv4MaxSize,
		TSOMaxSize: l.TSOMaxSize, TSOMaxSegs: l.TSOMaxSegs,
		Carrier: l.Carrier, Address: l.Address, Broadcast: l.Broadcast,
		Qdisc: l.Qdisc, Inet4Conf: l.Inet4Conf,
		Inet6: &rtnl.Inet6Info{
			Flags: l.Inet6.Flags, Tstamp: l.Inet6.Tstamp,
			ReachableTime: l.Inet6.ReachableTime, RetransTime: l.Inet6.RetransTime,
			Conf: l.Inet6.Conf, AddrGenMode: l.Inet6.AddrGenMode,
		},
	}
	return m
}

// getLink answers RTM_GETLINK by index or name (rtnl_getlink()): one
// RTM_NEWLINK unicast, or ENODEV; EINVAL (without text) when the request
// names no device.
func (ns *Namespace) getLink(req *Request) *rtnl.Error {
	q, _, err := rtnl.DecodeLinkRequest(req.Msg, rtnl.LinkGet)
	if err != nil {
		return err
	}
	l, err := ns.findLink(q, syscall.EINVAL)
	if err != nil {
		return err
	}
	if req.Self != nil {
		req.Self.Deliver(rtnl.AppendLink(nil, 0, req.Msg.Header.Sequence, req.PortID, linkMsg(l), q.ExtMask))
	}
	return nil
}

// findLink looks the device of a request up by ifindex, else by name
// (rtnl_dev_get()); noKey is the errno when the request names neither.
func (ns *Namespace) findLink(q *rtnl.LinkMsg, noKey syscall.Errno) (netdev.Link, *rtnl.Error) {
	var (
		l  netdev.Link
		ok bool
	)
	switch {
	case q.Index > 0:
		l, ok = ns.devs.ByIndex(q.Index)
	case q.HasName:
		l, ok = ns.devs.ByIndex(ns.devs.IndexByName(q.Name))
	default:
		return l, rtnl.Errno(noKey)
	}
	if !ok {
		return l, rtnl.Errno(syscall.ENODEV)
	}
	return l, nil
}

// iffChangeable are the ifi_flags bits dev_change_flags() acts on
// (__dev_change_flags(): IFF_UP by opening or closing the device,
// IFF_PROMISC and IFF_ALLMULTI as counters, the rest as plain bits).
const iffChangeable = 0x1 | 0x4 | 0x20 | 0x80 | 0x100 | 0x200 | 0x1000 | 0x2000 | 0x4000 | 0x8000

// setLink is RTM_NEWLINK and RTM_SETLINK on an existing device
// (rtnl_newlink() / rtnl_setlink() → do_setlink()). Of what do_setlink()
// can change nlemu implements the IFF_UP flag, with the notifications the
// kernel sends: the RTM_NEWLINK of __dev_notify_flags() to RTNLGRP_LINK,
// and when the device comes up addrconf's AF_INET6 RTM_NEWLINK to
// RTNLGRP_IPV6_IFINFO. Other attributes and flags are refused with
// EOPNOTSUPP rather than ignored; creating devices is not implemented.
func (ns *Namespace) setLink(req *Request) *rtnl.Error {
	m := req.Msg
	q, unsupported, err := rtnl.DecodeLinkRequest(m, rtnl.LinkSet)
	if err != nil {
		return err
	}
	flags := uint16(m.Header.Flags)
	newlink := uint16(m.Header.Type) == rtnl.RTM_NEWLINK
	if newlink && q.Index < 0 {
		return rtnl.Errorf(syscall.EINVAL, "ifindex can't be negative")
	}
	// rtnl_setlink() wants an index or a name (EINVAL); rtnl_newlink()
	// answers ENODEV for a device that does not exist without
	// NLM_F_CREATE, and needs a link kind to create one.
	noKey := syscall.EINVAL
	if newlink {
		noKey = syscall.ENODEV
	}
	l, err := ns.findLink(q, noKey)
	if err != nil {
		if newlink && err.Errno == syscall.ENODEV && flags&rtnl.NLM_F_CREATE != 0 {
			return rtnl.Errorf(syscall.EOPNOTSUPP, "Unknown device type")
		}
		return err
	}
	if newlink && flags&rtnl.NLM_F_EXCL != 0 {
		return rtnl.Errno(syscall.EEXIST)
	}
	if newlink && flags&rtnl.NLM_F_REPLACE != 0 {
		return rtnl.Errno(syscall.EOPNOTSUPP)
	}
	if unsupported != 0 {
		return &rtnl.Error{Errno: syscall.EOPNOTSUPP, Msg: "nlemu: this link attribute is not supported yet", Offset: unsupported}
	}
	if q.Flags == 0 && q.Change == 0 {
		return nil // do_setlink(): no flags to change
	}
	// rtnl_dev_combine_flags(): ifi_change selects the bits to take from
	// ifi_flags; 0 takes them all.
	want := q.Flags
	if q.Change != 0 {
		want = (q.Flags & q.Change) | (l.Flags &^ q.Change)
	}
	if (want^l.Flags)&iffChangeable&^netdev.IFF_UP != 0 {
		return rtnl.Errorf(syscall.EOPNOTSUPP, "nlemu: only IFF_UP can be changed yet")
	}
	ch, ok := ns.devs.ChangeFlags(l.Index, want)
	if !ok {
		return rtnl.Errno(syscall.ENODEV)
	}
	if ch != nil {
		ns.notifyLink(ch)
	}
	return nil
}

// notifyLink sends what the kernel sends for a flag change, in its order:
// rtmsg_ifinfo(RTM_NEWLINK, dev, changes) from __dev_notify_flags() (no
// requester: nlmsg_pid and nlmsg_seq 0, never echoed), then, for NETDEV_UP,
// addrconf_notify()'s inet6_ifinfo_notify().
func (ns *Namespace) notifyLink(ch *netdev.FlagChange) {
	if ns.hasListeners(rtnlgrpLink, nil) {
		m := linkMsg(ch.Notified)
		m.Change = ch.Changed
		ns.notify(rtnlgrpLink, rtnl.AppendLink(nil, 0, 0, 0, m, 0), nil)
	}
	if ch.Up && ns.hasListeners(rtnlgrpIPv6Ifinfo, nil) {
		ns.notify(rtnlgrpIPv6Ifinfo, rtnl.AppendInet6Link(nil, 0, 0, 0, linkMsg(ch.After)), nil)
	}
}

// dumpLinks is RTM_GETLINK with NLM_F_DUMP. The family picks the handler
// as rtnetlink_rcv_msg() does: AF_INET6 has inet6_dump_ifinfo() (the
// AF_INET6 format), AF_BRIDGE rtnl_bridge_getlink() (lo is no bridge port:
// nothing), every other family falls back to rtnl_dump_ifinfo().
func (ns *Namespace) dumpLinks(req *Request) Dumper {
	q, err := rtnl.DecodeLinkDump(req.Msg, req.Strict)
	if err != nil {
		return errDump{err}
	}
	d := &linkDump{links: ns.devs.Links(), seq: req.Msg.Header.Sequence, pid: req.PortID, extMask: q.ExtMask, family: q.Family}
	// link_master_filtered(): lo is nobody's port, so a master filter
	// leaves nothing (inet6_dump_ifinfo() has no filters).
	if q.Family == afBridge || (q.Master != 0 && q.Family != rtnl.AF_INET6) {
		d.links = nil
	}
	return d
}

type linkDump struct {
	links    []netdev.Link
	i        int
	seq, pid uint32
	extMask  uint32
	family   uint8
}

func (d *linkDump) Err() *rtnl.Error { return nil }

func (d *linkDump) Fill(dst []byte, limit int) ([]byte, bool) {
	for ; d.i < len(d.links); d.i++ {
		n := len(dst)
		m := linkMsg(d.links[d.i])
		if d.family == rtnl.AF_INET6 {
			dst = rtnl.AppendInet6Link(dst, rtnl.NLM_F_MULTI, d.seq, d.pid, m)
		} else {
			dst = rtnl.AppendLink(dst, rtnl.NLM_F_MULTI, d.seq, d.pid, m, d.extMask)
		}
		if len(dst) > limit && n > 0 {
			return dst[:n], false
		}
	}
	return dst, true
}
