package fib

import (
	"syscall"

	"github.com/nlemu/nlemu/flow"
	"github.com/nlemu/nlemu/rtnl"
)

// The lookup's common case, written out: a table's full read index
// (index.go) answers with the longest prefix, and that prefix's entries
// answer without backtracking. probe4 and probe6 are one table's lookup
// (lookupView) for that case; fast4 and fast6 are the no-custom-rules
// lookups (lookupNoRules4 / lookupNoRules6) when their tables answer that
// way. Everything else (no full index, a slow bucket, no entry of the
// longest prefix usable, a reject or throw route where the general path
// goes on to another table, a local hit for IPv6) returns ok false and the
// caller runs the general path, which answers every case; the fast path
// answers what the general path answers for the same snapshot
// (TestFastPathMatchesGeneralPath; the reference tests run through both).
//
// Why a second copy of the common case: the general path builds a Prefix,
// an Entries and a View per table probe and passes them through four
// calls; their stores and reloads (a 16-byte load of two 8-byte stores
// waits for both) cost more than the index probe itself (pprof of
// BenchmarkLookup4NoRules before: 40 % of the lookup in View.lpm's Entries
// copy and the probe's Prefix). This path keeps the leaf and the prefix
// length in registers and writes the Result once.

// fast4 is lookupNoRules4 when main's index answers with an entry:
// fib_lookup()'s no-rules branch reads main (merged with local), and the
// default table only when main fails, which this path leaves to the
// general one.
func (f *FIB) fast4(k *flow.Key, res *Result) (syscall.Errno, bool) {
	lm := f.tables.lm.Load()
	s := lm.main
	if !lm.merged {
		// A reader that saw no custom rule yet but a snapshot taken after
		// the first rule's unmerge (Snapshot.MergedMain).
		s = lm.premerged
	}
	if s == nil {
		return 0, false
	}
	*res = noHit
	if err, ok := probe4(s, rtnl.RT_TABLE_MAIN, k, res); !ok || err != 0 {
		return 0, false
	}
	return 0, true
}

// probe4 is lookupView for an IPv4 table view holding all of s (not a
// merged main/local view's half) when s's full index and the longest
// prefix's entries answer: choose4 over the prefix's entries. h is written
// (its Table set to id) only when an entry answers.
func probe4(s *store, id uint32, k *flow.Key, h *hit) (syscall.Errno, bool) {
	x := s.fx
	if x == nil || x.v6 || !k.Dst.Is4() {
		return 0, false
	}
	_, w := addrWords(k.Dst)
	a := uint32(w)
	var l leaf
	var fa fastAns
	bits := -1
	if sl := x.bkt4.get(a >> 16); sl != nil && sl.b != nil {
		// The bucket's first (longest) entry is in the slot (slot4);
		// the bucket itself is read only when it holds more.
		e := &sl.first
		if e.cnt == 0 {
			return 0, false // a slow bucket: bart answers
		}
		if a&(^uint32(0)<<(32-e.bits)) != e.net { // bits > 16
			e = nil
			if sl.first.cnt > 1 {
				e, _ = sl.match(a)
			}
		}
		if e != nil {
			l, bits, fa = e.l, int(e.bits), e.fa
		}
	}
	if bits < 0 {
		c := x.root.get(a >> 16)
		if c == nil {
			return syscall.EAGAIN, true // no prefix contains it
		}
		l, bits, fa = c.l, c.bits, c.fa
	}
	if fa.nh >= 0 && k.OIF == 0 && k.Scope <= fa.aux {
		// The answer computed with the index entry (fastAns): the first
		// entry and its first live nexthop, without reading either.
		h.Entry, h.NH, h.Table = &l.head.r, int(fa.nh), id
		h.Dst = withWords(k.Dst, 0, w&^0xffffffff|uint64(a&mask32(bits)), bits)
		return 0, true
	}
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
		nh := -1
		err := TypeError(e.Type)
		if err == 0 && len(e.Nexthops) > 0 {
			for j := range e.Nexthops {
				if nhUsable(&e.Nexthops[j], k.OIF) {
					nh = j
					break
				}
			}
			if nh < 0 {
				continue
			}
		}
		h.Entry, h.NH, h.Table = e, nh, id
		h.Dst = withWords(k.Dst, 0, w&^0xffffffff|uint64(a&mask32(bits)), bits)
		return err, true
	}
	return 0, false // backtrack
}

// fast6 is lookupNoRules6 when local's index has no prefix containing
// the destination and main's answers: fib6_rule_lookup() without custom
// rules asks local, then main.
func (f *FIB) fast6(k *flow.Key, res *Result) (syscall.Errno, bool) {
	if !k.Dst.Is6() {
		return 0, false
	}
	lt, t := f.local6, f.main6
	if lt == nil || t == nil {
		set := f.tables.set.Load()
		lt, t = set.fixed[rtnl.RT_TABLE_LOCAL-253], set.fixed[rtnl.RT_TABLE_MAIN-253]
	}
	if lt != nil {
		if s := lt.root.Load(); s != nil && s.big != nil && !noPrefix6(s.ix, k) {
			return 0, false
		}
	}
	if t == nil {
		return 0, false
	}
	s := t.root.Load()
	if s == nil {
		return 0, false
	}
	*res = noHit
	oif, strict := rt6Oif(k)
	err, ok := probe6(s, rtnl.RT_TABLE_MAIN, k, oif, strict, res)
	if !ok || err == syscall.EAGAIN {
		return 0, false
	}
	return err, true
}

// noPrefix6 reports whether index x knows that no prefix contains the
// flow's destination (false: it holds one, or it cannot tell).
func noPrefix6(x *lpmIndex, k *flow.Key) bool {
	if x == nil || !x.v6 {
		return false
	}
	if x.mode == ixTiny {
		hi, lo := addrWords(k.Dst)
		if x.bloom&(1<<bloomBit(hi)) == 0 {
			// No prefix of /64 or longer holds the destination's /64:
			// only the short ones can contain it.
			for i := range x.short {
				e := &x.short[i]
				if hi&e.mhi == e.hi && lo&e.mlo == e.lo {
					return false
				}
			}
			return true
		}
		for i := range x.tiny {
			e := &x.tiny[i]
			if hi&e.mhi == e.hi && lo&e.mlo == e.lo {
				return false
			}
		}
		return true
	}
	_, _, st := x.full.lookup6(k.Dst)
	return st == ixNone
}

// probe6 is lookupView for an IPv6 table when s's full index and the
// longest prefix's entries answer (choose6, with its common case — one
// entry, no source prefix, any device — written out). h is written (its
// Table set to id) only when an entry answers.
func probe6(s *store, id uint32, k *flow.Key, oif int32, strict bool, h *hit) (syscall.Errno, bool) {
	x := s.fx
	if x == nil || !x.v6 || !k.Dst.Is6() {
		return 0, false
	}
	hi, lo := addrWords(k.Dst)
	var l leaf
	var fa fastAns
	var phi, plo uint64
	bits := -1
	v0 := uint32(hi >> 48)
	// node6Of written out (over the inlining budget): the /16's node from
	// the index's short list, else from next6.
	var nd *node6
	if c := int(x.nfew); c <= few6Max {
		for i := 0; i < c; i++ {
			if uint32(x.nkey[i]) == v0 {
				nd = x.nnode[i]
				break
			}
		}
	} else {
		nd = x.next6.get(v0)
	}
	if nd != nil {
		v1 := uint32(hi>>32) & 0xffff
		if sl := nd.bkt.get(v1); sl != nil && sl.b != nil {
			e := &sl.first // as in probe4
			if e.cnt == 0 {
				return 0, false
			}
			if mh, ml := mask128(int(e.bits)); hi&mh != e.hi || lo&ml != e.lo {
				e = nil
				if sl.first.cnt > 1 {
					e, _ = sl.match(hi, lo)
				}
			}
			if e != nil {
				l, bits, phi, plo, fa = e.l, int(e.bits), e.hi, e.lo, e.fa
			}
		}
		if bits < 0 {
			if c := nd.cov.get(v1); c != nil {
				l, bits, phi, fa = c.l, c.bits, hi&^(^uint64(0)>>c.bits), c.fa
			}
		}
	}
	if bits < 0 {
		c := x.root.get(v0)
		if c == nil {
			return syscall.EAGAIN, true
		}
		l, bits, phi, fa = c.l, c.bits, hi&^(^uint64(0)>>c.bits), c.fa
	}
	var err syscall.Errno
	if fa.nh >= 0 && oif == 0 {
		// One entry, scored on no device, answered when the index entry
		// was built (fastAns): its first live hop and its type's error.
		h.Entry, h.NH, err = &l.head.r, int(fa.nh), syscall.Errno(fa.aux)
	} else if e := &l.head.r; l.tail == nil && oif == 0 && e.Src.Bits() <= 0 && len(e.Nexthops) > 0 {
		// One entry, scored on no device: its first live hop, or no
		// answer at this prefix when every hop is dead.
		nh := -1
		for j := range e.Nexthops {
			if e.Nexthops[j].Flags&rtnl.RTNH_F_DEAD == 0 {
				nh = j
				break
			}
		}
		if nh < 0 {
			return 0, false
		}
		h.Entry, h.NH, err = e, nh, TypeError(e.Type)
	} else {
		es := Entries{l: l, hi: l.len()}
		var ok bool
		if err, ok = choose6(&es, k, oif, strict, h); !ok {
			return 0, false
		}
	}
	h.Dst, h.Table = withWords(k.Dst, phi, plo, bits), id
	return err, true
}
