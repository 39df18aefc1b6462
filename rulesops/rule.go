package rulesops

import (
	"sync/atomic"

	"github.com/nlemu/nlemu/rtnl"
)

// Rule is one policy rule as stored: struct fib_rule plus the family part
// (fib4_rule / fib6_rule). The fields every rule has are kept inline; the
// rarely used selectors live in an Extra that the rule names by index in its
// list's extras table (0 = none, a plain "from all lookup T" rule). A Rule
// therefore holds no pointer: millions of them cost 28 bytes each and the
// garbage collector never scans them. Rules are values: a snapshot of a rule
// list never changes, except for the interface indexes in Extra, which
// device events update atomically (the kernel's lockless ifindex writes).
type Rule struct {
	Pref     uint32
	Table    uint32
	Flags    uint32 // stored verbatim from the request
	Target   uint32 // goto target priority
	xi       uint32 // 1 + index in the list's extras; 0 = plain
	Action   uint8
	Protocol uint8
	SrcLen   uint8
	DstLen   uint8
	// Tos is the rule's TOS value in TOS mode (hdr.tos), 0 otherwise.
	Tos uint8
}

// Extra holds the selectors most rules do not use.
type Extra struct {
	IIFName, OIFName   [16]byte // nla_strscpy'd names, zero padded
	iifIndex, oifIndex int32    // 0 none, -1 detached; atomic access
	Mark, MarkMask     uint32
	TunID              uint64
	SuppressIfgroup    int32
	SuppressPrefixlen  int32
	L3MDev             uint8
	UIDStart, UIDEnd   uint32
	IPProto            uint8
	Sport, Dport       [2]uint16
	SportMask          uint16
	DportMask          uint16
	Src, Dst           [16]byte
	DSCPFull           bool // DSCP mode (FRA_DSCP given)
	DSCP, DSCPMask     uint8
	FlowLabel          uint32
	FlowLabelMask      uint32
	Realm              uint32 // IPv4 FRA_FLOW (tclassid)
}

// uidUnset is the "no uid selector" range: [0, INVALID_UID].
const uidInvalid = 0xFFFFFFFF

var plainExtra = Extra{SuppressIfgroup: -1, SuppressPrefixlen: -1, UIDEnd: uidInvalid}

// isPlain reports whether x carries nothing beyond the defaults, so that the
// rule can drop it.
func (x *Extra) isPlain() bool {
	return x.IIFName == [16]byte{} && x.OIFName == [16]byte{} &&
		x.iifIndex == 0 && x.oifIndex == 0 &&
		x.Mark == 0 && x.MarkMask == 0 && x.TunID == 0 &&
		x.SuppressIfgroup == -1 && x.SuppressPrefixlen == -1 && x.L3MDev == 0 &&
		x.UIDStart == 0 && x.UIDEnd == uidInvalid && x.IPProto == 0 &&
		x.Sport == [2]uint16{} && x.Dport == [2]uint16{} && x.SportMask == 0 && x.DportMask == 0 &&
		x.Src == [16]byte{} && x.Dst == [16]byte{} && !x.DSCPFull && x.DSCP == 0 && x.DSCPMask == 0 &&
		x.FlowLabel == 0 && x.FlowLabelMask == 0 && x.Realm == 0
}

// IIFIndex returns the bound input ifindex: 0 none, -1 detached.
func (x *Extra) IIFIndex() int32 { return atomic.LoadInt32(&x.iifIndex) }

// OIFIndex returns the bound output ifindex: 0 none, -1 detached.
func (x *Extra) OIFIndex() int32 { return atomic.LoadInt32(&x.oifIndex) }

func uidRangeSet(start, end uint32) bool { return start != uidInvalid && end != uidInvalid }

func portRangeSet(p [2]uint16) bool { return p[0] != 0 && p[1] != 0 }

// portRangeValid is fib_rule_port_range_valid().
func portRangeValid(p [2]uint16) bool {
	return p[0] != 0 && p[1] != 0 && p[1] < 0xffff && p[0] <= p[1]
}

func cstr(b *[16]byte) []byte {
	for i, c := range b {
		if c == 0 {
			return b[:i]
		}
	}
	return b[:]
}

// fill builds the message fib_nl_fill_rule() would send for r. unresolved
// is the goto state, which depends on the rest of the list.
func fill(fam *family, r *Rule, x *Extra, unresolved bool) *rtnl.RuleMsg {
	m := &rtnl.RuleMsg{Family: fam.id, Action: r.Action, Flags: r.Flags}
	if r.Table < 256 {
		m.Table = uint8(r.Table)
	} else {
		m.Table = rtnl.RT_TABLE_COMPAT
	}
	m.Table32 = r.Table
	m.Set(rtnl.FRA_TABLE)
	m.SuppressPrefixlen = uint32(x.SuppressPrefixlen)
	m.Set(rtnl.FRA_SUPPRESS_PREFIXLEN)
	m.Protocol = r.Protocol
	m.Set(rtnl.FRA_PROTOCOL)
	if r.Action == rtnl.FR_ACT_GOTO && unresolved {
		m.Flags |= rtnl.FIB_RULE_UNRESOLVED
	}
	if x.IIFName[0] != 0 {
		m.IIFName = cstr(&x.IIFName)
		m.Set(rtnl.FRA_IIFNAME)
		if x.IIFIndex() == -1 {
			m.Flags |= rtnl.FIB_RULE_IIF_DETACHED
		}
	}
	if x.OIFName[0] != 0 {
		m.OIFName = cstr(&x.OIFName)
		m.Set(rtnl.FRA_OIFNAME)
		if x.OIFIndex() == -1 {
			m.Flags |= rtnl.FIB_RULE_OIF_DETACHED
		}
	}
	if r.Pref != 0 {
		m.Priority = r.Pref
		m.Set(rtnl.FRA_PRIORITY)
	}
	if x.Mark != 0 {
		m.FwMark = x.Mark
		m.Set(rtnl.FRA_FWMARK)
	}
	if x.MarkMask != 0 || x.Mark != 0 {
		m.FwMask = x.MarkMask
		m.Set(rtnl.FRA_FWMASK)
	}
	if r.Target != 0 {
		m.Goto = r.Target
		m.Set(rtnl.FRA_GOTO)
	}
	if x.TunID != 0 {
		m.TunID = x.TunID
		m.Set(rtnl.FRA_TUN_ID)
	}
	if x.L3MDev != 0 {
		m.L3MDev = x.L3MDev
		m.Set(rtnl.FRA_L3MDEV)
	}
	if uidRangeSet(x.UIDStart, x.UIDEnd) {
		m.UIDRange = [2]uint32{x.UIDStart, x.UIDEnd}
		m.Set(rtnl.FRA_UID_RANGE)
	}
	if portRangeSet(x.Sport) {
		m.SportRange = x.Sport
		m.Set(rtnl.FRA_SPORT_RANGE)
	}
	if x.SportMask != 0 {
		m.SportMask = x.SportMask
		m.Set(rtnl.FRA_SPORT_MASK)
	}
	if portRangeSet(x.Dport) {
		m.DportRange = x.Dport
		m.Set(rtnl.FRA_DPORT_RANGE)
	}
	if x.DportMask != 0 {
		m.DportMask = x.DportMask
		m.Set(rtnl.FRA_DPORT_MASK)
	}
	if x.IPProto != 0 {
		m.IPProto = x.IPProto
		m.Set(rtnl.FRA_IP_PROTO)
	}
	if x.SuppressIfgroup != -1 {
		m.SuppressIfgroup = uint32(x.SuppressIfgroup)
		m.Set(rtnl.FRA_SUPPRESS_IFGROUP)
	}
	fam.fill(r, x, m)
	return m
}
