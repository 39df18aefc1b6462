package rtnl

// Encoders and request decoders of the dumps a daemon's startup makes
// besides links, rules, addresses and routes: neighbours, netconf, nexthops,
// IPv6 address labels, multicast addresses, link statistics and traffic
// control. Each mirrors the kernel function named in its comment; handlers
// in nsmgr see only the typed values.

import "syscall"

// Message types of the startup dumps (include/uapi/linux/rtnetlink.h).
const (
	RTM_GETNEIGH         = 30
	RTM_NEWQDISC         = 36
	RTM_GETQDISC         = 38
	RTM_GETTCLASS        = 42
	RTM_GETTFILTER       = 46
	RTM_GETACTION        = 50
	RTM_GETMULTICAST     = 58
	RTM_GETANYCAST       = 62
	RTM_NEWADDRLABEL     = 72
	RTM_GETADDRLABEL     = 74
	RTM_NEWNETCONF       = 80
	RTM_DELNETCONF       = 81
	RTM_GETNETCONF       = 82
	RTM_GETMDB           = 86
	RTM_NEWSTATS         = 92
	RTM_GETSTATS         = 94
	RTM_GETCHAIN         = 102
	RTM_GETNEXTHOP       = 106
	RTM_GETNEXTHOPBUCKET = 118

	AF_BRIDGE = 7
)

// Header sizes of the requests.
const (
	ndmsgLen        = 12 // struct ndmsg
	netconfmsgLen   = 1  // struct netconfmsg (aligned to 4 on the wire)
	nhmsgLen        = 8  // struct nhmsg
	ifaddrlblmsgLen = 12 // struct ifaddrlblmsg
	ifaddrmsgLen    = 8  // struct ifaddrmsg
	rtmsgLen        = 12 // struct rtmsg
	ifStatsMsgLen   = 12 // struct if_stats_msg
	tcmsgLen        = 20 // struct tcmsg
	brPortMsgLen    = 8  // struct br_port_msg
	rtgenmsgLen     = 1  // struct rtgenmsg
	ifinfomsgLen    = 16 // struct ifinfomsg
)

// errHeaderLength is what __nlmsg_parse() says of a message shorter than
// the header its parser expects.
const errHeaderLength = "Invalid header length"

// Warning returns a success carrying only an extack text: the kernel's
// non-strict dump parsers ignore their errors but keep the message, so the
// NLMSG_DONE says 0 with NLM_F_ACK_TLVS.
func Warning(msg string) *Error { return &Error{Msg: msg} }

// attrsOf iterates the attributes after a fixed header of hdrlen bytes
// (NLMSG_ALIGN(hdrlen)), as nlmsg_parse() does.
func attrsOf(m *Message, hdrlen int) *attrIter {
	h := align4(hdrlen)
	if h > len(m.Data) {
		return &attrIter{base: NLMSG_HDRLEN + h}
	}
	return &attrIter{b: m.Data[h:], base: NLMSG_HDRLEN + h}
}

// attrLen is nlmsg_attrlen(): the bytes after the aligned fixed header
// (negative when the message is shorter than that).
func attrLen(m *Message, hdrlen int) int { return len(m.Data) - align4(hdrlen) }

// strictLeftover is nlmsg_parse_deprecated_strict()'s complaint about bytes
// after the last whole attribute, or nil.
func strictLeftover(it *attrIter) *Error {
	for {
		if _, ok := it.next(); !ok {
			break
		}
	}
	if it.leftover() > 0 {
		return Errorf(syscall.EINVAL, "bytes leftover after parsing attributes")
	}
	return nil
}

// NeighDump is what neigh_valid_dump_req() and rtnl_fdb_dump() take from a
// RTM_GETNEIGH dump request.
type NeighDump struct {
	Family    uint8
	Proxy     bool  // ndm_flags == NTF_PROXY
	MasterIdx int32 // NDA_MASTER (neighbours) / the bridge (fdb)
	PortIdx   int32 // fdb: ndm_ifindex or NDA_IFINDEX
}

// Neighbour attributes and flags (include/uapi/linux/neighbour.h).
const (
	nda_DST     = 1
	nda_IFINDEX = 8
	nda_MASTER  = 9
	ntf_PROXY   = 0x08
	iflaMaster  = 10
)

// DecodeNeighDump is neigh_dump_info()'s reading of its request (with
// neigh_valid_dump_req()): an error is returned only with strict checking;
// without it a short header yields a warning for the NLMSG_DONE.
func DecodeNeighDump(m *Message, strict bool) (NeighDump, *Error) {
	d := NeighDump{Family: m.Data[0]}
	if len(m.Data) >= ndmsgLen && m.Data[10] == ntf_PROXY {
		d.Proxy = true
	}
	if len(m.Data) < ndmsgLen {
		if strict {
			return d, Errorf(syscall.EINVAL, "Invalid header for neighbor dump request")
		}
		return d, Warning(errHeaderLength)
	}
	if strict {
		b := m.Data
		if b[1] != 0 || ne.Uint16(b[2:]) != 0 || ne.Uint32(b[4:]) != 0 || ne.Uint16(b[8:]) != 0 || b[11] != 0 {
			return d, Errorf(syscall.EINVAL, "Invalid values in header for neighbor dump request")
		}
		if b[10]&^ntf_PROXY != 0 {
			return d, Errorf(syscall.EINVAL, "Invalid flags in header for neighbor dump request")
		}
	}
	it := attrsOf(m, ndmsgLen)
	for {
		a, ok := it.next()
		if !ok {
			break
		}
		switch a.typ {
		case nda_IFINDEX, nda_MASTER:
			if len(a.data) >= 4 && a.typ == nda_MASTER {
				d.MasterIdx = int32(ne.Uint32(a.data))
			}
		default:
			if strict {
				return d, Errorf(syscall.EINVAL, "Unsupported attribute in neighbor dump request")
			}
		}
	}
	if strict && it.leftover() > 0 {
		return d, Errorf(syscall.EINVAL, "bytes leftover after parsing attributes")
	}
	return d, nil
}

// DecodeFdbDump is rtnl_fdb_dump()'s reading of an AF_BRIDGE RTM_GETNEIGH
// dump: valid_fdb_dump_strict() with strict checking, else
// valid_fdb_dump_legacy(), which accepts an ndmsg (with one optional u32
// attribute) or an ifinfomsg with IFLA_MASTER.
func DecodeFdbDump(m *Message, strict bool) (NeighDump, *Error) {
	d := NeighDump{Family: m.Data[0]}
	n := len(m.Data)
	if !strict {
		if n == ndmsgLen || n == ndmsgLen+8 {
			return d, nil
		}
		if n < ifinfomsgLen {
			return d, Errorf(syscall.EINVAL, errHeaderLength)
		}
		it := attrsOf(m, ifinfomsgLen)
		for {
			a, ok := it.next()
			if !ok {
				break
			}
			if a.typ == iflaMaster && len(a.data) >= 4 {
				d.MasterIdx = int32(ne.Uint32(a.data))
			}
		}
		d.PortIdx = int32(ne.Uint32(m.Data[4:]))
		return d, nil
	}
	if n < ndmsgLen {
		return d, Errorf(syscall.EINVAL, "Invalid header for fdb dump request")
	}
	b := m.Data
	if b[1] != 0 || ne.Uint16(b[2:]) != 0 || ne.Uint16(b[8:]) != 0 || b[10] != 0 || b[11] != 0 {
		return d, Errorf(syscall.EINVAL, "Invalid values in header for fdb dump request")
	}
	d.PortIdx = int32(ne.Uint32(b[4:]))
	it := attrsOf(m, ndmsgLen)
	for {
		a, ok := it.next()
		if !ok {
			break
		}
		switch a.typ {
		case nda_IFINDEX:
			if len(a.data) != 4 {
				return d, Errorf(syscall.EINVAL, "Invalid IFINDEX attribute in fdb dump request")
			}
			d.PortIdx = int32(ne.Uint32(a.data))
		case nda_MASTER:
			if len(a.data) != 4 {
				return d, Errorf(syscall.EINVAL, "Invalid MASTER attribute in fdb dump request")
			}
			d.MasterIdx = int32(ne.Uint32(a.data))
		default:
			return d, Errorf(syscall.EINVAL, "Unsupported attribute in fdb dump request")
		}
	}
	if it.leftover() > 0 {
		return d, Errorf(syscall.EINVAL, "bytes leftover after parsing attributes")
	}
	return d, nil
}

// NeighGet is a RTM_GETNEIGH request for one entry (neigh_valid_get_req()).
type NeighGet struct {
	Family  uint8
	Ifindex int32
	Proxy   bool
	Dst     []byte
}

// DecodeNeighGet is neigh_valid_get_req(): the header must be clean, the
// family one with a neighbour table, NDA_DST present and of the table's key
// length.
func DecodeNeighGet(m *Message) (NeighGet, *Error) {
	var g NeighGet
	b := m.Data
	if len(b) < ndmsgLen {
		return g, Errorf(syscall.EINVAL, "Invalid header for neighbor get request")
	}
	if b[1] != 0 || ne.Uint16(b[2:]) != 0 || ne.Uint16(b[8:]) != 0 || b[11] != 0 {
		return g, Errorf(syscall.EINVAL, "Invalid values in header for neighbor get request")
	}
	if b[10]&^ntf_PROXY != 0 {
		return g, Errorf(syscall.EINVAL, "Invalid flags in header for neighbor get request")
	}
	g.Family, g.Ifindex, g.Proxy = b[0], int32(ne.Uint32(b[4:])), b[10]&ntf_PROXY != 0
	var keyLen int
	switch g.Family {
	case AF_INET:
		keyLen = 4
	case AF_INET6:
		keyLen = 16
	default:
		return g, Errorf(syscall.EAFNOSUPPORT, "Unsupported family in header for neighbor get request")
	}
	it := attrsOf(m, ndmsgLen)
	for {
		a, ok := it.next()
		if !ok {
			break
		}
		switch a.typ {
		case nda_DST:
			g.Dst = a.data
		default:
			return g, AttrError(syscall.EINVAL, "Unsupported attribute in neighbor get request", a.off)
		}
	}
	if g.Dst == nil {
		// NL_REQ_ATTR_CHECK(extack, NULL, tb, NDA_DST)
		return g, &Error{Errno: syscall.EINVAL, MissType: nda_DST}
	}
	if len(g.Dst) != keyLen {
		return g, Errorf(syscall.EINVAL, "Invalid network address in neighbor get request")
	}
	return g, nil
}

// FdbGet is an AF_BRIDGE RTM_GETNEIGH for one FDB entry
// (valid_fdb_get_strict()).
type FdbGet struct {
	Flags     uint8 // NTF_SELF, NTF_MASTER
	PortIdx   int32 // ndm_ifindex
	MasterIdx int32 // NDA_MASTER
	HasAddr   bool  // NDA_LLADDR
}

// DecodeFdbGet is valid_fdb_get_strict(), which rtnl_fdb_get() applies
// whatever the socket's strict checking.
func DecodeFdbGet(m *Message) (FdbGet, *Error) {
	var g FdbGet
	b := m.Data
	if len(b) < ndmsgLen {
		return g, Errorf(syscall.EINVAL, "Invalid header for fdb get request")
	}
	if b[1] != 0 || ne.Uint16(b[2:]) != 0 || ne.Uint16(b[8:]) != 0 || b[11] != 0 {
		return g, Errorf(syscall.EINVAL, "Invalid values in header for fdb get request")
	}
	const ntfSelf, ntfMaster = 0x02, 0x04
	if b[10]&^(ntfSelf|ntfMaster) != 0 {
		return g, Errorf(syscall.EINVAL, "Invalid flags in header for fdb get request")
	}
	g.Flags, g.PortIdx = b[10], int32(ne.Uint32(b[4:]))
	it := attrsOf(m, ndmsgLen)
	for {
		a, ok := it.next()
		if !ok {
			break
		}
		const ndaLLAddr, ndaVlan, ndaVni = 2, 5, 7
		switch a.typ {
		case nda_MASTER:
			if len(a.data) >= 4 {
				g.MasterIdx = int32(ne.Uint32(a.data))
			}
		case ndaLLAddr:
			if len(a.data) != 6 {
				return g, Errorf(syscall.EINVAL, "Invalid address in fdb get request")
			}
			g.HasAddr = true
		case ndaVlan, ndaVni:
		default:
			return g, Errorf(syscall.EINVAL, "Unsupported attribute in fdb get request")
		}
	}
	if !g.HasAddr {
		return g, Errorf(syscall.EINVAL, "Missing lookup address for fdb get request")
	}
	return g, nil
}

// Netconf attributes (include/uapi/linux/netconf.h).
const (
	netconfaIfindex                  = 1
	netconfaForwarding               = 2
	netconfaRPFilter                 = 3
	netconfaMCForwarding             = 4
	netconfaProxyNeigh               = 5
	netconfaIgnoreRoutesWithLinkdown = 6
	netconfaBCForwarding             = 8

	NETCONFA_IFINDEX_ALL     = -1
	NETCONFA_IFINDEX_DEFAULT = -2
)

// Netconf is one RTM_NEWNETCONF with every attribute (NETCONFA_ALL), as
// inet_netconf_fill_devconf() and inet6_netconf_fill_devconf() fill it.
type Netconf struct {
	Family                   uint8
	Ifindex                  int32
	Forwarding, RPFilter     int32
	MCForwarding             int32
	BCForwarding, ProxyNeigh int32
	IgnoreRoutesWithLinkdown int32
}

// AppendNetconf appends n as an RTM_NEWNETCONF. IPv4 carries rp_filter and
// bc_forwarding, IPv6 does not.
func AppendNetconf(dst []byte, flags uint16, seq, pid uint32, n *Netconf) []byte {
	e := linkEnc{b: []byte{n.Family, 0, 0, 0}}
	e.u32(netconfaIfindex, uint32(n.Ifindex))
	e.u32(netconfaForwarding, uint32(n.Forwarding))
	if n.Family == AF_INET {
		e.u32(netconfaRPFilter, uint32(n.RPFilter))
	}
	e.u32(netconfaMCForwarding, uint32(n.MCForwarding))
	if n.Family == AF_INET {
		e.u32(netconfaBCForwarding, uint32(n.BCForwarding))
	}
	e.u32(netconfaProxyNeigh, uint32(n.ProxyNeigh))
	e.u32(netconfaIgnoreRoutesWithLinkdown, uint32(n.IgnoreRoutesWithLinkdown))
	return AppendMessage(dst, RTM_NEWNETCONF, flags, seq, pid, e.b)
}

// AppendDelNetconf appends the RTM_DELNETCONF a device's unregistration
// sends for family: inet_netconf_notify_devconf() and
// inet6_netconf_notify_devconf() with type 0 fill only NETCONFA_IFINDEX.
func AppendDelNetconf(dst []byte, family uint8, ifindex int32) []byte {
	e := linkEnc{b: []byte{family, 0, 0, 0}}
	e.u32(netconfaIfindex, uint32(ifindex))
	return AppendMessage(dst, RTM_DELNETCONF, 0, 0, 0, e.b)
}

// NetconfPrefix is the extack prefix of a family's netconf messages.
func netconfPrefix(family uint8) string {
	if family == AF_INET6 {
		return "ipv6: "
	}
	return "ipv4: "
}

// CheckNetconfDump is the strict check of inet_netconf_dump_devconf() and
// inet6_netconf_dump_devconf(): nothing may follow the netconfmsg.
func CheckNetconfDump(m *Message, family uint8, strict bool) *Error {
	if !strict {
		return nil
	}
	if attrLen(m, netconfmsgLen) != 0 {
		return Errorf(syscall.EINVAL, netconfPrefix(family)+"Invalid data after header in netconf dump request")
	}
	return nil
}

// DecodeNetconfGet is inet_netconf_valid_get_req() /
// inet6_netconf_valid_get_req(): it returns NETCONFA_IFINDEX, and false
// when the request has none (the caller answers EINVAL).
func DecodeNetconfGet(m *Message, strict bool) (int32, bool, *Error) {
	family := m.Data[0]
	it := attrsOf(m, netconfmsgLen)
	var (
		idx int32
		has bool
	)
	for {
		a, ok := it.next()
		if !ok {
			break
		}
		switch a.typ {
		case netconfaIfindex:
			if len(a.data) < 4 {
				return 0, false, AttrError(syscall.EINVAL, "", a.off)
			}
			idx, has = int32(ne.Uint32(a.data)), true
		default:
			if strict {
				return 0, false, Errorf(syscall.EINVAL, netconfPrefix(family)+"Unsupported attribute in netconf get request")
			}
		}
	}
	if strict && it.leftover() > 0 {
		return 0, false, Errorf(syscall.EINVAL, "bytes leftover after parsing attributes")
	}
	return idx, has, nil
}

// Nexthop attributes (include/uapi/linux/nexthop.h).
const (
	nhaID     = 1
	nhaGroups = 9
	nhaOIF    = 5
	nhaMaster = 10
	nhaFDB    = 11
)

// CheckNexthopDump is nh_valid_dump_req() (rtm_dump_nexthop()) and, with
// bucket, nh_valid_dump_bucket_req() (rtm_dump_nexthop_bucket()): checked
// strict or not. The attributes are parsed first with the dump's policy
// (nlmsg_parse() validates strictly: a type above the policy's maximum is
// "Unknown attribute type", one without a policy entry "Unsupported
// attribute"), then the device indexes, then the header. It returns the
// bucket dump's NHA_ID (0: none).
func CheckNexthopDump(m *Message, bucket bool) (uint32, *Error) {
	if len(m.Data) < nhmsgLen {
		return 0, Errorf(syscall.EINVAL, errHeaderLength)
	}
	const (
		nhaResBucket = 13
		nhaOpFlags   = 14
	)
	maxType, allowed := uint16(nhaOpFlags), map[uint16]bool{nhaOIF: true, nhaGroups: true, nhaMaster: true, nhaFDB: true, nhaOpFlags: true}
	if bucket {
		maxType, allowed = nhaResBucket, map[uint16]bool{nhaID: true, nhaOIF: true, nhaMaster: true, nhaResBucket: true}
	}
	var id uint32
	var idxErr *Error
	it := attrsOf(m, nhmsgLen)
	for {
		a, ok := it.next()
		if !ok {
			break
		}
		switch {
		case a.typ > maxType:
			return 0, AttrError(syscall.EINVAL, "Unknown attribute type", a.off)
		case !allowed[a.typ]:
			return 0, AttrError(syscall.EINVAL, "Unsupported attribute", a.off)
		}
		switch a.typ {
		case nhaID:
			if len(a.data) >= 4 {
				id = ne.Uint32(a.data)
			}
		case nhaOIF, nhaMaster:
			if len(a.data) >= 4 && ne.Uint32(a.data) > 1<<31-1 && idxErr == nil {
				msg := "Invalid device index"
				if a.typ == nhaMaster {
					msg = "Invalid master device index"
				}
				idxErr = Errorf(syscall.EINVAL, msg)
			}
		}
	}
	if it.leftover() > 0 {
		return 0, Errorf(syscall.EINVAL, "bytes leftover after parsing attributes")
	}
	if idxErr != nil {
		return 0, idxErr
	}
	return id, checkNhmsg(m, "Invalid values in header for nexthop dump request")
}

// checkNhmsg refuses an nhmsg with protocol, scope, flags or the reserved
// byte set.
func checkNhmsg(m *Message, msg string) *Error {
	b := m.Data
	if b[1] != 0 || b[2] != 0 || b[3] != 0 || ne.Uint32(b[4:]) != 0 {
		return Errorf(syscall.EINVAL, msg)
	}
	return nil
}

// DecodeNexthopGet is nh_valid_get_del_req(): the NHA_ID of the request.
func DecodeNexthopGet(m *Message) (uint32, *Error) {
	if len(m.Data) < nhmsgLen {
		return 0, Errorf(syscall.EINVAL, errHeaderLength)
	}
	var (
		id  uint32
		has bool
	)
	it := attrsOf(m, nhmsgLen)
	for {
		a, ok := it.next()
		if !ok {
			break
		}
		if a.typ == nhaID && len(a.data) >= 4 {
			id, has = ne.Uint32(a.data), true
		}
	}
	if err := checkNhmsg(m, "Invalid values in header"); err != nil {
		return 0, err
	}
	if !has {
		return 0, Errorf(syscall.EINVAL, "Nexthop id is missing")
	}
	if id == 0 {
		return 0, Errorf(syscall.EINVAL, "Invalid nexthop id")
	}
	return id, nil
}

// Address label attributes.
const (
	ifalAddress = 1
	ifalLabel   = 2
)

// AddrLabel is one IPv6 address label policy entry (struct ip6addrlbl_entry).
type AddrLabel struct {
	Prefix  [16]byte
	Len     uint8
	Ifindex int32
	Label   uint32
}

// AppendAddrLabel appends l as ip6addrlbl_fill() does: an ifaddrlblmsg
// carrying the table's sequence number, IFAL_ADDRESS and IFAL_LABEL.
func AppendAddrLabel(dst []byte, flags uint16, seq, pid uint32, l *AddrLabel, tableSeq uint32) []byte {
	e := linkEnc{b: make([]byte, 0, 44)}
	e.b = append(e.b, AF_INET6, 0, l.Len, 0)
	e.b = ne.AppendUint32(e.b, uint32(l.Ifindex))
	e.b = ne.AppendUint32(e.b, tableSeq)
	e.put(ifalAddress, l.Prefix[:])
	e.u32(ifalLabel, l.Label)
	return AppendMessage(dst, RTM_NEWADDRLABEL, flags, seq, pid, e.b)
}

// CheckAddrLabelDump is ip6addrlbl_valid_dump_req(), applied with strict
// checking only.
func CheckAddrLabelDump(m *Message, strict bool) *Error {
	if !strict {
		return nil
	}
	b := m.Data
	if len(b) < ifaddrlblmsgLen {
		return Errorf(syscall.EINVAL, "ipv6: Invalid header for address label dump request")
	}
	if b[1] != 0 || b[2] != 0 || b[3] != 0 || ne.Uint32(b[4:]) != 0 || ne.Uint32(b[8:]) != 0 {
		return Errorf(syscall.EINVAL, "ipv6: Invalid values in header for address label dump request")
	}
	if attrLen(m, ifaddrlblmsgLen) != 0 {
		return Errorf(syscall.EINVAL, "ipv6: Invalid data after header for address label dump request")
	}
	return nil
}

// AddrLabelGet is a RTM_GETADDRLABEL request for one address.
type AddrLabelGet struct {
	Ifindex int32
	Addr    []byte // nil: no IFAL_ADDRESS
}

// DecodeAddrLabelGet is ip6addrlbl_valid_get_req() and the checks of
// ip6addrlbl_get() before the lookup; an error without text is the bare
// EINVAL the kernel answers.
func DecodeAddrLabelGet(m *Message, strict bool) (AddrLabelGet, *Error) {
	var g AddrLabelGet
	b := m.Data
	if len(b) < ifaddrlblmsgLen {
		return g, Errorf(syscall.EINVAL, "ipv6: Invalid header for addrlabel get request")
	}
	if strict && (b[1] != 0 || b[3] != 0 || ne.Uint32(b[8:]) != 0) {
		return g, Errorf(syscall.EINVAL, "ipv6: Invalid values in header for addrlabel get request")
	}
	it := attrsOf(m, ifaddrlblmsgLen)
	for {
		a, ok := it.next()
		if !ok {
			break
		}
		switch a.typ {
		case ifalAddress:
			if len(a.data) < 16 {
				return g, AttrError(syscall.EINVAL, "", a.off)
			}
			g.Addr = a.data[:16]
		default:
			if strict {
				return g, Errorf(syscall.EINVAL, "ipv6: Unsupported attribute in addrlabel get request")
			}
		}
	}
	if b[0] != AF_INET6 || b[2] != 128 {
		return g, Errno(syscall.EINVAL)
	}
	g.Ifindex = int32(ne.Uint32(b[4:]))
	return g, nil
}

// CheckAddrDump is the strict check of inet_valid_dump_ifaddr_req() and
// inet6_valid_dump_ifaddr_req() (also used by the multicast and anycast
// dumps); prefix is "ipv4: " or "ipv6: ". It returns the ifa_index filter.
func CheckAddrDump(m *Message, prefix string, strict bool) (int32, *Error) {
	if !strict {
		return 0, nil
	}
	b := m.Data
	if len(b) < ifaddrmsgLen {
		return 0, Errorf(syscall.EINVAL, prefix+"Invalid header for address dump request")
	}
	if b[1] != 0 || b[2] != 0 || b[3] != 0 {
		return 0, Errorf(syscall.EINVAL, prefix+"Invalid values in header for address dump request")
	}
	it := attrsOf(m, ifaddrmsgLen)
	for {
		a, ok := it.next()
		if !ok {
			break
		}
		const ifaTargetNetnsid = 10
		if a.typ != ifaTargetNetnsid {
			return 0, Errorf(syscall.EINVAL, prefix+"Unsupported attribute in dump request")
		}
	}
	if it.leftover() > 0 {
		return 0, Errorf(syscall.EINVAL, "bytes leftover after parsing attributes")
	}
	return int32(ne.Uint32(b[4:])), nil
}

// NLM_F_DUMP_FILTERED marks the messages and the NLMSG_DONE of a dump that
// applied a filter the request asked for.
const NLM_F_DUMP_FILTERED = 0x20

// RouteDumpFilter is what ip_valid_fib_dump_req() takes from a strict
// route dump request.
type RouteDumpFilter struct {
	Table uint32 // rtm_table, or RTA_TABLE
	Oif   int32  // RTA_OIF (the device exists)
	// Filtered is filter_set: any of flags, protocol, type, table or
	// device was given (the dump then answers NLM_F_DUMP_FILTERED).
	Filtered bool
}

// CheckRouteDump is ip_valid_fib_dump_req(), which inet_dump_fib(),
// inet6_dump_fib() and the multicast-routing dumps run with strict
// checking only; hasDev reports whether an RTA_OIF device exists.
func CheckRouteDump(m *Message, strict bool, hasDev func(int32) bool) (RouteDumpFilter, *Error) {
	if !strict {
		return RouteDumpFilter{}, nil
	}
	// One decoder for route dump requests (route.go), policy included.
	d, err := DecodeRouteDumpDev(m, strict, hasDev)
	return RouteDumpFilter{Table: d.Table, Oif: int32(d.OIF), Filtered: d.Filtered}, err
}

// IfMcaddr is one multicast address of a device as inet6_fill_ifmcaddr()
// and inet_fill_ifmcaddr() report it.
type IfMcaddr struct {
	Family  uint8
	Ifindex int32
	Addr    []byte // 4 or 16 bytes
	// Stamp is the join time in 1/100 s since boot (ifa_cacheinfo cstamp
	// and tstamp).
	Stamp uint32
}

// AppendIfMcaddr appends a as the kernel does: type RTM_GETMULTICAST (the
// kernel answers with the request's type), an ifaddrmsg with the full
// prefix length, IFA_F_PERMANENT and universe scope, then IFA_MULTICAST and
// IFA_CACHEINFO with infinite lifetimes.
func AppendIfMcaddr(dst []byte, flags uint16, seq, pid uint32, a *IfMcaddr) []byte {
	const (
		ifaFPermanent = 0x80
		ifaMulticast  = 7
		ifaCacheinfo  = 6
	)
	e := linkEnc{b: []byte{a.Family, uint8(len(a.Addr) * 8), ifaFPermanent, 0}}
	e.b = ne.AppendUint32(e.b, uint32(a.Ifindex))
	e.put(ifaMulticast, a.Addr)
	ci := make([]byte, 0, 16)
	ci = ne.AppendUint32(ci, 0xffffffff)
	ci = ne.AppendUint32(ci, 0xffffffff)
	ci = ne.AppendUint32(ci, a.Stamp)
	ci = ne.AppendUint32(ci, a.Stamp)
	e.put(ifaCacheinfo, ci)
	return AppendMessage(dst, RTM_GETMULTICAST, flags, seq, pid, e.b)
}

// Stats filter bits (IFLA_STATS_FILTER_BIT()).
const (
	statsLink64       = 1 << 0
	statsLinkXstats   = 1 << 1
	statsXstatsSlave  = 1 << 2
	statsOffload      = 1 << 3
	statsAFSpec       = 1 << 4
	statsFilterBitMax = 1 << 5 // IFLA_STATS_FILTER_BIT(IFLA_STATS_MAX + 1)
)

// StatsRequest is an if_stats_msg request.
type StatsRequest struct {
	Ifindex int32
	Mask    uint32
}

// DecodeStats is rtnl_valid_stats_req() followed by the filter-mask check
// of rtnl_stats_dump() (dump) or rtnl_stats_get().
func DecodeStats(m *Message, strict, dump bool) (StatsRequest, *Error) {
	var r StatsRequest
	b := m.Data
	if len(b) < ifStatsMsgLen {
		return r, Errorf(syscall.EINVAL, "Invalid header for stats dump")
	}
	r.Ifindex, r.Mask = int32(ne.Uint32(b[4:])), ne.Uint32(b[8:])
	if strict {
		if b[1] != 0 || ne.Uint16(b[2:]) != 0 || (dump && r.Ifindex != 0) {
			return r, Errorf(syscall.EINVAL, "Invalid values in header for stats dump request")
		}
		if r.Mask >= statsFilterBitMax {
			return r, Errorf(syscall.EINVAL, "Invalid stats requested through filter mask")
		}
	}
	return r, nil
}

// StatsMaskError is the error of a request without filter bits.
func StatsMaskError(dump bool) *Error {
	if dump {
		return Errorf(syscall.EINVAL, "Filter mask must be set for stats dump")
	}
	return Errorf(syscall.EINVAL, "Filter mask must be set for stats get")
}

// AppendStats appends the RTM_NEWSTATS of a device without traffic, driver
// extended stats or offload counters, as rtnl_fill_statsinfo() fills it
// for lo: rtnl_link_stats64 of zeros, the hardware-stats info nest of
// IFLA_OFFLOAD_XSTATS (L3 stats neither requested nor used) and an empty
// IFLA_STATS_AF_SPEC (no address family has per-device stats to add).
func AppendStats(dst []byte, flags uint16, seq, pid uint32, ifindex int32, mask uint32) []byte {
	const (
		iflaStatsLink64  = 1
		iflaStatsOffload = 4
		iflaStatsAFSpec  = 5
		linkStats64Size  = 25 * 8
	)
	e := linkEnc{b: make([]byte, 0, 256)}
	e.b = append(e.b, 0, 0, 0, 0)
	e.b = ne.AppendUint32(e.b, uint32(ifindex))
	e.b = ne.AppendUint32(e.b, mask)
	if mask&statsLink64 != 0 {
		e.zeros(iflaStatsLink64, linkStats64Size)
	}
	if mask&statsOffload != 0 {
		o := e.nest(iflaStatsOffload)
		hw := e.nest(nlaFNested | 2) // IFLA_OFFLOAD_XSTATS_HW_S_INFO
		l3 := e.nest(nlaFNested | 3) // IFLA_OFFLOAD_XSTATS_L3_STATS
		e.u8(1, 0)                   // IFLA_OFFLOAD_XSTATS_HW_S_INFO_REQUEST
		e.u8(2, 0)                   // IFLA_OFFLOAD_XSTATS_HW_S_INFO_USED
		e.end(l3)
		e.end(hw)
		e.end(o)
	}
	if mask&statsAFSpec != 0 {
		e.end(e.nest(iflaStatsAFSpec))
	}
	return AppendMessage(dst, RTM_NEWSTATS, flags, seq, pid, e.b)
}

// Qdisc is a root qdisc as tc_fill_qdisc() reports it.
type Qdisc struct {
	Ifindex int32
	Handle  uint32
	Parent  uint32
	Refcnt  uint32 // tcm_info
	Kind    string
}

// AppendQdisc appends q as an RTM_NEWQDISC of a qdisc without options or
// traffic: TCA_KIND, TCA_HW_OFFLOAD 0, TCA_STATS2 (basic and queue stats,
// zeros) and the legacy TCA_STATS copy (gnet_stats_start_copy_compat()).
func AppendQdisc(dst []byte, flags uint16, seq, pid uint32, q *Qdisc) []byte {
	const (
		tcaKind       = 1
		tcaStats      = 3
		tcaStats2     = 7
		tcaHWOffload  = 12
		tcaStatsBasic = 1
		tcaStatsQueue = 3
	)
	e := linkEnc{b: make([]byte, 0, 132)}
	e.b = append(e.b, 0, 0, 0, 0)
	e.b = ne.AppendUint32(e.b, uint32(q.Ifindex))
	e.b = ne.AppendUint32(e.b, q.Handle)
	e.b = ne.AppendUint32(e.b, q.Parent)
	e.b = ne.AppendUint32(e.b, q.Refcnt)
	e.str(tcaKind, q.Kind)
	e.u8(tcaHWOffload, 0)
	s := e.nest(tcaStats2)
	e.zeros(tcaStatsBasic, 16) // struct gnet_stats_basic
	e.zeros(tcaStatsQueue, 20) // struct gnet_stats_queue
	e.end(s)
	e.zeros(tcaStats, 40) // struct tc_stats
	return AppendMessage(dst, RTM_NEWQDISC, flags, seq, pid, e.b)
}

// CheckTcDump is __nlmsg_parse()'s header check of the tc dumps.
func CheckTcDump(m *Message) *Error {
	if len(m.Data) < tcmsgLen {
		return Errorf(syscall.EINVAL, errHeaderLength)
	}
	return nil
}

// CheckMdbDump is rtnl_mdb_valid_dump_req(), with strict checking only.
func CheckMdbDump(m *Message, strict bool) *Error {
	if !strict {
		return nil
	}
	if len(m.Data) < brPortMsgLen {
		return Errorf(syscall.EINVAL, "Invalid header for mdb dump request")
	}
	if ne.Uint32(m.Data[4:]) != 0 {
		return Errorf(syscall.EINVAL, "Filtering by device index is not supported for mdb dump request")
	}
	if attrLen(m, brPortMsgLen) != 0 {
		return Errorf(syscall.EINVAL, "Invalid data after header in mdb dump request")
	}
	return nil
}

// CheckNsidDump is rtnl_valid_dump_net_req() with strict checking: only
// NETNSA_TARGET_NSID may follow the rtgenmsg.
func CheckNsidDump(m *Message, strict bool) *Error {
	if !strict {
		return nil
	}
	it := attrsOf(m, rtgenmsgLen)
	for {
		a, ok := it.next()
		if !ok {
			break
		}
		const netnsaTargetNsid = 4
		if a.typ != netnsaTargetNsid {
			return AttrError(syscall.EINVAL, "Unsupported attribute in dump request", a.off)
		}
	}
	return strictLeftover(it)
}
