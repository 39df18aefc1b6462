package fib

import (
	"unsafe"

	"github.com/nlemu/nlemu/flow"
	"github.com/nlemu/nlemu/rtnl"
)

// The no-custom-rules lookup's common case, written out: one table's read
// index answers with the longest prefix, and that prefix's entries answer
// without backtracking. Everything else (a reject or throw route, no
// answer, a slow index bucket, a local hit for IPv6, a table whose index
// is not full) returns ok false and the caller runs the general path
// (lookupNoRules4 / lookupNoRules6), which answers every case; what the
// fast path answers is what the general path answers for the same
// snapshot (TestFastPathMatchesGeneralPath, and the reference tests through
// Lookup).
//
// Why a second copy of the common case: the general path builds a Prefix,
// an Entries and a hit per table probe and passes them through four
// calls; the stores and reloads of those 64-byte values (the loads read
// two 8-byte stores as one 16-byte load and wait for them) cost more than
// the index probe itself (pprof of BenchmarkLookup4NoRules: 40 % of the
// lookup in View.lpm's Entries copy and the probe's Prefix). This path
// keeps the leaf and the prefix length in registers and writes the Result
// once.

// fast4 is lookupNoRules4 when main's index answers: fib_lookup()'s
// no-rules branch reads main (merged with local), and the default table
// only when main fails, which this path never answers.
func (f *FIB) fast4(k *flow.Key, res *Result) bool {
	lm := f.tables.lm.Load()
	s := lm.main
	if !lm.merged {
		// A reader that saw no custom rule yet but a snapshot taken after
		// the first rule's unmerge (Snapshot.MergedMain).
		s = lm.premerged
	}
	if s == nil || s.ix == nil || s.ix.mode != ixFull || !k.Dst.Is4() {
		return false
	}
	x := s.ix
	_, w := addrWords(k.Dst)
	a := uint32(w)
	var l leaf
	bits := -1
	if b := x.bkt4.get(a >> 16); b != nil {
		if b.cnt == 0 {
			return false // a slow bucket: bart answers
		}
		for _, e := range unsafe.Slice(b, b.cnt) {
			if a&(^uint32(0)<<(32-e.bits)) == e.net { // bits > 16
				l, bits = e.l, int(e.bits)
				break
			}
		}
	}
	if bits < 0 {
		c := x.root.get(a >> 16)
		if c == nil {
			return false
		}
		l, bits = c.l, c.bits
	}
	// choose4 over the prefix's entries.
	n := 1
	if l.tail != nil {
		n += len(*l.tail)
	}
	for i := 0; i < n; i++ {
		at := l.head
		if i > 0 {
			at = (*l.tail)[i-1]
		}
		e := &at.r
		if e.Tos != 0 && e.Tos != k.TOS&0x1C || e.Scope < k.Scope {
			continue
		}
		if TypeError(e.Type) != 0 {
			return false
		}
		nh := -1
		for j := range e.Nexthops {
			if nhUsable(&e.Nexthops[j], k.OIF) {
				nh = j
				break
			}
		}
		if nh < 0 && len(e.Nexthops) > 0 {
			continue
		}
		res.Route = *e
		res.Route.Dst = withWords(k.Dst, 0, w&^0xffffffff|uint64(a&mask32(bits)), bits)
		res.Table, res.NH, res.Rule, res.RuleSet = rtnl.RT_TABLE_MAIN, nh, 0, false
		return true
	}
	return false
}

// fast6 is lookupNoRules6 when local has no answer (no entries, or a
// tiny or full index without a prefix containing the destination) and
// main's full index answers: fib6_rule_lookup() without custom rules asks
// local, then main.
func (f *FIB) fast6(k *flow.Key, res *Result) bool {
	if !k.Dst.Is6() {
		return false
	}
	set := f.tables.set.Load()
	hi, lo := addrWords(k.Dst)
	if t := set.fixed[rtnl.RT_TABLE_LOCAL-253]; t != nil {
		if s := t.root.Load(); s != nil && s.big != nil {
			x := s.ix
			if x == nil {
				return false
			}
			switch x.mode {
			case ixTiny:
				for i := range x.tiny {
					e := &x.tiny[i]
					if hi&e.mhi == e.hi && lo&e.mlo == e.lo {
						return false
					}
				}
			default:
				if _, _, st := x.lookup6(k.Dst); st != ixNone {
					return false
				}
			}
		}
	}
	t := set.fixed[rtnl.RT_TABLE_MAIN-253]
	if t == nil {
		return false
	}
	s := t.root.Load()
	if s == nil || s.ix == nil || s.ix.mode != ixFull {
		return false
	}
	x := s.ix
	var l leaf
	var phi, plo uint64
	bits := -1
	v0 := uint32(hi >> 48)
	if nd := x.next6.get(v0); nd != nil {
		v1 := uint32(hi>>32) & 0xffff
		if b := nd.bkt.get(v1); b != nil {
			if b.cnt == 0 {
				return false
			}
			for _, e := range unsafe.Slice(b, b.cnt) {
				mh, ml := mask128(int(e.bits))
				if hi&mh == e.hi && lo&ml == e.lo {
					l, bits, phi, plo = e.l, int(e.bits), e.hi, e.lo
					break
				}
			}
		}
		if bits < 0 {
			if c := nd.cov.get(v1); c != nil {
				l, bits, phi = c.l, c.bits, hi&^(^uint64(0)>>c.bits)
			}
		}
	}
	if bits < 0 {
		c := x.root.get(v0)
		if c == nil {
			return false
		}
		l, bits, phi = c.l, c.bits, hi&^(^uint64(0)>>c.bits)
	}
	oif, strict := rt6Oif(k)
	// choose6's common case: the prefix's first entry answers with its
	// first live hop on no particular device, a single route, no source
	// prefix, no router preference to weigh against another entry.
	if l.tail != nil || oif != 0 {
		es := Entries{l: l, hi: l.len()}
		var h hit
		err, ok := choose6(&es, k, oif, strict, &h)
		if !ok || err != 0 {
			return false
		}
		res.Route = h.a.r
		res.NH = h.nh
	} else {
		e := &l.head.r
		if e.Src.Bits() > 0 || len(e.Nexthops) == 0 || TypeError(e.Type) != 0 {
			return false
		}
		nh := -1
		for j := range e.Nexthops {
			if e.Nexthops[j].Flags&rtnl.RTNH_F_DEAD == 0 {
				nh = j
				break
			}
		}
		if nh < 0 {
			return false
		}
		res.Route = *e
		res.NH = nh
	}
	res.Route.Dst = withWords(k.Dst, phi, plo, bits)
	res.Table, res.Rule, res.RuleSet = rtnl.RT_TABLE_MAIN, 0, false
	return true
}
