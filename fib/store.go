package fib

import (
	"iter"
	"net/netip"

	"github.com/gaissmai/bart"
)

// store is one routing table's immutable storage: a large bart table and
// a small one holding the prefixes added since the last merge. Every prefix
// lives in exactly one of them.
//
// Why two: a persistent bart insert clones each node on the path together
// with its path-compressed children, up to 256 per node, so adding /24s
// under a full /16 allocates ~256 nodes per route. New prefixes go to the
// small table (cheap: its nodes are small) and, every smallMax of them, are
// folded into the large one with one UnionPersist, which clones each
// touched node once for the whole batch (BenchmarkLoad40k). Readers
// consult both; the small one holds at most smallMax prefixes.
type store struct {
	big, small *bart.Table[leaf]
	// srcRoutes counts the entries with a source prefix (IPv6 RTA_SRC,
	// the kernel's fib6_src). LookupBatch reuses a result only while it
	// is 0 in the tables the lookup reads: a source-specific route makes
	// the answer depend on the flow's source, not on its destination alone
	// (seed 003's review: hints stay valid with subtrees when no route has
	// a source prefix).
	srcRoutes int
}

// srcCount returns the number of l's entries with a source prefix.
func srcCount(l leaf) int {
	n := 0
	for i := range l.len() {
		if l.at(i).r.Src.Bits() > 0 {
			n++
		}
	}
	return n
}

// smallMax is the number of prefixes the small table collects before it is
// merged into the large one (a variable so that tests can stress merging).
var smallMax = 24

func (s *store) tables() [2]*bart.Table[leaf] {
	if s == nil {
		return [2]*bart.Table[leaf]{}
	}
	return [2]*bart.Table[leaf]{s.big, s.small}
}

// Size returns the number of prefixes.
func (s *store) Size() int {
	n := 0
	for _, t := range s.tables() {
		if t != nil {
			n += t.Size()
		}
	}
	return n
}

// Get returns the entries of exactly p.
func (s *store) Get(p netip.Prefix) (leaf, bool) {
	for _, t := range s.tables() {
		if t != nil {
			if l, ok := t.Get(p); ok {
				return l, true
			}
		}
	}
	return leaf{}, false
}

// LookupPrefixLPM returns the longest stored prefix containing p.
func (s *store) LookupPrefixLPM(p netip.Prefix) (netip.Prefix, leaf, bool) {
	var bp netip.Prefix
	var bl leaf
	found := false
	for _, t := range s.tables() {
		if t == nil {
			continue
		}
		if q, l, ok := t.LookupPrefixLPM(p); ok && (!found || q.Bits() > bp.Bits()) {
			bp, bl, found = q, l, true
		}
	}
	return bp, bl, found
}

type pfxLeaf struct {
	p netip.Prefix
	l leaf
}

// Supernets iterates the stored prefixes containing p, longest first.
func (s *store) Supernets(p netip.Prefix) iter.Seq2[netip.Prefix, leaf] {
	return func(yield func(netip.Prefix, leaf) bool) {
		if s == nil {
			return
		}
		var few []pfxLeaf
		if s.small != nil {
			for q, l := range s.small.Supernets(p) {
				few = append(few, pfxLeaf{q, l})
			}
		}
		if s.big != nil {
			for q, l := range s.big.Supernets(p) {
				for len(few) > 0 && few[0].p.Bits() > q.Bits() {
					if !yield(few[0].p, few[0].l) {
						return
					}
					few = few[1:]
				}
				if !yield(q, l) {
					return
				}
			}
		}
		for _, x := range few {
			if !yield(x.p, x.l) {
				return
			}
		}
	}
}

// cidrLess is bart's sort order: address ascending, then length ascending.
func cidrLess(a, b netip.Prefix) bool {
	if c := a.Addr().Compare(b.Addr()); c != 0 {
		return c < 0
	}
	return a.Bits() < b.Bits()
}

// merged interleaves two CIDR-sorted streams, the second one small.
func merged(big, small iter.Seq2[netip.Prefix, leaf]) iter.Seq2[netip.Prefix, leaf] {
	return func(yield func(netip.Prefix, leaf) bool) {
		var few []pfxLeaf
		if small != nil {
			for q, l := range small {
				few = append(few, pfxLeaf{q, l})
			}
		}
		if big != nil {
			for q, l := range big {
				for len(few) > 0 && cidrLess(few[0].p, q) {
					if !yield(few[0].p, few[0].l) {
						return
					}
					few = few[1:]
				}
				if !yield(q, l) {
					return
				}
			}
		}
		for _, x := range few {
			if !yield(x.p, x.l) {
				return
			}
		}
	}
}

func (s *store) sorted(f func(*bart.Table[leaf]) iter.Seq2[netip.Prefix, leaf]) iter.Seq2[netip.Prefix, leaf] {
	if s == nil {
		return func(func(netip.Prefix, leaf) bool) {}
	}
	var big, small iter.Seq2[netip.Prefix, leaf]
	if s.big != nil {
		big = f(s.big)
	}
	if s.small != nil && s.small.Size() > 0 {
		small = f(s.small)
	}
	return merged(big, small)
}

// Subnets iterates the stored prefixes inside p in CIDR order.
func (s *store) Subnets(p netip.Prefix) iter.Seq2[netip.Prefix, leaf] {
	return s.sorted(func(t *bart.Table[leaf]) iter.Seq2[netip.Prefix, leaf] { return t.Subnets(p) })
}

// AllSorted4 iterates the IPv4 prefixes in CIDR order.
func (s *store) AllSorted4() iter.Seq2[netip.Prefix, leaf] {
	return s.sorted((*bart.Table[leaf]).AllSorted4)
}

// AllSorted6 iterates the IPv6 prefixes in CIDR order.
func (s *store) AllSorted6() iter.Seq2[netip.Prefix, leaf] {
	return s.sorted((*bart.Table[leaf]).AllSorted6)
}

// All iterates every prefix in no particular order.
func (s *store) All() iter.Seq2[netip.Prefix, leaf] {
	return func(yield func(netip.Prefix, leaf) bool) {
		for _, t := range s.tables() {
			if t == nil {
				continue
			}
			for p, l := range t.All() {
				if !yield(p, l) {
					return
				}
			}
		}
	}
}

// with returns s with p's entries set to l (l empty: p removed), copying
// only the paths to p; s is unchanged.
func (s *store) with(p netip.Prefix, l leaf) *store {
	n := store{}
	if s != nil {
		n = *s
	}
	if n.big == nil {
		n.big = new(bart.Table[leaf])
	}
	if n.small == nil {
		n.small = new(bart.Table[leaf])
	}
	old, inBig := n.big.Get(p)
	if !inBig {
		old, _ = n.small.Get(p)
	}
	n.srcRoutes += srcCount(l) - srcCount(old)
	switch {
	case l.len() == 0 && inBig:
		n.big = n.big.DeletePersist(p)
	case l.len() == 0:
		n.small = n.small.DeletePersist(p)
	case inBig:
		n.big = n.big.InsertPersist(p, l)
	default:
		n.small = n.small.InsertPersist(p, l)
		if n.small.Size() >= smallMax {
			n.big = n.big.UnionPersist(n.small)
			n.small = new(bart.Table[leaf])
		}
	}
	return &n
}

// storeOf returns a store holding the prefixes of bt (built privately).
func storeOf(bt *bart.Table[leaf]) *store {
	n := 0
	for _, l := range bt.All() {
		n += srcCount(l)
	}
	return &store{big: bt, small: new(bart.Table[leaf]), srcRoutes: n}
}
