package rtnl

import (
	"encoding/binary"
	"syscall"

	"github.com/mdlayher/netlink"
)

// RuleHdrLen is sizeof(struct fib_rule_hdr).
const RuleHdrLen = 12

// ruleAttrBase is the offset of a rule message's first attribute from the
// start of its nlmsghdr: NLMSG_HDRLEN + NLMSG_ALIGN(sizeof(fib_rule_hdr)).
const ruleAttrBase = NLMSG_HDRLEN + RuleHdrLen

// RuleMsg is a typed RTM_NEWRULE / RTM_DELRULE / RTM_GETRULE message: the
// fib_rule_hdr and the FRA_* attributes. Decoded requests record which
// attributes were present and where; handlers build replies by filling one
// and calling AppendRule.
type RuleMsg struct {
	Family, DstLen, SrcLen, Tos, Table, Res1, Res2, Action uint8
	Flags                                                  uint32

	// Present has bit 1<<FRA_x set for each attribute present.
	Present uint64
	// offs are the offsets from the nlmsghdr of the attributes that
	// validation errors point at (FRA_DSCP..FRA_DSCP_MASK); see Off.
	offs [FRA_MAX + 1 - ruleStrictStart]uint32

	Dst, Src         []byte // raw address bytes, any length on input
	IIFName, OIFName []byte // raw name bytes (trailing NUL stripped on input)

	Goto, Priority, FwMark, Flow, FwMask, Table32 uint32
	TunID                                         uint64 // host value of the be64
	SuppressIfgroup, SuppressPrefixlen            uint32
	L3MDev, Protocol, IPProto, DSCP, DSCPMask     uint8
	UIDRange                                      [2]uint32
	SportRange, DportRange                        [2]uint16
	SportMask, DportMask                          uint16
	FlowLabel, FlowLabelMask                      uint32 // host values of be32s

	attrs []byte // undecoded attributes of a request

	// Warning is the extack text a successful parse leaves behind ("bytes
	// leftover after parsing attributes"), which the kernel reports even in
	// a success ACK unless a later error replaces it.
	Warning string
}

// Off returns the offset of attribute t from the start of the request's
// nlmsghdr, for the attributes the kernel's semantic checks point at
// (FRA_DSCP and later); 0 otherwise.
func (m *RuleMsg) Off(t int) uint32 {
	if t < ruleStrictStart || t > FRA_MAX {
		return 0
	}
	return m.offs[t-ruleStrictStart]
}

// Has reports whether attribute t was present.
func (m *RuleMsg) Has(t int) bool { return m.Present&(1<<uint(t)) != 0 }

// Set marks attribute t present (for replies).
func (m *RuleMsg) Set(t int) { m.Present |= 1 << uint(t) }

// DecodeRuleHeader decodes the fib_rule_hdr of a rule request. The
// attributes are validated later by ParseAttrs, because the kernel checks the
// family (fib_nl2rule's first step) before the attribute policy.
func DecodeRuleHeader(m *Message) (*RuleMsg, *Error) {
	r := new(RuleMsg)
	if err := r.DecodeHeader(m); err != nil {
		return nil, err
	}
	return r, nil
}

// DecodeHeader is DecodeRuleHeader into r (which callers may keep on the
// stack).
func (r *RuleMsg) DecodeHeader(m *Message) *Error {
	if len(m.Data) < RuleHdrLen {
		return Errorf(syscall.EINVAL, "Invalid msg length")
	}
	d := m.Data
	*r = RuleMsg{
		Family: d[0], DstLen: d[1], SrcLen: d[2], Tos: d[3], Table: d[4],
		Res1: d[5], Res2: d[6], Action: d[7], Flags: ne.Uint32(d[8:]),
	}
	if len(d) > align4(RuleHdrLen) {
		r.attrs = d[align4(RuleHdrLen):]
	}
	return nil
}

// RuleFamily returns the family byte of a rule message, AF_UNSPEC when the
// body is too short to hold one (rtnl_msg_family()).
func RuleFamily(m *Message) uint8 {
	if len(m.Data) < 1 {
		return AF_UNSPEC
	}
	return m.Data[0]
}

// HasTrailingAttrs reports whether the request carried bytes after the
// fib_rule_hdr (used by strict dump checks).
func (m *RuleMsg) HasTrailingAttrs() bool { return len(m.attrs) > 0 }

// ruleStrictStart is fib_rule_policy's strict_start_type: attributes from
// FRA_DSCP on are validated strictly.
const ruleStrictStart = FRA_DSCP

type policyKind uint8

const (
	polNone policyKind = iota
	polU8
	polU16
	polU32
	polU64
	polBE32
	polString
	polMinLen
)

type policy struct {
	kind   policyKind
	minLen int    // polMinLen
	max    uint64 // polU8 range maximum when not the type's own
	mask   uint64 // NLA_POLICY_MASK
}

// rulePolicy mirrors fib_rule_policy (include/net/fib_rules.h FRA_GENERIC_POLICY
// plus the family additions); attributes without an entry are unchecked.
var rulePolicy = [FRA_MAX + 1]policy{
	FRA_IIFNAME:            {kind: polString},
	FRA_GOTO:               {kind: polU32},
	FRA_PRIORITY:           {kind: polU32},
	FRA_FWMARK:             {kind: polU32},
	FRA_FLOW:               {kind: polU32},
	FRA_TUN_ID:             {kind: polU64},
	FRA_SUPPRESS_IFGROUP:   {kind: polU32},
	FRA_SUPPRESS_PREFIXLEN: {kind: polU32},
	FRA_TABLE:              {kind: polU32},
	FRA_FWMASK:             {kind: polU32},
	FRA_OIFNAME:            {kind: polString},
	FRA_L3MDEV:             {kind: polU8},
	FRA_UID_RANGE:          {kind: polMinLen, minLen: 8},
	FRA_PROTOCOL:           {kind: polU8},
	FRA_IP_PROTO:           {kind: polU8},
	FRA_SPORT_RANGE:        {kind: polMinLen, minLen: 4},
	FRA_DPORT_RANGE:        {kind: polMinLen, minLen: 4},
	FRA_DSCP:               {kind: polU8, max: 63},
	FRA_FLOWLABEL:          {kind: polBE32},
	FRA_FLOWLABEL_MASK:     {kind: polBE32},
	FRA_SPORT_MASK:         {kind: polU16},
	FRA_DPORT_MASK:         {kind: polU16},
	FRA_DSCP_MASK:          {kind: polU8, mask: 0x3f},
}

const ifNameMax = 15 // IFNAMSIZ - 1

// policyNest encodes the NLMSGERR_ATTR_POLICY content that
// netlink_policy_dump_write_attr() produces for p: the type-specific
// attributes first, NL_POLICY_TYPE_ATTR_TYPE last.
func policyNest(p policy) []byte {
	ae := netlink.NewAttributeEncoder()
	var typ uint32
	umax := func(def uint64) uint64 {
		if p.max != 0 {
			return p.max
		}
		return def
	}
	switch p.kind {
	case polString:
		ae.Uint32(NL_POLICY_TYPE_ATTR_MAX_LENGTH, ifNameMax)
		typ = NL_ATTR_TYPE_STRING
	case polU8, polU16, polU32, polU64:
		typ = map[policyKind]uint32{polU8: NL_ATTR_TYPE_U8, polU16: NL_ATTR_TYPE_U16, polU32: NL_ATTR_TYPE_U32, polU64: 5}[p.kind]
		if p.mask != 0 {
			ae.Uint64(nlPolicyTypeAttrMask, p.mask)
			break
		}
		def := map[policyKind]uint64{polU8: 0xff, polU16: 0xffff, polU32: 0xffffffff, polU64: ^uint64(0)}[p.kind]
		ae.Uint64(NL_POLICY_TYPE_ATTR_MIN_VALUE_U, 0)
		ae.Uint64(NL_POLICY_TYPE_ATTR_MAX_VALUE_U, umax(def))
	case polNested:
		typ = NL_ATTR_TYPE_NESTED
	default:
		return nil
	}
	ae.Uint32(NL_POLICY_TYPE_ATTR_TYPE, typ)
	b, _ := ae.Encode()
	return b
}

const nlPolicyTypeAttrMask = 12

// rulePolicySet is fib_rule_policy for the shared policy engine
// (policy.go): attributes from FRA_DSCP on are validated strictly.
var rulePolicySet = policySet{pol: rulePolicy[:], strictStart: ruleStrictStart}

// parseErr is the error fib_nl2rule reports for any policy failure: the
// validator's message is replaced by "Error parsing msg" but the offset and
// policy stay.
func parseErr(errno syscall.Errno, a rawAttr, nest []byte) *Error {
	return &Error{Errno: errno, Msg: "Error parsing msg", Offset: a.off, Policy: nest}
}

// validate mirrors validate_nla() for one rule attribute.
func validate(a rawAttr) *Error {
	if _, err := rulePolicySet.check(a, validateLiberal); err != nil {
		return parseErr(err.Errno, a, err.Policy)
	}
	return nil
}

// ParseAttrs validates and decodes the attributes of a rule request
// (nlmsg_parse_deprecated with fib_rule_policy). Types above FRA_MAX and type
// 0 are ignored; a later occurrence of a type overrides an earlier one.
func (m *RuleMsg) ParseAttrs() *Error {
	for it := (attrIter{b: m.attrs, base: ruleAttrBase}); ; {
		a, ok := it.next()
		if !ok {
			if it.leftover() > 0 {
				m.Warning = "bytes leftover after parsing attributes"
			}
			return nil
		}
		if err := m.parseAttr(a); err != nil {
			return err
		}
	}
}

func (m *RuleMsg) parseAttr(a rawAttr) *Error {
	{
		if a.typ == 0 || a.typ > FRA_MAX {
			return nil
		}
		if err := validate(a); err != nil {
			return err
		}
		m.Set(int(a.typ))
		if a.typ >= ruleStrictStart {
			m.offs[a.typ-ruleStrictStart] = a.off
		}
		d := a.data
		switch a.typ {
		case FRA_DST:
			m.Dst = d
		case FRA_SRC:
			m.Src = d
		case FRA_IIFNAME:
			m.IIFName = trimNul(d)
		case FRA_OIFNAME:
			m.OIFName = trimNul(d)
		case FRA_GOTO:
			m.Goto = ne.Uint32(d)
		case FRA_PRIORITY:
			m.Priority = ne.Uint32(d)
		case FRA_FWMARK:
			m.FwMark = ne.Uint32(d)
		case FRA_FLOW:
			m.Flow = ne.Uint32(d)
		case FRA_TUN_ID:
			m.TunID = binary.BigEndian.Uint64(d)
		case FRA_SUPPRESS_IFGROUP:
			m.SuppressIfgroup = ne.Uint32(d)
		case FRA_SUPPRESS_PREFIXLEN:
			m.SuppressPrefixlen = ne.Uint32(d)
		case FRA_TABLE:
			m.Table32 = ne.Uint32(d)
		case FRA_FWMASK:
			m.FwMask = ne.Uint32(d)
		case FRA_L3MDEV:
			m.L3MDev = d[0]
		case FRA_UID_RANGE:
			m.UIDRange = [2]uint32{ne.Uint32(d), ne.Uint32(d[4:])}
		case FRA_PROTOCOL:
			m.Protocol = d[0]
		case FRA_IP_PROTO:
			m.IPProto = d[0]
		case FRA_SPORT_RANGE:
			m.SportRange = [2]uint16{ne.Uint16(d), ne.Uint16(d[2:])}
		case FRA_DPORT_RANGE:
			m.DportRange = [2]uint16{ne.Uint16(d), ne.Uint16(d[2:])}
		case FRA_DSCP:
			m.DSCP = d[0]
		case FRA_FLOWLABEL:
			m.FlowLabel = binary.BigEndian.Uint32(d)
		case FRA_FLOWLABEL_MASK:
			m.FlowLabelMask = binary.BigEndian.Uint32(d)
		case FRA_SPORT_MASK:
			m.SportMask = ne.Uint16(d)
		case FRA_DPORT_MASK:
			m.DportMask = ne.Uint16(d)
		case FRA_DSCP_MASK:
			m.DSCPMask = d[0]
		}
		return nil
	}
}

// trimNul drops one trailing NUL, as nla_strscpy() does.
func trimNul(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == 0 {
		return b[:len(b)-1]
	}
	return b
}

// ruleFillOrder is the attribute order of fib_nl_fill_rule() followed by the
// family fill functions (fib4_rule_fill, fib6_rule_fill).
var ruleFillOrder = [...]uint16{
	FRA_TABLE, FRA_SUPPRESS_PREFIXLEN, FRA_PROTOCOL, FRA_IIFNAME, FRA_OIFNAME,
	FRA_PRIORITY, FRA_FWMARK, FRA_FWMASK, FRA_GOTO, FRA_TUN_ID, FRA_L3MDEV,
	FRA_UID_RANGE, FRA_SPORT_RANGE, FRA_SPORT_MASK, FRA_DPORT_RANGE,
	FRA_DPORT_MASK, FRA_IP_PROTO, FRA_SUPPRESS_IFGROUP,
	// family part; which of these a family emits is decided by Present.
	FRA_DSCP, FRA_DSCP_MASK, FRA_FLOWLABEL, FRA_FLOWLABEL_MASK, FRA_DST, FRA_SRC, FRA_FLOW,
}

// AppendRule appends one rule message (header + attributes in the kernel's
// fill order, only those marked Present) to dst.
func AppendRule(dst []byte, typ, flags uint16, seq, pid uint32, m *RuleMsg) []byte {
	var h [RuleHdrLen]byte
	h[0], h[1], h[2], h[3], h[4], h[5], h[6], h[7] = m.Family, m.DstLen, m.SrcLen, m.Tos, m.Table, m.Res1, m.Res2, m.Action
	ne.PutUint32(h[8:], m.Flags)
	ae := netlink.NewAttributeEncoder()
	for _, t := range ruleFillOrder {
		if !m.Has(int(t)) {
			continue
		}
		switch t {
		case FRA_TABLE:
			ae.Uint32(t, m.Table32)
		case FRA_SUPPRESS_PREFIXLEN:
			ae.Uint32(t, m.SuppressPrefixlen)
		case FRA_PROTOCOL:
			ae.Uint8(t, m.Protocol)
		case FRA_IIFNAME:
			ae.String(t, string(m.IIFName))
		case FRA_OIFNAME:
			ae.String(t, string(m.OIFName))
		case FRA_PRIORITY:
			ae.Uint32(t, m.Priority)
		case FRA_FWMARK:
			ae.Uint32(t, m.FwMark)
		case FRA_FWMASK:
			ae.Uint32(t, m.FwMask)
		case FRA_GOTO:
			ae.Uint32(t, m.Goto)
		case FRA_TUN_ID:
			var b [8]byte
			binary.BigEndian.PutUint64(b[:], m.TunID)
			ae.Bytes(t, b[:])
		case FRA_L3MDEV:
			ae.Uint8(t, m.L3MDev)
		case FRA_UID_RANGE:
			var b [8]byte
			ne.PutUint32(b[:], m.UIDRange[0])
			ne.PutUint32(b[4:], m.UIDRange[1])
			ae.Bytes(t, b[:])
		case FRA_SPORT_RANGE, FRA_DPORT_RANGE:
			pr := m.SportRange
			if t == FRA_DPORT_RANGE {
				pr = m.DportRange
			}
			var b [4]byte
			ne.PutUint16(b[:], pr[0])
			ne.PutUint16(b[2:], pr[1])
			ae.Bytes(t, b[:])
		case FRA_SPORT_MASK:
			ae.Uint16(t, m.SportMask)
		case FRA_DPORT_MASK:
			ae.Uint16(t, m.DportMask)
		case FRA_IP_PROTO:
			ae.Uint8(t, m.IPProto)
		case FRA_SUPPRESS_IFGROUP:
			ae.Uint32(t, m.SuppressIfgroup)
		case FRA_DSCP:
			ae.Uint8(t, m.DSCP)
		case FRA_DSCP_MASK:
			ae.Uint8(t, m.DSCPMask)
		case FRA_FLOWLABEL, FRA_FLOWLABEL_MASK:
			v := m.FlowLabel
			if t == FRA_FLOWLABEL_MASK {
				v = m.FlowLabelMask
			}
			var b [4]byte
			binary.BigEndian.PutUint32(b[:], v)
			ae.Bytes(t, b[:])
		case FRA_DST:
			ae.Bytes(t, m.Dst)
		case FRA_SRC:
			ae.Bytes(t, m.Src)
		case FRA_FLOW:
			ae.Uint32(t, m.Flow)
		}
	}
	attrs, _ := ae.Encode()
	return AppendMessage(dst, typ, flags, seq, pid, h[:], attrs)
}
