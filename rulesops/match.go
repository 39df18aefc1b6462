package rulesops

import (
	"encoding/binary"

	"github.com/nlemu/nlemu/flow"
	"github.com/nlemu/nlemu/rtnl"
)

// Pos is a rule's position in a Snapshot. The zero Pos is the first rule.
// A Pos is only meaningful for the snapshot that produced it.
type Pos struct{ c, o int32 }

// Hit is a rule that matched a flow, with what the lookup needs to run its
// action (fib_rules_lookup() and the family's action and suppress steps).
type Hit struct {
	// Pos is the rule's position; Next() is where the walk continues.
	Pos Pos
	// Pref is the rule's priority.
	Pref uint32
	// Table is the rule's table id (FR_ACT_TO_TBL).
	Table uint32
	// Action is the rule's FR_ACT_*.
	Action uint8
	// Resolved is whether a goto rule has a target: some rule has
	// priority Target. Goto is then the first such rule's position (the
	// kernel's rule->ctarget).
	Resolved bool
	Goto     Pos
	// SuppressPrefixlen and SuppressIfgroup are the suppressors, -1 off.
	SuppressPrefixlen, SuppressIfgroup int32
	// FindSaddr: an IPv6 rule with a source prefix matched a flow without
	// a source address because it has FIB_RULE_FIND_SADDR; the lookup must
	// pick a source in SrcLen/Src after the table lookup (fib6_rule_saddr()).
	FindSaddr bool
	SrcLen    uint8
	Src       [16]byte
}

// Next returns the position after the hit's rule.
func (h *Hit) Next() Pos { return Pos{h.Pos.c, h.Pos.o + 1} }

// Family returns the snapshot's family (AF_INET, AF_INET6, ...).
func (s Snapshot) Family() uint8 { return s.fam.id }

// key is a flow's addresses unpacked once per walk, so that the per-rule
// address comparisons are integer operations. It holds no pointer: a
// matcher fills it in place (set) without moving the caller's key to the
// heap.
type key struct {
	// w is the addresses as big-endian words: dst hi, dst lo, src hi,
	// src lo; an IPv4 address is the high half of its hi word.
	w      [4]uint64
	hasSrc bool
}

// set unpacks k's addresses into u.
func (u *key) set(k *flow.Key) {
	u.hasSrc = k.Src.IsValid() && !k.Src.IsUnspecified()
	u.w = [4]uint64{}
	if k.Dst.Is4() {
		a := k.Dst.As4()
		u.w[0] = uint64(binary.BigEndian.Uint32(a[:])) << 32
	} else if k.Dst.IsValid() {
		a := k.Dst.As16()
		u.w[0], u.w[1] = binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])
	}
	if k.Src.Is4() {
		a := k.Src.As4()
		u.w[2] = uint64(binary.BigEndian.Uint32(a[:])) << 32
	} else if k.Src.IsValid() {
		a := k.Src.As16()
		u.w[2], u.w[3] = binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])
	}
}

// flowKV is the fwmark and the family's TOS value of k as the compiled
// records compare them (kvOf): fib4_rule_match()'s flow TOS & 0x1C
// (IPTOS_RT_MASK without the ECN bit), fib6_rule_match()'s DSCP.
func flowKV(k *flow.Key, fam uint8) uint64 {
	tos := k.TOS & 0x1C
	if fam == rtnl.AF_INET6 {
		tos = k.TOS >> 2
	}
	return kvOf(k.Mark, tos)
}

// Match returns the first rule at or after p that matches k
// (fib_rule_match() with the family's match), or false at the end of the
// list. It makes no interface or function-value call per rule: the family
// part is a switch on the snapshot's family.
func (s Snapshot) Match(p Pos, k *flow.Key) (Hit, bool) {
	m := s.Matcher(k)
	return m.Next(p)
}

// Step is Next by pointer, for the rule walk: the hit of a compiled list
// is its precomputed, read-only record (no 60-byte Hit copied per step),
// any other is m's own copy. It returns nil at the end of the list. The
// Hit must not be modified and is valid until the next Step or Next on m.
func (m *Matcher) Step(p Pos) *Hit {
	if c := m.s.l.comp; c != nil {
		return m.stepCompiled(c, p)
	}
	h, ok := m.nextGeneral(p)
	if !ok {
		return nil
	}
	m.h = h
	return &m.h
}

// StepFast is Step's common case, small enough to be inlined in the
// rule walk: a compiled list, a flow without fwmark and TOS (kv 0), and a
// next candidate with nothing else to check (compiled.skip0), which is
// then the hit, found with two loads and no call. nil means that Step
// must be asked (it is not the end of the list): the walk calls
// StepFast, then Step when it returns nil. Both give the same hit
// (TestStepFastMatchesStep).
func (m *Matcher) StepFast(p Pos) *Hit {
	if c := m.s.l.comp; c != nil && m.kv == 0 {
		if s := c.skip0; uint(p.o) < uint(len(s)) {
			if h := c.hits; uint(s[p.o]) < uint(len(h)) {
				return &h[s[p.o]].hit
			}
		}
	}
	return nil
}

// Matcher is a flow unpacked once for a whole rule walk: a lookup that
// resumes the walk after each table that did not answer pays the address
// unpacking once, not once per resumption.
type Matcher struct {
	s  Snapshot
	k  *flow.Key
	kv uint64 // flowKV
	// u is k's addresses, unpacked on the first rule that tests one
	// (most walks past fwmark rules never need them).
	u        key
	unpacked bool
	h        Hit // Step's answer when it is not a compiled record
}

// addrs returns k's unpacked addresses.
func (m *Matcher) addrs() *key {
	if !m.unpacked {
		m.u.set(m.k)
		m.unpacked = true
	}
	return &m.u
}

// Matcher returns the matcher of k in s; k must outlive it.
func (s Snapshot) Matcher(k *flow.Key) Matcher {
	return Matcher{s: s, k: k, kv: flowKV(k, s.fam.id)}
}

// Next is Match from p. A list of the inet families up to compileMax rules
// long walks its compiled records (compiled.go), any other the chunks with
// the general match; both give the same hits.
func (m *Matcher) Next(p Pos) (Hit, bool) {
	if h := m.Step(p); h != nil {
		return *h, true
	}
	return Hit{}, false
}

// nextGeneral is Next over the chunks, every rule through match.
func (m *Matcher) nextGeneral(p Pos) (Hit, bool) {
	s := &m.s
	l := s.l
	u := m.addrs()
	for c := int(p.c); c < len(l.chunks); c++ {
		rs := l.chunks[c].rules
		o := 0
		if c == int(p.c) {
			o = int(p.o)
		}
		for ; o < len(rs); o++ {
			r := &rs[o]
			x := l.ext(r)
			ok, findSaddr := s.match(r, x, m.k, u)
			if !ok {
				continue
			}
			h := Hit{Pos: Pos{int32(c), int32(o)}, Pref: r.Pref, Table: r.Table, Action: r.Action,
				SuppressPrefixlen: x.SuppressPrefixlen, SuppressIfgroup: x.SuppressIfgroup}
			if findSaddr {
				h.FindSaddr, h.SrcLen, h.Src = true, r.SrcLen, x.Src
			}
			if r.Action == rtnl.FR_ACT_GOTO {
				q := l.bound(r.Target, false)
				if l.valid(q) && l.rule(q).Pref == r.Target {
					h.Resolved, h.Goto = true, Pos{int32(q.c), int32(q.o)}
				}
			}
			return h, true
		}
	}
	return Hit{}, false
}

// match is fib_rule_match(): the generic selectors, then the family's
// (fib4_rule_match(), fib6_rule_match()), and FIB_RULE_INVERT over the
// whole (so `not iif <missing device>` matches every flow, RULES-SPEC A27).
// findSaddr reports the IPv6 deferred source check.
func (s Snapshot) match(r *Rule, x *Extra, k *flow.Key, u *key) (ok, findSaddr bool) {
	ok, findSaddr = s.matchPlain(r, x, k, u)
	if r.Flags&rtnl.FIB_RULE_INVERT != 0 {
		return !ok, false
	}
	return ok, findSaddr
}

func (s Snapshot) matchPlain(r *Rule, x *Extra, k *flow.Key, u *key) (bool, bool) {
	if r.xi != 0 {
		// A detached rule has ifindex -1, which no flow carries. No
		// device is an L3 master in nlemu (no VRF), so the kernel's
		// l3mdev iif/oif case (fib_rule_iif_match()) never applies.
		if i := x.IIFIndex(); i != 0 && i != k.IIF {
			return false, false
		}
		if i := x.OIFIndex(); i != 0 && i != k.OIF {
			return false, false
		}
		if (x.Mark^k.Mark)&x.MarkMask != 0 {
			return false, false
		}
		if x.TunID != 0 && x.TunID != k.TunID {
			return false, false
		}
		// l3mdev_fib_rule_match() needs the flow's L3 master device to
		// have a table; nlemu has no VRF devices, so an l3mdev rule
		// never matches.
		if x.L3MDev != 0 {
			return false, false
		}
		if k.UID < x.UIDStart || k.UID > x.UIDEnd {
			return false, false
		}
	}
	switch s.fam.id {
	case rtnl.AF_INET:
		return s.match4(r, x, k, u), false
	case rtnl.AF_INET6:
		return s.match6(r, x, k, u)
	}
	// The mroute families' match always succeeds.
	return true, false
}

func mask4(plen uint8) uint32 {
	if plen == 0 {
		return 0
	}
	return ^uint32(0) << (32 - plen)
}

// match4 is fib4_rule_match().
func (s Snapshot) match4(r *Rule, x *Extra, k *flow.Key, u *key) bool {
	if r.SrcLen != 0 && (uint32(u.w[2]>>32)^binary.BigEndian.Uint32(x.Src[:4]))&mask4(r.SrcLen) != 0 {
		return false
	}
	if r.DstLen != 0 && (uint32(u.w[0]>>32)^binary.BigEndian.Uint32(x.Dst[:4]))&mask4(r.DstLen) != 0 {
		return false
	}
	// TOS mode: the rule's TOS against the flow's, masked with
	// IPTOS_RT_MASK minus the ECN bit (0x1C), as fib4_rule_match()
	// compares inet_dscp_to_dsfield(fl4->flowi4_dscp) & IPTOS_RT_MASK.
	if r.Tos != 0 && r.Tos != k.TOS&0x1C {
		return false
	}
	if r.xi == 0 {
		return true
	}
	if x.DSCPFull && (x.DSCP^k.DSCP())&x.DSCPMask != 0 {
		return false
	}
	return matchL4(x, k)
}

// prefix6 reports whether the address in words hi, lo and b agree in their
// first plen bits (ipv6_prefix_equal()).
func prefix6(hi, lo uint64, b *[16]byte, plen uint8) bool {
	mh, ml := mask64(plen)
	return (hi^binary.BigEndian.Uint64(b[:8]))&mh|(lo^binary.BigEndian.Uint64(b[8:]))&ml == 0
}

// match6 is fib6_rule_match().
func (s Snapshot) match6(r *Rule, x *Extra, k *flow.Key, u *key) (bool, bool) {
	if r.DstLen != 0 && !prefix6(u.w[0], u.w[1], &x.Dst, r.DstLen) {
		return false, false
	}
	findSaddr := false
	if r.SrcLen != 0 {
		switch {
		case u.hasSrc:
			if !prefix6(u.w[2], u.w[3], &x.Src, r.SrcLen) {
				return false, false
			}
		case r.Flags&rtnl.FIB_RULE_FIND_SADDR != 0:
			findSaddr = true
		default:
			return false, false
		}
	}
	// IPv6 TOS-mode rules compare the whole DSCP (inet_dsfield_to_dscp()
	// of the rule's tos against ip6_dscp() of the flow).
	if r.Tos != 0 && r.Tos>>2 != k.DSCP() {
		return false, false
	}
	if r.xi == 0 {
		return true, findSaddr
	}
	if x.DSCPFull && (x.DSCP^k.DSCP())&x.DSCPMask != 0 {
		return false, false
	}
	// fib6_rule_flowlabel_match()
	if (x.FlowLabel^k.FlowLabel)&x.FlowLabelMask != 0 {
		return false, false
	}
	return matchL4(x, k), findSaddr
}

// matchL4 is the ip_proto and port part both families share
// (fib_rule_port_match()).
func matchL4(x *Extra, k *flow.Key) bool {
	if x.IPProto != 0 && x.IPProto != k.Proto {
		return false
	}
	return portMatch(x.Sport, x.SportMask, k.Sport) && portMatch(x.Dport, x.DportMask, k.Dport)
}

// portMatch is fib_rule_port_match(): a single port carries the implicit
// mask 0xFFFF (or its FRA_*PORT_MASK), a range carries mask 0 and is an
// inclusive interval, an unset selector matches everything.
func portMatch(rng [2]uint16, mask, port uint16) bool {
	if (rng[0]^port)&mask != 0 {
		return false
	}
	if mask == 0 && portRangeSet(rng) && (port < rng[0] || port > rng[1]) {
		return false
	}
	return true
}
