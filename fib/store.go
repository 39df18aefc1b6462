package fib

import (
	"iter"
	"net/netip"
	"slices"

	"github.com/gaissmai/bart"
)

// store is one routing table's immutable storage: a large bart table and,
// while there are changes not folded into it yet, a short list of them.
//
// The large table is updated persistently: third_party/bart's
// BatchPersist copies only the nodes on the paths to the prefixes it
// changes, each once per batch (ClonePath shares every other child with
// the previous version; upstream copied each of those, up to 256
// allocations per node). A node holding 256 children is a 4 KB array, and
// at 40,000 /24s the path to one has two of them, so a change does not go
// to the large table at once: it is one node of an immutable list, newest
// first (pend), holding the prefix and its new entries (a new prefix, a
// new entry list for a prefix of the large table, or an empty one, a
// tombstone, for a removal). Every smallMax changes the list is folded
// into the large table with one BatchPersist (BenchmarkFoldCadence,
// BenchmarkRouteLoad): by Tables.Tidy, after the reply to the change that
// filled the list has gone out, or else by the next change. A change costs one list node, where the small bart
// table this list replaces copied the nodes of a path per insert (15 for
// an IPv6 /64: 2.0 KB and 17 allocations of hack/routeload.sh's 3.3 KB and
// 28 per route). In the list the newest node of a prefix wins over older
// ones and over the large table. Readers walk the list (at most smallMax+1
// nodes) only while it exists; the read index (ix) covers the large table
// and the list both.
type store struct {
	big *bart.Table[leaf]
	// pend is the changes not folded into big, newest first; nil when
	// none. npend counts its nodes, tombs its tombstones.
	pend         *pnode
	npend, tombs int
	// pmask has bit pbit(p) set for each prefix p in pend: Get skips the
	// walk of the list for a prefix whose bit is clear (most inserts of a
	// new prefix).
	pmask uint64
	// size is the number of prefixes, big and pend together.
	size int
	// ix is the read index (index.go, h-lk): the one structure a lookup
	// probes; nil: the lookup asks the store.
	ix *lpmIndex
	// fx is ix's full arrays (ix.full), nil unless ix is full: probe4 and
	// probe6 reach them in one load from the store.
	fx *fullIndex
	// srcRoutes counts the entries with a source prefix (IPv6 RTA_SRC,
	// the kernel's fib6_src). LookupBatch reuses a result only while it
	// is 0 in the tables the lookup reads: a source-specific route makes
	// the answer depend on the flow's source, not on its destination alone
	// (seed 003's review: hints stay valid with subtrees when no route has
	// a source prefix).
	srcRoutes int
}

// pnode is one change not folded yet: prefix p (masked) now holds l,
// empty for a removal.
type pnode struct {
	p    netip.Prefix
	l    leaf
	next *pnode
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

// smallMax is the number of changes the list collects before it is folded
// into the large table: the cadence BenchmarkFoldCadence chose (a
// variable so that tests can stress folding).
var smallMax = 32

// foldBelow: a store whose large table holds fewer prefixes folds every
// change at once (its nodes are small, its path copies cheap), so that a
// small table (a local table of a few addresses) never has a list to walk.
// A variable so that the reference tests keep lists in small tables.
var foldBelow = 256

// Size returns the number of prefixes.
func (s *store) Size() int {
	if s == nil {
		return 0
	}
	return s.size
}

// pbit is p's bit in store.pmask (p masked): a multiplicative hash of its
// address words and length, so that consecutive prefixes spread.
func pbit(p netip.Prefix) uint64 {
	hi, lo := addrWords(p.Addr())
	h := (hi*0x9e3779b97f4a7c15 ^ lo) * 0x9e3779b97f4a7c15
	h ^= uint64(p.Bits()) * 0xc2b2ae3d27d4eb4f
	return 1 << (h >> 58)
}

// Get returns the entries of exactly p.
func (s *store) Get(p netip.Prefix) (leaf, bool) {
	if s == nil || s.big == nil {
		return leaf{}, false
	}
	if s.pend != nil {
		p = p.Masked()
		if s.pmask&pbit(p) == 0 {
			return s.big.Get(p)
		}
		for n := s.pend; n != nil; n = n.next {
			if n.p == p {
				return n.l, n.l.head != nil
			}
		}
	}
	return s.big.Get(p)
}

// bitset129 marks prefix lengths 0–128.
type bitset129 [3]uint64

func (b *bitset129) has(i int) bool { return b[i>>6]&(1<<(i&63)) != 0 }
func (b *bitset129) set(i int)      { b[i>>6] |= 1 << (i & 63) }

// pendSupernets scans the list for the prefixes containing p: of the
// prefixes containing a given prefix there is one per length, so a length
// names one. decided marks the lengths the list has a node for (its
// newest decides), and best is the longest of them that is not a
// tombstone (-1: none).
func (s *store) pendSupernets(p netip.Prefix) (decided bitset129, best *pnode) {
	bits := p.Bits()
	for n := s.pend; n != nil; n = n.next {
		b := n.p.Bits()
		if b > bits || decided.has(b) || !n.p.Contains(p.Addr()) {
			continue
		}
		decided.set(b)
		if n.l.head != nil && (best == nil || b > best.p.Bits()) {
			best = n
		}
	}
	return decided, best
}

// LookupPrefixLPM returns the longest stored prefix containing p.
func (s *store) LookupPrefixLPM(p netip.Prefix) (netip.Prefix, leaf, bool) {
	if s == nil || s.big == nil {
		return netip.Prefix{}, leaf{}, false
	}
	if s.pend == nil {
		return s.big.LookupPrefixLPM(p)
	}
	p = p.Masked()
	decided, best := s.pendSupernets(p)
	bb := -1
	if best != nil {
		bb = best.p.Bits()
	}
	q, l, ok := s.big.LookupPrefixLPM(p)
	if ok && q.Bits() > bb {
		if !decided.has(q.Bits()) {
			return q, l, true
		}
		// big's match is a tombstone (a live override would be best): the
		// longest of big's supernets the list leaves alone.
		for q, l := range s.big.Supernets(p) {
			if q.Bits() <= bb {
				break
			}
			if !decided.has(q.Bits()) {
				return q, l, true
			}
		}
	}
	if best != nil {
		return best.p, best.l, true
	}
	return netip.Prefix{}, leaf{}, false
}

// none is the empty iteration.
func none(func(netip.Prefix, leaf) bool) {}

type pfxLeaf struct {
	p netip.Prefix
	l leaf
}

// overlay merges the stream of big's prefixes with the list's few, both in
// the order before reports (before(a, b): a comes first; equal prefixes
// are neither): the list's value replaces big's for the same prefix, and
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

// pendWhere returns the list's newest node of each prefix keep accepts,
// tombstones included, ordered by cmp.
func (s *store) pendWhere(keep func(netip.Prefix) bool, cmp func(a, b netip.Prefix) bool) []pfxLeaf {
	var few []pfxLeaf
next:
	for n := s.pend; n != nil; n = n.next {
		if !keep(n.p) {
			continue
		}
		for _, x := range few {
			if x.p == n.p {
				continue next // an older change of a prefix already seen
			}
		}
		few = append(few, pfxLeaf{n.p, n.l})
	}
	slices.SortFunc(few, func(a, b pfxLeaf) int {
		switch {
		case cmp(a.p, b.p):
			return -1
		case cmp(b.p, a.p):
			return 1
		}
		return 0
	})
	return few
}

// longer is Supernets' order: longest first.
func longer(a, b netip.Prefix) bool { return a.Bits() > b.Bits() }

// Supernets iterates the stored prefixes containing p, longest first.
func (s *store) Supernets(p netip.Prefix) iter.Seq2[netip.Prefix, leaf] {
	if s == nil || s.big == nil {
		return none
	}
	if s.pend == nil {
		return s.big.Supernets(p)
	}
	p = p.Masked()
	return func(yield func(netip.Prefix, leaf) bool) {
		few := s.pendWhere(func(q netip.Prefix) bool { return q.Bits() <= p.Bits() && q.Contains(p.Addr()) }, longer)
		for q, l := range overlay(s.big.Supernets(p), few, longer) {
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

// sorted applies the CIDR-ordered iteration f to big, with the list's
// prefixes keep accepts overlaid.
func (s *store) sorted(f func(*bart.Table[leaf]) iter.Seq2[netip.Prefix, leaf], keep func(netip.Prefix) bool) iter.Seq2[netip.Prefix, leaf] {
	if s == nil || s.big == nil {
		return none
	}
	if s.pend == nil {
		return f(s.big)
	}
	return func(yield func(netip.Prefix, leaf) bool) {
		for q, l := range overlay(f(s.big), s.pendWhere(keep, cidrLess), cidrLess) {
			if !yield(q, l) {
				return
			}
		}
	}
}

// Subnets iterates the stored prefixes inside p in CIDR order.
func (s *store) Subnets(p netip.Prefix) iter.Seq2[netip.Prefix, leaf] {
	p = p.Masked()
	return s.sorted(func(t *bart.Table[leaf]) iter.Seq2[netip.Prefix, leaf] { return t.Subnets(p) },
		func(q netip.Prefix) bool {
			return q.Bits() >= p.Bits() && q.Addr().Is4() == p.Addr().Is4() && p.Contains(q.Addr())
		})
}

// AllSorted4 iterates the IPv4 prefixes in CIDR order.
func (s *store) AllSorted4() iter.Seq2[netip.Prefix, leaf] {
	return s.sorted((*bart.Table[leaf]).AllSorted4, func(q netip.Prefix) bool { return q.Addr().Is4() })
}

// AllSorted6 iterates the IPv6 prefixes in CIDR order.
func (s *store) AllSorted6() iter.Seq2[netip.Prefix, leaf] {
	return s.sorted((*bart.Table[leaf]).AllSorted6, func(q netip.Prefix) bool { return q.Addr().Is6() })
}

// All iterates every prefix in no particular order.
func (s *store) All() iter.Seq2[netip.Prefix, leaf] {
	if s == nil || s.big == nil {
		return none
	}
	if s.pend == nil {
		return s.big.All()
	}
	return func(yield func(netip.Prefix, leaf) bool) {
		few := s.pendWhere(func(netip.Prefix) bool { return true }, cidrLess)
		for p, l := range s.big.All() {
			if _, over := slices.BinarySearchFunc(few, p, func(x pfxLeaf, p netip.Prefix) int { return cmpCIDR(x.p, p) }); over {
				continue // the list's value or tombstone decides
			}
			if !yield(p, l) {
				return
			}
		}
		for _, x := range few {
			if x.l.head != nil && !yield(x.p, x.l) {
				return
			}
		}
	}
}

func cmpCIDR(a, b netip.Prefix) int {
	switch {
	case cidrLess(a, b):
		return -1
	case cidrLess(b, a):
		return 1
	}
	return 0
}

// with returns s with p's entries set to l (l empty: p removed); s is
// unchanged. old is p's entries in s, which every caller has just read
// (it keeps size and srcRoutes without a second walk).
func (s *store) with(p netip.Prefix, old, l leaf) *store {
	// The new store and its list node are one allocation (storeNode): a
	// node is referenced only by the stores after it until the fold that
	// drops the list, so it never outlives its store by more than
	// smallMax changes, and the store keeps its node's 48 bytes after it.
	sn := new(storeNode)
	n := &sn.s
	if s != nil {
		*n = *s
	}
	if n.big == nil {
		n.big = new(bart.Table[leaf])
	}
	if old.head == nil && l.head == nil {
		return n // nothing stored at p, nothing to remove
	}
	p = p.Masked()
	n.srcRoutes += srcCount(l) - srcCount(old)
	switch {
	case old.head == nil:
		n.size++
	case l.head == nil:
		n.size--
	}
	sn.n = pnode{p: p, l: l, next: n.pend}
	n.pend = &sn.n
	n.pmask |= pbit(p)
	n.npend++
	if l.head == nil {
		n.tombs++
	}
	// A list that reached smallMax waits for Tables.Tidy, which the
	// server runs once this change's reply is sent; a change that finds
	// it still waiting folds it now, so the list never holds more than
	// smallMax+1 changes.
	if n.npend > smallMax || n.big.Size() < foldBelow {
		n.fold()
	}
	n.ix = indexed(n.ix, p, l, old.head != nil, n)
	n.fx = n.ix.fullArrays()
	return n
}

// foldDue reports whether s's list has reached smallMax changes: its fold
// is Tables.Tidy's to do.
func (s *store) foldDue() bool { return s != nil && s.npend >= smallMax }

// folded returns s with its list folded into the large table: the same
// prefixes and entries, so the same read index (s is unchanged).
func (s *store) folded() *store {
	n := new(store)
	*n = *s
	n.fold()
	return n
}

// storeNode is store.with's one allocation: the new store and the node of
// its change.
type storeNode struct {
	s store
	n pnode
}

// fold applies the list's changes to the large table in one batch, the
// newest change of each prefix (BatchPersist skips the removal of a prefix
// big lacks: one added and removed again since the last fold).
func (n *store) fold() {
	ops := make([]bart.BatchOp[leaf], 0, n.npend)
next:
	for x := n.pend; x != nil; x = x.next {
		for i := range ops {
			if ops[i].Pfx == x.p {
				continue next
			}
		}
		ops = append(ops, bart.BatchOp[leaf]{Pfx: x.p, Val: x.l, Del: x.l.head == nil})
	}
	// BatchPersist applies the ops in order and each prefix is in ops
	// once, so the order among them does not matter.
	n.big = n.big.BatchPersist(ops)
	n.pend, n.npend, n.tombs, n.pmask = nil, 0, 0, 0
}

// storeOf returns a store holding the prefixes of bt (built privately).
func storeOf(bt *bart.Table[leaf]) *store {
	n := 0
	for _, l := range bt.All() {
		n += srcCount(l)
	}
	s := &store{big: bt, srcRoutes: n, size: bt.Size()}
	s.ix = indexOf(s, bt.Size6() > 0)
	s.fx = s.ix.fullArrays()
	return s
}
