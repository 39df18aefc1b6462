package rtnl

import (
	"syscall"
)

// Link attributes (IFLA_*) that nlemu reads or writes.
const (
	IFLA_ADDRESS         = 1
	IFLA_BROADCAST       = 2
	IFLA_IFNAME          = 3
	IFLA_MTU             = 4
	IFLA_LINK            = 5
	IFLA_QDISC           = 6
	IFLA_MASTER          = 10
	IFLA_STATS           = 7
	IFLA_PROTINFO        = 12
	IFLA_IFALIAS         = 20
	IFLA_TXQLEN          = 13
	IFLA_MAP             = 14
	IFLA_OPERSTATE       = 16
	IFLA_LINKMODE        = 17
	IFLA_LINKINFO        = 18
	IFLA_STATS64         = 23
	IFLA_AF_SPEC         = 26
	IFLA_GROUP           = 27
	IFLA_EXT_MASK        = 29
	IFLA_PROMISCUITY     = 30
	IFLA_NUM_TX_QUEUES   = 31
	IFLA_NUM_RX_QUEUES   = 32
	IFLA_CARRIER         = 33
	IFLA_CARRIER_CHANGES = 35
	IFLA_PROTO_DOWN      = 39
	IFLA_GSO_MAX_SEGS    = 40
	IFLA_GSO_MAX_SIZE    = 41
	IFLA_XDP             = 43
	IFLA_EVENT           = 44

	// IFLA_EVENT_FEATURES is NETDEV_FEAT_CHANGE's IFLA_EVENT
	// (rtnl_get_event()).
	IFLA_EVENT_FEATURES             = 2
	IFLA_TARGET_NETNSID             = 46
	IFLA_CARRIER_UP_COUNT           = 47
	IFLA_CARRIER_DOWN_COUNT         = 48
	IFLA_MIN_MTU                    = 50
	IFLA_MAX_MTU                    = 51
	IFLA_ALT_IFNAME                 = 53
	IFLA_GRO_MAX_SIZE               = 58
	IFLA_TSO_MAX_SIZE               = 59
	IFLA_TSO_MAX_SEGS               = 60
	IFLA_ALLMULTI                   = 61
	IFLA_DEVLINK_PORT               = 62
	IFLA_GSO_IPV4_MAX_SIZE          = 63
	IFLA_GRO_IPV4_MAX_SIZE          = 64
	IFLA_DPLL_PIN                   = 65
	IFLA_MAX_PACING_OFFLOAD_HORIZON = 66
	IFLA_NETNS_IMMUTABLE            = 67
	IFLA_HEADROOM                   = 68
	IFLA_TAILROOM                   = 69

	IFLA_XDP_ATTACHED = 2
	IFLA_INET_CONF    = 1

	IFLA_INET6_FLAGS         = 1
	IFLA_INET6_CONF          = 2
	IFLA_INET6_STATS         = 3
	IFLA_INET6_CACHEINFO     = 5
	IFLA_INET6_ICMP6STATS    = 6
	IFLA_INET6_TOKEN         = 7
	IFLA_INET6_ADDR_GEN_MODE = 8

	// RTEXT_FILTER_SKIP_STATS in IFLA_EXT_MASK drops the inet6 counters
	// (inet6_fill_ifla6_attrs()); on 6.18 IFLA_STATS / IFLA_STATS64 stay.
	RTEXT_FILTER_SKIP_STATS = 1 << 3

	IfInfoLen      = 16
	ifinfoAttrBase = NLMSG_HDRLEN + IfInfoLen
)

// Sizes of the counter blocks a device reports. nlemu moves no packets, so
// every counter is 0, as on a device that has carried no traffic.
const (
	linkStats64Len = 25 * 8 // struct rtnl_link_stats64
	linkStatsLen   = 24 * 4 // struct rtnl_link_stats
	linkIfmapLen   = 32     // struct rtnl_link_ifmap (with padding)
	// __snmp6_fill_stats64() puts the number of items in slot 0.
	ipstatsMIBMax = 38 // IPSTATS_MIB_MAX
	icmp6MIBMax   = 7  // ICMP6_MIB_MAX
	ipv6MaxPlen   = 65535
)

// LinkMsg is a typed RTM_NEWLINK / RTM_GETLINK / RTM_SETLINK message:
// struct ifinfomsg and its attributes. Requests fill the header, the name
// and ExtMask; replies fill everything rtnl_fill_ifinfo() reports.
type LinkMsg struct {
	Family uint8
	Type   uint16
	Index  int32
	Flags  uint32 // dev_get_flags()
	Change uint32

	Name    []byte // IFLA_IFNAME (request: trailing NUL stripped; IFLA_ALT_IFNAME wins)
	HasName bool
	ExtMask uint32 // IFLA_EXT_MASK of a request (RTEXT_FILTER_*)
	Master  uint32 // IFLA_MASTER of a dump request: only that master's ports
	// Warning is the extack text a request's liberal parse leaves behind
	// ("bytes leftover after parsing attributes", __nla_validate_parse()):
	// the ACK of a success carries it, an error without text keeps it.
	Warning string

	TxQueueLen                                 uint32
	OperState                                  uint8 // IF_OPER_* as reported (DOWN while not running)
	LinkMode                                   uint8
	NetnsImmutable                             bool
	MTU, MinMTU, MaxMTU                        uint32
	Group, Promiscuity, Allmulti               uint32
	NumTxQueues, NumRxQueues                   uint32
	GSOMaxSegs, GSOMaxSize, GROMaxSize         uint32
	GSOIPv4MaxSize, GROIPv4MaxSize             uint32
	TSOMaxSize, TSOMaxSegs                     uint32
	MaxPacingOffloadHorizon                    uint32
	Carrier                                    bool
	CarrierChanges, CarrierUpCnt, CarrierDnCnt uint32
	Headroom, Tailroom                         uint16
	ProtoDown                                  bool
	Address, Broadcast                         []byte
	Qdisc                                      string // "" when the device has none
	Inet4Conf                                  []int32
	Inet6                                      *Inet6Info // nil: no inet6_dev

	// IfLink is IFLA_LINK (dev_get_iflink()), sent when HasIfLink: a veth
	// reports its peer's ifindex, 0 while it has none.
	IfLink    int32
	HasIfLink bool
	// Kind is IFLA_INFO_KIND ("veth", "bridge", "dummy"); "" sends no
	// IFLA_LINKINFO (lo has no rtnl_link_ops).
	Kind string
	// Bridge is a bridge's IFLA_INFO_DATA (br_fill_info()).
	Bridge *BridgeInfo
	// BridgePort is a bridge port's IFLA_INFO_SLAVE_KIND "bridge" and
	// IFLA_INFO_SLAVE_DATA (br_port_fill_slave_info()).
	BridgePort *BridgePortInfo
	// Alias is IFLA_IFALIAS ("" sends none).
	Alias string
	// Event is IFLA_EVENT of an rtmsg_ifinfo_event() notification
	// (IFLA_EVENT_FEATURES for NETDEV_FEAT_CHANGE, ...); 0 sends none.
	Event uint32
	// EmptyAFSpec sends an empty IFLA_AF_SPEC: the RTM_DELLINK of a device
	// whose inet and inet6 state NETDEV_UNREGISTER already freed.
	EmptyAFSpec bool
}

// BridgeInfo is what br_fill_info() reports of a bridge, in its order.
// Timers are in clock_t (1/100 s); times in the same unit.
type BridgeInfo struct {
	HelloTimer, TcnTimer, TopologyChangeTimer, GCTimer uint64
	ForwardDelay, HelloTime, MaxAge, AgeingTime        uint32
	StpState                                           uint32
	Priority                                           uint16
	VlanFiltering                                      uint8
	GroupFwdMask                                       uint16
	BridgeID, RootID                                   [8]byte // struct ifla_bridge_id
	RootPort                                           uint16
	RootPathCost                                       uint32
	TopologyChange, TopologyChangeDetected             uint8
	GroupAddr                                          [6]byte
	BoolOptVal, BoolOptMask                            uint32 // struct br_boolopt_multi
	FdbNLearned, FdbMaxLearned                         uint32
	McastRouter, McastSnooping, McastQueryUseIfaddr    uint8
	McastQuerier, McastStatsEnabled                    uint8
	McastHashElasticity, McastHashMax                  uint32
	McastLastMemberCnt, McastStartupQueryCnt           uint32
	McastIGMPVersion, McastMLDVersion                  uint8
	McastLastMemberIntvl, McastMembershipIntvl         uint64
	McastQuerierIntvl, McastQueryIntvl                 uint64
	McastQueryResponseIntvl, McastStartupQueryIntvl    uint64
	NFCallIPTables, NFCallIP6Tables, NFCallARPTables   uint8
}

// BridgePortInfo is what br_port_fill_attrs() reports of a bridge port.
type BridgePortInfo struct {
	State                          uint8 // BR_STATE_*
	Priority                       uint16
	Cost                           uint32
	Learning, UnicastFlood         uint8
	McastFlood, BcastFlood         uint8
	RootID, BridgeID               [8]byte
	DesignatedPort, DesignatedCost uint16
	ID, No                         uint16
	MessageAgeTimer                uint64
	ForwardDelayTimer, HoldTimer   uint64
	MulticastRouter                uint8
	McastEHTHostsLimit             uint32
}

// Inet6Info is what inet6_fill_ifla6_attrs() reports for a device.
type Inet6Info struct {
	Flags                      uint32
	Tstamp                     uint32 // 1/100 s since boot (cstamp_delta())
	ReachableTime, RetransTime uint32 // ms
	Conf                       []int32
	Token                      [16]byte
	AddrGenMode                uint8
}

// Link request kinds, for the error texts that differ between handlers.
const (
	LinkGet  = iota // rtnl_getlink()
	LinkSet         // rtnl_newlink() / rtnl_setlink()
	LinkDump        // rtnl_dump_ifinfo()
)

// ifnamePolicy is ifla_policy's IFLA_IFNAME: NLA_STRING, IFNAMSIZ-1.
var ifnamePolicy = policy{kind: polString}

// DecodeLinkRequest decodes an RTM_GETLINK / RTM_NEWLINK / RTM_SETLINK
// request of the given kind: the ifinfomsg, IFLA_IFNAME / IFLA_ALT_IFNAME
// and IFLA_EXT_MASK. Other attributes are reported in Unsupported (the
// offset of the first). Errors are the kernel's for a short header and for
// an IFLA_IFNAME longer than IFNAMSIZ-1 (nlmsg_parse_deprecated() with
// ifla_policy). A dump's parse errors are ignored, as rtnl_dump_ifinfo()
// ignores them, and a dump request may carry only a struct rtgenmsg.
func DecodeLinkRequest(m *Message, kind int) (l *LinkMsg, unsupported uint32, err *Error) {
	l = &LinkMsg{}
	d := m.Data
	if len(d) >= 1 {
		l.Family = d[0]
	}
	if len(d) < IfInfoLen {
		switch kind {
		case LinkGet:
			// rtnl_valid_getlink_req()
			return nil, 0, Errorf(syscall.EINVAL, "Invalid header for get link")
		case LinkSet:
			// __nlmsg_parse()
			return nil, 0, Errorf(syscall.EINVAL, "Invalid header length")
		}
		return l, 0, nil // struct rtgenmsg: no attributes are looked at
	}
	l.Type = ne.Uint16(d[2:])
	l.Index = int32(ne.Uint32(d[4:]))
	l.Flags = ne.Uint32(d[8:])
	l.Change = ne.Uint32(d[12:])
	var name, alt []byte
	var hasName, hasAlt bool
	perr := walkAttrs(d[IfInfoLen:], ifinfoAttrBase, func(a rawAttr) *Error {
		switch a.typ {
		case IFLA_IFNAME, IFLA_ALT_IFNAME:
			if a.typ == IFLA_IFNAME {
				if err := validateIfname(a); err != nil {
					return err
				}
				name, hasName = trimNul(a.data), true
			} else {
				alt, hasAlt = trimNul(a.data), true
			}
		case IFLA_MASTER:
			if kind != LinkDump {
				if unsupported == 0 {
					unsupported = a.off
				}
				break
			}
			if len(a.data) < 4 {
				return &Error{Errno: syscall.ERANGE, Msg: "Attribute failed policy validation", Offset: a.off, Policy: policyNest(policy{kind: polU32})}
			}
			l.Master = ne.Uint32(a.data)
		case IFLA_LINKINFO:
			if kind != LinkDump {
				if unsupported == 0 {
					unsupported = a.off
				}
				break
			}
			// linkinfo_to_kind_ops(): the dump filter's kind.
			_ = walkAttrs(a.data, int(a.off)+nlaHdrLen, func(b rawAttr) *Error {
				if b.typ == IFLA_INFO_KIND {
					l.Kind = string(trimNul(b.data))
				}
				return nil
			})
		case IFLA_EXT_MASK:
			if len(a.data) < 4 {
				return &Error{Errno: syscall.ERANGE, Msg: "Attribute failed policy validation", Offset: a.off, Policy: policyNest(policy{kind: polU32})}
			}
			l.ExtMask = ne.Uint32(a.data)
		default:
			if unsupported == 0 {
				unsupported = a.off
			}
		}
		return nil
	})
	if perr != nil {
		if kind == LinkDump {
			return &LinkMsg{Family: l.Family}, 0, nil
		}
		return nil, 0, perr
	}
	// rtnl_dev_get(): IFLA_ALT_IFNAME, when present, is the name looked up.
	switch {
	case hasAlt:
		l.Name, l.HasName = alt, true
	case hasName:
		l.Name, l.HasName = name, true
	}
	if kind != LinkDump && AttrsLeftover(d[IfInfoLen:]) > 0 {
		l.Warning = "bytes leftover after parsing attributes"
	}
	return l, unsupported, nil
}

// iflaMax is IFLA_MAX on Linux 6.18 (measured: a strict link dump with
// attribute 69 fails its policy, 70 is "Unknown attribute type").
const iflaMax = 69

// DecodeLinkDump decodes an RTM_GETLINK dump request: ExtMask and Master.
// Without strict checking nothing fails (after a policy error every
// attribute is dropped: rtnl_dump_ifinfo() walks the devices anyway).
// With NETLINK_GET_STRICT_CHK the request is validated as
// rtnl_valid_dump_ifinfo_req() and rtnl_dump_ifinfo() do, or
// inet6_valid_dump_ifinfo() for AF_INET6.
func DecodeLinkDump(m *Message, strict bool) (*LinkMsg, *Error) {
	l, _, _ := DecodeLinkRequest(m, LinkDump)
	if !strict {
		return l, nil
	}
	d := m.Data
	if l.Family == AF_INET6 {
		switch {
		case len(d) < IfInfoLen:
			return nil, Errorf(syscall.EINVAL, "ipv6: Invalid header for link dump request")
		case d[1] != 0 || l.Type != 0 || l.Index != 0 || l.Flags != 0 || l.Change != 0:
			return nil, Errorf(syscall.EINVAL, "ipv6: Invalid values in header for dump request")
		case len(d) > IfInfoLen:
			return nil, Errorf(syscall.EINVAL, "ipv6: Invalid data after header")
		}
		return l, nil
	}
	switch {
	case len(d) < IfInfoLen:
		return nil, Errorf(syscall.EINVAL, "Invalid header for link dump")
	case d[1] != 0 || l.Type != 0 || l.Flags != 0 || l.Change != 0:
		return nil, Errorf(syscall.EINVAL, "Invalid values in header for link dump request")
	case l.Index != 0:
		return nil, Errorf(syscall.EINVAL, "Filter by device index not supported for link dumps")
	}
	// nlmsg_parse_deprecated_strict() validates every attribute first;
	// then rtnl_dump_ifinfo() refuses those it cannot filter by.
	unsupported := false
	perr := walkAttrs(d[IfInfoLen:], ifinfoAttrBase, func(a rawAttr) *Error {
		switch a.typ {
		case IFLA_EXT_MASK, IFLA_MASTER, IFLA_TARGET_NETNSID:
			if len(a.data) < 4 {
				return &Error{Errno: syscall.ERANGE, Msg: "Attribute failed policy validation", Offset: a.off, Policy: policyNest(policy{kind: polU32})}
			}
		case IFLA_LINKINFO:
		case IFLA_IFNAME:
			if err := validateIfname(a); err != nil {
				return err
			}
			unsupported = true
		default:
			// NL_VALIDATE_MAXTYPE: type 0 or above IFLA_MAX.
			if a.typ == 0 || a.typ > iflaMax {
				return &Error{Errno: syscall.EINVAL, Msg: "Unknown attribute type", Offset: a.off}
			}
			unsupported = true
		}
		return nil
	})
	if perr != nil {
		return nil, perr
	}
	if unsupported {
		return nil, Errorf(syscall.EINVAL, "Unsupported attribute in link dump request")
	}
	return l, nil
}

// validateIfname is validate_nla() for IFLA_IFNAME.
func validateIfname(a rawAttr) *Error {
	n := len(a.data)
	if n > 0 && a.data[n-1] == 0 {
		n--
	}
	if n > ifNameMax {
		return &Error{Errno: syscall.ERANGE, Msg: "Attribute failed policy validation", Offset: a.off, Policy: policyNest(ifnamePolicy)}
	}
	return nil
}

// linkEnc appends attributes with the kernel's nla_put() layout.
type linkEnc struct{ b []byte }

func (e *linkEnc) put(t uint16, data []byte) {
	e.b = ne.AppendUint16(e.b, uint16(nlaHdrLen+len(data)))
	e.b = ne.AppendUint16(e.b, t)
	e.b = append(e.b, data...)
	for len(e.b)%4 != 0 {
		e.b = append(e.b, 0)
	}
}

func (e *linkEnc) zeros(t uint16, n int) {
	e.b = ne.AppendUint16(e.b, uint16(nlaHdrLen+n))
	e.b = ne.AppendUint16(e.b, t)
	e.b = append(e.b, make([]byte, align4(n))...)
}

func (e *linkEnc) u8(t uint16, v uint8) { e.put(t, []byte{v}) }

func (e *linkEnc) flag(t uint16, v bool) {
	var b uint8
	if v {
		b = 1
	}
	e.u8(t, b)
}

func (e *linkEnc) u16(t uint16, v uint16) { e.put(t, ne.AppendUint16(nil, v)) }
func (e *linkEnc) u32(t uint16, v uint32) { e.put(t, ne.AppendUint32(nil, v)) }
func (e *linkEnc) str(t uint16, s string) { e.put(t, append([]byte(s), 0)) }

// nest starts a nested attribute (nla_nest_start_noflag(), or with
// NLA_F_NESTED in t) and returns its start for end.
func (e *linkEnc) nest(t uint16) int {
	start := len(e.b)
	e.b = ne.AppendUint16(e.b, 0)
	e.b = ne.AppendUint16(e.b, t)
	return start
}

func (e *linkEnc) end(start int) { ne.PutUint16(e.b[start:], uint16(len(e.b)-start)) }

func (e *linkEnc) conf(t uint16, conf []int32) {
	b := make([]byte, 0, 4*len(conf))
	for _, v := range conf {
		b = ne.AppendUint32(b, uint32(v))
	}
	e.put(t, b)
}

// snmp6 is a zeroed counter block of n u64s with n in slot 0
// (__snmp6_fill_stats64()).
func (e *linkEnc) snmp6(t uint16, n int) {
	b := make([]byte, 8*n)
	ne.PutUint64(b, uint64(n))
	e.put(t, b)
}

// inet6 is inet6_fill_ifla6_attrs().
func (e *linkEnc) inet6(i *Inet6Info, extMask uint32) {
	e.u32(IFLA_INET6_FLAGS, i.Flags)
	ci := ne.AppendUint32(nil, ipv6MaxPlen) // max_reasm_len
	ci = ne.AppendUint32(ci, i.Tstamp)
	ci = ne.AppendUint32(ci, i.ReachableTime)
	ci = ne.AppendUint32(ci, i.RetransTime)
	e.put(IFLA_INET6_CACHEINFO, ci)
	e.conf(IFLA_INET6_CONF, i.Conf)
	if extMask&RTEXT_FILTER_SKIP_STATS == 0 {
		e.snmp6(IFLA_INET6_STATS, ipstatsMIBMax)
		e.snmp6(IFLA_INET6_ICMP6STATS, icmp6MIBMax)
	}
	e.put(IFLA_INET6_TOKEN, i.Token[:])
	e.u8(IFLA_INET6_ADDR_GEN_MODE, i.AddrGenMode)
}

func ifinfoHeader(family uint8, l *LinkMsg) []byte {
	var h [IfInfoLen]byte
	h[0] = family
	ne.PutUint16(h[2:], l.Type)
	ne.PutUint32(h[4:], uint32(l.Index))
	ne.PutUint32(h[8:], l.Flags)
	ne.PutUint32(h[12:], l.Change)
	return h[:]
}

// AppendLink appends the RTM_NEWLINK that rtnl_fill_ifinfo() builds for a
// device (AF_UNSPEC), in the kernel's attribute order. extMask is the
// request's IFLA_EXT_MASK (0 for notifications).
func AppendLink(dst []byte, flags uint16, seq, pid uint32, l *LinkMsg, extMask uint32) []byte {
	return appendLink(dst, RTM_NEWLINK, flags, seq, pid, l, extMask)
}

func appendLink(dst []byte, msgType, flags uint16, seq, pid uint32, l *LinkMsg, extMask uint32) []byte {
	e := linkEnc{b: make([]byte, 0, 1536)}
	e.str(IFLA_IFNAME, string(l.Name))
	e.u32(IFLA_TXQLEN, l.TxQueueLen)
	e.u8(IFLA_OPERSTATE, l.OperState)
	e.u8(IFLA_LINKMODE, l.LinkMode)
	e.flag(IFLA_NETNS_IMMUTABLE, l.NetnsImmutable)
	e.u32(IFLA_MTU, l.MTU)
	e.u32(IFLA_MIN_MTU, l.MinMTU)
	e.u32(IFLA_MAX_MTU, l.MaxMTU)
	e.u32(IFLA_GROUP, l.Group)
	e.u32(IFLA_PROMISCUITY, l.Promiscuity)
	e.u32(IFLA_ALLMULTI, l.Allmulti)
	e.u32(IFLA_NUM_TX_QUEUES, l.NumTxQueues)
	e.u32(IFLA_GSO_MAX_SEGS, l.GSOMaxSegs)
	e.u32(IFLA_GSO_MAX_SIZE, l.GSOMaxSize)
	e.u32(IFLA_GRO_MAX_SIZE, l.GROMaxSize)
	e.u32(IFLA_GSO_IPV4_MAX_SIZE, l.GSOIPv4MaxSize)
	e.u32(IFLA_GRO_IPV4_MAX_SIZE, l.GROIPv4MaxSize)
	e.u32(IFLA_TSO_MAX_SIZE, l.TSOMaxSize)
	e.u32(IFLA_TSO_MAX_SEGS, l.TSOMaxSegs)
	e.u32(IFLA_MAX_PACING_OFFLOAD_HORIZON, l.MaxPacingOffloadHorizon)
	e.u32(IFLA_NUM_RX_QUEUES, l.NumRxQueues)
	if l.Master != 0 {
		e.u32(IFLA_MASTER, l.Master) // rtnl_fill_ifinfo(): put_master()
	}
	e.flag(IFLA_CARRIER, l.Carrier)
	if l.Alias != "" {
		e.str(IFLA_IFALIAS, l.Alias) // nla_put_ifalias()
	}
	e.u32(IFLA_CARRIER_CHANGES, l.CarrierChanges)
	e.u32(IFLA_CARRIER_UP_COUNT, l.CarrierUpCnt)
	e.u32(IFLA_CARRIER_DOWN_COUNT, l.CarrierDnCnt)
	e.u16(IFLA_HEADROOM, l.Headroom)
	e.u16(IFLA_TAILROOM, l.Tailroom)
	e.flag(IFLA_PROTO_DOWN, l.ProtoDown)
	if l.Event != 0 {
		e.u32(IFLA_EVENT, l.Event)
	}
	if len(l.Address) > 0 {
		e.put(IFLA_ADDRESS, l.Address)
		e.put(IFLA_BROADCAST, l.Broadcast)
	}
	// rtnl_fill_stats(): IFLA_STATS64 then IFLA_STATS.
	e.zeros(IFLA_STATS64, linkStats64Len)
	e.zeros(IFLA_STATS, linkStatsLen)
	// rtnl_xdp_fill(): no program attached.
	x := e.nest(IFLA_XDP)
	e.u8(IFLA_XDP_ATTACHED, 0)
	e.end(x)
	e.linkinfo(l)
	if l.HasIfLink {
		e.u32(IFLA_LINK, uint32(l.IfLink)) // nla_put_iflink(): dev_get_iflink() differs from ifindex
	}
	if l.Qdisc != "" {
		e.str(IFLA_QDISC, l.Qdisc)
	}
	// rtnl_fill_link_af(): the families with a fill_link_af, in
	// registration order (inet, then inet6).
	if l.EmptyAFSpec {
		e.end(e.nest(IFLA_AF_SPEC))
	} else if l.Inet4Conf != nil || l.Inet6 != nil {
		af := e.nest(IFLA_AF_SPEC)
		if l.Inet4Conf != nil {
			n := e.nest(AF_INET)
			e.conf(IFLA_INET_CONF, l.Inet4Conf)
			e.end(n)
		}
		if l.Inet6 != nil {
			n := e.nest(AF_INET6)
			e.inet6(l.Inet6, extMask)
			e.end(n)
		}
		e.end(af)
	}
	e.zeros(IFLA_MAP, linkIfmapLen)
	// rtnl_fill_devlink_port() and rtnl_fill_dpll_pin(): empty nests.
	e.end(e.nest(IFLA_DEVLINK_PORT | nlaFNested))
	e.end(e.nest(IFLA_DPLL_PIN | nlaFNested))
	return AppendMessage(dst, msgType, flags, seq, pid, ifinfoHeader(AF_UNSPEC, l), e.b)
}

// AppendDelLink appends the RTM_DELLINK of unregister_netdevice_many():
// rtnl_fill_ifinfo() of the device's last state, change ^0.
func AppendDelLink(dst []byte, flags uint16, seq, pid uint32, l *LinkMsg) []byte {
	return appendLink(dst, RTM_DELLINK, flags, seq, pid, l, 0)
}

// Link info attributes (IFLA_INFO_*), bridge (IFLA_BR_*) and bridge port
// (IFLA_BRPORT_*) attributes.
const (
	IFLA_INFO_KIND       = 1
	IFLA_INFO_DATA       = 2
	IFLA_INFO_XSTATS     = 3
	IFLA_INFO_SLAVE_KIND = 4
	IFLA_INFO_SLAVE_DATA = 5

	VETH_INFO_PEER = 1

	IFLA_VLAN_ID       = 1
	IFLA_VLAN_PROTOCOL = 5
)

// linkinfo is rtnl_link_fill(): IFLA_INFO_KIND and the kind's
// fill_info(), then rtnl_link_slave_info_fill() for a port.
func (e *linkEnc) linkinfo(l *LinkMsg) {
	if l.Kind == "" && l.BridgePort == nil {
		return
	}
	li := e.nest(IFLA_LINKINFO)
	if l.Kind != "" {
		e.str(IFLA_INFO_KIND, l.Kind)
	}
	if b := l.Bridge; b != nil {
		d := e.nest(IFLA_INFO_DATA)
		e.bridge(b)
		e.end(d)
	}
	if p := l.BridgePort; p != nil {
		e.str(IFLA_INFO_SLAVE_KIND, "bridge")
		d := e.nest(IFLA_INFO_SLAVE_DATA)
		e.bridgePort(p)
		e.end(d)
	}
	e.end(li)
}

func (e *linkEnc) u64(t uint16, v uint64) { e.put(t, ne.AppendUint64(nil, v)) }

// bridge is br_fill_info() (net/bridge/br_netlink.c) on 6.18 for a bridge
// without VLAN filtering support compiled in, as measured.
func (e *linkEnc) bridge(b *BridgeInfo) {
	e.u64(16, b.HelloTimer) // IFLA_BR_HELLO_TIMER
	e.u64(17, b.TcnTimer)
	e.u64(18, b.TopologyChangeTimer)
	e.u64(19, b.GCTimer)
	e.u32(1, b.ForwardDelay) // IFLA_BR_FORWARD_DELAY
	e.u32(2, b.HelloTime)
	e.u32(3, b.MaxAge)
	e.u32(4, b.AgeingTime)
	e.u32(5, b.StpState)
	e.u16(6, b.Priority)
	e.u8(7, b.VlanFiltering)
	e.u16(9, b.GroupFwdMask)
	e.put(11, b.BridgeID[:]) // IFLA_BR_BRIDGE_ID
	e.put(10, b.RootID[:])   // IFLA_BR_ROOT_ID
	e.u16(12, b.RootPort)
	e.u32(13, b.RootPathCost)
	e.u8(14, b.TopologyChange)
	e.u8(15, b.TopologyChangeDetected)
	e.put(20, b.GroupAddr[:])
	e.put(46, ne.AppendUint32(ne.AppendUint32(nil, b.BoolOptVal), b.BoolOptMask)) // IFLA_BR_MULTI_BOOLOPT
	e.u32(48, b.FdbNLearned)
	e.u32(49, b.FdbMaxLearned)
	e.u8(22, b.McastRouter)
	e.u8(23, b.McastSnooping)
	e.u8(24, b.McastQueryUseIfaddr)
	e.u8(25, b.McastQuerier)
	e.u8(42, b.McastStatsEnabled)
	e.u32(26, b.McastHashElasticity)
	e.u32(27, b.McastHashMax)
	e.u32(28, b.McastLastMemberCnt)
	e.u32(29, b.McastStartupQueryCnt)
	e.u8(43, b.McastIGMPVersion)
	e.u8(44, b.McastMLDVersion)
	e.u64(30, b.McastLastMemberIntvl)
	e.u64(31, b.McastMembershipIntvl)
	e.u64(32, b.McastQuerierIntvl)
	e.u64(33, b.McastQueryIntvl)
	e.u64(34, b.McastQueryResponseIntvl)
	e.u64(35, b.McastStartupQueryIntvl)
	e.u8(36, b.NFCallIPTables)
	e.u8(37, b.NFCallIP6Tables)
	e.u8(38, b.NFCallARPTables)
}

// bridgePort is br_port_fill_attrs() as measured on 6.18: the flags of a
// port nobody configured are 0 except those in the struct.
func (e *linkEnc) bridgePort(p *BridgePortInfo) {
	e.u8(1, p.State) // IFLA_BRPORT_STATE
	e.u16(2, p.Priority)
	e.u32(3, p.Cost)
	e.u8(4, 0)  // MODE (hairpin)
	e.u8(5, 0)  // GUARD
	e.u8(6, 0)  // PROTECT (root_block)
	e.u8(7, 0)  // FAST_LEAVE
	e.u8(28, 0) // MCAST_TO_UCAST
	e.u8(8, p.Learning)
	e.u8(9, p.UnicastFlood)
	e.u8(27, p.McastFlood)
	e.u8(30, p.BcastFlood)
	e.u8(10, 0) // PROXYARP
	e.u8(12, 0) // PROXYARP_WIFI
	e.put(13, p.RootID[:])
	e.put(14, p.BridgeID[:])
	e.u16(15, p.DesignatedPort)
	e.u16(16, p.DesignatedCost)
	e.u16(17, p.ID)
	e.u16(18, p.No)
	e.u8(19, 0)  // TOPOLOGY_CHANGE_ACK
	e.u8(20, 0)  // CONFIG_PENDING
	e.u8(29, 0)  // VLAN_TUNNEL
	e.u16(31, 0) // GROUP_FWD_MASK
	e.u8(32, 0)  // NEIGH_SUPPRESS
	e.u8(35, 0)  // ISOLATED
	e.u8(36, 0)  // LOCKED
	e.u8(33, 0)  // MAB
	e.u8(39, 0)  // NEIGH_VLAN_SUPPRESS
	e.u8(40, 0)
	e.u8(43, 0)
	e.u64(21, p.MessageAgeTimer)
	e.u64(22, p.ForwardDelayTimer)
	e.u64(23, p.HoldTimer)
	e.u8(25, p.MulticastRouter)
	e.u32(37, p.McastEHTHostsLimit)
	e.u32(38, 0) // MCAST_EHT_HOSTS_CNT
	e.u32(41, 0) // MCAST_N_GROUPS
	e.u32(42, 0) // MCAST_MAX_GROUPS
}

// AppendInet6Link appends the AF_INET6 RTM_NEWLINK of inet6_fill_ifinfo():
// what addrconf sends to RTNLGRP_IPV6_IFINFO (inet6_ifinfo_notify()) and
// what an AF_INET6 link dump returns. The inet6 counters are always
// included (ext_filter_mask 0).
func AppendInet6Link(dst []byte, flags uint16, seq, pid uint32, l *LinkMsg) []byte {
	e := linkEnc{b: make([]byte, 0, 768)}
	e.str(IFLA_IFNAME, string(l.Name))
	if len(l.Address) > 0 {
		e.put(IFLA_ADDRESS, l.Address)
	}
	e.u32(IFLA_MTU, l.MTU)
	if l.HasIfLink {
		e.u32(IFLA_LINK, uint32(l.IfLink)) // inet6_fill_ifinfo(): after IFLA_MTU
	}
	e.u8(IFLA_OPERSTATE, l.OperState)
	p := e.nest(IFLA_PROTINFO)
	if l.Inet6 != nil {
		e.inet6(l.Inet6, 0)
	}
	e.end(p)
	h := *l
	h.Change = 0
	return AppendMessage(dst, RTM_NEWLINK, flags, seq, pid, ifinfoHeader(AF_INET6, &h), e.b)
}

// AppendBridgeLink appends the AF_BRIDGE RTM_NEWLINK (or, with del,
// RTM_DELLINK) of a bridge port that br_fill_ifinfo() builds: what
// br_ifinfo_notify() sends to RTNLGRP_LINK and what an AF_BRIDGE link dump
// (rtnl_bridge_getlink() → br_getlink()) lists. l must have BridgePort set
// for a NEWLINK (its IFLA_PROTINFO).
func AppendBridgeLink(dst []byte, flags uint16, seq, pid uint32, l *LinkMsg, del bool) []byte {
	e := linkEnc{b: make([]byte, 0, 448)}
	e.str(IFLA_IFNAME, string(l.Name))
	e.u32(IFLA_MASTER, l.Master)
	e.u32(IFLA_MTU, l.MTU)
	e.u8(IFLA_OPERSTATE, l.OperState)
	if len(l.Address) > 0 {
		e.put(IFLA_ADDRESS, l.Address)
	}
	if l.HasIfLink {
		e.u32(IFLA_LINK, uint32(l.IfLink))
	}
	typ := uint16(RTM_NEWLINK)
	if del {
		typ = RTM_DELLINK
	} else if l.BridgePort != nil {
		p := e.nest(IFLA_PROTINFO | nlaFNested)
		e.bridgePort(l.BridgePort)
		e.end(p)
	}
	h := *l
	h.Change = 0
	return AppendMessage(dst, typ, flags, seq, pid, ifinfoHeader(AF_BRIDGE, &h), e.b)
}
