package fib

import (
	"iter"
	"net/netip"

	"github.com/gaissmai/bart"
)

// store is one routing table's immutable storage: one bart table, updated
// with InsertPersist/DeletePersist, which copy only the nodes on the path
// to the prefix (third_party/bart's ClonePath shares every other child,
// path-compressed leaves included, with the previous version). Readers
// consult this one table: a lookup is one bart match per routing table.
//
// The tree used to keep a second, small table for the prefixes added
// since the last merge, because upstream bart's persistent updates copy
// each node's path-compressed children (up to 256 allocations per node):
// BenchmarkInsert was 172 allocations per insert+delete; with ClonePath
// it is 8 (docs/FIB.md).
type store struct {
	big *bart.Table[leaf]
	// small is always nil: the second table the store no longer keeps.
	// It stays until the readers that skip it when nil (lookup.go) drop
	// their branch.
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

// Size returns the number of prefixes.
func (s *store) Size() int {
	if s == nil || s.big == nil {
		return 0
	}
	return s.big.Size()
}

// Get returns the entries of exactly p.
func (s *store) Get(p netip.Prefix) (leaf, bool) {
	if s == nil || s.big == nil {
		return leaf{}, false
	}
	return s.big.Get(p)
}

// LookupPrefixLPM returns the longest stored prefix containing p.
func (s *store) LookupPrefixLPM(p netip.Prefix) (netip.Prefix, leaf, bool) {
	if s == nil || s.big == nil {
		return netip.Prefix{}, leaf{}, false
	}
	return s.big.LookupPrefixLPM(p)
}

// none is the empty iteration.
func none(func(netip.Prefix, leaf) bool) {}

// Supernets iterates the stored prefixes containing p, longest first.
func (s *store) Supernets(p netip.Prefix) iter.Seq2[netip.Prefix, leaf] {
	if s == nil || s.big == nil {
		return none
	}
	return s.big.Supernets(p)
}

// Subnets iterates the stored prefixes inside p in CIDR order.
func (s *store) Subnets(p netip.Prefix) iter.Seq2[netip.Prefix, leaf] {
	if s == nil || s.big == nil {
		return none
	}
	return s.big.Subnets(p)
}

// AllSorted4 iterates the IPv4 prefixes in CIDR order.
func (s *store) AllSorted4() iter.Seq2[netip.Prefix, leaf] {
	if s == nil || s.big == nil {
		return none
	}
	return s.big.AllSorted4()
}

// AllSorted6 iterates the IPv6 prefixes in CIDR order.
func (s *store) AllSorted6() iter.Seq2[netip.Prefix, leaf] {
	if s == nil || s.big == nil {
		return none
	}
	return s.big.AllSorted6()
}

// All iterates every prefix in no particular order.
func (s *store) All() iter.Seq2[netip.Prefix, leaf] {
	if s == nil || s.big == nil {
		return none
	}
	return s.big.All()
}

// with returns s with p's entries set to l (l empty: p removed), copying
// only the path to p; s is unchanged. old is p's entries in s, which
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
	if l.len() == 0 {
		n.big = n.big.DeletePersist(p)
	} else {
		n.big = n.big.InsertPersist(p, l)
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
