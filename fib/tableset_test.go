package fib

import (
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestTableSetCopiesOneBucket: a new table copies one group of 16 bucket
// headers and its own bucket; every other group and bucket stays shared
// with the previous registry (the seed's IPv6 batch of 1,024 rules creates
// 1,024 tables). The registry's get and dump order match a map and the
// kernel's fib_table_hash walk (bucket id&255 ascending, newest first).
func TestTableSetCopiesOneBucket(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 9))
	s := &tableSet{}
	byID := map[uint32]bool{}
	var order []uint32 // creation order
	for len(order) < 1500 {
		id := rng.Uint32N(4096) + 1
		if rng.IntN(4) == 0 {
			id = rng.Uint32() | 1
		}
		if byID[id] {
			continue
		}
		n := s.with(&table{id: id})
		hi, lo := (id>>4)&0xf, id&0xf
		for g := range s.groups {
			if uint32(g) != hi && n.groups[g] != s.groups[g] {
				t.Fatalf("adding %d replaced group %d", id, g)
			}
		}
		if old := s.groups[hi]; old != nil {
			for b := range old {
				if uint32(b) != lo && len(old[b]) > 0 && &n.groups[hi][b][0] != &old[b][0] {
					t.Fatalf("adding %d copied bucket %d of group %d", id, b, hi)
				}
			}
		}
		s = n
		byID[id] = true
		order = append(order, id)
		if s.n != len(order) {
			t.Fatalf("n = %d, want %d", s.n, len(order))
		}
	}
	for i := 0; i < 20000; i++ {
		id := rng.Uint32N(5000)
		if got := s.get(id); (got != nil) != byID[id] || (got != nil && got.id != id) {
			t.Fatalf("get(%d) = %v, want present=%v", id, got, byID[id])
		}
	}
	// The reference dump order: bucket ascending, then newest first.
	want := make([]uint32, len(order))
	for i := range order {
		want[i] = order[len(order)-1-i]
	}
	sort.SliceStable(want, func(i, j int) bool { return want[i]&0xff < want[j]&0xff })
	var got []uint32
	for tb := range s.all {
		got = append(got, tb.id)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Fatalf("dump order (-want +got):\n%s", d)
	}
}
