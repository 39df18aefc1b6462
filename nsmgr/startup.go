package nsmgr

// The dumps and gets a daemon's startup makes beyond links and rules
// (pyroute2, vishvananda/netlink, FRR zebra, bird, `ip monitor`, iproute2's
// show commands): each answers as the kernel's handler answers for a fresh
// namespace with only lo — an empty dump where the kernel has nothing to
// show, its content where it has some, its errno where it refuses.
//
// rtnetlink_rcv_msg() picks a handler by (family, type) and falls back to
// the PF_UNSPEC handler when the family has none; for RTM_GETADDR,
// RTM_GETROUTE and RTM_GETNETCONF the PF_UNSPEC dumpit is rtnl_dump_all(),
// which runs every family's dumpit in family order and stops at the first
// error. Without any handler the answer is EOPNOTSUPP. startupFamilies
// records which families register what, as measured on Linux 6.18 without
// the mpls, vxlan or bridge-vlan handlers loaded.

import (
	"syscall"

	"github.com/nlemu/nlemu/netdev"
	"github.com/nlemu/nlemu/rtnl"
)

// startupFamilies lists, per dump type, the families with their own dumpit;
// unspecAll marks types whose PF_UNSPEC dumpit is rtnl_dump_all() over
// those families, unspecOwn types whose only handler is PF_UNSPEC (any
// family), and a type with neither refuses other families.
var startupFamilies = map[uint16]struct {
	families  []uint8
	unspecAll bool
	unspecOwn bool
}{
	rtnl.RTM_GETROUTE:         {families: []uint8{rtnl.RTNL_FAMILY_IPMR, rtnl.RTNL_FAMILY_IP6MR}, unspecAll: true}, // AF_INET, AF_INET6: routes.go
	rtnl.RTM_GETNETCONF:       {families: []uint8{rtnl.AF_INET, rtnl.AF_INET6}, unspecAll: true},
	rtnl.RTM_GETNEIGH:         {families: []uint8{rtnl.AF_BRIDGE}, unspecOwn: true},
	rtnl.RTM_GETNEXTHOP:       {unspecOwn: true},
	rtnl.RTM_GETNEXTHOPBUCKET: {unspecOwn: true},
	rtnl.RTM_GETADDRLABEL:     {families: []uint8{rtnl.AF_INET6}},
	rtnl.RTM_GETMULTICAST:     {families: []uint8{rtnl.AF_INET, rtnl.AF_INET6}},
	rtnl.RTM_GETANYCAST:       {families: []uint8{rtnl.AF_INET6}},
	rtnl.RTM_GETSTATS:         {unspecOwn: true},
	rtnl.RTM_GETQDISC:         {unspecOwn: true},
	rtnl.RTM_GETTCLASS:        {unspecOwn: true},
	rtnl.RTM_GETTFILTER:       {unspecOwn: true},
	rtnl.RTM_GETCHAIN:         {unspecOwn: true},
	rtnl.RTM_GETACTION:        {unspecOwn: true},
	rtnl.RTM_GETNSID:          {unspecOwn: true},
	rtnl.RTM_GETMDB:           {families: []uint8{rtnl.AF_BRIDGE}},
}

// startupRows turns startupFamilies into dispatch rows: each family's own
// dumpit, the AF_UNSPEC rtnl_dump_all() or own dumpit, and the doits
// startupGet answers.
func startupRows() []row {
	var rows []row
	for typ, reg := range startupFamilies {
		for _, f := range reg.families {
			rows = append(rows, row{family: f, typ: typ, dumpit: startupDumpit(f, typ)})
		}
		switch {
		case reg.unspecAll:
			rows = append(rows, row{family: rtnl.AF_UNSPEC, typ: typ, flags: dumpAll})
		case reg.unspecOwn:
			rows = append(rows, row{family: rtnl.AF_UNSPEC, typ: typ, dumpit: startupDumpit(rtnl.AF_UNSPEC, typ)})
		}
	}
	// The doits startupGet answers: inet_netconf_get_devconf() and
	// inet6_netconf_get_devconf(), neigh_get() and the bridge's
	// rtnl_fdb_get(), rtm_get_nexthop(), ip6addrlbl_get(), rtnl_stats_get().
	for _, k := range []dispatchKey{
		{rtnl.RTM_GETNETCONF, rtnl.AF_INET}, {rtnl.RTM_GETNETCONF, rtnl.AF_INET6},
		{rtnl.RTM_GETNEIGH, rtnl.AF_UNSPEC}, {rtnl.RTM_GETNEIGH, rtnl.AF_BRIDGE},
		{rtnl.RTM_GETNEXTHOP, rtnl.AF_UNSPEC}, {rtnl.RTM_GETADDRLABEL, rtnl.AF_INET6},
		{rtnl.RTM_GETSTATS, rtnl.AF_UNSPEC},
	} {
		rows = append(rows, row{family: k.family, typ: k.typ, doit: (*Namespace).startupGet})
	}
	return rows
}

// startupDumpit is the dumpit of family for typ: dumpFamily into a batch.
func startupDumpit(family uint8, typ uint16) dumpitFunc {
	return func(ns *Namespace, req *Request) (Dumper, *rtnl.Error) {
		d := &msgDump{}
		ns.dumpFamily(req, typ, family, d)
		return d, nil
	}
}

// dumpFamily runs one family's dumpit of typ into d.
func (ns *Namespace) dumpFamily(req *Request, typ uint16, family uint8, d *msgDump) {
	m, strict := req.Msg, req.Strict
	seq, pid := m.Header.Sequence, req.PortID
	const multi = rtnl.NLM_F_MULTI
	switch typ {
	case rtnl.RTM_GETROUTE:
		// inet_dump_fib(), inet6_dump_fib(), ipmr's and ip6mr's
		// mr_rtm_dumproute(): no routes while lo is down.
		f, err := rtnl.CheckRouteDump(m, strict, ns.hasDevice)
		if d.err = err; err != nil {
			return
		}
		if f.Filtered {
			d.answer |= rtnl.NLM_F_DUMP_FILTERED
		}
		// A table filter names a table that must exist; an AF_UNSPEC dump
		// (rtnl_dump_all()) skips a family without it.
		if f.Table != 0 && !ns.tableExists(family, f.Table) && rtnl.RuleFamily(m) == family {
			switch family {
			case rtnl.AF_INET:
				d.err = rtnl.Errorf(syscall.ENOENT, "ipv4: FIB table does not exist")
			case rtnl.AF_INET6:
				d.err = rtnl.Errorf(syscall.ENOENT, "ipv6: FIB table does not exist")
			}
		}
	case rtnl.RTM_GETNETCONF:
		// inet_netconf_dump_devconf(), inet6_netconf_dump_devconf(): each
		// device, then "all" and "default".
		if d.err = rtnl.CheckNetconfDump(m, family, strict); d.err != nil {
			return
		}
		for _, l := range ns.devs.Links() {
			if !hasInet(family, l) {
				continue // no in_device / inet6_dev (MTU below 68 / 1280)
			}
			d.add(rtnl.AppendNetconf(nil, multi, seq, pid, ns.netconf(family, l.Index)))
		}
		for _, i := range []int32{netdev.IfindexAll, netdev.IfindexDefault} {
			d.add(rtnl.AppendNetconf(nil, multi, seq, pid, ns.netconf(family, i)))
		}
	case rtnl.RTM_GETNEIGH:
		if family == rtnl.AF_BRIDGE {
			// rtnl_fdb_dump(): lo is no bridge port and no Ethernet device
			// (ndo_dflt_fdb_dump() refuses it, silently).
			var q rtnl.NeighDump
			if q, d.err = rtnl.DecodeFdbDump(m, strict); d.err == nil && q.MasterIdx != 0 {
				if _, ok := ns.devs.ByIndex(q.MasterIdx); !ok {
					d.err = rtnl.Errno(syscall.ENODEV)
				}
			}
			return
		}
		// neigh_dump_info(): lo has no neighbour nor proxy entry. Without
		// strict checking a bad request still dumps, keeping the parser's
		// warning.
		_, d.err = rtnl.DecodeNeighDump(m, strict)
	case rtnl.RTM_GETNEXTHOP, rtnl.RTM_GETNEXTHOPBUCKET:
		// rtm_dump_nexthop(), rtm_dump_nexthop_bucket(): no nexthop objects.
		var id uint32
		id, d.err = rtnl.CheckNexthopDump(m, typ == rtnl.RTM_GETNEXTHOPBUCKET)
		if d.err == nil && id != 0 {
			d.err = rtnl.Errno(syscall.ENOENT) // nexthop_find_by_id()
		}
	case rtnl.RTM_GETADDRLABEL:
		// ip6addrlbl_dump(): the default policy table.
		if d.err = rtnl.CheckAddrLabelDump(m, strict); d.err != nil {
			return
		}
		for i := range defaultAddrLabels {
			d.add(rtnl.AppendAddrLabel(nil, multi, seq, pid, &defaultAddrLabels[i], addrLabelSeq))
		}
	case rtnl.RTM_GETMULTICAST, rtnl.RTM_GETANYCAST:
		// inet6_dump_ifmcaddr(), inet_dump_ifmcaddr(), inet6_dump_ifacaddr():
		// lo's memberships, no anycast address.
		prefix := "ipv4: "
		if family == rtnl.AF_INET6 {
			prefix = "ipv6: "
		}
		var idx int32
		idx, d.err = rtnl.CheckAddrDump(m, prefix, strict)
		if ns.addrDumpDevice(d, idx); d.err != nil || typ == rtnl.RTM_GETANYCAST {
			return
		}
		for _, l := range ns.devs.Links() {
			if idx != 0 && l.Index != idx {
				continue
			}
			for _, a := range mcAddrs(family, l) {
				d.add(rtnl.AppendIfMcaddr(nil, multi|d.answer, seq, pid, &a))
			}
		}
	case rtnl.RTM_GETSTATS:
		// rtnl_stats_dump(): every device (the ifindex of a non-strict
		// request is ignored); lo never has traffic here.
		var q rtnl.StatsRequest
		if q, d.err = rtnl.DecodeStats(m, strict, true); d.err != nil {
			return
		}
		if q.Mask == 0 {
			d.err = rtnl.StatsMaskError(true)
			return
		}
		for _, l := range ns.devs.Links() {
			d.add(rtnl.AppendStats(nil, multi, seq, pid, l.Index, q.Mask))
		}
	case rtnl.RTM_GETQDISC:
		// tc_dump_qdisc(): every device's root qdisc but the built-in noop
		// (tc_qdisc_dump_ignore()); lo gets noqueue when first up and
		// keeps it.
		if d.err = rtnl.CheckTcDump(m); d.err != nil {
			return
		}
		for _, l := range ns.devs.Links() {
			if l.Qdisc == "noop" {
				continue
			}
			const tcHRoot = 0xffffffff
			d.add(rtnl.AppendQdisc(nil, multi, seq, pid, &rtnl.Qdisc{Ifindex: l.Index, Parent: tcHRoot, Refcnt: 2, Kind: l.Qdisc}))
		}
	case rtnl.RTM_GETTCLASS, rtnl.RTM_GETTFILTER, rtnl.RTM_GETCHAIN, rtnl.RTM_GETACTION:
		// tc_dump_tclass(), tc_dump_tfilter(), tc_dump_chain(),
		// tc_dump_action(): noop and noqueue have no classes, filters or
		// chains, and no action is installed.
	case rtnl.RTM_GETNSID:
		// rtnl_net_dumpid(): no peer namespace has an id.
		d.err = rtnl.CheckNsidDump(m, strict)
	case rtnl.RTM_GETMDB:
		// rtnl_mdb_dump(): no bridge.
		d.err = rtnl.CheckMdbDump(m, strict)
	}
}

// addrDumpDevice applies the ifa_index filter of a strict address dump
// (inet_valid_dump_ifaddr_req(), inet6_valid_dump_ifaddr_req()): the dump
// is marked NLM_F_DUMP_FILTERED, and fails with ENODEV when there is no such
// device.
func (ns *Namespace) addrDumpDevice(d *msgDump, idx int32) {
	if d.err != nil || idx == 0 {
		return
	}
	d.answer |= rtnl.NLM_F_DUMP_FILTERED
	if !ns.hasDevice(idx) {
		d.err = rtnl.Errno(syscall.ENODEV)
	}
}

func (ns *Namespace) hasDevice(idx int32) bool {
	_, ok := ns.devs.ByIndex(idx)
	return ok
}

// tableExists reports whether a route dump's table filter names an
// existing table (fib_get_table(), fib6_get_table()). IPv6 has main and
// local from the start, and a table for each rule that named one. IPv4
// creates main and local on their first route (fib_new_table()), which a
// namespace without addresses has not had, so only the tables rules
// allocated (fib_empty_table()) exist; fib's registry lists local, main
// and default from the start for the rules' sake.
func (ns *Namespace) tableExists(family uint8, id uint32) bool {
	switch family {
	case rtnl.AF_INET:
		return id != rtnl.RT_TABLE_LOCAL && id != rtnl.RT_TABLE_MAIN && id != rtnl.RT_TABLE_DEFAULT && ns.v4.Exists(id)
	case rtnl.AF_INET6:
		return ns.v6.Exists(id)
	}
	return true
}

// netconf returns the netconf of ifindex (a device, or all / default).
func (ns *Namespace) netconf(family uint8, ifindex int32) *rtnl.Netconf {
	var c []int32
	if family == rtnl.AF_INET6 {
		c, _ = ns.devs.Inet6Conf(ifindex)
	} else {
		c, _ = ns.devs.Inet4Conf(ifindex)
	}
	return netconfOf(family, ifindex, c)
}

// netconfOf is the netconf message of a family's configuration c
// (inet_netconf_fill_devconf(), inet6_netconf_fill_devconf() with
// NETCONFA_ALL).
func netconfOf(family uint8, ifindex int32, c []int32) *rtnl.Netconf {
	v := netdev.Netconf4(c)
	if family == rtnl.AF_INET6 {
		v = netdev.Netconf6(c)
	}
	return &rtnl.Netconf{
		Family: family, Ifindex: ifindex, Forwarding: v.Forwarding, RPFilter: v.RPFilter,
		MCForwarding: v.MCForwarding, BCForwarding: v.BCForwarding, ProxyNeigh: v.ProxyNeigh,
		IgnoreRoutesWithLinkdown: v.IgnoreRoutesWithLinkdown,
	}
}

// mcAddrs returns the multicast memberships of l in family: ipv6_add_dev()
// joins ff02::1 and then ff01::1 when the inet6_dev is created (the dump
// lists the newest first); ip_mc_up() joins 224.0.0.1 while the device is
// up.
func mcAddrs(family uint8, l netdev.Link) []rtnl.IfMcaddr {
	if !hasInet(family, l) {
		return nil
	}
	if family == rtnl.AF_INET6 {
		return []rtnl.IfMcaddr{
			{Family: family, Ifindex: l.Index, Addr: ip6AllNodesLink, Stamp: l.Inet6.MCStamp},
			{Family: family, Ifindex: l.Index, Addr: ip6AllNodesNode, Stamp: l.Inet6.MCStamp},
		}
	}
	if l.Flags&netdev.IFF_UP == 0 {
		return nil
	}
	return []rtnl.IfMcaddr{{Family: family, Ifindex: l.Index, Addr: []byte{224, 0, 0, 1}, Stamp: l.Inet4MCStamp}}
}

// hasInet says whether l has its family state: an in_device (Inet4Conf)
// or an inet6_dev (Inet6.Conf); an MTU below 68 / 1280 destroys them.
func hasInet(family uint8, l netdev.Link) bool {
	if family == rtnl.AF_INET6 {
		return l.Inet6.Conf != nil
	}
	return l.Inet4Conf != nil
}

var (
	ip6AllNodesLink = []byte{0xff, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}
	ip6AllNodesNode = []byte{0xff, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}
)

// defaultAddrLabels is the IPv6 address label table of a new namespace
// (ip6addrlbl_init_table(), RFC 6724's policy table plus 6bone, site-local
// and ORCHID entries) in the kernel's list order: by prefix length, longest
// first, ties in reverse insertion order.
var defaultAddrLabels = []rtnl.AddrLabel{
	{Prefix: v6(0, 0, 0, 0, 0, 0, 0, 1), Len: 128, Label: 0},
	{Prefix: v6(0, 0, 0, 0, 0, 0, 0, 0), Len: 96, Label: 3},
	{Prefix: v6(0, 0, 0, 0, 0, 0xffff, 0, 0), Len: 96, Label: 4},
	{Prefix: v6(0x2001, 0, 0, 0, 0, 0, 0, 0), Len: 32, Label: 6},
	{Prefix: v6(0x2001, 0x10, 0, 0, 0, 0, 0, 0), Len: 28, Label: 7},
	{Prefix: v6(0x3ffe, 0, 0, 0, 0, 0, 0, 0), Len: 16, Label: 12},
	{Prefix: v6(0x2002, 0, 0, 0, 0, 0, 0, 0), Len: 16, Label: 2},
	{Prefix: v6(0xfec0, 0, 0, 0, 0, 0, 0, 0), Len: 10, Label: 11},
	{Prefix: v6(0xfc00, 0, 0, 0, 0, 0, 0, 0), Len: 7, Label: 5},
	{Prefix: v6(0, 0, 0, 0, 0, 0, 0, 0), Len: 0, Label: 1},
}

// addrLabelSeq is the table's sequence number (ifal_seq): one increment per
// entry ip6addrlbl_net_init() added.
const addrLabelSeq = 10

func v6(w ...uint16) (a [16]byte) {
	for i, x := range w {
		a[2*i], a[2*i+1] = byte(x>>8), byte(x)
	}
	return a
}

// lookupAddrLabel is __ipv6_addr_label() as ip6addrlbl_get() calls it: the
// first entry whose prefix holds addr and whose address type, if it has
// one, equals ipv6_addr_type(addr). The ::1/128 entry has type
// IPV6_ADDR_LOOPBACK, but ipv6_addr_type(::1) adds IPV6_ADDR_UNICAST and a
// scope, so it never matches and ::1 gets ::/96's label 3 (measured);
// ::ffff:0:0/96's IPV6_ADDR_MAPPED is exactly the type of every address it
// holds.
func lookupAddrLabel(addr []byte) *rtnl.AddrLabel {
	for i := range defaultAddrLabels {
		l := &defaultAddrLabels[i]
		if l.Len == 128 && l.Prefix == v6(0, 0, 0, 0, 0, 0, 0, 1) {
			continue
		}
		if prefixHolds(l.Prefix[:], int(l.Len), addr) {
			return l
		}
	}
	return nil
}

func prefixHolds(prefix []byte, bits int, addr []byte) bool {
	for i := 0; i < bits; i++ {
		m := byte(0x80) >> (i % 8)
		if prefix[i/8]&m != addr[i/8]&m {
			return false
		}
	}
	return true
}

// startupGet answers a non-dump request of the startup types: the reply
// goes to the requester, the result is acknowledged; EOPNOTSUPP for types
// and families without a doit.
func (ns *Namespace) startupGet(req *Request) *rtnl.Error {
	m := req.Msg
	family := m.Data[0]
	seq, pid := m.Header.Sequence, req.PortID
	reply := func(b []byte) {
		if req.Self != nil {
			req.Self.Deliver(b)
		}
	}
	switch uint16(m.Header.Type) {
	case rtnl.RTM_GETNETCONF:
		// inet_netconf_get_devconf(), inet6_netconf_get_devconf().
		if family != rtnl.AF_INET && family != rtnl.AF_INET6 {
			break
		}
		idx, has, err := rtnl.DecodeNetconfGet(m, req.Strict)
		if err != nil {
			return err
		}
		if !has {
			return rtnl.Errno(syscall.EINVAL)
		}
		var ok bool
		if family == rtnl.AF_INET6 {
			_, ok = ns.devs.Inet6Conf(idx)
		} else {
			_, ok = ns.devs.Inet4Conf(idx)
		}
		if !ok {
			// IPv4 answers ENODEV for a missing device, IPv6 EINVAL.
			if family == rtnl.AF_INET6 {
				return rtnl.Errno(syscall.EINVAL)
			}
			return rtnl.Errno(syscall.ENODEV)
		}
		reply(rtnl.AppendNetconf(nil, 0, seq, pid, ns.netconf(family, idx)))
		return nil
	case rtnl.RTM_GETNEIGH:
		if family == rtnl.AF_BRIDGE {
			return ns.fdbGet(m)
		}
		// neigh_get(): there are no entries to find.
		g, err := rtnl.DecodeNeighGet(m)
		if err != nil {
			return err
		}
		if g.Ifindex != 0 {
			if _, ok := ns.devs.ByIndex(g.Ifindex); !ok {
				return rtnl.Errorf(syscall.ENODEV, "Unknown device ifindex")
			}
		}
		if g.Proxy {
			return rtnl.Errorf(syscall.ENOENT, "Proxy neighbour entry not found")
		}
		if g.Ifindex == 0 {
			return rtnl.Errorf(syscall.EINVAL, "No device specified")
		}
		return rtnl.Errorf(syscall.ENOENT, "Neighbour entry not found")
	case rtnl.RTM_GETNEXTHOP:
		// rtm_get_nexthop(): no nexthop has that id.
		if _, err := rtnl.DecodeNexthopGet(m); err != nil {
			return err
		}
		return rtnl.Errno(syscall.ENOENT)
	case rtnl.RTM_GETADDRLABEL:
		// ip6addrlbl_get().
		if family != rtnl.AF_INET6 {
			break
		}
		g, err := rtnl.DecodeAddrLabelGet(m, req.Strict)
		if err != nil {
			return err
		}
		if g.Ifindex != 0 {
			if _, ok := ns.devs.ByIndex(g.Ifindex); !ok {
				return rtnl.Errno(syscall.EINVAL)
			}
		}
		if g.Addr == nil {
			return rtnl.Errno(syscall.EINVAL)
		}
		l := lookupAddrLabel(g.Addr)
		if l == nil {
			return rtnl.Errno(syscall.ESRCH)
		}
		reply(rtnl.AppendAddrLabel(nil, 0, seq, pid, l, addrLabelSeq))
		return nil
	case rtnl.RTM_GETSTATS:
		// rtnl_stats_get().
		q, err := rtnl.DecodeStats(m, req.Strict, false)
		if err != nil {
			return err
		}
		if q.Ifindex <= 0 {
			return rtnl.Errno(syscall.EINVAL)
		}
		l, ok := ns.devs.ByIndex(q.Ifindex)
		if !ok {
			return rtnl.Errno(syscall.ENODEV)
		}
		if q.Mask == 0 {
			return rtnl.StatsMaskError(false)
		}
		reply(rtnl.AppendStats(nil, 0, seq, pid, l.Index, q.Mask))
		return nil
	}
	return rtnl.Errno(syscall.EOPNOTSUPP)
}

// fdbGet is rtnl_fdb_get() in a namespace without bridges: lo is no
// bridge port, and its ops have no ndo_fdb_get.
func (ns *Namespace) fdbGet(m *rtnl.Message) *rtnl.Error {
	g, err := rtnl.DecodeFdbGet(m)
	if err != nil {
		return err
	}
	hasPort := false
	if g.PortIdx != 0 {
		if !ns.hasDevice(g.PortIdx) {
			return rtnl.Errorf(syscall.ENODEV, "Unknown device ifindex")
		}
		hasPort = true
	}
	hasMaster := false
	if g.MasterIdx != 0 {
		if hasPort {
			return rtnl.Errorf(syscall.EINVAL, "Master and device are mutually exclusive")
		}
		if !ns.hasDevice(g.MasterIdx) {
			return rtnl.Errorf(syscall.EINVAL, "Invalid master ifindex")
		}
		hasMaster = true
	}
	const ntfSelf, ntfMaster = 0x02, 0x04
	if hasPort {
		if g.Flags == 0 || g.Flags&ntfMaster != 0 {
			return rtnl.Errorf(syscall.EINVAL, "Device is not a bridge port")
		}
		if g.Flags&ntfSelf == 0 {
			return rtnl.Errorf(syscall.EINVAL, "Missing NTF_SELF")
		}
	}
	if !hasPort && !hasMaster {
		return rtnl.Errorf(syscall.ENODEV, "No device specified")
	}
	return rtnl.Errorf(syscall.EOPNOTSUPP, "Fdb get operation not supported by device")
}

// msgDump is a dump whose messages are built up front (the startup dumps
// are a handful of messages), sent in batches within the datagram limit.
type msgDump struct {
	msgs   [][]byte
	i      int
	err    *rtnl.Error
	answer uint16 // cb->answer_flags
}

func (d *msgDump) add(b []byte) { d.msgs = append(d.msgs, b) }

func (d *msgDump) Err() *rtnl.Error { return d.err }

func (d *msgDump) AnswerFlags() uint16 { return d.answer }

// AnswerFlagger is a Dumper whose NLMSG_DONE carries flags besides
// NLM_F_MULTI: the kernel's cb->answer_flags, NLM_F_DUMP_FILTERED when the
// request's filters were applied (netlink_dump_done()).
type AnswerFlagger interface {
	AnswerFlags() uint16
}

func (d *msgDump) Fill(dst []byte, limit int) ([]byte, bool) {
	if d.err != nil && d.err.Errno != 0 {
		return dst, true // a failed dumpit sends nothing before the NLMSG_DONE
	}
	for ; d.i < len(d.msgs); d.i++ {
		if len(dst) > 0 && len(dst)+len(d.msgs[d.i]) > limit {
			return dst, false
		}
		dst = append(dst, d.msgs[d.i]...)
	}
	return dst, true
}
