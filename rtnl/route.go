package rtnl

import (
	"net/netip"
	"slices"
	"syscall"
)

// routeAttrBase is the offset of a route message's first attribute from the
// start of its nlmsghdr: NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(struct rtmsg)).
const routeAttrBase = NLMSG_HDRLEN + RtmsgLen

// RouteMsg is a typed RTM_NEWROUTE / RTM_DELROUTE / RTM_GETROUTE message:
// the struct rtmsg header and the RTA_* attributes. A decoded request
// records which attributes were present (Has), where (Off) and how long
// their payload was (Len), so the semantic checks of fib/config*.go can
// report the kernel's errors; handlers build replies by filling one, marking
// the attributes with Set, and calling AppendRoute.
//
// Addresses are netip.Addr of the message's family (4 bytes for AF_INET, 16
// for AF_INET6). A request's address attribute longer than the family's
// size is truncated to it (nla_get_in_addr / nla_get_in6_addr read only the
// first bytes); an IPv6 RTA_DST / RTA_SRC shorter than 16 bytes is zero
// padded (rtm_to_fib6_config() copies only (len+7)/8 bytes; Len tells how
// many there were).
type RouteMsg struct {
	Family, DstLen, SrcLen, Tos, Table, Protocol, Scope, Type uint8
	Flags                                                     uint32

	// Present has bit 1<<RTA_x set for each attribute present.
	Present uint64
	offs    [RTA_MAX + 1]uint32
	lens    [RTA_MAX + 1]uint16

	Dst, Src, Gateway, PrefSrc netip.Addr
	// SelSrc is the source address an IPv6 route-get reply reports before
	// the route's configured prefsrc (rt6_fill_node() puts two RTA_PREFSRC
	// attributes then: the selected source, then fib6_prefsrc). Emitted when
	// valid; only IPv6 output-path replies use it.
	SelSrc netip.Addr

	IIF, OIF, Priority, Table32, Mark, UID, Flow, Expires, NHID uint32
	// FlowLabel is the host value of the be32 RTA_FLOWLABEL.
	FlowLabel uint32
	// Sport and Dport are host values of the be16 RTA_SPORT / RTA_DPORT.
	Sport, Dport uint16
	IPProto      uint8
	Pref         uint8
	EncapType    uint16
	// Encap is the raw content of RTA_ENCAP (lwtunnel, unsupported).
	Encap []byte

	// Via is RTA_VIA: ViaFamily is rtvia_family; ViaAddr the address when
	// its length matches the family (else invalid; see Len(RTA_VIA)).
	ViaFamily uint16
	ViaAddr   netip.Addr

	// Metrics is RTA_METRICS, decoded liberally; requests are converted
	// with the kernel's checks by ConvertMetrics.
	Metrics Metrics
	// Multipath is RTA_MULTIPATH's hops; MultipathRest the bytes after the
	// last whole rtnexthop (rtnh_ok() stopped), which the kernel reports as
	// "extra data after nexthops".
	Multipath     []Nexthop
	MultipathRest int

	// CacheInfo is RTA_CACHEINFO (struct rta_cacheinfo).
	CacheInfo CacheInfo

	// Warning is the extack text a successful parse leaves behind ("bytes
	// leftover after parsing attributes").
	Warning string

	attrs   []byte // undecoded attributes of a request
	metrics []byte // raw RTA_METRICS content (for ConvertMetrics)
}

// Metrics is the content of RTA_METRICS: the RTAX_* values present, in
// RTAX order when encoded. RTAX_CC_ALGO is a string.
type Metrics struct {
	// Set has bit 1<<RTAX_x for each metric present.
	Set    uint32
	Val    [RTAX_MAX + 1]uint32
	CCAlgo string
}

// Has reports whether metric t is present.
func (x *Metrics) Has(t int) bool { return t >= 0 && t <= RTAX_MAX && x.Set&(1<<uint(t)) != 0 }

// Put sets metric t (u32 metrics; use CCAlgo for RTAX_CC_ALGO).
func (x *Metrics) Put(t int, v uint32) {
	x.Set |= 1 << uint(t)
	x.Val[t] = v
}

// Nexthop is one struct rtnexthop of RTA_MULTIPATH and its nested
// attributes. Hops is rtnh_hops (weight - 1).
type Nexthop struct {
	Flags   uint8
	Hops    uint8
	IfIndex int32
	// Present has bit 1<<RTA_x for the nested attributes present (the
	// first of each type: the kernel reads them with nla_find()).
	Present   uint32
	Gateway   netip.Addr
	ViaFamily uint16
	ViaAddr   netip.Addr
	Flow      uint32
	EncapType uint16
	Encap     []byte
	// EncapOff is the offset of the hop's RTA_ENCAP attribute from the
	// start of the nlmsghdr (for the extack of lwtunnel_build_state()).
	EncapOff uint32
	// GatewayLen, ViaLen, FlowLen and EncapTypeLen are the payload lengths
	// of the nested attributes of a request (for the kernel's length
	// checks).
	GatewayLen, ViaLen, FlowLen, EncapTypeLen int
	// Off is the offset of this rtnexthop from the start of the nlmsghdr.
	Off uint32
}

// Has reports whether nested attribute t was present.
func (h *Nexthop) Has(t int) bool { return t >= 0 && t < 32 && h.Present&(1<<uint(t)) != 0 }

// Set marks nested attribute t present (for replies).
func (h *Nexthop) Set(t int) { h.Present |= 1 << uint(t) }

// Weight is the hop's weight, rtnh_hops + 1.
func (h *Nexthop) Weight() int { return int(h.Hops) + 1 }

// CacheInfo is struct rta_cacheinfo.
type CacheInfo struct {
	ClntRef, LastUse uint32
	Expires          int32
	Error            uint32
	Used, ID, TS     uint32
	TSAge            uint32
}

// Has reports whether attribute t was present.
func (m *RouteMsg) Has(t int) bool { return t >= 0 && t <= RTA_MAX && m.Present&(1<<uint(t)) != 0 }

// Set marks attribute t present (for replies).
func (m *RouteMsg) Set(t int) { m.Present |= 1 << uint(t) }

// Off returns the offset of attribute t from the start of the request's
// nlmsghdr (for NL_SET_ERR_MSG_ATTR); 0 when absent.
func (m *RouteMsg) Off(t int) uint32 {
	if t < 0 || t > RTA_MAX {
		return 0
	}
	return m.offs[t]
}

// Len returns the payload length (nla_len) of attribute t of a request.
func (m *RouteMsg) Len(t int) int {
	if t < 0 || t > RTA_MAX {
		return 0
	}
	return int(m.lens[t])
}

// HasTrailingAttrs reports whether the request carried bytes after the
// rtmsg.
func (m *RouteMsg) HasTrailingAttrs() bool { return len(m.attrs) > 0 }

// TableID returns the effective table of a request: RTA_TABLE when present
// (any value), else rtm_table (rtm_to_fib_config(): 0 is left for the caller
// to map to RT_TABLE_MAIN).
func (m *RouteMsg) TableID() uint32 {
	if m.Has(RTA_TABLE) {
		return m.Table32
	}
	return uint32(m.Table)
}

// SetTable sets the reply's table: RTA_TABLE with the id and rtm_table = id
// when it fits in 8 bits, else RT_TABLE_COMPAT (rt_fill_info(),
// rt6_fill_node()).
func (m *RouteMsg) SetTable(id uint32) {
	m.Table32 = id
	m.Set(RTA_TABLE)
	if id < 256 {
		m.Table = uint8(id)
	} else {
		m.Table = RT_TABLE_COMPAT
	}
}

// RouteFamily returns the family byte of a route message, AF_UNSPEC when
// the body is too short to hold one (rtnl_msg_family()).
func RouteFamily(m *Message) uint8 {
	if len(m.Data) < 1 {
		return AF_UNSPEC
	}
	return m.Data[0]
}

func (m *RouteMsg) decodeHeader(d []byte) {
	*m = RouteMsg{
		Family: d[0], DstLen: d[1], SrcLen: d[2], Tos: d[3], Table: d[4],
		Protocol: d[5], Scope: d[6], Type: d[7], Flags: ne.Uint32(d[8:]),
	}
	if len(d) > RtmsgLen {
		m.attrs = d[RtmsgLen:]
	}
}

// DecodeRouteRequest decodes an RTM_NEWROUTE or RTM_DELROUTE request as
// rtm_to_fib_config() (IPv4: nlmsg_validate_deprecated with
// rtm_ipv4_policy, then every attribute in message order, the last of a type
// winning) and rtm_to_fib6_config() (IPv6: nlmsg_parse_deprecated with
// rtm_ipv6_policy) do before their semantic checks: a family without a route
// handler is EOPNOTSUPP (rtnetlink_rcv_msg()), a body shorter than struct
// rtmsg is EINVAL (bare for IPv4, "Invalid header length" for IPv6), a
// policy failure is
// "Attribute failed policy validation" at the attribute's offset with the
// policy description. The semantic checks (tos, type, prefix length, via,
// nexthop id, ...) are the caller's, in the kernel's order.
//
// Only AF_INET and AF_INET6 are decoded. The IP multicast-routing families
// have route handlers of their own, which a dispatcher must answer for
// (measured on Linux 6.18 without multicast routing: RTNL_FAMILY_IPMR
// NEWROUTE/DELROUTE of a unicast header EINVAL without extack, its doit
// GETROUTE ENOENT; RTNL_FAMILY_IP6MR NEWROUTE EOPNOTSUPP, its GETROUTE
// ENOENT "ipv6: MR table does not exist"; both dumps empty).
func DecodeRouteRequest(m *Message) (*RouteMsg, *Error) {
	r := new(RouteMsg)
	if err := r.DecodeRequest(m); err != nil {
		return nil, err
	}
	return r, nil
}

// DecodeRequest is DecodeRouteRequest into r.
func (r *RouteMsg) DecodeRequest(m *Message) *Error {
	fam := RouteFamily(m)
	if fam != AF_INET && fam != AF_INET6 {
		return Errno(syscall.EOPNOTSUPP)
	}
	if len(m.Data) < RtmsgLen {
		if fam == AF_INET6 {
			// nlmsg_parse_deprecated() says why; IPv4's
			// nlmsg_validate_deprecated() does not.
			return Errorf(syscall.EINVAL, "Invalid header length")
		}
		return Errno(syscall.EINVAL)
	}
	r.decodeHeader(m.Data)
	return r.parseAttrs(routePolicy(fam), validateLiberal)
}

// DecodeRouteGet decodes an RTM_GETROUTE request without NLM_F_DUMP as
// inet_rtm_valid_getroute_req() / inet6_rtm_valid_getroute_req() validate
// it: on a socket without NETLINK_GET_STRICT_CHK only the length and the
// policy (liberal); with strict checking the header values, the flags, the
// attribute set, and a strict parse (unknown types and trailing bytes
// rejected).
func DecodeRouteGet(m *Message, strict bool) (*RouteMsg, *Error) {
	r := new(RouteMsg)
	if err := r.DecodeGet(m, strict); err != nil {
		return nil, err
	}
	return r, nil
}

// DecodeGet is DecodeRouteGet into r.
func (r *RouteMsg) DecodeGet(m *Message, strict bool) *Error {
	fam := RouteFamily(m)
	if fam != AF_INET && fam != AF_INET6 {
		return Errno(syscall.EOPNOTSUPP)
	}
	v6 := fam == AF_INET6
	// The IPv6 texts come through NL_SET_ERR_MSG_MOD ("ipv6: " prefix);
	// IPv4 spells its prefix out.
	if len(m.Data) < RtmsgLen {
		if v6 {
			return Errorf(syscall.EINVAL, "ipv6: Invalid header for get route request")
		}
		return Errorf(syscall.EINVAL, "ipv4: Invalid header for route get request")
	}
	r.decodeHeader(m.Data)
	pol := routePolicy(fam)
	if !strict {
		return r.parseAttrs(pol, validateLiberal)
	}
	full := uint8(32)
	if v6 {
		full = 128
	}
	if (r.SrcLen != 0 && r.SrcLen != full) || (r.DstLen != 0 && r.DstLen != full) ||
		r.Table != 0 || r.Protocol != 0 || r.Scope != 0 || r.Type != 0 {
		if v6 {
			return Errorf(syscall.EINVAL, "ipv6: Invalid values in header for get route request")
		}
		return Errorf(syscall.EINVAL, "ipv4: Invalid values in header for route get request")
	}
	if v6 {
		if r.Flags&^RTM_F_FIB_MATCH != 0 {
			return Errorf(syscall.EINVAL, "ipv6: Invalid flags for get route request")
		}
	} else if r.Flags&^(RTM_F_NOTIFY|RTM_F_LOOKUP_TABLE|RTM_F_FIB_MATCH) != 0 {
		return Errorf(syscall.EINVAL, "ipv4: Unsupported rtm_flags for route get request")
	}
	if err := r.parseAttrs(pol, validateDeprecatedStrict); err != nil {
		return err
	}
	if (r.Has(RTA_SRC) && r.SrcLen == 0) || (r.Has(RTA_DST) && r.DstLen == 0) {
		if v6 {
			return Errorf(syscall.EINVAL, "ipv6: rtm_src_len and rtm_dst_len must be 128 for IPv6")
		}
		return Errorf(syscall.EINVAL, "ipv4: rtm_src_len and rtm_dst_len must be 32 for IPv4")
	}
	allowed := uint64(1<<RTA_IIF | 1<<RTA_OIF | 1<<RTA_SRC | 1<<RTA_DST | 1<<RTA_IP_PROTO |
		1<<RTA_SPORT | 1<<RTA_DPORT | 1<<RTA_MARK | 1<<RTA_UID)
	if v6 {
		allowed |= 1 << RTA_FLOWLABEL
	}
	if r.Present&^allowed != 0 {
		if v6 {
			return Errorf(syscall.EINVAL, "ipv6: Unsupported attribute in get route request")
		}
		return Errorf(syscall.EINVAL, "ipv4: Unsupported attribute in route get request")
	}
	return nil
}

// RouteDump is what a route dump request asks for: ip_valid_fib_dump_req()
// in strict mode, or the legacy reading of rtm_flags otherwise.
type RouteDump struct {
	Family uint8
	// Strict is whether the request was checked strictly (the socket set
	// NETLINK_GET_STRICT_CHK).
	Strict bool
	// Flags is rtm_flags: in strict mode exactly the request's
	// (RTM_F_CLONED / RTM_F_PREFIX only); in legacy mode rtm_flags &
	// (RTM_F_CLONED | RTM_F_PREFIX) when the body holds an rtmsg (the
	// IPv6 dumper looks only at RTM_F_PREFIX then).
	Flags uint32
	// Routes and Exceptions say which entries a strict dump returns
	// (RTM_F_CLONED selects only exceptions); legacy dumps return both.
	Routes, Exceptions bool
	// Protocol and Type filter when non-zero.
	Protocol, Type uint8
	// Table filters when non-zero (rtm_table, overridden by RTA_TABLE).
	Table uint32
	// OIF filters when non-zero; the handler answers ENODEV (no extack)
	// when no device has this index.
	OIF uint32
	// Filtered is filter_set: a filter was given, so the dump's NLMSG_DONE
	// carries NLM_F_DUMP_FILTERED (every message of a strict dump carries
	// it regardless).
	Filtered bool
}

// DecodeRouteDump decodes an RTM_GETROUTE dump request. strict is the
// socket's NETLINK_GET_STRICT_CHK. Both families validate with
// rtm_ipv4_policy (inet6_dump_fib() calls ip_valid_fib_dump_req() too). The
// caller resolves missing tables; it should pass hasDev (see
// DecodeRouteDumpDev) to get the kernel's ENODEV in the kernel's order.
func DecodeRouteDump(m *Message, strict bool) (RouteDump, *Error) {
	return DecodeRouteDumpDev(m, strict, nil)
}

// DecodeRouteDumpDev is DecodeRouteDump that also checks RTA_OIF with
// hasDev (a nil hasDev accepts every index): ip_valid_fib_dump_req() walks
// tb[] by attribute type, so an unknown device (ENODEV, no extack) wins
// over an unsupported attribute of a higher type and loses to one of a
// lower type, whatever their order in the message.
func DecodeRouteDumpDev(m *Message, strict bool, hasDev func(ifindex int32) bool) (RouteDump, *Error) {
	d := RouteDump{Family: RouteFamily(m), Strict: strict, Routes: true, Exceptions: true}
	if !strict {
		if len(m.Data) >= RtmsgLen {
			d.Flags = ne.Uint32(m.Data[8:]) & (RTM_F_CLONED | RTM_F_PREFIX)
		}
		return d, nil
	}
	if len(m.Data) < RtmsgLen {
		return d, Errorf(syscall.EINVAL, "Invalid header for FIB dump request")
	}
	var r RouteMsg
	r.decodeHeader(m.Data)
	if r.DstLen != 0 || r.SrcLen != 0 || r.Tos != 0 || r.Scope != 0 {
		return d, Errorf(syscall.EINVAL, "Invalid values in header for FIB dump request")
	}
	if r.Flags&^(RTM_F_CLONED|RTM_F_PREFIX) != 0 {
		return d, Errorf(syscall.EINVAL, "Invalid flags for FIB dump request")
	}
	if r.Flags&RTM_F_CLONED != 0 {
		d.Routes = false
	} else {
		d.Exceptions = false
	}
	d.Flags, d.Protocol, d.Type, d.Table = r.Flags, r.Protocol, r.Type, uint32(r.Table)
	// The attributes are read with the IPv4 address size whatever the
	// family; only RTA_TABLE and RTA_OIF are allowed anyway.
	r.Family = AF_INET
	if err := r.parseAttrs(routePolicy(AF_INET), validateDeprecatedStrict); err != nil {
		return d, err
	}
	for t := 0; t <= RTA_MAX; t++ {
		if !r.Has(t) {
			continue
		}
		switch t {
		case RTA_TABLE:
			d.Table = r.Table32
		case RTA_OIF:
			d.OIF = r.OIF
			if hasDev != nil && !hasDev(int32(r.OIF)) {
				return d, Errno(syscall.ENODEV)
			}
		default:
			return d, Errorf(syscall.EINVAL, "Unsupported attribute in dump request")
		}
	}
	d.Filtered = d.Flags != 0 || d.Protocol != 0 || d.Type != 0 || d.Table != 0 || d.OIF != 0
	return d, nil
}

// parseAttrs validates the request's attributes against pol (mode as
// __nla_validate_parse()'s validate argument) and decodes each; a later
// attribute of a type overrides an earlier one, as both rtm_to_fib_config()'s
// loop and nla_parse()'s tb[] do.
func (r *RouteMsg) parseAttrs(pol *policySet, mode validateMode) *Error {
	it := attrIter{b: r.attrs, base: routeAttrBase}
	for {
		a, ok := it.next()
		if !ok {
			break
		}
		use, err := pol.check(a, mode)
		if err != nil {
			return err
		}
		if use {
			r.decodeAttr(a)
		}
	}
	if it.leftover() > 0 {
		if mode&validateTrailing != 0 {
			return Errorf(syscall.EINVAL, "bytes leftover after parsing attributes")
		}
		r.Warning = "bytes leftover after parsing attributes"
	}
	return nil
}

// addr decodes an address attribute of the message's family.
func (r *RouteMsg) addr(d []byte) netip.Addr { return addrOf(r.Family, d) }

func addrOf(fam uint8, d []byte) netip.Addr {
	if fam == AF_INET6 {
		var b [16]byte
		copy(b[:], d)
		return netip.AddrFrom16(b)
	}
	var b [4]byte
	copy(b[:], d)
	return netip.AddrFrom4(b)
}

func viaOf(d []byte) (uint16, netip.Addr) {
	if len(d) < 2 {
		return 0, netip.Addr{}
	}
	f := ne.Uint16(d)
	switch {
	case f == AF_INET && len(d) == 6:
		return f, netip.AddrFrom4([4]byte(d[2:6]))
	case f == AF_INET6 && len(d) == 18:
		return f, netip.AddrFrom16([16]byte(d[2:18]))
	}
	return f, netip.Addr{}
}

func (r *RouteMsg) decodeAttr(a rawAttr) {
	t := int(a.typ)
	r.Set(t)
	r.offs[t] = a.off
	r.lens[t] = uint16(len(a.data))
	d := a.data
	u32 := func() uint32 {
		if len(d) < 4 {
			return 0
		}
		return ne.Uint32(d)
	}
	switch t {
	case RTA_DST:
		r.Dst = r.addr(d)
	case RTA_SRC:
		r.Src = r.addr(d)
	case RTA_GATEWAY:
		r.Gateway = r.addr(d)
	case RTA_PREFSRC:
		if r.Family == AF_INET6 && r.PrefSrc.IsValid() {
			// A second RTA_PREFSRC in an IPv6 reply: the first was
			// the selected source (rt6_fill_node()).
			r.SelSrc = r.PrefSrc
		}
		r.PrefSrc = r.addr(d)
	case RTA_IIF:
		r.IIF = u32()
	case RTA_OIF:
		r.OIF = u32()
	case RTA_PRIORITY:
		r.Priority = u32()
	case RTA_TABLE:
		r.Table32 = u32()
	case RTA_MARK:
		r.Mark = u32()
	case RTA_UID:
		r.UID = u32()
	case RTA_FLOW:
		r.Flow = u32()
	case RTA_EXPIRES:
		r.Expires = u32()
	case RTA_NH_ID:
		r.NHID = u32()
	case RTA_FLOWLABEL:
		if len(d) >= 4 {
			r.FlowLabel = be.Uint32(d)
		}
	case RTA_SPORT:
		if len(d) >= 2 {
			r.Sport = be.Uint16(d)
		}
	case RTA_DPORT:
		if len(d) >= 2 {
			r.Dport = be.Uint16(d)
		}
	case RTA_IP_PROTO:
		if len(d) >= 1 {
			r.IPProto = d[0]
		}
	case RTA_PREF:
		if len(d) >= 1 {
			r.Pref = d[0]
		}
	case RTA_ENCAP_TYPE:
		if len(d) >= 2 {
			r.EncapType = ne.Uint16(d)
		}
	case RTA_ENCAP:
		r.Encap = d
	case RTA_VIA:
		r.ViaFamily, r.ViaAddr = viaOf(d)
	case RTA_METRICS:
		r.metrics = d
		r.Metrics = decodeMetrics(d)
	case RTA_MULTIPATH:
		r.Multipath, r.MultipathRest = decodeMultipath(r.Family, d, a.off+nlaHdrLen)
	case RTA_CACHEINFO:
		var c [8]uint32
		for i := range c {
			if len(d) >= 4*i+4 {
				c[i] = ne.Uint32(d[4*i:])
			}
		}
		r.CacheInfo = CacheInfo{c[0], c[1], int32(c[2]), c[3], c[4], c[5], c[6], c[7]}
	}
}

// decodeMetrics reads RTA_METRICS liberally (for replies and round trips):
// types 1..RTAX_MAX, u32 values of at least 4 bytes, RTAX_CC_ALGO a string.
func decodeMetrics(b []byte) Metrics {
	var x Metrics
	for it := (attrIter{b: b}); ; {
		a, ok := it.next()
		if !ok {
			return x
		}
		t := int(a.typ)
		switch {
		case t == 0 || t > RTAX_MAX:
		case t == RTAX_CC_ALGO:
			x.Set |= 1 << RTAX_CC_ALGO
			x.CCAlgo = string(trimNul(a.data))
		case len(a.data) >= 4:
			x.Put(t, ne.Uint32(a.data))
		}
	}
}

// ConvertMetrics is ip_metrics_convert(): the request's RTA_METRICS as the
// kernel stores them, with its errors ("Invalid metric type", "Invalid
// attribute in metrics" pointing at the metric, "Unknown tcp congestion
// algorithm", "Unknown flag set in feature mask in metrics attribute") and
// clamps (advmss ≤ 65495, mtu ≤ 65520, hoplimit ≤ 255). ccKnown says
// whether a congestion control name exists (tcp_ca_get_key_by_name()); nil
// means the algorithms built into the reference kernel (reno, cubic, bbr:
// its tcp_available_congestion_control). Metrics with value 0 stay present (the kernel stores 0,
// which replies then omit).
func (r *RouteMsg) ConvertMetrics(ccKnown func(string) bool) (Metrics, *Error) {
	var x Metrics
	base := r.Off(RTA_METRICS) + nlaHdrLen
	for it := (attrIter{b: r.metrics, base: int(base)}); ; {
		a, ok := it.next()
		if !ok {
			return x, nil
		}
		t := int(a.typ)
		if t == 0 {
			continue
		}
		if t > RTAX_MAX {
			return x, Errorf(syscall.EINVAL, "Invalid metric type")
		}
		var v uint32
		if t == RTAX_CC_ALGO {
			name := string(trimNul(a.data))
			if n := len(name); n > tcpCANameMax-1 {
				name = name[:tcpCANameMax-1] // nla_strscpy() into char[16]
			}
			if ccKnown == nil {
				ccKnown = builtinCC
			}
			if !ccKnown(name) {
				return x, Errorf(syscall.EINVAL, "Unknown tcp congestion algorithm")
			}
			x.Set |= 1 << RTAX_CC_ALGO
			x.CCAlgo = name
			continue
		}
		if len(a.data) != 4 {
			return x, AttrError(syscall.EINVAL, "Invalid attribute in metrics", a.off)
		}
		v = ne.Uint32(a.data)
		switch {
		case t == RTAX_ADVMSS && v > 65535-40:
			v = 65535 - 40
		case t == RTAX_MTU && v > 65535-15:
			v = 65535 - 15
		case t == RTAX_HOPLIMIT && v > 255:
			v = 255
		case t == RTAX_FEATURES && v&^RTAX_FEATURE_MASK != 0:
			return x, Errorf(syscall.EINVAL, "Unknown flag set in feature mask in metrics attribute")
		}
		x.Put(t, v)
	}
}

func builtinCC(name string) bool { return name == "reno" || name == "cubic" || name == "bbr" }

// tcpCANameMax is TCP_CA_NAME_MAX.
const tcpCANameMax = 16

// decodeMultipath walks RTA_MULTIPATH with rtnh_ok() / rtnh_next(): it stops
// at the first rtnexthop that is shorter than its header or longer than
// what is left, and returns the bytes left over. base is the offset of b
// from the start of the nlmsghdr.
func decodeMultipath(fam uint8, b []byte, base uint32) ([]Nexthop, int) {
	var hops []Nexthop
	off := 0
	for len(b)-off >= RtnexthopLen {
		n := int(ne.Uint16(b[off:]))
		if n < RtnexthopLen || n > len(b)-off {
			break
		}
		h := Nexthop{
			Flags: b[off+2], Hops: b[off+3], IfIndex: int32(ne.Uint32(b[off+4:])),
			Off: base + uint32(off),
		}
		for it := (attrIter{b: b[off+RtnexthopLen : off+n], base: int(base) + off + RtnexthopLen}); ; {
			a, ok := it.next()
			if !ok {
				break
			}
			t := int(a.typ)
			if t >= 32 || h.Has(t) {
				continue // nla_find(): the first of a type
			}
			switch t {
			case RTA_GATEWAY:
				h.Gateway, h.GatewayLen = addrOf(fam, a.data), len(a.data)
			case RTA_VIA:
				h.ViaFamily, h.ViaAddr = viaOf(a.data)
				h.ViaLen = len(a.data)
			case RTA_FLOW:
				h.FlowLen = len(a.data)
				if len(a.data) >= 4 {
					h.Flow = ne.Uint32(a.data)
				}
			case RTA_ENCAP_TYPE:
				h.EncapTypeLen = len(a.data)
				if len(a.data) >= 2 {
					h.EncapType = ne.Uint16(a.data)
				}
			case RTA_ENCAP:
				h.Encap, h.EncapOff = a.data, a.off
			default:
				continue
			}
			h.Set(t)
		}
		hops = append(hops, h)
		off += align4(n)
	}
	if off > len(b) {
		off = len(b)
	}
	return hops, len(b) - off
}

// Attribute orders of the kernel's fill functions. The cache layout is
// rt_fill_info() (IPv4 route-get replies and exceptions, rtm_flags with
// RTM_F_CLONED); the FIB layout fib_dump_info() (IPv4 dumps, notifications,
// fibmatch replies); IPv6 has the one rt6_fill_node() (a nexthop-object
// route: RTA_NH_ID, then the object's nexthops in compat mode). rtaSelSrc
// stands for RouteMsg.SelSrc.
const rtaSelSrc = 0

var (
	route4FIBOrder = [...]uint8{
		RTA_TABLE, RTA_DST, RTA_PRIORITY, RTA_METRICS, RTA_PREFSRC, RTA_NH_ID,
		RTA_GATEWAY, RTA_VIA, RTA_OIF, RTA_ENCAP, RTA_ENCAP_TYPE, RTA_FLOW, RTA_MULTIPATH,
	}
	route4CacheOrder = [...]uint8{
		RTA_TABLE, RTA_DST, RTA_SRC, RTA_OIF, RTA_ENCAP, RTA_ENCAP_TYPE, RTA_FLOW,
		RTA_PREFSRC, RTA_GATEWAY, RTA_VIA, RTA_METRICS, RTA_MARK, RTA_UID, RTA_IIF,
		RTA_CACHEINFO,
	}
	route6Order = [...]uint8{
		RTA_TABLE, RTA_DST, RTA_SRC, RTA_IIF, rtaSelSrc, RTA_PREFSRC, RTA_METRICS,
		RTA_PRIORITY, RTA_NH_ID, RTA_GATEWAY, RTA_OIF, RTA_ENCAP, RTA_ENCAP_TYPE,
		RTA_MULTIPATH, RTA_CACHEINFO, RTA_PREF,
	}
)

// AppendRoute appends one route message to dst: the rtmsg header and the
// attributes marked present (Set), in the order the kernel's fill function
// for the family and kind writes them (see route4FIBOrder & co.), plus
// SelSrc for IPv6. RTA_METRICS carries the present non-zero metrics in RTAX
// order, as rtnetlink_put_metrics() does; nests carry no NLA_F_NESTED, as
// nla_nest_start_noflag() writes them.
func AppendRoute(dst []byte, typ, flags uint16, seq, pid uint32, r *RouteMsg) []byte {
	start := len(dst)
	dst, h := extend(dst, NLMSG_HDRLEN+RtmsgLen)
	putHeader(h, 0, typ, flags, seq, pid)
	h = h[NLMSG_HDRLEN:]
	h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7] = r.Family, r.DstLen, r.SrcLen, r.Tos, r.Table, r.Protocol, r.Scope, r.Type
	ne.PutUint32(h[8:], r.Flags)
	var order []uint8
	switch {
	case r.Family == AF_INET6:
		order = route6Order[:]
	case r.Flags&RTM_F_CLONED != 0:
		order = route4CacheOrder[:]
	default:
		order = route4FIBOrder[:]
	}
	for _, t := range order {
		if t == rtaSelSrc {
			if r.SelSrc.IsValid() {
				dst = appendAddrAttr(dst, RTA_PREFSRC, r.SelSrc)
			}
			continue
		}
		if r.Has(int(t)) {
			dst = r.appendAttr(dst, t)
		}
	}
	ne.PutUint32(dst[start:], uint32(len(dst)-start))
	return dst
}

// extend grows dst by n bytes and returns it with the n new bytes, which
// the caller must write in full (a reused buffer holds old bytes there):
// an encoder checks the capacity once per attribute, not once per field.
func extend(dst []byte, n int) ([]byte, []byte) {
	l := len(dst)
	if cap(dst)-l < n {
		dst = slices.Grow(dst, n)
	}
	dst = dst[:l+n]
	return dst, dst[l : l+n : l+n]
}

// putAttrHdr writes an attribute header for an n-byte payload into b.
func putAttrHdr(b []byte, t uint16, n int) {
	ne.PutUint16(b, uint16(nlaHdrLen+n))
	ne.PutUint16(b[2:], t)
}

func appendAttrHdr(dst []byte, t uint16, n int) []byte {
	dst, b := extend(dst, nlaHdrLen)
	putAttrHdr(b, t, n)
	return dst
}

func appendPad(dst []byte, n int) []byte {
	for i := n; i < align4(n); i++ {
		dst = append(dst, 0)
	}
	return dst
}

func appendU32Attr(dst []byte, t uint16, v uint32) []byte {
	dst, b := extend(dst, nlaHdrLen+4)
	putAttrHdr(b, t, 4)
	ne.PutUint32(b[4:], v)
	return dst
}

func appendBytesAttr(dst []byte, t uint16, b []byte) []byte {
	dst = append(appendAttrHdr(dst, t, len(b)), b...)
	return appendPad(dst, len(b))
}

func appendAddrAttr(dst []byte, t uint16, a netip.Addr) []byte {
	if a.Is4() {
		dst, b := extend(dst, nlaHdrLen+4)
		putAttrHdr(b, t, 4)
		*(*[4]byte)(b[4:]) = a.As4()
		return dst
	}
	// IPv6, or the zero Addr (16 zero bytes).
	dst, b := extend(dst, nlaHdrLen+16)
	putAttrHdr(b, t, 16)
	*(*[16]byte)(b[4:]) = a.As16()
	return dst
}

func appendViaAttr(dst []byte, fam uint16, a netip.Addr) []byte {
	var b [18]byte
	ne.PutUint16(b[:], fam)
	n := 2 + copy(b[2:], a.AsSlice()) // an invalid address: the family alone
	return appendBytesAttr(dst, RTA_VIA, b[:n])
}

// beginNest starts a nest attribute of type t and returns its offset for
// endNest.
func beginNest(dst []byte, t uint16) ([]byte, int) {
	return appendAttrHdr(dst, t, 0), len(dst)
}

func endNest(dst []byte, at int) []byte {
	ne.PutUint16(dst[at:], uint16(len(dst)-at))
	return dst
}

func (r *RouteMsg) appendAttr(dst []byte, t uint8) []byte {
	tt := uint16(t)
	switch t {
	case RTA_DST:
		return appendAddrAttr(dst, tt, r.Dst)
	case RTA_SRC:
		return appendAddrAttr(dst, tt, r.Src)
	case RTA_GATEWAY:
		return appendAddrAttr(dst, tt, r.Gateway)
	case RTA_PREFSRC:
		return appendAddrAttr(dst, tt, r.PrefSrc)
	case RTA_IIF:
		return appendU32Attr(dst, tt, r.IIF)
	case RTA_OIF:
		return appendU32Attr(dst, tt, r.OIF)
	case RTA_PRIORITY:
		return appendU32Attr(dst, tt, r.Priority)
	case RTA_TABLE:
		return appendU32Attr(dst, tt, r.Table32)
	case RTA_MARK:
		return appendU32Attr(dst, tt, r.Mark)
	case RTA_UID:
		return appendU32Attr(dst, tt, r.UID)
	case RTA_FLOW:
		return appendU32Attr(dst, tt, r.Flow)
	case RTA_NH_ID:
		return appendU32Attr(dst, tt, r.NHID)
	case RTA_PREF:
		dst, b := extend(dst, nlaHdrLen+4)
		putAttrHdr(b, tt, 1)
		b[4], b[5], b[6], b[7] = r.Pref, 0, 0, 0
		return dst
	case RTA_ENCAP_TYPE:
		dst = ne.AppendUint16(appendAttrHdr(dst, tt, 2), r.EncapType)
		return appendPad(dst, 2)
	case RTA_ENCAP:
		return appendBytesAttr(dst, tt, r.Encap)
	case RTA_VIA:
		return appendViaAttr(dst, r.ViaFamily, r.ViaAddr)
	case RTA_METRICS:
		return appendMetrics(dst, &r.Metrics)
	case RTA_MULTIPATH:
		dst, at := beginNest(dst, tt)
		for i := range r.Multipath {
			dst = appendNexthop(dst, r.Family, &r.Multipath[i])
		}
		return endNest(dst, at)
	case RTA_CACHEINFO:
		c := &r.CacheInfo
		dst, b := extend(dst, nlaHdrLen+CacheInfoLen)
		putAttrHdr(b, tt, CacheInfoLen)
		b = b[nlaHdrLen:]
		ne.PutUint32(b[0:], c.ClntRef)
		ne.PutUint32(b[4:], c.LastUse)
		ne.PutUint32(b[8:], uint32(c.Expires))
		ne.PutUint32(b[12:], c.Error)
		ne.PutUint32(b[16:], c.Used)
		ne.PutUint32(b[20:], c.ID)
		ne.PutUint32(b[24:], c.TS)
		ne.PutUint32(b[28:], c.TSAge)
		return dst
	}
	return dst
}

// appendMetrics is rtnetlink_put_metrics(): the nest is left out when no
// metric is set; zero values are skipped, RTAX_FEATURES carries only the
// user-visible feature bits.
func appendMetrics(dst []byte, x *Metrics) []byte {
	mark := len(dst)
	dst, at := beginNest(dst, RTA_METRICS)
	n := 0
	for t := 1; t <= RTAX_MAX; t++ {
		if !x.Has(t) {
			continue
		}
		switch v := x.Val[t]; {
		case t == RTAX_CC_ALGO:
			if x.CCAlgo == "" {
				continue
			}
			s := x.CCAlgo
			dst = append(appendAttrHdr(dst, uint16(t), len(s)+1), s...)
			dst = appendPad(append(dst, 0), len(s)+1)
		case t == RTAX_FEATURES:
			if v&RTAX_FEATURE_MASK == 0 {
				continue
			}
			dst = appendU32Attr(dst, uint16(t), v&RTAX_FEATURE_MASK)
		case v == 0:
			continue
		default:
			dst = appendU32Attr(dst, uint16(t), v)
		}
		n++
	}
	if n == 0 {
		return dst[:mark]
	}
	return endNest(dst, at)
}

// appendNexthop is fib_add_nexthop() + fib_nexthop_info() (skip_oif) for one
// hop, then, for IPv4, fib_add_multipath()'s RTA_FLOW.
func appendNexthop(dst []byte, fam uint8, h *Nexthop) []byte {
	at := len(dst)
	dst = ne.AppendUint16(dst, 0)
	dst = append(dst, h.Flags, h.Hops)
	dst = ne.AppendUint32(dst, uint32(h.IfIndex))
	if h.Has(RTA_GATEWAY) {
		dst = appendAddrAttr(dst, RTA_GATEWAY, h.Gateway)
	} else if h.Has(RTA_VIA) {
		dst = appendViaAttr(dst, h.ViaFamily, h.ViaAddr)
	}
	if h.Has(RTA_ENCAP) {
		dst = appendBytesAttr(dst, RTA_ENCAP, h.Encap)
	}
	if h.Has(RTA_ENCAP_TYPE) {
		dst = ne.AppendUint16(appendAttrHdr(dst, RTA_ENCAP_TYPE, 2), h.EncapType)
		dst = appendPad(dst, 2)
	}
	if fam != AF_INET6 && h.Has(RTA_FLOW) {
		dst = appendU32Attr(dst, RTA_FLOW, h.Flow)
	}
	ne.PutUint16(dst[at:], uint16(len(dst)-at))
	return dst
}

// DecodeRoute decodes a route message as a client reads a reply or a
// notification: the rtmsg and every attribute, without a policy (types
// above RTA_MAX are skipped). It fails only on a body shorter than struct
// rtmsg.
func DecodeRoute(m *Message) (*RouteMsg, *Error) {
	if len(m.Data) < RtmsgLen {
		return nil, Errno(syscall.EINVAL)
	}
	r := new(RouteMsg)
	r.decodeHeader(m.Data)
	for it := (attrIter{b: r.attrs, base: routeAttrBase}); ; {
		a, ok := it.next()
		if !ok {
			break
		}
		if a.typ != 0 && a.typ <= RTA_MAX {
			r.decodeAttr(a)
		}
	}
	return r, nil
}

// lwtEncapMax is LWTUNNEL_ENCAP_MAX (LWTUNNEL_ENCAP_XFRM on Linux 6.18).
const lwtEncapMax = 10

// lwtBuiltin is the set of lightweight-tunnel encapsulations the reference
// kernel has registered (measured: ip 2, ip6 4, seg6 5, bpf 6, seg6local
// 7; mpls 1, ila 3, rpl 8, ioam6 9 and xfrm 10 are modules it does not
// load).
const lwtBuiltin = 1<<2 | 1<<4 | 1<<5 | 1<<6 | 1<<7

// ValidEncapType is lwtunnel_valid_encap_type() on the reference kernel:
// types outside 1..LWTUNNEL_ENCAP_MAX are EINVAL "Unknown lwt encapsulation
// type", types without a registered implementation EOPNOTSUPP "lwt
// encapsulation type not supported"; nil for the built-in ones (which
// nlemu does not implement: the caller decides what to answer then).
// rtm_to_fib_config() calls it for RTA_ENCAP_TYPE as it meets the
// attribute; rtm_to_fib6_config() after its other checks.
func ValidEncapType(t uint16) *Error {
	if t == 0 || t > lwtEncapMax {
		return Errorf(syscall.EINVAL, "Unknown lwt encapsulation type")
	}
	if lwtBuiltin&(1<<t) == 0 {
		return Errorf(syscall.EOPNOTSUPP, "lwt encapsulation type not supported")
	}
	return nil
}

// ValidMultipathEncap is lwtunnel_valid_encap_type_attr() over the hops of
// RTA_MULTIPATH (rtm_to_fib_config() runs it as it meets RTA_MULTIPATH): a
// hop's first RTA_ENCAP_TYPE shorter than a u16 is EINVAL "Invalid
// RTA_ENCAP_TYPE"; an invalid type keeps ValidEncapType's text but the
// errno becomes EOPNOTSUPP.
func ValidMultipathEncap(hops []Nexthop) *Error {
	for i := range hops {
		h := &hops[i]
		if !h.Has(RTA_ENCAP_TYPE) {
			continue
		}
		if h.EncapTypeLen < 2 {
			return Errorf(syscall.EINVAL, "Invalid RTA_ENCAP_TYPE")
		}
		if err := ValidEncapType(h.EncapType); err != nil {
			return Errorf(syscall.EOPNOTSUPP, err.Msg)
		}
	}
	return nil
}

// CheckAttrLoop4 is the checks rtm_to_fib_config() makes while it walks an
// IPv4 request's attributes in message order, after its tos and type checks
// and before its prefix checks: each RTA_VIA through fib_gw_from_via(),
// each RTA_MULTIPATH through lwtunnel_valid_encap_type_attr(), each
// RTA_ENCAP_TYPE through lwtunnel_valid_encap_type(). The first failure in
// message order is the answer, even when a later attribute of the same type
// would pass (recorded: a bad RTA_VIA before a good one fails).
func (r *RouteMsg) CheckAttrLoop4() *Error {
	for it := (attrIter{b: r.attrs, base: routeAttrBase}); ; {
		a, ok := it.next()
		if !ok {
			return nil
		}
		var err *Error
		switch a.typ {
		case RTA_VIA:
			err = GatewayFromVia(a.data)
		case RTA_MULTIPATH:
			hops, _ := decodeMultipath(r.Family, a.data, a.off+nlaHdrLen)
			err = ValidMultipathEncap(hops)
		case RTA_ENCAP_TYPE:
			if len(a.data) >= 2 { // the policy made sure
				err = ValidEncapType(ne.Uint16(a.data))
			}
		}
		if err != nil {
			return err
		}
	}
}

// GatewayFromVia is fib_gw_from_via()'s checks of one RTA_VIA payload
// (struct rtvia): at least the family, then an address of the family's
// size, AF_INET or AF_INET6 only.
func GatewayFromVia(d []byte) *Error {
	if len(d) < 2 {
		return Errorf(syscall.EINVAL, "Invalid attribute length for RTA_VIA")
	}
	switch ne.Uint16(d) {
	case AF_INET:
		if len(d)-2 != 4 {
			return Errorf(syscall.EINVAL, "Invalid IPv4 address in RTA_VIA")
		}
	case AF_INET6:
		if len(d)-2 != 16 {
			return Errorf(syscall.EINVAL, "Invalid IPv6 address in RTA_VIA")
		}
	default:
		return Errorf(syscall.EINVAL, "Unsupported address family in RTA_VIA")
	}
	return nil
}
