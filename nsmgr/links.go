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
		Group: l.Group, Promiscuity: l.Promiscuity, Allmulti: l.Allmulti,
		NumTxQueues: l.NumTxQueues, NumRxQueues: l.NumRxQueues,
		GSOMaxSegs: l.GSOMaxSegs, GSOMaxSize: l.GSOMaxSize, GROMaxSize: l.GROMaxSize,
		GSOIPv4MaxSize: l.GSOIPv4MaxSize, GROIPv4MaxSize: l.GROIPv4MaxSize,
		TSOMaxSize: l.TSOMaxSize, TSOMaxSegs: l.TSOMaxSegs,
		Master:  uint32(l.Master),
		Carrier: l.Carrier, CarrierChanges: l.CarrierUp + l.CarrierDown,
		CarrierUpCnt: l.CarrierUp, CarrierDnCnt: l.CarrierDown,
		Address: l.Address, Broadcast: l.Broadcast,
		Qdisc: l.Qdisc, Inet4Conf: l.Inet4Conf,
		Inet6: &rtnl.Inet6Info{
			Flags: l.Inet6.Flags, Tstamp: l.Inet6.Tstamp,
			ReachableTime: l.Inet6.ReachableTime, RetransTime: l.Inet6.RetransTime,
			Conf: l.Inet6.Conf, AddrGenMode: l.Inet6.AddrGenMode,
		},
		Kind: l.Kind, Bridge: l.Bridge, BridgePort: l.Port, Alias: l.Alias,
	}
	if l.Kind == netdev.KindVeth {
		m.IfLink, m.HasIfLink = l.Peer, true
	}
	if l.Inet6.Conf == nil {
		// addrconf_ifdown(dev, true) for an MTU below 1280 freed the
		// inet6_dev: inet6_fill_link_af() has nothing (no addrgenmode in
		// `ip -d link show`).
		m.Inet6 = nil
	}
	// rtnl_fill_link_af() opens IFLA_AF_SPEC before asking the families:
	// with neither (a dummy below 68) it stays, empty.
	m.EmptyAFSpec = m.Inet4Conf == nil && m.Inet6 == nil
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
		return withWarning(q.Warning, err)
	}
	if req.Self != nil {
		req.Self.Deliver(rtnl.AppendLink(nil, 0, req.Msg.Header.Sequence, req.PortID, linkMsg(l), q.ExtMask))
	}
	return withWarning(q.Warning, nil)
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

// findConf is findLink for a change request: by ifindex, else by
// IFLA_ALT_IFNAME or IFLA_IFNAME (rtnl_dev_get()); named is false when the
// request names no device.
func (ns *Namespace) findConf(q *rtnl.LinkConf) (l netdev.Link, found, named bool) {
	switch {
	case q.Index > 0:
		l, found = ns.devs.ByIndex(q.Index)
		return l, found, true
	case q.HasAltName:
		l, found = ns.devs.ByIndex(ns.devs.IndexByName(q.AltName))
		return l, found, true
	case q.HasName:
		l, found = ns.devs.ByIndex(ns.devs.IndexByName(q.Name))
		return l, found, true
	}
	return l, false, false
}

// unsupportedAttr is the refusal of an attribute nlemu does not implement:
// EOPNOTSUPP pointing at it, rather than a change half applied.
func unsupportedAttr(off uint32) *rtnl.Error {
	return &rtnl.Error{Errno: syscall.EOPNOTSUPP, Msg: "nlemu: this link attribute is not supported yet", Offset: off}
}

// newLink is rtnl_newlink(): a change of an existing device
// (rtnl_changelink() → do_setlink()), or with NLM_F_CREATE a new one
// (rtnl_newlink_create()). It runs with RTNL held (the dispatch row's
// lockRTNL), as the kernel's.
func (ns *Namespace) newLink(req *Request) *rtnl.Error {
	q, err := rtnl.DecodeLinkConf(req.Msg)
	if err != nil {
		return err
	}
	return withWarning(q.Warning, ns.newLinkConf(req, q))
}

// newLinkConf is newLink on its decoded request.
func (ns *Namespace) newLinkConf(req *Request, q *rtnl.LinkConf) *rtnl.Error {
	m := req.Msg
	flags := uint16(m.Header.Flags)
	if q.Index < 0 {
		return rtnl.Errorf(syscall.EINVAL, "ifindex can't be negative")
	}
	l, found, named := ns.findConf(q)
	if found {
		if flags&rtnl.NLM_F_EXCL != 0 {
			return rtnl.Errno(syscall.EEXIST)
		}
		if flags&rtnl.NLM_F_REPLACE != 0 {
			return rtnl.Errno(syscall.EOPNOTSUPP)
		}
		// rtnl_changelink(): IFLA_INFO_DATA needs the device's own kind;
		// with it, the kind's changelink (bridge options), which nlemu
		// does not implement yet.
		if q.HasInfoData {
			if q.Kind != l.Kind {
				return rtnl.Errno(syscall.EOPNOTSUPP)
			}
			if q.Bridge == nil {
				return rtnl.Errorf(syscall.EOPNOTSUPP, "nlemu: changing "+l.Kind+" options is not supported yet")
			}
		}
		if q.AFSpecErr != nil {
			return q.AFSpecErr // validate_linkmsg()
		}
		if q.Unsupported != 0 {
			return unsupportedAttr(q.Unsupported)
		}
		q.Index = l.Index
		evs, err := ns.devs.Set(l.Index, q)
		ns.applyLinkEvents(evs)
		return err
	}
	if flags&rtnl.NLM_F_CREATE == 0 {
		// No device and no NLM_F_CREATE: ENODEV, unless the request names
		// no device but a group (rtnl_group_changelink()).
		if named || !q.HasGroup {
			return rtnl.Errno(syscall.ENODEV)
		}
		if q.AFSpecErr != nil {
			return q.AFSpecErr // validate_linkmsg()
		}
		if q.Unsupported != 0 {
			return unsupportedAttr(q.Unsupported)
		}
		evs, err := ns.devs.SetGroup(q.Group, q)
		ns.applyLinkEvents(evs)
		return err
	}
	if !netdev.KnownKind(q.Kind) {
		return netdev.ErrUnknownKind()
	}
	if q.AFSpecErr != nil {
		return q.AFSpecErr // validate_linkmsg()
	}
	if q.Unsupported != 0 {
		return unsupportedAttr(q.Unsupported)
	}
	if err := ns.checkLinkAdd(q.Kind); err != nil {
		return err
	}
	evs, err := ns.devs.Create(q.Kind, q)
	ns.applyLinkEvents(evs)
	return err
}

// setLink is rtnl_setlink(): do_setlink() on the device the request
// names by index or name; EINVAL when it names none.
func (ns *Namespace) setLink(req *Request) *rtnl.Error {
	if uint16(req.Msg.Header.Type) == rtnl.RTM_NEWLINK {
		return ns.newLink(req) // the RTM_NEWLINK row until it names newLink itself
	}
	q, err := rtnl.DecodeLinkConf(req.Msg)
	if err != nil {
		return err
	}
	return withWarning(q.Warning, ns.setLinkConf(req, q))
}

// setLinkConf is setLink on its decoded request.
func (ns *Namespace) setLinkConf(req *Request, q *rtnl.LinkConf) *rtnl.Error {
	l, found, named := ns.findConf(q)
	if !named {
		return rtnl.Errno(syscall.EINVAL)
	}
	if !found {
		return rtnl.Errno(syscall.ENODEV)
	}
	if q.AFSpecErr != nil {
		return q.AFSpecErr // validate_linkmsg()
	}
	if q.Unsupported != 0 {
		return unsupportedAttr(q.Unsupported)
	}
	q.Index = l.Index
	evs, err := ns.devs.Set(l.Index, q)
	ns.applyLinkEvents(evs)
	return err
}

// delLink is rtnl_dellink(): by index or name, else a whole IFLA_GROUP;
// EINVAL when the request names neither, ENODEV when it does not exist,
// EOPNOTSUPP for lo.
func (ns *Namespace) delLink(req *Request) *rtnl.Error {
	q, err := rtnl.DecodeLinkConf(req.Msg)
	if err != nil {
		return err
	}
	return withWarning(q.Warning, ns.delLinkConf(req, q))
}

// delLinkConf is delLink on its decoded request.
func (ns *Namespace) delLinkConf(req *Request, q *rtnl.LinkConf) *rtnl.Error {
	l, found, named := ns.findConf(q)
	if !named {
		if q.HasGroup {
			evs, err := ns.devs.DeleteGroup(q.Group) // rtnl_group_dellink()
			ns.applyLinkEvents(evs)
			return err
		}
		return rtnl.Errno(syscall.EINVAL)
	}
	if !found {
		return rtnl.Errno(syscall.ENODEV)
	}
	evs, err := ns.devs.Delete(l.Index)
	ns.applyLinkEvents(evs)
	return err
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
	d := &linkDump{seq: req.Msg.Header.Sequence, pid: req.PortID, extMask: q.ExtMask, family: q.Family}
	all := ns.devs.Links()
	switch {
	case q.Family == afBridge:
		// rtnl_bridge_getlink(): each bridge port through its master's
		// ndo_bridge_getlink() (br_getlink()); a bridge itself only
		// answers VLAN filter masks, which nlemu has nothing for.
		for _, l := range all {
			if l.Port != nil {
				d.links = append(d.links, l)
			}
		}
	case q.Family == rtnl.AF_INET6:
		d.links = all // inet6_dump_ifinfo() has no filters
	default:
		// rtnl_dump_ifinfo(): link_master_filtered() and
		// link_kind_filtered(); a kind without rtnl_link_ops filters
		// nothing (linkinfo_to_kind_ops() finds none).
		filterKind := q.Kind != "" && (netdev.KnownKind(q.Kind))
		if q.Master != 0 || filterKind {
			d.flags = rtnl.NLM_F_DUMP_FILTERED
		}
		for _, l := range all {
			if masterFiltered(l, int32(q.Master)) || (filterKind && l.Kind != q.Kind) {
				continue
			}
			d.links = append(d.links, l)
		}
	}
	return d
}

type linkDump struct {
	links    []netdev.Link
	i        int
	seq, pid uint32
	extMask  uint32
	family   uint8
	flags    uint16 // NLM_F_DUMP_FILTERED when a filter applied
}

// masterFiltered is link_master_filtered(): -1 asks for devices without
// a master.
func masterFiltered(l netdev.Link, master int32) bool {
	switch master {
	case 0:
		return false
	case -1:
		return l.Master != 0
	}
	return l.Master != master
}

func (d *linkDump) Err() *rtnl.Error { return nil }

func (d *linkDump) Fill(dst []byte, limit int) ([]byte, bool) {
	for ; d.i < len(d.links); d.i++ {
		n := len(dst)
		m := linkMsg(d.links[d.i])
		if d.family == rtnl.AF_INET6 {
			dst = rtnl.AppendInet6Link(dst, rtnl.NLM_F_MULTI, d.seq, d.pid, m)
		} else if d.family == afBridge {
			dst = rtnl.AppendBridgeLink(dst, rtnl.NLM_F_MULTI, d.seq, d.pid, m, false)
		} else {
			dst = rtnl.AppendLink(dst, rtnl.NLM_F_MULTI|d.flags, d.seq, d.pid, m, d.extMask)
		}
		if len(dst) > limit && n > 0 {
			return dst[:n], false
		}
	}
	return dst, true
}
