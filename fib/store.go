package fib

import (
	"iter"
	"net/netip"

	"github.com/gaissmai/bart"
)

// store is one routing table's immutable storage: a large bart table and,
// while there are any, a small one holding the prefixes added since the
// last fold. Every prefix lives in exactly one of them.
//
// Both are updated with InsertPersist/DeletePersist, which copy only the
// nodes on the path to the prefix (third_party/bart's ClonePath shares
// every other child with the previous version, path-compressed leaves
// included; upstream copied each of those, up to 256 allocations per node,
// and BenchmarkInsert was 172 allocations per insert+delete). What is left
// is the copy of each node on the path: a node holding 256 children is a
// 4 KB array, and at 40,000 /24s the path of a new one has two such nodes.
// A new prefix therefore goes into the small table, whose nodes are small,
// and every smallMax of them are folded into the large one with one
// UnionPersist, which copies each large node it touches once for the whole
// batch (BenchmarkRouteAdd40k, BenchmarkLoad40k). A change of a prefix
// that is already in the large table is made there. Readers consult the
// small table only when it exists (nil after each fold, and for tables
// built at once).
type store struct {
	big *bart.Table[leaf]
	// small holds at most smallMax prefixes; nil when none.
	small *bart.Table[leaf]
	// ix is the read index (index.go, h-lk): the one structure a lookup
	// probes; nil: the lookup asks big.
	ix *lpmIndex
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
// folded into the large one: the cadence BenchmarkRouteAdd40k and
// BenchmarkLoad40k chose (a variable so that tests can stress folding).
var smallMax = 32

// Size returns the number of prefixes.
func (s *store) Size() int {
	if s == nil || s.big == nil {
		return 0
	}
	n := s.big.Size()
	if s.small != nil {
		n += s.small.Size()
	}
	return n
}

// Get returns the entries of exactly p.
func (s *store) Get(p netip.Prefix) (leaf, bool) {
	if s == nil || s.big == nil {
		return leaf{}, false
	}
	if s.small != nil {
		if l, ok := s.small.Get(p); ok {
			return l, true
		}
	}
	return s.big.Get(p)
}

// LookupPrefixLPM returns the longest stored prefix containing p.
func (s *store) LookupPrefixLPM(p netip.Prefix) (netip.Prefix, leaf, bool) {
	if s == nil || s.big == nil {
		return netip.Prefix{}, leaf{}, false
	}
	q, l, ok := s.big.LookupPrefixLPM(p)
	if s.small != nil {
		if q2, l2, ok2 := s.small.LookupPrefixLPM(p); ok2 && (!ok || q2.Bits() > q.Bits()) {
			return q2, l2, true
		}
	}
	return q, l, ok
}

// none is the empty iteration.
func none(func(netip.Prefix, leaf) bool) {}

type pfxLeaf struct {
	p netip.Prefix
	l leaf
}

// Supernets iterates the stored prefixes containing p, longest first.
func (s *store) Supernets(p netip.Prefix) iter.Seq2[netip.Prefix, leaf] {
	if s == nil || s.big == nil {
		return none
	}
	if s.small == nil {
		return s.big.Supernets(p)
	}
	return func(yield func(netip.Prefix, leaf) bool) {
		var few []pfxLeaf
		for q, l := range s.small.Supernets(p) {
			few = append(few, pfxLeaf{q, l})
		}
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
		for q, l := range small {
			few = append(few, pfxLeaf{q, l})
		}
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
		for _, x := range few {
			if !yield(x.p, x.l) {
				return
			}
		}
	}
}

// sorted applies the CIDR-ordered iteration f to both tables, merged.
func (s *store) sorted(f func(*bart.Table[leaf]) iter.Seq2[netip.Prefix, leaf]) iter.Seq2[netip.Prefix, leaf] {
	if s == nil || s.big == nil {
		return none
	}
	if s.small == nil {
		return f(s.big)
	}
	return merged(f(s.big), f(s.small))
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
	if s == nil || s.big == nil {
		return none
	}
	if s.small == nil {
		return s.big.All()
	}
	return func(yield func(netip.Prefix, leaf) bool) {
		for p, l := range s.big.All() {
			if !yield(p, l) {
				return
			}
		}
		for p, l := range s.small.All() {
			if !yield(p, l) {
				return
			}
		}
	}
}

// with returns s with p's entries set to l (l empty: p removed), copying
// only the paths to p; s is unchanged. old is p's entries in s, which
// every caller has just read (it keeps srcRoutes without a second walk).
func (s *store) with(p netip.Prefix, old, l leaf) *store {
	n := store{}
	if s != nil {
		n = *s
	}
	if n.big == nil {
		n.big = new(bart.Table[leaf])
	}
	if old.head != nil || l.head != nil {
		n.srcRoutes += srcCount(l) - srcCount(old)
	}
	inSmall := false
	if old.head != nil && n.small != nil {
		_, inSmall = n.small.Get(p)
	}
	inBig := old.head != nil && !inSmall
	switch {
	case l.head == nil && inBig:
		n.big = n.big.DeletePersist(p)
	case l.head == nil && inSmall:
		if n.small = n.small.DeletePersist(p); n.small.Size() == 0 {
			n.small = nil
		}
	case l.head == nil:
		// nothing stored at p, nothing to remove
	case inBig:
		n.big = n.big.InsertPersist(p, l)
	case n.small == nil:
		t := new(bart.Table[leaf]) // private until published: filled in place
		t.Insert(p, l)
		n.small = t
	default:
		n.small = n.small.InsertPersist(p, l)
		if n.small.Size() >= smallMax {
			n.big = n.big.UnionPersist(n.small)
			n.small = nil
		}
	}
	n.ix = indexed(n.ix, p, l, old.head != nil, &n)
	return &n
}

// storeOf returns a store holding the prefixes of bt (built privately).
func storeOf(bt *bart.Table[leaf]) *store {
	n := 0
	for _, l := range bt.All() {
		n += srcCount(l)
	}
	s := &store{big: bt, srcRoutes: n}
	s.ix = indexOf(s, bt.Size6() > 0)
	return s
}
