package rulesops

import (
	"hash/maphash"
)

// bigGroup is the size from which a priority's rules get a duplicate index.
// Below it, rule_exists()'s scan of the rules with the same priority is
// cheap; above it (e.g. thousands of automatic-priority rules that all
// ended up at priority 0) the index keeps NLM_F_EXCL checks O(1).
const bigGroup = 32

// dupIndex counts, for each large priority group, the rules per hash of the
// generic fields rule_exists() compares exactly. A zero count proves that
// no duplicate exists; otherwise the group is scanned. Writer-only state,
// guarded by the Ops mutex.
type dupIndex struct {
	seed   maphash.Seed
	groups map[uint32]map[uint64]int32 // pref -> generic-key hash -> count
}

func (d *dupIndex) key(r *Rule, x *Extra) uint64 {
	var h maphash.Hash
	h.SetSeed(d.seed)
	var b [64]byte
	put32 := func(o int, v uint32) { b[o], b[o+1], b[o+2], b[o+3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24) }
	put32(0, r.Pref)
	put32(4, r.Table)
	b[8], b[9], b[10], b[11] = r.Action, r.Protocol, x.L3MDev, x.IPProto
	put32(12, x.Mark)
	put32(16, x.MarkMask)
	put32(20, uint32(x.SuppressIfgroup))
	put32(24, uint32(x.SuppressPrefixlen))
	put32(28, x.UIDStart)
	put32(32, x.UIDEnd)
	put32(36, uint32(x.Sport[0])|uint32(x.Sport[1])<<16)
	put32(40, uint32(x.Dport[0])|uint32(x.Dport[1])<<16)
	put32(44, uint32(x.SportMask)|uint32(x.DportMask)<<16)
	put32(48, uint32(x.TunID))
	put32(52, uint32(x.TunID>>32))
	h.Write(b[:56])
	h.Write(x.IIFName[:])
	h.Write(x.OIFName[:])
	return h.Sum64()
}

// mayExist reports whether r (with selectors x) could have a duplicate:
// true for a small group, which must be scanned.
func (d *dupIndex) mayExist(r *Rule, x *Extra) bool {
	g := d.groups[r.Pref]
	if g == nil {
		return true
	}
	return g[d.key(r, x)] > 0
}

// added records r after it was inserted into l, building the group's index
// when the group has just become big.
func (d *dupIndex) added(l *list, r *Rule) {
	if g := d.groups[r.Pref]; g != nil {
		g[d.key(r, l.ext(r))]++
		return
	}
	// Only look at the group's size when the new rule has a neighbour of
	// the same priority: the common case (distinct priorities) stays O(log n).
	p := l.bound(r.Pref, false)
	n := 0
	for q := p; l.valid(q) && l.rule(q).Pref == r.Pref && n < bigGroup; q = l.next(q) {
		n++
	}
	if n < bigGroup {
		return
	}
	if d.groups == nil {
		d.groups = map[uint32]map[uint64]int32{}
		d.seed = maphash.MakeSeed()
	}
	g := map[uint64]int32{}
	for q := p; l.valid(q) && l.rule(q).Pref == r.Pref; q = l.next(q) {
		g[d.key(l.rule(q), l.ext(l.rule(q)))]++
	}
	d.groups[r.Pref] = g
}

// removed records that r (with selectors x) left its group.
func (d *dupIndex) removed(r *Rule, x *Extra) {
	g := d.groups[r.Pref]
	if g == nil {
		return
	}
	k := d.key(r, x)
	if g[k]--; g[k] <= 0 {
		delete(g, k)
	}
	if len(g) == 0 {
		delete(d.groups, r.Pref)
	}
}
