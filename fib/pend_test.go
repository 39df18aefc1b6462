package fib

import (
	"fmt"
	"math/rand"
	"net/netip"
	"slices"
	"testing"
)

// TestIndexWithPendingListMatchesReference is TestIndexMatchesReference
// with the store's list of changes kept however small the table
// (foldBelow 0) and folded at several cadences: the read index is
// updated per change while some changes sit in the list (its covers and
// bucket refills read the store through the list), and every lookup —
// index, then the store's own LPM when the index asks — agrees with a
// linear scan after each of thousands of interleaved inserts, replaces
// and deletes, both families; Get, Size, Supernets and Subnets agree too.
// Snapshots kept along the way keep their answers to the end.
func TestIndexWithPendingListMatchesReference(t *testing.T) {
	type limits struct{ tiny, full, drop, bucket, small int }
	saved := limits{tinyMax, fullMin, fullDrop, bucketMax, smallMax}
	savedFold := foldBelow
	defer func() {
		tinyMax, fullMin, fullDrop, bucketMax, smallMax = saved.tiny, saved.full, saved.drop, saved.bucket, saved.small
		foldBelow = savedFold
	}()
	foldBelow = 0
	lookups := 0
	for _, lim := range []limits{{4, 12, 6, 4, 3}, {2, 40, 20, 8, 32}, {tinyMax, fullMin, fullDrop, bucketMax, 7}, saved} {
		tinyMax, fullMin, fullDrop, bucketMax, smallMax = lim.tiny, lim.full, lim.drop, lim.bucket, lim.small
		for _, v6 := range []bool{false, true} {
			t.Run(fmt.Sprintf("v6=%v/limits=%v", v6, lim), func(t *testing.T) {
				rng := rand.New(rand.NewSource(int64(lim.full*31+lim.small) + map[bool]int64{false: 4, true: 6}[v6]))
				var s *store
				m := map[netip.Prefix]leaf{}
				var keys []netip.Prefix
				var snaps []ixSnap
				withList := 0
				check := func(s *store, m map[netip.Prefix]leaf, a netip.Addr, what string) {
					lookups++
					wp, wl, wok := ixRefLPM(m, a)
					st := ixAsk
					var gp netip.Prefix
					var gl leaf
					gok := false
					if s.ix != nil {
						gp, gl, st = s.ix.lookup(a)
					}
					switch st {
					case ixAsk:
						gp, gl, gok = s.LookupPrefixLPM(netip.PrefixFrom(a, a.BitLen()))
					case ixHit:
						gok = true
					}
					if gok != wok || gok && (gp != wp || gl.head != wl.head) {
						t.Fatalf("%s: lookup %v: got %v %v (index state %d), reference %v %v", what, a, gok, gp, st, wok, wp)
					}
					// The store's own LPM, without the index.
					sp, sl, sok := s.LookupPrefixLPM(netip.PrefixFrom(a, a.BitLen()))
					if sok != wok || sok && (sp != wp || sl.head != wl.head) {
						t.Fatalf("%s: store LPM %v: got %v %v, reference %v %v", what, a, sok, sp, wok, wp)
					}
				}
				for step := range 2500 {
					p := ixRandPrefix(rng, v6)
					old, had := m[p]
					var l leaf
					if r := rng.Intn(10); r < 4 && len(keys) > 0 {
						i := rng.Intn(len(keys))
						p = keys[i]
						old, had = m[p], true
						keys[i] = keys[len(keys)-1]
						keys = keys[:len(keys)-1]
						delete(m, p)
					} else {
						l = leaf{head: &attrs{r: Route{Priority: uint32(step)}}}
						if !had {
							keys = append(keys, p)
						}
						m[p] = l
					}
					if !had && l.head == nil {
						continue
					}
					s = s.with(p, old, l)
					if s.pend != nil {
						withList++
					}
					if s.Size() != len(m) {
						t.Fatalf("step %d: Size %d, reference %d", step, s.Size(), len(m))
					}
					if g, ok := s.Get(p); ok != (l.head != nil) || g.head != l.head {
						t.Fatalf("step %d: Get(%v) = %v %v after the change", step, p, g.head, ok)
					}
					for range 10 {
						check(s, m, ixRandAddr(rng, v6, keys), fmt.Sprintf("step %d", step))
					}
					if step%100 == 0 {
						q := ixRandPrefix(rng, v6)
						checkSupernetsSubnets(t, fmt.Sprintf("step %d", step), s, m, q)
					}
					if step%250 == 0 {
						snaps = append(snaps, ixTakeSnap(rng, v6, keys, s, m))
					}
				}
				ixCheckSnaps(snaps, check)
				if withList == 0 {
					t.Errorf("no step left changes in the list: the test does not test it")
				}
			})
		}
	}
	if lookups < 100000 {
		t.Errorf("%d lookups, want at least 100,000", lookups)
	}
}

// checkSupernetsSubnets compares the store's Supernets (longest first) and
// Subnets (CIDR order) of q with the reference.
func checkSupernetsSubnets(t *testing.T, what string, s *store, m map[netip.Prefix]leaf, q netip.Prefix) {
	t.Helper()
	var want, got []netip.Prefix
	for p := range m {
		if p.Bits() <= q.Bits() && p.Contains(q.Addr()) {
			want = append(want, p)
		}
	}
	slices.SortFunc(want, func(a, b netip.Prefix) int { return b.Bits() - a.Bits() })
	for p, l := range s.Supernets(q) {
		if l.head != m[p].head {
			t.Fatalf("%s: Supernets(%v) yields %v with a stale leaf", what, q, p)
		}
		got = append(got, p)
	}
	if !slices.Equal(want, got) {
		t.Fatalf("%s: Supernets(%v) = %v, reference %v", what, q, got, want)
	}
	want, got = want[:0], got[:0]
	for p := range m {
		if p.Bits() >= q.Bits() && q.Contains(p.Addr()) {
			want = append(want, p)
		}
	}
	slices.SortFunc(want, cmpCIDR)
	for p, l := range s.Subnets(q) {
		if l.head != m[p].head {
			t.Fatalf("%s: Subnets(%v) yields %v with a stale leaf", what, q, p)
		}
		got = append(got, p)
	}
	if !slices.Equal(want, got) {
		t.Fatalf("%s: Subnets(%v) = %v, reference %v", what, q, got, want)
	}
}

// TestIndexSlowBucketChangesCopyNothing: once a /16 (IPv4) or /32 (IPv6)
// holds more than bucketMax longer prefixes, its bucket is the shared slow
// marker and a change inside it — an insert, a replace, a delete that
// leaves more than bucketMax/2 — returns the same index (nothing copied:
// hack/routeload.sh's loads are such changes); the delete that leaves
// bucketMax/2 refills it with the remaining prefixes.
func TestIndexSlowBucketChangesCopyNothing(t *testing.T) {
	saved := [4]int{tinyMax, fullMin, fullDrop, bucketMax}
	savedFold := foldBelow
	defer func() {
		tinyMax, fullMin, fullDrop, bucketMax, foldBelow = saved[0], saved[1], saved[2], saved[3], savedFold
	}()
	tinyMax, fullMin, fullDrop, bucketMax = 1, 2, 2, 8
	for _, v6 := range []bool{false, true} {
		for _, fold := range []int{0, 256} {
			foldBelow = fold
			var s *store
			m := map[netip.Prefix]leaf{}
			var ps []netip.Prefix
			pfx := func(i int) netip.Prefix {
				if v6 {
					return netip.PrefixFrom(netip.AddrFrom16([16]byte{0x20, 0x01, 0x0d, 0xb8, 0, byte(i)}), 48)
				}
				return netip.PrefixFrom(netip.AddrFrom4([4]byte{10, 1, byte(i), 0}), 24)
			}
			slowOf := func(s *store) bool {
				if v6 {
					n := s.fx.next6.get(0x2001)
					return n != nil && n.bucket(0x0db8) == slow6
				}
				return s.fx.bucket4(10<<8|1) == slow4
			}
			for i := range 20 {
				p := pfx(i)
				prev := s
				l := leaf{head: &attrs{}}
				s = s.with(p, leaf{}, l)
				m[p] = l
				ps = append(ps, p)
				if i > bucketMax && s.ix != prev.ix {
					t.Fatalf("v6=%v fold=%d: insert %d into a slow bucket copied the index", v6, fold, i)
				}
			}
			if !slowOf(s) {
				t.Fatalf("v6=%v fold=%d: 20 prefixes, bucket not slow", v6, fold)
			}
			// A replace and deletes down to bucketMax/2+1: nothing copied.
			prev := s
			nl := leaf{head: &attrs{}}
			s = s.with(ps[0], m[ps[0]], nl)
			m[ps[0]] = nl
			for _, p := range ps[20-(20-bucketMax/2-1):] {
				s = s.with(p, m[p], leaf{})
				delete(m, p)
			}
			if s.ix != prev.ix || !slowOf(s) {
				t.Fatalf("v6=%v fold=%d: replace and deletes leaving %d copied the index or left the slow bucket", v6, fold, len(m))
			}
			p := ps[bucketMax/2]
			s = s.with(p, m[p], leaf{})
			delete(m, p)
			if slowOf(s) {
				t.Fatalf("v6=%v fold=%d: %d prefixes left, bucket still slow", v6, fold, len(m))
			}
			for q, l := range m {
				a := q.Addr().Next()
				gp, gl, st := s.ix.lookup(a)
				if st != ixHit || gp != q || gl.head != l.head {
					t.Fatalf("v6=%v fold=%d: refilled bucket: lookup %v = %v %v (state %d), want %v", v6, fold, a, gp, gl.head, st, q)
				}
			}
		}
	}
}
