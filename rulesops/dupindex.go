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

// dupKey is every generic field rule_exists() compares exactly.
type dupKey struct {
	pref, table, mark, markMask, uidStart, uidEnd uint32
	suppressIfgroup, suppressPrefixlen            int32
	tunID                                         uint64
	sport, dport                                  [2]uint16
	sportMask, dportMask                          uint16
	action, protocol, l3mdev, ipProto             uint8
	iif, oif                                      [16]byte
}

func (d *dupIndex) key(r *Rule, x *Extra) uint64 {
	return maphash.Comparable(d.seed, dupKey{
		pref: r.Pref, table: r.Table, mark: x.Mark, markMask: x.MarkMask, uidStart: x.UIDStart, uidEnd: x.UIDEnd,
		suppressIfgroup: x.SuppressIfgroup, suppressPrefixlen: x.SuppressPrefixlen, tunID: x.TunID,
		sport: x.Sport, dport: x.Dport, sportMask: x.SportMask, dportMask: x.DportMask,
		action: r.Action, protocol: r.Protocol, l3mdev: x.L3MDev, ipProto: x.IPProto,
		iif: x.IIFName, oif: x.OIFName,
	})
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
	// Only count the group when the new rule has a neighbour of the same
	// priority: the common case (distinct priorities) costs one search.
	p := l.bound(r.Pref, false)
	if q := l.next(p); !l.valid(q) || l.rule(q).Pref != r.Pref {
		return
	}
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
