package fib

import (
	"fmt"
	"maps"
	"math/rand"
	"net/netip"
	"slices"
	"testing"

	"github.com/gaissmai/bart"
	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/rtnl"
)

// persistPrefix returns a prefix from a space dense enough that bart keeps
// each kind of child: stride-aligned prefixes (/8, /16, /24, /32, /48, /64:
// FringeNodes when alone under their parent), unaligned ones (LeafNodes),
// and prefixes that end inside a node (its prefix table), nested and
// repeating so that updates replace children, split them into nodes and
// compress nodes back into them. The default route is rare: the read
// index (index.go) pays a full cover update for each change of it.
func persistPrefix(rng *rand.Rand, v6 bool) netip.Prefix {
	if v6 {
		var b [16]byte
		b[0], b[1] = 0x20, 0x01
		b[2], b[3] = byte(rng.Intn(3)), byte(rng.Intn(256))
		b[5], b[7] = byte(rng.Intn(3)), byte(rng.Intn(3))
		b[15] = byte(rng.Intn(3))
		bits := []int{16, 20, 32, 44, 48, 56, 61, 64, 127, 128}[rng.Intn(10)]
		if rng.Intn(64) == 0 {
			bits = 0
		}
		return netip.PrefixFrom(netip.AddrFrom16(b), bits).Masked()
	}
	a := netip.AddrFrom4([4]byte{10, byte(rng.Intn(3)), byte(rng.Intn(256)), byte(rng.Intn(3))})
	bits := []int{8, 12, 16, 20, 24, 27, 30, 32}[rng.Intn(8)]
	if rng.Intn(64) == 0 {
		bits = 0
	}
	return netip.PrefixFrom(a, bits).Masked()
}

// storeContent is the slow, obvious copy of a store: prefix → its entries.
type storeContent map[netip.Prefix][]*attrs

func contentOf(s *store) storeContent {
	c := storeContent{}
	for p, l := range s.All() {
		c[p] = l.slice()
	}
	return c
}

func (c storeContent) clone() storeContent {
	n := make(storeContent, len(c))
	for p, s := range c {
		n[p] = slices.Clone(s)
	}
	return n
}

// lpm is the linear longest-prefix scan.
func (c storeContent) lpm(a netip.Addr) (netip.Prefix, bool) {
	best, ok := netip.Prefix{}, false
	for p := range c {
		if p.Contains(a) && (!ok || p.Bits() > best.Bits()) {
			best, ok = p, true
		}
	}
	return best, ok
}

// samePtr compares interned entries by identity.
var samePtr = cmp.Comparer(func(a, b *attrs) bool { return a == b })

// checkStore compares s with its reference: every prefix, the LPM of
// random addresses, the supernets of a random prefix, the CIDR order.
func checkStore(t *testing.T, what string, s *store, ref storeContent, rng *rand.Rand, v6 bool) {
	t.Helper()
	if got := s.Size(); got != len(ref) {
		t.Fatalf("%s: Size %d, reference %d", what, got, len(ref))
	}
	if got := contentOf(s); !maps.EqualFunc(ref, got, slices.Equal) {
		t.Fatalf("%s: content (-reference +store):\n%s", what, cmp.Diff(ref, got, samePtr))
	}
	srcs := 0
	for _, e := range ref {
		srcs += srcCount(leafOf(e))
	}
	if s.srcRoutes != srcs {
		t.Fatalf("%s: srcRoutes %d, reference %d", what, s.srcRoutes, srcs)
	}
	for range 20 {
		a := persistPrefix(rng, v6).Addr()
		want, wok := ref.lpm(a)
		got, _, gok := s.LookupPrefixLPM(netip.PrefixFrom(a, a.BitLen()))
		if got != want || gok != wok {
			t.Fatalf("%s: LPM %v = %v %v, reference %v %v", what, a, got, gok, want, wok)
		}
	}
	q := persistPrefix(rng, v6)
	var sup, wantSup []netip.Prefix
	for p := range s.Supernets(q) {
		sup = append(sup, p)
	}
	for p := range ref {
		if p.Bits() <= q.Bits() && p.Contains(q.Addr()) {
			wantSup = append(wantSup, p)
		}
	}
	slices.SortFunc(wantSup, func(a, b netip.Prefix) int { return b.Bits() - a.Bits() })
	if d := cmp.Diff(wantSup, sup, cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); d != "" {
		t.Fatalf("%s: Supernets(%v) (-reference +store):\n%s", what, q, d)
	}
	all := s.AllSorted4()
	if v6 {
		all = s.AllSorted6()
	}
	var order []netip.Prefix
	for p := range all {
		order = append(order, p)
	}
	if !slices.IsSortedFunc(order, func(a, b netip.Prefix) int {
		if c := a.Addr().Compare(b.Addr()); c != 0 {
			return c
		}
		return a.Bits() - b.Bits()
	}) || len(order) != len(ref) {
		t.Fatalf("%s: AllSorted not in CIDR order or incomplete: %v", what, order)
	}
}

// TestStoreChurnMatchesReference: 6,000 random sets, replacements and
// removals of a prefix's entries per family (the store.with every route
// change ends in), on a prefix space where bart keeps nodes, leaves and
// fringes, against a map, with the default fold cadence and with folds
// all the time, lists kept however small the table (smallMax 2, 5,
// foldBelow 0); every 300 operations the store is kept with a
// copy of its reference, and at the end every kept store still holds
// exactly what it held (the persistent updates of third_party/bart share
// the children off the path, so a write into a shared leaf or fringe
// would show here as an old snapshot changing).
func TestStoreChurnMatchesReference(t *testing.T) {
	defer func(n, f int) { smallMax, foldBelow = n, f }(smallMax, foldBelow)
	for _, c := range []struct {
		v6          bool
		small, fold int
	}{{false, smallMax, foldBelow}, {true, smallMax, foldBelow}, {false, 2, 0}, {true, 5, 0}} {
		v6 := c.v6
		t.Run(fmt.Sprintf("%s/smallMax=%d/foldBelow=%d", map[bool]string{false: "ipv4", true: "ipv6"}[v6], c.small, c.fold), func(t *testing.T) {
			smallMax, foldBelow = c.small, c.fold
			rng := rand.New(rand.NewSource(8))
			var s *store
			ref := storeContent{}
			pool := make([]*attrs, 8) // distinct entries to put in leaves
			for i := range pool {
				r := Route{Table: 50, Priority: uint32(i)}
				if v6 && i%3 == 0 {
					r.Src = netip.MustParsePrefix("2001:db8:5::/48")
				}
				pool[i] = &attrs{r: r}
			}
			type kept struct {
				s   *store
				ref storeContent
				at  int
			}
			var snaps []kept
			const ops = 6000
			for i := range ops {
				p := persistPrefix(rng, v6)
				old, _ := s.Get(p)
				var n []*attrs
				if rng.Intn(3) > 0 { // set (add, replace, append, prepend all end here)
					n = make([]*attrs, 1+rng.Intn(3))
					for j := range n {
						n[j] = pool[rng.Intn(len(pool))]
					}
				}
				s = s.with(p, old, leafOf(n))
				if len(n) == 0 {
					delete(ref, p)
				} else {
					ref[p] = n
				}
				if got, ok := s.Get(p); ok != (len(n) > 0) || ok && !slices.Equal(got.slice(), n) {
					t.Fatalf("op %d: Get(%v) after set = %v %v, want %v", i, p, got.slice(), ok, n)
				}
				if i%300 == 0 {
					checkStore(t, fmt.Sprintf("op %d", i), s, ref, rng, v6)
					snaps = append(snaps, kept{s, ref.clone(), i})
				}
			}
			checkStore(t, "end", s, ref, rng, v6)
			for _, k := range snaps {
				checkStore(t, fmt.Sprintf("snapshot of op %d, at the end", k.at), k.s, k.ref, rng, v6)
			}
		})
	}
}

// TestPersistentUpdatesLeaveSnapshots: route changes through Tables
// (add, replace, append, prepend, delete, IPv6 ECMP appends) between
// snapshots; each snapshot's dump is recorded when taken and is the same
// after all later changes — snapshots are immutable once published.
func TestPersistentUpdatesLeaveSnapshots(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		t.Run(map[bool]string{false: "ipv4", true: "ipv6"}[v6], func(t *testing.T) {
			rng := rand.New(rand.NewSource(81))
			tb := NewIPv4()
			if v6 {
				tb = NewIPv6()
			}
			// A Snapshot loads the roots of tables other than IPv4
			// main/local when a View is taken: the views are the
			// immutable part.
			views := func(s Snapshot) []View { return slices.Collect(s.Tables()) }
			walk := func(vs []View) []string {
				var out []string
				for _, v := range vs {
					for _, r := range v.Walk(Cursor{}) {
						out = append(out, fmt.Sprintf("%d %s", v.ID(), brief(r)))
					}
				}
				return out
			}
			type kept struct {
				s    []View
				dump []string
				at   int
			}
			var snaps []kept
			flags := []uint16{fAdd, fReplace, fAppend, fPrepend}
			for i := range 3000 {
				p := persistPrefix(rng, v6)
				gw := fmt.Sprintf("10.0.0.%d", 1+rng.Intn(3))
				if v6 {
					gw = fmt.Sprintf("fe80::%d", 1+rng.Intn(3))
				}
				r := rt(fmt.Sprintf("%v via %s dev 3 metric %d table %d", p, gw, rng.Intn(2), 100+rng.Intn(2)))
				if rng.Intn(4) == 0 {
					tb.Delete(Match{Family: r.Family, Table: r.Table, Dst: r.Dst, Scope: rtnl.RT_SCOPE_NOWHERE})
				} else {
					tb.Insert(r, flags[rng.Intn(len(flags))])
				}
				if i%150 == 0 {
					vs := views(tb.Snapshot())
					snaps = append(snaps, kept{vs, walk(vs), i})
				}
			}
			if tb.Routes() == 0 {
				t.Fatal("no routes stored: the test exercises nothing")
			}
			for _, k := range snaps {
				if d := cmp.Diff(k.dump, walk(k.s)); d != "" {
					t.Errorf("snapshot of op %d changed (-then +now):\n%s", k.at, d)
				}
			}
		})
	}
}

// TestBartPersistSharesOffPathChildren pins the third_party/bart patch:
// a persistent insert copies only the nodes on the path (a handful of
// allocations, not one per leaf or fringe child of each node on it) and
// replacing the value of a leaf or a fringe leaves the old table's value.
func TestBartPersistSharesOffPathChildren(t *testing.T) {
	a, b := &attrs{}, &attrs{}
	var bt bart.Table[leaf]
	for i := range 256 { // 256 fringes (/24) under one /16 node
		bt.Insert(netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, byte(i), 0}), 24), leaf{head: a})
	}
	bt.Insert(netip.MustParsePrefix("10.2.0.0/23"), leaf{head: a}) // a leaf
	fringe, lf := netip.MustParsePrefix("10.1.7.0/24"), netip.MustParsePrefix("10.2.0.0/23")
	old := &bt
	n1 := old.InsertPersist(fringe, leaf{head: b})
	n2 := n1.InsertPersist(lf, leaf{head: b})
	for _, c := range []struct {
		t    *bart.Table[leaf]
		p    netip.Prefix
		want *attrs
	}{{old, fringe, a}, {old, lf, a}, {n1, fringe, b}, {n1, lf, a}, {n2, fringe, b}, {n2, lf, b}} {
		if l, _ := c.t.Get(c.p); l.head != c.want {
			t.Errorf("Get(%v) = %p, want %p", c.p, l.head, c.want)
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		old.InsertPersist(netip.MustParsePrefix("10.1.9.0/24"), leaf{head: b})
	})
	// Upstream: ~260 (every fringe of the /16 node copied).
	if allocs > 16 {
		t.Errorf("InsertPersist under a node of 256 fringes: %.0f allocations, want a handful", allocs)
	}
}

// TestBartBatchPersistMatchesOneByOne pins third_party/bart's
// BatchPersist: random batches of sets and removals give the table that
// the same InsertPersist/DeletePersist calls one by one give, and leave
// the table they started from unchanged, though the batch writes the node
// copies it made in place.
func TestBartBatchPersistMatchesOneByOne(t *testing.T) {
	for _, v6 := range []bool{false, true} {
		rng := rand.New(rand.NewSource(88))
		vals := []*attrs{{}, {}, {}}
		var cur bart.Table[leaf]
		t0 := &cur
		for round := range 150 {
			before := contentOfTable(t0)
			ops := make([]bart.BatchOp[leaf], 1+rng.Intn(40))
			one := t0
			for i := range ops {
				p := persistPrefix(rng, v6)
				if rng.Intn(3) == 0 {
					ops[i] = bart.BatchOp[leaf]{Pfx: p, Del: true}
					one = one.DeletePersist(p)
				} else {
					ops[i] = bart.BatchOp[leaf]{Pfx: p, Val: leaf{head: vals[rng.Intn(len(vals))]}}
					one = one.InsertPersist(p, ops[i].Val)
				}
			}
			batch := t0.BatchPersist(ops)
			if got, want := contentOfTable(batch), contentOfTable(one); !maps.Equal(got, want) || batch.Size() != one.Size() {
				t.Fatalf("v6=%v round %d: batch (%d prefixes) differs from one by one (%d)", v6, round, batch.Size(), one.Size())
			}
			if got := contentOfTable(t0); !maps.Equal(got, before) {
				t.Fatalf("v6=%v round %d: the batch changed the table it started from", v6, round)
			}
			t0 = batch
		}
		if t0.Size() == 0 {
			t.Fatal("empty at the end: the test exercises nothing")
		}
	}
}

func contentOfTable(bt *bart.Table[leaf]) map[netip.Prefix]*attrs {
	m := map[netip.Prefix]*attrs{}
	for p, l := range bt.All() {
		m[p] = l.head
	}
	return m
}
