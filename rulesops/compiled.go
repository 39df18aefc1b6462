package rulesops

import (
	"encoding/binary"
	"sort"

	"github.com/nlemu/nlemu/rtnl"
)

// compileMax is the most rules a list is compiled for. Compiling costs
// O(n) per rule change, where the chunked list costs O(chunkMax +
// n/chunkMax); up to one chunk's worth of rules the two are of the same
// order, and a namespace with more rules walks them with the general
// matcher (Matcher.Next's chunk loop), as before.
const compileMax = chunkMax

// compiled is a rule list's read-only match program, built when the list
// is published (compileList) and published with it: one compact record per
// rule, in list order, holding the selectors most rules use as values and
// masks, so that the per-rule check of a walk is a few loads, XORs and ANDs
// on one cache line shared by four rules, with no pointer followed and no
// call. Anything rarer (devices, uid ranges, ports, DSCP masks, flow
// labels, tunnel ids, l3mdev, FIB_RULE_INVERT, IPv6 FIB_RULE_FIND_SADDR)
// sets selSlow: a record that passes its fast checks then runs the general
// fib_rule_match() of match.go on the stored rule, so every semantic stays
// the one match.go implements.
//
// Readers never write it (seed 001); the device events that rebind a
// rule's iif/oif (devices.go) need no rebuild, because a rule with an
// iif/oif is always on the slow path, which loads the index atomically.
type compiled struct {
	recs  []mrec  // scanned per rule
	sel   []uint8 // parallel to recs: sel* bits, what else to check
	addrs []maddr // parallel to recs; nil when no rule has an address
	hits  []chit  // parallel to recs; read once per match
}

// mrec is the part of a rule every walk reads, 16 bytes: two tests as one
// (key.kv ^ val) & mask, where the low 32 bits are fib_rule_match()'s
// fwmark test ((mark ^ flow) & mask, mask 0 for a rule without one) and
// bits 32–39 the family's TOS test against key.tos (see unpack): IPv4
// compares the rule's tos with the flow's & 0x1C (fib4_rule_match()),
// IPv6 the DSCPs (fib6_rule_match()).
type mrec struct {
	val, mask uint64
}

// kvOf packs a fwmark and a TOS value as key.kv and mrec hold them.
func kvOf(mark uint32, tos uint8) uint64 { return uint64(mark) | uint64(tos)<<32 }

// sel bits of an mrec.
const (
	// selAddr: compare the key's address words with addrs[i].
	selAddr uint8 = 1 << iota
	// selNeedSrc: an IPv6 source prefix, which a flow without a source
	// address never matches (RT6_LOOKUP_F_HAS_SADDR in fib6_rule_match()).
	selNeedSrc
	// selSlow: run the general match on the stored rule.
	selSlow
)

// maddr is a rule's destination and source prefixes as big-endian 64-bit
// words, values pre-masked: dst hi, dst lo, src hi, src lo (an IPv4
// address is the high half of its hi word). A prefix of length 0 has mask
// 0 and matches everything, as the kernel's `r->dst_len &&` tests.
type maddr struct {
	v, m [4]uint64
}

// chit is what a match returns, resolved at build time: the Hit (goto
// target included) and, for the slow path, the stored rule.
type chit struct {
	hit Hit
	r   *Rule
	x   *Extra
}

// compileList sets l's match program for family f and returns l; it runs
// before l is published (Ops.cur.Store), so that readers see the list and
// its program together. Lists of the mroute families and lists longer than
// compileMax get none.
func compileList(f *family, l *list) *list {
	l.comp = nil
	if l.n == 0 || l.n > compileMax || (f.id != rtnl.AF_INET && f.id != rtnl.AF_INET6) {
		return l
	}
	c := &compiled{recs: make([]mrec, 0, l.n), sel: make([]uint8, 0, l.n), hits: make([]chit, 0, l.n)}
	prefs := make([]uint32, 0, l.n)
	l.from(pos{}, 0, func(i int, r *Rule) bool {
		x := l.ext(r)
		rec, sel, a := compileRule(f, r, x)
		if sel&selAddr != 0 && c.addrs == nil {
			c.addrs = make([]maddr, l.n)
		}
		if c.addrs != nil {
			c.addrs[i] = a
		}
		c.recs = append(c.recs, rec)
		c.sel = append(c.sel, sel)
		h := Hit{Pos: Pos{0, int32(i)}, Pref: r.Pref, Table: r.Table, Action: r.Action,
			SuppressPrefixlen: x.SuppressPrefixlen, SuppressIfgroup: x.SuppressIfgroup}
		c.hits = append(c.hits, chit{hit: h, r: r, x: x})
		prefs = append(prefs, r.Pref)
		return true
	})
	// The goto targets (rule->ctarget): the first rule of the target
	// priority, the same one Matcher.Next's l.bound finds.
	for i := range c.hits {
		h := &c.hits[i].hit
		if h.Action != rtnl.FR_ACT_GOTO {
			continue
		}
		t := c.hits[i].r.Target
		q := sort.Search(len(prefs), func(j int) bool { return prefs[j] >= t })
		if q < len(prefs) && prefs[q] == t {
			h.Resolved, h.Goto = true, Pos{0, int32(q)}
		}
	}
	l.comp = c
	return l
}

// mask64 returns the masks of the two words of a prefix of plen bits that
// starts at bit 0 of hi.
func mask64(plen uint8) (hi, lo uint64) {
	switch {
	case plen == 0:
		return 0, 0
	case plen < 64:
		return ^uint64(0) << (64 - plen), 0
	case plen == 64:
		return ^uint64(0), 0
	case plen < 128:
		return ^uint64(0), ^uint64(0) << (128 - plen)
	}
	return ^uint64(0), ^uint64(0)
}

// words returns an address of the family as the key's two words.
func words(f *family, a *[16]byte) (hi, lo uint64) {
	if f.id == rtnl.AF_INET {
		return uint64(binary.BigEndian.Uint32(a[:4])) << 32, 0
	}
	return binary.BigEndian.Uint64(a[:8]), binary.BigEndian.Uint64(a[8:])
}

// compileRule builds r's record. Every test it encodes is exactly one of
// fib_rule_match() / fib4_rule_match() / fib6_rule_match() (match.go); a
// test it cannot encode sets selSlow, and an inverted rule encodes nothing
// (its negation is over the whole match, so only the general path can
// evaluate it).
func compileRule(f *family, r *Rule, x *Extra) (rec mrec, sel uint8, a maddr) {
	if r.Flags&rtnl.FIB_RULE_INVERT != 0 {
		return rec, selSlow, a
	}
	var mark, markMask uint32
	var tos, tosMask uint8
	v6 := f.id == rtnl.AF_INET6
	if r.xi != 0 {
		mark, markMask = x.Mark&x.MarkMask, x.MarkMask
		if x.iifIndex != 0 || x.oifIndex != 0 || x.IIFName[0] != 0 || x.OIFName[0] != 0 ||
			x.TunID != 0 || x.L3MDev != 0 || x.UIDStart != 0 || x.UIDEnd != uidInvalid ||
			x.DSCPFull || x.IPProto != 0 ||
			x.Sport != [2]uint16{} || x.Dport != [2]uint16{} || x.SportMask != 0 || x.DportMask != 0 ||
			(v6 && x.FlowLabelMask != 0) {
			sel |= selSlow
		}
	}
	if r.Tos != 0 {
		tos, tosMask = r.Tos, 0xFF
		if v6 {
			tos = r.Tos >> 2
		}
	}
	if r.DstLen != 0 {
		mh, ml := mask64(r.DstLen)
		vh, vl := words(f, &x.Dst)
		a.v[0], a.v[1], a.m[0], a.m[1] = vh&mh, vl&ml, mh, ml
		sel |= selAddr
	}
	if r.SrcLen != 0 {
		if v6 && r.Flags&rtnl.FIB_RULE_FIND_SADDR != 0 {
			// A flow without a source matches with a deferred
			// source check (Hit.FindSaddr): the general path.
			sel |= selSlow
		} else {
			mh, ml := mask64(r.SrcLen)
			vh, vl := words(f, &x.Src)
			a.v[2], a.v[3], a.m[2], a.m[3] = vh&mh, vl&ml, mh, ml
			sel |= selAddr
			if v6 {
				sel |= selNeedSrc
			}
		}
	}
	rec.val, rec.mask = kvOf(mark, tos), kvOf(markMask, tosMask)
	return rec, sel, a
}

// stepCompiled is Matcher.Step over the list's match program: Pos.o is the
// rule's index in the list (Pos.c is 0).
func (m *Matcher) stepCompiled(c *compiled, p Pos) *Hit {
	start := int(p.o)
	if start >= len(c.recs) {
		return nil
	}
	kv := m.kv
	for j, r := range c.recs[start:] {
		if (kv^r.val)&r.mask != 0 {
			continue
		}
		i := start + j
		sel := c.sel[i]
		if sel == 0 {
			return &c.hits[i].hit
		}
		ok, findSaddr := m.selCheck(c, i, sel)
		if !ok {
			continue
		}
		if !findSaddr {
			return &c.hits[i].hit
		}
		ch := &c.hits[i]
		m.h = ch.hit
		m.h.FindSaddr, m.h.SrcLen, m.h.Src = true, ch.r.SrcLen, ch.x.Src
		return &m.h
	}
	return nil
}

// selCheck is the part of record i beyond fwmark and TOS.
func (m *Matcher) selCheck(c *compiled, i int, sel uint8) (ok, findSaddr bool) {
	u := m.addrs()
	if sel&selAddr != 0 {
		a := &c.addrs[i]
		if (u.w[0]^a.v[0])&a.m[0]|(u.w[1]^a.v[1])&a.m[1]|(u.w[2]^a.v[2])&a.m[2]|(u.w[3]^a.v[3])&a.m[3] != 0 {
			return false, false
		}
	}
	if sel&selNeedSrc != 0 && !u.hasSrc {
		return false, false
	}
	if sel&selSlow != 0 {
		h := &c.hits[i]
		return m.s.match(h.r, h.x, m.k, u)
	}
	return true, false
}
