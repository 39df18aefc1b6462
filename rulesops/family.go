package rulesops

import (
	"bytes"
	"syscall"

	"github.com/nlemu/nlemu/rtnl"
)

// family is one rule family's plug-in (the kernel's fib4/fib6/ipmr/ip6mr
// rules_ops): its address size, notification group and default rules, and
// the configure / compare / fill steps, selected by a switch on id rather
// than through indirect calls.
type family struct {
	id       uint8
	addrSize int
	group    uint32
	defaults []Rule
}

func defRule(pref, table uint32) Rule {
	return Rule{Pref: pref, Table: table, Action: rtnl.FR_ACT_TO_TBL, Protocol: rtnl.RTPROT_KERNEL}
}

// Families in the order an AF_UNSPEC dump walks them (their registration
// order in a namespace): AF_INET, IPMR, IP6MR, AF_INET6.
var (
	famInet = &family{id: rtnl.AF_INET, addrSize: 4, group: rtnl.RTNLGRP_IPV4_RULE,
		defaults: []Rule{defRule(0, rtnl.RT_TABLE_LOCAL), defRule(0x7FFE, rtnl.RT_TABLE_MAIN), defRule(0x7FFF, rtnl.RT_TABLE_DEFAULT)}}
	famIPMR = &family{id: rtnl.RTNL_FAMILY_IPMR, addrSize: 4, group: rtnl.RTNLGRP_IPV4_RULE,
		defaults: []Rule{defRule(0x7FFF, rtnl.RT_TABLE_DEFAULT)}}
	famIP6MR = &family{id: rtnl.RTNL_FAMILY_IP6MR, addrSize: 16, group: rtnl.RTNLGRP_IPV6_RULE,
		defaults: []Rule{defRule(0x7FFF, rtnl.RT_TABLE_MAIN)}}
	famInet6 = &family{id: rtnl.AF_INET6, addrSize: 16, group: rtnl.RTNLGRP_IPV6_RULE,
		defaults: []Rule{defRule(0, rtnl.RT_TABLE_LOCAL), defRule(0x7FFE, rtnl.RT_TABLE_MAIN)}}
	families = []*family{famInet, famIPMR, famIP6MR, famInet6}
)

func (f *family) isMR() bool {
	return f.id == rtnl.RTNL_FAMILY_IPMR || f.id == rtnl.RTNL_FAMILY_IP6MR
}

// dscpChecks is the DSCP part common to fib4_rule_configure and
// fib6_rule_configure.
func dscpChecks(m *rtnl.RuleMsg, x *Extra) *rtnl.Error {
	if m.Has(rtnl.FRA_DSCP) {
		if m.Tos != 0 {
			return rtnl.Errorf(syscall.EINVAL, "Cannot specify both TOS and DSCP")
		}
		x.DSCPFull = true
		x.DSCP = m.DSCP
		x.DSCPMask = 0x3f
	}
	if m.Has(rtnl.FRA_DSCP_MASK) {
		if !x.DSCPFull {
			return rtnl.AttrError(syscall.EINVAL, "Cannot specify DSCP mask without DSCP value", m.Off(rtnl.FRA_DSCP_MASK))
		}
		if x.DSCP&^m.DSCPMask != 0 {
			return rtnl.AttrError(syscall.EINVAL, "Invalid DSCP mask", m.Off(rtnl.FRA_DSCP_MASK))
		}
		x.DSCPMask = m.DSCPMask
	}
	return nil
}

// configure is ops->configure: fib4_rule_configure, fib6_rule_configure, or
// the mroute families' no-op. It may allocate or create tables.
func (f *family) configure(env *Env, r *Rule, x *Extra, m *rtnl.RuleMsg) *rtnl.Error {
	switch f.id {
	case rtnl.AF_INET:
		if m.Has(rtnl.FRA_FLOWLABEL) || m.Has(rtnl.FRA_FLOWLABEL_MASK) {
			return rtnl.Errorf(syscall.EINVAL, "Flow label cannot be specified for IPv4 FIB rules")
		}
		if m.Tos&0x03 != 0 {
			return rtnl.Errorf(syscall.EINVAL, "Invalid dsfield (tos): ECN bits must be 0")
		}
		if m.Tos&^0x1E != 0 {
			return rtnl.Errorf(syscall.EINVAL, "Invalid tos")
		}
		r.Tos = m.Tos
		if err := dscpChecks(m, x); err != nil {
			return err
		}
		// fib_unmerge(): splits local from main the first time; a no-op after.
		if env.Tables != nil {
			if err := env.Tables.Unmerge(); err != nil {
				return rtnl.Errno(syscall.ENOMEM)
			}
		}
		if r.Table == rtnl.RT_TABLE_UNSPEC && x.L3MDev == 0 && r.Action == rtnl.FR_ACT_TO_TBL {
			// fib_empty_table(): the lowest id with no IPv4 table yet.
			id, ok := uint32(0), false
			if env.Tables != nil {
				id, ok = env.Tables.AllocEmpty()
			}
			if !ok {
				return rtnl.Errno(syscall.ENOBUFS)
			}
			r.Table = id
		}
		f.storeAddrs(r, x, m)
		if m.Has(rtnl.FRA_FLOW) {
			x.Realm = m.Flow
		}
	case rtnl.AF_INET6:
		if m.Tos&0x03 != 0 {
			return rtnl.Errorf(syscall.EINVAL, "Invalid dsfield (tos): ECN bits must be 0")
		}
		r.Tos = m.Tos
		if err := dscpChecks(m, x); err != nil {
			return err
		}
		if m.Has(rtnl.FRA_FLOWLABEL) || m.Has(rtnl.FRA_FLOWLABEL_MASK) {
			if !m.Has(rtnl.FRA_FLOWLABEL) {
				return &rtnl.Error{Errno: syscall.EINVAL, MissType: rtnl.FRA_FLOWLABEL}
			}
			if !m.Has(rtnl.FRA_FLOWLABEL_MASK) {
				return &rtnl.Error{Errno: syscall.EINVAL, MissType: rtnl.FRA_FLOWLABEL_MASK}
			}
			if m.FlowLabelMask&^0x000FFFFF != 0 {
				return rtnl.AttrError(syscall.EINVAL, "Invalid flow label mask", m.Off(rtnl.FRA_FLOWLABEL_MASK))
			}
			if m.FlowLabel&^m.FlowLabelMask != 0 {
				return rtnl.Errorf(syscall.EINVAL, "Flow label and mask do not match")
			}
			x.FlowLabel, x.FlowLabelMask = m.FlowLabel, m.FlowLabelMask
		}
		if r.Action == rtnl.FR_ACT_TO_TBL && x.L3MDev == 0 {
			if r.Table == rtnl.RT_TABLE_UNSPEC {
				return rtnl.Errorf(syscall.EINVAL, "Invalid table")
			}
			if env.Tables != nil {
				if err := env.Tables.Create(r.Table); err != nil {
					return rtnl.Errno(syscall.ENOBUFS)
				}
			}
		}
		f.storeAddrs(r, x, m)
	}
	return nil
}

// storeAddrs keeps FRA_SRC/FRA_DST as given (host bits are not cleared).
func (f *family) storeAddrs(r *Rule, x *Extra, m *rtnl.RuleMsg) {
	r.SrcLen, r.DstLen = m.SrcLen, m.DstLen
	if m.SrcLen != 0 {
		copy(x.Src[:], m.Src)
	}
	if m.DstLen != 0 {
		copy(x.Dst[:], m.Dst)
	}
}

// compare is ops->compare (fib4_rule_compare, fib6_rule_compare): it looks
// only at family fields present in the request, which makes duplicate
// detection asymmetric.
func (f *family) compare(r *Rule, x *Extra, m *rtnl.RuleMsg) bool {
	if f.isMR() {
		return true
	}
	if m.SrcLen != 0 && r.SrcLen != m.SrcLen {
		return false
	}
	if m.DstLen != 0 && r.DstLen != m.DstLen {
		return false
	}
	if m.Tos != 0 && (x.DSCPFull || r.Tos != m.Tos) {
		return false
	}
	if m.Has(rtnl.FRA_DSCP) && (!x.DSCPFull || x.DSCP != m.DSCP) {
		return false
	}
	if m.Has(rtnl.FRA_DSCP_MASK) && (!x.DSCPFull || x.DSCPMask != m.DSCPMask) {
		return false
	}
	if f.id == rtnl.AF_INET {
		if m.Has(rtnl.FRA_FLOW) && x.Realm != m.Flow {
			return false
		}
	} else {
		if m.Has(rtnl.FRA_FLOWLABEL) && x.FlowLabel != m.FlowLabel {
			return false
		}
		if m.Has(rtnl.FRA_FLOWLABEL_MASK) && x.FlowLabelMask != m.FlowLabelMask {
			return false
		}
	}
	if m.SrcLen != 0 && !bytes.Equal(x.Src[:f.addrSize], m.Src) {
		return false
	}
	if m.DstLen != 0 && !bytes.Equal(x.Dst[:f.addrSize], m.Dst) {
		return false
	}
	return true
}

// fill is ops->fill: the family's header fields and attributes.
func (f *family) fill(r *Rule, x *Extra, m *rtnl.RuleMsg) {
	if f.isMR() {
		return
	}
	m.SrcLen, m.DstLen = r.SrcLen, r.DstLen
	if x.DSCPFull {
		m.Tos = 0
		m.DSCP, m.DSCPMask = x.DSCP, x.DSCPMask
		m.Set(rtnl.FRA_DSCP)
		m.Set(rtnl.FRA_DSCP_MASK)
	} else {
		m.Tos = r.Tos
	}
	if f.id == rtnl.AF_INET6 && x.FlowLabelMask != 0 {
		m.FlowLabel, m.FlowLabelMask = x.FlowLabel, x.FlowLabelMask
		m.Set(rtnl.FRA_FLOWLABEL)
		m.Set(rtnl.FRA_FLOWLABEL_MASK)
	}
	if r.DstLen != 0 {
		m.Dst = append([]byte(nil), x.Dst[:f.addrSize]...)
		m.Set(rtnl.FRA_DST)
	}
	if r.SrcLen != 0 {
		m.Src = append([]byte(nil), x.Src[:f.addrSize]...)
		m.Set(rtnl.FRA_SRC)
	}
	if f.id == rtnl.AF_INET && x.Realm != 0 {
		m.Flow = x.Realm
		m.Set(rtnl.FRA_FLOW)
	}
}
