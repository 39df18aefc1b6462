package rtnl

import (
	"encoding/binary"
	"syscall"
)

var be = binary.BigEndian

// validateMode is __nla_validate_parse()'s validate argument (enum
// netlink_validation): which of the strict checks apply.
type validateMode uint8

const (
	// validateLiberal is NL_VALIDATE_LIBERAL, what the _deprecated
	// parsers use: unknown types are ignored, trailing bytes only warn.
	validateLiberal validateMode = 0
	// validateTrailing rejects bytes after the last attribute.
	validateTrailing validateMode = 1 << 0
	// validateMaxType rejects type 0 and types above the policy's maximum.
	validateMaxType validateMode = 1 << 1
	// validateUnspec rejects attributes whose policy type is NLA_UNSPEC
	// (no entry, or only a minimum length).
	validateUnspec validateMode = 1 << 2
	// validateStrictAttrs rejects fixed-size attributes of another size.
	validateStrictAttrs validateMode = 1 << 3
	// validateNested checks NLA_F_NESTED against the policy.
	validateNested validateMode = 1 << 4

	// validateDeprecatedStrict is NL_VALIDATE_DEPRECATED_STRICT
	// (nlmsg_parse_deprecated_strict()).
	validateDeprecatedStrict = validateTrailing | validateMaxType
	// validateStrict is NL_VALIDATE_STRICT: what validate_nla() applies to
	// attributes at or above the policy's strict_start_type.
	validateStrict = validateTrailing | validateMaxType | validateUnspec | validateStrictAttrs | validateNested
)

// policySet is one struct nla_policy array: an entry per type up to maxType
// and the strict_start_type of its entry 0.
type policySet struct {
	pol         []policy // indexed by type; len = maxType+1
	strictStart uint16   // 0 = none
}

// policyFailed is the text validate_nla() reports for a value outside the
// policy (its out_err label).
const policyFailed = "Attribute failed policy validation"

// check validates one attribute as __nla_validate_parse() and validate_nla()
// do. use is false for an attribute the parse skips (type 0 or above the
// maximum in a liberal parse).
func (ps *policySet) check(a rawAttr, mode validateMode) (use bool, err *Error) {
	if a.typ == 0 || int(a.typ) >= len(ps.pol) {
		if mode&validateMaxType != 0 {
			return false, AttrError(syscall.EINVAL, "Unknown attribute type", a.off)
		}
		return false, nil
	}
	p := ps.pol[a.typ]
	if ps.strictStart != 0 && a.typ >= ps.strictStart {
		mode |= validateStrict
	}
	n := len(a.data)
	polErr := func(errno syscall.Errno, msg string) *Error {
		return &Error{Errno: errno, Msg: msg, Offset: a.off, Policy: policyNest(p)}
	}
	if sz := fixedSize(p.kind); sz != 0 && n != sz && mode&validateStrictAttrs != 0 {
		return false, polErr(syscall.EINVAL, "invalid attribute length")
	}
	if mode&validateNested != 0 {
		if p.kind == polNested && !a.nested {
			return false, polErr(syscall.EINVAL, "NLA_F_NESTED is missing")
		}
		// polNone and polMinLen are NLA_UNSPEC (with or without .len),
		// which the kernel exempts from the flag check.
		if p.kind != polNested && p.kind != polNone && p.kind != polMinLen && a.nested {
			return false, polErr(syscall.EINVAL, "NLA_F_NESTED not expected")
		}
	}
	switch p.kind {
	case polNone, polMinLen:
		if mode&validateUnspec != 0 {
			return false, AttrError(syscall.EINVAL, "Unsupported attribute", a.off)
		}
		if n < p.minLen {
			return false, polErr(syscall.ERANGE, policyFailed)
		}
	case polNested:
		if n != 0 && n < nlaHdrLen {
			return false, polErr(syscall.ERANGE, policyFailed)
		}
	case polString:
		l := n
		if l > 0 && a.data[l-1] == 0 {
			l--
		}
		if n < 1 || l > ifNameMax {
			return false, polErr(syscall.ERANGE, policyFailed)
		}
	default:
		if n < fixedSize(p.kind) {
			return false, polErr(syscall.ERANGE, policyFailed)
		}
		if p.max != 0 && uint64(a.data[0]) > p.max {
			return false, polErr(syscall.ERANGE, policyFailed)
		}
		if p.mask != 0 && uint64(a.data[0])&^p.mask != 0 {
			return false, &Error{Errno: syscall.EINVAL, Msg: policyFailed, Offset: a.off}
		}
	}
	return true, nil
}

// fixedSize is nla_attr_len[] for the integer kinds (0 otherwise).
func fixedSize(k policyKind) int {
	switch k {
	case polU8:
		return 1
	case polU16:
		return 2
	case polU32, polBE32:
		return 4
	case polU64:
		return 8
	}
	return 0
}

// rtmIPv4Policy mirrors rtm_ipv4_policy (net/ipv4/fib_frontend.c).
var rtmIPv4Policy = policySet{strictStart: RTA_DPORT + 1, pol: func() []policy {
	p := make([]policy, RTA_MAX+1)
	for _, t := range []int{RTA_DST, RTA_SRC, RTA_IIF, RTA_OIF, RTA_GATEWAY, RTA_PRIORITY,
		RTA_PREFSRC, RTA_FLOW, RTA_UID, RTA_MARK, RTA_TABLE, RTA_NH_ID} {
		p[t] = policy{kind: polU32}
	}
	p[RTA_METRICS] = policy{kind: polNested}
	p[RTA_ENCAP] = policy{kind: polNested}
	p[RTA_MULTIPATH] = policy{kind: polMinLen, minLen: RtnexthopLen}
	p[RTA_ENCAP_TYPE] = policy{kind: polU16}
	p[RTA_IP_PROTO] = policy{kind: polU8}
	p[RTA_SPORT] = policy{kind: polU16}
	p[RTA_DPORT] = policy{kind: polU16}
	return p
}()}

// rtmIPv6Policy mirrors rtm_ipv6_policy (net/ipv6/route.c). RTA_DST and
// RTA_SRC have no entry: rtm_to_fib6_config() checks their length against
// the prefix length itself.
var rtmIPv6Policy = policySet{strictStart: RTA_DPORT + 1, pol: func() []policy {
	p := make([]policy, RTA_MAX+1)
	p[RTA_GATEWAY] = policy{kind: polMinLen, minLen: 16}
	p[RTA_PREFSRC] = policy{kind: polMinLen, minLen: 16}
	for _, t := range []int{RTA_OIF, RTA_IIF, RTA_PRIORITY, RTA_EXPIRES, RTA_UID, RTA_MARK,
		RTA_TABLE, RTA_NH_ID} {
		p[t] = policy{kind: polU32}
	}
	p[RTA_METRICS] = policy{kind: polNested}
	p[RTA_ENCAP] = policy{kind: polNested}
	p[RTA_MULTIPATH] = policy{kind: polMinLen, minLen: RtnexthopLen}
	p[RTA_PREF] = policy{kind: polU8}
	p[RTA_ENCAP_TYPE] = policy{kind: polU16}
	p[RTA_IP_PROTO] = policy{kind: polU8}
	p[RTA_SPORT] = policy{kind: polU16}
	p[RTA_DPORT] = policy{kind: polU16}
	p[RTA_FLOWLABEL] = policy{kind: polBE32}
	return p
}()}

func routePolicy(fam uint8) *policySet {
	if fam == AF_INET6 {
		return &rtmIPv6Policy
	}
	return &rtmIPv4Policy
}

// polNested is NLA_NESTED (an empty nest, or one of at least a header).
const polNested = polMinLen + 1
