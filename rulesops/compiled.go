package rulesops

import (
	"encoding/binary"
	"sort"

	"github.com/nlemu/nlemu/rtnl"
)

// compileMax is the most rules a list is compiled for. Compiling costs
// O(n) per rule change (about 150 ns a rule, mostly its allocation:
// BenchmarkCompileList, BenchmarkRuleChange), where the chunked list costs
// O(chunkMax + n/chunkMax); up to half a chunk the program adds a few
// microseconds to a change, and a namespace with more rules walks them
// with the general matcher (Matcher.nextGeneral), as before.
const compileMax = chunkMax / 2

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
	hits  []chit  // parallel to recs; read when a record passes
	addrs []maddr // parallel to recs; nil when no rule has an address
	// skip0[i] is the first record j at or after i whose fwmark and TOS
	// test a flow with kv 0 passes (no fwmark, TOS 0 once masked: nearly
	// every flow a lookup sees): j itself when the record has nothing
	// else to check (sel 0: j is the hit), -(j+1) when it has (sel not
	// 0), len(recs) when there is none; len(recs)+1 entries, the last
	// len(recs). A walk of such a flow goes from candidate to candidate in
	// one load each instead of testing every record (`ip rule add fwmark
	// 1 table 1` rules, the benchmark's ten: none is a candidate), and
	// Step answers a hit of sel 0 inline (Matcher.Step).
	// TestSkip0MatchesScan checks it against the records.
	skip0 []int32
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
// target included) and, for the slow path, where the stored rule is in the
// list's chunks. It holds no pointer, so that building a program costs no
// write barrier and the collector never scans one.
type chit struct {
	sel  uint8 // sel* bits: what else to check
	c, o int32
	hit  Hit
}

// rule returns the stored rule of ch in l and its Extra.
func (ch *chit) rule(l *list) (*Rule, *Extra) {
	r := &l.chunks[ch.c].rules[ch.o]
	return r, l.ext(r)
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
	if c := defaultProgram(f, l); c != nil {
		l.comp = c
		return l
	}
	l.comp = compile(f, l)
	return l
}

// defaultPrograms are the programs of the families' default lists, built
// once: every namespace starts with them, and a program depends on its
// rules' values only, so one serves them all (a namespace's rules cost no
// memory until it changes them).
var defaultPrograms = map[*family]*compiled{
	famInet:  compile(famInet, newList(famInet.defaults)),
	famInet6: compile(famInet6, newList(famInet6.defaults)),
}

// defaultProgram returns the shared program when l holds exactly f's
// default rules, else nil.
func defaultProgram(f *family, l *list) *compiled {
	if l.n != len(f.defaults) || len(l.extras) != 0 || len(l.chunks) != 1 {
		return nil
	}
	for i, r := range l.chunks[0].rules {
		if r != f.defaults[i] {
			return nil
		}
	}
	return defaultPrograms[f]
}

// compile builds l's program.
func compile(f *family, l *list) *compiled {
	c := &compiled{recs: make([]mrec, l.n), hits: make([]chit, l.n)}
	var gotos bool
	i := 0
	for ci, ch := range l.chunks {
		for o := range ch.rules {
			r := &ch.rules[o]
			x := l.ext(r)
			h := &c.hits[i]
			var a maddr
			c.recs[i], h.sel, a = compileRule(f, r, x)
			if h.sel&selAddr != 0 && c.addrs == nil {
				c.addrs = make([]maddr, l.n)
			}
			if c.addrs != nil {
				c.addrs[i] = a
			}
			h.c, h.o = int32(ci), int32(o)
			h.hit = Hit{Pos: Pos{0, int32(i)}, Pref: r.Pref, Table: r.Table, Action: r.Action,
				SuppressPrefixlen: x.SuppressPrefixlen, SuppressIfgroup: x.SuppressIfgroup}
			gotos = gotos || r.Action == rtnl.FR_ACT_GOTO
			i++
		}
	}
	c.skip0 = skipTable(c.recs, c.hits)
	if !gotos {
		return c
	}
	// The goto targets (rule->ctarget): the first rule of the target
	// priority, the same one Matcher.Next's l.bound finds.
	for i := range c.hits {
		h := &c.hits[i].hit
		if h.Action != rtnl.FR_ACT_GOTO {
			continue
		}
		r, _ := c.hits[i].rule(l)
		t := r.Target
		q := sort.Search(len(c.hits), func(j int) bool { return c.hits[j].hit.Pref >= t })
		if q < len(c.hits) && c.hits[q].hit.Pref == t {
			h.Resolved, h.Goto = true, Pos{0, int32(q)}
		}
	}
	return c
}

// skipTable returns the skip0 of recs and hits (see compiled): built
// backwards, each entry the record itself when a kv-0 flow passes its
// test, else the next entry's.
func skipTable(recs []mrec, hits []chit) []int32 {
	t := make([]int32, len(recs)+1)
	t[len(recs)] = int32(len(recs))
	for i := len(recs) - 1; i >= 0; i-- {
		switch r := &recs[i]; {
		case (0^r.val)&r.mask != 0:
			t[i] = t[i+1]
		case hits[i].sel == 0:
			t[i] = int32(i)
		default:
			t[i] = -int32(i) - 1
		}
	}
	return t
}

// skipAt decodes skip0 entry e: the record and whether it needs its
// further selectors checked.
func skipAt(e int32) (j int, check bool) {
	if e < 0 {
		return int(-e - 1), true
	}
	return int(e), false
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
// rule's index in the list (Pos.c is 0). A flow with kv 0 follows skip0
// from candidate to candidate; any other tests every record's fwmark and
// TOS in a loop over the 16-byte records. Both reach the same records in
// the same order (TestCompiledUnmarkedFlows).
func (m *Matcher) stepCompiled(c *compiled, p Pos) *Hit {
	start := int(p.o)
	if start >= len(c.recs) {
		return nil
	}
	kv := m.kv
	if kv == 0 {
		skip := c.skip0
		for i, check := skipAt(skip[start]); i < len(c.recs); i, check = skipAt(skip[i+1]) {
			ch := &c.hits[i]
			if !check {
				return &ch.hit
			}
			if h := m.candidate(c, i, ch); h != nil {
				return h
			}
		}
		return nil
	}
	for j, r := range c.recs[start:] {
		if (kv^r.val)&r.mask != 0 {
			continue
		}
		i := start + j
		if ch := &c.hits[i]; ch.sel == 0 {
			return &ch.hit
		} else if h := m.candidate(c, i, ch); h != nil {
			return h
		}
	}
	return nil
}

// candidate is the rest of record i (ch, whose sel is not 0) once its
// fwmark and TOS test passed: the hit, or nil when a further selector
// fails.
func (m *Matcher) candidate(c *compiled, i int, ch *chit) *Hit {
	ok, findSaddr := m.selCheck(c, i, ch)
	if !ok {
		return nil
	}
	if !findSaddr {
		return &ch.hit
	}
	r, x := ch.rule(m.s.l)
	m.h = ch.hit
	m.h.FindSaddr, m.h.SrcLen, m.h.Src = true, r.SrcLen, x.Src
	return &m.h
}

// selCheck is the part of record i (ch) beyond fwmark and TOS.
func (m *Matcher) selCheck(c *compiled, i int, ch *chit) (ok, findSaddr bool) {
	u := m.addrs()
	sel := ch.sel
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
		r, x := ch.rule(m.s.l)
		return m.s.match(r, x, m.k, u)
	}
	return true, false
}
