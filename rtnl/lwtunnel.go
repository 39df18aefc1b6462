package rtnl

import "syscall"

// Lightweight-tunnel encapsulation types (enum lwtunnel_encap_types).
const (
	LWTUNNEL_ENCAP_NONE       = 0
	LWTUNNEL_ENCAP_MPLS       = 1
	LWTUNNEL_ENCAP_IP         = 2
	LWTUNNEL_ENCAP_ILA        = 3
	LWTUNNEL_ENCAP_IP6        = 4
	LWTUNNEL_ENCAP_SEG6       = 5
	LWTUNNEL_ENCAP_BPF        = 6
	LWTUNNEL_ENCAP_SEG6_LOCAL = 7
)

// LWTUNNEL_IP_* (and the LWTUNNEL_IP6_* of the same numbers): the
// attributes of an ip / ip6 encapsulation's RTA_ENCAP nest.
const (
	LWTUNNEL_IP_ID    = 1
	LWTUNNEL_IP_DST   = 2
	LWTUNNEL_IP_SRC   = 3
	LWTUNNEL_IP_TTL   = 4 // LWTUNNEL_IP6_HOPLIMIT
	LWTUNNEL_IP_TOS   = 5 // LWTUNNEL_IP6_TC
	LWTUNNEL_IP_FLAGS = 6
	LWTUNNEL_IP_PAD   = 7
	LWTUNNEL_IP_OPTS  = 8

	lwtunnelIPMax = LWTUNNEL_IP_OPTS
	// lwtunnelIPOptsMax is LWTUNNEL_IP_OPTS_MAX (GENEVE 1, VXLAN 2,
	// ERSPAN 3).
	lwtunnelIPOptsMax = 3
)

// tunnelFlagsKept is what ip_tun_build_state() / ip6_tun_build_state()
// keep of LWTUNNEL_IP_FLAGS: every flag but the "options present" ones
// (TUNNEL_GENEVE_OPT 0x0800, TUNNEL_VXLAN_OPT 0x1000, TUNNEL_ERSPAN_OPT
// 0x4000, TUNNEL_GTP_OPT 0x8000), which only options set. Measured: 0xffff
// is dumped as 0x27ff for both families.
const tunnelFlagsKept = 0x27ff

// Encap is a nexthop's lightweight-tunnel state (struct lwtunnel_state) as
// a comparable value: the encapsulation type and the attributes its
// fill_encap() dumps inside RTA_ENCAP, in the kernel's order and bytes.
// The zero value is no encapsulation. Two states compare equal exactly when
// lwtunnel_cmp_encap() finds them equal: the dump encodes every field the
// kernel's cmp_encap compares (ip_tun_cmp_encap() memcmp()s the
// ip_tunnel_info, which holds only what the dump prints).
type Encap struct {
	// s is the type (2 bytes, big endian) then the attributes; "" is no
	// encapsulation. One string keeps a route hop 16 bytes larger, not 24.
	s string
}

// MakeEncap returns the state of type typ whose dump is attrs.
func MakeEncap(typ uint16, attrs []byte) Encap {
	return Encap{s: string(be.AppendUint16(nil, typ)) + string(attrs)}
}

// IsZero reports no encapsulation.
func (e Encap) IsZero() bool { return e.s == "" }

// Type is the LWTUNNEL_ENCAP_* type (0 when none).
func (e Encap) Type() uint16 {
	if e.s == "" {
		return LWTUNNEL_ENCAP_NONE
	}
	return be.Uint16([]byte(e.s[:2]))
}

// Attrs returns a copy of the attributes RTA_ENCAP carries.
func (e Encap) Attrs() []byte {
	if e.s == "" {
		return nil
	}
	return []byte(e.s[2:])
}

// Key is the state as one comparable string (for interning keys).
func (e Encap) Key() string { return e.s }

// ipTunPolicy mirrors ip_tun_policy (net/ipv4/ip_tunnel_core.c).
var ipTunPolicy = policySet{strictStart: LWTUNNEL_IP_OPTS, pol: []policy{
	LWTUNNEL_IP_ID:    {kind: polU64},
	LWTUNNEL_IP_DST:   {kind: polU32},
	LWTUNNEL_IP_SRC:   {kind: polU32},
	LWTUNNEL_IP_TTL:   {kind: polU8},
	LWTUNNEL_IP_TOS:   {kind: polU8},
	LWTUNNEL_IP_FLAGS: {kind: polU16},
	LWTUNNEL_IP_PAD:   {},
	LWTUNNEL_IP_OPTS:  {kind: polNested},
}}

// ip6TunPolicy mirrors ip6_tun_policy: the addresses are NLA_UNSPEC with a
// minimum length of 16.
var ip6TunPolicy = policySet{strictStart: LWTUNNEL_IP_OPTS, pol: []policy{
	LWTUNNEL_IP_ID:    {kind: polU64},
	LWTUNNEL_IP_DST:   {kind: polMinLen, minLen: 16},
	LWTUNNEL_IP_SRC:   {kind: polMinLen, minLen: 16},
	LWTUNNEL_IP_TTL:   {kind: polU8},
	LWTUNNEL_IP_TOS:   {kind: polU8},
	LWTUNNEL_IP_FLAGS: {kind: polU16},
	LWTUNNEL_IP_PAD:   {},
	LWTUNNEL_IP_OPTS:  {kind: polNested},
}}

// BuildEncap is lwtunnel_build_state() for the RTA_ENCAP attribute whose
// payload is nest and whose header is at offset off of the request (the
// offset the kernel's extack points at), with encapsulation type typ
// (0 when the request has no RTA_ENCAP_TYPE).
//
// Type 0 or above LWTUNNEL_ENCAP_MAX is EINVAL "Unknown LWT encapsulation
// type" at the RTA_ENCAP attribute; a type this kernel has no module for
// (ValidEncapType) EOPNOTSUPP "LWT encapsulation type not supported".
// family is the route's (seg6's inline mode needs AF_INET6).
// ip (2) and ip6 (4) are built as ip_tun_build_state() and
// ip6_tun_build_state() do: nla_parse_nested_deprecated() with their policy
// (a policy failure points at the nested attribute; bytes after the last
// attribute leave warning "bytes leftover after parsing attributes"), the
// values read as the kernel's nla_get_*() read them (the first bytes of a
// longer attribute), the flags masked (tunnelFlagsKept). An empty
// LWTUNNEL_IP_OPTS nest is no options; options themselves (geneve, vxlan,
// erspan) are not implemented: EOPNOTSUPP with nlemu's text. seg6 (5) is
// built as seg6_build_state() does (buildSeg6). The other types this
// kernel has built in (bpf, seg6local) are not implemented: EOPNOTSUPP
// with nlemu's text, and unimplemented is true, so
// that a delete can treat them as the kernel treats a state it cannot
// build.
func BuildEncap(typ uint16, family uint8, nest []byte, off uint32) (e Encap, warning string, unimplemented bool, err *Error) {
	if typ == LWTUNNEL_ENCAP_NONE || typ > lwtEncapMax {
		return Encap{}, "", false, AttrError(syscall.EINVAL, "Unknown LWT encapsulation type", off)
	}
	if lwtBuiltin&(1<<typ) == 0 {
		return Encap{}, "", false, AttrError(syscall.EOPNOTSUPP, "LWT encapsulation type not supported", off)
	}
	switch typ {
	case LWTUNNEL_ENCAP_IP:
		e, warning, err = buildIPTun(typ, &ipTunPolicy, 4, nest, off)
		return e, warning, false, err
	case LWTUNNEL_ENCAP_IP6:
		e, warning, err = buildIPTun(typ, &ip6TunPolicy, 16, nest, off)
		return e, warning, false, err
	case LWTUNNEL_ENCAP_SEG6:
		e, warning, err = buildSeg6(family, nest, off)
		return e, warning, false, err
	}
	return Encap{}, "", true, Errorf(syscall.EOPNOTSUPP, "nlemu: this lwtunnel encapsulation type (bpf, seg6local) is not implemented")
}

// buildIPTun is ip_tun_build_state() / ip6_tun_build_state() (alen 4 /
// 16), returning the state as ip_tun_fill_encap_info() /
// ip6_tun_fill_encap_info() dump it: ID (be64), DST, SRC, TOS/TC, TTL/
// HOPLIMIT, FLAGS (be16). x86-64 has efficient unaligned access, so
// nla_put_be64() adds no LWTUNNEL_IP_PAD.
func buildIPTun(typ uint16, ps *policySet, alen int, nest []byte, off uint32) (Encap, string, *Error) {
	var (
		id       [8]byte
		dst, src [16]byte
		ttl, tos uint8
		flags    uint16
		seen     [lwtunnelIPMax + 1]bool
		vals     [lwtunnelIPMax + 1][]byte
	)
	it := attrIter{b: nest, base: int(off) + nlaHdrLen}
	for {
		a, ok := it.next()
		if !ok {
			break
		}
		use, err := ps.check(a, validateLiberal)
		if err != nil {
			return Encap{}, "", err
		}
		if !use {
			continue
		}
		// nla_parse keeps the last attribute of a type.
		seen[a.typ], vals[a.typ] = true, a.data
		if a.typ == LWTUNNEL_IP_OPTS {
			if err := ipTunOpts(a); err != nil {
				return Encap{}, "", err
			}
		}
	}
	warning := ""
	if it.leftover() > 0 {
		warning = "bytes leftover after parsing attributes"
	}
	if seen[LWTUNNEL_IP_ID] {
		copy(id[:], vals[LWTUNNEL_IP_ID][:8])
	}
	if seen[LWTUNNEL_IP_DST] {
		copy(dst[:alen], vals[LWTUNNEL_IP_DST][:alen])
	}
	if seen[LWTUNNEL_IP_SRC] {
		copy(src[:alen], vals[LWTUNNEL_IP_SRC][:alen])
	}
	if seen[LWTUNNEL_IP_TTL] {
		ttl = vals[LWTUNNEL_IP_TTL][0]
	}
	if seen[LWTUNNEL_IP_TOS] {
		tos = vals[LWTUNNEL_IP_TOS][0]
	}
	if seen[LWTUNNEL_IP_FLAGS] {
		flags = be.Uint16(vals[LWTUNNEL_IP_FLAGS]) & tunnelFlagsKept
	}
	b := make([]byte, 0, 12+2*(4+alen)+3*8)
	b = append(appendAttrHdr(b, LWTUNNEL_IP_ID, 8), id[:]...)
	b = append(appendAttrHdr(b, LWTUNNEL_IP_DST, alen), dst[:alen]...)
	b = append(appendAttrHdr(b, LWTUNNEL_IP_SRC, alen), src[:alen]...)
	b = appendPad(append(appendAttrHdr(b, LWTUNNEL_IP_TOS, 1), tos), 1)
	b = appendPad(append(appendAttrHdr(b, LWTUNNEL_IP_TTL, 1), ttl), 1)
	b = appendPad(be.AppendUint16(appendAttrHdr(b, LWTUNNEL_IP_FLAGS, 2), flags), 2)
	return MakeEncap(typ, b), warning, nil
}

// ipTunOpts is ip_tun_get_optlen()'s strict parse of LWTUNNEL_IP_OPTS
// (nla_parse_nested() with ip_opts_policy): an empty nest is no options;
// a type outside 1..LWTUNNEL_IP_OPTS_MAX is EINVAL "Unknown attribute
// type"; geneve, vxlan and erspan options are not implemented.
func ipTunOpts(a rawAttr) *Error {
	for it := (attrIter{b: a.data, base: int(a.off) + nlaHdrLen}); ; {
		o, ok := it.next()
		if !ok {
			return nil
		}
		if o.typ == 0 || o.typ > lwtunnelIPOptsMax {
			return AttrError(syscall.EINVAL, "Unknown attribute type", o.off)
		}
		return AttrError(syscall.EOPNOTSUPP, "nlemu: tunnel options (LWTUNNEL_IP_OPTS geneve, vxlan, erspan) are not implemented", o.off)
	}
}

// Segment routing (seg6_iptunnel.h, seg6.h).
const (
	SEG6_IPTUNNEL_SRH = 1

	SEG6_IPTUN_MODE_INLINE      = 0
	SEG6_IPTUN_MODE_ENCAP       = 1
	SEG6_IPTUN_MODE_L2ENCAP     = 2
	SEG6_IPTUN_MODE_ENCAP_RED   = 3
	SEG6_IPTUN_MODE_L2ENCAP_RED = 4

	// ipv6SrcrtType4 is IPV6_SRCRT_TYPE_4, the segment routing header.
	ipv6SrcrtType4 = 4
	// seg6EncapHdrLen is sizeof(struct seg6_iptunnel_encap) (its int
	// mode) and seg6SRHLen sizeof(struct ipv6_sr_hdr).
	seg6EncapHdrLen = 4
	seg6SRHLen      = 8
)

// seg6TunPolicy mirrors seg6_iptunnel_policy: SEG6_IPTUNNEL_SRH is
// NLA_BINARY without a maximum.
var seg6TunPolicy = policySet{pol: []policy{SEG6_IPTUNNEL_SRH: {}}}

// buildSeg6 is seg6_build_state(): the liberal parse (the last
// SEG6_IPTUNNEL_SRH wins; bytes after the last attribute warn), then bare
// EINVAL for no SRH, one shorter than the mode, an SRH and one segment, a
// mode outside 0..4, inline mode on a route that is not IPv6, and an SRH
// seg6_validate_srh() refuses. The state is the attribute's payload, which
// seg6_fill_encap_info() dumps whole (SEG6_IPTUN_ENCAP_SIZE() is its
// length once validated) and seg6_encap_cmp() compares byte for byte.
func buildSeg6(family uint8, nest []byte, off uint32) (Encap, string, *Error) {
	var tun []byte
	have := false
	it := attrIter{b: nest, base: int(off) + nlaHdrLen}
	for {
		a, ok := it.next()
		if !ok {
			break
		}
		use, err := seg6TunPolicy.check(a, validateLiberal)
		if err != nil {
			return Encap{}, "", err
		}
		if use {
			tun, have = a.data, true
		}
	}
	warning := ""
	if it.leftover() > 0 {
		warning = "bytes leftover after parsing attributes"
	}
	einval := Errno(syscall.EINVAL)
	if !have || len(tun) < seg6EncapHdrLen+seg6SRHLen+16 {
		return Encap{}, "", einval
	}
	switch int32(ne.Uint32(tun)) {
	case SEG6_IPTUN_MODE_INLINE:
		if family != AF_INET6 {
			return Encap{}, "", einval
		}
	case SEG6_IPTUN_MODE_ENCAP, SEG6_IPTUN_MODE_L2ENCAP, SEG6_IPTUN_MODE_ENCAP_RED, SEG6_IPTUN_MODE_L2ENCAP_RED:
	default:
		return Encap{}, "", einval
	}
	if !seg6ValidSRH(tun[seg6EncapHdrLen:]) {
		return Encap{}, "", einval
	}
	b := appendPad(append(appendAttrHdr(nil, SEG6_IPTUNNEL_SRH, len(tun)), tun...), len(tun))
	return MakeEncap(LWTUNNEL_ENCAP_SEG6, b), warning, nil
}

// seg6ValidSRH is seg6_validate_srh(srh, len, false): a type 4 header
// whose hdrlen covers exactly len bytes, segments_left at most
// first_segment, first_segment within the segments, then TLVs (a type and
// a length byte each) that end exactly at the end.
func seg6ValidSRH(srh []byte) bool {
	hdrlen, typ, segsLeft, first := int(srh[1]), srh[2], int(srh[3]), int(srh[4])
	if typ != ipv6SrcrtType4 || (hdrlen+1)<<3 != len(srh) {
		return false
	}
	if segsLeft > first || first > hdrlen/2-1 {
		return false
	}
	off := seg6SRHLen + (first+1)<<4
	trailing := len(srh) - off
	if trailing < 0 {
		return false
	}
	for trailing > 0 {
		if trailing < 2 {
			return false
		}
		n := 2 + int(srh[off+1])
		trailing -= n
		if trailing < 0 {
			return false
		}
		off += n
	}
	return true
}
