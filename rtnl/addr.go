package rtnl

import (
	"net/netip"
	"syscall"
)

// Address message types and multicast groups (include/uapi/linux/rtnetlink.h).
const (
	RTM_DELADDR = 21

	RTNLGRP_IPV4_IFADDR = 5
	RTNLGRP_IPV6_IFADDR = 9
)

// Address attributes (IFA_*, include/uapi/linux/if_addr.h).
const (
	IFA_ADDRESS        = 1
	IFA_LOCAL          = 2
	IFA_LABEL          = 3
	IFA_BROADCAST      = 4
	IFA_ANYCAST        = 5
	IFA_CACHEINFO      = 6
	IFA_MULTICAST      = 7
	IFA_FLAGS          = 8
	IFA_RT_PRIORITY    = 9
	IFA_TARGET_NETNSID = 10
	IFA_PROTO          = 11
	IFA_MAX            = IFA_PROTO
)

// Address flags (IFA_F_*).
const (
	IFA_F_SECONDARY      = 0x01
	IFA_F_NODAD          = 0x02
	IFA_F_OPTIMISTIC     = 0x04
	IFA_F_DADFAILED      = 0x08
	IFA_F_HOMEADDRESS    = 0x10
	IFA_F_DEPRECATED     = 0x20
	IFA_F_TENTATIVE      = 0x40
	IFA_F_PERMANENT      = 0x80
	IFA_F_MANAGETEMPADDR = 0x100
	IFA_F_NOPREFIXROUTE  = 0x200
	IFA_F_MCAUTOJOIN     = 0x400
	IFA_F_STABLE_PRIVACY = 0x800
)

// Address protocols (IFAPROT_*): who configured an address.
const (
	IFAPROT_UNSPEC    = 0
	IFAPROT_KERNEL_LO = 1 // the loopback ::1 (init_loopback())
	IFAPROT_KERNEL_RA = 2
	IFAPROT_KERNEL_LL = 3 // the link-local address (addrconf_add_linklocal())
)

// InfinityLife is INFINITY_LIFE_TIME: a lifetime that never runs out
// ("forever").
const InfinityLife = 0xffffffff

// AddrCacheInfo is struct ifa_cacheinfo: lifetimes in seconds and the
// creation and update stamps in 1/100 s since boot.
type AddrCacheInfo struct {
	Preferred, Valid uint32
	Cstamp, Tstamp   uint32
}

// AddrMsg is a typed RTM_NEWADDR / RTM_DELADDR message: struct ifaddrmsg and
// the IFA_* attributes. Addresses are netip.Addr of the message's family;
// the zero Addr is an absent attribute.
type AddrMsg struct {
	Family    uint8
	PrefixLen uint8
	// Flags are the address's flags: IFA_FLAGS when a request carries it,
	// else ifa_flags. A reply carries the low 8 bits in the header and all
	// of them in IFA_FLAGS.
	Flags uint32
	Scope uint8
	Index int32

	Address   netip.Addr // IFA_ADDRESS (the peer of a point-to-point address)
	Local     netip.Addr // IFA_LOCAL
	Broadcast netip.Addr // IFA_BROADCAST (IPv4)
	Label     string     // IFA_LABEL (IPv4); "" = none
	HasLabel  bool
	// RtPriority is IFA_RT_PRIORITY, the metric of the prefix route.
	RtPriority uint32
	Proto      uint8 // IFA_PROTO; 0 = none
	// CacheInfo is IFA_CACHEINFO; HasCacheInfo says a request carried it.
	CacheInfo    AddrCacheInfo
	HasCacheInfo bool
	// Present has bit t set for each attribute type t a request carried.
	Present uint32
	// Warning is the extack text a request's liberal parse leaves behind
	// ("bytes leftover after parsing attributes", __nla_validate_parse()):
	// the ACK of a success carries it, an error without text keeps it.
	Warning string
}

// Has reports whether a request carried attribute t.
func (m *AddrMsg) Has(t int) bool { return t > 0 && t <= IFA_MAX && m.Present&(1<<uint(t)) != 0 }

// ifaIPv4Policy mirrors ifa_ipv4_policy (net/ipv4/devinet.c).
var ifaIPv4Policy = policySet{pol: func() []policy {
	p := make([]policy, IFA_MAX+1)
	for _, t := range []int{IFA_LOCAL, IFA_ADDRESS, IFA_BROADCAST, IFA_FLAGS, IFA_RT_PRIORITY, IFA_TARGET_NETNSID} {
		p[t] = policy{kind: polU32}
	}
	p[IFA_LABEL] = policy{kind: polString}
	p[IFA_CACHEINFO] = policy{kind: polMinLen, minLen: 16}
	p[IFA_PROTO] = policy{kind: polU8}
	return p
}()}

// ifaIPv6Policy mirrors ifa_ipv6_policy (net/ipv6/addrconf.c).
var ifaIPv6Policy = policySet{pol: func() []policy {
	p := make([]policy, IFA_MAX+1)
	p[IFA_ADDRESS] = policy{kind: polMinLen, minLen: 16}
	p[IFA_LOCAL] = policy{kind: polMinLen, minLen: 16}
	p[IFA_CACHEINFO] = policy{kind: polMinLen, minLen: 16}
	for _, t := range []int{IFA_FLAGS, IFA_RT_PRIORITY, IFA_TARGET_NETNSID} {
		p[t] = policy{kind: polU32}
	}
	p[IFA_PROTO] = policy{kind: polU8}
	return p
}()}

// AddrFamily returns the family byte of an address message, AF_UNSPEC when
// the message is empty.
func AddrFamily(m *Message) uint8 {
	if len(m.Data) == 0 {
		return AF_UNSPEC
	}
	return m.Data[0]
}

// DecodeAddrRequest decodes an RTM_NEWADDR or RTM_DELADDR request as
// inet_rtm_newaddr() / inet_rtm_deladdr() (ifa_ipv4_policy) and
// inet6_rtm_newaddr() / inet6_rtm_deladdr() (ifa_ipv6_policy) parse it:
// nlmsg_parse_deprecated(), so unknown types and trailing bytes are
// ignored, and a too-short attribute fails the policy. The family must be
// AF_INET or AF_INET6 (the dispatcher answers the others).
func DecodeAddrRequest(m *Message) (*AddrMsg, *Error) {
	b := m.Data
	if len(b) < ifaddrmsgLen {
		return nil, Errorf(syscall.EINVAL, errHeaderLength)
	}
	a := &AddrMsg{Family: b[0], PrefixLen: b[1], Flags: uint32(b[2]), Scope: b[3], Index: int32(ne.Uint32(b[4:]))}
	pol := &ifaIPv4Policy
	if a.Family == AF_INET6 {
		pol = &ifaIPv6Policy
	}
	it := attrsOf(m, ifaddrmsgLen)
	for {
		at, ok := it.next()
		if !ok {
			break
		}
		use, err := pol.check(at, validateLiberal)
		if err != nil {
			return nil, err
		}
		if !use {
			continue
		}
		// nla_parse keeps the last of repeated attributes.
		a.Present |= 1 << at.typ
		switch at.typ {
		case IFA_ADDRESS:
			a.Address = addrOf(a.Family, at.data)
		case IFA_LOCAL:
			a.Local = addrOf(a.Family, at.data)
		case IFA_BROADCAST:
			a.Broadcast = addrOf(a.Family, at.data)
		case IFA_LABEL:
			a.Label, a.HasLabel = cString(at.data), true
		case IFA_CACHEINFO:
			d := at.data
			a.CacheInfo = AddrCacheInfo{Preferred: ne.Uint32(d), Valid: ne.Uint32(d[4:]), Cstamp: ne.Uint32(d[8:]), Tstamp: ne.Uint32(d[12:])}
			a.HasCacheInfo = true
		case IFA_FLAGS:
			a.Flags = ne.Uint32(at.data)
		case IFA_RT_PRIORITY:
			a.RtPriority = ne.Uint32(at.data)
		case IFA_PROTO:
			a.Proto = at.data[0]
		}
	}
	if it.leftover() > 0 {
		a.Warning = "bytes leftover after parsing attributes"
	}
	return a, nil
}

// cString is nla_strscpy(): the bytes up to the first NUL.
func cString(b []byte) string {
	for i, c := range b {
		if c == 0 {
			return string(b[:i])
		}
	}
	return string(b)
}

// AppendAddr appends a as an rtnetlink message of type typ (RTM_NEWADDR or
// RTM_DELADDR) with the attributes in the order the kernel's fill
// functions put them: inet_fill_ifaddr() for AF_INET (ADDRESS, LOCAL,
// BROADCAST, LABEL, PROTO, FLAGS, RT_PRIORITY, CACHEINFO), inet6_fill_ifaddr()
// for AF_INET6 (ADDRESS, or LOCAL then ADDRESS for a peer; RT_PRIORITY,
// CACHEINFO, FLAGS, PROTO). Absent (zero) addresses are left out, as the
// kernel leaves out a zero ifa_address.
func AppendAddr(dst []byte, typ, flags uint16, seq, pid uint32, a *AddrMsg) []byte {
	e := linkEnc{b: make([]byte, 0, 96)}
	e.b = append(e.b, a.Family, a.PrefixLen, uint8(a.Flags), a.Scope)
	e.b = ne.AppendUint32(e.b, uint32(a.Index))
	ci := make([]byte, 0, 16)
	ci = ne.AppendUint32(ci, a.CacheInfo.Preferred)
	ci = ne.AppendUint32(ci, a.CacheInfo.Valid)
	ci = ne.AppendUint32(ci, a.CacheInfo.Cstamp)
	ci = ne.AppendUint32(ci, a.CacheInfo.Tstamp)
	u32 := func(v uint32) []byte { return ne.AppendUint32(nil, v) }
	if a.Family == AF_INET6 {
		if a.Local.IsValid() {
			e.put(IFA_LOCAL, a.Local.AsSlice())
		}
		if a.Address.IsValid() {
			e.put(IFA_ADDRESS, a.Address.AsSlice())
		}
		if a.RtPriority != 0 {
			e.put(IFA_RT_PRIORITY, u32(a.RtPriority))
		}
		e.put(IFA_CACHEINFO, ci)
		e.put(IFA_FLAGS, u32(a.Flags))
		if a.Proto != 0 {
			e.u8(IFA_PROTO, a.Proto)
		}
		return AppendMessage(dst, typ, flags, seq, pid, e.b)
	}
	if a.Address.IsValid() && !a.Address.IsUnspecified() {
		e.put(IFA_ADDRESS, a.Address.AsSlice())
	}
	if a.Local.IsValid() && !a.Local.IsUnspecified() {
		e.put(IFA_LOCAL, a.Local.AsSlice())
	}
	if a.Broadcast.IsValid() && !a.Broadcast.IsUnspecified() {
		e.put(IFA_BROADCAST, a.Broadcast.AsSlice())
	}
	if a.Label != "" {
		e.put(IFA_LABEL, append([]byte(a.Label), 0))
	}
	if a.Proto != 0 {
		e.u8(IFA_PROTO, a.Proto)
	}
	e.put(IFA_FLAGS, u32(a.Flags))
	if a.RtPriority != 0 {
		e.put(IFA_RT_PRIORITY, u32(a.RtPriority))
	}
	e.put(IFA_CACHEINFO, ci)
	return AppendMessage(dst, typ, flags, seq, pid, e.b)
}

// AddrDump is what an address dump request asks for
// (inet_valid_dump_ifaddr_req(), inet6_valid_dump_ifaddr_req()).
type AddrDump struct {
	// Index is the ifa_index filter of a strict request; 0 = every device.
	Index int32
}

// DecodeAddrDump checks an RTM_GETADDR dump request of family (AF_INET or
// AF_INET6) as the family's dumpit does: only with strict checking
// (CheckAddrDump); a liberal request dumps everything.
func DecodeAddrDump(m *Message, family uint8, strict bool) (AddrDump, *Error) {
	prefix := "ipv4: "
	if family == AF_INET6 {
		prefix = "ipv6: "
	}
	idx, err := CheckAddrDump(m, prefix, strict)
	return AddrDump{Index: idx}, err
}
