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
	Type  uint16
	Attrs string
}

// IsZero reports no encapsulation.
func (e Encap) IsZero() bool { return e.Type == LWTUNNEL_ENCAP_NONE }

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
// ip (2) and ip6 (4) are built as ip_tun_build_state() and
// ip6_tun_build_state() do: nla_parse_nested_deprecated() with their policy
// (a policy failure points at the nested attribute; bytes after the last
// attribute leave warning "bytes leftover after parsing attributes"), the
// values read as the kernel's nla_get_*() read them (the first bytes of a
// longer attribute), the flags masked (tunnelFlagsKept). An empty
// LWTUNNEL_IP_OPTS nest is no options; options themselves (geneve, vxlan,
// erspan) are not implemented: EOPNOTSUPP with nlemu's text. The other
// types this kernel has built in (seg6, bpf, seg6local) are not
// implemented: EOPNOTSUPP with nlemu's text, and unimplemented is true, so
// that a delete can treat them as the kernel treats a state it cannot
// build.
func BuildEncap(typ uint16, nest []byte, off uint32) (e Encap, warning string, unimplemented bool, err *Error) {
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
	}
	return Encap{}, "", true, Errorf(syscall.EOPNOTSUPP, "nlemu: this lwtunnel encapsulation type (seg6, bpf, seg6local) is not implemented")
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
	return Encap{Type: typ, Attrs: string(b)}, warning, nil
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
