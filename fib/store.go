package fib

import (
	"iter"
	"net/netip"

	"github.com/gaissmai/bart"
)

// store is one routing table's immutable storage: a large bart table and,
// while there are changes not folded into it yet, a small one.
//
// Both are updated persistently: third_party/bart's InsertPersist and
// DeletePersist copy only the nodes on the path to the prefix (ClonePath
// shares every other child with the previous version, path-compressed
// leaves included; upstream copied each of those, up to 256 allocations
// per node, and BenchmarkInsert was 172 allocations per insert+delete).
// What is left is the copy of each node on the path: a node holding 256
// children is a 4 KB array, and at 40,000 /24s the path to one has two of
// them. So every change goes to the small table, whose nodes are small: a
// new prefix, a new entry list for a prefix of the large table (an
// override), or the removal of one (a tombstone: an empty leaf). Every
// smallMax changes they are folded into the large table with one
// BatchPersist, which copies each large node the batch touches once
// (BenchmarkFoldCadence, BenchmarkRouteAdd40k). In the small table a
// prefix's value wins over the large table's. Readers consult the small
// table only while it exists (nil after each fold, and for tables built at
// once); while it holds no tombstone an LPM is one match per table.
type store struct {
	big *bart.Table[leaf]
	// small holds at most smallMax changes; nil when none.
	small *bart.Table[leaf]
	// fresh counts small's prefixes that big lacks; tombs, its tombstones
	// (all of prefixes big has).
	fresh, tombs int
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

// smallMax is the number of changes the small table collects before it is
// folded into the large one: the cadence BenchmarkFoldCadence chose (a
// variable so that tests can stress folding).
var smallMax = 32

// Size returns the number of prefixes.
func (s *store) Size() int {
	if s == nil || s.big == nil {
		return 0
	}
	return s.big.Size() + s.fresh - s.tombs
}

// Get returns the entries of exactly p.
func (s *store) Get(p netip.Prefix) (leaf, bool) {
	if s == nil || s.big == nil {
		return leaf{}, false
	}
	if s.small != nil {
		if l, ok := s.small.Get(p); ok {
			return l, l.head != nil
		}
	}
	return s.big.Get(p)
}

// LookupPrefixLPM returns the longest stored prefix containing p.
func (s *store) LookupPrefixLPM(p netip.Prefix) (netip.Prefix, leaf, bool) {
	if s == nil || s.big == nil {
		return netip.Prefix{}, leaf{}, false
	}
	if s.tombs > 0 {
		// A tombstone hides a prefix of big that big's own match may
		// return: the longest supernet that survives both.
		for q, l := range s.Supernets(p) {
			return q, l, true
		}
		return netip.Prefix{}, leaf{}, false
	}
	q, l, ok := s.big.LookupPrefixLPM(p)
	if s.small != nil {
		// Equal lengths: the same prefix, whose override in small wins.
		if q2, l2, ok2 := s.small.LookupPrefixLPM(p); ok2 && (!ok || q2.Bits() >= q.Bits()) {
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

// overlay merges the stream of big's prefixes with small's few, both in
// the order before reports (before(a, b): a comes first; equal prefixes
// are neither): small's value replaces big's for the same prefix, and
// tombstones (empty leaves) hide it.
func overlay(big iter.Seq2[netip.Prefix, leaf], few []pfxLeaf, before func(a, b netip.Prefix) bool) iter.Seq2[netip.Prefix, leaf] {
	return func(yield func(netip.Prefix, leaf) bool) {
		emit := func(x pfxLeaf) bool { return x.l.head == nil || yield(x.p, x.l) }
		for q, l := range big {
			for len(few) > 0 && before(few[0].p, q) {
				if !emit(few[0]) {
					return
				}
				few = few[1:]
			}
			if len(few) > 0 && few[0].p == q {
				if !emit(few[0]) {
					return
				}
				few = few[1:]
				continue
			}
			if !yield(q, l) {
				return
			}
		}
		for _, x := range few {
			if !emit(x) {
				return
			}
		}
	}
}

func collect(it iter.Seq2[netip.Prefix, leaf]) []pfxLeaf {
	var few []pfxLeaf
	for q, l := range it {
		few = append(few, pfxLeaf{q, l})
	}
	return few
}

// longer is Supernets' order: longest first.
func longer(a, b netip.Prefix) bool { return a.Bits() > b.Bits() }

// Supernets iterates the stored prefixes containing p, longest first.
func (s *store) Supernets(p netip.Prefix) iter.Seq2[netip.Prefix, leaf] {
	if s == nil || s.big == nil {
		return none
	}
	if s.small == nil {
		return s.big.Supernets(p)
	}
	return func(yield func(netip.Prefix, leaf) bool) {
		for q, l := range overlay(s.big.Supernets(p), collect(s.small.Supernets(p)), longer) {
			if !yield(q, l) {
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

// sorted applies the CIDR-ordered iteration f to both tables, overlaid.
func (s *store) sorted(f func(*bart.Table[leaf]) iter.Seq2[netip.Prefix, leaf]) iter.Seq2[netip.Prefix, leaf] {
	if s == nil || s.big == nil {
		return none
	}
	if s.small == nil {
		return f(s.big)
	}
	return func(yield func(netip.Prefix, leaf) bool) {
		for q, l := range overlay(f(s.big), collect(f(s.small)), cidrLess) {
			if !yield(q, l) {
				return
			}
		}
	}
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
			if _, over := s.small.Get(p); over {
				continue // small's value or tombstone decides
			}
			if !yield(p, l) {
				return
			}
		}
		for p, l := range s.small.All() {
			if l.head != nil && !yield(p, l) {
				return
			}
		}
	}
}

// with returns s with p's entries set to l (l empty: p removed); s is
// unchanged. old is p's entries in s, which every caller has just read
// (it keeps srcRoutes without a second walk).
func (s *store) with(p netip.Prefix, old, l leaf) *store {
	n := store{}
	if s != nil {
		n = *s
	}
	if n.big == nil {
		n.big = new(bart.Table[leaf])
	}
	if old.head == nil && l.head == nil {
		return &n // nothing stored at p, nothing to remove
	}
	n.srcRoutes += srcCount(l) - srcCount(old)
	// Keep fresh and tombs: what p was in small before, what it is after.
	_, inBig := n.big.Get(p)
	var was leaf
	inSmall := false
	if n.small != nil {
		was, inSmall = n.small.Get(p)
	}
	switch {
	case !inBig && inSmall:
		n.fresh--
	case inBig && inSmall && was.head == nil:
		n.tombs--
	}
	switch {
	case !inBig && l.head == nil:
		// a prefix only small had: gone from small
		if n.small = n.small.DeletePersist(p); n.small.Size() == 0 {
			n.small = nil
		}
	default:
		if !inBig {
			n.fresh++
		} else if l.head == nil {
			n.tombs++
		}
		if n.small == nil {
			t := new(bart.Table[leaf]) // private until published: filled in place
			t.Insert(p, l)
			n.small = t
		} else {
			n.small = n.small.InsertPersist(p, l)
		}
		if n.small.Size() >= smallMax {
			n.fold()
		}
	}
	n.ix = indexed(n.ix, p, l, old.head != nil, &n)
	return &n
}

// fold applies the small table's changes to the large one in one batch.
func (n *store) fold() {
	ops := make([]bart.BatchOp[leaf], 0, n.small.Size())
	for p, l := range n.small.All() {
		ops = append(ops, bart.BatchOp[leaf]{Pfx: p, Val: l, Del: l.head == nil})
	}
	n.big = n.big.BatchPersist(ops)
	n.small, n.fresh, n.tombs = nil, 0, 0
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
