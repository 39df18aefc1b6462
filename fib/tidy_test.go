package fib

import (
	"fmt"
	"math/rand"
	"net/netip"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/nlemu/nlemu/rtnl"
)

// TestTidyDeferredFoldLookupsEqual: the fold of a table's list of changes
// runs after the change's reply (Tables.Tidy, as the server runs it) or,
// when no Tidy came, inside the next change. Over random inserts and
// deletes in two tables (IPv4 main, merged with local, and table 50; IPv6
// main and 50), with a Tidy after some changes and none after others: a
// list never holds more than smallMax+1 changes, Tidy leaves none due,
// and the snapshot taken before each Tidy that folded and the one after
// it answer every lookup alike (the read index, the store's own LPM and
// View.Lookup), dump the same routes in the same order, and agree with
// the linear reference. Both kinds of fold must have happened.
func TestTidyDeferredFoldLookupsEqual(t *testing.T) {
	defer func(n, f int) { smallMax, foldBelow = n, f }(smallMax, foldBelow)
	for _, c := range []struct {
		v6          bool
		small, fold int
	}{{false, smallMax, foldBelow}, {true, smallMax, foldBelow}, {false, 5, 0}, {true, 3, 0}} {
		t.Run(fmt.Sprintf("v6=%v/smallMax=%d/foldBelow=%d", c.v6, c.small, c.fold), func(t *testing.T) {
			smallMax, foldBelow = c.small, c.fold
			testTidy(t, c.v6, rand.New(rand.NewSource(int64(7*c.small+c.fold))))
		})
	}
}

func testTidy(t *testing.T, v6 bool, rng *rand.Rand) {
	tb := NewIPv4()
	if v6 {
		tb = NewIPv6()
	}
	ids := []uint32{tableMain, 50}
	refs := map[uint32]*refTable{tableMain: {}, 50: {}}
	tidyFolds, inlineFolds := 0, 0
	const ops = 12_000
	for i := range ops {
		id := ids[rng.Intn(2)]
		ref := refs[id]
		before := tb.root(id)
		// Mostly inserts in the first half (most of randPrefix's short
		// prefixes are soon taken: the table grows past foldBelow), then
		// mostly deletes (it shrinks again).
		insert := 9
		if i >= ops/2 {
			insert = 5
		}
		if rng.Intn(10) < insert || len(ref.routes) == 0 {
			r := rt(fmt.Sprintf("%v dev 3 table %d", randPrefix(rng, v6), id))
			r.Priority = uint32(rng.Intn(3))
			if _, err := tb.Insert(r, fAdd); err == nil {
				ref.routes = append(ref.routes, r)
			} else if !slices.ContainsFunc(ref.routes, func(x Route) bool { return x.Dst == r.Dst && x.Priority == r.Priority }) {
				t.Fatalf("op %d: insert %v m%d: %v, reference has none", i, r.Dst, r.Priority, err)
			}
		} else {
			k := rng.Intn(len(ref.routes))
			x := ref.routes[k]
			m := Match{Family: x.Family, Table: id, Dst: x.Dst, Priority: x.Priority, Scope: rtnl.RT_SCOPE_NOWHERE}
			if _, err := tb.Delete(m); err != nil {
				t.Fatalf("op %d: delete %v m%d: %v", i, x.Dst, x.Priority, err)
			}
			ref.routes = slices.Delete(ref.routes, k, k+1)
		}
		after := tb.root(id)
		if before.foldDue() && after != nil && after.pend == nil {
			inlineFolds++ // the change folded the list no Tidy had
		}
		for _, id := range ids {
			if r := tb.root(id); r != nil && r.npend > smallMax+1 {
				t.Fatalf("op %d: table %d holds a list of %d changes, want at most %d", i, id, r.npend, smallMax+1)
			}
		}
		if rng.Intn(3) == 0 {
			continue // no Tidy: the next change folds
		}
		// Views now: a snapshot loads a custom table's root when its view
		// is taken.
		v1, r1 := viewsOf(tb, ids), rootsOf(tb, ids)
		tb.Tidy()
		v2, r2 := viewsOf(tb, ids), rootsOf(tb, ids)
		for j, id := range ids {
			if r2[j].foldDue() {
				t.Fatalf("op %d: table %d's list still due after Tidy (%d changes)", i, id, r2[j].npend)
			}
			if r1[j] == r2[j] {
				continue
			}
			tidyFolds++
			if r2[j].pend != nil || r2[j].ix != r1[j].ix {
				t.Fatalf("op %d: table %d after Tidy: list %v, index kept %v", i, id, r2[j].pend != nil, r2[j].ix == r1[j].ix)
			}
			// The reference's dump order is quadratic: every 8th fold.
			checkTidyEqual(t, fmt.Sprintf("op %d table %d", i, id), rng, v6, refs[id], r1[j], r2[j], v1[j], v2[j], tidyFolds%8 == 1)
		}
	}
	if tidyFolds == 0 || inlineFolds == 0 {
		t.Errorf("folds by Tidy %d, by the next change %d: want both", tidyFolds, inlineFolds)
	}
	for _, id := range ids {
		if tb.root(id) == nil {
			t.Errorf("table %d: no routes after the run", id)
		}
	}
}

// viewsOf returns the current views of tables ids.
func viewsOf(tb *Tables, ids []uint32) []View {
	s := tb.Snapshot()
	vs := make([]View, len(ids))
	for i, id := range ids {
		vs[i], _ = s.Table(id)
	}
	return vs
}

// rootsOf returns the current stores of tables ids.
func rootsOf(tb *Tables, ids []uint32) []*store {
	rs := make([]*store, len(ids))
	for i, id := range ids {
		rs[i] = tb.root(id)
	}
	return rs
}

// checkTidyEqual compares a table before (store a, view va) and after (b,
// vb) a Tidy's fold: random lookups through the index and the
// store, View.Lookup against the reference, and the whole dump (and,
// when refDump, its order against the reference's).
func checkTidyEqual(t *testing.T, what string, rng *rand.Rand, v6 bool, ref *refTable, a, b *store, va, vb View, refDump bool) {
	t.Helper()
	for range 30 {
		addr := randAddr(rng, v6)
		ap, al, aok := ixOrStoreLPM(a, addr)
		bp, bl, bok := ixOrStoreLPM(b, addr)
		if aok != bok || ap != bp || al.head != bl.head {
			t.Fatalf("%s: lookup %v before Tidy %v %v, after %v %v", what, addr, ap, aok, bp, bok)
		}
		sp, sl, sok := b.LookupPrefixLPM(netip.PrefixFrom(addr, addr.BitLen()))
		if sok != aok || sp != ap || sl.head != al.head {
			t.Fatalf("%s: store LPM %v after Tidy %v %v, index before %v %v", what, addr, sp, sok, ap, aok)
		}
		want, wok := ref.lpm(addr)
		ea, eaok := va.Lookup(addr)
		eb, ebok := vb.Lookup(addr)
		if eaok != wok || ebok != wok || wok && (ea.Prefix() != want || eb.Prefix() != want) {
			t.Fatalf("%s: View.Lookup %v before %v %v, after %v %v, reference %v %v", what, addr, ea.Prefix(), eaok, eb.Prefix(), ebok, want, wok)
		}
	}
	if d := cmp.Diff(dumpOf(va), dumpOf(vb)); d != "" {
		t.Fatalf("%s: dump before and after Tidy (-before +after):\n%s", what, d)
	}
	if !refDump {
		return
	}
	if d := cmp.Diff(ref.order(), dumpPrefixes(vb), cmp.Comparer(func(a, b netip.Prefix) bool { return a == b })); d != "" {
		t.Fatalf("%s: dump after Tidy (-reference +got):\n%s", what, d)
	}
}

// ixOrStoreLPM is a fast-path lookup in s: the read index, and the store's
// LPM where the index asks (or there is none).
func ixOrStoreLPM(s *store, a netip.Addr) (netip.Prefix, leaf, bool) {
	if s.ix != nil {
		switch p, l, st := s.ix.lookup(a); st {
		case ixHit:
			return p, l, true
		case ixNone:
			return netip.Prefix{}, leaf{}, false
		}
	}
	return s.LookupPrefixLPM(netip.PrefixFrom(a, a.BitLen()))
}

// dumpOf is v's dump, one brief line per route.
func dumpOf(v View) []string {
	var out []string
	for _, r := range v.Walk(Cursor{}) {
		out = append(out, brief(r))
	}
	return out
}

// dumpPrefixes is v's dump order, one prefix per prefix.
func dumpPrefixes(v View) []netip.Prefix {
	var ps []netip.Prefix
	for c, r := range v.Walk(Cursor{}) {
		if c.Pos == 0 {
			ps = append(ps, r.Dst)
		}
	}
	return ps
}
